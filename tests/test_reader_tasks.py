"""The five kinds of reader task, measured in a real Chromium at 1400 px against the hand-written
page built in the same theme (the same Material settings and stylesheet).

For each task the answer is the first element of each page that holds every fact of the answer
(a table row, a list item, a paragraph or a block's visible title). Its depth is how far down the
page it sits once it is shown (px from the top of the page), and its cost is the clicks it takes
to show it: the closed blocks around it. The generated page must answer each task no deeper than
the hand-written one and at the cost of at most one click. The numbers are printed (run with -s)
and written to test-artifacts/reader-tasks.json.

A jump to an anchor must also leave its target, and the title of the block it opens, in sight
below Material's sticky header.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from test_browser import (
    ARTIFACTS,
    _chromium,
    _need_chromium,
    _serve,
    reference_site,  # noqa: F401 - a fixture this module uses
)

pytestmark = pytest.mark.slow

WIDTH = 1400
HEIGHT = 900

# (task, what the reader asks, the facts every answer holds on the hand page, on the generated
# page). Facts are matched case-insensitively in an element's text.
TASKS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "hold",
        "What must I hold before I change a pool's positions?",
        ("Pool row", "core.resource_pools", "positions"),
        ("Pool row", "core.resource_pools", "positions"),
    ),
    (
        "serializes",
        "What does the invoice lock serialize, and how is its key built?",
        ("Invoice", "hashtext(", "reconciles of one invoice"),
        ("Invoice", "hashtext(", "reconciles of one invoice"),
    ),
    (
        "during",
        "Can a tier reorder run while a pool materializes?",
        ("Materialization rendezvous", "shared", "exclusive", "reorder"),
        ("Materialization rendezvous", "shared", "exclusive", "reorder"),
    ),
    (
        "order",
        "In which order are several pool rows taken, and which path takes them otherwise?",
        ("ascending pool_id order", "tier add"),
        ("ascending pool_id order", "tier add"),
    ),
    (
        "busy",
        "What happens when a materializing transaction finds a lock busy?",
        ("lock_timeout", "55P03"),
        ("lock_timeout", "55P03"),
    ),
)

_FIND = """
((facts) => {
  const article = document.querySelector("article") || document.body;
  const want = facts.map(f => f.toLowerCase());
  const norm = (el) => el.textContent.replace(/\\s+/g, " ").toLowerCase();
  const kinds = "tr, li, p, summary, dd, h1, h2, h3, h4";
  const hits = [...article.querySelectorAll(kinds)].filter(el => {
    const t = norm(el);
    return want.every(w => t.includes(w));
  });
  if (!hits.length) return null;
  // The most specific element: the one no other hit sits inside.
  const inner = hits.filter(h => !hits.some(o => o !== h && h.contains(o)));
  const el = inner[0];
  const closed = [];
  for (let p = el.parentElement; p; p = p.parentElement) {
    if (p.tagName === "DETAILS" && !p.open) closed.push(p);
  }
  // A block's title is in sight while the block is closed.
  const inTitle = el.closest("summary");
  const clicks = inTitle ? closed.filter(d => d !== inTitle.parentElement).length : closed.length;
  closed.forEach(d => { d.open = true; });
  const top = el.getBoundingClientRect().top + window.scrollY;
  closed.forEach(d => { d.open = false; });
  return {tag: el.tagName, clicks, top: Math.round(top),
          text: el.textContent.replace(/\\s+/g, " ").trim().slice(0, 160)};
})
"""

_GROUPS = """
(() => { const h = document.querySelector("article h2[id='lock-order'], article h2#the-order-each-path-takes-locks")
           || [...document.querySelectorAll("article h3")].find(e => /Rule change and drain/.test(e.textContent));
         const g = [...document.querySelectorAll("article h3")].find(e => /Rule change and drain/.test(e.textContent));
         return g ? Math.round(g.getBoundingClientRect().top + window.scrollY) : null; })()
"""


def _measure(base: str, path: str, side: int) -> dict[str, object]:
    with _chromium() as cdp:
        cdp.open(f"{base}/{path}", width=WIDTH, height=HEIGHT)
        out: dict[str, object] = {}
        for task in TASKS:
            facts = task[2 + side]
            out[task[0]] = cdp.evaluate(f"{_FIND}({json.dumps(list(facts))})")
        out["groups"] = cdp.evaluate(_GROUPS)
        out["height"] = cdp.evaluate("document.documentElement.scrollHeight")
    return out


def test_each_reader_task_is_answered_no_deeper_than_on_the_hand_page(
    repo_site: Path,
    reference_site: Path,  # noqa: F811
) -> None:
    _need_chromium()
    with _serve(reference_site) as base:
        hand = _measure(base, "", 0)
    with _serve(repo_site) as base:
        ours = _measure(base, "database-locks/", 1)
    report = {"width": WIDTH, "hand": hand, "generated": ours}
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "reader-tasks.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    lines = [f"\n{'task':<11}{'hand px':>9}{'clicks':>8}{'ours px':>9}{'clicks':>8}"]
    for task in TASKS:
        h, o = hand[task[0]], ours[task[0]]
        assert isinstance(h, dict), (task, h)
        assert isinstance(o, dict), (task, o)
        lines.append(f"{task[0]:<11}{h['top']:>9}{h['clicks']:>8}{o['top']:>9}{o['clicks']:>8}")
    lines.append(f"{'groups':<11}{hand['groups']!s:>9}{'':>8}{ours['groups']!s:>9}")
    lines.append(f"{'height':<11}{hand['height']!s:>9}{'':>8}{ours['height']!s:>9}")
    print("\n".join(lines))
    for task in TASKS:
        h, o = hand[task[0]], ours[task[0]]
        assert isinstance(h, dict) and isinstance(o, dict)
        assert o["clicks"] <= 1, (task[1], o)
        assert o["top"] <= h["top"], (task[1], o, h)


_TARGET = """
((id) => {
  const t = document.getElementById(id);
  const header = document.querySelector(".md-header");
  const hb = header ? header.getBoundingClientRect().bottom : 0;
  const block = t.closest("details");
  const title = block ? block.querySelector("summary") : t;
  return {header: Math.round(hb), target: Math.round(t.getBoundingClientRect().top),
          title: Math.round(title.getBoundingClientRect().top),
          open: block ? block.open : true};
})
"""


@pytest.mark.parametrize("anchor", ["path-tier-add", "path-register-providers", "lock-pool-row"])
def test_a_jump_leaves_the_target_and_its_title_below_the_sticky_header(
    repo_site: Path, anchor: str
) -> None:
    _need_chromium()
    with _serve(repo_site) as base, _chromium() as cdp:
        cdp.open(f"{base}/database-locks/#{anchor}", width=WIDTH, height=HEIGHT)
        time.sleep(0.4)
        seen = cdp.evaluate(f"{_TARGET}({json.dumps(anchor)})")
    assert seen["open"], seen
    assert seen["title"] >= seen["header"], seen
    assert seen["target"] < HEIGHT, seen
