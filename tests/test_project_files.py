"""Reading the project's files (lockdocs/project/files.py), against hostile and careless file
systems: a paths folder outside the project or symlinked out of it, path files symlinked
outside, symlinks inside that loop, and root discovery that never takes a stranger's
locks.yaml and stops at the repository top and at home. Real CLI, real files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks and mounts are POSIX")


def _clean(result_err: str) -> None:
    assert "Traceback" not in result_err and "internal error" not in result_err, result_err


@posix_only
@pytest.mark.parametrize("value", ["../other", "/", "/etc", "~/x", "a/../../b", "C:\\\\x"])
def test_a_paths_folder_outside_the_project_is_refused_before_any_walk(
    tmp_path: Path, value: str
) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.yaml").write_text("group: Elsewhere\npaths: {}\n")
    with (root / "locks.yaml").open("a") as fh:
        fh.write(f'paths: "{value}"\n')
    for command in ("validate", "check", "build"):
        result = run_cli(command, "--root", str(root))
        _clean(result.err)
        assert result.code == 2, result.out + result.err
        assert "LD012 error: paths: " in result.out + result.err
        assert "locks.yaml:" in result.out + result.err


@posix_only
def test_a_paths_folder_symlinked_outside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    shutil.move(root / "paths", tmp_path / "elsewhere")
    (root / "paths").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    result = run_cli("check", "--root", str(root))
    assert result.code == 2 and "LD012" in result.out


@posix_only
def test_a_path_file_symlinked_outside_is_never_read(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$SECRET-HASH:19000:0:99999:7:::\n")
    (root / "paths" / "shadow.yaml").symlink_to(secret)
    (root / "paths" / "etc").symlink_to(tmp_path, target_is_directory=True)
    result = run_cli("check", "--root", str(root))
    _clean(result.err)
    assert result.code == 2
    assert "paths/shadow.yaml: LD012 error" in result.out
    assert "paths/etc: LD012 error" in result.out
    assert "SECRET" not in result.out + result.err


@posix_only
def test_symlinks_inside_the_project_are_read_and_a_loop_ends(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    shared = root / "shared"
    shared.mkdir()
    shutil.move(root / "paths" / "checkout.yaml", shared / "checkout.yaml")
    (root / "paths" / "checkout.yaml").symlink_to(shared / "checkout.yaml")
    (root / "paths" / "again").symlink_to(root / "paths", target_is_directory=True)
    result = run_cli("validate", "--root", str(root))
    _clean(result.err)
    assert result.code == 0, result.out


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_root_discovery_never_takes_a_strangers_locks_yaml(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "mine" / "deep").mkdir(parents=True)
    shutil.copy(FIXTURE / "locks.yaml", shared / "locks.yaml")
    os.chown(shared / "locks.yaml", 65534, 65534)  # nobody's
    result = run_cli("check", cwd=shared / "mine" / "deep")
    assert result.code == 2 and "belongs to another user" in result.err
    os.chown(shared / "locks.yaml", 0, 0)
    shared.chmod(0o1777)  # a shared /tmp: anyone may write there
    result = run_cli("check", cwd=shared / "mine" / "deep")
    assert result.code == 2 and "anyone may write to the folder" in result.err


@posix_only
def test_root_discovery_stops_at_the_repository_top_and_at_home(tmp_path: Path) -> None:
    top = tmp_path / "top"
    (top / "repo" / ".git").mkdir(parents=True)
    (top / "repo" / "sub").mkdir()
    (top / "home" / "work").mkdir(parents=True)
    shutil.copy(FIXTURE / "locks.yaml", top / "locks.yaml")
    result = run_cli("validate", cwd=top / "repo" / "sub")
    assert result.code == 2 and "up to the repository top or your home" in result.err
    result = run_cli("validate", cwd=top / "home" / "work", env={"HOME": str(top / "home")})
    assert result.code == 2 and "no locks.yaml" in result.err
    shutil.copytree(FIXTURE / "paths", top / "repo" / "paths")
    shutil.copy(FIXTURE / "locks.yaml", top / "repo" / "locks.yaml")
    assert run_cli("validate", cwd=top / "repo" / "sub").code == 0  # its own top is fine
