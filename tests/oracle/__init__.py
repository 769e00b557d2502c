"""An independent oracle for lockdocs' lock-order analysis.

`spec` is a tiny spec language of its own, `explore` runs 2-4 transactions of those paths through
every interleaving (with PostgreSQL's row wait queue) and reports real deadlocks, `render` writes
the same spec as lockdocs YAML, `compare` runs lockdocs on it and matches its LD201/LD202/LD203
findings with the deadlocks (and their named paths). Nothing here imports lockdocs' analysis; the
conflict tables are copied from the reference page and the documentation, and checked against a
live server by tests/test_pg_oracle.py.
"""

from .explore import Deadlock, Hop, Options, Result, explore
from .render import render, write
from .spec import Branch, Call, Commit, Lock, Loop, Path, Set, Spec, Take

__all__ = [
    "Branch",
    "Call",
    "Commit",
    "Deadlock",
    "Hop",
    "Lock",
    "Loop",
    "Options",
    "Path",
    "Result",
    "Set",
    "Spec",
    "Take",
    "explore",
    "render",
    "write",
]
