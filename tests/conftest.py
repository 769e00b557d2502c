"""Shared test helpers: run the real CLI in a subprocess, write small projects to disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Run:
    """The real command line, as a user runs it (python -m lockdocs)."""
    full_env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    full_env.pop("LOCKDOCS_DEBUG", None)
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "lockdocs", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        env=full_env,
        timeout=300,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def write_project(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode("utf-8", "surrogateescape"))
    return root


@pytest.fixture
def cli() -> Callable[..., Run]:
    return run_cli


@pytest.fixture
def project(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    def make(files: dict[str, str | bytes]) -> Path:
        return write_project(tmp_path / "proj", files)

    return make


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite golden files from the current output instead of comparing.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def lockdocs_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real CLI in `cwd`, as a CompletedProcess (for tests that read returncode/stdout)."""
    env = {k: v for k, v in os.environ.items() if k != "LOCKDOCS_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "lockdocs", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
