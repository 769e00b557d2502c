"""The console entry's fast route for check/validate prints exactly what the typer route prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO, run_cli, write_project
from lockdocs.entry import _fast

# The fast route is about the process (what it imports before it runs): each run is its own.
pytestmark = pytest.mark.cli_process


BROKEN = {"locks.yaml": "lockdocs: 1\npage: {title: X}\nlocks:\n  a: {title: A, kind: rows}\n"}


@pytest.mark.parametrize(
    "args",
    [
        ["check"],
        ["check", "--no-drift"],
        ["check", "--format", "json"],
        ["check", "-f", "github", "--no-drift"],
        ["check", "--format=sarif"],
        ["validate"],
        ["validate", "--format", "json"],
        ["check", "--root", "{broken}"],
        ["validate", "--root", "{broken}", "-f", "json"],
        ["check", "--root", "{empty}"],
        ["check", "--root", "{drifted}"],
        ["check", "--diff", "--no-svg", "--root", "{drifted}"],
        ["check", "-f", "json", "--diff", "--root", "{drifted}"],
    ],
)
def test_fast_and_typer_routes_agree(tmp_path: Path, args: list[str]) -> None:
    broken = write_project(tmp_path / "broken", BROKEN)
    empty = tmp_path / "empty"
    empty.mkdir()
    drifted = tmp_path / "drifted"
    if any("{drifted}" in a for a in args):
        assert run_cli("init", str(drifted)).code == 0
        locks = drifted / "locks.yaml"
        locks.write_text(locks.read_text(encoding="utf-8").replace("Account row", "Account"))
    args = [a.format(broken=broken, empty=empty, drifted=drifted) for a in args]
    if "--root" not in args:
        args = [*args, "--root", str(REPO)]
    assert _fast(args) is not None, "this spelling takes the fast route"
    fast = run_cli(*args)
    slow = run_cli(*args, env={"LOCKDOCS_NO_FAST": "1"})
    assert (fast.code, fast.out, fast.err) == (slow.code, slow.out, slow.err)


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--help"],
        ["check", "--format", "yaml"],
        ["check", "--frobnicate"],
        ["validate", "--no-drift"],
        ["validate", "--diff"],
        ["check", "--diff", "--diff"],
        ["check", "--root"],
        ["build"],
        [],
    ],
)
def test_everything_else_goes_to_typer(args: list[str]) -> None:
    assert _fast(args) is None


def test_root_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert _fast(["check", "--root", str(f)]) is None
    result = run_cli("check", "--root", str(f))
    assert result.code == 2 and "Traceback" not in result.err
