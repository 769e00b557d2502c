"""The oracle: run 2, 3 (or 4) transactions concurrently, through every interleaving, and find the
states where they wait on each other for ever.

Each transaction runs one standalone path (the same path may run twice) with concrete instance
bindings. A path is compiled to a small program; the per-transaction state is its program
counter, instance bindings (named instances 'a'/'b' and the transaction's one instance per
class, the loop stack with each iteration's element and its choice of the other classes'
instances) and the locks it holds.

How a request waits, as PostgreSQL 15 does it (shared/reference/postgres-lock-semantics.md and
the server's own descriptions, src/backend/access/heap/README.tuplock and
src/backend/storage/lmgr/README; tests/test_pg_oracle.py replays the shapes on a live server):

- a request waits while another transaction holds the same concrete lock (class + instance) in
  a conflicting mode (conflicts.py); a transaction never conflicts with itself, and holds every
  mode it was granted (a table held SHARE and ROW EXCLUSIVE is both);
- a row: a request that conflicts with no holder is granted at once, even with others waiting
  (it never touches the tuple lock: README.tuplock). One that conflicts with a holder first takes
  the tuple's heavyweight lock, in a strength that conflicts as the row modes do, so it waits
  for another waiter that holds the tuple lock in a conflicting strength; once it holds the
  tuple lock it waits for the conflicting holders. A transaction that already holds a weaker
  lock of the row skips the tuple lock (its upgrade waits for the holders only);
- heavyweight locks (advisory, table): a request waits for conflicting holders only. Postgres
  also queues a request behind earlier conflicting waiters, but those are "soft" waits the
  deadlock detector resolves by reordering the queue whenever that breaks the cycle (lmgr
  README, "soft edges"); a deadlock that remains is one of holders alone.

A deadlock is a state where no transaction can move, not all have finished, and the waits-for
graph has a cycle (it always has one then).

The search is a DFS over global states with three standard reductions that keep every
reachable deadlock (persistent sets of size one, and symmetry): (1) steps a transaction takes
on its own (choosing a branch, an instance, a loop order, a re-entrant take; a commit or its end
only when it holds nothing) run before any interleaving, one transaction at a time: they commute
with every other transaction's steps (a release does not: when it happens decides whether a
later row request must queue);
(2) so does granting a (lock, mode) that no other transaction of the configuration ever requests
in a conflicting mode; (3) transactions that run the same path are interchangeable, so a state
is stored with its transactions sorted; (4) a set's orders are explored with such takes first,
as written (when one is granted changes nothing the others can do), and its other takes in
every order; (5) a transaction's steps of its own (as in (1) and (2)) run to their ends at once,
and only the states where no transaction has one left are kept (`_settled`): the states in
between are neither stored nor counted against the state budget (`max_states`,
`max_total_states`), which so counts these settled states. `Options(reduce=False)` turns them
all off; tests check that the results agree.
"""

from __future__ import annotations

import gc
import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from .conflicts import waits
from .spec import Branch, Call, Commit, Loop, Path, Set, Spec, Take

LABELS = ("a", "b")
# A transaction's labels hold SLOTS numbers per lock class: the instances labelled a and b, its
# one instance, the instance of it granted last (a parent class: its children's parent) and the
# parent its children taken with no parent held are under (a child class; 0: none chosen yet).
SLOTS = 5
MAX_DOMAIN = 6  # the most instances of a class one transaction holds in any search
_UNKNOWN: list[object] = []  # not looked up yet (None is an answer)


@dataclass(frozen=True)
class Options:
    domain: tuple[int, ...] = (1, 2)  # the instances of every non-singleton class
    loop_subsets: bool = True  # a loop visits any subset of the domain (else all of it)
    max_txns: int = 3
    # Four transactions where a row's wait queue can make a deadlock of its own (it needs a
    # fourth, a holder that makes a later request wait behind a waiter: see `_queue_shape`).
    # The property test over general specs stays at three (four multiply its states); the one
    # over queue-shaped specs (test_oracle.py) runs four.
    queue_txns: int = 4
    max_states: int = 400_000  # per configuration; hitting it marks the result incomplete
    # all configurations together (None: no bound beyond max_states); the configurations run
    # smallest first, so the two-transaction ones are searched in full before three share the
    # rest. Hitting it marks the result incomplete. The property tests bound each spec so that
    # their run time is bounded (a few specs cost millions of states otherwise).
    max_total_states: int | None = None
    reduce: bool = True  # the reductions below; False explores every interleaving as is


@dataclass(frozen=True)
class Hop:
    """One transaction on a wait cycle: it holds `holds` (wanted by the previous transaction on
    the cycle) and waits for `wants`, held by the next one. A transaction waiting for a row's
    tuple lock that another waiter holds "holds" that tuple lock (mode `tuple lock`)."""

    path: str
    holds: tuple[str, int, str]  # lock class, instance (0: singleton), a mode it holds
    wants: tuple[str, int, str]

    @property
    def kind(self) -> str:
        """upgrade: the same concrete lock; instance: two instances of one class; queue: the
        next transaction waits behind this one; cross."""
        if self.holds[2] == "tuple lock":
            return "queue"
        if self.holds[:2] == self.wants[:2]:
            return "upgrade"
        if self.holds[0] == self.wants[0]:
            return "instance"
        return "cross"


@dataclass(frozen=True)
class Deadlock:
    hops: tuple[Hop, ...]
    config: tuple[str, ...]  # the paths of all transactions running
    held: tuple[tuple[str, tuple[tuple[str, int, str], ...]], ...] = field(compare=False)

    @property
    def classes(self) -> frozenset[str]:
        return frozenset(h.wants[0] for h in self.hops)

    @property
    def paths(self) -> frozenset[str]:
        """The paths of the transactions on the cycle (not the ones only running beside it)."""
        return frozenset(h.path for h in self.hops)

    @property
    def key(self) -> tuple[object, ...]:
        """Equal for deadlocks that differ only in instance numbers or rotation."""
        return tuple(
            sorted(
                (h.path, h.kind, h.holds[0], h.holds[2], h.wants[0], h.wants[2]) for h in self.hops
            )
        )

    def describe(self) -> str:
        parts = []
        for i, h in enumerate(self.hops):
            nxt = (i + 1) % len(self.hops)
            parts.append(
                f"T{i + 1} ({h.path}) holds {_lk(h.holds)} and waits for {_lk(h.wants)} "
                f"held by T{nxt + 1}"
            )
        return "; ".join(parts) + f"  [running: {', '.join(self.config)}]"


def _lk(x: tuple[str, int, str]) -> str:
    inst = f"#{x[1]}" if x[1] else ""
    return f"{x[0]}{inst} ({x[2]})"


@dataclass
class Result:
    deadlocks: list[Deadlock]
    states: int
    complete: bool
    configs: int


# --- compilation --------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.lock_index = {lk.name: i for i, lk in enumerate(spec.locks)}
        self.row_loops: list[Loop] = []

    def compile(self, path: Path) -> list[tuple[object, ...]]:
        code: list[tuple[object, ...]] = []
        self._steps(path.steps, code, in_loop=False, depth=0)
        code.append(("end",))
        return code

    def _steps(
        self, steps: tuple[object, ...], code: list[tuple[object, ...]], in_loop: bool, depth: int
    ) -> None:
        for st in steps:
            if isinstance(st, Take):
                li = self.lock_index[st.lock]
                lock = self.spec.locks[li]
                if lock.singleton:
                    ref = "single"
                elif st.label is not None:
                    ref = st.label
                elif st.again:
                    ref = "again"
                elif in_loop:
                    ref = "loop"
                else:
                    ref = "default"
                under = LABELS.index(st.under) if st.under in LABELS else -1
                if st.claimed and not lock.singleton:
                    # the k-th instance of the class held when the statement runs, if any
                    code.extend(
                        ("acq", li, st.mode, f"held{k}", st.option or "", under)
                        for k in range(MAX_DOMAIN)
                    )
                    continue
                code.append(("acq", li, st.mode, ref, st.option or "", under))
            elif isinstance(st, Loop):
                by = self.lock_index[st.by] if st.by is not None else -1
                if st.columns:
                    by = -2 - len(self.row_loops)  # a loop over rows: its element is a row
                    self.row_loops.append(st)
                code.append(("loop_start", st.order, by))
                nxt = len(code)
                code.append(("loop_next", -1))  # patched below
                self._steps(st.body, code, True, depth)
                code.append(("jump", nxt))
                code[nxt] = ("loop_next", len(code))
            elif isinstance(st, Set):
                # every order the statement may grant its takes in is an alternative, chosen
                # before it starts (a statement does not reorder its scan when a row is taken);
                # the branch remembers each alternative's order, by (lock, mode)
                orders = tuple(tuple(p) for p in itertools.permutations(st.takes))
                at = len(code)
                self._steps((Branch(orders),), code, in_loop, depth)
                written = tuple((self.lock_index[t.lock], t.mode) for t in st.takes)
                meta = tuple(tuple((self.lock_index[t.lock], t.mode) for t in o) for o in orders)
                code[at] = (*code[at], written, meta)
            elif isinstance(st, Branch):
                at = len(code)
                code.append(("branch", ()))
                starts: list[int] = []
                jumps: list[int] = []
                for alt in st.alternatives:
                    starts.append(len(code))
                    self._steps(alt, code, in_loop, depth)
                    jumps.append(len(code))
                    code.append(("jump", -1))
                end = len(code)
                for j in jumps:
                    code[j] = ("jump", end)
                code[at] = ("branch", tuple(starts))
            elif isinstance(st, Call):
                if depth > 16:
                    raise ValueError("calls nest too deeply (a call cycle?)")
                self._steps(self.spec.path(st.path).steps, code, in_loop, depth + 1)
            elif isinstance(st, Commit):
                code.append(("commit",))
            else:  # pragma: no cover
                raise TypeError(st)


# --- the search ---------------------------------------------------------------------------------

# A transaction's state: (path index, pc, labels, loops, held, pending).
#   labels: per lock class, the instance bound to 'a', to 'b' and to the transaction's one
#     instance (0: not bound yet)
#   loops: stack of (remaining elements, current element, element class, per-class instance
#     chosen in this iteration (0: not yet))
#   held: sorted tuple of (lock index, instance, mode)
#   pending: () or (lock index, instance, mode, option, phase): a request ready to be granted;
#     for a row that had to sleep, phase 2: queued for the tuple lock behind the waiter that
#     holds it; phase 1: holding the tuple lock, waiting for the holders
# pc == -1: finished.
Local = tuple[int, int, tuple[int, ...], tuple[tuple[object, ...], ...],
              tuple[tuple[int, int, str], ...], tuple[object, ...]]  # fmt: skip


class Explorer:
    def __init__(self, spec: Spec, options: Options | None = None) -> None:
        self.spec = spec
        self.opt = options or Options()
        comp = _Compiler(spec)
        self.paths = list(spec.paths)
        self.code = [comp.compile(p) for p in self.paths]
        self._columns(spec, comp.row_loops)
        self.kinds = [lk.kind for lk in spec.locks]
        self.keep = [lk.held_across_commit for lk in spec.locks]
        self.singleton = [lk.singleton for lk in spec.locks]
        self.nlocks = len(spec.locks)
        # per class: the SLOTS label numbers (see SLOTS)
        self.no_labels = (0,) * (SLOTS * self.nlocks)
        index = {lk.name: i for i, lk in enumerate(spec.locks)}
        self.parent = [index[lk.within] if lk.within else -1 for lk in spec.locks]
        self.is_parent = [i in self.parent for i in range(self.nlocks)]
        self.no_choice = (0,) * self.nlocks
        # every (lock, mode) each path may request
        self.requests = [
            {(ins[1], ins[2]) for ins in code if ins[0] == "acq"} for code in self.code
        ]
        self.independent: dict[int, set[tuple[int, str]]] = {}
        self.local_cache: dict[Local, list[Local]] = {}
        self.own_cache: dict[Local, list[Local] | None] = {}
        self.settle_cache: dict[Local, list[Local]] = {}
        self.settling = False  # set per configuration by run_config
        self.ordered = self._ordered_releases()
        # per path: the pcs of its commits and its end (the steps that release what it holds)
        self.release_pcs = [
            frozenset(pc for pc, ins in enumerate(code) if ins[0] in ("commit", "end"))
            for code in self.code
        ]
        dom = self.opt.domain
        if self.opt.loop_subsets:
            subsets = [
                c for r in range(len(dom) + 1) for c in itertools.combinations(sorted(dom), r)
            ]
        else:
            subsets = [tuple(sorted(dom))]
        self.loop_orders = {
            "sorted": subsets,
            "arbitrary": [p for s in subsets for p in itertools.permutations(s)],
        }

    def _columns(self, spec: Spec, row_loops: list[Loop]) -> None:
        """Keyed classes and loops over rows (issue 24): each keyed class's instances are the
        tuples of its columns' values, numbered from 1; each row loop's rows are the tuples of
        its columns' values, and its orders every subset of them, sorted or in any order."""
        values = dict(spec.columns)
        dom = tuple(self.opt.domain)
        self.inst_domain = [dom for _ in spec.locks]
        self.keyed: list[dict[tuple[int, ...], int]] = [{} for _ in spec.locks]
        for li, lk in enumerate(spec.locks):
            if lk.key and not lk.singleton:
                tuples = itertools.product(*(values.get(c, dom) for c in lk.key))
                self.keyed[li] = {t: n + 1 for n, t in enumerate(tuples)}
                self.inst_domain[li] = tuple(range(1, len(self.keyed[li]) + 1))
        self.rows: list[tuple[tuple[str, ...], list[tuple[int, ...]]]] = []
        self.row_orders: list[list[tuple[int, ...]]] = []
        for loop in row_loops:
            rows = list(itertools.product(*(values.get(c, dom) for c in loop.columns)))
            self.rows.append((loop.columns, rows))
            sort = [loop.columns.index(c) for c in (loop.sort or loop.columns)]
            orders: list[tuple[int, ...]] = []
            for r in range(len(rows) + 1):
                for subset in itertools.combinations(range(len(rows)), r):
                    if loop.order != "sorted":
                        orders.extend(itertools.permutations(subset))
                        continue
                    groups: dict[tuple[int, ...], list[int]] = {}
                    for i in subset:
                        groups.setdefault(tuple(rows[i][k] for k in sort), []).append(i)
                    ties = [itertools.permutations(groups[g]) for g in sorted(groups)]
                    orders.extend(
                        tuple(i for part in parts for i in part)
                        for parts in itertools.product(*ties)
                    )
            self.row_orders.append(orders)

    def _row_instance(self, li: int, loops: tuple[tuple[object, ...], ...]) -> int | None:
        """The instance of keyed class li in the current rows of the loops over rows around
        the take (an inner loop walks the rows of one outer row: both rows' columns count),
        when their columns name its key."""
        if not self.keyed[li]:
            return None
        values: dict[str, int] = {}
        for frame in loops:
            by, cur = frame[2], frame[1]
            assert isinstance(by, int) and isinstance(cur, int)
            if by <= -2:
                columns, rows = self.rows[-2 - by]
                values.update(zip(columns, rows[cur], strict=True))
        key = self.spec.locks[li].key
        if not set(key) <= values.keys():
            return None
        return self.keyed[li][tuple(values[c] for c in key)]

    # -- one transaction on its own ------------------------------------------------------------

    def local_steps(self, t: Local) -> list[Local]:
        """The successors of a transaction's own step (it has no pending request)."""
        pi, pc, labels, loops, held, _ = t
        ins = self.code[pi][pc]
        op = ins[0]
        if op == "acq":
            _, li, mode, ref, option, under = ins
            assert isinstance(li, int) and isinstance(mode, str) and isinstance(ref, str)
            assert isinstance(under, int)
            out: list[Local] = []
            if ref.startswith("held"):
                have = sorted({inst for (lk, inst, _m) in held if lk == li})
                k = int(ref[4:])
                if k >= len(have):
                    return [(pi, pc + 1, labels, loops, held, ())]  # no k-th claimed row
                inst = have[k]
                if (li, inst, mode) in held:
                    return [(pi, pc + 1, labels, loops, held, ())]
                return [(pi, pc, labels, loops, held, (li, inst, mode, option, 0))]
            for inst, lab, lps in self._child(li, ref, under, labels, loops, held):
                if (li, inst, mode) in held:  # re-entrant: granted at once
                    out.append((pi, pc + 1, lab, lps, held, ()))
                else:
                    out.append((pi, pc, lab, lps, held, (li, inst, mode, option, 0)))
            return out
        if op == "loop_start":
            _, order, by = ins
            assert isinstance(by, int)
            choices = self.row_orders[-2 - by] if by <= -2 else self.loop_orders[str(order)]
            return [
                (pi, pc + 1, labels, (*loops, (elems, 0, by, self.no_choice)), held, ())
                for elems in choices
            ]
        if op == "loop_next":
            remaining, _cur, by, _choice = loops[-1]
            assert isinstance(remaining, tuple)
            if remaining:
                top = (remaining[1:], remaining[0], by, self.no_choice)
                return [(pi, pc + 1, labels, (*loops[:-1], top), held, ())]
            return [(pi, int(ins[1]), labels, loops[:-1], held, ())]
        if op == "jump":
            return [(pi, int(ins[1]), labels, loops, held, ())]
        if op == "branch":
            targets = ins[1]
            if len(ins) > 2 and self.opt.reduce:
                targets = self._set_orders(pi, ins)
            return [(pi, target, labels, loops, held, ()) for target in targets]
        if op == "commit":
            kept = tuple(h for h in held if self.keep[h[0]])
            return [(pi, pc + 1, self._forget_parents(labels, kept), loops, kept, ())]
        if op == "end":
            return [(pi, -1, self.no_labels, (), (), ())]
        raise AssertionError(ins)  # pragma: no cover

    def _own_moves(self, t: Local) -> list[Local] | None:
        """With the reductions: the successors of t's next step when it runs before any
        interleaving (a step of its own that releases nothing, or the grant of a request no
        other transaction could ever conflict with); None when it is interleaved (or t is
        done). Remembered per configuration in `own_cache`, like `_local`."""
        if t[1] == -1:
            return None
        if not t[5]:
            if self._releases(t):
                return None  # interleaved
            return self._local(t)
        li, inst, mode = t[5][0], t[5][1], t[5][2]
        if (li, mode) in self.independent[t[0]]:  # nobody else could ever conflict
            nheld = tuple(sorted({*t[4], (li, inst, mode)}))
            return [(t[0], t[1] + 1, self._granted(t[2], li, inst), t[3], nheld, ())]
        return None

    def _local(self, t: Local) -> list[Local]:
        """local_steps, remembered for the configuration being searched: a transaction's own
        state recurs beside many states of the others (its successors depend on the
        configuration only through `independent`, set per configuration)."""
        found = self.local_cache.get(t)
        if found is None:
            found = self.local_cache[t] = self.local_steps(t)
        return found

    def _set_orders(self, pi: int, ins: tuple[object, ...]) -> tuple[int, ...]:
        """The orders of a set worth exploring: its takes that no other transaction of the
        configuration could conflict with come first, as written (granting one never waits and
        holding it blocks nobody, so when it happens changes nothing the others can do), and
        the others in every order."""
        starts, written, meta = ins[1], ins[2], ins[3]
        assert isinstance(starts, tuple) and isinstance(written, tuple)
        assert isinstance(meta, tuple)
        free = [x for x in written if x in self.independent.get(pi, set())]
        kept = tuple(
            s for s, order in zip(starts, meta, strict=True) if list(order[: len(free)]) == free
        )
        return kept or starts

    def _child(
        self,
        li: int,
        ref: str,
        under: int,
        labels: tuple[int, ...],
        loops: tuple[tuple[object, ...], ...],
        held: tuple[tuple[int, int, str], ...],
    ) -> list[tuple[int, tuple[int, ...], tuple[tuple[object, ...], ...]]]:
        """_instances, with a class within a parent drawn among that parent's own instances:
        child d of parent p is 10 * p + d. The parent is the one labelled `under`, else the
        one granted last and still held. With none (no parent held, or the label not bound
        yet) it is any parent, chosen at the first such take and kept in the labels (the
        parent's label `under`, else the child class's own slot 4, else the child's label), so
        that a later such take means the same row, as the transaction's one instance must (Postgres has no rule that
        makes it parent 1's: lockdocs' LD201 on such a spec replays to a deadlock).

        A named child (label a or b) is one row, whatever parent is held when it is taken
        again (docs/concepts.md: `instance: NAME` is one named instance): its label keeps the
        row, 10 * p + d, from its first take on, and a and b are two rows."""
        found = self._instances(li, ref, labels, loops, held)
        pl = self.parent[li]
        if pl < 0 or ref == "single":
            return found
        named = ref in LABELS
        out: list[tuple[int, tuple[int, ...], tuple[tuple[object, ...], ...]]] = []
        for inst, lab, lps in found:
            if inst >= 10:  # a row already held (again), or named: already its parent's
                out.append((inst, lab, lps))
                continue
            p = lab[SLOTS * pl + under] if under >= 0 else lab[SLOTS * pl + 3]
            if p:
                rows = [(10 * p + inst, lab)]
            else:
                if under >= 0:  # the parent labelled `under`, distinct from the other label's
                    k = SLOTS * pl + under
                    other = lab[SLOTS * pl + 1 - under]
                elif named:  # the label keeps the row (below), so the parent too
                    k, other = -1, 0
                else:
                    k = SLOTS * li + 4
                    other = 0
                if k >= 0 and lab[k]:  # chosen at an earlier take
                    rows = [(10 * lab[k] + inst, lab)]
                else:
                    rows = [
                        (10 * q + inst, lab if k < 0 else (*lab[:k], q, *lab[k + 1 :]))
                        for q in self.inst_domain[pl]
                        if q != other
                    ]
            if named:  # the label keeps the row; the other label's is another row
                k = SLOTS * li + LABELS.index(ref)
                other = lab[SLOTS * li + 1 - LABELS.index(ref)]
                rows = [(r, (*lb[:k], r, *lb[k + 1 :])) for r, lb in rows if r != other]
            out.extend((r, lb, lps) for r, lb in rows)
        return out

    def _granted(self, labels: tuple[int, ...], li: int, inst: int) -> tuple[int, ...]:
        """Labels after a grant of (li, inst): a parent class remembers it as the last one."""
        if not self.is_parent[li]:
            return labels
        k = SLOTS * li + 3
        return (*labels[:k], inst, *labels[k + 1 :])

    def _forget_parents(
        self, labels: tuple[int, ...], held: tuple[tuple[int, int, str], ...]
    ) -> tuple[int, ...]:
        """A parent no longer held (the commit released it) is no child's parent any more."""
        out = list(labels)
        for li, parent in enumerate(self.is_parent):
            k = SLOTS * li + 3
            if parent and out[k] and not any(h[0] == li and h[1] == out[k] for h in held):
                out[k] = 0
        return tuple(out)

    def _instances(
        self,
        li: int,
        ref: str,
        labels: tuple[int, ...],
        loops: tuple[tuple[object, ...], ...],
        held: tuple[tuple[int, int, str], ...],
    ) -> list[tuple[int, tuple[int, ...], tuple[tuple[object, ...], ...]]]:
        """(instance, labels, loops) for each instance the take may mean."""
        if ref == "single":
            return [(0, labels, loops)]
        if ref == "again":
            have = sorted({inst for (lk, inst, _m) in held if lk == li})
            if have:
                return [(d, labels, loops) for d in have]
            ref = "default"
        if ref == "loop":
            remaining, cur, by, choice = loops[-1]
            if by == li:
                return [(int(cur), labels, loops)]
            assert isinstance(by, int)
            row = self._row_instance(li, loops) if by <= -2 else None
            if row is not None:
                return [(row, labels, loops)]
            assert isinstance(choice, tuple)
            if choice[li]:
                return [(choice[li], labels, loops)]
            out = []
            for d in self.inst_domain[li]:
                frame = (remaining, cur, by, (*choice[:li], d, *choice[li + 1 :]))
                out.append((d, labels, (*loops[:-1], frame)))
            return out
        if ref in LABELS:  # instances a and b of one class are distinct
            k = SLOTS * li + LABELS.index(ref)
            if labels[k]:
                return [(labels[k], labels, loops)]
            other = labels[SLOTS * li + (1 - LABELS.index(ref))]
            return [
                (d, (*labels[:k], d, *labels[k + 1 :]), loops)
                for d in self.inst_domain[li]
                if d != other
            ]
        # default: the transaction's one instance of the class, chosen once (any instance)
        k = SLOTS * li + 2
        if labels[k]:
            return [(labels[k], labels, loops)]
        return [(d, (*labels[:k], d, *labels[k + 1 :]), loops) for d in self.inst_domain[li]]

    def _releases(self, t: Local) -> bool:
        """Is the transaction's next step a commit or its end while it holds a lock? Such a
        step is interleaved with the others, not run first: when a lock goes changes whether a
        later request must wait, and so whether it queues behind a waiter."""
        return self.ordered and bool(t[4]) and t[1] in self.release_pcs[t[0]]

    # -- all of them ----------------------------------------------------------------------------

    def _holders(
        self, state: tuple[Local, ...], i: int, li: int, inst: int, mode: str
    ) -> list[int]:
        """The other transactions holding (li, inst) in a mode `mode` waits for."""
        kind = self.kinds[li]
        out = []
        for j, u in enumerate(state):
            if j == i:
                continue
            for hl, hi, hm in u[4]:
                if hl == li and hi == inst and waits(kind, mode, hm):
                    out.append(j)
                    break
        return out

    def _tuple_holders(
        self, state: tuple[Local, ...], i: int, li: int, inst: int, mode: str
    ) -> list[int]:
        """The other transactions holding the tuple lock of row (li, inst) in a strength that
        conflicts with `mode`'s (the strengths conflict as the row modes do)."""
        out = []
        for j, u in enumerate(state):
            p = u[5]
            if (
                j != i
                and p
                and p[4] == 1
                and p[0] == li
                and p[1] == inst
                and waits("row", mode, p[2])
            ):
                out.append(j)
        return out

    def waits_for(self, state: tuple[Local, ...], i: int) -> tuple[list[int], bool]:
        """Whom transaction i's pending request waits for, and whether it waits for their
        tuple lock (True) rather than for what they hold; nobody when it can move."""
        li, inst, mode, _opt, phase = state[i][5]
        if phase == 2:  # queued: it waits for the tuple lock, whoever holds the row now
            return self._tuple_holders(state, i, li, inst, mode), True
        holders = self._holders(state, i, li, inst, mode)
        if not holders or self.kinds[li] != "row" or phase == 1:
            return holders, False
        if any(hl == li and hi == inst for hl, hi, _m in state[i][4]):
            return holders, False  # an upgrade skips the tuple lock
        return [], False  # it goes for the tuple lock (phase 1 or 2)

    def successors(self, state: tuple[Local, ...]) -> tuple[list[tuple[Local, ...]], bool]:
        """(successor states, is_deadlock). Settling, every transaction of `state` is settled
        (no step of its own to take) and so is every successor: the one transaction that moved
        runs its own steps to their ends (`_settled`)."""
        if self.opt.reduce and not self.settling:
            own = self.own_cache
            for i, t in enumerate(state):
                moves = own.get(t, _UNKNOWN)
                if moves is _UNKNOWN:
                    moves = own[t] = self._own_moves(t)
                if moves is not None:
                    return [(*state[:i], nt, *state[i + 1 :]) for nt in moves], False
        moved: list[tuple[int, Local]] = []  # (transaction, its state after the move)
        waiting = False
        for i, t in enumerate(state):
            if t[1] == -1:
                continue
            if not t[5]:  # a step of its own, interleaved (with the reduction: a release)
                moved.extend((i, nt) for nt in self._local(t))
                continue
            pi, pc, labels, loops, held, pending = t
            li, inst, mode, option, phase = pending
            if phase == 2:
                # queued for the tuple lock: it gets it once no waiter ahead holds it
                if self._tuple_holders(state, i, li, inst, mode):
                    waiting = True
                    continue
                nt = (pi, pc, labels, loops, held, (li, inst, mode, option, 1))
                moved.append((i, nt))
                continue
            holders = self._holders(state, i, li, inst, mode)
            if not holders:
                nheld = tuple(sorted({*held, (li, inst, mode)}))
                nt = (pi, pc + 1, self._granted(labels, li, inst), loops, nheld, ())
            elif option in ("nowait", "try"):
                # NOWAIT fails at once: the transaction aborts and the path ends; a try that
                # finds the lock taken gives up the same way (the path ends, releasing all)
                nt = (pi, -1, self.no_labels, (), (), ())
            elif option == "skip locked":  # the row is skipped
                nt = (pi, pc + 1, labels, loops, held, ())
            elif (
                self.kinds[li] != "row"
                or phase == 1
                or any(hl == li and hi == inst for hl, hi, _m in held)
            ):
                waiting = True  # for the holders (an upgrade of a row skips the tuple lock)
                continue
            else:
                # a row request that must sleep goes for the tuple lock: it takes it, or it
                # queues behind the waiter that holds it
                ahead = self._tuple_holders(state, i, li, inst, mode)
                nt = (pi, pc, labels, loops, held, (li, inst, mode, option, 2 if ahead else 1))
            moved.append((i, nt))
        if self.settling:
            settled = self._settled
            out = [(*state[:i], x, *state[i + 1 :]) for i, nt in moved for x in settled(nt)]
        else:
            out = [(*state[:i], nt, *state[i + 1 :]) for i, nt in moved]
        return out, (waiting and not out)

    def _settled(self, t: Local) -> list[Local]:
        """The states t's own steps (`_own_moves`) lead to when run to their ends: t itself when
        it has none. Remembered per configuration, like `_local`.

        Why it loses no deadlock: an own step is always enabled, commutes with every step of
        every other transaction, and depends on t alone, so the existing reduction (1)-(2) already
        runs a transaction's own steps before any interleaving, one at a time. Running them all
        at once, and keeping only the states where no transaction has one, leaves the same
        settled states reachable (the own steps of two transactions commute, so which runs
        first does not matter); a deadlock is a settled state (no transaction can move). Only
        the states in between are not kept, and so not counted against the state budget.
        test_reductions_keep_every_deadlock checks it against the plain search."""
        found = self.settle_cache.get(t)
        if found is not None:
            return found
        moves = self.own_cache.get(t, _UNKNOWN)
        if moves is _UNKNOWN:
            moves = self.own_cache[t] = self._own_moves(t)
        if moves is None:
            found = [t]
        else:
            found = list(dict.fromkeys(x for m in moves for x in self._settled(m)))
        self.settle_cache[t] = found
        return found

    def deadlocks_at(self, state: tuple[Local, ...]) -> list[Deadlock]:
        n = len(state)
        succ: dict[int, list[int]] = {}
        queue: dict[int, bool] = {}
        for i in range(n):
            if state[i][1] != -1:
                succ[i], queue[i] = self.waits_for(state, i)
        cycles: list[tuple[int, ...]] = []
        for k in range(2, n + 1):
            for combo in itertools.permutations(range(n), k):
                if combo[0] != min(combo):
                    continue
                if all(combo[(x + 1) % k] in succ.get(combo[x], ()) for x in range(k)):
                    cycles.append(combo)
        names = [self.paths[t[0]].name for t in state]
        config = tuple(sorted(names))
        held_desc = tuple(
            (names[i], tuple((self.spec.locks[h[0]].name, h[1], h[2]) for h in state[i][4]))
            for i in range(n)
        )
        out = []
        for cyc in cycles:
            hops = []
            k = len(cyc)
            for x in range(k):
                i, prev = cyc[x], cyc[x - 1]
                li, inst, mode = state[i][5][0], state[i][5][1], state[i][5][2]
                pl, pinst, pmode = state[prev][5][0], state[prev][5][1], state[prev][5][2]
                name = self.spec.locks[pl].name
                if queue[prev]:
                    holds = (name, pinst, "tuple lock")
                else:
                    kind = self.kinds[pl]
                    hm = next(
                        m
                        for (hl, hi, m) in state[i][4]
                        if hl == pl and hi == pinst and waits(kind, pmode, m)
                    )
                    holds = (name, pinst, hm)
                hops.append(Hop(names[i], holds, (self.spec.locks[li].name, inst, mode)))
            out.append(Deadlock(tuple(hops), config, held_desc))
        return out

    def run_config(
        self, config: tuple[int, ...], trace: bool = False, limit: int | None = None
    ) -> tuple[list[Deadlock], int, bool, dict[tuple[Local, ...], tuple[Local, ...] | None]]:
        """Every deadlock of one configuration (path indexes of the transactions): (deadlocks,
        states seen, complete, parents). With `trace`, states are not sorted and each state's
        parent is kept, and `self.dead_at` maps each deadlock's key to the state it was seen in.
        """
        self.independent = self._independent(config)
        self.local_cache: dict[Local, list[Local]] = {}
        self.own_cache: dict[Local, list[Local] | None] = {}
        self.settle_cache: dict[Local, list[Local]] = {}
        start = tuple((pi, 0, self.no_labels, (), (), ()) for pi in config)
        canon = self.opt.reduce and not trace
        # a trace keeps every step between two states (actions and schedule read them)
        self.settling = canon
        max_states = self.opt.max_states if limit is None else limit
        complete = True
        seen: set[tuple[Local, ...]] = set()
        stack: list[tuple[Local, ...]] = []
        for s in self._starts(start) if canon else (start,):
            if len(seen) >= max_states:
                complete = False
                break
            seen.add(s)
            stack.append(s)
        parent: dict[tuple[Local, ...], tuple[Local, ...] | None] = dict.fromkeys(stack)
        found: dict[tuple[object, ...], Deadlock] = {}
        self.dead_at: dict[tuple[object, ...], tuple[Local, ...]] = {}
        successors, push, see = self.successors, stack.append, seen.add
        while stack:
            st = stack.pop()
            nxt, dead = successors(st)
            if dead:
                for d in self.deadlocks_at(st):
                    found.setdefault(d.key, d)
                    self.dead_at.setdefault(d.key, st)
                continue
            for s in nxt:
                if canon:
                    s = tuple(sorted(s))
                n = len(seen)
                if n >= max_states:
                    if s not in seen:
                        complete = False
                    continue
                see(s)  # one hash of the state, where `s in seen` and then adding it took two
                if len(seen) == n:
                    continue
                if trace:
                    parent[s] = st
                push(s)
        return list(found.values()), len(seen), complete, parent

    def _starts(self, start: tuple[Local, ...]) -> Iterator[tuple[Local, ...]]:
        """The settled states the configuration starts in, sorted, each once: every
        transaction's own first steps run to their ends. Transactions of one path start alike,
        so theirs are drawn as a multiset (the states are sorted: their order is no matter)."""
        groups = sorted(Counter(start).items())

        def draw(g: int) -> Iterator[tuple[Local, ...]]:
            if g == len(groups):
                yield ()
                return
            t, k = groups[g]
            for mine in itertools.combinations_with_replacement(self._settled(t), k):
                for rest in draw(g + 1):
                    yield mine + rest

        for s in draw(0):
            yield tuple(sorted(s))

    def _independent(self, config: tuple[int, ...]) -> dict[int, set[tuple[int, str]]]:
        """Per path of the configuration: the (lock, mode) requests that no other transaction
        of it could ever conflict with. Granting one is a step of its own (always enabled, and
        it commutes with everything the others do), so it needs no interleaving."""
        out: dict[int, set[tuple[int, str]]] = {}
        for k, pi in enumerate(config):
            others = config[:k] + config[k + 1 :]
            theirs = set().union(*(self.requests[o] for o in others)) if others else set()
            out[pi] = {
                (li, mode)
                for (li, mode) in self.requests[pi]
                if not any(
                    lj == li
                    and (waits(self.kinds[li], mode, m2) or waits(self.kinds[li], m2, mode))
                    for (lj, m2) in theirs
                )
            }
        return out

    def _queue_shape(self) -> bool:
        """Can a row's tuple-lock queue make a deadlock of its own here? It takes, on one row
        class X: a holder H1 (mode h1) that takes another lock after X; a waiter W (mode w,
        conflicting with h1) first in X's queue; a request R (mode m) after another lock, with m
        compatible with h1 (else it waits for H1 itself) but conflicting with w (so it queues
        behind W) and with some mode h2 X is taken in (the holder that makes R sleep): four
        transactions. Only then does the search run four."""
        for li, kind in enumerate(self.kinds):
            if kind != "row":
                continue
            taken = {mode for reqs in self.requests for (lj, mode) in reqs if lj == li}
            later = set()  # modes X is taken in and then another lock after it
            after = set()  # modes X is taken in after another lock
            for code in self.code:
                acqs = [ins for ins in code if ins[0] in ("acq", "commit")]
                for n, ins in enumerate(acqs):
                    if ins[0] != "acq" or ins[1] != li:
                        continue
                    if any(a[0] == "acq" and a[1] != li for a in acqs[n + 1 :]):
                        later.add(str(ins[2]))
                    if any(a[0] == "acq" and a[1] != li for a in acqs[:n]):
                        after.add(str(ins[2]))
            for h1, m, w, h2 in itertools.product(later, after, taken, taken):
                if (
                    waits("row", w, h1)
                    and not waits("row", m, h1)
                    and waits("row", m, w)
                    and waits("row", m, h2)
                ):
                    return True
        return False

    def _ordered_releases(self) -> bool:
        """Must a release be interleaved rather than run first? When the row queue can matter
        (whether a request has to sleep depends on who still holds the row), or a NOWAIT or
        SKIP LOCKED take's outcome depends on it. Otherwise running it first loses nothing: a
        release only lets other requests through."""
        options = any(ins[0] == "acq" and ins[4] for code in self.code for ins in code)
        return options or self._queue_shape()

    def configs(self) -> list[tuple[int, ...]]:
        idx = [i for i, p in enumerate(self.paths) if p.standalone]
        top = self.opt.max_txns
        if self.opt.queue_txns > top and self._queue_shape():
            top = self.opt.queue_txns
        out: list[tuple[int, ...]] = []
        for k in range(2, top + 1):
            out.extend(itertools.combinations_with_replacement(idx, k))
        return out

    def run(self) -> Result:
        # The search makes millions of small tuples and frees none until it ends: the cyclic
        # collector would only walk the growing set of states again and again (a fifth of the
        # time). The states hold no cycles; refcounting frees them.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if collecting:
                gc.enable()

    def _run(self) -> Result:
        found: dict[tuple[object, ...], Deadlock] = {}
        states = 0
        complete = True
        configs = self.configs()
        for cfg in configs:
            limit = self.opt.max_states
            if self.opt.max_total_states is not None:
                limit = min(limit, self.opt.max_total_states - states)
                if limit <= 0:
                    complete = False
                    break
            dls, n, ok, _ = self.run_config(cfg, limit=limit)
            states += n
            complete &= ok
            for d in dls:
                found.setdefault(d.key, d)
        return Result(list(found.values()), states, complete, len(configs))

    def trace(self, deadlock: Deadlock) -> tuple[tuple[int, ...], list[tuple[Local, ...]]]:
        """The configuration (path indexes) and the chain of global states that reaches
        `deadlock`, from the start."""
        cfg = tuple(sorted(self.paths.index(self.spec.path(n)) for n in deadlock.config))
        _, _, _, parent = self.run_config(cfg, trace=True)
        st: tuple[Local, ...] | None = self.dead_at.get(deadlock.key)
        chain = []
        while st is not None:
            chain.append(st)
            st = parent[st]
        chain.reverse()
        return cfg, chain

    def actions(self, deadlock: Deadlock) -> list[tuple[int, str, tuple[object, ...]]]:
        """What each transaction does on a server, in the order of the trace: (transaction,
        "request", (lock index, instance, mode, option)) when a statement runs, that is when
        the request is granted, when a row request starts to sleep (it takes or queues for the
        tuple lock), or at the end for the requests that wait in the deadlock; (transaction,
        "end", ()) when it commits or finishes holding something."""
        _cfg, chain = self.trace(deadlock)
        out: list[tuple[int, str, tuple[object, ...]]] = []
        sent: set[int] = set()  # transactions whose pending request is already running
        for a, b in itertools.pairwise(chain):
            for i, (ta, tb) in enumerate(zip(a, b, strict=True)):
                if ta[5] and len(tb[4]) > len(ta[4]) and i not in sent:
                    out.append((i, "request", tuple(ta[5][:4])))  # granted now
                elif tb[5] and tb[5][4] in (1, 2) and (not ta[5] or ta[5][4] == 0):
                    out.append((i, "request", tuple(tb[5][:4])))  # it sleeps from now on
                    sent.add(i)
                elif ta[5] and tb[5] != ta[5] and not tb[5] and i not in sent:
                    out.append((i, "request", tuple(ta[5][:4])))  # NOWAIT failed, or skipped
                if not tb[5]:
                    sent.discard(i)
                if ta[4] and len(tb[4]) < len(ta[4]):
                    out.append((i, "end", ()))
        for i, t in enumerate(chain[-1]):
            if t[5] and i not in sent:
                out.append((i, "request", tuple(t[5][:4])))  # waits in the deadlock
        return out

    def schedule(self, deadlock: Deadlock) -> list[str]:
        """A step-by-step interleaving reaching `deadlock` (for failure messages)."""
        _cfg, chain = self.trace(deadlock)
        lines = []
        for a, b in itertools.pairwise(chain):
            for i, (ta, tb) in enumerate(zip(a, b, strict=True)):
                if len(tb[4]) > len(ta[4]):
                    new = sorted(set(tb[4]) - set(ta[4]))
                    for li, inst, mode in new:
                        lines.append(
                            f"T{i + 1} ({self.paths[ta[0]].name}) takes "
                            + _lk((self.spec.locks[li].name, inst, mode))
                        )
                elif len(tb[4]) < len(ta[4]):
                    lines.append(f"T{i + 1} ({self.paths[ta[0]].name}) releases")
                elif tb[5] and tb[5][4] in (1, 2) and (not ta[5] or ta[5][4] == 0):
                    li, inst, mode = tb[5][0], tb[5][1], tb[5][2]
                    how = "holding" if tb[5][4] == 1 else "queued for"
                    lines.append(
                        f"T{i + 1} ({self.paths[ta[0]].name}) waits, {how} the tuple lock of "
                        + _lk((self.spec.locks[li].name, inst, mode))
                    )
        return lines


def explore(spec: Spec, options: Options | None = None) -> Result:
    return Explorer(spec, options).run()
