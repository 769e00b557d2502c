"""Go source -> SQL texts: a small lexer (comments, runes, interpreted and raw strings) that
finds every string literal, joins literals concatenated with `+`, decodes escapes with a map back
to the file's characters, and names each text by the function or constant that holds it.

It also follows where statements start (Go's rule: a line ends one after an identifier, a
literal, `)`, `]`, `}`, `++` or `--`), so that a `// lockdocs: ignore ...` comment on the line
above a statement covers the SQL of the literals in it."""

from __future__ import annotations

from lockdocs.scan.sources import (
    SIMPLE_ESCAPES,
    Lines,
    SourceComment,
    Unit,
    dotted_aliases,
    spaced,
    waiver_text,
)

# Keywords after which a line break does not end the statement.
_OPENERS = {
    "func", "var", "const", "type", "package", "import", "if", "for", "switch", "select", "go",
    "defer", "case", "else", "chan", "map", "struct", "interface", "range",
}  # fmt: skip


class _GoLexer:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.n = len(text)
        self.package: str | None = None
        self.units: list[Unit] = []
        self.lines = Lines(text)
        self.comments: list[SourceComment] = []
        self.pending: list[tuple[int, str]] = []  # waiver comments before the next token
        self.newline = False  # a line break since the last token
        self.ends = False  # the last token can end a statement
        self.statement: int | None = None  # where the current statement starts

    def skip_space_and_comments(self) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n":
                self.newline = self.newline or c == "\n"
                self.i += 1
            elif s.startswith("//", self.i):
                j = s.find("\n", self.i)
                inner = waiver_text(s[self.i + 2 : n if j == -1 else j])
                line_start = s.rfind("\n", 0, self.i) + 1
                if inner is not None and not s[line_start : self.i].strip():
                    self.pending.append((self.i, inner))
                self.i = n if j == -1 else j + 1
                self.newline = self.newline or j != -1
            elif s.startswith("/*", self.i):
                j = s.find("*/", self.i + 2)
                end = n if j == -1 else j + 2
                self.newline = self.newline or "\n" in s[self.i : end]
                self.i = end
            else:
                return

    def token(self, ends: bool) -> None:
        """A token starts at self.i: it starts a statement too when the last one ended."""
        if self.newline and self.ends:
            self.statement = None
        if self.statement is None:
            self.statement = self.i
        if self.pending:
            line = self.lines.at(self.i)[0]
            self.comments += [SourceComment(at, inner, line) for at, inner in self.pending]
            self.pending = []
        self.newline, self.ends = False, ends

    def ident(self) -> str:
        j = self.i
        while j < self.n and (self.s[j].isalnum() or self.s[j] == "_"):
            j += 1
        word, self.i = self.s[self.i : j], j
        return word

    def string(self) -> tuple[str, list[tuple[int, int]]]:
        """The literal at self.i (interpreted or raw), decoded, with its segments."""
        s = self.s
        quote = s[self.i]
        start = self.i + 1
        if quote == "`":
            j = s.find("`", start)
            j = self.n if j == -1 else j
            body = s[start:j]
            self.i = j + 1
            if "\r" not in body:
                return body, [(0, start)]
            out, segs, n = [], [(0, start)], 0
            for k, c in enumerate(body):
                if c == "\r":
                    segs.append((n, start + k + 1))
                    continue
                out.append(c)
                n += 1
            return "".join(out), segs
        out = []
        segs = [(0, start)]
        n = 0
        j = start
        while j < self.n and s[j] != '"' and s[j] != "\n":
            c = s[j]
            if c != "\\" or j + 1 >= self.n:
                out.append(c)
                n += 1
                j += 1
                continue
            e = s[j + 1]
            if e in SIMPLE_ESCAPES:
                value, width = SIMPLE_ESCAPES[e], 2
            elif e in "01234567" or e in "xuU":
                # \ooo, \xhh, \uhhhh, \Uhhhhhhhh; one Go does not accept is kept as written
                base, digits, skip = (
                    (8, 3, 1) if e in "01234567" else (16, {"x": 2, "u": 4, "U": 8}[e], 2)
                )
                try:
                    value = chr(int(s[j + skip : j + skip + digits], base))
                except (ValueError, OverflowError):
                    value = "\\" + e
                width = skip + digits
            else:
                value, width = "\\" + e, 2
            out.append(value)
            n += len(value)
            j += width
            segs.append((n, j))
        self.i = j + 1
        return "".join(out), segs

    def skip_rune(self) -> None:
        j = self.i + 1
        while j < self.n and self.s[j] != "'" and self.s[j] != "\n":
            j += 2 if self.s[j] == "\\" else 1
        self.i = j + 1

    def run(self) -> list[Unit]:
        s = self.s
        depth = 0
        func: tuple[str, ...] = ()
        func_depth = -1
        pending: tuple[str, ...] | None = None  # a func's name until its body opens
        paren = 0
        last_word = ""  # the word just before, for `interface{` and `X =`
        assigned: str | None = None
        while True:
            self.skip_space_and_comments()
            if self.i >= self.n:
                break
            c = s[self.i]
            if c in {'"', "`"}:
                self.token(True)
                self.literal(func or ((assigned,) if assigned else ()))
                continue
            if c == "'":
                self.token(True)
                self.skip_rune()
                continue
            if c.isalpha() or c == "_":
                start = self.i
                word = self.ident()
                self.i, word_end = start, self.i
                self.token(word not in _OPENERS)
                self.i = word_end
                if word == "package" and self.package is None:
                    self.skip_space_and_comments()
                    self.package = self.ident()
                elif word == "func" and depth == 0 and paren == 0 and pending is None:
                    pending = self.func_name()
                    paren = 0
                last_word = word
                continue
            self.token(c in ")]}" or c.isdigit() or (c in "+-" and s.startswith(c, self.i + 1)))
            self.i += 1
            before, last_word = last_word, ""
            if c in "{};":
                self.statement = None  # what follows starts a statement
            if c == "(":
                paren += 1
            elif c == ")":
                paren -= 1
            elif c == "=" and depth == 0 and not pending:
                if not s.startswith("=", self.i):
                    assigned = self.spec_name()
            elif c == "{":
                if pending is not None and paren <= 0 and before not in ("interface", "struct"):
                    func, func_depth, pending = pending, depth, None
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == func_depth:
                    func, func_depth = (), -1
            elif c == ";" and depth == 0:
                assigned = None
        self.comments += [SourceComment(at, inner, 0) for at, inner in self.pending]
        return self.units

    def spec_name(self) -> str | None:
        """The name a top-level `const`/`var` spec declares: the first word of its line (read
        at most 200 characters back, so a long line of `=` stays linear)."""
        start = max(self.s.rfind("\n", max(self.i - 201, 0), self.i - 1) + 1, self.i - 200)
        for word in self.s[start : self.i - 1].replace("(", " ").split():
            if word not in ("const", "var") and word.isidentifier():
                return word
        return None

    def func_name(self) -> tuple[str, ...]:
        """After `func`: (Receiver, Name) or (Name,)."""
        self.skip_space_and_comments()
        recv: str | None = None
        if self.i < self.n and self.s[self.i] == "(":
            close = self.s.find(")", self.i)
            inside = self.s[self.i + 1 : close if close != -1 else self.n]
            self.i = self.n if close == -1 else close + 1
            words = inside.replace("*", " ").split("[")[0].split()
            recv = words[-1] if words else None
            self.skip_space_and_comments()
        name = self.ident()
        return (recv, name) if recv else (name,)

    def literal(self, names: tuple[str, ...]) -> None:
        pieces: list[str] = []
        segs: list[tuple[int, int]] = []
        offset = 0  # the length of the pieces so far: joining stays linear
        while True:
            value, sg = self.string()
            segs += [(offset + a, b) for a, b in sg]
            pieces.append(value)
            offset += len(value)
            save = self.i
            self.skip_space_and_comments()
            if self.i < self.n and self.s[self.i] == "+":
                self.i += 1
                self.skip_space_and_comments()
                if self.i < self.n and self.s[self.i] in '"`':
                    continue
            self.i = save
            break
        text = "".join(pieces)
        if len(text) < 6 or not spaced(text):
            return
        parts = [self.package, *names] if self.package and names else list(names)
        self.units.append(
            Unit(
                text,
                segs,
                name=".".join(parts) if names else None,
                aliases=dotted_aliases(parts) if names else (),
                from_source=True,
                stmt_line=self.lines.at(self.statement if self.statement is not None else 0)[0],
            )
        )


def go_units(text: str) -> tuple[list[Unit], list[SourceComment]]:
    """The SQL candidates of a Go file, and its waiver comments."""
    lexer = _GoLexer(text)
    units = lexer.run()
    return units, lexer.comments
