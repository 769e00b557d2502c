"""CONTRIBUTING.md's recipes follow the code: every file, make target, module and test they name
exists, the make target they call runs every generator they name, and each recipe's file list is
compared with where the code handles an example of the same change today (a lock field, a step
kind, an output format, a check, a command), so a recipe that goes stale fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import REPO
from lockdocs import model as m
from lockdocs.report import FORMATS
from lockdocs.rules.catalog import load_all

TEXT = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
SRC = REPO / "src" / "lockdocs"
_PATH_RE = re.compile(r"`((?:src|tests|docs|examples)/[^`\s]*|[A-Za-z]+\.(?:md|yml|toml))`")


def _section(title: str) -> str:
    start = TEXT.index(f"\n## {title}\n")
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start : end if end >= 0 else len(TEXT)]


def _files(title: str) -> set[str]:
    """The paths a recipe's "Files:" list names (each entry's first code span)."""
    part = _section(title).split("\nFiles:\n\n", 1)[1].split("\n\n", 1)[0]
    return {m.group(1) for m in re.finditer(r"^- `([^`]+)`", part, re.MULTILINE)}


def _mentions(word: str, root: Path = SRC) -> set[str]:
    """The source files (Python and templates) under `root` whose text holds `word`."""
    return {
        f.relative_to(REPO).as_posix()
        for f in sorted(root.rglob("*"))
        if f.suffix in (".py", ".j2") and word in f.read_text(encoding="utf-8")
    }


RECIPES = [
    "Recipe: a new check",
    "Recipe: a new declaration field",
    "Recipe: a new step kind",
    "Recipe: a new output format",
    "Recipe: a new command",
]


def test_every_recipe_is_there_and_linked() -> None:
    for title in RECIPES:
        assert _files(title), title
    assert "[CONTRIBUTING.md](CONTRIBUTING.md)" in (REPO / "README.md").read_text(encoding="utf-8")
    architecture = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "`CONTRIBUTING.md`" in architecture


def test_every_path_named_exists() -> None:
    named = {m.group(1) for m in _PATH_RE.finditer(TEXT)}
    assert len(named) > 40
    missing = [p for p in sorted(named) if not list(REPO.glob(p.rstrip("/")))]
    assert not missing, missing


def test_the_make_targets_and_modules_exist_and_generate_runs_every_generator() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z-]+):", makefile, re.MULTILINE))
    for target in set(re.findall(r"`make ([a-z-]+)", TEXT)):
        assert target in targets, target
    for module in set(re.findall(r"`python -m ([\w.]+)", TEXT)):
        assert (REPO / "src" / Path(*module.split("."))).exists(), module
    generate = makefile.split("\ngenerate:", 1)[1].split("\n\n", 1)[0]
    # the generators the section names: devdocs, and the site (a prerequisite of generate)
    assert "python -m lockdocs.devdocs" in generate and generate.split("\n")[0].strip() == "site"
    assert "lockdocs build" in makefile.split("\nsite:", 1)[1].split("\n\n", 1)[0]
    goldens = makefile.split("\nGOLDEN_TESTS :=", 1)[1].split("\n", 1)[0].split()
    having = sorted(
        f"tests/{f.name}"
        for f in (REPO / "tests").glob("test_*.py")
        if f.name != "test_contributing.py" and "update_golden" in f.read_text(encoding="utf-8")
    )
    assert sorted(goldens) == having, "make goldens runs every test that has golden files"


def test_a_check_is_written_once() -> None:
    """The recipe's claim: code and severity in the registration, findings made from it."""
    listed = _files("Recipe: a new check")
    assert "src/lockdocs/rules/practice.py" in listed
    assert any(c.startswith("LD3") for c in _registered_in(SRC / "rules" / "practice.py"))
    checks = {c for c, info in load_all().items() if info.check is not None}
    for f in sorted(SRC.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and _decorated_by_rule(node):
                assert [a.arg for a in node.args.args] == ["ctx", "finding"], node.name
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "Diagnostic"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                assert node.args[0].value not in checks, (
                    f"{f.relative_to(REPO)}:{node.lineno}: a finding of {node.args[0].value} "
                    "built by hand; make it with the check's finding(...)"
                )


def _decorated_by_rule(node: ast.FunctionDef) -> bool:
    return any(
        isinstance(d, ast.Call) and getattr(d.func, "id", "") == "rule" for d in node.decorator_list
    )


def _registered_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n.args[0].value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and getattr(n.func, "id", "") in ("rule", "describe")
        and n.args
        and isinstance(n.args[0], ast.Constant)
    ]


def test_the_declaration_field_recipe_is_the_route_of_a_field_as_declared() -> None:
    """The resolver, the export and the view take every field marked AS_DECLARED by the mark,
    with no line per field: the recipe's files are all a new one needs."""
    listed = _files("Recipe: a new declaration field")
    assert {
        "src/lockdocs/schema/locks.py",
        "src/lockdocs/model/locks.py",
        "docs/export.md",
    } <= listed
    assert any(p.startswith("src/lockdocs/templates/") for p in listed)
    route = ["src/lockdocs/project/locks.py", "src/lockdocs/export.py"]
    route.append("src/lockdocs/render/view/locks.py")
    for path in route:
        text = (REPO / path).read_text(encoding="utf-8")
        assert "as_declared(m.Lock)" in text, path
        for name in ("row", "notes", "serializes"):
            assert name in m.as_declared(m.Lock)
            assert f'raw.get("{name}")' not in text and f'"{name}": lock.' not in text, path


def test_the_step_kind_recipe_lists_every_module_that_handles_a_step_kind() -> None:
    """`external:` is a leaf step like the recipe's: every module that names it is listed."""
    listed = _files("Recipe: a new step kind")
    handled = (_mentions("m.External") | _mentions("External(")) - {"src/lockdocs/model/paths.py"}
    src_listed = {p for p in listed if p.startswith("src/")}
    assert handled <= src_listed, handled - src_listed
    for path in sorted(listed):
        text = (REPO / path).read_text(encoding="utf-8")
        assert "external" in text.lower(), path


def test_the_output_format_recipe_is_the_one_place_a_format_is_named() -> None:
    listed = _files("Recipe: a new output format")
    for name in FORMATS:
        if name in ("text", "json"):  # words the package uses for other things too
            continue
        assert _mentions(f'"{name}"') == {"src/lockdocs/report/__init__.py"}, name
    assert "src/lockdocs/report/__init__.py" in listed and "docs/ci.md" in listed
    assert "--format github" in (REPO / "docs" / "ci.md").read_text(encoding="utf-8")


# Commands that run no body of lockdocs.commands.
_NO_BODY = {"completion": "prints typer's completion script for a shell"}


@pytest.mark.parametrize("path", ["src/lockdocs/cli.py", "src/lockdocs/commands/"])
def test_the_command_recipe_lists_the_cli_and_the_bodies(path: str) -> None:
    assert path in _files("Recipe: a new command")


def test_every_command_calls_a_body_imported_inside_it() -> None:
    tree = ast.parse((SRC / "cli.py").read_text(encoding="utf-8"))
    commands = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef)
        and any(
            isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command"
            for d in n.decorator_list
        )
    ]
    assert len(commands) >= 10
    for fn in commands:
        bodies = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("lockdocs.commands")
        ]
        assert bool(bodies) != (fn.name in _NO_BODY), fn.name
        for imp in bodies:
            for alias in imp.names:
                module = SRC / "commands" / f"{alias.name}.py"
                assert module.is_file(), (fn.name, alias.name)
                assert ast.get_docstring(ast.parse(module.read_text(encoding="utf-8"))), module
