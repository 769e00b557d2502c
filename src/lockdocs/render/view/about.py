"""The one note about the tool at the end of the page ("How this page is checked"): what writes
and checks the page, which rules are checked and which are the team's prose, which check codes
the exceptions stand for, and the page's few words of its own ("already held", a foreign-key
check). Everything else on the page speaks about the code, not about lockdocs.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.render.view.base import PageContext


@dataclass(frozen=True)
class AboutView:
    """The note's sentences (plain text)."""

    sentences: tuple[str, ...]
    words: tuple[str, ...]


def numbers(ns: list[int]) -> str:
    """'1 to 4, 7 and 9': runs of three or more as a range."""
    parts: list[str] = []
    i = 0
    while i < len(ns):
        j = i
        while j + 1 < len(ns) and ns[j + 1] == ns[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ns[i]} to {ns[j]}")
        else:
            parts.extend(str(n) for n in ns[i : j + 1])
        i = j + 1
    if len(parts) == 1:
        return parts[0]
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _counted(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def about_view(ctx: PageContext, held_words: bool) -> AboutView:
    """The note; `held_words` says whether any step of the page is marked already held."""
    model = ctx.model
    paths_files = sorted({f for f in model.files if f != model.files[0]})
    where = model.files[0] if model.files else "locks.yaml"
    if paths_files:
        n = len(paths_files)
        where += f" and {n} {_counted(n, 'file', 'files')} under paths/"
    out = [
        f"lockdocs writes this page from {where}, and lockdocs check fails when the page no "
        "longer says what they declare."
    ]
    checked = [i for i, r in enumerate(model.rules.values(), 1) if r.check]
    prose = [i for i, r in enumerate(model.rules.values(), 1) if not r.check]
    what = "It checks the lock order of every path"
    if any(lk.key is not None for lk in model.locks.values()):
        what += ", the advisory keys"
    if checked:
        what += f" and {_counted(len(checked), 'rule', 'rules')} {numbers(checked)}"
    out.append(what + ".")
    if prose:
        out.append(
            f"{_counted(len(prose), 'Rule', 'Rules')} {numbers(prose)} "
            f"{_counted(len(prose), 'is', 'are')} the team's own words, which it does not check."
        )
    by_code: dict[str, list[int]] = {}
    for w in model.waivers:
        if w.rule not in model.rules:
            by_code.setdefault(w.rule, []).append(w.index + 1)
    if by_code:
        parts = [
            f"{_counted(len(ns), 'exception', 'exceptions')} {numbers(ns)}"
            + (f" waive{_counted(len(ns), 's', '')} its check {code}" if i == 0 else f" {code}")
            for i, (code, ns) in enumerate(sorted(by_code.items(), key=lambda kv: kv[1][0]))
        ]
        text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        out.append(text[:1].upper() + text[1:] + ".")
    words: list[str] = []
    if held_words:
        words.append(
            "A step marked already held takes a lock the path holds from an earlier step, so it "
            "does not wait."
        )
    if any(
        isinstance(s, m.Take) and s.derived
        for p in model.paths.values()
        for s in m.walk_steps(p.steps)
    ):
        words.append(
            "A lock taken in the foreign-key check of a write is one Postgres takes by itself, "
            "on the row the new row refers to."
        )
    return AboutView(tuple(out), tuple(words))
