"""A finding's proof -> a scenario for a live server: tables, sessions, steps, the expectation.

Transaction i of the proof becomes session Ti. First every session takes what its transaction
holds when it asks (in the order it took it), then each asks for the lock it wants, in the
reported order: each ask but the last must wait, and the last closes the cycle. The lock both
sides of a hop name is one concrete instance (row 1 of the table, say); any other instance a
session holds is a row of its own, so only the reported locks meet. A cycle through a row's wait
queue (LD201 with a "(queue)" hop) gets one more session, the transaction whose hold of the row
makes the later request wait, and its asks start with the one first in the queue.

An in-process (memory) lock lives in the application, where Postgres cannot see it. Its
stand-in is a session advisory lock, held on a connection of the session's own (`T1.app`),
and asked for on a third one that holds nothing (`T1.wait`): the server sees who holds it, but
not that the session waiting for it is the one it waits for elsewhere, just as it cannot see
the application's lock. A cycle through one is then a hang, as in production: every session waits
for one that is idle, and nothing breaks the cycle.

The expected answer: 40P01 (deadlock detected), or 55P03 when a transaction kind on the cycle
bounds its waits by a lock_timeout shorter than the deadlock_timeout assumed for production
(1 s, Postgres's default), since that wait ends before the deadlock detector runs. Two
upgrades of one heavyweight lock (advisory, table) are found by Postgres's early check the
moment the second one asks, whatever the timeouts. A cycle through an in-process lock is
`hang`: no error, every ask still waiting, unless a lock_timeout on one of its database waits
ends it (55P03).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lockdocs import model as m
from lockdocs.analysis.events import Held
from lockdocs.analysis.proof import Hop, Proof
from lockdocs.diagnostics import Diagnostic, Location
from lockdocs.postgres import statements as sq

PRODUCTION_DEADLOCK_TIMEOUT_MS = 1000
HEAVYWEIGHT = ("advisory", "table", "memory")
HANG = "hang"  # the expected answer of a cycle Postgres cannot see


@dataclass(frozen=True)
class ScenarioStep:
    session: int
    # take | want, and in a row queue's race: end (the witness commits), pause / resume (the
    # waiter's server process, so that the next hop takes the row before it looks again)
    action: str
    lock: str
    mode: str
    target: sq.Target
    sql: str
    location: Location | None = None  # where the declarations take it (want: the step)
    line: int = 0  # take: the line it was taken at

    def describe(self, sessions: tuple[Session, ...]) -> str:
        who = sessions[self.session].name
        if self.action == "end":
            return f"{who} ends its transaction"
        if self.action in ("pause", "resume"):
            return f"{who}'s server process is {'paused' if self.action == 'pause' else 'resumed'}"
        verb = "takes" if self.action == "take" else "asks for"
        where = f" ({self.location})" if self.location else ""
        return f"{who} {verb} {self.target.label} ({self.mode}){where}"


@dataclass(frozen=True)
class Session:
    name: str
    path: str
    transaction_kind: str | None = None
    lock_timeout: str | None = None  # as declared
    lock_timeout_ms: int = 0
    isolation: str | None = None


@dataclass(frozen=True)
class Scenario:
    code: str
    message: str
    location: Location
    sessions: tuple[Session, ...]
    steps: tuple[ScenarioStep, ...]
    targets: tuple[sq.Target, ...]
    expected: str  # 40P01 | 55P03
    why_expected: str
    waived_by: str = ""
    stand_ins: tuple[str, ...] = ()
    unsupported: str = ""  # why this finding cannot be replayed (then nothing else is set)
    notes: tuple[str, ...] = field(default=())

    @property
    def setup(self) -> list[str]:
        return sq.setup_sql(list(self.targets))

    @property
    def closer(self) -> int:
        """The session whose ask closes the cycle."""
        wants = [st.session for st in self.steps if st.action == "want"]
        return wants[-1] if wants else 0


def duration_ms(text: str | None) -> int:
    """A lock_timeout as declared ('5s', '200ms', '1min'; the schema allows no other form)."""
    if not text:
        return 0
    for unit, factor in (("ms", 1), ("min", 60_000), ("s", 1000)):
        if text.endswith(unit) and text[: -len(unit)].isdigit():
            return int(text[: -len(unit)]) * factor
    return 0


def lock_kind(model: m.Model, lock_id: str, backend: str | None) -> str:
    lock = model.locks[lock_id]
    for b in lock.backends:
        if backend and b.name == backend:
            return b.kind
    return lock.kind


class _Instances:
    """Concrete instance numbers: the shared ones of the cycle first, then one of its own for
    every other instance a session holds."""

    def __init__(self, model: m.Model) -> None:
        self.model = model
        self.numbers: dict[tuple[str, str, int], int] = {}
        self.next: dict[str, int] = {}

    def fix(self, lock: str, instance: str, session: int, number: int) -> None:
        self.numbers[(lock, instance, session)] = number
        self.next[lock] = max(self.next.get(lock, 1), number + 1)

    def get(self, lock: str, instance: str, session: int) -> int:
        if self.model.locks[lock].singleton:
            return 1
        key = (lock, instance, session)
        if key not in self.numbers:
            n = self.next.get(lock, 1)
            self.fix(lock, instance, session, n)
        return self.numbers[key]


def _cycle_numbers(proof: Proof, inst: _Instances) -> list[int]:
    """The instance each hop holds that the previous hop wants. A hop first in a row's queue
    holds that row's tuple lock: the row the next hop holds, which the previous hop wants too."""
    hops = proof.hops
    out: list[int] = [0] * len(hops)
    for i, h in enumerate(hops):
        if h.queued_by is not None:
            continue
        if proof.kind == "upgrade":
            n = 1
        else:
            n = 1 + sum(1 for g in hops[:i] if g.holds == h.holds and g.queued_by is None)
        inst.fix(h.holds, h.held_instance, i, n)
        out[i] = n
    for i, h in enumerate(hops):
        j = (i + 1) % len(hops)
        while hops[j].queued_by is not None and j != i:
            j = (j + 1) % len(hops)
        if h.queued_by is not None:
            out[i] = out[j] or 1
    return out


def _session(model: m.Model, i: int, h: Hop) -> Session:
    tk = model.transactions.get(h.transaction_kind) if h.transaction_kind else None
    timeout = tk.lock_timeout if tk else None
    return Session(
        f"T{i + 1}",
        h.path,
        h.transaction_kind,
        timeout,
        duration_ms(timeout),
        tk.isolation if tk else None,
    )


def _take(
    model: m.Model,
    backend: str | None,
    lock_id: str,
    mode: str,
    n: int,
    schema: str | None,
    option: str | None = None,
) -> tuple[sq.Target, str]:
    lock = model.locks[lock_id]
    kind = lock_kind(model, lock_id, backend)
    t = sq.target(lock, kind, n, schema)
    scope = "session" if kind == "memory" else lock.scope
    if kind == "row" and mode == "for key share" and option is None:
        return t, sq.foreign_key_sql(t)
    return t, sq.take_sql(t, mode, scope, option)


def _mode_on(model: m.Model, lock_id: str, mode: str, backend: str | None) -> str:
    """A step's mode on the replayed backend (a backend may take the lock another way)."""
    for b in model.locks[lock_id].backends:
        if backend and b.name == backend and b.mode:
            return b.mode
    return mode


def from_finding(model: m.Model, d: Diagnostic, schema: str | None = None) -> Scenario:
    """The scenario of one finding; with `schema`, every table moves into that schema (an
    isolation spec that must not meet a team's own tables)."""
    proof = d.extra.get("proof")
    base = {"code": d.code, "message": d.message, "location": d.location}
    if not isinstance(proof, Proof) or not proof.hops:
        return Scenario(
            **base,  # type: ignore[arg-type]
            sessions=(),
            steps=(),
            targets=(),
            expected="",
            why_expected="",
            waived_by=d.waived_by,
            unsupported=f"{d.code} findings carry no interleaving to replay",
        )
    backend = proof.backend
    inst = _Instances(model)
    cycle = _cycle_numbers(proof, inst)
    k = len(proof.hops)
    sessions = tuple(_session(model, i, h) for i, h in enumerate(proof.hops))
    steps: list[ScenarioStep] = []
    targets: list[sq.Target] = []
    stand_ins: list[str] = []

    def add(step: ScenarioStep) -> None:
        steps.append(step)
        if step.target not in targets:
            targets.append(step.target)
            if step.target.stand_in:
                stand_ins.append(f"{step.target.lock}: {step.target.stand_in}")

    # The connections of in-process locks: per session, one that holds them and one that asks,
    # numbered after the cycle's sessions and the queue's.
    extra: list[Session] = []
    helpers: dict[tuple[int, str], int] = {}
    helper_sessions: list[Session] = []
    first_helper = k + sum(1 for h in proof.hops if h.queued_by is not None)

    def on(i: int, lock_id: str, action: str, connection: str = "") -> int:
        """The session that takes (holds) or asks for `lock_id` for session i: itself; for an
        in-process lock a connection of its own; for a take the path declares on another of
        its connections (connection:), a session named after it."""
        if connection:
            key = (i, "." + connection)
        elif lock_kind(model, lock_id, backend) == "memory":
            key = (i, ".app" if action == "take" else ".wait")
        else:
            return i
        if key not in helpers:
            helpers[key] = first_helper + len(helper_sessions)
            base = (*sessions, *extra)[i]
            helper_sessions.append(Session(base.name + key[1], base.path))
        return helpers[key]

    def takes(i: int, h: Hop, instance_of: Callable[[Held], int]) -> None:
        for held in h.held:
            mode = _mode_on(model, held.lock, held.mode, backend)
            n = instance_of(held)
            # A hold taken with SKIP LOCKED is taken that way again (nothing holds it yet, so
            # it is granted like a plain take).
            option = "skip locked" if held.maybe else None
            t, stmt = _take(model, backend, held.lock, mode, n, schema, option)
            add(
                ScenarioStep(
                    on(i, held.lock, "take", held.connection),
                    "take",
                    held.lock,
                    mode,
                    t,
                    stmt,
                    line=held.acquired_at,
                )
            )

    # A row's queue: the transaction whose hold makes a later request wait (and so queue behind
    # the hop first in the queue) is a session of its own.
    witnesses: dict[int, int] = {}  # session -> its queue hop
    for i, h in enumerate(proof.hops):
        if h.queued_by is not None:
            witnesses[k + len(extra)] = i
            extra.append(_session(model, k + len(extra), h.queued_by))

    def ask(i: int) -> ScenarioStep:
        h = proof.hops[i]
        if h.queued_by is not None:
            n = cycle[i]
        else:
            n = cycle[i] if proof.kind == "upgrade" else cycle[(i + 1) % k]
        mode = _mode_on(model, h.wants, h.wanted_mode, backend)
        t, stmt = _take(model, backend, h.wants, mode, n, schema)
        return ScenarioStep(
            on(i, h.wants, "want", h.connection),
            "want",
            h.wants,
            mode,
            t,
            stmt,
            location=h.location,
        )

    moves = proof.schedule or (*((i, "take") for i in range(k)), *((i, "want") for i in range(k)))
    for s, what in moves:
        if what == "take" and s in witnesses:
            i = witnesses[s]
            by = proof.hops[i].queued_by
            assert by is not None

            def of_witness(held: Held, i: int = i, by: Hop = by, s: int = s) -> int:
                if held.lock == proof.hops[i].wants and held.mode == by.held_mode:
                    return cycle[i]
                return inst.get(held.lock, f"{held.instance}@queue", s)

            takes(s, by, of_witness)
        elif what == "take":

            def own(held: Held, s: int = s) -> int:
                return inst.get(held.lock, held.instance, s)

            takes(s, proof.hops[s], own)
        elif what == "want":
            add(ask(s))
        else:  # end, pause, resume: of the row the queue is for
            q = next(i for i, h in enumerate(proof.hops) if h.queued_by is not None)
            target = ask(q).target
            sql = "commit" if what == "end" else ""
            add(ScenarioStep(s, what, proof.hops[q].wants, "", target, sql))
    if any(key[1] in (".app", ".wait") for key in helpers):
        stand_ins.append(
            "in-process locks are held on a connection of the session's own (T1.app) and asked "
            "for on a third (T1.wait), so the server cannot see who waits for whom there, as it "
            "cannot see the application's lock"
        )
    sessions = (*sessions, *extra, *helper_sessions)
    expected, why = _expectation(model, proof, sessions, backend)
    return Scenario(
        **base,  # type: ignore[arg-type]
        sessions=sessions,
        steps=tuple(steps),
        targets=tuple(targets),
        expected=expected,
        why_expected=why,
        waived_by=d.waived_by,
        stand_ins=tuple(dict.fromkeys(stand_ins)),
    )


def _expectation(
    model: m.Model, proof: Proof, sessions: tuple[Session, ...], backend: str | None
) -> tuple[str, str]:
    unseen = sorted({h.wants for h in proof.hops if lock_kind(model, h.wants, backend) == "memory"})
    split = [h for h in proof.hops if h.split]
    if split and not unseen:
        h = split[0]
        return HANG, (
            f"{h.path} holds {h.holds} on one of its connections and waits on another: "
            "Postgres sees that session idle, so nothing breaks the cycle"
        )
    if unseen:
        # Postgres sees part of the cycle only: a lock_timeout on a database wait ends it
        timed = [
            s
            for s, h in zip(sessions, proof.hops, strict=False)
            if s.lock_timeout_ms and h.wants not in unseen
        ]
        if timed:
            s = min(timed, key=lambda x: x.lock_timeout_ms)
            return "55P03", (
                f"a hang through {', '.join(unseen)}, which Postgres cannot see; only "
                f"{s.name}'s lock_timeout ({s.lock_timeout}) ends it"
            )
        what = (
            f"{unseen[0]}, an in-process lock"
            if len(unseen) == 1
            else f"{', '.join(unseen[:-1])} and {unseen[-1]}, in-process locks"
        )
        return HANG, f"the cycle runs through {what} Postgres cannot see: nothing breaks it"
    heavy = lock_kind(model, proof.hops[0].holds, backend) in HEAVYWEIGHT
    if proof.kind == "upgrade" and heavy:
        return "40P01", "two upgrades of one lock: Postgres's early deadlock check"
    bounded = [s for s in sessions if 0 < s.lock_timeout_ms < PRODUCTION_DEADLOCK_TIMEOUT_MS]
    if bounded:
        s = bounded[0]
        return "55P03", (
            f"{s.name}'s transaction kind {s.transaction_kind} bounds each wait to "
            f"{s.lock_timeout}, less than deadlock_timeout (1s)"
        )
    return "40P01", "the deadlock detector breaks the cycle"
