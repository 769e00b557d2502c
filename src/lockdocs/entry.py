"""The console entry point: plain `check` and `validate` go straight to their command bodies;
everything else (help, other commands, unusual spellings) goes through the typer app.

Both routes run the same functions of `commands/check.py`; `tests/test_entry.py` runs each supported
spelling both ways and compares the output byte for byte. Set LOCKDOCS_NO_FAST=1 to always use
the typer route.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import sys
from pathlib import Path
from typing import NamedTuple

from lockdocs.report import FORMATS


class _Plan(NamedTuple):
    command: str
    root: Path | None
    fmt: str
    drift: bool = True
    show_diff: bool = False
    svg: bool = True


_CHECK_FLAGS = {"--no-drift": "drift", "--diff": "show_diff", "--no-svg": "svg"}


def _fast(argv: list[str]) -> _Plan | None:
    """What to run for the spellings handled here, else None."""
    if not argv or argv[0] not in ("check", "validate"):
        return None
    command, root, fmt = argv[0], None, "text"
    flags: dict[str, bool] = {}
    i = 1
    while i < len(argv):
        tok = argv[i]
        name, eq, value = tok.partition("=")
        if name in ("--root", "--format", "-f") and not eq:
            if i + 1 >= len(argv):
                return None
            value = argv[i + 1]
            i += 1
        if name == "--root":
            if root is not None or not value or value.startswith("-"):
                return None
            root = Path(value)
            if root.exists() and not root.is_dir():
                return None  # typer words this usage error
        elif name in ("--format", "-f") and (name == "--format" or not eq):
            if value not in FORMATS:
                return None
            fmt = value
        elif tok in _CHECK_FLAGS and command == "check" and _CHECK_FLAGS[tok] not in flags:
            flags[_CHECK_FLAGS[tok]] = tok == "--diff"
        else:
            return None
        i += 1
    return _Plan(command, root, fmt, **flags)


def _utf8_mode() -> None:
    """lockdocs reads and writes UTF-8 files whatever the locale. Under LC_ALL=C with
    PYTHONUTF8=0, Python decodes file names as ASCII (a non-ASCII name becomes lone surrogates
    that no UTF-8 file can hold) and cannot open a page named with a non-ASCII character, so
    the run starts again, once, in Python's UTF-8 mode (as under a plain C locale, where
    Python turns it on by itself)."""
    if sys.flags.utf8_mode or sys.getfilesystemencoding().lower().replace("-", "") == "utf8":
        return
    if os.environ.get(_REEXEC) or not getattr(sys, "orig_argv", None):
        return  # tried once already, or no command line to start again with
    env = {**os.environ, "PYTHONUTF8": "1", _REEXEC: "1"}
    with contextlib.suppress(OSError):  # else go on: the streams below are still tolerant
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, sys.orig_argv, env)


_REEXEC = "LOCKDOCS_UTF8_RESTARTED"


def _tolerant_streams() -> None:
    """Under a locale whose encoding is not UTF-8 stdout may be ASCII: a non-ASCII title or
    project path in a message would stop the run with UnicodeEncodeError. Such characters are
    written as backslash escapes instead (a UTF-8 terminal sees no change)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def _closed_streams() -> None:
    """Started with stderr closed (2>&-), Python gives None for it, and the first message
    would end the run with exit 1 ("findings"): messages are dropped instead, and the exit code
    still tells. Started with stdout closed (>&-), nothing can be written: exit 2 at once, before
    anything is read or written (as a write error is for other tools)."""
    if sys.stderr is None:
        sys.stderr = Path(os.devnull).open("w", encoding="utf-8")  # noqa: SIM115 (until exit)
    if sys.stdout is None:
        sys.stderr.write(
            "lockdocs: the standard output is closed (>&-), so nothing can be written; to "
            "discard the output, send it to /dev/null\n"
        )
        sys.exit(2)


def _pipe_closed_under_click() -> bool:
    """Whether click (the typer route; typer vendors it as typer._click) met a closed pipe: it
    swaps stdout for its own wrapper and exits 1, which would read as "findings"."""
    kind = type(sys.stdout)
    return kind.__module__.endswith("click.utils") and "PacifyFlushWrapper" in kind.__name__


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit cannot fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)


def _fault(exc: BaseException) -> str | None:
    """A plain message for a fault of the environment (not of lockdocs, not of the input), or
    None for anything else."""
    if isinstance(exc, BrokenPipeError):
        return (
            "the output was cut off: whatever reads it closed the pipe before lockdocs "
            "finished writing (the result is unknown; run it without the pipe to see it)"
        )
    if isinstance(exc, MemoryError):
        return (
            "out of memory; the declarations need more than this machine (or its memory "
            "limit) allows: lower limits.path_work or limits.analysis_work in locks.yaml"
        )
    if isinstance(exc, OSError):
        try:
            Path.cwd()
        except OSError:
            return (
                "the working folder no longer exists (deleted or moved); cd into the project again"
            )
        what = exc.strerror or type(exc).__name__
        name = exc.filename if exc.filename is not None else ""
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            where = f"writing {name}" if name else "writing the output"
            return f"{what} ({where}): the disk is full; free some space and run it again"
        return f"{what}: {name}" if name else what
    return None


def _run(at_once: bool) -> None:
    plan = None if os.environ.get("LOCKDOCS_NO_FAST") else _fast(sys.argv[1:])
    if plan is None:
        # The lazy boundary of the typer app: only the spellings the fast route does not
        # handle pay for typer and its pydantic models.
        from lockdocs.cli import app

        app()
        return
    # The lazy boundary of the pipeline: only a run of check or validate loads it (the
    # typer route loads the body of the command it parses, if any).
    from lockdocs.commands.check import check, validate

    fmt = plan.fmt
    if plan.command == "check":
        code = check(plan.root, fmt, plan.drift, show_diff=plan.show_diff, svg=plan.svg)
        _finish(code, at_once)
    _finish(validate(plan.root, fmt), at_once)


def _finish(code: int, at_once: bool) -> None:
    """End a run of check or validate. `at_once` (the program, not a caller of `main` in its
    own process): leave without tearing down the heap. Python's exit frees every object one by
    one (the model, the analysis: 12 ms of a 10x check's 175, 25 ms at 100x), and nothing is
    left to do by then (no thread, no open file, no exit handler of lockdocs'), so the output
    is flushed and the process ends. Not under a profiler or a tracer (cProfile, coverage):
    they write what they found at exit."""
    if at_once and sys.getprofile() is None and sys.gettrace() is None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def console() -> None:
    """The `lockdocs` program: `main`, allowed to end the process at once (`_finish`)."""
    main(at_once=True)


def main(*, at_once: bool = False) -> None:
    """Maps a fault of the environment (a closed pipe, a deleted working folder, no memory)
    to exit code 2 with a plain message, and anything else unexpected to exit code 3 instead
    of a traceback."""
    # A run builds many small objects and frees them at exit; Python's default collector
    # thresholds scan the growing heap again and again (measured: loading the 100x synthetic
    # project takes 2.2 s with them, 1.3 s with these, and 1000x is near-linear again).
    gc.set_threshold(100_000, 50, 1000)
    _closed_streams()
    _utf8_mode()
    _tolerant_streams()
    try:
        try:
            _run(at_once)
        except SystemExit:
            # Flushed here, where a closed pipe is caught, rather than at exit.
            sys.stdout.flush()
            if _pipe_closed_under_click():
                raise BrokenPipeError(errno.EPIPE, "Broken pipe") from None
            raise
        sys.stdout.flush()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("lockdocs: interrupted\n")
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("LOCKDOCS_DEBUG"):
            raise
        fault = _fault(exc)
        if fault is not None:
            if isinstance(exc, BrokenPipeError):
                _quiet_stdout()
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(f"lockdocs: {fault}\n")
            sys.exit(2)
        sys.stderr.write(
            f"lockdocs: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in lockdocs. Run again with LOCKDOCS_DEBUG=1 for the traceback and "
            "report it.\n"
        )
        sys.exit(3)
