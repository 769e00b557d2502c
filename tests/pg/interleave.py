"""Every two-transaction interleaving of a project's paths, as statements for a real server.

The same exploration the oracle (tests/oracle) does, on lockdocs declarations and with
PostgreSQL as the lock manager: each standalone path is compiled into concrete scripts (one per
branch taken, per instance each take can name, per order a loop can visit its elements in, with
the oracle's domain of two instances per lock), and every pair of scripts (a path may run
against itself) is run through every interleaving of their statements. Nothing here reads
lockdocs' analysis; the statements are replay's (lockdocs.postgres.statements).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from lockdocs import model as m
from lockdocs.modes import conflicts, modes_for_kind
from lockdocs.postgres import statements as sq

DOMAIN = (1, 2)


@dataclass(frozen=True)
class Action:
    sql: str
    label: str
    target: sq.Target | None = None
    mode: str = ""
    params: tuple[sq.Param, ...] = ()  # the values of the statement's $n


Script = tuple[Action, ...]


@dataclass
class _State:
    actions: list[Action]
    held: dict[tuple[str, int], str]  # (lock, instance) -> mode
    labels: dict[tuple[str, str], int]  # (lock, instance name) -> instance
    loops: list[int]  # the current element of each enclosing loop
    # the column each enclosing loop's element stands for (its sort's leading column), if any
    lead: list[str | None] = field(default_factory=list)
    # (table, write location) of every insert or update in the transaction: a foreign-key
    # re-check (Take.recheck) happens only after another write of its table
    written: frozenset[tuple[str, object]] = frozenset()

    def fork(self) -> _State:
        return _State(
            list(self.actions),
            dict(self.held),
            dict(self.labels),
            list(self.loops),
            list(self.lead),
            self.written,
        )


class Compiler:
    def __init__(self, model: m.Model) -> None:
        self.model = model

    def kind(self, lock_id: str) -> str:
        return self.model.locks[lock_id].kind

    def scripts(self, path: m.Path) -> list[Script]:
        start = _State([], {}, {}, [])
        states = self.begin(path.transaction, [start])
        states = self.steps(path.steps, states, depth=0)
        out: dict[Script, None] = {}
        for st in states:
            out[(*st.actions, Action("commit", "commit"))] = None
        return list(out)

    def begin(self, kind: str | None, states: list[_State]) -> list[_State]:
        tk = self.model.transactions.get(kind) if kind else None
        if tk is None or not tk.first_lock:
            return states
        take = m.Take(tk.first_lock, tk.first_mode or "exclusive", tk.location)
        return [s for st in states for s in self.take(take, st)]

    def steps(self, steps: tuple[m.Step, ...], states: list[_State], depth: int) -> list[_State]:
        for step in steps:
            states = [s for st in states for s in self.step(step, st, depth)]
        return states

    def step(self, step: m.Step, st: _State, depth: int) -> list[_State]:
        if isinstance(step, m.Take):
            return self.take(step, st)
        if isinstance(step, m.Loop):
            orders = self.loop_orders(step)
            lead = _columns(step.order)
            out: list[_State] = []
            for elements in orders:
                states = [st.fork()]
                for e in elements:
                    for s in states:
                        s.loops.append(e)
                        s.lead.append(lead[0] if lead else None)
                    states = self.steps(step.steps, states, depth)
                    for s in states:
                        s.loops.pop()
                        s.lead.pop()
                out.extend(states)
            return out
        if isinstance(step, m.Branches):
            return [s for _, alt in step.alternatives for s in self.steps(alt, [st.fork()], depth)]
        if isinstance(step, m.Run):
            if depth > 16:
                return [st]
            return self.steps(self.model.paths[step.path].steps, [st], depth + 1)
        if isinstance(step, m.End):
            if step.how == "leave_open":
                return [st]
            st = st.fork()
            st.actions.append(Action(f"{step.how}; begin", step.how))
            st.held = {k: v for k, v in st.held.items() if self.scope(k[0]) == "session"}
            st.written = frozenset()
            return [st]
        if isinstance(step, m.Write):
            table = step.insert or step.update
            if table is None:
                return [st]
            st = st.fork()
            st.written = st.written | {(table, step.location)}
            return [st]
        if isinstance(step, m.Begin):
            return self.begin(step.transaction, [st])
        if isinstance(step, m.Release):
            st = st.fork()
            for (lock, inst), mode in sorted(st.held.items()):
                if lock == step.lock:
                    t = self.target(lock, inst)
                    if t.key_args:
                        sql = sq.release_sql(t, mode)
                        st.actions.append(
                            Action(sql, f"release {t.label}", params=sq.params_for(sql, t))
                        )
                    del st.held[(lock, inst)]
            return [st]
        return [st]  # write, external, call: no lock

    def scope(self, lock_id: str) -> str:
        return "session" if self.kind(lock_id) == "memory" else self.model.locks[lock_id].scope

    def loop_orders(self, loop: m.Loop) -> list[tuple[int, ...]]:
        """The orders the loop may visit its elements in: ascending when its order is the
        declared instance order of its element lock (the first lock taken in the body, by an
        unnamed take, whose declared order that is), any order otherwise."""
        subsets = [c for r in range(1, len(DOMAIN) + 1) for c in itertools.combinations(DOMAIN, r)]
        element = next(
            (
                s.lock
                for s in loop.steps
                if isinstance(s, m.Take)
                and s.instance is None
                and not s.again
                and not self.model.locks[s.lock].singleton
                and self.model.locks[s.lock].instance_order == loop.order
            ),
            None,
        )
        if loop.order is not None and element is not None:
            return subsets
        if self.sorted_by_key(loop):
            return subsets
        return [p for s in subsets for p in itertools.permutations(s)]

    def sorted_by_key(self, loop: m.Loop) -> bool:
        """A loop over rows sorted by columns (`order: ascending (account_id, currency)`) that
        takes a lock keyed by columns (issue 24): the loop's element stands for the sort's
        leading column, so the rows come in ascending element order; a keyed take is the
        row's (the element for the leading column of each enclosing loop, one value for the
        other columns)."""
        if not _columns(loop.order):
            return False
        stack = [loop.steps]
        while stack:
            for s in stack.pop():
                if isinstance(s, m.Take) and self.model.locks[s.lock].columns:
                    return True
                if isinstance(s, m.Loop):
                    stack.append(s.steps)
                elif isinstance(s, m.Branches):
                    stack.extend(alt for _, alt in s.alternatives)
        return False

    def target(self, lock_id: str, instance: int) -> sq.Target:
        return sq.target(self.model.locks[lock_id], self.kind(lock_id), instance)

    def instances(self, step: m.Take, st: _State) -> list[tuple[int, _State]]:
        lock = self.model.locks[step.lock]
        if lock.singleton:
            return [(1, st)]
        # A take placed in the lock's declared order comes after every instance of the lock
        # already held (the order is modelled as ascending instance numbers).
        above = 0
        if step.order is not None and step.order == lock.instance_order:
            # (a child's row is 10 * parent + its number among the parent's: see child())
            above = max(
                (inst % 10 if lock.within else inst for (lk, inst) in st.held if lk == step.lock),
                default=0,
            )
        if step.instance is not None:
            key = (step.lock, step.instance)
            if key in st.labels:
                return [(st.labels[key], st)]
            used = {v for (lk, nm), v in st.labels.items() if lk == step.lock and nm != ""}
            out = []
            for d in DOMAIN:
                if d in used or d <= above:
                    continue
                s = st.fork()
                s.labels[key] = d
                out.append((d, s))
            return out
        if st.loops and not step.again:
            if lock.columns:
                values = {c: e for c, e in zip(st.lead, st.loops, strict=True) if c is not None}
                return [
                    (1 + sum((values.get(c, 1) - 1) << i for i, c in enumerate(lock.columns)), st)
                ]
            return [(st.loops[-1], st)]
        have = sorted({inst for (lk, inst) in st.held if lk == step.lock})
        if step.again and have:
            return [(d, st.fork()) for d in have]
        # The path's one instance: chosen once (a SKIP LOCKED take of it holds nothing, and a
        # later take is still that row); it may or may not be one a loop took.
        key = (step.lock, "")
        if key in st.labels:
            return [(st.labels[key], st)]
        out = []
        for d in DOMAIN:
            if d > above or d in have:
                s = st.fork()
                s.labels[key] = d
                out.append((d, s))
        return out

    def child(self, step: m.Take, st: _State, inst: int) -> int:
        """A lock declared instances: {within: P} has its own instances per instance of P:
        child c of parent p is row 10 * p + c, so two parents never share a child. The parent
        is the instance of P the take names with under:, else the one taken last; a child
        taken with no parent held is one of parent 1's (it can meet those)."""
        parent = self.model.locks[step.lock].within
        if parent is None:
            return inst
        if step.under is not None:
            p = st.labels.get((parent, step.under), 1)
        else:
            p = next((i for (lk, i) in reversed(st.held) if lk == parent), 1)
        return 10 * p + inst

    def take(self, step: m.Take, st: _State) -> list[_State]:
        if step.recheck is not None and not any(
            t == step.recheck and at != step.location for t, at in st.written
        ):
            return [st]  # no earlier write of the table: Postgres checks no key again
        if step.inserted and self.kind(step.lock) == "row":
            # a row of its own (its transaction id makes the key no other transaction
            # inserts): the insert locks it, and nobody else can see it before the commit
            table = sq.table_of(self.model.locks[step.lock].table, step.lock)
            sql = f"insert into {table.sql} (id) values (1000000 + pg_current_xact_id()::text::int)"
            st = st.fork()
            t = self.target(step.lock, 0)
            st.actions.append(Action(sql, f"{step.lock} inserted row", t, step.mode))
            return [st]
        if step.claimed and self.kind(step.lock) == "row":
            # the rows this transaction claimed: those its own transaction id locks (xmax; a
            # row two transactions share FOR SHARE has a multixact there, so it is not found)
            table = sq.table_of(self.model.locks[step.lock].table, step.lock)
            sql = (
                f"select id from {table.sql} where xmax::text = pg_current_xact_id()::text "
                f"{step.mode}"
            )
            st = st.fork()
            # (instance 0: no other statement's row, so its place in the interleaving is the
            # claim's; a take of rows the path holds in a covering mode never waits)
            t = self.target(step.lock, 0)
            st.actions.append(Action(sql, f"{step.lock} claimed rows {step.mode}", t, step.mode))
            return [st]
        out = []
        for raw, s in self.instances(step, st):
            inst = self.child(step, s, raw) if raw < 10 else raw
            t = self.target(step.lock, inst)
            kind = self.kind(step.lock)
            option = step.how_it_avoids_waiting
            if kind == "row" and step.mode == "for key share" and not option:
                sql = sq.foreign_key_sql(t)
            else:
                sql = sq.take_sql(t, step.mode, self.scope(step.lock), option)
            key = (step.lock, inst)
            if key in s.held and _covers(kind, s.held[key], step.mode):
                # A re-take never waits and changes nothing for the other transaction
                # (test_pg_truth checks that on the server); leaving it out keeps one script
                # for paths that differ only in how often they re-take.
                out.append(s)
                continue
            s.actions.append(
                Action(sql, f"{t.label} {step.mode}", t, step.mode, sq.params_for(sql, t))
            )
            if step.option != "skip locked":
                s.held[key] = step.mode
            out.append(s)
        return out


def _columns(order: str | None) -> tuple[str, ...]:
    """The columns of an order written `ascending (a, b)` or `ascending a`; () for prose."""
    head, _, rest = (order or "").strip().partition(" ")
    if head != "ascending":
        return ()
    names = rest.strip().strip("()").split(",")
    cols = tuple(n.strip() for n in names)
    return cols if all(c.replace("_", "a").isalnum() for c in cols) else ()


def _covers(kind: str, held: str, wanted: str) -> bool:
    """Holding `held` already excludes everything `wanted` would (a re-take never waits and
    changes nothing for the other transaction)."""
    modes = modes_for_kind(kind)
    return all(conflicts(kind, other, held) for other in modes if conflicts(kind, other, wanted))


def _meets(x: Action, other: Script) -> bool:
    """Can `x` wait for, or make wait, a statement of the other script? Only then does its
    place in the interleaving matter (the oracle's reduction: a grant nobody else could ever
    conflict with is a step of its own)."""
    if x.target is None:
        return True  # commit, rollback: they release what the other may wait for
    kind = x.target.kind if x.target.kind != "memory" else "advisory"
    here = (x.target.lock, x.target.instance)
    return any(
        y.target is not None
        and (y.target.lock, y.target.instance) == here
        and (conflicts(kind, x.mode, y.mode) or conflicts(kind, y.mode, x.mode))
        for y in other
    )


def groups(a: Script, b: Script) -> tuple[list[list[int]], list[list[int]]]:
    """Each script cut into runs of statements that end at a statement whose place matters;
    the statements inside a run go out one after the other, with no other session between."""
    out: list[list[list[int]]] = []
    for mine, theirs in ((a, b), (b, a)):
        runs: list[list[int]] = [[]]
        for i, x in enumerate(mine):
            runs[-1].append(i)
            if _meets(x, theirs):
                runs.append([])
        if not runs[-1]:
            runs.pop()
        out.append(runs)
    return out[0], out[1]


def interleavings(a: Script, b: Script) -> Iterator[list[tuple[int, int]]]:
    """Every merge of two scripts that can behave differently, as (session, statement) pairs."""
    ga, gb = groups(a, b)
    n, k = len(ga) + len(gb), len(ga)
    for first in itertools.combinations(range(n), k):
        chosen = set(first)
        ia, ib = iter(ga), iter(gb)
        order: list[tuple[int, int]] = []
        for i in range(n):
            if i in chosen:
                order.extend((0, j) for j in next(ia))
            else:
                order.extend((1, j) for j in next(ib))
        yield order


def pairs(model: m.Model) -> Iterator[tuple[str, str, Script, Script]]:
    comp = Compiler(model)
    standalone = [p for p in model.paths.values() if p.standalone]
    scripts = {p.id: comp.scripts(p) for p in standalone}
    for pa, pb in itertools.combinations_with_replacement(standalone, 2):
        for i, sa in enumerate(scripts[pa.id]):
            for j, sb in enumerate(scripts[pb.id]):
                if pa.id == pb.id and j < i:
                    continue  # the same path twice: each pair of its scripts once
                yield pa.id, pb.id, sa, sb


def _scope(t: sq.Target, model: m.Model) -> str:
    return "session" if t.kind == "memory" else model.locks[t.lock].scope


def execution(
    model: m.Model, scripts: tuple[Script, Script], order: list[tuple[int, int]]
) -> tuple[tuple[int, int], ...]:
    """The order in which a driver run of `order` would send its statements, by the conflict
    tables that test_pg_truth checks against the server: a statement of a session that waits
    is held back until the session is granted. Schedules with the same sends behave the same
    on the server, so each is run once."""
    held: list[dict[tuple[str, int], str]] = [{}, {}]
    queue: list[list[int]] = [[], []]
    blocked: list[int | None] = [None, None]
    failed = [False, False]
    sent: list[tuple[int, int]] = []

    def waits(s: int, x: Action) -> bool:
        if x.target is None:
            return False
        kind = "advisory" if x.target.kind == "memory" else x.target.kind
        mode = held[1 - s].get((x.target.lock, x.target.instance))
        return mode is not None and conflicts(kind, x.mode, mode)

    def grant(s: int, x: Action) -> None:
        if x.target is None:  # commit / rollback
            held[s] = {
                k: v
                for k, v in held[s].items()
                if _scope(sq.target(model.locks[k[0]], model.locks[k[0]].kind, k[1]), model)
                == "session"
                or model.locks[k[0]].kind == "memory"
            }
            return
        if x.label.startswith("release "):
            held[s].pop((x.target.lock, x.target.instance), None)
            return
        held[s][(x.target.lock, x.target.instance)] = x.mode

    def run(s: int) -> None:
        """Send what session s has queued until it waits or runs out."""
        while queue[s] and blocked[s] is None and not failed[s]:
            i = queue[s].pop(0)
            x = scripts[s][i]
            sent.append((s, i))
            if waits(s, x):
                # NOWAIT fails with 55P03, and so does a try that finds the lock taken (the
                # path gives up, as statements.take_sql writes it)
                if ("nowait" in x.sql and "pg_try_" not in x.sql) or "lock_not_available" in x.sql:
                    failed[s] = True
                    held[s] = {}
                elif "skip locked" in x.sql or "pg_try_" in x.sql:
                    continue
                else:
                    blocked[s] = i
                continue
            grant(s, x)
            if x.target is None or x.label.startswith("release "):
                wake(1 - s)

    def wake(s: int) -> None:
        i = blocked[s]
        if i is not None and not waits(s, scripts[s][i]):
            blocked[s] = None
            grant(s, scripts[s][i])
            run(s)

    for s, i in order:
        queue[s].append(i)
        run(s)
    return tuple(sent)


def schedules(model: m.Model, a: Script, b: Script) -> list[list[tuple[int, int]]]:
    """One schedule per distinct execution of the pair."""
    seen: dict[tuple[tuple[int, int], ...], list[tuple[int, int]]] = {}
    for order in interleavings(a, b):
        seen.setdefault(execution(model, (a, b), order), order)
    return list(seen.values())


def _swapped(model: m.Model, script: Script) -> Script:
    """The script with instances 1 and 2 of every lock with instances exchanged."""
    out = []
    for x in script:
        t = x.target
        if t is None or model.locks[t.lock].singleton:
            out.append(x)
            continue
        other = 3 - t.instance if t.instance in DOMAIN else t.instance
        nt = sq.target(model.locks[t.lock], t.kind, other)
        sql = x.sql.replace(t.key_args, nt.key_args) if t.key_args else x.sql
        if t.params:  # a text that is not plain: bound, or written in hex into a DO block
            sql = sql.replace(sq.inline(t.key_args, t.params), sq.inline(nt.key_args, nt.params))
        if t.table is not None:
            sql = sql.replace(f"where id = {t.instance}", f"where id = {other}")
            sql = sql.replace(f"values ({t.instance})", f"values ({other})")
        label = x.label.replace(t.label, nt.label)
        out.append(Action(sql, label, nt, x.mode, sq.params_for(sql, nt)))
    return tuple(out)


def symmetric_pairs(model: m.Model) -> Iterator[tuple[str, str, Script, Script]]:
    """pairs(), less each pair that is another one with instances 1 and 2 exchanged (the
    oracle's symmetry reduction: the server treats row 1 and row 2 alike)."""
    seen: set[tuple[str, str, Script, Script]] = set()
    for pa, pb, sa, sb in pairs(model):
        mirror = (pa, pb, _swapped(model, sa), _swapped(model, sb))
        if mirror in seen:
            continue
        seen.add((pa, pb, sa, sb))
        yield pa, pb, sa, sb
