"""LD020-LD021: settings that name nothing (a check code or a [tool.lockdocs] key that does not
exist). `lockdocs.config` finds them while it reads the settings; they are warnings, since the
declarations themselves are fine, and each says what was probably meant."""

from __future__ import annotations

from lockdocs.diagnostics import Severity
from lockdocs.rules.examples import LEDGER, LEDGER_PATH
from lockdocs.rules.registry import describe

_LOCKS = LEDGER + "    serializes: entries of one ledger\n"

_PATH = LEDGER_PATH.replace("paths:\n", "transaction: plain\npaths:\n", 1)

_TX = "transactions:\n  plain: {lock_timeout: 5s}\n"

describe(
    "LD020",
    "unknown-check-code",
    Severity.WARNING,
    summary="A severity setting names a check code that does not exist.",
    what="Reports each code under `checks:` in locks.yaml or `[tool.lockdocs.checks]` in "
    "pyproject.toml that is not a lockdocs check (`lockdocs rules` lists them), with the "
    "code it most likely means (`ld302` for LD302).",
    why="A setting for a code that does not exist changes nothing: the check it was meant for "
    "keeps its default severity while the file says otherwise.",
    example={
        "locks.yaml": _LOCKS + _TX + "checks:\n  ld302: info\n",
        "paths/ledger.yaml": _PATH,
    },
    use_instead={
        "locks.yaml": _LOCKS + _TX + "checks:\n  LD302: info\n",
        "paths/ledger.yaml": _PATH,
    },
)

describe(
    "LD021",
    "unknown-setting",
    Severity.WARNING,
    summary="[tool.lockdocs] in pyproject.toml holds a key lockdocs does not read.",
    what="Reports each key of `[tool.lockdocs]` other than `checks`, `rules_url` and "
    "`dot_timeout`, at its line, with the setting it most likely means.",
    why="A misspelt setting is ignored without a word: `dot_timout = 600` leaves the drawing "
    "timeout at its default.",
    example={
        "locks.yaml": _LOCKS + _TX,
        "paths/ledger.yaml": _PATH,
        "pyproject.toml": "[tool.lockdocs]\ndot_timout = 600\n",
    },
    use_instead={
        "locks.yaml": _LOCKS + _TX,
        "paths/ledger.yaml": _PATH,
        "pyproject.toml": "[tool.lockdocs]\ndot_timeout = 600\n",
    },
)
