"""`make setup` leaves nothing for a run to compile: the package's bytecode is written even where
PYTHONDONTWRITEBYTECODE is set (an editable install compiles nothing, and Python then never
writes the cache itself, so every run compiled all of lockdocs again)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

# Imports every module of the package it finds on sys.path and prints how many Python compiled
# from source (importlib's `compile` audit event) instead of reading their bytecode.
COUNT_COMPILES = """
import importlib, pkgutil, sys
compiled = []
sys.addaudithook(lambda e, a: compiled.append(a[1]) if e == "compile" and str(a[1]).endswith(".py") else None)
import lockdocs
for m in pkgutil.walk_packages(lockdocs.__path__, "lockdocs."):
    if not m.name.endswith(".__main__"):
        importlib.import_module(m.name)
print(len([f for f in compiled if "/lockdocs/" in str(f)]), lockdocs.__file__)
"""


def _compiles(pythonpath: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-c", COUNT_COMPILES],
        capture_output=True,
        text=True,
        check=True,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": str(pythonpath),
        },
        timeout=300,
    )
    count, where = proc.stdout.split()
    return int(count), where


def test_make_setup_compiles_the_package(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    plan = subprocess.run(
        ["make", "-n", "setup"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    line = next(x for x in plan.splitlines() if "compileall" in x)
    argv = shlex.split(line)
    assert argv[1:] == ["-m", "compileall", "-q", "src/lockdocs"]
    # Without it: a copy of the sources, as an editable install leaves them, is compiled.
    bare = tmp_path / "src"
    shutil.copytree(
        REPO / "src" / "lockdocs", bare / "lockdocs", ignore=shutil.ignore_patterns("__pycache__")
    )
    count, where = _compiles(bare)
    assert where.startswith(str(bare)) and count > 50
    # What make setup runs, then nothing is compiled again.
    subprocess.run([sys.executable, *argv[1:]], cwd=REPO, check=True, timeout=300)
    count, where = _compiles(REPO / "src")
    assert where.startswith(str(REPO / "src")) and count == 0
