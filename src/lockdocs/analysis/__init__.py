"""Pure functions over the model: flattening paths, the lock-order graph, cycles. No I/O."""
