"""Output is byte-identical across runs, hash seeds, locales and the order of files on disk."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run_cli

# Determinism across processes: each run starts its own (hash seed, locale).
pytestmark = pytest.mark.cli_process


PROJECT_FILES = ["locks.yaml", "paths", "templates", "code"]


def _copy_project(dst: Path, reverse: bool = False) -> Path:
    """A copy of the flagship's declarations, files created in the given order."""
    dst.mkdir(parents=True)
    shutil.copy2(REPO / "locks.yaml", dst / "locks.yaml")
    (dst / "paths").mkdir()
    files = sorted((REPO / "paths").glob("*.yaml"), reverse=reverse)
    for f in files:  # creation order decides the order a directory lists its entries
        (dst / "paths" / f.name).write_bytes(f.read_bytes())
    if (REPO / "templates").is_dir():
        shutil.copytree(REPO / "templates", dst / "templates")
    shutil.copytree(REPO / "code", dst / "code")  # the SQL the check compares with
    return dst


def _tree_digest(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _outputs(root: Path, env: dict[str, str]) -> tuple[dict[str, str], str, str]:
    build = run_cli("build", "--root", str(root), env=env)
    assert build.code == 0, build.out + build.err
    check = run_cli("check", "--root", str(root), "--format", "json", env=env)
    assert check.code in (0, 1), check.err
    export = run_cli("export", "--root", str(root), env=env)
    assert export.code == 0
    return _tree_digest(root / "docs"), check.out, export.out


VARIANTS = [
    ("seed-0", {"PYTHONHASHSEED": "0"}, False),
    ("seed-1", {"PYTHONHASHSEED": "1"}, False),
    ("seed-random", {"PYTHONHASHSEED": "random"}, False),
    ("locale-C", {"LC_ALL": "C", "LANG": "C"}, False),
    ("locale-C.UTF-8", {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}, False),
    ("locale-unknown", {"LC_ALL": "tr_TR.UTF-8", "LANG": "tr_TR.UTF-8"}, False),
    ("files-reversed", {"PYTHONHASHSEED": "12345"}, True),
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], str, str]:
    root = _copy_project(tmp_path_factory.mktemp("ref") / "p")
    return _outputs(root, {"PYTHONHASHSEED": "0"})


@pytest.mark.parametrize(
    ("env", "reverse"), [v[1:] for v in VARIANTS], ids=[v[0] for v in VARIANTS]
)
def test_byte_identical(
    tmp_path: Path,
    reference: tuple[dict[str, str], str, str],
    env: dict[str, str],
    reverse: bool,
) -> None:
    root = _copy_project(tmp_path / "p", reverse=reverse)
    assert _outputs(root, env) == reference


def test_two_runs_identical(tmp_path: Path) -> None:
    root = _copy_project(tmp_path / "p")
    first = _outputs(root, {})
    second = _outputs(root, {})
    assert first == second


def test_committed_docs_match_the_build(tmp_path: Path) -> None:
    """The docs committed on main are exactly what lockdocs build writes (no drift)."""
    result = run_cli("check", "--root", str(REPO))
    assert "run: lockdocs build" not in result.out, result.out[-3000:]
