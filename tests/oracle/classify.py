"""Name the known ways lockdocs and the oracle disagree, from the spec alone (never from lockdocs'
analysis), so the property test fails on a *new* kind of disagreement and counts the known ones.

Open false negatives (lockdocs silent about a real deadlock; minimal specs in
tests/test_oracle.py OPEN_FN, xfail(strict=True)): none. Found and since fixed in lockdocs
(FIXED_FN; no longer excused here, so a regression fails): `sorted-loop-after-held`,
`singleton-in-loop` (upgrade in a loop, cross-iteration edge),
`upgrade-of-one-of-several-instances` (an upgrade made no edge), `upgrade-gated-only-against-
itself` (LD203 checked a gate against the same upgrade only), `loop-run-twice` (both runs of a
loop got the same instance names), `skip-locked-did-not-lock` (a later take after SKIP LOCKED is
a first acquisition), `child-under-two-parents` (issue 24: two unlabelled takes of a class
within a parent, under two parents, were read as one instance); and the false positive
`upgrade-edge-of-an-exclusively-held-instance` (FIXED_FP).

False positives (lockdocs reports, no interleaving deadlocks), counted by kind:
- `nowait-or-skip-locked`: a take with NOWAIT or SKIP LOCKED never waits (it fails at once, or
  skips the row), so it cannot close a wait cycle. lockdocs never makes such a take the waiting
  side of a cycle; the few left are findings on such locks that other hops explain.
- `needs-more-transactions`: an LD201 cycle over more locks than the oracle runs transactions.
- `singleton-in-loop`: a path of the finding takes a singleton lock inside a loop (lockdocs
  holds it once per iteration, in each iteration's mode); typically the singleton, upgraded or
  re-taken in the loop, gates what follows. Found first as the gate check keeping one mode per
  lock (fixed since: FIXED_FP); the few left are not analysed further.
- `instances-shadowed-by-an-earlier-class`: LD202 (or an LD201 cycle) on a class whose every
  loop iteration first takes its own instance of another class (lock coupling per element).
  Since issue 17 the oracle draws the other class's instance per iteration (two elements may
  share one), so these are real deadlocks now; the kind stays for specs where the loop's
  element class itself is the earlier one.
- `upgrade-edge-of-an-exclusively-held-instance`: an LD201 hop that is an upgrade of an
  instance of a class with instances (FOR NO KEY UPDATE, then FOR UPDATE of the same row). The
  upgrade can only wait for another transaction holding *that* row, in a mode compatible with
  the one already held; the hop is realized as if it wanted any row of the class, held in any
  mode (here FOR NO KEY UPDATE, which two transactions cannot both hold on one row).
- `instance-domain-too-small`: the path holds instances a and b of another class first; with
  the oracle's two instances per class that exhausts the class and serializes the runs. With
  four instances the oracle finds the deadlock too (checked by hand): an oracle bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compare import Finding
from .conflicts import self_compatible
from .explore import Deadlock, Options
from .spec import Branch, Call, Commit, Loop, Set, Spec, Take


@dataclass(frozen=True)
class Occurrence:
    """One take as it appears in a path with its calls inlined (branches laid end to end)."""

    index: int
    lock: str
    mode: str
    loop: int  # 0: outside loops; else the id of the innermost loop
    order: str | None  # that loop's order
    label: str | None
    option: str | None
    txn: int  # transactions within the path: a commit starts the next
    site: int = 0  # the loop as written (a path run twice visits the same site twice)
    under: str | None = None  # for a class within a parent: the parent's label it names


def occurrences(spec: Spec, path: str) -> list[Occurrence]:
    out: list[Occurrence] = []
    state = {"loops": 0, "txn": 0}
    sites: dict[int, int] = {}

    def walk(steps: tuple[object, ...], loop: int, order: str | None, depth: int) -> None:
        for st in steps:
            if isinstance(st, Take):
                out.append(
                    Occurrence(
                        len(out),
                        st.lock,
                        st.mode,
                        loop,
                        order,
                        st.label,
                        st.option,
                        state["txn"],
                        sites.get(loop, 0),
                        st.under,
                    )
                )
            elif isinstance(st, Loop):
                state["loops"] += 1
                sites[state["loops"]] = id(st)
                walk(st.body, state["loops"], st.order, depth)
            elif isinstance(st, Branch):
                for alt in st.alternatives:
                    walk(alt, loop, order, depth)
            elif isinstance(st, Set):  # its takes, once each, in the order written
                walk(st.takes, loop, order, depth)
            elif isinstance(st, Call) and depth < 16:
                walk(spec.path(st.path).steps, loop, order, depth + 1)
            elif isinstance(st, Commit):
                state["txn"] += 1

    walk(spec.path(path).steps, 0, None, 0)
    return out


def _singleton_in_loop(spec: Spec, path: str, cls: str) -> bool:
    return spec.lock(cls).singleton and any(
        o.lock == cls and o.loop for o in occurrences(spec, path)
    )


def _upgrade_of_instance(spec: Spec, path: str, cls: str) -> bool:
    """The same instance of a class with instances taken twice in different modes: in one loop
    iteration, or under one label."""
    if spec.lock(cls).singleton:
        return False
    occ = [o for o in occurrences(spec, path) if o.lock == cls]
    for i, o in enumerate(occ):
        for p in occ[:i]:
            same = (o.loop and p.loop == o.loop) or (o.label and p.label == o.label)
            if same and p.mode != o.mode:
                return True
    return False


def _loop_run_twice(spec: Spec, path: str, cls: str) -> bool:
    """A loop taking `cls` that the path runs twice (a path with the loop run twice)."""
    occ = [o for o in occurrences(spec, path) if o.lock == cls and o.loop]
    return any(o.site == p.site and o.loop != p.loop for o in occ for p in occ)


def known_false_negative(spec: Spec, d: Deadlock) -> str | None:
    """The kinds of deadlock lockdocs is known to miss (each kept in OPEN_FN with an xfail
    test until it is fixed; the fixed ones are FIXED_FN regression tests)."""
    return None


def _shadowed_in_loop(spec: Spec, path: str, cls: str) -> bool:
    """In the loop that takes several instances of `cls`, each iteration first takes its own
    instance of another class with instances, so two transactions meet there first."""
    occ = occurrences(spec, path)
    for o in occ:
        if o.lock == cls and o.loop:
            for p in occ[: o.index]:
                if p.loop == o.loop and p.lock != cls and not spec.lock(p.lock).singleton:
                    return True
    return False


def _upgrade_of_exclusively_held(spec: Spec, path: str, cls: str) -> bool:
    """The path takes one instance of `cls` in a mode two transactions cannot share, then again
    in another mode (an upgrade): the upgrade can wait only for a weaker mode of that instance."""
    lk = spec.lock(cls)
    if lk.singleton:
        return False
    occ = [o for o in occurrences(spec, path) if o.lock == cls and not o.loop]
    for i, o in enumerate(occ):
        for p in occ[:i]:
            if p.label == o.label and p.mode != o.mode and not self_compatible(lk.kind, p.mode):
                return True
    return False


def false_positive_kind(spec: Spec, f: Finding, options: Options | None = None) -> str:
    """Why lockdocs reports `f` while the oracle finds no deadlock it explains; the first of
    the known reasons that fits, in a fixed order."""
    opt = options or Options()
    if f.code == "LD201" and len(set(f.locks)) > opt.max_txns:
        return "needs-more-transactions"
    for p in spec.paths:
        for o in occurrences(spec, p.name):
            if o.option and o.lock in f.locks:
                return "nowait-or-skip-locked"
    for p in f.paths:
        if any(_singleton_in_loop(spec, p, lk.name) for lk in spec.locks):
            return "singleton-in-loop"
    if f.code in ("LD201", "LD202") and any(
        _shadowed_in_loop(spec, p, lk) for p in f.paths for lk in f.locks
    ):
        return "instances-shadowed-by-an-earlier-class"
    for p in f.paths:
        occ = occurrences(spec, p)
        for lk in spec.locks:
            labels = {o.label for o in occ if o.lock == lk.name and o.label}
            if len(labels) == 2 and len(opt.domain) == 2 and lk.name not in f.locks:
                return "instance-domain-too-small"
    return "unexplained"
