"""An independent oracle for lockdocs' lock-order analysis.

`spec` is a tiny spec language of its own, `explore` runs 2-3 transactions of those paths through
every interleaving and reports real deadlocks, `render` writes the same spec as lockdocs YAML,
`compare` runs lockdocs on it and matches its LD201/LD202/LD203 findings with the deadlocks.
Nothing here imports lockdocs' analysis; the conflict tables are copied from the reference page.
"""

from .explore import Deadlock, Hop, Options, Result, explore
from .render import render, write
from .spec import Branch, Call, Commit, Lock, Loop, Path, Spec, Take

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
    "Spec",
    "Take",
    "explore",
    "render",
    "write",
]
