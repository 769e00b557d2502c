"""DOT text for the diagrams, written by hand so it is byte-for-byte deterministic.

The DOT files are what `check` compares (Graphviz's SVG changes with its version and fonts), so
nothing here depends on dict order of anything undeclared, on ids from a counter shared between
graphs, or on the machine. Every user string goes through `escape.dot_str`.

Three kinds of diagram: the lock-order graph, one diagram per path (top to bottom, so a long path
grows down the page instead of across it) and one legend for both. Each draws on a white panel
of its own, so it reads the same on a light or a dark page and on any site; a `// lockdocs-title`
and `// lockdocs-desc` comment becomes the SVG's <title> and <desc>.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lockdocs import model as m
from lockdocs.render.escape import dot_label, dot_str, visible
from lockdocs.render.words import ABSENT, HELD_SHORT, mode_label, order_phrase

INK = "#1f2937"  # text and outlines
LINE = "#4b5563"  # arrows
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
KIND_WORDS = {
    "advisory": "advisory lock",
    "row": "row lock",
    "table": "table lock",
    "memory": "in-process lock",
}
RED = "#b91c1c"
BLUE = "#1d4ed8"
STEP_FILL = "#f3f4f6"
EXTERNAL_FILL = "#ede9fe"
WRAP = 22
# A step's entry node and its open ends (node, edge label).
_Entry = tuple[str | None, list[tuple[str, str | None]]]

_HEADER = f"""\
  graph [bgcolor="white", pad="0.15", fontname="Helvetica", fontsize=12, fontcolor="{INK}", \
nodesep=0.3, ranksep=0.35];
  node [fontname="Helvetica", fontsize=11, margin="0.1,0.05", color="{INK}", fontcolor="{INK}"];
  edge [fontname="Helvetica", fontsize=10, color="{LINE}", fontcolor="{INK}", arrowsize=0.7];
"""


LABEL_MAX = 200  # characters of one label; a 1 MB title made dot run out of memory


def wrap(s: str, width: int = WRAP) -> list[str]:
    """Graphviz does not wrap labels; wrapping here keeps the text deterministic. A label
    longer than LABEL_MAX is cut there (the page keeps the whole text)."""
    text = " ".join(visible(s).split())
    if len(text) > LABEL_MAX:
        text = text[: LABEL_MAX - 1].rstrip() + "…"
    lines = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)
    return lines or [""]


def _attrs(pairs: list[tuple[str, str]]) -> str:
    """A DOT attribute list from (name, already-quoted value) pairs."""
    return "[" + ", ".join(f"{k}={v}" for k, v in pairs) + "]"


COMMENT_MAX = 1000  # characters of a title or description comment (the SVG's <title>)


def _comment(text: str) -> str:
    """A one-line DOT comment (never closes early, never spans lines, never huge)."""
    one = " ".join(visible(text).split()).replace("*/", "* /")
    return one if len(one) <= COMMENT_MAX else one[: COMMENT_MAX - 1].rstrip() + "…"


def head(name: str, title: str, desc: str) -> list[str]:
    """The first lines of every diagram: the title and description comments, the defaults."""
    return [
        f"// lockdocs-title: {_comment(title)}",
        f"// lockdocs-desc: {_comment(desc)}",
        f"digraph {dot_str(name)} {{",
        _HEADER.rstrip("\n"),
        '  rankdir="TB";',
    ]


def lock_node(lid: str, lock: m.Lock, indent: str = "  ") -> str:
    """A lock as the lock-order graph draws it: its title, its kind as shape and fill."""
    shape, style = SHAPE.get(lock.kind, ("box", "filled"))
    return (
        f"{indent}{dot_str(lid)} "
        + _attrs(
            [
                ("label", dot_label(wrap(lock.title, 22))),
                ("shape", shape),
                ("style", f'"{style}"'),
                ("fillcolor", f'"{FILL.get(lock.kind, "#eeeeee")}"'),
            ]
        )
        + ";"
    )


# --- one diagram per path ----------------------------------------------------------------------

Marks = dict[tuple[str, int, int], str]


@dataclass
class _Writer:
    """Emits one path's steps as nodes; ids are local to the path and its order."""

    model: m.Model
    prefix: str
    marks: Marks
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
            attrs = [("label", dot_label(wrap(label, 16)))] if label else []
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

    def take(self, step: m.Take, indent: str) -> str:
        lock = self.model.locks[step.lock]
        # A take on a backend that keeps the lock in memory (a lockset entry on SQLite) is
        # drawn as the in-memory lock it is there, with its own mode.
        backend = next((b for b in lock.backends if b.name == step.backend), None)
        kind = backend.kind if backend is not None else lock.kind
        shape, style = SHAPE.get(kind, ("box", "filled"))
        label = wrap(lock.title, 22)
        if step.instance:
            label.append(f"({step.instance})")
        if kind == "memory" and lock.kind != "memory":
            label.append(f"{backend.mode if backend and backend.mode else 'exclusive'}, in memory")
        else:
            label.append(mode_label(lock.kind, step.mode, step.option))
        loc = step.location
        held = self.marks.get((loc.file, loc.line, loc.column), "never")
        if held in HELD_SHORT:
            label.append(HELD_SHORT[held])
            style += ",dashed"
        return self.node(
            label,
            [
                ("shape", shape),
                ("style", f'"{style}"'),
                ("fillcolor", f'"{FILL.get(kind, "#eeeeee")}"'),
            ],
            indent,
        )

    def step(self, step: m.Step, indent: str) -> _Entry:
        """Emit one step; return its entry node and its open ends (node, edge label)."""
        return STEP_NODES[type(step)](self, step, indent)

    def _take_step(self, step: m.Take, indent: str) -> _Entry:
        loc = step.location
        if self.marks.get((loc.file, loc.line, loc.column)) == ABSENT:
            return None, []
        nid = self.take(step, indent)
        return nid, [(nid, None)]

    def _loop(self, step: m.Loop, indent: str) -> _Entry:
        self.count += 1
        name = dot_str(f"cluster_{self.prefix}:{self.count}")
        order = "in no particular order" if step.order == "none" else order_phrase(step.order)
        self.lines.append(f"{indent}subgraph {name} {{")
        inner = indent + "  "
        caption = [*wrap("for " + step.label, 26), *(wrap(order, 26) if order else [])]
        self.lines.append(
            f'{inner}label={dot_label(caption)}; style="dashed,rounded"; color="{LINE}";'
        )
        first, body_exits = self.seq(step.steps, inner, [])
        if first is None:
            first = self.node(["nothing"], [("shape", "plaintext")], inner)
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

    def _branches(self, step: m.Branches, indent: str) -> _Entry:
        if step.statement:
            # a set take: one node for the statement, from the set (not its orders)
            label = ["in one statement,", "in no order:"]
            for t in step.statement:
                lock = self.model.locks[t.lock]
                name = lock.title + (f" ({t.instance})" if t.instance else "")
                label += [*wrap(name, 22), mode_label(lock.kind, t.mode, t.option)]
            nid = self.node(
                label,
                [("shape", "box"), ("style", '"filled,rounded"'), ("fillcolor", f'"{STEP_FILL}"')],
                indent,
            )
            return nid, [(nid, None)]
        fork = self.node(
            wrap(step.note or "one of", 20),
            [("shape", "diamond"), ("style", "filled"), ("fillcolor", f'"{STEP_FILL}"')],
            indent,
        )
        exits: list[tuple[str, str | None]] = []
        for name, alt in step.alternatives:
            first, alt_exits = self.seq(alt, indent, [])
            if first is None:
                exits.append((fork, name))
                continue
            self.edge(fork, first, indent, [("label", dot_label(wrap(name, 16)))])
            exits.extend(alt_exits)
        return fork, exits

    def _run(self, step: m.Run, indent: str) -> _Entry:
        callee = self.model.paths.get(step.path)
        title = callee.title if callee else step.path
        nid = self.node(["runs", *wrap(title)], [("shape", "component")], indent)
        return nid, [(nid, None)]

    def _call(self, step: m.Call, indent: str) -> _Entry:
        plain = [("shape", "box"), ("style", '"rounded"')]
        nid = self.node(wrap(step.name), plain, indent)
        return nid, [(nid, None)]

    def _external(self, step: m.External, indent: str) -> _Entry:
        nid = self.node(
            ["calls out:", *wrap(step.name)],
            [("shape", "cds"), ("style", "filled"), ("fillcolor", f'"{EXTERNAL_FILL}"')],
            indent,
        )
        return nid, [(nid, None)]

    def _write(self, step: m.Write, indent: str) -> _Entry:
        nid = self.node(
            wrap("writes " + step.what),
            [("shape", "note"), ("style", "filled"), ("fillcolor", f'"{STEP_FILL}"')],
            indent,
        )
        return nid, [(nid, None)]

    def _begin(self, step: m.Begin, indent: str) -> _Entry:
        nid = self.node(
            self.begin_label(step.transaction),
            [("shape", "box"), ("style", '"rounded,bold"')],
            indent,
        )
        return nid, [(nid, None)]

    def _end(self, step: m.End, indent: str) -> _Entry:
        words = {
            "commit": "commit",
            "rollback": "rollback",
            "leave_open": "returns, transaction left open",
        }
        nid = self.node(
            wrap(words.get(step.how, step.how)),
            [("shape", "box"), ("style", '"rounded,bold"')],
            indent,
        )
        return nid, [(nid, None)]

    def _release(self, step: m.Release, indent: str) -> _Entry:
        released = self.model.locks.get(step.lock)
        nid = self.node(
            ["releases", *wrap(released.title if released else step.lock)],
            [("shape", "box"), ("style", "dashed")],
            indent,
        )
        return nid, [(nid, None)]

    def begin_label(self, tx_id: str) -> list[str]:
        """The label of a transaction's start: its kind and the lock it takes first."""
        tk = self.model.transactions.get(tx_id)
        label = wrap("begin " + (tk.title or tx_id if tk else tx_id))
        if tk is not None and tk.first_lock and tk.first_lock in self.model.locks:
            first = self.model.locks[tk.first_lock]
            mode = mode_label(first.kind, tk.first_mode) if tk.first_mode else ""
            label += wrap(f"takes {first.title} {mode}".strip())
        return label


# A step's node(s) in the path's diagram, by its kind: one entry per member of m.Step
# (tests/test_step_kinds.py checks).
STEP_NODES: dict[type[m.Step], Callable[[_Writer, Any, str], _Entry]] = {
    m.Take: _Writer._take_step,
    m.Loop: _Writer._loop,
    m.Branches: _Writer._branches,
    m.Run: _Writer._run,
    m.Call: _Writer._call,
    m.External: _Writer._external,
    m.Write: _Writer._write,
    m.Begin: _Writer._begin,
    m.End: _Writer._end,
    m.Release: _Writer._release,
}


def path_dot(model: m.Model, path: m.Path, marks: Marks) -> str:
    """One path's steps top to bottom; a take the path already holds is drawn dashed."""
    out = head(
        f"path_{path.id}",
        f"{path.title}: its steps in order",
        f"The steps of the path {path.title}, top to bottom: the locks it takes (coloured by "
        "kind, dashed when already held), its writes, calls, branches and loops.",
    )
    out.append("  nodesep=0.2;")
    w = _Writer(model, path.id, marks)
    exits: list[tuple[str, str | None]] = []
    if path.transaction and path.standalone:
        start = w.node(
            w.begin_label(path.transaction),
            [("shape", "box"), ("style", '"rounded,bold"')],
            "  ",
        )
        exits = [(start, None)]
    first, _ = w.seq(path.steps, "  ", exits)
    if first is None and not exits:
        w.node(["no step"], [("shape", "plaintext")], "  ")
    out.append("")
    out.extend(w.lines)
    out.append("}")
    return "\n".join(out) + "\n"
