"""Declarations far beyond any real project, and values that once crashed Graphviz: refused
early with a located LD009 at a documented limit, or rendered within bounds. Timings live in
bench/hostile.py; these tests check what is refused, where, and that nothing blows up."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import lockdocs.load as load_mod
import lockdocs.project.files as project_files
from conftest import run_cli
from lockdocs.api import load

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
