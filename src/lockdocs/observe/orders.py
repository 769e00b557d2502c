"""The lock orders the log shows, against the declared ones, and the cycles they close.

Every transaction adds an edge A -> B for each lock B it took first while it held A (lockdep's
chains, by lock class: the log does not say which row, so a class taken again is the lock it
already holds). An edge no declared path has is an undeclared order (LD801). Two kinds of take
order nothing: a row the transaction's path says it inserted itself (nobody else can see it,
so nobody waits for it), and a foreign-key re-check the log cannot confirm (Postgres makes it
only if the updated row is one the transaction wrote); the second still counts for coverage
along the declared orders. Each distinct
sequence of first takes becomes a path of its own, located at its log lines, beside the
declared ones in a copy of the model; the same cycle search `lockdocs check` runs (modes,
gates and queues included) then finds the cycles that need an observed order (LD802): a
deadlock the declarations missed, whose proof names the transactions' log lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Location
from lockdocs.observe.paths import First
from lockdocs.records import replace
from lockdocs.rules.catalog import load_all
from lockdocs.rules.context import CheckContext

MAX_SEQUENCES = 500  # distinct observed sequences given to the cycle search
OBSERVED_GROUP = "Observed transactions"


@dataclass
class Witness:
    """Where an observed order (or sequence) was first seen, and how often."""

    source: str
    held_line: int  # where the held lock was taken
    line: int  # where the next lock was taken
    first_line: int  # the transaction's first line
    path: str | None  # the path the transaction ran (known or matched), if any
    count: int = 1


@dataclass
class Sequence:
    takes: tuple[tuple[str, str, str | None], ...]  # (lock, mode, option)
    lines: tuple[int, ...]
    source: str
    first_line: int
    path: str | None
    count: int = 1


@dataclass
class Orders:
    edges: dict[tuple[str, str], Witness] = field(default_factory=dict)
    sequences: dict[tuple[tuple[str, str, str | None], ...], Sequence] = field(default_factory=dict)
    dropped: int = 0  # sequences beyond MAX_SEQUENCES, not searched
    undeclared: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (kind, label)
    # the declared orders: a possible take (a foreign-key re-check) counts only along them
    declared: set[tuple[str, str]] = field(default_factory=set)

    def add(self, firsts: list[First], first_line: int, path: str | None) -> None:
        takes: list[tuple[str, str, str | None]] = []  # held, in order (the sequence)
        lines: list[int] = []
        source = ""
        for f in firsts:
            if f.quiet:
                if f.quiet == "recheck" and f.lock is not None:
                    self._maybe(f.lock, f, takes, lines, first_line, path)
                continue  # a row of its own makes no order; a possible take no finding
            lock = f.lock or self._synthetic(f)
            if lock is None:
                continue
            source = f.take.source
            for (held, _, _), held_line in zip(takes, lines, strict=True):
                self._seen(held, lock, f, held_line, first_line, path)
            if f.take.released:
                continue  # let go by ROLLBACK TO: no later take waits while holding it
            takes.append((lock, f.take.took.mode, f.take.took.option))
            lines.append(f.take.line)
        if len(takes) < 2:
            return
        key = tuple(takes)
        seq = self.sequences.get(key)
        if seq is not None:
            seq.count += 1
        elif len(self.sequences) < MAX_SEQUENCES:
            self.sequences[key] = Sequence(key, tuple(lines), source, first_line, path)
        else:
            self.dropped += 1

    def _maybe(
        self,
        lock: str,
        f: First,
        takes: list[tuple[str, str, str | None]],
        lines: list[int],
        first_line: int,
        path: str | None,
    ) -> None:
        """A foreign-key re-check the log cannot confirm: seen along a declared order (for
        coverage), never the witness of an undeclared one nor a step of a sequence."""
        for (held, _, _), held_line in zip(takes, lines, strict=True):
            if (held, lock) in self.declared:
                self._seen(held, lock, f, held_line, first_line, path)

    def _seen(
        self, held: str, lock: str, f: First, held_line: int, first_line: int, path: str | None
    ) -> None:
        """One more time `lock` was taken while `held` was: the first time is the witness."""
        w = self.edges.get((held, lock))
        if w is None:
            self.edges[(held, lock)] = Witness(
                f.take.source, held_line, f.take.line, first_line, path
            )
        else:
            w.count += 1

    def _synthetic(self, f: First) -> str | None:
        """An undeclared lock taken explicitly joins the search under a name of its own."""
        seen = f.take.took.seen
        if seen.locks or not seen.explicit:
            return None
        lock_id = "undeclared " + seen.label
        self.undeclared.setdefault(lock_id, (seen.kind, seen.label))
        return lock_id

    def undeclared_orders(
        self, declared: set[tuple[str, str]]
    ) -> list[tuple[tuple[str, str], Witness]]:
        """Observed orders between declared locks that no declared path has."""
        return sorted(
            (
                (pair, w)
                for pair, w in self.edges.items()
                if pair not in declared
                and pair[0] != pair[1]
                and not pair[0].startswith("undeclared ")
                and not pair[1].startswith("undeclared ")
            ),
            key=lambda x: (x[1].source, x[1].line, x[0]),
        )

    def cycles(self, model: m.Model, declared_cycles: set[frozenset[str]]) -> list[Diagnostic]:
        """The cycles the observed sequences close with the declared paths or each other:
        the LD201 findings of the model with them added, less the ones that need no
        observed path or that `lockdocs check` already reports on the same locks."""
        if not self.sequences:
            return []
        observed = _with_sequences(model, self)
        ctx = CheckContext(observed)
        synthetic = {p for p in observed.paths if p not in model.paths}
        out = []
        for d in load_all()["LD201"].run(ctx):
            if not set(d.paths) & synthetic:
                continue
            if frozenset(d.locks) in declared_cycles:
                continue
            out.append(d)
        # a search that stopped at its budget is said (LD204), unless check says it already
        out += [
            d for d in load_all()["LD204"].run(ctx) if frozenset(d.locks) not in declared_cycles
        ]
        return out


def sequence_id(seq: Sequence) -> str:
    """How a cycle's proof names an observed transaction: its path, when known, and where it
    begins in the log."""
    where = f"{seq.source.rsplit('/', 1)[-1]}:{seq.first_line}"
    return f"{seq.path}@{where}" if seq.path else where


def _with_sequences(model: m.Model, orders: Orders) -> m.Model:
    locks = dict(model.locks)
    for lock_id, (kind, label) in orders.undeclared.items():
        modes = sorted({mode for key in orders.sequences for lk, mode, _ in key if lk == lock_id})
        locks[lock_id] = m.Lock(
            lock_id,
            label,
            kind if kind in ("row", "table", "advisory") else "advisory",
            "transaction",
            Location("<observed>"),
            table=label.split(" on ", 1)[-1] if kind in ("row", "table") else None,
            modes=tuple((mode, "observed") for mode in modes),
        )
    paths = dict(model.paths)
    ids = []
    for seq in orders.sequences.values():
        path_id = sequence_id(seq)
        while path_id in paths:
            path_id += "'"
        steps = tuple(
            m.Take(lock, mode, Location(seq.source, line), option=_option(option))
            for (lock, mode, option), line in zip(seq.takes, seq.lines, strict=True)
        )
        paths[path_id] = m.Path(
            path_id,
            f"the transaction at {seq.source}:{seq.first_line}",
            OBSERVED_GROUP,
            seq.source,
            Location(seq.source, seq.first_line),
            steps,
        )
        ids.append(path_id)
    group = m.Group(OBSERVED_GROUP, "<observed>", 1 << 30, tuple(ids))
    return replace(model, locks=locks, paths=paths, groups=(*model.groups, group), waivers=())


def _option(option: str | None) -> str | None:
    return option if option in ("nowait", "skip locked") else None
