"""One site, three generators: MkDocs (with the lockdocs plugin), ProperDocs (the MkDocs 1.x
fork, which runs the plugin too) and Zensical (which ignores MkDocs plugins) each build the
repository's site strictly, and in a real headless Chromium each lock page has the same
anchors, the same diagrams (loaded) and the same text under every one of them.

Each generator builds once per session (the MkDocs site is shared with test_browser.py). The
page the plugin adds for examples/dstack exists for Zensical only because it is committed under
docs/examples/dstack/ (`make site` copies it); the first test keeps that copy current.
"""

from __future__ import annotations

import filecmp
import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, build_site
from test_browser import _chromium, _need_chromium, _serve

pytestmark = pytest.mark.slow

LOCK_PAGES = ("database-locks/", "examples/dstack/locking/")

# What a lock page is made of, read from the page's content (not the theme around it).
PAGE = """
(async () => {
  const article = document.querySelector("article");
  const imgs = [...article.querySelectorAll("img")];
  for (const img of imgs) { img.loading = "eager"; }
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return {
    anchors: [...article.querySelectorAll("[id]")].map(e => e.id).filter(i => !i.startsWith("__")),
    headings: [...article.querySelectorAll("h1, h2, h3, h4")].map(h => h.id),
    diagrams: imgs.map(i => new URL(i.src).pathname),
    unloaded: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
    links: [...article.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute("href")),
    broken: [...article.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute("href"))
      .filter(h => h.length > 1 && !document.getElementById(decodeURIComponent(h.slice(1)))),
    text: article.textContent.replace(/[\\u00b6]/g, "").replace(/\\s+/g, " ").trim(),
    braces: (article.textContent.match(/\\{#[a-z0-9-]+\\}/g) || []).length,
  };
})()
"""


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is not None:
        return
    if os.environ.get("CI"):
        pytest.fail(
            f"{module} is missing under CI: it is in the test extra (pip install -e '.[test]')"
        )
    pytest.skip(f"{module} is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="session")
def sites(
    repo_site: Path, site_source: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    _need("properdocs")
    _need("zensical")
    out = {"mkdocs": repo_site}
    for generator in ("properdocs", "zensical"):
        out[generator] = tmp_path_factory.mktemp(f"site-{generator}") / "site"
        build_site(generator, site_source, out[generator])
    return out


def test_the_committed_copy_of_the_example_page_is_current() -> None:
    copy, source = REPO / "docs" / "examples" / "dstack", REPO / "examples" / "dstack" / "docs"
    mine = sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file())
    theirs = sorted(
        p.relative_to(source).as_posix()
        for p in source.rglob("*")
        if p.is_file() and p.name != ".lockdocs-manifest"
    )
    assert mine == theirs, "run make site"
    _, mismatch, errors = filecmp.cmpfiles(copy, source, theirs, shallow=False)
    assert mismatch == [] and errors == [], f"run make site: {mismatch or errors}"


def test_each_lock_page_is_the_same_on_all_three(sites: dict[str, Path]) -> None:
    _need_chromium()
    seen: dict[str, dict[str, Any]] = {}
    with _chromium() as cdp:
        for generator, site in sites.items():
            with _serve(site) as base:
                for page in LOCK_PAGES:
                    cdp.open(f"{base}/{page}", width=1280)
                    seen[f"{generator} {page}"] = cdp.evaluate(PAGE)
    for page in LOCK_PAGES:
        mkdocs = seen[f"mkdocs {page}"]
        assert len(mkdocs["headings"]) >= 5 and all(mkdocs["headings"]), mkdocs["headings"]
        assert len(mkdocs["diagrams"]) >= 3 and mkdocs["unloaded"] == [], mkdocs["unloaded"]
        assert len(mkdocs["text"]) > 5000 and mkdocs["braces"] == 0
        assert mkdocs["links"] and mkdocs["broken"] == []
        for generator in ("properdocs", "zensical"):
            other = seen[f"{generator} {page}"]
            assert other["anchors"] == mkdocs["anchors"], (generator, page)
            assert other["diagrams"] == mkdocs["diagrams"], (generator, page)
            assert other["unloaded"] == [], (generator, page, other["unloaded"])
            assert other["broken"] == [], (generator, page, other["broken"])
            assert other["text"] == mkdocs["text"], (generator, page)
