"""Pure functions over the model: flattening paths, the lock-order graph, cycles. No I/O.

Flattening is `flatten.py` (the walk) over `events.py` (what it produces), `states.py` (its
states, merged and joined), `walkbase.py` (the work budget), `summaries.py` (what a loop body may
leave held) and `takes.py` (taking locks). `facts.py` holds what the rest reads once per model
and `graph.py` the lock-order graph. Its real cycles are `cycles.py`, over `gates.py` (what keeps
two transactions apart), `queues.py` (a row's wait queue) and `search.py` (the graph of waits
and its search); `proof.py` is a finding's proof as data.
"""
