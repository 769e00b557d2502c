"""Injection into the built site: link targets disguised with HTML entities or percent escapes,
and prose that would open an admonition, a details block or a fence. Checked in the filters,
in Python-Markdown with the site's extensions, and in a real Chromium that clicks the link."""

from __future__ import annotations

import html
import re
import shutil
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import markdown
import pytest
import yaml

from lockdocs.render.escape import Link, link, prose, safe_url, text
from test_browser import ARTIFACTS, _chromium, _mkdocs_build, _need_chromium, _serve

SITE_EXTENSIONS = [
    "tables",
    "attr_list",
    "md_in_html",
    "admonition",
    "def_list",
    "pymdownx.details",
    "pymdownx.superfences",
    "toc",
]

DISGUISED = [
    "javascript&#58;alert&#40;1&#41;",
    "javascript&colon;alert(1)",
    "&#x6A;avascript:alert(1)",
    "&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)",
    "javascript&amp;#58;alert(1)",
    "javascript%3Aalert(1)",
    "javascript%253Aalert(1)",
    "java&#x09;script:alert(1)",
    "java&#10;script:alert(1)",
    "&#0;javascript:alert(1)",
    "data&#58;text/html,<script>alert(1)</script>",
    "vbscript&#58;msgbox(1)",
    "rel/path.md",
    "//elsewhere.invalid/x",
    "#a&#x22;onmouseover=alert(1)",
]


def to_html(md: str) -> str:
    return markdown.markdown(md, extensions=SITE_EXTENSIONS)


@pytest.mark.parametrize("target", DISGUISED)
def test_a_disguised_target_is_not_a_link(target: str) -> None:
    if target.startswith("#"):  # an anchor stays one, with the quote encoded away
        out = safe_url(target)
        assert out is not None and '"' not in out and "&" not in out
        return
    assert safe_url(target) is None
    assert link(Link("click", target)) == "click"
    page = to_html(prose(f"See [click]({target}) now."))
    assert "href" not in page, page


@pytest.mark.parametrize(
    ("target", "written"),
    [
        ("https://tracker.invalid/issues/1?a=1&b=2", "https://tracker.invalid/issues/1?a=1&b=2"),
        ("https://tracker.invalid/a&amp;b", "https://tracker.invalid/a&b"),
        ("https&#58;//tracker.invalid/x", "https://tracker.invalid/x"),
        ("mailto:ops@tracker.invalid", "mailto:ops@tracker.invalid"),
        ("#lock-pool-row", "#lock-pool-row"),
    ],
)
def test_a_safe_target_is_written_decoded(target: str, written: str) -> None:
    assert safe_url(target) == written
    href = re.search(r'href="([^"]*)"', to_html(link(Link("x", target))))
    assert href is not None and html.unescape(href.group(1)) == written


@pytest.mark.parametrize(
    "line",
    [
        "!!! danger",
        '!!! note "Pwned"',
        "!!!note",
        "??? warning",
        "???+ info open",
        "~~~",
        '=== "Tab"',
        "::: lockdocs.api",
        ": definition",
    ],
)
def test_a_block_marker_at_a_line_start_stays_text(line: str) -> None:
    body = line + " and the rest"
    for rendered in (text(body), prose(body), prose(f"- {body}"), prose(f"first\n\n{body}")):
        page = to_html(rendered + "\n\nafter")
        assert "admonition" not in page and "<details" not in page, page
        assert "<pre" not in page and "<dl" not in page and "tabbed" not in page, page
        assert "after" in page
        shown = html.unescape(re.sub(r"<[^>]+>", "", page))
        assert body in shown, shown


# --- in a real browser: the built site, the link clicked ---------------------------------------

_INTRO = (
    "Read the [runbook](javascript&#58;window.__pwned&#61;1) and the "
    "[notes](javascript&colon;window.__pwned=2), issue #7.\n\n"
    '!!! danger "Injected"\n\n'
    '??? note "Injected details"'
)

_LOCKS: dict[str, Any] = {
    "lockdocs": 1,
    "page": {"title": "Disguised Links", "intro": _INTRO},
    "issues": "javascript&#58;window.__pwned&#61;{number}",
    "locks": {
        "gate": {
            "title": "Gate",
            "kind": "advisory",
            "key": {"hashtextextended": {"text": "disguised_gate"}},
            "modes": {"exclusive": "the writer"},
            "issues": [7],
        }
    },
}

_PATHS: dict[str, Any] = {
    "group": "Writers",
    "intro": "See [more](&#x6A;avascript:window.__pwned=3).",
    "paths": {"write": {"title": "Write", "steps": [{"take": "gate"}]}},
}


@pytest.fixture(scope="module")
def disguised_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    _need_chromium()
    project = tmp_path_factory.mktemp("disguised")
    (project / "paths").mkdir()
    (project / "docs").mkdir()
    (project / "locks.yaml").write_text(yaml.safe_dump(_LOCKS, sort_keys=False), "utf-8")
    (project / "paths" / "write.yaml").write_text(yaml.safe_dump(_PATHS, sort_keys=False), "utf-8")
    (project / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (project / "mkdocs.yml").write_text(
        textwrap.dedent(f"""\
        site_name: disguised
        theme: {{name: material, font: false}}
        plugins: [lockdocs]
        markdown_extensions: {SITE_EXTENSIONS}
        nav: [index.md, database-locks.md]
        """),
        encoding="utf-8",
    )
    site = project / "site"
    _mkdocs_build(project / "mkdocs.yml", site)
    yield site
    shutil.rmtree(project, ignore_errors=True)


@pytest.mark.slow
def test_disguised_links_do_not_run_in_chromium(disguised_site: Path) -> None:
    with _serve(disguised_site) as base, _chromium() as cdp:
        cdp.open(f"{base}/database-locks/", width=1280)
        state = cdp.evaluate(
            """(() => {
              const hrefs = [...document.querySelectorAll("article a[href]")]
                .map(a => a.href);
              for (const a of document.querySelectorAll("article a[href]")) {
                if (!a.href.startsWith(location.origin)) a.click();
              }
              // the page's own collapsible blocks are <details> too: count only injected ones
              const injected = [...document.querySelectorAll(
                  "article .admonition, article details")]
                .filter(el => /Injected/.test(
                  (el.querySelector("summary, .admonition-title") || el).textContent));
              return {hrefs, admonitions: injected.length,
                      text: document.querySelector("article").innerText};
            })()"""
        )
        time.sleep(0.3)
        pwned = cdp.evaluate("window.__pwned === undefined ? null : window.__pwned")
        cdp.screenshot(ARTIFACTS / "disguised-links.png")
    assert pwned is None
    page = (disguised_site / "database-locks" / "index.html").read_text(encoding="utf-8")
    assert "javascript" in page  # shown as text
    assert not re.search(r'href="[^"]*(javascript|&#)', page, re.IGNORECASE)
    assert not [h for h in state["hrefs"] if h.lower().startswith("javascript")], state["hrefs"]
    assert state["admonitions"] == 0
    assert "!!! danger" in state["text"] and "??? note" in state["text"]
    assert "runbook" in state["text"] and "#7" in state["text"]


# --- the MkDocs plugin: every lockdocs error is a PluginError with the same message ----------

_FIXTURE = Path(__file__).parent / "fixtures" / "render_project"


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("template", "LD601 error: template error: ZeroDivisionError"),
        ("symlink", "LD012 error: paths/secret.yaml is a symlink that leads outside"),
        ("tag", "LD001 error: cannot read this value as int"),
        ("paths-root", "LD012 error: paths: '/' is not a folder inside the project"),
        ("huge-int", "LD001 error: cannot read this value as int: it has more digits"),
    ],
)
def test_the_plugin_reports_lockdocs_errors_without_a_traceback(
    tmp_path: Path, case: str, words: str
) -> None:
    import os
    import subprocess
    import sys

    root = tmp_path / "site-project"
    shutil.copytree(_FIXTURE, root)
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "index.md").write_text("# Home\n")
    locks = root / "locks.yaml"
    if case == "template":
        (root / "templates").mkdir()
        (root / "templates" / "planned.md.j2").write_text("{{ 1/0 }}\n")
    elif case == "symlink":
        (tmp_path / "secret").write_text("TOP SECRET\n")
        (root / "paths" / "secret.yaml").symlink_to(tmp_path / "secret")
    elif case == "tag":
        locks.write_text(locks.read_text().replace("title: Shop Locks", "title: !!int abc"))
    elif case == "paths-root":
        locks.write_text(locks.read_text() + 'paths: "/"\n')
    else:
        locks.write_text(locks.read_text().replace("title: Shop Locks", "title: " + "9" * 5000))
    (root / "mkdocs.yml").write_text(
        "site_name: x\nplugins: [lockdocs]\nnav: [index.md, database-locks.md]\n"
    )
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env.pop("LOCKDOCS_DEBUG", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "-q",
            "-f",
            str(root / "mkdocs.yml"),
            "-d",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "Traceback" not in output and "internal error" not in output, output
    assert words in output, output
    assert "TOP SECRET" not in output
