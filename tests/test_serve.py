"""`mkdocs serve` with the plugin keeps serving when the declarations fail: a real server on a
loopback port, real edits to the files, real HTTP requests.

It starts even when the first build finds an unwaived error (serving the committed page), shows
the error on the page and in the terminal, drops it once the files are fixed, and when a cycle
appears while it runs it answers requests at once with the last good page and the error.
Nothing waits a fixed time: the test reads the server's log for each build's end.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli, write_project
from lockdocs.rules.catalog import load_all

pytestmark = pytest.mark.slow

GOOD = load_all()["LD201"].use_instead
BAD = load_all()["LD201"].example
MKDOCS_YML = """\
site_name: Serve test
strict: true
theme: {name: material, font: false}
plugins: [lockdocs]
markdown_extensions:
  - toc: {permalink: true}
  - tables
  - attr_list
  - admonition
  - pymdownx.details
"""
BANNER = "lockdocs: this page is the last one that built"
# The end of a rebuild in the log. Not "Documentation built in N seconds": MkDocs drops a log
# message it has printed before, so a second build as fast as an earlier one logs nothing.
REBUILT = "Reloading browsers"


class Server:
    def __init__(self, root: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "-a", f"127.0.0.1:{self.port}"],
            cwd=root,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        self.log: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.put(line)

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Read the server's log until a line holds `text`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise AssertionError(f"no {text!r} in the log:\n" + "".join(self.log))
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            self.log.append(line)
            if text in line:
                return

    def page(self, path: str = "database-locks/") -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/{path}", timeout=20) as r:
            assert r.status == 200
            return str(r.read().decode("utf-8"))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@contextlib.contextmanager
def serving(root: Path) -> Iterator[Server]:
    server = Server(root)
    try:
        yield server
    finally:
        server.stop()


def test_serve_keeps_the_last_good_page_and_shows_the_error(tmp_path: Path) -> None:
    root = write_project(tmp_path / "site", {**GOOD, "mkdocs.yml": MKDOCS_YML})
    assert run_cli("build", "--root", str(root)).code == 0
    write_project(root, BAD)  # a cycle: an unwaived error before the server even starts

    with serving(root) as server:
        server.wait_for("Serving on")
        log = "".join(server.log)
        assert "ERROR    -  lockdocs: 1 unwaived error finding(s)" in log
        assert "LD201" in log
        first = server.page()
        assert BANNER in first and "LD201" in first
        assert "Close a ledger" in first  # the committed page, served as it is

        write_project(root, GOOD)  # fixed: the next build has no banner
        for _ in range(3):  # one edit may come as several file events, so several builds
            server.wait_for(REBUILT)
            fixed = server.page()
            if BANNER not in fixed:
                break
        assert BANNER not in fixed and "Close a ledger" in fixed

        (root / "paths" / "money.yaml").write_text(
            BAD["paths/money.yaml"].replace("Close a ledger", "Close a ledger now"),
            encoding="utf-8",
        )
        server.wait_for("lockdocs: serving the last page that built")  # the failing build
        server.wait_for(REBUILT)
        started = time.monotonic()
        broken = server.page()
        assert time.monotonic() - started < 10, "a request must not wait for a fix"
        assert BANNER in broken and "LD201" in broken
        assert "Close a ledger now" not in broken  # the last page that built, not the new one
        assert server.proc.poll() is None


def test_serve_reloads_when_a_code_file_changes(tmp_path: Path) -> None:
    """`mkdocs serve` watches the files `code:` names: a locking statement added to one is
    checked at once, as an edit of the declarations is."""
    locks = GOOD["locks.yaml"] + 'code: ["db/*.sql"]\n'
    files = {**GOOD, "locks.yaml": locks, "db/queries.sql": "SELECT 1;\n", "mkdocs.yml": MKDOCS_YML}
    root = write_project(tmp_path / "site", files)
    assert run_cli("build", "--root", str(root)).code == 0
    with serving(root) as server:
        server.wait_for("Serving on")
        assert BANNER not in server.page()
        (root / "db" / "queries.sql").write_text(
            "-- name: LockOrphan :one\nSELECT id FROM app.orphans WHERE id = $1 FOR UPDATE;\n",
            encoding="utf-8",
        )
        server.wait_for("lockdocs: serving the last page that built")
        server.wait_for(REBUILT)
        page = server.page()
        assert BANNER in page and "LD702" in page
