"""Files -> SQL texts, each with a map from its characters back to the file's line and column.

A .sql file is one text. In a Python or Go file every string literal is a candidate (a literal
counts when it parses as SQL, which `sqltext` decides); adjacent literals joined by Python's
implicit concatenation or Go's `+` are one text. Python is read with `ast` and `tokenize` here,
Go with the small lexer of `golang.py`. Escapes are decoded with a map, so a lock inside an
escaped literal still points at its own line and column.
"""

from __future__ import annotations

import ast
import io
import tokenize
import unicodedata
import warnings
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
# Python's, plus the backslash-newline that continues a string on the next line.
_PY_SIMPLE = {"\n": "", **SIMPLE_ESCAPES}


def _py_token(tok: str, start: int) -> tuple[str, list[tuple[int, int]]] | None:
    """A Python string token's value and segments (offsets relative to the value); None for
    bytes and f-strings."""
    i = 0
    while tok[i] not in "'\"":
        i += 1
    prefix = tok[:i].lower()
    if "b" in prefix or "f" in prefix:
        return None
    quote = tok[i : i + 3] if tok[i : i + 3] in ('"""', "'''") else tok[i]
    body_start = i + len(quote)
    body = tok[body_start : len(tok) - len(quote)]
    base = start + body_start
    if "r" in prefix or "\\" not in body:
        return body, [(0, base)]
    out: list[str] = []
    segs: list[tuple[int, int]] = [(0, base)]
    n = 0
    j = 0
    while j < len(body):
        c = body[j]
        if c != "\\" or j + 1 >= len(body):
            out.append(c)
            n += 1
            j += 1
            continue
        e = body[j + 1]
        width = 2
        if e in _PY_SIMPLE:
            value = _PY_SIMPLE[e]
        elif e in "01234567":
            k = j + 1
            while k < len(body) and k < j + 4 and body[k] in "01234567":
                k += 1
            value, width = chr(int(body[j + 1 : k], 8)), k - j
        elif e in "xuU":
            digits = {"x": 2, "u": 4, "U": 8}[e]
            value, width = chr(int(body[j + 2 : j + 2 + digits], 16)), 2 + digits
        elif e == "N":
            end = body.index("}", j)

            value, width = unicodedata.lookup(body[j + 3 : end]), end + 1 - j
        else:
            value = "\\" + e
        out.append(value)
        n += len(value)
        j += width
        segs.append((n, base + j))
    return "".join(out), segs


class _PyNames(ast.NodeVisitor):
    """Every str constant with the qualified name of what encloses it."""

    def __init__(self) -> None:
        self.stack: list[tuple[str, bool]] = []  # (name, is a function)
        self.found: list[tuple[ast.Constant, tuple[str, ...], int]] = []
        self.target: str | None = None
        self.statement = 0  # the line of the innermost statement being read

    def visit(self, node: ast.AST) -> None:
        if not isinstance(node, ast.stmt):
            super().visit(node)
            return
        saved, self.statement = self.statement, node.lineno
        try:
            super().visit(node)
        finally:
            self.statement = saved

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.stack.append((node.name, True))
        self.generic_visit(node)
        self.stack.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.stack.append((node.name, False))
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def _in_function(self) -> bool:
        return any(is_function for _, is_function in self.stack)

    def visit_Assign(self, node: ast.Assign) -> None:
        saved = self.target
        first = node.targets[0]
        if len(node.targets) == 1 and isinstance(first, ast.Name) and not self._in_function():
            self.target = first.id
        self.generic_visit(node)
        self.target = saved

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return  # an f-string is not a literal

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and len(node.value) >= 6 and spaced(node.value):
            names = tuple(name for name, _ in self.stack)
            if self.target and not self._in_function():
                names = (*names, self.target)
            self.found.append((node, names, self.statement))


def spaced(text: str) -> bool:
    return " " in text or "\n" in text or "\t" in text


def python_units(text: str, module: str) -> tuple[list[Unit], list[SourceComment]]:
    """The SQL candidates of a Python file, and its waiver comments. Raises SyntaxError (or
    ValueError) for a file Python cannot read."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning and the like: not the user's terminal's
        tree = ast.parse(text)
    visitor = _PyNames()
    visitor.visit(tree)
    lines = Lines(text)
    try:
        every = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        every = []  # each literal then maps to where it starts
    comments = _py_comments(every, lines)
    if not visitor.found:
        return [], comments
    line_text = text.split("\n")
    tokens = [t for t in every if t.type == tokenize.STRING]
    starts = [t.start for t in tokens]
    units: list[Unit] = []
    for node, names, statement in visitor.found:
        end_line = node.end_lineno or node.lineno
        start = (node.lineno, _char_col(line_text, node.lineno, node.col_offset))
        end = (end_line, _char_col(line_text, end_line, node.end_col_offset or 0))
        i = bisect_right(starts, start) - 1
        pieces: list[str] = []
        segs: list[tuple[int, int]] = []
        ok = True
        offset = 0  # the length of the pieces so far: joining stays linear
        while 0 <= i < len(tokens) and tokens[i].start < end:
            tok = tokens[i]
            decoded = _py_token(tok.string, lines.offset(tok.start[0], tok.start[1] + 1))
            if decoded is None:
                ok = False
                break
            value, s = decoded
            segs += [(offset + a, b) for a, b in s]
            pieces.append(value)
            offset += len(value)
            i += 1
        if not ok or "".join(pieces) != node.value:
            segs = [(0, lines.offset(start[0], start[1] + 1))]
        parts = [*module.split("."), *names] if module else list(names)
        units.append(
            Unit(
                str(node.value),
                segs,
                name=".".join(parts) if names else None,
                aliases=dotted_aliases(parts) if names else (),
                from_source=True,
                stmt_line=statement,
            )
        )
    return units, comments


_NOT_CODE = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT}


def _py_comments(tokens: list[tokenize.TokenInfo], lines: Lines) -> list[SourceComment]:
    """Every `# lockdocs:` comment alone on its line, with the next line of code."""
    out: list[SourceComment] = []
    pending: list[tuple[int, str]] = []
    for t in tokens:
        if t.type == tokenize.COMMENT:
            inner = waiver_text(t.string[1:])
            if inner is not None and not t.line[: t.start[1]].strip():
                pending.append((lines.offset(t.start[0], t.start[1] + 1), inner))
        elif t.type not in _NOT_CODE and pending:
            out += [SourceComment(at, inner, t.start[0]) for at, inner in pending]
            pending = []
    return out + [SourceComment(at, inner, 0) for at, inner in pending]


def _char_col(lines: list[str], line: int, byte_col: int) -> int:
    """ast gives UTF-8 byte columns; tokenize and everything else here count characters."""
    raw = lines[line - 1]
    if raw.isascii():
        return byte_col
    return len(raw.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def python_module(rel: str) -> str:
    """The dotted module a project-relative .py path stands for (src/ and __init__ dropped)."""
    parts = rel[: -len(".py")].split("/")
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(p for p in parts if p.isidentifier())
