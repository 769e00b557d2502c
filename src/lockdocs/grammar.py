"""Words messages are built from: the article a word takes.

Messages put kinds, modes and numbers after "a" ("a row lock", "an advisory lock", "an 8%
chance"); `an` picks the article by how the word is said, not only by its first letter.
tests/test_messages.py reads every message template in the package and fails on "a {...}"
without it.
"""

from __future__ import annotations

import re

# Said with a vowel sound though written with a consonant (or the other way round).
_AN_LETTERS = re.compile(
    r"^(?:[aeio]|u(?!s[aeiou]|ni|r[aeiou]|ti)|8|11|18|[fhlmnrsx](?:\d|[A-Z]|$))"
)


# Capitals said as words, not letter by letter: a FOR UPDATE lock, a NUL byte.
_SQL_WORDS = frozenset(
    {"FOR", "NO", "KEY", "SHARE", "UPDATE", "ACCESS", "ROW", "EXCLUSIVE", "SKIP", "NOWAIT"}
    | {"LOCK", "TABLE", "NUL", "NULL", "SELECT", "INSERT", "DELETE", "BEGIN", "COMMIT"}
)
# Initialisms written in lower case, said letter by letter: an http(s) URL, an html page.
_LETTERS = ("http", "html", "svg", "xml", "sql", "ssh", "rpc")


def article(word: str) -> str:
    """'a' or 'an' for the word that follows."""
    w = word.strip().lstrip("'\"`(")
    if not w:
        return "a"
    first = re.split(r"[\s-]", w, maxsplit=1)[0]
    if first.upper() in _SQL_WORDS:  # FOR UPDATE, ACCESS EXCLUSIVE: said as words
        return "an" if first[0].lower() in "aeiou" else "a"
    if first.lower().startswith(("hour", "honest", "honour")):
        return "an"
    if first.islower() and first.startswith(_LETTERS):
        return "an" if first[0] in "aefhilmnorsx" else "a"
    if (w[:1].isupper() and w[1:2].isupper()) or (w[:1].isupper() and w[1:2].isdigit()):
        # an initialism read letter by letter: an SQL statement, an LD201 finding, a URL
        return "an" if w[0] in "AEFHILMNORSX" else "a"
    return "an" if _AN_LETTERS.match(w.lower() if not w[:1].isdigit() else w) else "a"


def an(word: object) -> str:
    """The word with its article: an('advisory') == 'an advisory'."""
    text = str(word)
    return f"{article(text)} {text}"
