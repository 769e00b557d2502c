"""A Python file -> its SQL candidates (string literals, adjacent ones joined) and its comments,
read with `ast` and `tokenize`: imported only when the scan reads a .py file, so a project
of SQL and Go files does not pay for them."""

from __future__ import annotations

import ast
import io
import tokenize
import unicodedata
import warnings
from bisect import bisect_right

from lockdocs.scan.sources import (
    SIMPLE_ESCAPES,
    Lines,
    SourceComment,
    Unit,
    dotted_aliases,
    spaced,
    waiver_text,
)

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
