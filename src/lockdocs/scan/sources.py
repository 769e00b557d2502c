"""Files -> SQL texts, each with a map from its characters back to the file's line and column.

A .sql file is one text. In a Python or Go file every string literal is a candidate (a literal
counts when it parses as SQL, which `sqltext` decides); adjacent literals joined by Python's
implicit concatenation or Go's `+` are one text. Python is read with `ast` and `tokenize` in
`pysource.py` (imported only for a .py file), Go with the small lexer of `golang.py`. Escapes are decoded with a map, so a lock inside an
escaped literal still points at its own line and column.
"""

from __future__ import annotations

from bisect import bisect_right

from lockdocs.records import field, record

SQL_SUFFIXES = (".sql", ".psql", ".pgsql")
SOURCE_SUFFIXES = {".py": "python", ".go": "go"}


def file_kind(name: str) -> str | None:
    lower = name.lower()
    if lower.endswith(SQL_SUFFIXES):
        return "sql"
    for suffix, kind in SOURCE_SUFFIXES.items():
        if lower.endswith(suffix):
            return kind
    return None


class Lines:
    """Offsets in a file's text -> 1-based (line, column)."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        find = text.find
        i = find("\n")
        while i != -1:
            self.starts.append(i + 1)
            i = find("\n", i + 1)

    def at(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1

    def offset(self, line: int, column: int) -> int:
        return self.starts[min(line, len(self.starts)) - 1] + column - 1


@record(frozen=False)
class Unit:
    """One SQL text. `segments` are (offset in the text, offset in the file) pairs: from each
    pair on, characters map one to one until the next pair."""

    text: str
    segments: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])
    name: str | None = None
    aliases: tuple[str, ...] = ()
    from_source: bool = False
    stmt_line: int = 0  # a source literal: the line its statement starts on
    _starts: list[int] | None = field(default=None, repr=False, compare=False)

    def _keys(self) -> list[int]:
        if self._starts is None or len(self._starts) != len(self.segments):
            self._starts = [s[0] for s in self.segments]
        return self._starts

    def file_offset(self, offset: int) -> int:
        keys = self._keys()
        i = max(bisect_right(keys, offset) - 1, 0)
        start, target = self.segments[i]
        return target + max(offset - start, 0)


@record
class SourceComment:
    """A `# lockdocs: ...` (Python) or `// lockdocs: ...` (Go) comment on a line of its own:
    it covers the SQL of the statement on the next line of code (`next_line`; 0: none)."""

    offset: int  # where the comment starts in the file
    text: str  # from `lockdocs:` on
    next_line: int


def waiver_text(comment: str) -> str | None:
    """The text from `lockdocs:` on, when a comment's body starts with it."""
    inner = comment.strip()
    return inner if inner.startswith("lockdocs:") else None


def driver_placeholders(text: str, strict: bool = True) -> str | None:
    """psycopg's placeholders (%s, %b, %t, %(name)s; %% for a percent sign) as $1, keeping
    every offset, so the text parses as Postgres would receive it; None when a % is not one
    (unless not `strict`: then it stays as it is)."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1 : i + 2]
        if nxt == "%":
            out.append("% ")
            i += 2
        elif nxt in ("s", "b", "t"):
            out.append("$1")
            i += 2
        elif nxt == "(":
            close = text.find(")", i, i + 130)  # a name, not the rest of the file
            if close == -1 or text[close + 1 : close + 2] not in ("s", "b", "t"):
                if strict:
                    return None
                out.append(c)
                i += 1
                continue
            width = close + 2 - i
            out.append("$1" + " " * (width - 2))
            i += width
        elif strict:
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out)


def dotted_aliases(parts: list[str]) -> tuple[str, ...]:
    """'pkg.Recv.Method' answers to every dotted suffix: Recv.Method, Method."""
    return tuple(".".join(parts[i:]) for i in range(len(parts)))


# --- Python ------------------------------------------------------------------------------------

# The one-character escapes Go and Python share (C's): the letter after the backslash -> the
# character it stands for.
SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
}


def spaced(text: str) -> bool:
    return " " in text or "\n" in text or "\t" in text
