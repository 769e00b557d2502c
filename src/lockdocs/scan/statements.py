"""A SQL file's statements, found with Postgres's own lexer even where it stops.

pglast's `scan` (the server's lexer) refuses a whole text at its first lexer error: an
unterminated quote or comment, a number with trailing junk (`1x`), a bad escape in a string.
Reading a file that way would lose every statement of it to one typo. Here the text is lexed in
windows, and after a lexer error the lexer is started again just past the bad token (or, for a
bad escape inside a string, with that one character blanked out), so the error costs only the
statement that holds it. An unterminated quote or comment runs, as in Postgres, to the end of
the file: everything from its statement on is unread. Statements end at `;`, except inside the
`BEGIN ... END` of a `CREATE FUNCTION` or `PROCEDURE` body (the rule psql uses).

Each window is lexed once or twice, and a window is kept only up to its last `;`, so the whole
costs about one lexing of the file, whatever its errors; `MAX_FAULTS` bounds the restarts.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from pglast.parser import ParseError, scan

from lockdocs.records import record

WINDOW = 1 << 16
MAX_FAULTS = 100
# A lexer error this close to a window's end may be the cut's doing (the longest escape,
# \U and eight digits, is ten characters): it is read again in a wider window.
_MARGIN = 16
_NEAR = ' at or near "'
_COMMENTS = ("SQL_COMMENT", "C_COMMENT")
_ROUTINES = ("FUNCTION", "PROCEDURE")


# A token: its name, and where it starts and ends (exclusive), in characters of the text.
Tok = tuple[str, int, int]


@record
class Fault:
    """A lexer error: its words, where it is, and whether nothing after it can be read."""

    message: str
    at: int
    fatal: bool


@record
class Chunk:
    """One statement's text (`start`..`end`, the `;` left out); `begin` is its first token
    that is not a comment (None for a chunk of comments only)."""

    start: int
    end: int
    begin: int | None
    comments: tuple[tuple[int, int], ...] = ()
    fault: Fault | None = None


def _scan(piece: str, base: int) -> tuple[list[Tok], tuple[str, int] | None]:
    """The tokens of `piece` (offsets from `base`), or the lexer's error (its words, the
    character offset in `piece`)."""
    try:
        raw = scan(piece)
    except ParseError as exc:
        message = str(exc.args[0]) if exc.args else str(exc)
        index = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else 0
        return [], (message, min(max(index, 0), len(piece)))
    return [(name, base + start, base + end + 1) for start, end, name, _ in raw], None


def _prefix(piece: str, base: int, cut: int) -> tuple[list[Tok], int]:
    """The tokens before `cut`; when the cut falls inside a token (a string holding a bad
    escape), the tokens before that token, and where it starts."""
    while True:
        toks, err = _scan(piece[:cut], base)
        if err is None:
            return toks, cut
        if err[1] >= cut:  # cannot happen: the text before the cut lexed up to it
            return [], cut
        cut = err[1]


def _last_semicolon(toks: list[Tok]) -> int | None:
    for i in range(len(toks) - 1, -1, -1):
        if toks[i][0] == "ASCII_59":
            return i
    return None


def _near(message: str) -> str | None:
    """The bad token Postgres quotes in its message ('... at or near "1x"')."""
    i = message.find(_NEAR)
    if i == -1 or not message.endswith('"'):
        return None
    return message[i + len(_NEAR) : -1] or None


def tokens(text: str) -> Iterator[list[Tok] | Fault]:
    """Every token of `text` in order, in batches, and a `Fault` where the lexer stopped."""
    n = len(text)
    pos = 0
    width = WINDOW
    faults = 0
    holes: list[int] = []  # characters blanked out (a bad escape inside a string)
    while pos < n:
        hi = min(n, pos + width)
        whole = hi == n
        piece = text[pos:hi]
        first = bisect_left(holes, pos)
        if first < len(holes) and holes[first] < hi:
            chars = list(piece)
            for h in holes[first:]:
                if h >= hi:
                    break
                chars[h - pos] = " "
            piece = "".join(chars)
        toks, err = _scan(piece, pos)
        if err is None and whole:
            yield toks
            return
        cut: list[Tok] | None = None
        if err is None:
            cut = toks[:-1]  # the last token may be cut by the window
        else:
            message, e = err
            runs_on = message.startswith("unterminated")
            bad = _near(message)
            before, s = _prefix(piece, pos, e)
            if not whole and (runs_on or e + len(bad or "") + _MARGIN >= len(piece)):
                # Perhaps only the window's cut made it (`1.5e|3`, a quote that closes past
                # the cut).
                cut = before
        if cut is not None:
            # Keep the statements up to the last `;` before the cut, or widen the window.
            k = _last_semicolon(cut)
            if k is None:
                width *= 2
                continue
            yield cut[: k + 1]
            pos = cut[k][2]
            width = WINDOW
            continue
        assert err is not None
        yield before
        faults += 1
        at = pos + e
        if runs_on or faults > MAX_FAULTS:
            yield Fault(message, at, True)
            return
        if bad is not None and piece.startswith(bad, e):
            yield Fault(message, at, False)
            pos = at + len(bad)
            continue
        if holes and holes[-1] >= at:
            yield Fault(message, at, True)  # blanking it did not help: stop here
            return
        # A bad character inside a token (an escape in a string): blank it, read the token again.
        yield Fault(message, at, False)
        holes.append(at)
        pos += s


def chunks(text: str) -> list[Chunk]:
    """The statements of `text`, each with its comments and its lexer error, if any."""
    out: list[Chunk] = []
    start = 0
    begin: int | None = None
    comments: list[tuple[int, int]] = []
    fault: Fault | None = None
    words: list[str] = []  # the statement's first words, for CREATE FUNCTION ... BEGIN
    depth = 0  # BEGIN ... END depth inside such a body
    parens = 0
    routine = False
    for batch in tokens(text):
        if isinstance(batch, Fault):
            fault = fault or batch
            if batch.fatal:
                out.append(Chunk(start, len(text), begin, tuple(comments), fault))
                return out
            continue
        for name, t_start, t_end in batch:
            if name in _COMMENTS:
                comments.append((t_start, t_end))
                continue
            if name == "ASCII_59" and depth == 0:
                out.append(Chunk(start, t_start, begin, tuple(comments), fault))
                start, begin, comments, fault = t_end, None, [], None
                words, depth, parens, routine = [], 0, 0, False
                continue
            if begin is None:
                begin = t_start
            if len(words) < 4:
                words.append(name)
                routine = _defines_routine(words)
            if not routine:
                continue
            if name == "ASCII_40":
                parens += 1
            elif name == "ASCII_41":
                parens -= 1
            elif parens == 0 and (name == "BEGIN_P" or (name == "CASE" and depth)):
                depth += 1
            elif parens == 0 and name == "END_P" and depth:
                depth -= 1
    if begin is not None or comments or fault is not None:
        out.append(Chunk(start, len(text), begin, tuple(comments), fault))
    return out


def _defines_routine(words: list[str]) -> bool:
    if len(words) < 2 or words[0] != "CREATE":
        return False
    if words[1] in _ROUTINES:
        return True
    return words[1:3] == ["OR", "REPLACE"] and len(words) > 3 and words[3] in _ROUTINES
