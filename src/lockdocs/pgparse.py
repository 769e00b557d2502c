"""PostgreSQL's own parser (pglast), safe on any text a pull request can hold.

Postgres's grammar accepts expressions nested thousands of levels deep (a 16,000-term sum, a
32,000-link cast chain), and everything after the grammar walks the tree recursively: pglast's
conversion to Python objects (which overflows the C stack and kills the process with SIGSEGV
near 50,000 levels), `json.loads` of the JSON tree (RecursionError near 500), and every visitor
of the tree in lockdocs. So a long text is read on a thread with a stack of its own, large
enough for the deepest tree the grammar lets through, with the recursion limit raised while it
runs; the grammar's own limit ("stack depth limit exceeded", the words the server uses) is the
only bound. Short texts, the common case, are read on the calling thread.

`deep(fn, *args)` runs any reading of a tree (a parse and the walk over its result) that way;
`parse_json`, `parse` and `parse_plpgsql_json` are the parser's entry points wrapped in it.
`TooDeep` (a ParseError) is raised when even that is not enough, so a caller says so at the
statement and never crashes.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pglast import ast
from pglast import parser as _parser
from pglast.parser import ParseError

T = TypeVar("T")

# No text shorter than this can nest deep enough to trouble the calling thread: each level of
# a tree takes at least one character, and a walk of the tree a few Python frames a level.
SHORT = 256
# The deep thread's stack. Only the pages a deep tree touches are ever allocated; measured, a
# 100,000-term sum converts to Python objects in under 4 s within it.
_STACK = 512 * 1024 * 1024
_RECURSION = 1_000_000

__all__ = [
    "SHORT",
    "ParseError",
    "TooDeep",
    "comments",
    "deep",
    "fingerprint",
    "parse",
    "parse_json",
    "parse_plpgsql_json",
    "tokens",
]


class TooDeep(ParseError):
    """The text nests deeper than lockdocs can walk, even on its own stack. A ParseError, so
    every caller that reports an unreadable statement reports this one too."""


_NAME = "lockdocs-deep-parse"
_lock = threading.Lock()
_reply: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
_jobs: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[tuple[bool, Any]]]] | None = (
    None
)


def _serve(
    jobs: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[tuple[bool, Any]]]],
) -> None:
    while True:
        job, reply = jobs.get()
        try:
            reply.put((True, job()))
        except BaseException as exc:  # noqa: BLE001 (re-raised on the calling thread)
            reply.put((False, exc))


def deep(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on the deep thread: a large stack and a raised recursion limit.

    One daemon thread serves every call (starting a thread with this stack costs about 250 us;
    handing it a job, a few). Calls are serialised: the recursion limit is the interpreter's,
    so two deep calls at once would restore each other's. The calling thread only waits."""
    global _jobs  # noqa: PLW0603 (the one worker, started on first use)
    if threading.current_thread().name == _NAME:
        return fn(*args)  # already on the deep stack
    with _lock:
        if _jobs is None:
            jobs: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[tuple[bool, Any]]]]
            jobs = queue.SimpleQueue()
            old_stack = threading.stack_size()
            try:
                threading.stack_size(_STACK)
                # The size applies when the thread starts, so it is restored only after.
                threading.Thread(target=_serve, args=(jobs,), name=_NAME, daemon=True).start()
            finally:
                threading.stack_size(old_stack)
            _jobs = jobs
        reply = _reply
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(_RECURSION)
        try:
            _jobs.put((lambda: fn(*args), reply))
            ok, value = reply.get()
        finally:
            sys.setrecursionlimit(old_limit)
    if ok:
        return value  # type: ignore[no-any-return]
    if isinstance(value, RecursionError | MemoryError):
        raise TooDeep("the statement nests too deeply for lockdocs to read", 0) from value
    raise value


def _guarded(fn: Callable[..., T], text: str, *args: Any) -> T:
    if len(text) < SHORT:
        try:
            return fn(text, *args)
        except RecursionError:
            pass
    return deep(fn, text, *args)


def _json(text: str) -> Any:
    return json.loads(_parser.parse_sql_json(text))


def parse_json(text: str) -> Any:
    """The JSON parse tree of `text` as Python data (libpg_query's form)."""
    return _guarded(_json, text)


def _objects(text: str) -> tuple[ast.RawStmt, ...]:
    # The grammar first: its stack check refuses what the server would refuse, in the server's
    # words, before pglast builds any Python object.
    _parser.parse_sql_json(text)
    return tuple(_parser.parse_sql(text))


def parse(text: str) -> tuple[ast.RawStmt, ...]:
    """The statements of `text` as pglast's AST objects."""
    return _guarded(_objects, text)


def _plpgsql(text: str) -> Any:
    return json.loads(_parser.parse_plpgsql_json(text))


def parse_plpgsql_json(text: str) -> Any:
    """The PL/pgSQL parse tree of a CREATE FUNCTION statement as Python data."""
    return _guarded(_plpgsql, text)


def fingerprint(text: str) -> str:
    """pg_query's fingerprint of `text`: equal for statements of one shape, whatever their
    constants, comments, layout and IN-list lengths (a parse in C, no Python tree)."""
    return _guarded(_parser.fingerprint, text)


def normalize(text: str) -> str:
    """pg_query's normalized text: every constant made a parameter ($1, $2, ... after the
    highest the text has), all else (names, aliases, comments, layout) as written."""
    return _guarded(_parser.normalize, text)


def _tokens(text: str) -> list[tuple[str, int, int]]:
    # by index, not by name: a Token is a namedtuple (start, end, name, kind), and a log's
    # new texts are each scanned
    return [(t[2], t[0], t[1] + 1) for t in _parser.scan(text)]


def tokens(text: str) -> list[tuple[str, int, int]]:
    """The tokens of `text` as (name, start, end), by Postgres's own lexer: SCONST, ICONST,
    C_COMMENT, ... (character offsets, end exclusive)."""
    return _guarded(_tokens, text)


def comments(text: str) -> list[tuple[int, int, str]]:
    """The comments of `text` as (start, end, text), found by Postgres's own lexer."""
    return [
        (start, end, text[start:end])
        for name, start, end in tokens(text)
        if name in ("SQL_COMMENT", "C_COMMENT")
    ]
