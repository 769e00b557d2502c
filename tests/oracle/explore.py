"""The oracle: run 2 or 3 transactions concurrently, through every interleaving, and find the
states where they wait on each other for ever.

Each transaction runs one standalone path (the same path may run twice) with concrete instance
bindings. A path is compiled to a small program; the per-transaction state is its program
counter, instance bindings (named instances 'a'/'b', the loop stack) and the locks it holds.

A request waits while another transaction holds the same concrete lock (class + instance) in a
conflicting mode (conflicts.py); a transaction never conflicts with itself, and a lock it already
holds in the same mode is granted at once. A deadlock is a state where no transaction can move,
not all have finished, and the waits-for graph has a cycle (it always has one then).

The search is a DFS over global states with three standard reductions that keep every
reachable deadlock (persistent sets of size one, and symmetry): (1) steps a transaction takes
on its own (choosing a branch, an instance, a loop order, a re-entrant take, a commit) run before
any interleaving, one transaction at a time: they commute with every other transaction's steps;
(2) so does granting a (lock, mode) that no other transaction of the configuration ever requests
in a conflicting mode; (3) transactions that run the same path are interchangeable, so a state
is stored with its transactions sorted. `Options(reduce=False)` turns them all off; a test
checks that the results agree.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .conflicts import waits
from .spec import Branch, Call, Commit, Loop, Path, Spec, Take

LABELS = ("a", "b")


@dataclass(frozen=True)
class Options:
    domain: tuple[int, ...] = (1, 2)  # the instances of every non-singleton class
    loop_subsets: bool = True  # a loop visits any non-empty subset of the domain (else all of it)
    max_txns: int = 3
    max_states: int = 400_000  # per configuration; hitting it marks the result incomplete
    reduce: bool = True  # the two reductions below; False explores every interleaving as is


@dataclass(frozen=True)
class Hop:
    """One transaction on a wait cycle: it holds `holds` (wanted by the previous transaction on
    the cycle) and waits for `wants`, held by the next one."""

    path: str
    holds: tuple[str, int, str]  # lock class, instance (0: singleton), a mode it holds
    wants: tuple[str, int, str]

    @property
    def kind(self) -> str:
        """upgrade: the same concrete lock; instance: two instances of one class; cross."""
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
                elif in_loop:
                    ref = "loop"
                else:
                    ref = "default"
                code.append(("acq", li, st.mode, ref, st.option or ""))
            elif isinstance(st, Loop):
                code.append(("loop_start", st.order))
                nxt = len(code)
                code.append(("loop_next", -1))  # patched below
                self._steps(st.body, code, True, depth)
                code.append(("jump", nxt))
                code[nxt] = ("loop_next", len(code))
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
#   labels: per lock class, the instance bound to 'a' and to 'b' (0: not bound yet)
#   loops: stack of (remaining elements, current element)
#   held: sorted tuple of (lock index, instance, mode)
#   pending: () or (lock index, instance, mode, option): a request ready to be granted
# pc == -1: finished.
Local = tuple[int, int, tuple[int, ...], tuple[tuple[tuple[int, ...], int], ...],
              tuple[tuple[int, int, str], ...], tuple[object, ...]]  # fmt: skip


class Explorer:
    def __init__(self, spec: Spec, options: Options | None = None) -> None:
        self.spec = spec
        self.opt = options or Options()
        comp = _Compiler(spec)
        self.paths = list(spec.paths)
        self.code = [comp.compile(p) for p in self.paths]
        self.kinds = [lk.kind for lk in spec.locks]
        self.keep = [lk.held_across_commit for lk in spec.locks]
        self.singleton = [lk.singleton for lk in spec.locks]
        self.no_labels = (0,) * (2 * len(spec.locks))
        # every (lock, mode) each path may request
        self.requests = [
            {(ins[1], ins[2]) for ins in code if ins[0] == "acq"} for code in self.code
        ]
        self.independent: dict[int, set[tuple[int, str]]] = {}
        dom = self.opt.domain
        if self.opt.loop_subsets:
            subsets = [
                c for r in range(1, len(dom) + 1) for c in itertools.combinations(sorted(dom), r)
            ]
        else:
            subsets = [tuple(sorted(dom))]
        self.loop_orders = {
            "sorted": subsets,
            "arbitrary": [p for s in subsets for p in itertools.permutations(s)],
        }

    # -- one transaction on its own ------------------------------------------------------------

    def local_steps(self, t: Local) -> list[Local]:
        """The successors of a transaction's own step (it has no pending request)."""
        pi, pc, labels, loops, held, _ = t
        ins = self.code[pi][pc]
        op = ins[0]
        if op == "acq":
            _, li, mode, ref, option = ins
            out: list[Local] = []
            for inst, lab in self._instances(li, ref, labels, loops, held):
                if (li, inst, mode) in held:  # re-entrant: granted at once
                    out.append((pi, pc + 1, lab, loops, held, ()))
                else:
                    out.append((pi, pc, lab, loops, held, (li, inst, mode, option)))
            return out
        if op == "loop_start":
            return [
                (pi, pc + 1, labels, (*loops, (elems, 0)), held, ())
                for elems in self.loop_orders[ins[1]]
            ]
        if op == "loop_next":
            remaining, _cur = loops[-1]
            if remaining:
                top = (remaining[1:], remaining[0])
                return [(pi, pc + 1, labels, (*loops[:-1], top), held, ())]
            return [(pi, ins[1], labels, loops[:-1], held, ())]
        if op == "jump":
            return [(pi, ins[1], labels, loops, held, ())]
        if op == "branch":
            return [(pi, target, labels, loops, held, ()) for target in ins[1]]
        if op == "commit":
            kept = tuple(h for h in held if self.keep[h[0]])
            return [(pi, pc + 1, labels, loops, kept, ())]
        if op == "end":
            return [(pi, -1, self.no_labels, (), (), ())]
        raise AssertionError(ins)  # pragma: no cover

    def _instances(
        self,
        li: int,
        ref: str,
        labels: tuple[int, ...],
        loops: tuple[tuple[tuple[int, ...], int], ...],
        held: tuple[tuple[int, int, str], ...],
    ) -> list[tuple[int, tuple[int, ...]]]:
        if ref == "single":
            return [(0, labels)]
        if ref == "loop":
            return [(loops[-1][1], labels)]
        if ref in LABELS:  # instances a and b of one class are distinct
            k = 2 * li + LABELS.index(ref)
            if labels[k]:
                return [(labels[k], labels)]
            other = labels[k ^ 1]
            return [(d, (*labels[:k], d, *labels[k + 1 :])) for d in self.opt.domain if d != other]
        # default: the instance already held (any of them), else any instance
        have = sorted({inst for (lk, inst, _m) in held if lk == li})
        return [(d, labels) for d in (have or self.opt.domain)]

    # -- all of them ----------------------------------------------------------------------------

    def blockers(self, state: tuple[Local, ...], i: int) -> list[int]:
        li, inst, mode, _opt = state[i][5]
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

    def successors(self, state: tuple[Local, ...]) -> tuple[list[tuple[Local, ...]], bool]:
        """(successor states, is_deadlock)."""
        if self.opt.reduce:
            for i, t in enumerate(state):
                if t[1] == -1:
                    continue
                if not t[5]:
                    return [(*state[:i], nt, *state[i + 1 :]) for nt in self.local_steps(t)], False
                li, inst, mode, _option = t[5]
                if (li, mode) in self.independent[t[0]]:  # nobody else could ever conflict
                    nheld = tuple(sorted({*t[4], (li, inst, mode)}))
                    nt = (t[0], t[1] + 1, t[2], t[3], nheld, ())
                    return [(*state[:i], nt, *state[i + 1 :])], False
        out = []
        waiting = False
        for i, t in enumerate(state):
            if t[1] == -1:
                continue
            if not t[5]:  # only without the reduction: a step of its own, interleaved
                out.extend((*state[:i], nt, *state[i + 1 :]) for nt in self.local_steps(t))
                continue
            pi, pc, labels, loops, held, pending = t
            li, inst, mode, option = pending
            if not self.blockers(state, i):
                nheld = tuple(sorted({*held, (li, inst, mode)}))
                nt = (pi, pc + 1, labels, loops, nheld, ())
            elif option == "nowait":  # fails at once: the transaction aborts and the path ends
                nt = (pi, -1, self.no_labels, (), (), ())
            elif option == "skip locked":  # the row is skipped
                nt = (pi, pc + 1, labels, loops, held, ())
            else:
                waiting = True
                continue
            out.append((*state[:i], nt, *state[i + 1 :]))
        return out, (waiting and not out)

    def deadlocks_at(self, state: tuple[Local, ...]) -> list[Deadlock]:
        n = len(state)
        succ = {i: self.blockers(state, i) for i in range(n) if state[i][1] != -1}
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
                li, inst, mode, _ = state[i][5]
                pl, pinst, pmode, _ = state[prev][5]
                kind = self.kinds[pl]
                hm = next(
                    m
                    for (hl, hi, m) in state[i][4]
                    if hl == pl and hi == pinst and waits(kind, pmode, m)
                )
                hops.append(
                    Hop(
                        names[i],
                        (self.spec.locks[pl].name, pinst, hm),
                        (self.spec.locks[li].name, inst, mode),
                    )
                )
            out.append(Deadlock(tuple(hops), config, held_desc))
        return out

    def run_config(
        self, config: tuple[int, ...], trace: bool = False
    ) -> tuple[list[Deadlock], int, bool, dict[tuple[Local, ...], tuple[Local, ...] | None]]:
        """Every deadlock of one configuration (path indexes of the transactions): (deadlocks,
        states seen, complete, parents). With `trace`, states are not sorted and each state's
        parent is kept, and `self.dead_at` maps each deadlock's key to the state it was seen in.
        """
        self.independent = self._independent(config)
        start = tuple((pi, 0, self.no_labels, (), (), ()) for pi in config)
        canon = self.opt.reduce and not trace
        if canon:
            start = tuple(sorted(start))
        seen: set[tuple[Local, ...]] = {start}
        parent: dict[tuple[Local, ...], tuple[Local, ...] | None] = {start: None}
        stack = [start]
        found: dict[tuple[object, ...], Deadlock] = {}
        self.dead_at: dict[tuple[object, ...], tuple[Local, ...]] = {}
        complete = True
        while stack:
            st = stack.pop()
            nxt, dead = self.successors(st)
            if dead:
                for d in self.deadlocks_at(st):
                    found.setdefault(d.key, d)
                    self.dead_at.setdefault(d.key, st)
                continue
            for s in nxt:
                if canon:
                    s = tuple(sorted(s))
                if s in seen:
                    continue
                if len(seen) >= self.opt.max_states:
                    complete = False
                    continue
                seen.add(s)
                if trace:
                    parent[s] = st
                stack.append(s)
        return list(found.values()), len(seen), complete, parent

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

    def configs(self) -> list[tuple[int, ...]]:
        idx = [i for i, p in enumerate(self.paths) if p.standalone]
        out: list[tuple[int, ...]] = []
        for k in range(2, self.opt.max_txns + 1):
            out.extend(itertools.combinations_with_replacement(idx, k))
        return out

    def run(self) -> Result:
        found: dict[tuple[object, ...], Deadlock] = {}
        states = 0
        complete = True
        configs = self.configs()
        for cfg in configs:
            dls, n, ok, _ = self.run_config(cfg)
            states += n
            complete &= ok
            for d in dls:
                found.setdefault(d.key, d)
        return Result(list(found.values()), states, complete, len(configs))

    def schedule(self, deadlock: Deadlock) -> list[str]:
        """A step-by-step interleaving reaching `deadlock` (for failure messages)."""
        cfg = tuple(sorted(self.paths.index(self.spec.path(n)) for n in deadlock.config))
        _, _, _, parent = self.run_config(cfg, trace=True)
        st: tuple[Local, ...] | None = self.dead_at.get(deadlock.key)
        chain = []
        while st is not None:
            chain.append(st)
            st = parent[st]
        chain.reverse()
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
        return lines


def explore(spec: Spec, options: Options | None = None) -> Result:
    return Explorer(spec, options).run()
