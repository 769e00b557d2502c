"""Hypothesis strategies for random small specs.

2-4 locks (advisory, row or memory; singleton or with instances; random modes; now and then a
session-scoped advisory lock), 1-3 paths of 1-5 steps: takes (sometimes of a named instance a/b,
rarely NOWAIT / SKIP LOCKED), loops (sorted or arbitrary), branches, calls of earlier paths,
commits, and gates (a singleton lock taken first, in a random mode).
"""

from __future__ import annotations

from hypothesis import strategies as st

from .spec import ROW_MODES, Branch, Call, Commit, Lock, Loop, Path, Spec, Step, Take

_ADVISORY_MODES = [("exclusive",), ("shared",), ("shared", "exclusive")]


@st.composite
def locks(draw: st.DrawFn) -> tuple[Lock, ...]:
    n = draw(st.integers(2, 4))
    out = []
    for i in range(n):
        kind = draw(st.sampled_from(["advisory", "advisory", "row", "row", "memory"]))
        singleton = draw(st.booleans()) if i else True  # at least one possible gate
        if kind == "row":
            modes = tuple(
                sorted(
                    draw(st.sets(st.sampled_from(ROW_MODES), min_size=1, max_size=2)),
                    key=ROW_MODES.index,
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
def take(draw: st.DrawFn, lks: tuple[Lock, ...], in_loop: bool) -> Take:
    lk = draw(st.sampled_from(lks))
    mode = draw(st.sampled_from(lk.modes))
    label = None
    if not lk.singleton and not in_loop and draw(st.integers(0, 4)) == 0:
        label = draw(st.sampled_from(["a", "b"]))
    option = None
    if lk.kind == "row" and draw(st.integers(0, 24)) == 0:
        option = draw(st.sampled_from(["nowait", "skip locked"]))
    return Take(lk.name, mode, label, option)


@st.composite
def step(draw: st.DrawFn, lks: tuple[Lock, ...], callable_paths: list[str]) -> Step:
    what = draw(
        st.sampled_from(["take"] * 6 + ["loop"] * 2 + ["branch"] * 2 + ["commit"] + ["call"] * 2)
    )
    if what == "loop":
        body = draw(st.lists(take(lks, True), min_size=1, max_size=2))
        return Loop(draw(st.sampled_from(["sorted", "arbitrary"])), tuple(body))
    if what == "branch":
        alts = draw(
            st.lists(st.lists(take(lks, False), min_size=0, max_size=2), min_size=2, max_size=2)
        )
        return Branch(tuple(tuple(a) for a in alts))
    if what == "commit":
        return Commit()
    if what == "call" and callable_paths:
        return Call(draw(st.sampled_from(callable_paths)))
    return draw(take(lks, False))


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
            s = draw(step(lks, names[:i]))
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
    return Spec(lks, tuple(paths))
