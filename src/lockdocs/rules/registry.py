"""Every rule's code, name, default severity and documentation, in one table.

A rule is registered where its check lives (`@rule(...)` on the function); the documentation
(What it does / Why it matters / Example / Use instead) is data here, so the rules reference page
is generated and every Example is run by the tests to prove it triggers its rule. The rule
modules are collected by the one explicit list of `lockdocs.rules.catalog`, which imports them;
this module imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.records import field, record

if TYPE_CHECKING:
    from lockdocs.rules.context import Context

Check = Callable[["Context"], Iterable[Diagnostic]]


@record
class RuleInfo:
    code: str
    name: str
    severity: Severity
    summary: str
    what: str
    why: str
    # The example: files (name -> text) of a project that triggers the rule.
    example: dict[str, str] = field(default_factory=dict)
    use_instead: dict[str, str] = field(default_factory=dict)
    check: Check | None = None
    family: str = ""


REGISTRY: dict[str, RuleInfo] = {}

FAMILIES = {
    "LD0": "Declarations (the files themselves)",
    "LD1": "Advisory keys",
    "LD2": "Lock order",
    "LD3": "Practice",
    "LD4": "Exceptions",
    "LD5": "Declared rules",
    "LD6": "Generated docs",
    "LD7": "Declarations against the code",
    "LD8": "Observed at run time (lockdocs observe)",
}


def register(info: RuleInfo) -> RuleInfo:
    if info.code in REGISTRY:  # pragma: no cover - a programming error caught by the tests
        raise ValueError(f"rule {info.code} registered twice")
    info = RuleInfo(**{**info.__dict__, "family": FAMILIES[info.code[:3]]})
    REGISTRY[info.code] = info
    return info


def rule(
    code: str,
    name: str,
    severity: Severity,
    *,
    summary: str,
    what: str,
    why: str,
    example: dict[str, str] | None = None,
    use_instead: Mapping[str, str | tuple[str, str]] | None = None,
) -> Callable[[Check], Check]:
    """Register a check. `use_instead` may give a file as (old, new): the example's file with
    that one edit, so the docs' fix reads as the change it is."""
    fixed = fixed_example(example or {}, use_instead or {})

    def deco(fn: Check) -> Check:
        register(RuleInfo(code, name, severity, summary, what, why, example or {}, fixed, fn))
        return fn

    return deco


def fixed_example(
    example: dict[str, str], edits: Mapping[str, str | tuple[str, str]]
) -> dict[str, str]:
    """The example's files, with the files in `edits` replaced or edited."""
    if not edits:
        return {}
    out = dict(example)
    for name, edit in edits.items():
        if isinstance(edit, tuple):
            old, new = edit
            if old not in example[name]:  # pragma: no cover - a programming error
                raise ValueError(f"{old!r} is not in the example's {name}")
            out[name] = example[name].replace(old, new, 1)
        else:
            out[name] = edit
    return out
