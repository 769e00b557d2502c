"""The README's first example runs and prints what the README says it prints."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, run_cli, write_project


def test_readme_example_output_is_quoted_as_printed(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    locks, paths = re.findall(r"```yaml\n(.*?)```", readme, re.S)[:2]
    root = write_project(tmp_path / "p", {"locks.yaml": locks, "paths/money.yaml": paths})
    result = run_cli("check", "--no-drift", "--root", str(root))
    quoted = readme.split("```text\n", 1)[1].split("```", 1)[0]
    assert result.code == 1
    assert result.out == quoted


def test_readme_names_the_two_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "make check" in readme and "make test" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
