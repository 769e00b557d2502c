"""The MkDocs site: a real `mkdocs build --strict` of this repository, and the plugin's behaviour
on small fixture projects (regenerates in memory, refuses bad declarations, watches the YAML)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import lockdocs_process

REPO = Path(__file__).resolve().parents[1]


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


# --- the repository's own site -------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(repo_site: Path) -> Path:
    """The repository's site: `mkdocs build --strict` of its mkdocs.yml, built once per run
    (tests/conftest.py's repo_site, which the browser tests read too)."""
    return repo_site


def _lock_page_checks(page: Path) -> str:
    assert page.is_file(), page
    html = page.read_text(encoding="utf-8")
    assert html.count("<table>") >= 2
    assert re.search(r"<tbody>\s*<tr>", html)
    images = re.findall(r'<img[^>]+src="([^"]+\.svg)"', html)
    inline = re.findall(r"<svg\b", html)
    assert len(images) + len(inline) >= 2, "the order diagrams are missing"
    for src in images:
        target = (page.parent / src).resolve()
        assert target.is_file(), f"diagram {src} is not in the site"
        assert target.read_text(encoding="utf-8").lstrip().startswith(("<?xml", "<svg", "<!--"))
    return html


@pytest.mark.slow
def test_flagship_lock_page_is_built_with_tables_and_diagrams(site: Path) -> None:
    html = _lock_page_checks(site / "database-locks" / "index.html")
    assert "Database Locks" in html
    assert "headerlink" in html  # permalinks on headings
    assert 'class="lockdocs-diagram"' in html  # each diagram links to itself at full size
    assert 'data-md-type="navigation" hidden' in html  # the wide page hides the sidebar


@pytest.mark.slow
def test_example_project_page_is_published_under_its_folder(site: Path) -> None:
    example = REPO / "examples" / "dstack" / "locks.yaml"
    output = yaml.safe_load(example.read_text(encoding="utf-8"))["page"].get("output")
    stem = (output or "database-locks.md").removesuffix(".md")
    _lock_page_checks(site / "examples" / "dstack" / stem / "index.html")


@pytest.mark.slow
def test_every_nav_page_is_built(site: Path) -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(nav: Any) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, list):
            return [p for item in nav for p in pages(item)]
        if isinstance(nav, dict):
            return [p for value in nav.values() for p in pages(value)]
        return []

    for src in pages(config["nav"]):
        stem = src.removesuffix(".md")
        out = site / "index.html" if stem == "index" else site / stem / "index.html"
        assert out.is_file(), src
    for ref in ("format", "rules", "cli"):
        assert (site / "reference" / ref / "index.html").is_file()
    assert (site / "search" / "search_index.json").is_file()


@pytest.mark.slow
def test_site_makes_no_request_to_another_host(site: Path) -> None:
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page
        for tag, attr in re.findall(r"<(script|link)\b([^>]*)>", html):
            m = re.search(r'(?:src|href)="(https?:)?//', attr)
            if m and tag == "script":
                raise AssertionError(f"{page}: external script {attr}")
            if m and 'rel="stylesheet"' in attr:
                raise AssertionError(f"{page}: external stylesheet {attr}")


# --- the plugin, on fixture projects -------------------------------------------------------------

LOCKS = """\
lockdocs: 1
page: {title: Fixture Locks, summary: A small project for the plugin tests.}
locks:
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for no key update: every writer}
    serializes: Postings to one ledger.
  budget:
    title: Budget row
    kind: row
    table: app.budgets
    modes: {for no key update: every writer}
"""

PATHS = """\
group: Postings
paths:
  post:
    title: Post an entry
    steps:
      - take: ledger
      - take: budget
"""

# Takes the two locks the other way round: a deadlock cycle with `post` (LD201).
REVERSED = """\
group: Budgets
paths:
  close:
    title: Close a budget
    steps:
      - take: budget
      - take: ledger
"""


def _project(
    root: Path,
    *,
    locks: str = LOCKS,
    paths: dict[str, str] | None = None,
    plugin: str = "lockdocs",
    nav_extra: str = "",
    extensions: str = "[tables, attr_list, md_in_html, admonition, pymdownx.details,\n"
    "                              pymdownx.superfences, toc]",
) -> Path:
    (root / "paths").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "locks.yaml").write_text(locks, encoding="utf-8")
    for name, text in (paths or {"post.yaml": PATHS}).items():
        (root / "paths" / name).write_text(text, encoding="utf-8")
    (root / "docs" / "index.md").write_text("# Fixture\n", encoding="utf-8")
    (root / "mkdocs.yml").write_text(
        textwrap.dedent(f"""\
        site_name: fixture
        theme: {{name: material, font: false}}
        plugins:
          - {plugin}
        markdown_extensions: {extensions}
        nav:
          - index.md
          - database-locks.md
        """)
        + nav_extra,
        encoding="utf-8",
    )
    return root / "mkdocs.yml"


@pytest.mark.slow
def test_plugin_serves_the_page_from_the_current_declarations(tmp_path: Path) -> None:
    config = _project(tmp_path)
    # A stale committed copy: the plugin must replace it in memory, without writing docs/.
    (tmp_path / "docs" / "database-locks.md").write_text("# STALE COPY\n", encoding="utf-8")
    proc = _mkdocs_build(config, tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = (tmp_path / "site" / "database-locks" / "index.html").read_text(encoding="utf-8")
    assert "STALE COPY" not in html
    assert "Ledger row" in html and "Post an entry" in html
    assert (tmp_path / "docs" / "database-locks.md").read_text(encoding="utf-8") == "# STALE COPY\n"
    # An edit to the YAML shows up at the next build.
    locks = tmp_path / "locks.yaml"
    locks.write_text(LOCKS.replace("Ledger row", "Journal row"), encoding="utf-8")
    proc = _mkdocs_build(config, tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    html = (tmp_path / "site" / "database-locks" / "index.html").read_text(encoding="utf-8")
    assert "Journal row" in html and "Ledger row" not in html


@pytest.mark.slow
def test_plugin_refuses_a_site_without_attr_list(tmp_path: Path) -> None:
    """Without attr_list MkDocs builds, strict or not, and every heading shows {#...}: the
    plugin stops the build and says what to add."""
    config = _project(tmp_path, extensions="[tables, toc, admonition, pymdownx.details]")
    proc = _mkdocs_build(config, tmp_path / "site")
    assert proc.returncode != 0
    assert (
        "lockdocs: the lock page database-locks.md needs the Markdown extension attr_list, "
        "which mkdocs.yml does not enable; add it:\n"
        "  markdown_extensions:\n"
        "    - attr_list   # heading anchors such as {#lock-...}\n"
    ) in proc.stderr
    # without the plugin the same site builds strict, with broken anchors: what the check guards
    plain = _project(
        tmp_path / "plain",
        extensions="[tables, toc, admonition, pymdownx.details]",
        plugin="search",
    )
    built = lockdocs_process("build", "--root", str(tmp_path / "plain"), cwd=REPO)
    assert built.returncode == 0, built.stderr
    proc = _mkdocs_build(plain, tmp_path / "plain-site")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "plain-site" / "database-locks" / "index.html").read_text(encoding="utf-8")
    assert "{#lock-" in html


@pytest.mark.slow
def test_plugin_refuses_invalid_declarations(tmp_path: Path) -> None:
    config = _project(
        tmp_path,
        locks=LOCKS.replace(
            "kind: row\n    table: app.budgets", "kind: rowz\n    table: app.budgets"
        ),
    )
    proc = _mkdocs_build(config, tmp_path / "site")
    assert proc.returncode != 0
    assert "declarations of the site's project are not valid" in proc.stderr
    assert "locks.yaml:" in proc.stderr and "LD003" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_plugin_refuses_unwaived_error_findings(tmp_path: Path) -> None:
    config = _project(tmp_path, paths={"post.yaml": PATHS, "budgets.yaml": REVERSED})
    proc = _mkdocs_build(config, tmp_path / "site")
    assert proc.returncode != 0
    assert "unwaived error finding" in proc.stderr
    assert "LD201" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_plugin_publishes_extra_projects_with_svg(tmp_path: Path) -> None:
    config = _project(
        tmp_path,
        plugin="lockdocs: {projects: [more/other]}",
        nav_extra="  - more/other/database-locks.md\n",
    )
    _project(tmp_path / "more" / "other", locks=LOCKS.replace("Fixture Locks", "Other Locks"))
    proc = _mkdocs_build(config, tmp_path / "site")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = tmp_path / "site" / "more" / "other" / "database-locks" / "index.html"
    html = _lock_page_checks_loose(page)
    assert "Other Locks" in html
    assert not (tmp_path / "more" / "other" / "docs" / "database-locks.md").exists()


def _lock_page_checks_loose(page: Path) -> str:
    """A one-path fixture has fewer tables; its diagrams must still be in the site."""
    assert page.is_file(), page
    html = page.read_text(encoding="utf-8")
    assert "<table>" in html
    for src in re.findall(r'<img[^>]+src="([^"]+\.svg)"', html):
        assert (page.parent / src).resolve().is_file(), src
    return html


def test_plugin_watches_the_declarations_under_serve(tmp_path: Path) -> None:
    from mkdocs.config import load_config

    from lockdocs.mkdocs_plugin import LockdocsPlugin

    config_file = _project(tmp_path)
    (tmp_path / "templates").mkdir()
    config = load_config(str(config_file))
    config = config.plugins.on_config(config)
    plugin = config.plugins["lockdocs"]
    assert isinstance(plugin, LockdocsPlugin)

    class Server:
        def __init__(self) -> None:
            self.watched: list[str] = []

        def watch(self, path: str, recursive: bool = True) -> None:  # LiveReloadServer's
            self.watched.append(path)

    server = Server()
    plugin.on_serve(server, config=config, builder=lambda: None)  # type: ignore[arg-type]
    watched = {Path(p) for p in server.watched}
    assert tmp_path / "locks.yaml" in watched
    assert tmp_path / "paths" in watched
    assert tmp_path / "templates" in watched


def test_plugin_rejects_a_project_outside_the_site(tmp_path: Path) -> None:
    from mkdocs.config import load_config
    from mkdocs.exceptions import PluginError

    config_file = _project(tmp_path, plugin="lockdocs: {projects: [../elsewhere]}")
    config = load_config(str(config_file))
    with pytest.raises(PluginError, match=r"must be a folder below mkdocs\.yml"):
        config.plugins.on_config(config)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_log(folder: Path) -> str:
    return (folder / "serve.log").read_text(encoding="utf-8", errors="replace")


@pytest.mark.slow
def test_mkdocs_serve_reloads_on_an_edit_to_the_declarations(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    config = _project(tmp_path)
    port = _free_port()
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    log = (tmp_path / "serve.log").open("w", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "-f", str(config), "-a", f"127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}/database-locks/"

    def page_has(text: str, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    if text in resp.read().decode("utf-8"):
                        return True
            except (urllib.error.URLError, ConnectionError):
                pass
            if proc.poll() is not None:
                return False
            time.sleep(0.2)
        return False

    try:
        served = page_has("Ledger row")
        assert served, "mkdocs serve did not serve the lock page\n" + _read_log(tmp_path)
        (tmp_path / "locks.yaml").write_text(
            LOCKS.replace("Ledger row", "Journal row"), encoding="utf-8"
        )
        rebuilt = page_has("Journal row")
        assert rebuilt, "an edit to locks.yaml did not rebuild the page\n" + _read_log(tmp_path)
        (tmp_path / "paths" / "post.yaml").write_text(
            PATHS.replace("Post an entry", "Book an entry"), encoding="utf-8"
        )
        rebuilt = page_has("Book an entry")
        assert rebuilt, "an edit under paths/ did not rebuild the page\n" + _read_log(tmp_path)
        assert not (tmp_path / "docs" / "database-locks.md").exists()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _blocks(markdown: str) -> dict[str, str]:
    """Fenced blocks with a title="..." in a Markdown page: title -> text."""
    found = re.findall(r'```\w+ title="([^"]+)"\n(.*?)\n```', markdown, flags=re.DOTALL)
    return {title: text + "\n" for title, text in found}


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return lockdocs_process("check", "--no-drift", "--root", str(root), cwd=REPO)


def test_home_page_example_is_valid_and_its_finding_is_quoted_as_printed(tmp_path: Path) -> None:
    page = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    blocks = _blocks(page)
    (tmp_path / "paths").mkdir()
    for name in ("locks.yaml", "paths/postings.yaml"):
        (tmp_path / name).write_text(blocks[name], encoding="utf-8")
    clean = _check(tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.startswith("0 errors, 0 warnings"), clean.stdout
    assert "3261662642813426370" in page
    export = lockdocs_process("export", "--root", str(tmp_path), cwd=REPO)
    export.check_returncode()
    assert '"value": 3261662642813426370' in export.stdout

    # The pull request the page describes: a budget lock, taken after the accounts by
    # `transfer` and before an account by a new path.
    locks = blocks["locks.yaml"].replace(
        "\nrules:",
        "  budget:\n    title: Budget row\n    kind: row\n    table: ledger.budgets\n"
        "    modes: {for no key update: postings and budget changes}\n\nrules:",
    )
    (tmp_path / "locks.yaml").write_text(locks, encoding="utf-8")
    (tmp_path / "paths" / "postings.yaml").write_text(
        blocks["paths/postings.yaml"] + "      - take: budget\n", encoding="utf-8"
    )
    (tmp_path / "paths" / "budgets.yaml").write_text(blocks["paths/budgets.yaml"], "utf-8")
    found = _check(tmp_path)
    assert found.returncode == 1, found.stdout + found.stderr
    quoted = page.split("$ lockdocs check\n", 1)[1].split("```", 1)[0]
    assert found.stdout == quoted
