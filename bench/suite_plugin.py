"""A pytest plugin that records what each test costs: CPU seconds of the test process and of
the child processes it waited for, wall seconds, and how many processes of each kind it started
(lockdocs CLI runs, other Python processes, mkdocs builds, dot, Chromium, Postgres clusters;
and CLI runs made in the test process, which conftest.py announces with an audit event),
plus the CPU of each fixture's setup. bench/suite_profile.py loads it (`-p suite_plugin`) and
summarises the records; it is not part of the default suite.

Processes started by the test process are seen by an audit hook on `subprocess.Popen` and
`os.posix_spawn`; those started by its Python children (the CLI calling dot, mkdocs building
with the lockdocs plugin, the server helper running initdb) by the same hook, installed in every
child through a `sitecustomize` on PYTHONPATH. Each record goes to one JSON-lines file per
worker under $SUITE_PROFILE_DIR.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_SITE = """
import os, sys
def _suite_profile_hook(event, args):
    if event not in ("subprocess.Popen", "os.posix_spawn", "os.exec"):
        return
    log = os.environ.get("SUITE_PROFILE_SPAWNS")
    if not log:
        return
    try:
        argv = [os.fsdecode(a) for a in (args[1] or [])]
    except Exception:
        argv = [repr(args[1])]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(repr((os.environ.get("SUITE_PROFILE_TEST", ""), argv)) + "\\n")
sys.addaudithook(_suite_profile_hook)
"""


def kind(argv: list[str]) -> str:
    """The kind of process an argv starts."""
    if not argv:
        return "other"
    joined = " ".join(argv)
    base = Path(argv[0]).name
    if "initdb" in joined:
        return "postgres_cluster"
    if base == "chromium" or "chromium" in joined.split(" ")[0]:
        return "chromium"
    if base == "dot" or base.startswith("dot"):
        return "dot"
    if "-m lockdocs" in joined or base == "lockdocs":
        return "lockdocs"
    if "mkdocs build" in joined or "properdocs build" in joined or "zensical build" in joined:
        return "site_build"
    if base.startswith("python"):
        return "python_other"
    if base in ("git", "pre-commit", "npm", "npx", "node") or "node_modules" in joined:
        return base if base in ("git",) else "node_or_hook"
    return "other:" + base


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class Recorder:
    def __init__(self, out: Path, worker: str) -> None:
        self.out = out
        self.worker = worker
        self.spawns = out / f"spawns-{worker}.log"
        self.fixtures: Counter[str] = Counter()
        self.fixture_cpu: dict[str, float] = {}
        self.records = (out / f"tests-{worker}.jsonl").open("a", encoding="utf-8")
        site = Path(tempfile.mkdtemp(prefix="suite-profile-site-"))
        (site / "sitecustomize.py").write_text(_SITE, encoding="utf-8")
        # bench/ was on PYTHONPATH only for pytest to import this plugin: a child must not see
        # it (bench/build.py would shadow `python -m build`).
        here = str(Path(__file__).resolve().parent)
        old = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
        os.environ["PYTHONPATH"] = os.pathsep.join([str(site), *old])
        os.environ["SUITE_PROFILE_SPAWNS"] = str(self.spawns)
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "lockdocs.tests.in_process":  # a CLI run in the test process (conftest.py)
            argv = ["<inprocess>"]
        elif event not in ("subprocess.Popen", "os.posix_spawn", "os.exec"):
            return
        else:
            try:
                argv = [os.fsdecode(a) for a in (args[1] or [])]
            except (TypeError, ValueError):
                argv = [repr(args[1])]
        with self.spawns.open("a", encoding="utf-8") as fh:
            fh.write(repr((os.environ.get("SUITE_PROFILE_TEST", ""), argv)) + "\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        os.environ["SUITE_PROFILE_TEST"] = item.nodeid
        self.current: dict[str, float] = {}
        wall0 = time.monotonic()
        me0, kids0 = _cpu()
        yield
        me1, kids1 = _cpu()
        record = {
            "test": item.nodeid,
            "worker": self.worker,
            "wall": time.monotonic() - wall0,
            "cpu_self": me1 - me0,
            "cpu_children": kids1 - kids0,
            "fixtures": self.current,
        }
        self.records.write(json.dumps(record) + "\n")
        self.records.flush()
        os.environ["SUITE_PROFILE_TEST"] = ""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Generator[None, None, None]:
        me0, kids0 = _cpu()
        yield
        me1, kids1 = _cpu()
        name = f"{fixturedef.argname}[{fixturedef.scope}]"
        current = getattr(self, "current", None)
        if current is not None:
            current[name] = current.get(name, 0.0) + (me1 - me0) + (kids1 - kids0)


def pytest_configure(config: pytest.Config) -> None:
    out = os.environ.get("SUITE_PROFILE_DIR")
    if not out:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if worker == "main" and config.getoption("numprocesses", None):
        return  # the xdist controller runs no tests
    config.pluginmanager.register(Recorder(Path(out), worker), "suite-profile-recorder")
