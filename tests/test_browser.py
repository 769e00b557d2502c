"""The built lock page in a real headless Chromium: tables and diagrams visible, no script runs.

Chromium is driven over the DevTools protocol through a minimal WebSocket client written with
the standard library (no browser driver package). The site is served on 127.0.0.1 by a
ThreadingHTTPServer in this process. Screenshots go to test-artifacts/ (gitignored).

Skipped only when /usr/bin/chromium is absent and CI is not set; under CI a missing browser is a
failure (install it with `apt-get install -y chromium`).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from conftest import shared_folder

REPO = Path(__file__).resolve().parents[1]
# Beside the clone in CI (a worktree sits one folder deeper), never copied in.
REFERENCE = next(
    (
        up / "shared" / "reference"
        for up in (REPO.parent, REPO.parent.parent)
        if (up / "shared" / "reference").is_dir()
    ),
    REPO.parent / "shared" / "reference",
)
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.slow


def _need_chromium() -> None:
    if CHROMIUM.exists():
        return
    if os.environ.get("CI"):
        pytest.fail("/usr/bin/chromium is missing under CI: apt-get install -y chromium")
    pytest.skip("/usr/bin/chromium is not installed (apt-get install -y chromium)")


def _mkdocs_build(config: Path, site: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- a minimal WebSocket client (RFC 6455, client side, text frames) -----------------------------


class _WebSocket:
    def __init__(self, url: str, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        self.sock.sendall(
            (
                f"GET {parts.path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode("ascii")
        )
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the DevTools endpoint closed during the handshake")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"WebSocket handshake refused: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the DevTools connection closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytearray([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header.append(0x80 | n)
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes(header) + mask + masked)

    def send(self, text: str) -> None:
        self._send_frame(0x1, text.encode("utf-8"))

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            mask = self._read(4) if b1 & 0x80 else b""
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise ConnectionError("the DevTools endpoint closed the connection")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode in (0x1, 0x2, 0x0):
                message += payload
                if b0 & 0x80:
                    return message.decode("utf-8")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._send_frame(0x8, b"")
        self.sock.close()


class _Cdp:
    """Calls DevTools methods on one page; keeps the events that arrive meanwhile."""

    def __init__(self, ws: _WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, name: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev["method"] == name:
                    return self.events.pop(i)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {name} within {timeout}s")
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expression: str) -> Any:
        res = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in res:
            raise AssertionError(f"page script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def open(self, url: str, width: int, height: int = 900) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        deadline = time.monotonic() + 15
        ready = f"document.readyState === 'complete' && location.href === {json.dumps(url)}"
        while not self.evaluate(ready):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading")
            time.sleep(0.05)

    def screenshot(self, file: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(base64.b64decode(data))


@contextlib.contextmanager
def _serve(folder: Path) -> Iterator[str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Browser:
    """One headless Chromium for the whole test process, started at its first use and stopped
    when the process ends (a start costs about a second of CPU, and three on a loaded machine).
    Each `_chromium()` gets a page of its own in a browser context of its own (its own cookies,
    storage and cache, as a fresh profile has) and closes both after."""

    def __init__(self) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="lockdocs-chromium-"))
        self.proc = subprocess.Popen(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--disable-extensions",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.ws: _WebSocket | None = None
        try:
            port_file = self.profile / "DevToolsActivePort"
            deadline = time.monotonic() + 30
            while not (port_file.is_file() and port_file.read_text().count("\n") >= 1):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"chromium exited with {self.proc.returncode}")
                if time.monotonic() > deadline:
                    raise TimeoutError("chromium did not open its DevTools port")
                time.sleep(0.05)
            self.port = int(port_file.read_text().splitlines()[0])
            url = f"http://127.0.0.1:{self.port}/json/version"
            with urllib.request.urlopen(url, timeout=10) as resp:
                self.ws = _WebSocket(json.load(resp)["webSocketDebuggerUrl"])
            self.cdp = _Cdp(self.ws)  # the browser's own endpoint: contexts and targets
        except BaseException:
            self.stop()
            raise

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.ws is not None:
            self.ws.close()
            self.ws = None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    @contextlib.contextmanager
    def page(self) -> Iterator[_Cdp]:
        context = self.cdp.call("Target.createBrowserContext")["browserContextId"]
        ws: _WebSocket | None = None
        try:
            target = self.cdp.call(
                "Target.createTarget", url="about:blank", browserContextId=context
            )["targetId"]
            ws = _WebSocket(f"ws://127.0.0.1:{self.port}/devtools/page/{target}")
            cdp = _Cdp(ws)
            cdp.call("Page.enable")
            cdp.call("Runtime.enable")
            cdp.call("Network.enable")
            yield cdp
        finally:
            if ws is not None:
                ws.close()
            self.cdp.call("Target.disposeBrowserContext", browserContextId=context)
            self.cdp.events.clear()


_BROWSER: list[_Browser] = []  # this process's Chromium, once started


@contextlib.contextmanager
def _chromium() -> Iterator[_Cdp]:
    """A fresh page in this process's headless Chromium (started at the first call)."""
    if not (_BROWSER and _BROWSER[0].alive()):
        _BROWSER[:] = [_Browser()]
        atexit.register(_BROWSER[0].stop)
    with _BROWSER[0].page() as cdp:
        yield cdp


# --- what the page must show ---------------------------------------------------------------------

_LAYOUT = """
(async () => {
  const article = document.querySelector("article") || document.body;
  const box = (el) => { const r = el.getBoundingClientRect();
                        return {w: r.width, h: r.height}; };
  const visible = (el) => { const s = getComputedStyle(el); const b = box(el);
    return s.display !== "none" && s.visibility !== "hidden" && s.opacity !== "0"
           && b.w > 0 && b.h > 0; };
  // A diagram inside a closed collapsible block is not on screen until the block is opened.
  const imgs = [...article.querySelectorAll("img")].filter(i => /\\.svg($|[?#])/.test(i.src)
                                                               && !i.closest("details:not([open])"));
  for (const img of imgs) { img.loading = "eager"; img.scrollIntoView(); }
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  window.scrollTo(0, 0);
  const svgs = [...article.querySelectorAll("svg")].filter(s => s.querySelector("g.node, g.edge"));
  const tables = [...article.querySelectorAll("table")];
  return {
    title: document.title,
    tables: tables.length,
    tablesVisible: tables.filter(visible).length,
    tableRows: tables.reduce((n, t) => n + t.querySelectorAll("tbody tr").length, 0),
    images: imgs.map(i => ({src: i.getAttribute("src"), loaded: i.complete && i.naturalWidth > 0,
                            visible: visible(i), w: box(i).w, h: box(i).h})),
    inlineSvgs: svgs.length,
    inlineSvgsVisible: svgs.filter(visible).length,
    pageWidth: document.documentElement.scrollWidth,
    viewport: window.innerWidth,
  };
})()
"""


_SHOW_FIRST_DIAGRAM = """
(() => { const d = [...document.querySelectorAll("article img")].find(i => /\\.svg/.test(i.src));
         if (d) d.scrollIntoView(); })()
"""


def test_lock_page_shows_tables_and_diagrams(repo_site: Path) -> None:
    _need_chromium()
    started = time.monotonic()
    page = repo_site / "database-locks" / "index.html"
    assert page.is_file()
    with _serve(repo_site) as base, _chromium() as cdp:
        url = f"{base}/database-locks/"
        cdp.open(url, width=1280)
        layout = cdp.evaluate(_LAYOUT)
        cdp.screenshot(ARTIFACTS / "lock-page.png")
        # The first diagram, scrolled into view, for a look at how it renders.
        cdp.evaluate(_SHOW_FIRST_DIAGRAM)
        cdp.screenshot(ARTIFACTS / "lock-page-diagram.png")

        cdp.open(url, width=400)
        narrow = cdp.evaluate(_LAYOUT)
        cdp.screenshot(ARTIFACTS / "lock-page-narrow.png")

        # The dark scheme (the palette follows the system's preference on a first visit).
        cdp.call(
            "Emulation.setEmulatedMedia",
            features=[{"name": "prefers-color-scheme", "value": "dark"}],
        )
        # Material remembers the scheme of the last visit: forget it, as for a first visit.
        cdp.open("about:blank", width=1280)
        cdp.call("Storage.clearDataForOrigin", origin=base, storageTypes="local_storage")
        cdp.open(url, width=1280)
        # Material's palette follows the media query a moment after the load (an observer of
        # it): on a busy machine the first look could come first, so look until it has.
        scheme = ""
        until = time.monotonic() + 10
        while scheme != "slate" and time.monotonic() < until:
            scheme = cdp.evaluate("document.body.getAttribute('data-md-color-scheme')")
            time.sleep(0.05)
        dark = cdp.evaluate(_LAYOUT)
        cdp.evaluate(_SHOW_FIRST_DIAGRAM)
        cdp.screenshot(ARTIFACTS / "lock-page-dark.png")

        requests = [
            ev["params"]["request"]["url"]
            for ev in cdp.events
            if ev["method"] == "Network.requestWillBeSent"
        ]
        exceptions = [
            ev["params"] for ev in cdp.events if ev["method"] == "Runtime.exceptionThrown"
        ]
    elapsed = time.monotonic() - started

    assert scheme == "slate", scheme
    for view in (layout, narrow, dark):
        assert view["tables"] >= 2, view
        assert view["tablesVisible"] == view["tables"], view
        assert view["tableRows"] >= 4, view
        diagrams = len(view["images"]) + view["inlineSvgs"]
        assert diagrams >= 2, view
        for img in view["images"]:
            assert img["loaded"], f"diagram did not load: {img}"
            assert img["visible"], f"diagram not visible: {img}"
        assert view["inlineSvgsVisible"] == view["inlineSvgs"], view
    # At 400px nothing pushes the page itself sideways: wide tables scroll in their own box.
    assert narrow["pageWidth"] <= narrow["viewport"] + 1, narrow
    # No request leaves the machine: no web fonts, no CDN scripts.
    outside = [u for u in requests if not u.startswith((base, "data:", "blob:", "about:"))]
    assert not outside, outside
    assert not exceptions, exceptions
    assert elapsed < 120


# --- a script in a declaration must not run ------------------------------------------------------

_PAYLOAD = '<script>window.__pwned = 1; document.title = "pwned";</script>'
_PAYLOAD_ATTR = '<img src="x" onerror="window.__pwned = 2; document.title = \'pwned\'">'

_HOSTILE_LOCKS: dict[str, Any] = {
    "lockdocs": 1,
    "page": {
        "title": "Hostile Locks",
        "summary": f"A page whose declarations carry markup {_PAYLOAD}",
    },
    "locks": {
        "ledger": {
            "title": "Ledger row",
            "kind": "row",
            "table": "app.ledgers",
            "row": "one ledger",
            "modes": {"for no key update": f"every writer {_PAYLOAD_ATTR}"},
            "serializes": f"Postings to one ledger. {_PAYLOAD}",
            "notes": f"More notes {_PAYLOAD_ATTR} and {_PAYLOAD}",
        },
        "gate": {
            "title": "Gate",
            "kind": "advisory",
            "key": {"hashtextextended": {"text": "hostile_gate"}},
            "modes": {"exclusive": f"the writer {_PAYLOAD}"},
            "serializes": f"Everything {_PAYLOAD_ATTR}",
        },
    },
}

_HOSTILE_PATHS: dict[str, Any] = {
    "group": f"Postings {_PAYLOAD}",
    "paths": {
        "post": {
            "title": "Post an entry",
            "summary": f"Posts one entry. {_PAYLOAD}",
            "steps": [
                {"take": "gate", "note": f"first {_PAYLOAD_ATTR}"},
                {"take": "ledger", "via": "LockLedger", "note": f"then {_PAYLOAD}"},
            ],
        }
    },
}


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _need_chromium()
    project = tmp_path_factory.mktemp("hostile")
    (project / "paths").mkdir()
    (project / "docs").mkdir()
    (project / "locks.yaml").write_text(
        yaml.safe_dump(_HOSTILE_LOCKS, sort_keys=False), encoding="utf-8"
    )
    (project / "paths" / "post.yaml").write_text(
        yaml.safe_dump(_HOSTILE_PATHS, sort_keys=False), encoding="utf-8"
    )
    (project / "docs" / "index.md").write_text(
        "# Hostile\n\nSee [the locks](database-locks.md).\n", encoding="utf-8"
    )
    (project / "mkdocs.yml").write_text(
        textwrap.dedent("""\
        site_name: hostile
        theme: {name: material, font: false}
        plugins: [lockdocs]
        markdown_extensions: [tables, attr_list, md_in_html, admonition, pymdownx.details,
                              pymdownx.superfences, toc]
        nav:
          - index.md
          - database-locks.md
        """),
        encoding="utf-8",
    )
    site = project / "site"
    _mkdocs_build(project / "mkdocs.yml", site)
    return site


def test_markup_in_declarations_does_not_run(hostile_site: Path) -> None:
    html = (hostile_site / "database-locks" / "index.html").read_text(encoding="utf-8")
    assert "window.__pwned" in html  # the text is on the page, as text
    with _serve(hostile_site) as base, _chromium() as cdp:
        cdp.open(f"{base}/database-locks/", width=1280)
        time.sleep(0.3)  # let a failing <img> fire its onerror, if it were live
        state = cdp.evaluate(
            "({pwned: window.__pwned === undefined ? null : window.__pwned,"
            " title: document.title, text: document.body.innerText})"
        )
        cdp.screenshot(ARTIFACTS / "hostile-page.png")
    assert state["pwned"] is None, state["pwned"]
    assert "pwned" not in state["title"]
    assert "<script>" in state["text"]  # shown to the reader as text


# --- the page a reader wants: as short as the hand-written one, every fact, diagrams at 100% ----

_MEASURE = """
(async () => {
  const article = document.querySelector("article") || document.body;
  const imgs = [...article.querySelectorAll("img")];
  for (const img of imgs) img.loading = "eager";
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return {height: document.documentElement.scrollHeight,
          words: article.innerText.split(/\\s+/).filter(Boolean).length};
})()
"""

_OPENED = """
(async () => {
  const article = document.querySelector("article");
  article.querySelectorAll("details").forEach(d => { d.open = true; });
  const imgs = [...article.querySelectorAll("img")].filter(i => /\\.svg($|[?#])/.test(i.src));
  for (const img of imgs) img.loading = "eager";
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  const paths = [...article.querySelectorAll('[id^="path-"]')].map(a => {
    const block = a.closest("details");
    const lists = block ? [...block.children].filter(c => c.tagName === "OL" || c.tagName === "UL")
                        : [];
    return {id: a.id, inBlock: !!block, lists: lists.map(l => l.tagName)};
  });
  return {
    paths,
    diagrams: imgs.map(i => ({src: i.getAttribute("src"), shown: i.getBoundingClientRect().width,
                             natural: i.naturalWidth})),
    text: article.textContent.replace(/\\s+/g, " "),
  };
})()
"""


def _reference_identifiers() -> list[str]:
    """The names a reader looks for: code identifiers, dotted and slashed names, SQL states
    and issue numbers of the hand-written page (its first line is its own file name)."""
    import re

    text = (REFERENCE / "member-console-database-locks.md").read_text(encoding="utf-8")
    body = text.split("\n", 1)[1]
    pattern = re.compile(
        r"#\d+|\b\d{2}P\d{2}\b|[*]?[A-Za-z_][\w]*(?:[./][\w*]+)+"
        r"|\b[A-Za-z]*_[\w]+|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z0-9]+[A-Z]\w*"
    )
    return sorted({m.group(0).strip(".") for m in pattern.finditer(body)})


@pytest.fixture(scope="session")
def reference_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-written page, rendered in this site's theme (the same Material settings and
    stylesheet) for the comparison; built once per run in a temporary folder (this module and
    test_reader_tasks.py read it)."""
    _need_chromium()
    page = REFERENCE / "member-console-page-site" / "docs" / "index.md"
    if not page.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{page} is missing under CI (../shared beside the clone)")
        pytest.skip(f"{page} is not here")

    def build(project: Path) -> None:
        (project / "docs" / "stylesheets").mkdir(parents=True)
        shutil.copyfile(page, project / "docs" / "index.md")
        shutil.copyfile(
            REPO / "docs" / "stylesheets" / "lockdocs.css",
            project / "docs" / "stylesheets" / "lockdocs.css",
        )
        config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
        for key in ("nav", "validation"):
            config.pop(key, None)
        config.update(site_name="reference", plugins=["search"])
        (project / "mkdocs.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        _mkdocs_build(project / "mkdocs.yml", project / "site")

    return shared_folder(tmp_path_factory, "reference-site", build) / "site"


def test_the_lock_page_is_as_short_as_the_hand_written_one_and_keeps_every_fact(
    repo_site: Path, reference_site: Path
) -> None:
    with _serve(reference_site) as base, _chromium() as cdp:
        cdp.open(f"{base}/", width=1400, height=2000)
        reference = cdp.evaluate(_MEASURE)
    with _serve(repo_site) as base, _chromium() as cdp:
        url = f"{base}/database-locks/"
        cdp.open(url, width=1400, height=2000)
        closed = cdp.evaluate(_MEASURE)
        cdp.screenshot(ARTIFACTS / "lock-page-1400.png")
        opened = cdp.evaluate(_OPENED)
        # A link to a lock opens the collapsed block it sits in (Material does, on the target).
        cdp.open("about:blank", width=1400, height=2000)
        cdp.open(f"{base}/database-locks/#lock-pool-row", width=1400, height=2000)
        time.sleep(0.3)
        target = cdp.evaluate(
            "(() => { const t = document.getElementById('lock-pool-row');"
            " const r = t.getBoundingClientRect();"
            " return {open: t.closest('details').open, top: r.top}; })()"
        )
    ratio = closed["height"] / reference["height"]
    print(
        f"\nlock page {closed['height']} px, {closed['words']} words; hand-written "
        f"{reference['height']} px, {reference['words']} words; ratio {ratio:.2f}"
    )
    assert ratio <= 1.5, (closed, reference)

    assert len(opened["paths"]) >= 30, "every path has its anchor"
    for p in opened["paths"]:
        assert p["inBlock"], p
        assert p["lists"] and p["lists"][0] == "OL", f"{p['id']}: steps are not an ordered list"

    assert len(opened["diagrams"]) >= 30
    for d in opened["diagrams"]:
        assert d["natural"] > 0, d
        assert d["shown"] >= 0.9 * d["natural"] - 1, f"{d['src']} shown below 90%: {d}"

    missing = [name for name in _reference_identifiers() if name not in opened["text"]]
    assert not missing, missing

    assert target["open"], "a link to a lock opens its block"
    assert 0 <= target["top"] < 2000, target
