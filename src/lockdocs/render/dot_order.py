"""The lock-order graph and the page's one legend, as DOT.

The graph draws each lock once and an arrow wherever a path takes one lock while it holds
another, labelled with the titles of those paths (every one: no "+N more"), except where the
path took a lock in between: A -> B -> C in one path says A before C already, and drawing that
arrow too is what made the graph unreadable (26 arrows on the flagship's largest set, 15
without). Pairs taken both ways and cycles keep every path. Levels of the order
the page derives are ranks, so the picture reads top to bottom in the order to take the locks;
a pair taken in both orders is drawn blue and dashed (the text says what keeps it apart), a
reported cycle red, one an exception waives red and dashed.
"""

from __future__ import annotations

from lockdocs import model as m
from lockdocs.render.dot import (
    BLUE,
    EXTERNAL_FILL,
    FILL,
    KIND_WORDS,
    LINE,
    RED,
    SHAPE,
    STEP_FILL,
    _attrs,
    head,
    lock_node,
    wrap,
)
from lockdocs.render.edges import PairEdge
from lockdocs.render.escape import dot_label, dot_str

EDGE_WRAP = 28


def _titles(model: m.Model, paths: tuple[str, ...]) -> list[str]:
    """Path titles, one label line each when short, wrapped when long."""
    out: list[str] = []
    for pid in paths:
        title = model.paths[pid].title if pid in model.paths else pid
        out.extend(wrap(title, EDGE_WRAP))
    return out


def _reach(pairs: set[tuple[str, str]]) -> dict[str, set[str]]:
    after: dict[str, set[str]] = {}
    for a, b in pairs:
        if a != b:
            after.setdefault(a, set()).add(b)
    reach: dict[str, set[str]] = {}
    for start in after:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in after.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        reach[start] = seen
    return reach


def _direct(
    pairs: list[PairEdge], keep: set[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, ...]]:
    """Per arrow, the paths that label it: a path that holds A, then B, then C takes C while
    it holds A too, but that arrow says nothing B's two do not, so it is left out. Only
    through a lock the path does not also take in a circle with either end (a path that takes
    B and C both ways keeps A -> B and A -> C), so no two arrows leave each other out.
    Self-arrows and `keep` pairs (taken both ways, in a cycle) keep every path."""
    taken: dict[str, set[tuple[str, str]]] = {}
    for e in pairs:
        for pid in e.paths:
            taken.setdefault(pid, set()).add((e.src, e.dst))
    reach = {pid: _reach(mine) for pid, mine in taken.items()}

    def implied(pid: str, a: str, b: str) -> bool:
        mine, r = taken[pid], reach[pid]

        def apart(x: str, y: str) -> bool:
            return not (y in r.get(x, ()) and x in r.get(y, ()))

        return any(
            x == a and c not in (a, b) and (c, b) in mine and apart(a, c) and apart(c, b)
            for x, c in mine
        )

    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for e in pairs:
        pair = (e.src, e.dst)
        if e.src == e.dst or pair in keep:
            out[pair] = e.paths
        else:
            out[pair] = tuple(pid for pid in e.paths if not implied(pid, e.src, e.dst))
    return out


def lock_order_dot(
    model: m.Model,
    name: str,
    pairs: list[PairEdge],
    parts: tuple[tuple[tuple[str, ...], ...], ...],
    two_way: tuple[tuple[str, str], ...],
    cycles: tuple[set[tuple[str, str]], set[tuple[str, str]]],
) -> str:
    """Connected parts of the lock-order graph (one, or a few small ones side by side): their
    locks, the derived levels as ranks, an arrow per (held, taken) pair inside them."""
    inside = {lid for layers in parts for level in layers for lid in level}
    titles = [model.locks[lid].title for layers in parts for level in layers for lid in level]
    out = head(
        name,
        "Lock order: " + ", ".join(titles),
        "The locks " + ", ".join(titles) + " top to bottom in the order to take them; an arrow "
        "from one lock to the next one a path takes while holding it (not past a lock taken in "
        "between), labelled with the titles of those paths.",
    )
    live, waived = cycles
    back = {(b, a) for a, b in two_way}
    both = set(two_way) | back
    for layers in parts:
        out.append("")
        for level in layers:
            for lid in level:
                out.append(lock_node(lid, model.locks[lid]))
        for level in layers:
            if len(level) > 1:
                out.append("  { rank=same; " + " ".join(dot_str(x) + ";" for x in level) + " }")
    out.append("")
    shown = _direct(pairs, both | live | waived)
    for e in pairs:
        if e.src not in inside or not shown.get((e.src, e.dst)):
            continue
        lines = _titles(model, shown[(e.src, e.dst)])
        lock = model.locks[e.dst]
        if e.src == e.dst:
            order = f"several, in {lock.instance_order}" if lock.instance_order else "several"
            lines = [*wrap(order, EDGE_WRAP), *lines]
        attrs = [("label", dot_label(lines))]
        pair = (e.src, e.dst)
        if pair in live:
            attrs += [("color", f'"{RED}"'), ("fontcolor", f'"{RED}"'), ("penwidth", "2")]
        elif pair in waived:
            attrs += [("color", f'"{RED}"'), ("fontcolor", f'"{RED}"'), ("style", "dashed")]
        elif pair in both:
            attrs += [("color", f'"{BLUE}"'), ("fontcolor", f'"{BLUE}"'), ("style", "dashed")]
        if pair in back:
            attrs.append(("constraint", "false"))
        out.append(f"  {dot_str(e.src)} -> {dot_str(e.dst)} {_attrs(attrs)};")
    out.append("}")
    return "\n".join(out) + "\n"


def _sample(nid: str, label: list[str], attrs: list[tuple[str, str]]) -> str:
    return f"    {dot_str(nid)} " + _attrs([("label", dot_label(label)), *attrs]) + ";"


def legend_dot(model: m.Model, cycles: bool) -> str:
    """One legend for every diagram of the page: the shapes, fills and lines they use, in two
    rows (a wide legend would be shrunk to fit the column)."""
    out = head(
        "legend",
        "Legend",
        "What the shapes, colours and lines of the page's diagrams mean.",
    )
    out.append("  nodesep=0.25; ranksep=0.25;")
    out.append("  node [fontsize=10];")
    kinds = [
        k
        for k in ("advisory", "row", "table", "memory")
        if any(lk.kind == k for lk in model.locks.values())
    ] or ["advisory"]
    first: list[str] = []
    for k in kinds:
        shape, style = SHAPE[k]
        first.append(
            _sample(
                f"kind-{k}",
                [KIND_WORDS[k]],
                [("shape", shape), ("style", f'"{style}"'), ("fillcolor", f'"{FILL[k]}"')],
            )
        )
    shape, style = SHAPE[kinds[0]]
    first += [
        _sample(
            "held",
            ["taken again,", "already held"],
            [
                ("shape", shape),
                ("style", f'"{style},dashed"'),
                ("fillcolor", f'"{FILL[kinds[0]]}"'),
            ],
        ),
        _sample("tx", ["begin or commit"], [("shape", "box"), ("style", '"rounded,bold"')]),
        _sample(
            "write",
            ["writes rows"],
            [("shape", "note"), ("style", "filled"), ("fillcolor", f'"{STEP_FILL}"')],
        ),
        _sample("call", ["a step in words"], [("shape", "box"), ("style", '"rounded"')]),
        _sample("run", ["runs another path"], [("shape", "component")]),
        _sample(
            "external",
            ["calls out", "(no database)"],
            [("shape", "cds"), ("style", "filled"), ("fillcolor", f'"{EXTERNAL_FILL}"')],
        ),
        _sample(
            "fork",
            ["one of"],
            [("shape", "diamond"), ("style", "filled"), ("fillcolor", f'"{STEP_FILL}"')],
        ),
    ]
    arrows = [
        ("holding one lock, takes the next", [("color", f'"{LINE}"')]),
        (
            "taken in both orders, kept apart",
            [("color", f'"{BLUE}"'), ("fontcolor", f'"{BLUE}"'), ("style", "dashed")],
        ),
    ]
    if cycles:
        arrows += [
            (
                "a deadlock lockdocs reports",
                [("color", f'"{RED}"'), ("fontcolor", f'"{RED}"'), ("penwidth", "2")],
            ),
            (
                "a deadlock an exception accepts",
                [("color", f'"{RED}"'), ("fontcolor", f'"{RED}"'), ("style", "dashed")],
            ),
        ]
    second = [
        _sample(
            "loop",
            ["for each ...:", "a loop's steps"],
            [("shape", "box"), ("style", '"dashed,rounded"'), ("color", f'"{LINE}"')],
        )
    ]
    edges = []
    for i, (words, attrs) in enumerate(arrows):
        a, b = f"arrow-{i}-from", f"arrow-{i}-to"
        for nid in (a, b):
            second.append(_sample(nid, [""], [("shape", "point"), ("width", "0.06")]))
        edges.append(
            f"  {dot_str(a)} -> {dot_str(b)} "
            + _attrs([("label", dot_label(wrap(words, 22))), ("minlen", "3"), *attrs])
            + ";"
        )
    out.extend(line.replace("    ", "  ", 1) for line in first)
    out.extend(line.replace("    ", "  ", 1) for line in second)
    ids = [f"kind-{k}" for k in kinds] + ["held", "tx", "write", "call", "run", "external", "fork"]
    out.append("  { rank=same; " + " ".join(dot_str(x) + ";" for x in ids) + " }")
    lower = ["loop"] + [f"arrow-{i}-{end}" for i in range(len(arrows)) for end in ("from", "to")]
    out.append("  { rank=same; " + " ".join(dot_str(x) + ";" for x in lower) + " }")
    out.append(f'  {dot_str(ids[0])} -> "loop" [style=invis];')
    out.extend(edges)
    out.append("}")
    return "\n".join(out) + "\n"
