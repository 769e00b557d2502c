"""Every message template in the package reads right: articles and punctuation.

The templates are read from the source (every string literal and f-string of src/lockdocs), so
a new message is covered the moment it is written. A placeholder after "a" must go through
`lockdocs.grammar.an` (the word decides: a row lock, an advisory lock); a literal "a" or "an"
must fit the word after it; a diagnostic's message and hint have no doubled spaces, no space
before a comma and no full stop at the end (they are clauses, printed after "error:").
"""

from __future__ import annotations

import ast
import importlib
import re

import pytest

from conftest import REPO
from lockdocs.grammar import an, article

SOURCES = sorted((REPO / "src" / "lockdocs").rglob("*.py"))

# Words whose spelling misleads a first-letter rule: said with a consonant ("a one-off", "a
# unique key", "a user", "a URL"), or with a vowel ("an hour", "an SQL", "an LD201 finding").
CONSONANT_SOUNDS = ("one", "once", "uni", "use", "usu", "uri", "ut", "url", "eu")


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            out.append(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v) + "}")
        return "".join(str(x) for x in out)
    return None


def _templates() -> list[tuple[str, str]]:
    found = []
    for f in SOURCES:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if id(node) in docstrings:
                continue
            if isinstance(node, ast.JoinedStr) or (
                isinstance(node, ast.Constant) and isinstance(node.value, str)
            ):
                text = _text(node)
                if text:
                    found.append((f"{f.relative_to(REPO)}:{node.lineno}", text))
    return found


TEMPLATES = _templates()


# Where a finding's message and hint stand among the arguments: a Diagnostic(...), a rule's
# finding(...) (lockdocs.rules.finder) and the helpers that call it.
_TEXT_ARGS = {
    "Diagnostic": (2, 4),
    "finding": (0, 2),
    "step_finding": (2, 3),
    "rule_finding": (2, 4),
}


def _diagnostic_texts() -> list[tuple[str, str]]:
    """The message and hint of every finding built in the package."""
    found = []
    for f in SOURCES:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            name = getattr(node.func, "id", "") if isinstance(node, ast.Call) else ""
            if name not in _TEXT_ARGS:
                continue
            assert isinstance(node, ast.Call)
            message, hint = _TEXT_ARGS[name]
            parts = [*node.args[message : message + 1], *node.args[hint : hint + 1]]
            parts += [k.value for k in node.keywords if k.arg in ("message", "hint")]
            for part in parts:
                pieces = [part]
                if isinstance(part, ast.BinOp):  # "..." + "..."
                    pieces = [part.left, part.right]
                for piece in pieces:
                    text = _text(piece)
                    if text:
                        found.append((f"{f.relative_to(REPO)}:{node.lineno}", text))
    return found


def test_the_sources_hold_templates() -> None:
    assert len(TEMPLATES) > 500
    assert len(_diagnostic_texts()) > 60


def _constant(where: str, name: str) -> str | None:
    """The value of a module constant (an upper-case name) a template puts after an article."""
    module = (
        where.split(":", maxsplit=1)[0].removeprefix("src/").removesuffix(".py").replace("/", ".")
    )
    value = getattr(importlib.import_module(module.removesuffix(".__init__")), name, None)
    return value if isinstance(value, str) else None


def test_no_bare_article_before_a_placeholder() -> None:
    bad = []
    for where, text in TEMPLATES:
        for m in re.finditer(r"\b(an?) \{([^{}]*)\}", text):
            said, inner = m.group(1), m.group(2).strip("{}")
            if re.fullmatch(r"[A-Z][A-Z0-9_]*", inner):  # a constant: its value decides
                value = _constant(where, inner)
                if value is not None and article(value) == said:
                    continue
            bad.append(f"{where}: {text!r}")
    assert not bad, "use lockdocs.grammar.an(...) for the article:\n" + "\n".join(bad)


def test_literal_articles_fit_the_word() -> None:
    bad = []
    for where, text in TEMPLATES:
        for m in re.finditer(r"(?<![\w'-])(a|an) ([A-Za-z0-9][\w%.-]*)", text):
            said, word = m.group(1), m.group(2)
            if word.lower().startswith(CONSONANT_SOUNDS) and said == "a":
                continue
            if word.lower().startswith("sql"):  # "a SQL file" (sequel) and "an SQL file": both
                continue
            if said != article(word):
                bad.append(f"{where}: {m.group(0)!r} in {text[:80]!r}")
    assert not bad, "\n".join(bad)


def test_diagnostic_punctuation() -> None:
    bad = []
    for where, text in _diagnostic_texts():
        if "  " in text.strip() or " ," in text or " ;" in text or ".." in text.replace("...", ""):
            bad.append(f"{where}: spacing: {text!r}")
        if text.rstrip().endswith(".") and not text.rstrip().endswith("..."):
            bad.append(f"{where}: ends with a full stop: {text!r}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("advisory", "an advisory"),
        ("row", "a row"),
        ("integer", "an integer"),
        ("8% chance", "an 8% chance"),
        ("0.1% chance", "a 0.1% chance"),
        ("LD201", "an LD201"),
        ("SQL", "an SQL"),
        ("URL", "a URL"),
        ("FOR UPDATE", "a FOR UPDATE"),
        ("ACCESS EXCLUSIVE", "an ACCESS EXCLUSIVE"),
        ("unique", "a unique"),
        ("hour", "an hour"),
    ],
)
def test_an(word: str, expected: str) -> None:
    assert an(word) == expected
