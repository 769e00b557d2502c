"""The rule registry and the checks, one module per family; docs live beside each check."""
