"""The architecture page (docs/architecture.md) and its diagram, both drawn from the code: the
layers of lockdocs.devdocs.imports, the import graph between the package's parts, and what each
module owns, in the words of the docstring it opens with."""

from __future__ import annotations

import ast
from pathlib import Path

from lockdocs.devdocs import imports as arch
from lockdocs.devdocs.text import GENERATED_NOTE, cell, code, prose

SRC = Path(__file__).resolve().parents[2]
PACKAGE = "lockdocs"
DOT = "architecture/imports.dot"
SVG = "architecture/imports.svg"


def unit_of(module: str) -> str:
    """The part of the package a module belongs to: a subpackage (`lockdocs.render`) or a
    module of the top level (`lockdocs.api`); the diagram draws one box per part."""
    parts = module.split(".")
    if len(parts) > 2 or (SRC / Path(*parts)).is_dir():
        return ".".join(parts[:2])
    return module


def _label(unit: str) -> str:
    if unit == PACKAGE:
        return "lockdocs/__init__"
    name = unit.removeprefix(PACKAGE + ".")
    return name + "/" if (SRC / PACKAGE / name).is_dir() else name


def _reduced(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The transitive reduction of an acyclic graph: an arrow only where no longer path says
    the same dependency."""
    reach: dict[str, set[str]] = {}

    def reachable(node: str) -> set[str]:
        if node not in reach:
            reach[node] = set()
            found: set[str] = set()
            for nxt in edges.get(node, ()):
                found |= {nxt} | reachable(nxt)
            reach[node] = found
        return reach[node]

    out: dict[str, set[str]] = {}
    for src, dsts in edges.items():
        implied = set().union(*(reachable(d) for d in dsts)) if dsts else set()
        out[src] = {d for d in dsts if d not in implied}
    return out


def unit_graph(found: list[arch.Import]) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """The import graph between parts, transitively reduced, and how each kept arrow is
    imported: "top" when any import is at a module's top, else "function" (a lazy boundary)
    or "typing" (only under TYPE_CHECKING)."""
    edges: dict[str, set[str]] = {}
    kinds: dict[tuple[str, str], set[str]] = {}
    for imp in found:
        src, dst = unit_of(imp.src), unit_of(imp.dst)
        if src != dst:
            edges.setdefault(src, set()).add(dst)
            kinds.setdefault((src, dst), set()).add(imp.where)
    reduced = _reduced(edges)
    how: dict[tuple[str, str], str] = {}
    for (src, dst), seen in kinds.items():
        if dst in reduced.get(src, ()):
            how[(src, dst)] = next(k for k in ("top", "function", "typing") if k in seen)
    return reduced, how


def _dot_id(unit: str) -> str:
    return '"' + unit + '"'


def diagram(modules: list[str], found: list[arch.Import]) -> str:
    """The DOT text of the diagram: one band per layer, top to bottom, one box per part."""
    edges, how = unit_graph(found)
    units: dict[int, list[str]] = {}
    for unit in sorted({unit_of(m) for m in modules}):
        layer = arch.layer_of(unit)
        units.setdefault(layer if layer is not None else len(arch.LAYERS), []).append(unit)
    lines = [
        "// lockdocs-title: The import graph of the lockdocs package",
        "// lockdocs-desc: One box per module or subpackage, grouped by layer from the entry "
        "points at the top to the leaves at the bottom; an arrow from one box to another where "
        "the first imports the second and no longer path of arrows already says so.",
        "digraph imports {",
        '  graph [rankdir=TB, bgcolor="white", fontname="Helvetica", fontsize=13, '
        "nodesep=0.25, ranksep=0.45, newrank=true, compound=true];",
        '  node [shape=box, style="rounded,filled", fillcolor="#eef1fb", color="#3949ab", '
        'fontname="Helvetica", fontsize=12, margin="0.12,0.05"];',
        '  edge [color="#5c6bc0", arrowsize=0.6];',
    ]
    for index, members in sorted(units.items()):
        name = arch.LAYERS[index][0] if index < len(arch.LAYERS) else "no layer"
        lines += [
            f"  subgraph cluster_{index} {{",
            f'    label="{name}"; labeljust=l; style="rounded,dashed"; color="#9fa8da"; '
            'fontcolor="#1a237e";',
            "    rank=same;",
        ]
        for unit in members:
            count = sum(1 for m in modules if unit_of(m) == unit)
            label = _label(unit) + (f"\\n{count} modules" if count > 1 else "")
            lines.append(f'    {_dot_id(unit)} [label="{label}"];')
        lines.append("  }")
    styles = {"top": "", "function": " [style=dashed]", "typing": " [style=dotted]"}
    for src in sorted(edges):
        for dst in sorted(edges[src]):
            lines.append(f"  {_dot_id(src)} -> {_dot_id(dst)}{styles[how[(src, dst)]]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _summary(path: Path) -> str:
    """The first paragraph of a module's docstring, on one line."""
    doc = ast.get_docstring(arch.parsed(path)) or ""
    return " ".join(doc.split("\n\n")[0].split())


def page(modules: dict[str, Path]) -> str:
    lines = [
        GENERATED_NOTE.format(
            source="the package's imports and module docstrings (lockdocs/devdocs/architecture.py)"
        ),
        "# Architecture",
        "",
        "How the `lockdocs` package is put together, for someone about to change it. The "
        "layers, the diagram and the module list below are all read from the source, so they "
        "say what the code does today; `tests/test_architecture.py` fails on an import that "
        "goes up a layer or closes a circle, and `tests/test_devdocs.py` fails when this page "
        "is out of date. The recipes for the common changes (a check, a declaration field, a "
        "step kind, an output format, a command: the files, the generators, the tests) are in "
        "`CONTRIBUTING.md` at the top of the repository.",
        "",
        "## Layers",
        "",
        "A module may import modules of its own layer or of any layer below it, never above. "
        "Every import counts: at a module's top, inside a function, and under "
        "`if TYPE_CHECKING:`.",
        "",
        "| Layer | Modules | Why they sit here |",
        "|---|---|---|",
    ]
    for name, prefixes, why in arch.LAYERS:
        names = ", ".join(code(_label(p)) for p in prefixes)
        lines.append(f"| {cell(name)} | {names} | {cell(why)} |")
    lines += [
        "",
        "## The import graph",
        "",
        "One box per subpackage or top-level module, grouped by layer. An arrow goes from a "
        "part to a part it imports; an arrow that a longer path of arrows already implies is "
        "left out. A dashed arrow is a lazy boundary: every such import is inside a function, "
        "so the imported part loads only when that function runs. A dotted arrow is an import "
        "for type annotations only.",
        "",
        "[![The import graph of the lockdocs package: one box per module or subpackage, "
        "grouped by layer](architecture/imports.svg)](architecture/imports.svg)"
        "{ .lockdocs-diagram }",
        "",
        "## Lazy boundaries",
        "",
        "Every import sits at the top of its module, where a reader sees it, except at these "
        "few boundaries, each of which keeps something costly off a path that does not need it "
        "(`lockdocs check` runs in pre-commit hooks). The test fails on an import inside a "
        "function that none of them allows.",
        "",
        "| Importing module | Imports, inside a function | Why |",
        "|---|---|---|",
        *(f"| {code(src)} | {code(dst)} | {cell(why)} |" for src, dst, why in arch.LAZY),
        "",
        "## Modules",
        "",
        "Each module opens with a docstring that says what it owns; here is the first "
        "paragraph of each.",
        "",
    ]
    by_unit: dict[str, list[str]] = {}
    for name in modules:
        by_unit.setdefault(unit_of(name), []).append(name)
    order = sorted(by_unit, key=lambda u: (arch.layer_of(u) or 0, u))
    for unit in order:
        members = sorted(by_unit[unit])
        layer = arch.LAYERS[arch.layer_of(unit) or 0][0]
        lines += [f"### {code(_label(unit))}", "", f"Layer: {layer}.", ""]
        for name in members:
            rel = modules[name].relative_to(SRC).as_posix()
            lines += [f"- {code(rel)}: {prose(_summary(modules[name]))}"]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def architecture_pages() -> dict[str, str]:
    """The page and its DOT text (the SVG is drawn from the DOT: devdocs.write, devdocs.drift)."""
    modules = arch.modules(SRC, PACKAGE)
    found = arch.imports(SRC, PACKAGE)
    return {"architecture.md": page(modules), DOT: diagram(list(modules), found)}
