"""The output formats of check and validate are one table (lockdocs.report.FORMATS): the CLI's
choices, the fast route of the console entry, the reporters and the generated CLI reference all
follow it, and each format's row says what the commands do with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli, write_project
from lockdocs import devdocs
from lockdocs.commands import Format
from lockdocs.entry import _fast
from lockdocs.report import FORMATS, REPORTERS

# One finding (LD301, an info: the path's transaction has no lock_timeout) and nothing else.
PROJECT = {
    "locks.yaml": (
        "lockdocs: 1\npage: {title: Locks}\ntransactions:\n  plain: {lock_timeout: none}\n"
        "locks:\n"
        "  order: {title: Order row, kind: row, table: app.orders, modes: {for update: ship}}\n"
    ),
    "paths/orders.yaml": (
        "group: Orders\npaths:\n"
        "  ship: {title: Ship an order, transaction: plain, steps: [{take: order}]}\n"
    ),
}


def test_the_cli_offers_every_format_of_the_table() -> None:
    """The typer app's choices (as the generated CLI reference prints them, for the commands
    that report findings) and the enum it parses into are the table's names."""
    assert [f.value for f in Format] == list(FORMATS)
    row = f"| `-f, --format <{'|'.join(FORMATS)}>` |"
    sections = devdocs.cli_reference().split("\n### lockdocs ")
    for command in ("validate", "check", "observe"):
        section = next(s for s in sections if s.startswith(f"{command} "))
        assert row in section, command


def test_the_fast_route_takes_every_format_and_nothing_else() -> None:
    for name in FORMATS:
        for command in ("check", "validate"):
            plan = _fast([command, "--format", name])
            assert plan is not None and plan.fmt == name, (command, name)
    assert _fast(["check", "--format", "yaml"]) is None


def test_the_reporters_are_the_table_s() -> None:
    assert list(REPORTERS) == list(FORMATS)
    assert all(REPORTERS[name] is f.reporter for name, f in FORMATS.items())


@pytest.mark.parametrize("name", list(FORMATS))
def test_each_format_does_what_its_row_says(tmp_path: Path, name: str) -> None:
    """Both routes (fast and typer) print the same; the summary line is there exactly when the
    row says so; a format for the terminal names the project's files from its own folder."""
    root = write_project(tmp_path / "repo" / "svc", PROJECT)
    (tmp_path / "repo" / ".git").mkdir()
    args = ["check", "--no-drift", "--root", str(root), "--format", name]
    fast = run_cli(*args)
    slow = run_cli(*args, env={"LOCKDOCS_NO_FAST": "1"})
    assert (fast.code, fast.out, fast.err) == (slow.code, slow.out, slow.err)
    assert fast.code == 0, fast.err
    spec = FORMATS[name]
    summary = "0 errors, 0 warnings, 1 info, 0 waived"
    if name == "json":
        assert (json.loads(fast.out)["summary"] == summary) is spec.summary
    else:
        assert (summary in fast.out) is spec.summary
    assert ("svc/locks.yaml" in fast.out) is not spec.terminal
    assert "locks.yaml" in fast.out
    ok = run_cli("validate", "--root", str(root), "--format", name)
    assert ("ok: 1 locks, 1 paths in 2 files" in ok.out) is spec.terminal
