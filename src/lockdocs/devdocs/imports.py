"""The package's import graph, read from the source with `ast`, and the layers it must respect.

`LAYERS` gives every module a place, top to bottom; a module may import its own layer or any
layer below, never one above, and no two modules may import each other, directly or round a
circle. tests/test_architecture.py holds the package to it and the architecture page draws it.
Every import counts: at the top of a module, inside a function (a lazy boundary is still a
dependency) and under `if TYPE_CHECKING:` (a type from above is a dependency on above).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lockdocs.analysis.graph import strongly_connected

# Top to bottom: (layer, module prefixes, why these modules sit here). A module belongs to the
# layer of the longest prefix that names it or a package holding it.
LAYERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "entry points",
        ("lockdocs.__main__", "lockdocs.entry", "lockdocs.mkdocs_plugin", "lockdocs.devdocs"),
        "What starts a run: the console script, the MkDocs plugin and the generator of the "
        "reference pages. Nothing imports them.",
    ),
    (
        "cli",
        ("lockdocs.cli",),
        "The typer app: options in, a command called, an exit code out.",
    ),
    (
        "commands",
        ("lockdocs.commands", "lockdocs.diff", "lockdocs.scaffold"),
        "Command bodies that compose the pipeline: `check` and friends print what the api "
        "returns, `diff` runs the pipeline on two revisions, `init` scaffolds a project.",
    ),
    (
        "api",
        ("lockdocs.api",),
        "load(), analyse(), check(), build(): the pipeline, called by the commands and the plugin.",
    ),
    (
        "stages",
        (
            "lockdocs.project",
            "lockdocs.config",
            "lockdocs.render",
            "lockdocs.report",
            "lockdocs.scan",
            "lockdocs.postgres",
            "lockdocs.observe",
            "lockdocs.export",
            "lockdocs.site",
            "lockdocs.checkcache",
        ),
        "The pipeline's stages that the api calls: resolving the documents into the model (it "
        "knows the rule codes an exception may name), the settings, the page and its diagrams, "
        "the reporters, the SQL scan, the proof on PostgreSQL, the reading of a running "
        "application's server log, the JSON export and the check's result cache.",
    ),
    (
        "rules",
        ("lockdocs.rules",),
        "The registry and the checks, each with its documentation.",
    ),
    (
        "analysis",
        ("lockdocs.analysis",),
        "Flattening paths into events, the lock-order graph and its real cycles: pure functions "
        "of the model.",
    ),
    (
        "model",
        ("lockdocs.model", "lockdocs.keys", "lockdocs.modes"),
        "The resolved declarations as frozen records, and the facts about them every layer "
        "above shares: advisory key arithmetic and Postgres's lock-mode conflict tables.",
    ),
    (
        "load",
        ("lockdocs.load", "lockdocs.schema", "lockdocs.inputs", "lockdocs.confine"),
        "Reading files: YAML to nodes with marks, the JSON Schema and its validator, the record "
        "of what a run read, and the rule that every file lies inside the project.",
    ),
    (
        "diagnostics",
        (
            "lockdocs",
            "lockdocs.diagnostics",
            "lockdocs.grammar",
            "lockdocs.pghash",
            "lockdocs.pgparse",
            "lockdocs.colour",
            "lockdocs.progress",
            "lockdocs.records",
        ),
        "Leaves that import nothing of the package: a finding as data, the words messages are "
        "made of, Postgres's hash functions and its parser made safe on any text, terminal colour "
        "and progress, records (dataclasses without generated code), the version.",
    ),
)


# The lazy boundaries: (importing module, imported module or package, why). An import inside a
# function is allowed only where one of these says so; every other import sits at the top of
# its module, where a reader sees it. Each keeps something costly off a path that does not
# need it (`lockdocs check` runs in pre-commit hooks; measure with `python -X importtime`).
LAZY: tuple[tuple[str, str, str], ...] = (
    (
        "lockdocs.entry",
        "lockdocs.cli",
        "The typer app (typer builds every parameter through pydantic): only for the spellings "
        "that the fast route of `check` and `validate` does not handle.",
    ),
    (
        "lockdocs.entry",
        "lockdocs.commands.check",
        "The pipeline behind `check` and `validate`: `--version`, `--help` and the other "
        "commands do not load it through the fast route.",
    ),
    (
        "lockdocs.cli",
        "lockdocs.commands",
        "Each command's body, loaded when that command runs: `--help`, `--version` and a "
        "mistyped option load none of them, and `replay` alone loads psycopg.",
    ),
    (
        "lockdocs.api",
        "lockdocs.rules",
        "The checks and the analysis they share: only `analyse` (check, build) runs them.",
    ),
    (
        "lockdocs.api",
        "lockdocs.config",
        "pyproject.toml's settings (tomllib): `check` and `build` read them; `validate` does not.",
    ),
    (
        "lockdocs.api",
        "lockdocs.progress",
        "The progress line's thread: only `build` shows one.",
    ),
    (
        "lockdocs.api",
        "lockdocs.render",
        "The page, its diagrams and the drift check: only `build` and `check` with drift "
        "load them.",
    ),
    (
        "lockdocs.api",
        "lockdocs.scan",
        "The SQL scanner and pglast: only when locks.yaml sets `code:`.",
    ),
    (
        "lockdocs.commands.check",
        "lockdocs.api",
        "The pipeline (YAML, the schema, the model, the analysis): only a check that the result "
        "cache and the manifest cannot answer, and validate.",
    ),
    (
        "lockdocs.commands.common",
        "lockdocs.api",
        "The pipeline (YAML, the schema, the model): loaded by `load_project` for validate and "
        "describe, never by a check that the result cache answers.",
    ),
    (
        "lockdocs.commands.check",
        "lockdocs.render",
        "The manifest's check of the committed docs (no renderer, no YAML): only a check with "
        "drift that the result cache answers.",
    ),
    (
        "lockdocs.render.targets",
        "lockdocs.load",
        "The YAML reader: only to point at a bad page.output in locks.yaml.",
    ),
    (
        "lockdocs.render.drift",
        "lockdocs.render.pages",
        "The renderer and jinja2: only when the manifest's seal cannot vouch for the committed "
        "docs (an input changed, another lockdocs built them, or a file differs).",
    ),
    (
        "lockdocs.scan.collect",
        "lockdocs.scan.sqltext",
        "pglast's parser: only for a file that the scan cache does not hold.",
    ),
    (
        "lockdocs.scan.collect",
        "lockdocs.scan.pysource",
        "Python's ast and tokenize: only for a .py file the scan reads.",
    ),
    (
        "lockdocs.project.rules",
        "lockdocs.rules.catalog",
        "Every rule module, to check the rule codes exceptions name: a project without "
        "exceptions validates without loading a check.",
    ),
    (
        "lockdocs.config",
        "lockdocs.rules.catalog",
        "Every rule module: only when a setting names a rule code, to check the code.",
    ),
    (
        "lockdocs.report.where",
        "lockdocs.config",
        "pyproject.toml's settings (tomllib): only a report that names files from the "
        "repository's top (JSON, GitHub, SARIF) reads them.",
    ),
    (
        "lockdocs.report",
        "lockdocs.report.sarif",
        "SARIF and the rule docs it embeds: only for `--format sarif`.",
    ),
    (
        "lockdocs.render.svg",
        "concurrent.futures",
        "The threads that draw many diagrams at once (and the logging they import): the drift "
        "check only reads the stamps of the SVGs.",
    ),
    (
        "lockdocs.render.syncs",
        "concurrent.futures",
        "The threads that sync the files a build writes: a check imports the writer (for the "
        "journal's names) and writes nothing.",
    ),
    (
        "lockdocs.config",
        "tomllib",
        "The TOML parser (and the patterns it compiles): only a project with a pyproject.toml.",
    ),
    (
        "lockdocs.config",
        "difflib",
        "Close matches: only for a setting or a code that names nothing.",
    ),
)


@dataclass(frozen=True, order=True)
class Import:
    """One import of a package module by another, where it is written."""

    src: str
    dst: str
    line: int
    where: str  # "top", "function" or "typing" (under `if TYPE_CHECKING:`)


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under `root` (the folder holding the package), by name."""
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a module's layer (0 is the top), None when no layer names it."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes, _) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), index)
    return None if best is None else best[1]


def _typing_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def parsed(path: Path) -> ast.Module:
    """A module's tree, parsed once per version of the file in a process: the architecture page,
    its check and the import tests each read every module, and parsing was most of their time."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    tree = _PARSED.get(key)
    if tree is None:
        tree = _PARSED[key] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return tree


_PARSED: dict[tuple[str, int, int], ast.Module] = {}
# Imports are statements, so the walk enters only what can hold statements.
_HOLDS_STATEMENTS = (ast.stmt, ast.ExceptHandler, ast.match_case)


def _imports_of(
    tree: ast.AST, where: str = "top"
) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    for node in ast.iter_child_nodes(tree):
        if not isinstance(node, _HOLDS_STATEMENTS):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, where
        elif _typing_block(node):
            assert isinstance(node, ast.If)
            for child in node.body:
                yield from _imports_of(ast.Module(body=[child], type_ignores=[]), "typing")
            for child in node.orelse:
                yield from _imports_of(ast.Module(body=[child], type_ignores=[]), where)
        else:
            inner = (
                "function"
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or where == "function"
                else where
            )
            yield from _imports_of(node, inner)


def imports(root: Path, package: str) -> list[Import]:
    """Every import of one package module by another, sorted."""
    known = modules(root, package)

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    out: set[Import] = set()
    for name, path in known.items():
        tree = parsed(path)
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node, where in _imports_of(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = here[: len(here) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                # `from pkg import sub` imports the module pkg.sub; `from pkg import name`
                # imports pkg (its __init__).
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in node.names
                ]
            for target in targets:
                dst = owner(target) if target.split(".")[0] == package else None
                if dst is not None and dst != name:
                    out.add(Import(name, dst, node.lineno, where))
    return sorted(out)


def graph(found: list[Import]) -> dict[str, set[str]]:
    """Module -> the modules it imports (one edge however many imports say it)."""
    edges: dict[str, set[str]] = {}
    for imp in found:
        edges.setdefault(imp.src, set()).add(imp.dst)
    return edges


def circles(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted, in a fixed
    order."""
    succ = {node: sorted(dsts) for node, dsts in edges.items()}
    return sorted(c for c in strongly_connected(nodes, succ) if len(c) > 1)


def upward(found: list[Import]) -> list[Import]:
    """The imports of a module from a layer above its own."""
    out: list[Import] = []
    for imp in found:
        src, dst = layer_of(imp.src), layer_of(imp.dst)
        if src is not None and dst is not None and dst < src:
            out.append(imp)
    return out


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def lazy_boundary(imp: Import) -> tuple[str, str, str] | None:
    """The entry of LAZY that allows a function-level import, or None."""
    return next((b for b in LAZY if _under(imp.src, b[0]) and _under(imp.dst, b[1])), None)


def lazy_allowed(module: str, imported: str) -> bool:
    """Does a lazy boundary allow `module` to import `imported` inside a function?"""
    return any(_under(module, src) and _under(imported, dst) for src, dst, _ in LAZY)


def scattered(found: list[Import]) -> list[Import]:
    """Imports inside functions that no lazy boundary allows."""
    return [i for i in found if i.where == "function" and lazy_boundary(i) is None]


def imports_in_functions(root: Path, package: str) -> list[tuple[str, int, str]]:
    """(module, line, imported name) of every import inside a function of the package,
    whatever it imports (the package's own modules, the standard library, a dependency)."""
    out: list[tuple[str, int, str]] = []
    for name, path in modules(root, package).items():
        tree = parsed(path)
        for node, where in _imports_of(tree):
            if where != "function":
                continue
            if isinstance(node, ast.Import):
                out += [(name, node.lineno, alias.name) for alias in node.names]
            else:
                out.append((name, node.lineno, "." * node.level + (node.module or "")))
    return sorted(out)
