"""Run lockdocs on a rendered spec and match its lock-order findings with the oracle's deadlocks.

A deadlock is *explained* by a finding when the finding is about that deadlock's locks:
- LD203 on class C, when some transaction on the wait cycle waits to upgrade a lock of C;
- LD202 on class C, when some transaction on the cycle holds one instance of C and waits for
  another;
- LD201 on a set of classes that is a subset of the cycle's classes (lockdocs reports minimal
  cycles: a smaller one explains the bigger ones).
A finding is *confirmed* when it explains at least one deadlock the oracle found, and it *names
the paths that deadlock* when, among the deadlocks it explains, one runs exactly the paths the
finding names on its cycle (a finding on the right locks but the wrong paths misleads).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path as FsPath

from .explore import Deadlock
from .render import write
from .spec import Spec

ORDER_CODES = ("LD201", "LD202", "LD203")


@dataclass(frozen=True)
class Finding:
    code: str
    locks: tuple[str, ...]
    paths: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return f"{self.code} {self.message}"


class LoadError(AssertionError):
    pass


def lockdocs_findings(spec: Spec) -> list[Finding]:
    """LD2xx findings of lockdocs on the rendered spec, in-process (load + analyse)."""
    from lockdocs import api

    with tempfile.TemporaryDirectory(prefix="lockdocs-oracle-") as tmp:
        root = FsPath(tmp)
        write(spec, root)
        model, diags = api.load(root)
        errors = [d for d in diags if d.code.startswith("LD0")]
        if model is None or errors:
            raise LoadError(
                "rendered spec does not load: "
                + "; ".join(f"{d.code} {d.location} {d.message}" for d in diags)
            )
        found = api.analyse(model)
    bad = [d for d in found if d.code.startswith("LD0")]
    if bad:
        raise LoadError("; ".join(f"{d.code} {d.message}" for d in bad))
    return [
        Finding(d.code, tuple(d.locks), tuple(d.paths), d.message)
        for d in found
        if d.code in ORDER_CODES
    ]


def explains(f: Finding, d: Deadlock, strict: bool = True) -> bool:
    """Strict: the finding's code names the deadlock's shape. Lenient: it is about a subset of
    the deadlock's locks (the reader is warned about those locks, under another code)."""
    if not strict:
        return bool(f.locks) and set(f.locks) <= d.classes
    if f.code == "LD201":
        return len(set(f.locks)) >= 2 and set(f.locks) <= d.classes
    kind = "upgrade" if f.code == "LD203" else "instance"
    return any(h.kind == kind and h.wants[0] in f.locks for h in d.hops)


@dataclass
class Comparison:
    deadlocks: list[Deadlock]
    findings: list[Finding]
    missed: list[Deadlock]  # false negatives: no finding is even about their locks
    other_code: list[Deadlock]  # reported, but under a code that does not name the shape
    unconfirmed: list[Finding]  # false positives: no deadlock confirms them
    wrong_paths: list[Finding]  # confirmed, but no deadlock they explain is of their paths

    @property
    def spec_false_negative(self) -> bool:
        return bool(self.deadlocks) and not self.findings

    @property
    def spec_false_positive(self) -> bool:
        return bool(self.findings) and not self.deadlocks


def _of_its_paths(f: Finding, d: Deadlock, shared: frozenset[str]) -> bool:
    """Does `d` run on the paths `f` names? A finding at a step of a shared path (one that
    others run, whether or not it also runs alone) names that path and every path that runs
    it (one report per cause), so the deadlock is one among those paths."""
    named = set(f.paths)
    if named & shared:
        return bool(d.paths) and d.paths <= named
    return d.paths == named


def compare(
    deadlocks: list[Deadlock], findings: list[Finding], shared: frozenset[str] = frozenset()
) -> Comparison:
    """`shared`: the spec's paths that others run (see _of_its_paths)."""
    missed = [d for d in deadlocks if not any(explains(f, d, strict=False) for f in findings)]
    other = [d for d in deadlocks if d not in missed and not any(explains(f, d) for f in findings)]
    unconfirmed = [f for f in findings if not any(explains(f, d, strict=False) for d in deadlocks)]
    wrong = [
        f
        for f in findings
        if f not in unconfirmed
        and not any(explains(f, d, strict=False) and _of_its_paths(f, d, shared) for d in deadlocks)
    ]
    return Comparison(deadlocks, findings, missed, other, unconfirmed, wrong)
