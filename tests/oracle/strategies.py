"""Hypothesis strategies for random small specs.

2-4 locks (advisory, row, memory or table; singleton or with instances; random modes, up to
three per row lock; now and then a session-scoped advisory lock), 1-3 paths of 1-5 steps: takes
(sometimes of a named instance a/b, sometimes `again`, sometimes NOWAIT / SKIP LOCKED), upgrades
(one lock taken weak then strong, with an option on either take), loops (sorted over one of the
classes their body takes, or arbitrary; their other classes get an instance per iteration, which
two iterations may share), branches, calls of earlier paths, commits, and gates (a singleton lock
taken first, in a random mode). A take after a loop of the same class is the path's one instance,
which the loop may or may not have taken.

Issue 14's constructs come last (`constructs`), drawn after the spec's shape so that the shapes
stay those drawn before they existed: now and then a take becomes a try (on any kind: it gives
up when the lock is taken), and one class's instances belong to another's (`within`), with
paths that begin by taking the parent and then its children (in a loop, or one; sometimes
under a labelled parent); last, now and then one path gets a set (one statement taking two or
three locks, or the instances a and b of one class, in any order), at the top or in a loop.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from .spec import (
    ROW_MODES,
    TABLE_MODES,
    Branch,
    Call,
    Commit,
    Lock,
    Loop,
    Path,
    Set,
    Spec,
    Step,
    Take,
)

_ADVISORY_MODES = [("exclusive",), ("shared",), ("shared", "exclusive")]


@st.composite
def locks(draw: st.DrawFn) -> tuple[Lock, ...]:
    n = draw(st.integers(2, 4))
    out = []
    for i in range(n):
        kind = draw(
            st.sampled_from(["advisory", "advisory", "row", "row", "row", "memory", "table"])
        )
        singleton = draw(st.booleans()) if i else True  # at least one possible gate
        if kind == "row":
            modes = tuple(
                sorted(
                    draw(st.sets(st.sampled_from(ROW_MODES), min_size=1, max_size=3)),
                    key=ROW_MODES.index,
                )
            )
        elif kind == "table":
            singleton = True  # a table is one lock
            modes = tuple(
                sorted(
                    draw(st.sets(st.sampled_from(TABLE_MODES), min_size=1, max_size=2)),
                    key=TABLE_MODES.index,
                )
            )
        else:
            modes = draw(st.sampled_from(_ADVISORY_MODES))
        scope = "transaction"
        if kind == "advisory" and draw(st.integers(0, 9)) == 0:
            scope = "session"
        out.append(Lock(f"l{i}", kind, singleton, modes, scope))
    return tuple(out)


@st.composite
def take(draw: st.DrawFn, lks: tuple[Lock, ...], in_loop: bool, lock: Lock | None = None) -> Take:
    lk = lock or draw(st.sampled_from(lks))
    mode = draw(st.sampled_from(lk.modes))
    label = None
    again = False
    if not lk.singleton:
        r = draw(st.integers(0, 9))
        if r == 0 or (r == 1 and not in_loop):
            label = draw(st.sampled_from(["a", "b"]))
        elif r == 2:
            again = True
    option = None
    if lk.kind == "row" and draw(st.integers(0, 14)) == 0:
        option = draw(st.sampled_from(["nowait", "skip locked"]))
    return Take(lk.name, mode, label, option, again)


@st.composite
def upgrade(draw: st.DrawFn, lks: tuple[Lock, ...], in_loop: bool) -> tuple[Take, Take]:
    """One lock taken in a weaker mode, then a stronger one (same instance), options either
    side."""
    choices = [lk for lk in lks if len(lk.modes) > 1]
    if not choices:
        t = draw(take(lks, in_loop))
        return t, t
    lk = draw(st.sampled_from(choices))
    weak, strong = sorted(
        draw(st.sets(st.sampled_from(lk.modes), min_size=2, max_size=2)), key=lk.modes.index
    )
    label = draw(st.sampled_from([None, None, "a"])) if not lk.singleton else None
    options: list[str | None] = [None, None]
    if lk.kind == "row" and draw(st.integers(0, 3)) == 0:
        side = draw(st.integers(0, 1))
        options[side] = draw(st.sampled_from(["nowait", "skip locked"]))
    return Take(lk.name, weak, label, options[0]), Take(lk.name, strong, label, options[1])


@st.composite
def step(draw: st.DrawFn, lks: tuple[Lock, ...], callable_paths: list[str]) -> list[Step]:
    what = draw(
        st.sampled_from(
            ["take"] * 6 + ["upgrade"] + ["loop"] * 2 + ["branch"] * 2 + ["commit"] + ["call"] * 2
        )
    )
    if what == "upgrade":
        return list(draw(upgrade(lks, False)))
    if what == "loop":
        body: list[Step] = []
        for _ in range(draw(st.integers(1, 2))):
            if draw(st.integers(0, 5)) == 0:
                body.extend(draw(upgrade(lks, True)))
            else:
                body.append(draw(take(lks, True)))
        classes = [
            s.lock
            for s in body
            if isinstance(s, Take) and not next(lk for lk in lks if lk.name == s.lock).singleton
        ]
        order = draw(st.sampled_from(["sorted", "arbitrary"]))
        by = draw(st.sampled_from(classes)) if classes and draw(st.integers(0, 3)) else None
        if by is None and order == "sorted" and classes:
            by = classes[0]
        return [Loop(order, tuple(body), by)]
    if what == "branch":
        alts = draw(
            st.lists(st.lists(take(lks, False), min_size=0, max_size=2), min_size=2, max_size=2)
        )
        return [Branch(tuple(tuple(a) for a in alts))]
    if what == "commit":
        return [Commit()]
    if what == "call" and callable_paths:
        return [Call(draw(st.sampled_from(callable_paths)))]
    return [draw(take(lks, False))]


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    lks = draw(locks())
    gates = [lk for lk in lks if lk.singleton]
    n = draw(st.integers(1, 3))
    names = [f"p{i}" for i in range(n)]
    bodies: list[tuple[Step, ...]] = []
    called: set[str] = set()
    for i in range(n):
        steps: list[Step] = []
        if gates and draw(st.integers(0, 2)) == 0:
            g = draw(st.sampled_from(gates))
            steps.append(Take(g.name, draw(st.sampled_from(g.modes))))
        k = draw(st.integers(1, 5))
        for _ in range(k):
            for s in draw(step(lks, names[:i])):
                if isinstance(s, Call):
                    called.add(s.path)
                steps.append(s)
        bodies.append(tuple(steps))
    paths = []
    for name, body in zip(names, bodies, strict=True):
        standalone = True
        if name in called:
            standalone = draw(st.booleans())
        paths.append(Path(name, body, standalone))
    return draw(constructs(Spec(lks, tuple(paths))))


def _one_in(draw: st.DrawFn, k: int) -> bool:
    """True about once in k draws. (Hypothesis favours small and boundary integers, so a draw
    of 0..k-1 compared with 0 comes true far more often than once in k.)"""
    return draw(st.integers(0, 2**16 - 1)) % k == min(3, k - 1)


@st.composite
def parent_block(draw: st.DrawFn, lks: tuple[Lock, ...], child: Lock) -> tuple[Step, ...]:
    """The parent (sometimes labelled a), then its children in a loop, or one of them."""
    parent = next(lk for lk in lks if lk.name == child.within)
    label = "a" if _one_in(draw, 4) else None
    first = Take(parent.name, draw(st.sampled_from(parent.modes)), label)
    inner = Take(child.name, draw(st.sampled_from(child.modes)), under=label)
    if not _one_in(draw, 4):
        order = draw(st.sampled_from(["sorted", "arbitrary", "arbitrary"]))
        return (first, Loop(order, (inner,), child.name))
    return (first, inner)


@st.composite
def constructs(draw: st.DrawFn, spec: Spec) -> Spec:
    """Issue 14's constructs on a drawn spec: tries, and a class within a parent."""
    lks = spec.locks
    with_instances = [lk for lk in lks if not lk.singleton and lk.kind != "memory"]
    child: Lock | None = None
    if len(with_instances) >= 2 and not _one_in(draw, 3):
        parent, child = draw(st.permutations(with_instances))[:2]
        child = replace(child, within=parent.name)
        lks = tuple(child if lk.name == child.name else lk for lk in lks)

    def tries(steps: tuple[Step, ...]) -> tuple[Step, ...]:
        out: list[Step] = []
        for s in steps:
            if isinstance(s, Take) and s.option is None and _one_in(draw, 40):
                s = replace(s, option="try")
            elif isinstance(s, Loop):
                s = replace(s, body=tries(s.body))
            elif isinstance(s, Branch):
                s = Branch(tuple(tries(alt) for alt in s.alternatives))
            out.append(s)
        return tuple(out)

    paths = []
    for n, p in enumerate(spec.paths):
        steps = tries(p.steps)
        # the first path begins with the parent and its children (two runs of it meet there)
        if child is not None and n == 0:
            steps = (*draw(parent_block(lks, child)), *steps)
        paths.append(Path(p.name, steps, p.standalone))
    # a set comes after every other draw, so the specs drawn before them stay as they were;
    # in some specs only (each set multiplies the orders the search explores)
    if paths and _one_in(draw, 3):
        n = draw(st.integers(0, len(paths) - 1))
        p = paths[n]
        paths[n] = Path(p.name, draw(with_set(lks, p.steps)), p.standalone)
    return Spec(lks, tuple(paths))


@st.composite
def set_take(draw: st.DrawFn, lks: tuple[Lock, ...]) -> Set | None:
    """Two or three takes of one statement: distinct locks (not in-process ones), or the
    instances a and b of one class."""
    usable = [lk for lk in lks if lk.kind != "memory"]
    if not usable:
        return None
    classes = [lk for lk in usable if not lk.singleton]
    if classes and _one_in(draw, 4):
        lk = draw(st.sampled_from(classes))
        return Set(
            tuple(Take(lk.name, draw(st.sampled_from(lk.modes)), label) for label in ("a", "b"))
        )
    if len(usable) < 2:
        return None
    # three elements are six orders per transaction (the search's states grow with them)
    k = 3 if len(usable) > 2 and _one_in(draw, 8) else 2
    chosen = draw(st.permutations(usable))[:k]
    return Set(tuple(Take(lk.name, draw(st.sampled_from(lk.modes))) for lk in chosen))


@st.composite
def with_set(draw: st.DrawFn, lks: tuple[Lock, ...], steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """`steps` with a set inserted at the top, or in the body of the first loop."""
    one = draw(set_take(lks))
    if one is None:
        return steps
    loops = [i for i, s in enumerate(steps) if isinstance(s, Loop)]
    if loops and _one_in(draw, 5):
        i = loops[0]
        loop = steps[i]
        assert isinstance(loop, Loop)
        at = draw(st.integers(0, len(loop.body)))
        body = (*loop.body[:at], one, *loop.body[at:])
        return (*steps[:i], replace(loop, body=body), *steps[i + 1 :])
    at = draw(st.integers(0, len(steps)))
    return (*steps[:at], one, *steps[at:])


@st.composite
def queue_specs(draw: st.DrawFn) -> Spec:
    """Specs around one row class X taken in all four modes and two other locks, 3-4 short
    paths: the shapes where a row's wait queue (a request queued behind a waiter, holding the
    tuple lock) can make a deadlock that waits for holders alone would not."""
    x = Lock("x", "row", draw(st.booleans()), tuple(ROW_MODES))
    y = Lock("y", "advisory", True, ("shared", "exclusive"))
    z = Lock("z", "row", True, ("for update",))
    lks = (x, y, z)
    n = draw(st.integers(3, 4))
    paths = []
    for i in range(n):
        steps: list[Step] = []
        for _ in range(draw(st.integers(1, 3))):
            lk = draw(st.sampled_from([x, x, y, z]))
            option = None
            if lk is x and draw(st.integers(0, 9)) == 0:
                option = draw(st.sampled_from(["nowait", "skip locked"]))
            steps.append(Take(lk.name, draw(st.sampled_from(lk.modes)), None, option))
        paths.append(Path(f"q{i}", tuple(steps)))
    return Spec(lks, tuple(paths))
