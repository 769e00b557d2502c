"""The package's shape: imports flow one way (lockdocs.devdocs.imports.LAYERS, top to bottom),
no module imports itself round a circle, and the rule modules are collected by one list."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from lockdocs.devdocs import imports as arch

SRC = Path(__file__).resolve().parents[1] / "src"
FOUND = arch.imports(SRC, "lockdocs")
MODULES = arch.modules(SRC, "lockdocs")


def _where(imp: arch.Import) -> str:
    path = MODULES[imp.src].relative_to(SRC.parent)
    return f"{path}:{imp.line}: {imp.src} imports {imp.dst} ({imp.where})"


def test_every_module_has_a_layer() -> None:
    missing = sorted(m for m in MODULES if arch.layer_of(m) is None)
    assert not missing, f"give these modules a layer in lockdocs/devdocs/imports.py: {missing}"


def test_no_import_circle() -> None:
    found = arch.circles(list(MODULES), arch.graph(FOUND))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_upward_import() -> None:
    bad = arch.upward(FOUND)
    names = [layer for layer, _, _ in arch.LAYERS]
    lines = [
        f"{_where(i)}: {names[arch.layer_of(i.src) or 0]} -> {names[arch.layer_of(i.dst) or 0]}"
        for i in bad
    ]
    assert not bad, "imports from a layer above:\n" + "\n".join(lines)


def test_the_walk_sees_the_known_imports() -> None:
    """The walk finds imports of every kind, so an empty result above means something."""
    kinds = {(i.src, i.dst): i.where for i in FOUND}
    assert kinds[("lockdocs.rules.ordering", "lockdocs.analysis.cycles")] == "top"
    assert kinds[("lockdocs.rules.context", "lockdocs.analysis.facts")] == "top"
    assert ("lockdocs.api", "lockdocs.render.write") in kinds
    assert len(FOUND) > 300


def test_function_level_imports_sit_at_a_named_lazy_boundary() -> None:
    bad = arch.scattered(FOUND)
    assert not bad, (
        "imports inside functions that no lazy boundary (LAZY in lockdocs/devdocs/imports.py) "
        "allows; move them to the top of the module:\n" + "\n".join(_where(i) for i in bad)
    )


def test_every_lazy_boundary_is_in_use() -> None:
    used = {arch.lazy_boundary(i) for i in FOUND if i.where == "function"}
    outside = arch.imports_in_functions(SRC, "lockdocs")
    stale = [
        b[:2]
        for b in arch.LAZY
        if b not in used and not any(m == b[0] and name == b[1] for m, _, name in outside)
    ]
    assert not stale, f"lazy boundaries nothing uses any more: {stale}"


def test_only_the_package_is_imported_lazily() -> None:
    """The standard library and the dependencies are imported at the top of each module, but
    at a named boundary (the drawing threads); a module behind a boundary imports what it
    needs at its top."""
    outside = [
        f"{m}:{line}: {name}"
        for m, line, name in arch.imports_in_functions(SRC, "lockdocs")
        if not name.startswith(("lockdocs", ".")) and not arch.lazy_allowed(m, name)
    ]
    assert not outside, "\n".join(outside)


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


HEAVY = ("typer", "jinja2", "pglast", "psycopg", "mkdocs", "jsonschema")


@pytest.mark.parametrize("module", ["lockdocs.entry", "lockdocs.cli"])
def test_the_console_script_and_the_cli_load_no_pipeline_before_a_command_runs(
    module: str,
) -> None:
    """`--version`, `--help` and a mistyped option pay for the CLI alone: no command body,
    no pipeline, and (for the console script) not even typer."""
    loaded = _loaded_after(f"import {module}")
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY and m.split(".")[0] != "typer"]
    assert not sorted(heavy)
    assert module == "lockdocs.cli" or "typer" not in loaded
    pipeline = ("lockdocs.api", "lockdocs.project", "lockdocs.rules", "lockdocs.render")
    assert not sorted(m for m in loaded if m.startswith(pipeline))
    assert not sorted(m for m in loaded if m.startswith("lockdocs.commands."))


def test_validate_loads_no_check_renderer_or_cli_framework(tmp_path: Path) -> None:
    """`validate` of a project without exceptions resolves the declarations without loading
    a check, the page's renderer (jinja2), the CLI framework, the scanner or a Postgres
    driver."""
    (tmp_path / "locks.yaml").write_text(
        "lockdocs: 1\npage: {title: Locks}\nlocks:\n  ledger:\n    title: Ledger row\n"
        "    kind: row\n    table: app.ledgers\n    modes: {for update: every writer}\n",
        encoding="utf-8",
    )
    loaded = _loaded_after(
        "import sys\n"
        f"sys.argv = ['lockdocs', 'validate', '--root', {str(tmp_path)!r}]\n"
        "from lockdocs import entry\n"
        "try:\n    entry.main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code"
    )
    assert "lockdocs.project" in loaded  # it did run
    assert not sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    skipped = ("lockdocs.rules", "lockdocs.analysis", "lockdocs.render", "lockdocs.scan")
    assert not sorted(m for m in loaded if m.startswith(skipped))


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "lockdocs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_circle_and_an_upward_import_are_found(tmp_path: Path) -> None:
    """A package with analysis importing rules (upward, also under TYPE_CHECKING and inside a
    function, relative and absolute) and rules importing analysis back."""
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "analysis/__init__.py": "",
            "analysis/graph.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from ..rules.context import Context\n"
                "def f():\n"
                "    import lockdocs.rules.hints\n"
            ),
            "rules/__init__.py": "",
            "rules/context.py": "from lockdocs.analysis import graph\n",
            "rules/hints.py": "",
            "model.py": "from lockdocs import diagnostics\n",
            "diagnostics.py": "",
        },
    )
    found = arch.imports(root, "lockdocs")
    assert [(i.src, i.dst, i.where) for i in found] == [
        ("lockdocs.analysis.graph", "lockdocs.rules.context", "typing"),
        ("lockdocs.analysis.graph", "lockdocs.rules.hints", "function"),
        ("lockdocs.model", "lockdocs.diagnostics", "top"),
        ("lockdocs.rules.context", "lockdocs.analysis.graph", "top"),
    ]
    mods = list(arch.modules(root, "lockdocs"))
    assert arch.circles(mods, arch.graph(found)) == [
        ["lockdocs.analysis.graph", "lockdocs.rules.context"]
    ]
    assert [(i.src, i.dst) for i in arch.upward(found)] == [
        ("lockdocs.analysis.graph", "lockdocs.rules.context"),
        ("lockdocs.analysis.graph", "lockdocs.rules.hints"),
    ]


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("lockdocs.cli", "cli"),
        ("lockdocs.render.view.page", "stages"),
        ("lockdocs.rules.registry", "rules"),
        ("lockdocs.analysis.flatten", "analysis"),
        ("lockdocs.model", "model"),
        ("lockdocs.schema.definition", "load"),
        ("lockdocs.diagnostics", "diagnostics"),
        ("lockdocs", "diagnostics"),
    ],
)
def test_layer_of(module: str, layer: str) -> None:
    index = arch.layer_of(module)
    assert index is not None and arch.LAYERS[index][0] == layer


def _registers(path: Path) -> bool:
    """Does the module register a rule (`describe(...)` or `@rule(...)`)?"""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("describe", "rule")
        ):
            return True
    return False


def test_the_catalog_lists_every_rule_module() -> None:
    registering = sorted(
        name
        for name, path in MODULES.items()
        if name.startswith("lockdocs.rules.") and name != "lockdocs.rules.registry"
        if _registers(path)
    )
    listed = sorted(
        {i.dst for i in FOUND if i.src == "lockdocs.rules.catalog" and i.dst in MODULES}
        - {"lockdocs.rules.registry"}
    )
    assert listed == registering
    # Only the catalog imports the rule modules as a set; the registry imports none of them.
    assert not [i for i in FOUND if i.src == "lockdocs.rules.registry" and i.dst in registering]


def test_a_check_the_cache_answers_loads_no_pipeline(tmp_path: Path) -> None:
    """The second check of an unchanged project (the flagship: `code:` set, docs built) reads
    no YAML, scans nothing, renders nothing, and creates no dataclass: it re-hashes what the
    first one read and asks the manifest."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("LOCKDOCS_CACHE", None)
    run = [sys.executable, "-c"]
    check = f"import sys\nsys.argv = ['lockdocs', 'check', '--root', {str(REPO)!r}]\n"
    check += "from lockdocs import entry\ntry:\n    entry.main()\nexcept SystemExit:\n    pass\n"
    first = subprocess.run([*run, check], env=env, capture_output=True, text=True, check=False)
    assert "internal error" not in first.stderr
    report = "import sys\nprint('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    second = subprocess.run(
        [*run, check + report], env=env, capture_output=True, text=True, check=False
    )
    assert second.stdout == first.stdout, "the same report"
    loaded = set(second.stderr.split())
    assert "lockdocs.checkcache" in loaded  # it did run
    assert not sorted(m for m in loaded if m.split(".")[0] in (*HEAVY, "yaml", "dataclasses"))
    pipeline = ("lockdocs.api", "lockdocs.load", "lockdocs.project.assemble", "lockdocs.rules")
    assert not sorted(m for m in loaded if m.startswith((*pipeline, "lockdocs.scan")))
    assert "lockdocs.render.pages" not in loaded and "lockdocs.render.drift" not in loaded
