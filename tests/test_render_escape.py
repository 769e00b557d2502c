"""Escaping: no declared text becomes markup, in the filters and in a real rendered page.

The page is rendered by the real CLI, converted to HTML with Python-Markdown and the site's
extensions (as MkDocs does), and its SVG is drawn by the real `dot`.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import markdown
import pytest
import yaml

from conftest import run_cli, write_project
from lockdocs.render.escape import (
    Link,
    anchor,
    cell,
    code,
    dot_str,
    link,
    para,
    safe_url,
    slug,
    text,
    yaml_str,
)

EVIL = "a | b `c` <script>alert(1)</script> {{ 7*7 }} [x](javascript:alert(1)) _u_ *s* {onclick=alert(1)}"
EXTENSIONS = [
    "tables",
    "attr_list",
    "toc",
    "md_in_html",
    "def_list",
    "admonition",
    "pymdownx.details",
]


def to_html(md: str) -> str:
    return markdown.markdown(md, extensions=EXTENSIONS)


def inner_text(fragment: str) -> str:
    """The text a reader sees: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


# --- the filters -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        EVIL,
        "# not a heading",
        "- not a list",
        "1. not a list",
        ": not a definition",
        "<!-- not a comment -->",
        "&lt; stays an entity's text",
        "back\\slash and `` double `` ticks",
        "![img](http://x/y.png)",
        "<https://autolink.invalid>",
    ],
)
def test_text_renders_as_the_literal_string(value: str) -> None:
    out = to_html(text(value))
    assert out.startswith("<p>") and out.endswith("</p>")
    assert inner_text(out[3:-4]) == value
    assert "<script" not in out and "href=" not in out and "<img" not in out
    assert 'onclick="' not in out and "<em>" not in out


def test_identifiers_keep_readable_underscores() -> None:
    assert text("pool_id and core.resource_pools") == "pool_id and core.resource_pools"
    assert text("_private_") == "\\_private\\_"


def test_para_keeps_paragraphs_and_guards_each() -> None:
    out = para("first\nline\n\n# second\n\n\n- third")
    assert out == "first line.\n\n\\# second.\n\n\\- third."
    assert to_html(out).count("<p>") == 3


def test_cell_never_splits_a_table_row_and_is_never_empty() -> None:
    row = f"| {cell(EVIL)} | {code('a|b')} | {cell(None)} |"
    out = to_html("| A | B | C |\n|---|---|---|\n" + row)
    cells = re.findall(r"<td>(.*?)</td>", out)
    assert len(cells) == 3
    assert inner_text(cells[0]) == EVIL
    assert inner_text(cells[1]) == "a|b"
    assert cells[2] == "—"


@pytest.mark.parametrize("value", ["plain", "a`b", "``x``", "`lead", "<script>", "{{ x }}", "a|b"])
def test_code_spans_show_the_value(value: str) -> None:
    out = to_html(code(value))
    found = re.search(r"<code>(.*?)</code>", out)
    assert found is not None
    assert html.unescape(found.group(1)).strip() == value
    assert "<script" not in out


def test_links_only_to_safe_targets() -> None:
    assert link(Link("#12", "https://tracker.invalid/issues/12")) == (
        "[\\#12](https://tracker.invalid/issues/12)"
    )
    assert link(Link("x", "javascript:alert(1)")) == "x"
    assert link(Link("x", "JaVaScRiPt:alert(1)")) == "x"
    assert link(Link("x", "data:text/html,hi")) == "x"
    assert link(Link("[a](b)", None)) == "\\[a\\](b)"
    assert safe_url("https://h.invalid/a b") is None
    assert safe_url("https://h.invalid/a(b)<c>") == "https://h.invalid/a%28b%29%3Cc%3E"
    assert safe_url("#lock-a") == "#lock-a"


def test_front_matter_value_reads_back() -> None:
    value = 'Title: "quoted" \\ and\nnewline # not a comment'
    assert yaml.safe_load("t: " + yaml_str(value))["t"] == value


def test_dot_strings_are_literal() -> None:
    assert dot_str('a "b" \\N & c') == '"a \\"b\\" \\\\N &amp; c"'


def test_slug_and_anchor() -> None:
    assert slug("Tier add, removal & reorder") == "tier-add-removal-reorder"
    assert slug("Ünïcode") == "unicode"
    assert slug("!!!") == "item"
    assert anchor("lock-pool-row") == "{#lock-pool-row}"
    assert anchor("x} {onclick=1") == "{#x-onclick-1}"


# --- a whole page with hostile declarations ----------------------------------------------------

LOCKS = f"""\
lockdocs: 1
page:
  title: {yaml_str(EVIL)}
  summary: {yaml_str(EVIL)}
  intro: {yaml_str(EVIL)}
issues: "javascript:alert(1)//{{number}}"
locks:
  evil:
    title: {yaml_str(EVIL)}
    kind: advisory
    key: {{hashtextextended: {{text: {yaml_str(EVIL)}}}}}
    modes: {{exclusive: {yaml_str(EVIL)}}}
    taken_by:
      - {{name: {yaml_str(EVIL)}, via: [{yaml_str(EVIL)}], note: {yaml_str(EVIL)}}}
    serializes: {yaml_str(EVIL)}
    notes: {yaml_str(EVIL)}
    issues: [3]
  row:
    title: Plain row
    kind: row
    table: {yaml_str(EVIL)}
    row: {yaml_str(EVIL)}
    modes: {{for update: writers}}
"""

PATHS = f"""\
group: {yaml_str(EVIL)}
intro: {yaml_str(EVIL)}
paths:
  p:
    title: {yaml_str(EVIL)}
    entry: {yaml_str(EVIL)}
    summary: {yaml_str(EVIL)}
    steps:
      - take: evil
        via: {yaml_str(EVIL)}
        note: {yaml_str(EVIL)}
      - take: row
      - external: {yaml_str(EVIL)}
      - commit
"""


def test_every_text_field_of_a_lock_is_hostile_in_the_fixture() -> None:
    """A new text field (model.locks.AS_DECLARED) is shown on the page as it is written: this
    page must carry the hostile string in it, or its escaping goes untested."""
    from lockdocs import model as m

    locks = yaml.safe_load(LOCKS)["locks"]
    hostile = {k for lock in locks.values() for k, v in lock.items() if v == EVIL}
    assert set(m.as_declared(m.Lock)) <= hostile


@pytest.fixture(scope="module")
def evil_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_project(
        tmp_path_factory.mktemp("evil"), {"locks.yaml": LOCKS, "paths/evil.yaml": PATHS}
    )
    result = run_cli("build", "--root", str(root))
    assert result.code == 0, result.out + result.err
    return root


def test_hostile_text_renders_inert(evil_build: Path) -> None:
    md = (evil_build / "docs" / "database-locks.md").read_text(encoding="utf-8")
    page = to_html(md.split("---\n", 2)[2])
    assert "{{ 7*7 }}" in inner_text(page)  # data is never rendered as a template
    assert not re.search(r"<script", page, re.IGNORECASE)
    assert not re.search(r"""(href|src)=["']?\s*javascript:""", page, re.IGNORECASE)
    assert not re.search(r"\sonclick=", page)
    assert "49" not in inner_text(page).replace("1936", "")
    heading = re.search(r'<h4 id="lock-evil">(.*?)</h4>', page)
    assert heading is not None and inner_text(heading.group(1)) == EVIL
    h1 = re.search(r"<h1[^>]*>(.*?)</h1>", page)
    assert h1 is not None and inner_text(h1.group(1)) == EVIL
    row = re.search(r'<tr>\s*<td><a href="#lock-evil">.*?</tr>', page, re.DOTALL)
    assert row is not None and row.group(0).count("<td>") == 5
    # the issue template is not a safe URL, so issue numbers are plain text
    assert "#3" in inner_text(page) and 'href="javascript' not in page


def test_hostile_front_matter_is_yaml_holding_html_text(evil_build: Path) -> None:
    # MkDocs themes print the title into <title> and the navigation unescaped, so the front
    # matter holds it as HTML text: it reads back as the title once entities are decoded.
    md = (evil_build / "docs" / "database-locks.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(md.split("---\n", 2)[1])
    assert "<" not in meta["title"] and html.unescape(meta["title"]) == EVIL
    assert html.unescape(meta["summary"]) == EVIL


def test_hostile_text_is_escaped_in_dot_and_svg(evil_build: Path) -> None:
    folder = evil_build / "docs" / "database-locks"
    group_dot = folder / "paths" / "p.dot"  # one diagram per path, named by its id
    assert group_dot.is_file()
    for svg in folder.rglob("*.svg"):
        content = svg.read_text(encoding="utf-8")
        assert "<script" not in content.lower()
    svg = group_dot.with_suffix(".svg").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert "{{ 7*7 }}" in svg  # data, shown as it is


def test_the_escaped_page_builds_under_strict_mkdocs(evil_build: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(evil_build / "docs", tmp_path / "docs")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\ndocs_dir: docs\n"
        "markdown_extensions: [tables, attr_list, toc, admonition, pymdownx.details]\n"
        "validation: {anchors: warn, unrecognized_links: warn}\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    page = (site / "database-locks" / "index.html").read_text(encoding="utf-8")
    assert "<script>alert" not in page  # not in <title>, the navigation or the content


def test_prose_keeps_lists_code_and_safe_links_only() -> None:
    from lockdocs.render.escape import prose

    out = prose(
        "See `pool_id` and [the docs](https://docs.invalid/x).\n"
        "<script>alert(1)</script> [bad](javascript:void) {{ 7*7 }} *not emphasis*\n\n"
        "1. first item\n   continues here\n2. second | item\n\n"
        "- a\n- b"
    )
    assert "`pool_id`" in out and "[the docs](https://docs.invalid/x)" in out
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "](javascript" not in out
    assert "\\{\\{ 7\\*7 \\}\\}" in out and "\\*not emphasis\\*" in out
    assert "1. first item continues here\n2. second \\| item" in out
    assert out.endswith("- a\n- b")


def test_prose_links_issue_numbers_through_the_template() -> None:
    from lockdocs.render.escape import prose

    out = prose("see #12, x#3 and `#4`", "https://tracker.invalid/issues/{number}")
    assert "[\\#12](https://tracker.invalid/issues/12)" in out
    assert "x\\#3" in out and "`#4`" in out
    assert prose("see #12") == "see \\#12."
