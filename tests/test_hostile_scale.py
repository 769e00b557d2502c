"""Declarations far beyond any real project, values that once crashed Graphviz, `code:` globs
that multiplied the walk of a deep tree, and pages past a template bound: refused early with a
located LD009 at a documented limit, or rendered within bounds, and a bound's message true to
where it was hit. Timings live in bench/hostile.py; these tests check what is refused, where,
and that nothing blows up."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import lockdocs.load as load_mod
import lockdocs.project.files as project_files
from conftest import run_cli
from lockdocs.api import load
from lockdocs.project import globs
from lockdocs.render.sandbox import MAX_VALUE

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"
LOCKS = (
    "lockdocs: 1\npage: {title: Many}\nlocks:\n"
    "  a: {title: A, kind: advisory, key: {hashtextextended: {text: a}}, modes: {exclusive: x}}\n"
)


def _project(root: Path, files: int, paths_per_file: int, steps: int = 1) -> Path:
    (root / "paths").mkdir(parents=True)
    (root / "locks.yaml").write_text(LOCKS)
    body_steps = ", ".join(["{take: a}"] * steps)
    for f in range(files):
        body = "".join(
            f"  p{f}x{i}: {{title: P, steps: [{body_steps}]}}\n" for i in range(paths_per_file)
        )
        (root / "paths" / f"f{f:05d}.yaml").write_text(f"group: G{f}\npaths:\n{body}")
    return root


def test_more_path_files_than_the_limit_are_refused_before_reading(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", load_mod.MAX_PATH_FILES + 1, 1)
    result = run_cli("validate", "--root", str(root))
    assert result.code == 2
    assert "paths: LD009 error: the paths folder holds 10,001 path files" in result.out


def test_more_bytes_than_the_limit_are_refused_before_parsing(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", 1, 1)
    filler = "# " + "x" * 1000 + "\n"
    for n in range(9):  # 9 x 3.9 MB: each file under its own limit, the project over 32 MiB
        (root / "paths" / f"pad{n}.yaml").write_text("group: Pad\npaths: {}\n" + filler * 3900)
    result = run_cli("validate", "--root", str(root))
    assert result.code == 2
    assert "LD009 error: the declarations are" in result.out and "33,554,432" in result.out


@pytest.mark.parametrize(
    ("limit", "words"), [("MAX_PATHS", "paths are declared"), ("MAX_STEPS", "steps")]
)
def test_paths_and_steps_past_the_limit_stop_the_load_where_they_pass_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, words: str
) -> None:
    """The real limits (50,000 paths, 500,000 steps) take a few seconds of parsing to reach;
    the counting is the same at any limit, so the test lowers it."""
    monkeypatch.setattr(load_mod, limit, 40)
    monkeypatch.setattr(project_files, limit, 40)  # the budget's own binding of the limit
    root = _project(tmp_path / "p", 5, 10, steps=2)
    model, diags = load(root)
    assert model is None
    found = [d for d in diags if d.code == "LD009"]
    assert len(found) == 1 and words in found[0].message, diags
    assert found[0].location.file.startswith("paths/f0000") and found[0].location.line > 0


def test_a_paths_folder_with_too_many_entries_is_refused(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", 1, 1)
    junk = root / "paths" / "junk"
    junk.mkdir()
    # mostly hard links (a file system allows some 65,000 to one file): 100,001 entries at a
    # fifth of the CPU of creating that many files
    for n in range(load_mod.MAX_WALK_ENTRIES + 1):
        if n % 50_000 == 0:
            first = junk / f"{n}.txt"
            first.touch()
        else:
            os.link(first, junk / f"{n}.txt")
    result = run_cli("validate", "--root", str(root))
    assert result.code == 2 and "holds more than 100,000 files and folders" in result.out


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_a_one_megabyte_title_builds(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    huge = "Catalog " + "gate " * 200_000  # 1 MB
    locks.write_text(locks.read_text().replace("title: Catalog gate", f"title: {huge}", 1))
    result = run_cli("build", "--root", str(root))
    assert result.code == 0, result.err
    dots = [p.read_text() for p in (root / "docs").rglob("*.dot")]
    assert dots and max(len(d) for d in dots) < 100_000
    assert any("…" in d for d in dots)
    assert run_cli("check", "--root", str(root)).code == 0


def test_an_id_longer_than_128_characters_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    locks.write_text(locks.read_text().replace("  catalog-gate:\n", f"  {'g' * 129}:\n", 1))
    result = run_cli("validate", "--root", str(root))
    assert result.code == 2 and "LD003 error" in result.out and "at most 128" in result.out


def _deep_tree(base: Path, depth: int) -> int:
    """A chain of `depth` folders, each with three .sql files and a .txt; returns the folders."""
    here = base
    for level in range(depth):
        here = here / f"d{level}"
        here.mkdir(parents=True)
        for n in range(3):
            (here / f"q{n}.sql").write_text("select 1;\n")
        (here / "notes.txt").write_text("x\n")
    return depth + 1


def test_nested_double_stars_read_each_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Path.glob walks the tree once per `**` below the one before (six nested on a deep tree:
    269 s); the walk here reads each folder once, whatever the pattern."""
    folders = _deep_tree(tmp_path / "t", 40)
    reads: list[str] = []
    real = os.scandir

    def counting(path: str | os.PathLike[str]) -> object:
        reads.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(globs.os, "scandir", counting)
    pattern = "**/**/**/**/**/**/*.sql"
    found = globs.glob(tmp_path / "t", pattern)
    assert len(found) == 3 * 40 and len(reads) == folders == len(set(reads))
    reads.clear()
    assert globs.glob(tmp_path / "t", "d0/d1/*.sql") and len(reads) == 3  # no walk past d1


def test_code_globs_match_what_path_glob_matches(tmp_path: Path) -> None:
    base = tmp_path / "t"
    for f in ("a/1.sql", "a/b/2.sql", "a/b/c/3.sql", "a/.h/4.sql", "db/5.sql", "db/s/6.sql",
              "x/7.py", ".8.sql", "9.sql", "a/b/c/A.SQL"):  # fmt: skip
        (base / f).parent.mkdir(parents=True, exist_ok=True)
        (base / f).write_text("select 1;\n")
    (base / "a" / "link").symlink_to("../db")  # a folder link: ** does not go down it
    (base / "x" / "up").symlink_to("..")  # a loop, reached by parts written out only
    for pattern in (
        "**/*.sql", "*.sql", "a/**/*.sql", "**/b/**/*.sql", "**", "a/*/*.sql",
        "**/link/*.sql", "a/link/**/*.sql", "**/**/*.sql", "db/**", "x/up/a/*.sql",
        "x/up/x/up/db/*.sql", "**/*.SQL", "./a//b/*.sql", "a/**/c/*", "[ad]*/*.sql",
        "a/b/c/3.sql", "nope/**/x",
    ):  # fmt: skip
        want = sorted(q for q in base.glob(pattern) if q.is_file())
        assert globs.glob(base, pattern) == want, pattern


def test_a_scan_over_a_deep_tree_with_nested_double_stars(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    _deep_tree(root / "db", 30)
    locks = root / "locks.yaml"
    text = locks.read_text(encoding="utf-8")
    locks.write_text(
        text.replace("lockdocs: 1\n", "lockdocs: 1\ncode: ['db/**/**/**/**/**/**/*.sql']\n")
    )
    result = run_cli("scan", "--root", str(root), "--format", "json")
    assert result.code in (0, 1), result.err
    assert len(result.json()["files"]) == 90


def test_a_block_of_the_default_template_past_the_value_bound_builds(tmp_path: Path) -> None:
    """lockdocs' own templates indent every lock's details of one kind as one block: three
    notes of 1.7 M characters each (as escaped) made that block pass the bound of one value
    (4 M), and the build failed with a hint that blamed a templates/ folder the project does
    not have. A block is page text, bounded as the page is."""
    root = tmp_path / "proj"
    note = "a* " * 430_000  # 1.29 MB, escaped to 1.72 M characters
    locks = "".join(
        f"  n{i}:\n    title: N{i}\n    kind: advisory\n"
        f"    key: {{hashtextextended: {{text: n{i}}}}}\n    modes: {{exclusive: x}}\n"
        f"    notes: '{note}'\n"
        for i in range(3)
    )
    (root / "paths").mkdir(parents=True)
    (root / "locks.yaml").write_text(f"lockdocs: 1\npage: {{title: Big}}\nlocks:\n{locks}")
    (root / "paths" / "p.yaml").write_text(
        "group: G\npaths:\n  p: {title: P, steps: [{take: n0}, {take: n1}, {take: n2}]}\n"
    )
    result = run_cli("build", "--no-svg", "--root", str(root))
    assert result.code == 0, result.out + result.err
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert len(page) > MAX_VALUE


def test_a_bound_hit_in_the_default_template_does_not_blame_templates(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    result = run_cli(
        "build", "--no-svg", "--root", str(root), env={"LOCKDOCS_TEMPLATE_SECONDS": "0.000001"}
    )
    assert result.code == 2, result.out + result.err
    assert "LD601 error: template over a limit: rendering took longer than" in result.err
    assert "(lockdocs default template)" in result.err
    assert "this is lockdocs' own template" in result.err and "templates/" not in result.err
