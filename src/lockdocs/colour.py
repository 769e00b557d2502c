"""Colour for the text report on a terminal: the severity, the code and the hint stand out.

The reporters stay plain (their text is tested byte for byte and written to files and CI logs);
`paint` adds ANSI colours to a finished text report when `wanted` says the stream is a terminal.
NO_COLOR (any non-empty value, https://no-color.org) turns colour off, FORCE_COLOR on even
when the output is not a terminal (a CI log that shows colours); TERM=dumb turns it off.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
SEVERITY = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "info": "\x1b[1;36m"}

# path:line:col: CODE severity[ (waived: ...)]: message
_FINDING_RE = re.compile(
    r"^(?P<where>[^\n]*?:\d+:\d+: )(?P<code>LD\d{3}) (?P<sev>error|warning|info)(?P<rest>[ :])",
    re.MULTILINE,
)
_HINT_RE = re.compile(r"^(?P<lead> *)hint:", re.MULTILINE)
_SUMMARY_RE = re.compile(
    r"^(?P<errors>\d+ errors?), (?P<warnings>\d+ warnings?), (?P<info>\d+ info), ", re.MULTILINE
)


def wanted(stream: TextIO) -> bool:
    """Whether to colour what goes to `stream`."""
    env = os.environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _count(text: str, colour: str) -> str:
    return text if text.startswith("0 ") else f"{colour}{text}{RESET}"


def paint(text: str) -> str:
    """The report with colours: each finding's code bold and severity in its colour, `hint:`
    dim, and the summary's non-zero counts coloured. The words do not change."""
    text = _FINDING_RE.sub(
        lambda m: (
            f"{m['where']}{BOLD}{m['code']}{RESET} {SEVERITY[m['sev']]}{m['sev']}{RESET}{m['rest']}"
        ),
        text,
    )
    text = _HINT_RE.sub(lambda m: f"{m['lead']}{DIM}hint:{RESET}", text)
    return _SUMMARY_RE.sub(
        lambda m: (
            f"{_count(m['errors'], SEVERITY['error'])}, "
            f"{_count(m['warnings'], SEVERITY['warning'])}, "
            f"{_count(m['info'], SEVERITY['info'])}, "
        ),
        text,
    )


def write(stream: TextIO, text: str) -> None:
    """Write a text report, coloured when the stream is a terminal."""
    stream.write(paint(text) if wanted(stream) else text)
