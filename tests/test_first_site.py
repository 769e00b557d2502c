"""The site `lockdocs init` sets up, built with MkDocs and opened in a real headless Chromium:
every heading has its anchor (no `{#...}` shows), and every in-page link lands on an element."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from test_browser import ARTIFACTS, _chromium, _mkdocs_build, _need_chromium, _serve

pytestmark = pytest.mark.slow

ANCHORS = """
(() => {
  const article = document.querySelector("article") || document.body;
  const headings = [...article.querySelectorAll("h1, h2, h3, h4, h5, h6")];
  const local = [...article.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute("href"));
  const target = (href) => document.getElementById(decodeURIComponent(href.slice(1)));
  return {
    headings: headings.length,
    withoutId: headings.filter(h => !h.id).map(h => h.textContent),
    showingBraces: headings.filter(h => h.textContent.includes("{#")).map(h => h.textContent),
    textBraces: (article.innerText.match(/\\{#[a-z0-9-]+\\}/g) || []).length,
    links: local.length,
    broken: [...new Set(local.filter(h => h.length > 1 && !target(h)))],
    permalinks: article.querySelectorAll("a.headerlink").length,
  };
})()
"""


def test_the_scaffold_site_has_working_anchors(scaffold_site: Path) -> None:
    _need_chromium()
    with _serve(scaffold_site / "site") as base, _chromium() as cdp:
        cdp.open(f"{base}/database-locks/", width=1280)
        found: dict[str, Any] = cdp.evaluate(ANCHORS)
        cdp.screenshot(ARTIFACTS / "first-site.png")
        assert found["headings"] >= 5, found
        assert found["withoutId"] == [], found
        assert found["showingBraces"] == [] and found["textBraces"] == 0, found
        assert found["links"] >= 5, "the page links to its locks and paths"
        assert found["broken"] == [], found
        assert found["permalinks"] >= found["headings"] - 1, "toc permalinks on the headings"
        # the home page is there and links to the lock page
        cdp.open(f"{base}/", width=1280)
        assert cdp.evaluate(
            "[...document.querySelectorAll('article a')].some(a => a.href.endsWith('/database-locks/'))"
        )


def test_the_check_sees_broken_anchors_when_attr_list_is_off(tmp_path: Path) -> None:
    """The same page on a site without attr_list (and without the plugin, which would refuse
    it): the script above reports the braces and the broken links, so it can fail."""
    _need_chromium()
    root = tmp_path / "shop"
    assert run_cli("init", str(root)).code == 0
    config = root / "mkdocs.yml"
    text = config.read_text(encoding="utf-8")
    text = text.replace("  - attr_list", "  # - attr_list").replace("  - lockdocs\n", "")
    config.write_text(text, encoding="utf-8")
    site = tmp_path / "site"
    _mkdocs_build(config, site)
    with _serve(site) as base, _chromium() as cdp:
        cdp.open(f"{base}/database-locks/", width=1280)
        found: dict[str, Any] = cdp.evaluate(ANCHORS)
        assert found["showingBraces"] and found["broken"], found
