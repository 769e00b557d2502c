"""DOT text for the diagrams, written by hand so it is byte-for-byte deterministic.

The DOT files are what `check` compares (Graphviz's SVG changes with its version and fonts), so
nothing here depends on dict order of anything undeclared, on ids from a counter shared between
graphs, or on the machine. Every user string goes through `escape.dot_str`.
"""

from __future__ import annotations

import itertools
import textwrap
from dataclasses import dataclass, field

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic
from lockdocs.render.edges import cycle_pairs, lock_edges
from lockdocs.render.escape import dot_label, dot_str
from lockdocs.render.words import levels, mode_label, order_words

FILL = {
    "advisory": "#dbeafe",
    "row": "#fef3c7",
    "table": "#fde2e4",
    "memory": "#dcfce7",
}
SHAPE = {
    "advisory": ("box", "rounded,filled"),
    "row": ("box", "filled"),
    "table": ("box3d", "filled"),
    "memory": ("ellipse", "filled"),
}
RED = "#c62828"
WRAP = 26

_HEADER = """\
  graph [bgcolor="transparent", fontname="Helvetica", fontsize=12, nodesep=0.35, ranksep=0.45];
  node [fontname="Helvetica", fontsize=11, margin="0.12,0.06"];
  edge [fontname="Helvetica", fontsize=9, color="#555555", fontcolor="#333333", arrowsize=0.7];
"""


def _wrap(s: str, width: int = WRAP) -> list[str]:
    """Graphviz does not wrap labels; wrapping here keeps the text deterministic."""
    lines = textwrap.wrap(" ".join(s.split()), width, break_long_words=True, break_on_hyphens=False)
    return lines or [""]


def _attrs(pairs: list[tuple[str, str]]) -> str:
    """A DOT attribute list from (name, already-quoted value) pairs."""
    return "[" + ", ".join(f"{k}={v}" for k, v in pairs) + "]"


def _short_list(items: list[str], keep: int = 3) -> str:
    """At most `keep` items, then a count, so edge labels stay readable."""
    if len(items) <= keep:
        return ", ".join(items)
    return ", ".join(items[:keep]) + f", +{len(items) - keep} more"


# --- the lock-order graph ----------------------------------------------------------------------


def lock_order_dot(model: m.Model, diagnostics: list[Diagnostic]) -> str:
    """Locks as nodes (styled by kind), an edge wherever a path takes one while holding another;
    reported cycles in red (dashed when an exception waives them); the written order's levels
    as ranks."""
    # Lock graphs are mostly small separate components; packing them as a whole keeps the
    # picture near a page's shape instead of one long row (2,788 x 581 px -> 1,466 x 1,020 px
    # for the flagship).
    out = [
        'digraph "lock_order" {',
        _HEADER.rstrip("\n"),
        '  rankdir="TB";',
        '  pack=true; packmode="graph";',
    ]
    out.append("")
    for lid, lock in model.locks.items():
        shape, style = SHAPE.get(lock.kind, ("box", "filled"))
        sub = lock.kind if lock.kind != "row" or not lock.table else f"row: {lock.table}"
        label = dot_label([*_wrap(lock.title), sub])
        out.append(
            f"  {dot_str(lid)} "
            + _attrs(
                [
                    ("label", label),
                    ("shape", shape),
                    ("style", f'"{style}"'),
                    ("fillcolor", f'"{FILL.get(lock.kind, "#eeeeee")}"'),
                ]
            )
            + ";"
        )
    order_rule = next((r for r in model.rules.values() if r.check == "order"), None)
    if order_rule is not None:
        ranks = [[lid for lid in level if lid in model.locks] for level in levels(order_rule)]
        ranks = [rank for rank in ranks if rank]
        if ranks:
            out.append("")
            out.append(f"  // the written order: rule {dot_str(order_rule.id)[1:-1]}")
            for rank in ranks:
                out.append("  { rank=same; " + " ".join(dot_str(x) + ";" for x in rank) + " }")
            for upper, lower in itertools.pairwise(ranks):
                out.append(f"  {dot_str(upper[0])} -> {dot_str(lower[0])} [style=invis];")
    live, waived = cycle_pairs(diagnostics)
    edges = lock_edges(model)
    if edges:
        out.append("")
    for e in edges:
        label_items = list(e.paths)
        lock = model.locks[e.dst]
        text = _short_list(label_items)
        if e.src == e.dst and e.ordered and lock.instance_order:
            text += f" ({lock.instance_order})"
        attrs = [("label", dot_label(_wrap(text, 30)))]
        if (e.src, e.dst) in live:
            attrs += [("color", f'"{RED}"'), ("fontcolor", f'"{RED}"'), ("penwidth", "2")]
        elif (e.src, e.dst) in waived:
            attrs += [("color", f'"{RED}"'), ("fontcolor", f'"{RED}"'), ("style", "dashed")]
        out.append(f"  {dot_str(e.src)} -> {dot_str(e.dst)} {_attrs(attrs)};")
    out.append("}")
    return "\n".join(out) + "\n"


# --- one diagram per group of paths ------------------------------------------------------------


@dataclass
class _Writer:
    """Emits one path's steps as nodes in a cluster; ids are local to the path and its order."""

    model: m.Model
    prefix: str
    lines: list[str] = field(default_factory=list)
    count: int = 0

    def node(self, label: list[str], attrs: list[tuple[str, str]], indent: str) -> str:
        """Emit a node with the next local id and return the id."""
        self.count += 1
        nid = dot_str(f"{self.prefix}:{self.count}")
        self.lines.append(f"{indent}{nid} " + _attrs([("label", dot_label(label)), *attrs]) + ";")
        return nid

    def edge(
        self, src: str, dst: str, indent: str, attrs: list[tuple[str, str]] | None = None
    ) -> None:
        """Emit an edge."""
        extra = " " + _attrs(attrs) if attrs else ""
        self.lines.append(f"{indent}{src} -> {dst}{extra};")

    def link(self, exits: list[tuple[str, str | None]], entry: str, indent: str) -> None:
        """Connect the open ends of the previous steps to `entry`."""
        for src, label in exits:
            attrs = [("label", dot_label(_wrap(label, 20)))] if label else []
            self.edge(src, entry, indent, attrs)

    def seq(
        self, steps: tuple[m.Step, ...], indent: str, exits: list[tuple[str, str | None]]
    ) -> tuple[str | None, list[tuple[str, str | None]]]:
        """Emit steps in order after `exits`; return the first node and the new exits."""
        first: str | None = None
        for step in steps:
            entry, new_exits = self.step(step, indent)
            if entry is None:
                continue
            self.link(exits, entry, indent)
            if first is None:
                first = entry
            exits = new_exits
        return first, exits

    def step(self, step: m.Step, indent: str) -> tuple[str | None, list[tuple[str, str | None]]]:
        """Emit one step; return its entry node and its open ends (node, edge label)."""
        if isinstance(step, m.Take):
            lock = self.model.locks[step.lock]
            shape, style = SHAPE.get(lock.kind, ("box", "filled"))
            label = [*_wrap(lock.title), mode_label(lock.kind, step.mode, step.option)]
            if step.again:
                label[-1] += " (again)"
            if step.instance:
                label.append(f"instance: {step.instance}")
            nid = self.node(
                label,
                [
                    ("shape", shape),
                    ("style", f'"{style}"'),
                    ("fillcolor", f'"{FILL.get(lock.kind, "#eeeeee")}"'),
                ],
                indent,
            )
            return nid, [(nid, None)]
        if isinstance(step, m.Loop):
            self.count += 1
            name = dot_str(f"cluster_{self.prefix}:{self.count}")
            order = order_words(step.order) or "no declared order"
            self.lines.append(f"{indent}subgraph {name} {{")
            inner = indent + "  "
            self.lines.append(
                f"{inner}label={dot_label([*_wrap('loop: ' + step.label, 34), order])}; "
                'style="dashed,rounded"; color="#777777";'
            )
            first, body_exits = self.seq(step.steps, inner, [])
            if first is None:
                first = self.node(["(no step)"], [("shape", "plaintext")], inner)
                body_exits = [(first, None)]
            for src, _ in body_exits:
                self.edge(
                    src,
                    first,
                    inner,
                    [("style", "dashed"), ("constraint", "false"), ("label", '"next"')],
                )
            self.lines.append(f"{indent}}}")
            return first, body_exits
        if isinstance(step, m.Branches):
            fork = self.node(
                _wrap(step.note or "one of", 20),
                [("shape", "diamond"), ("style", "filled"), ("fillcolor", '"#f3f4f6"')],
                indent,
            )
            exits: list[tuple[str, str | None]] = []
            for name, alt in step.alternatives:
                first, alt_exits = self.seq(alt, indent, [])
                if first is None:
                    exits.append((fork, name))
                    continue
                self.edge(fork, first, indent, [("label", dot_label(_wrap(name, 20)))])
                exits.extend(alt_exits)
            return fork, exits
        if isinstance(step, m.Run):
            callee = self.model.paths.get(step.path)
            title = callee.title if callee else step.path
            nid = self.node(["run:", *_wrap(title)], [("shape", "component")], indent)
            return nid, [(nid, None)]
        if isinstance(step, m.Call):
            nid = self.node(
                _wrap("call " + step.name),
                [("shape", "box"), ("style", '"rounded,dashed"')],
                indent,
            )
            return nid, [(nid, None)]
        if isinstance(step, m.External):
            nid = self.node(
                ["external:", *_wrap(step.name)],
                [("shape", "cds"), ("style", "filled"), ("fillcolor", '"#ede9fe"')],
                indent,
            )
            return nid, [(nid, None)]
        if isinstance(step, m.Write):
            nid = self.node(_wrap("write " + step.what), [("shape", "note")], indent)
            return nid, [(nid, None)]
        if isinstance(step, m.Begin):
            nid = self.node(
                self.begin_label(step.transaction),
                [("shape", "box"), ("style", '"rounded,bold"')],
                indent,
            )
            return nid, [(nid, None)]
        if isinstance(step, m.End):
            words = {
                "commit": "commit",
                "rollback": "rollback",
                "leave_open": "return, transaction left open",
            }
            nid = self.node(
                _wrap(words.get(step.how, step.how)),
                [("shape", "box"), ("style", '"rounded,bold"')],
                indent,
            )
            return nid, [(nid, None)]
        if isinstance(step, m.Release):
            released = self.model.locks.get(step.lock)
            nid = self.node(
                ["release", *_wrap(released.title if released else step.lock)],
                [("shape", "box"), ("style", "dashed")],
                indent,
            )
            return nid, [(nid, None)]
        return None, []  # pragma: no cover - every step kind is handled above

    def begin_label(self, tx_id: str) -> list[str]:
        """The label of a transaction's start: its kind and the lock it takes first."""
        tk = self.model.transactions.get(tx_id)
        label = _wrap("begin " + (tk.title or tx_id if tk else tx_id))
        if tk is not None and tk.first_lock and tk.first_lock in self.model.locks:
            first = self.model.locks[tk.first_lock]
            mode = mode_label(first.kind, tk.first_mode) if tk.first_mode else ""
            label += _wrap(f"takes {first.title} {mode}".strip())
        return label


def group_dot(model: m.Model, group: m.Group, slug: str) -> str:
    """One cluster per path of the group; nodes are the steps, in order."""
    out = [
        f"digraph {dot_str(slug)} {{",
        _HEADER.rstrip("\n"),
        '  rankdir="TB";',
        "  compound=true;",
    ]
    for pid in group.paths:
        path = model.paths[pid]
        w = _Writer(model, pid)
        inner = "    "
        w.lines.append(f"  subgraph {dot_str('cluster_' + pid)} {{")
        w.lines.append(
            f"{inner}label={dot_label(_wrap(path.title, 40))}; "
            'style="rounded"; color="#999999"; fontsize=13;'
        )
        exits: list[tuple[str, str | None]] = []
        if path.transaction and path.standalone:
            start = w.node(
                w.begin_label(path.transaction),
                [("shape", "box"), ("style", '"rounded,bold"')],
                inner,
            )
            exits = [(start, None)]
        first, _ = w.seq(path.steps, inner, exits)
        if first is None and not exits:
            w.node(["(no step)"], [("shape", "plaintext")], inner)
        w.lines.append("  }")
        out.append("")
        out.extend(w.lines)
    out.append("}")
    return "\n".join(out) + "\n"
