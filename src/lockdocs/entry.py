"""The console entry point: plain `check` and `validate` go straight to their command bodies;
everything else (help, other commands, unusual spellings) goes through the typer app.

Both routes run the same functions of `commands/check.py`; `tests/test_entry.py` runs each supported
spelling both ways and compares the output byte for byte. Set LOCKDOCS_NO_FAST=1 to always use
the typer route.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from pathlib import Path
from typing import NamedTuple

from lockdocs.commands import Format

_FORMATS = ("text", "json", "github", "sarif")


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
            if value not in _FORMATS:
                return None
            fmt = value
        elif tok in _CHECK_FLAGS and command == "check" and _CHECK_FLAGS[tok] not in flags:
            flags[_CHECK_FLAGS[tok]] = tok == "--diff"
        else:
            return None
        i += 1
    return _Plan(command, root, fmt, **flags)


def _tolerant_streams() -> None:
    """Under LC_ALL=C with PYTHONUTF8=0 stdout is ASCII: a non-ASCII title or project path
    in a message would stop the run with UnicodeEncodeError. Such characters are written as
    backslash escapes instead (a UTF-8 terminal sees no change)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def main() -> None:
    """Maps anything unexpected to exit code 3 instead of a traceback."""
    # A run builds many small objects and frees them at exit; Python's default collector
    # thresholds scan the growing heap again and again (measured: loading the 100x synthetic
    # project takes 2.2 s with them, 1.3 s with these, and 1000x is near-linear again).
    gc.set_threshold(100_000, 50, 1000)
    _tolerant_streams()
    try:
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

        fmt = Format(plan.fmt)
        if plan.command == "check":
            sys.exit(check(plan.root, fmt, plan.drift, show_diff=plan.show_diff, svg=plan.svg))
        sys.exit(validate(plan.root, fmt))
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("lockdocs: interrupted\n")
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("LOCKDOCS_DEBUG"):
            raise
        sys.stderr.write(
            f"lockdocs: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in lockdocs. Run again with LOCKDOCS_DEBUG=1 for the traceback and "
            "report it.\n"
        )
        sys.exit(3)
