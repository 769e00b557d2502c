"""Fuzzing what issue 18 hardened: link targets and prose (no link but http(s), mailto or an
anchor, however encoded; no block of the site's extensions from a line start), and project
templates (whatever they do: a page within bounds or LD601, within the time and memory
bounds). The default suite runs a sample; `pytest -m fuzz` (make fuzz) runs the long one.
"""

from __future__ import annotations

import html
import os
import random
import re
import resource
import shutil
import time
from pathlib import Path
from urllib.parse import unquote

import markdown
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockdocs.render.escape import Link, link, prose, safe_url, text

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"
LONG = int(os.environ.get("LOCKDOCS_FUZZ_CASES", "10000")) // 2
SAMPLE = 200
EXTENSIONS = ["tables", "attr_list", "md_in_html", "admonition", "def_list", "pymdownx.details"]

# --- link targets and prose -------------------------------------------------------------------

_PIECES = [
    "javascript",
    "JavaScript",
    "java\tscript",
    "data",
    "vbscript",
    "http",
    "https",
    "mailto",
    ":",
    "&#58;",
    "&#x3a;",
    "&colon;",
    "&amp;",
    "&#",
    "%3A",
    "%253A",
    "%",
    "//",
    "/",
    "#",
    "?",
    "&",
    ";",
    "alert(1)",
    "&#40;",
    "x",
    "evil.invalid",
    "\x00",
    "\x1b",
    " ",
    "\n",
    "!!!",
    "???",
    "???+",
    "~~~",
    "===",
    ":::",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    '"',
    "'",
    "`",
]
TARGETS = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map("".join)
_SAFE = ("http:", "https:", "mailto:", "#")


def _browser_view(target: str) -> str:
    """What a browser may take an href to be: entities and percent escapes undone, and the
    tabs and newlines it drops removed."""
    seen = target
    for _ in range(10):
        step = unquote(html.unescape(seen))
        if step == seen:
            break
        seen = step
    return re.sub(r"[\t\n\r]", "", seen).lstrip("\x00 ").lower()


def _check_target(target: str) -> None:
    out = safe_url(target)
    if out is not None:
        assert _browser_view(out).startswith(_SAFE), (target, out)
    page = markdown.markdown(prose(f"see [x]({target}) and {target}"), extensions=EXTENSIONS)
    for href in re.findall(r'href="([^"]*)"', page):
        assert _browser_view(href).startswith(_SAFE), (target, href)


def _check_prose(value: str) -> None:
    for rendered in (text(value), prose(value), prose("- " + value), link(Link(value, value))):
        page = markdown.markdown(rendered + "\n\nafter", extensions=EXTENSIONS)
        assert "admonition" not in page and "<details" not in page, (value, page)
        assert "<script" not in page and "<pre" not in page, (value, page)


def _link_run(cases: int) -> int:
    count = 0

    @settings(
        max_examples=cases,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(target=TARGETS)
    def one(target: str) -> None:
        nonlocal count
        _check_target(target)
        _check_prose(target)
        count += 1

    one()
    return count


def test_links_and_prose_sample() -> None:
    assert _link_run(SAMPLE) >= SAMPLE // 2


# --- project templates -------------------------------------------------------------------------

_EXPRESSIONS = [
    "1/0",
    "10**10",
    "2 ** 100000",
    "'x' * 10**9",
    "'x' * 100",
    "'%999999999d' % 1",
    "'%s' % page.title",
    "'a'.ljust(10**8)",
    "'a'.zfill(50)",
    "'{:>9999999}'.format(1)",
    "'ab'|replace('', 'x' * 2000000)",
    "'x'|center(10**9)",
    "'x'|indent(10**8)",
    "range(10)|join('y' * 1000000)",
    "range(10)|list",
    "page.title|upper",
    "lipsum()",
    "cycler.__init__.__globals__",
    "''.__class__.__mro__",
    "self",
    "page.nope",
    "page.groups|length",
    "namespace(a=1).a",
    "'a' ~ 'b'",
    "[1, 2] * 10**8",
    "(1, 2) + (3,)",
    "'x'|wordwrap(5, wrapstring='z' * 100000)",
    "page.planned[0]",
    "range(10**9)",
]
_STATEMENTS = [
    "{{ %s }}",
    "{% for i in range(1000) %}{{ %s }}{% endfor %}",
    "{% set v = %s %}{% set w = v ~ v %}{{ w }}",
    "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(%s) }}",
    "{% set ns = namespace(s='x') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ %s }}",
    "{% set l = range(300)|list %}{% for a in l %}{% for b in l %}{% for c in l %}{% endfor %}"
    "{% endfor %}{% endfor %}{{ %s }}",
    "{{ %s",
]


def _template(rng: random.Random) -> str:
    parts = [
        rng.choice(_STATEMENTS).replace("%s", rng.choice(_EXPRESSIONS), 1)
        for _ in range(rng.randint(1, 3))
    ]
    return "Planned\n" + "\n".join(parts) + "\n"


def _template_run(tmp: Path, cases: int, seed: int) -> tuple[int, int, float]:
    """(rendered, refused, slowest render in s); raises on anything but a page or LD601."""
    from lockdocs.api import analyse, load
    from lockdocs.render.pages import render_outputs
    from lockdocs.render.targets import RenderError

    root = tmp / "proj"
    shutil.copytree(FIXTURE, root)
    (root / "templates").mkdir()
    model, diags = load(root)
    assert model is not None
    found = analyse(model)
    rng = random.Random(seed)
    rendered = refused = 0
    slowest = 0.0
    os.environ["LOCKDOCS_TEMPLATE_SECONDS"] = "2"
    try:
        for _ in range(cases):
            (root / "templates" / "planned.md.j2").write_text(_template(rng), encoding="utf-8")
            start = time.monotonic()
            try:
                files = render_outputs(model, diags + found)
            except RenderError as exc:
                assert [d.code for d in exc.diagnostics] == ["LD601"], exc.diagnostics
                assert all(d.message.strip() for d in exc.diagnostics)
                refused += 1
            else:
                assert sum(len(t) for t in files.values()) < 300_000_000
                rendered += 1
            slowest = max(slowest, time.monotonic() - start)
    finally:
        os.environ.pop("LOCKDOCS_TEMPLATE_SECONDS", None)
    return rendered, refused, slowest


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_templates_sample(tmp_path: Path) -> None:
    rendered, refused, slowest = _template_run(tmp_path, 40, seed=1)
    assert rendered + refused == 40 and refused > 0
    assert slowest < 30  # the 2 s render limit, plus a loaded machine's slack


@pytest.mark.fuzz
# A drawn template that calls itself hits Python's recursion limit, which lockdocs reports as
# LD601. When a garbage collection runs at that depth, hypothesis's gc timing callback
# (junkdrawer.gc_cumulative_time) raises too, and Python can only report that as unraisable.
# It is hypothesis's callback, not lockdocs: the CI fuzz run of 89e1712 failed on it alone.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_fuzz_hostile_long(tmp_path: Path) -> None:
    before = _peak_rss_mib()
    links = _link_run(LONG)
    rendered, refused, slowest = _template_run(tmp_path, max(LONG // 20, 100), seed=20261129)
    grown = _peak_rss_mib() - before
    print(
        f"\nfuzz (hostile): {links} link targets; templates {rendered} rendered, "
        f"{refused} refused (LD601), slowest {slowest:.2f} s, peak RSS grew {grown:.0f} MiB"
    )
    assert slowest < 30
    assert grown < 2048  # no template may hold gigabytes
