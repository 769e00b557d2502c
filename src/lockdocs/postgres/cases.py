"""What an explained server log is made of: each lock report as a `Case` (its kind, its
processes with the lock each wants and holds, the verdict, what it says), and identical cases
grouped once with every line they occur on."""

from __future__ import annotations

from dataclasses import dataclass, field

from lockdocs.postgres.sqlread import masked


@dataclass(frozen=True)
class LockRef:
    locks: tuple[str, ...]  # the declared locks it can be; () when none
    mode: str | None  # the declared mode word, when the log or the statement says
    postgres: str  # how Postgres named it
    how: str  # how lockdocs decoded it, or why it could not


@dataclass(frozen=True)
class Taker:
    path: str
    location: str
    via: tuple[str, ...] = ()


@dataclass
class Process:
    name: str  # P1, P2, ... in a stable order
    pid: int | None
    wants: LockRef
    holds: LockRef | None
    statement: str
    masked: str
    takers: tuple[Taker, ...] = ()
    declared_takers: tuple[str, ...] = ()  # locks.yaml's taken_by entries for that mode


@dataclass
class Case:
    kind: str  # deadlock | lock timeout
    sqlstate: str
    processes: list[Process]
    # reported | missing order | undeclared lock | unreported | timeout | unread
    verdict: str
    says: list[str]
    findings: list[dict[str, object]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # where each occurrence starts in the log
    hint: str = ""
    context: str = ""

    @property
    def signature(self) -> tuple[object, ...]:
        return (
            self.kind,
            tuple(
                (p.wants.locks, p.wants.mode, p.holds.locks if p.holds else (), masked(p.statement))
                for p in self.processes
            ),
        )


def group(cases: list[Case]) -> list[Case]:
    """Identical cases (same locks, modes, masked statements) once, with every line."""
    out: dict[tuple[object, ...], Case] = {}
    for c in cases:
        first = out.setdefault(c.signature, c)
        if first is not c:
            first.lines.extend(c.lines)
    return list(out.values())
