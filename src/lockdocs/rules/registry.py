"""Every rule's code, name, default severity, options and documentation, in one table.

A rule is registered where its check lives (`@rule(...)` on the function, or `describe(...)`
for a rule whose findings another stage makes: loading, drift, the scan); its code, default
severity and options are written there once. The check is called with a `Finder` that makes
its findings with that code and severity, and holds the project's values of its options
(`checks: {LD103: {min_odds: 0.01}}`, checked against the options' schemas by
`lockdocs.config`). The documentation (What it does / Why it matters / Example / Use instead /
Options) is data here, so the rules reference page and the options' part of the JSON Schema are
generated, and every Example is run by the tests to prove it triggers its rule. The rule
modules are collected by the one explicit list of `lockdocs.rules.catalog`, which imports them;
this module imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Required, TypedDict, Unpack

from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.records import field, record, replace
from lockdocs.rules.finder import Finder

if TYPE_CHECKING:
    from lockdocs.rules.context import CheckContext


@record
class Option:
    """One option a rule reads from `checks: {LDxxx: {name: value}}`: its JSON Schema (type and
    bounds), its default, and what it does (the rules page and the schema's description)."""

    schema: dict[str, Any]
    default: object
    description: str


Check = Callable[["CheckContext", Finder], Iterable[Diagnostic]]


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
    options: dict[str, Option] = field(default_factory=dict)

    def finder(self, options: Mapping[str, object] | None = None) -> Finder:
        """The rule's `Finder`, with the project's option values over the defaults."""
        values = {name: opt.default for name, opt in self.options.items()}
        values.update(options or {})
        return Finder(self.code, self.severity, values)

    def run(
        self, ctx: CheckContext, options: Mapping[str, object] | None = None
    ) -> list[Diagnostic]:
        """The rule's findings (none for a rule whose findings another stage makes)."""
        return [] if self.check is None else list(self.check(ctx, self.finder(options)))


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


class RuleDoc(TypedDict, total=False):
    """What a registration says besides the code, the name and the default severity."""

    summary: Required[str]
    what: Required[str]
    why: Required[str]
    # The files (name -> text) of a project that triggers the rule.
    example: dict[str, str]
    # The files the fix changes: a file's new text, None for a file the fix removes, or (old,
    # new): the example's file with that one edit, so the docs' fix reads as the change it is.
    use_instead: Mapping[str, str | tuple[str, str] | None]
    options: dict[str, Option]


def describe(code: str, name: str, severity: Severity, **doc: Unpack[RuleDoc]) -> RuleInfo:
    """Register a rule whose findings another stage makes (loading, drift, the scan)."""
    if code in REGISTRY:  # pragma: no cover - a programming error caught by the tests
        raise ValueError(f"rule {code} registered twice")
    example = doc.get("example", {})
    info = RuleInfo(
        code,
        name,
        severity,
        doc["summary"],
        doc["what"],
        doc["why"],
        example,
        fixed_example(example, doc.get("use_instead", {})),
        family=FAMILIES[code[:3]],
        options=doc.get("options", {}),
    )
    REGISTRY[code] = info
    return info


def rule(
    code: str, name: str, severity: Severity, **doc: Unpack[RuleDoc]
) -> Callable[[Check], Check]:
    """Register a rule and the check that finds it (the function it decorates)."""

    def deco(fn: Check) -> Check:
        info = describe(code, name, severity, **doc)
        REGISTRY[code] = replace(info, check=fn)
        return fn

    return deco


def fixed_example(
    example: dict[str, str], edits: Mapping[str, str | tuple[str, str] | None]
) -> dict[str, str]:
    """The example's files, with the files in `edits` replaced, edited or (None) removed."""
    if not edits:
        return {}
    out = dict(example)
    for name, edit in edits.items():
        if edit is None:
            del out[name]
        elif isinstance(edit, tuple):
            old, new = edit
            if old not in example[name]:  # pragma: no cover - a programming error
                raise ValueError(f"{old!r} is not in the example's {name}")
            out[name] = example[name].replace(old, new, 1)
        else:
            out[name] = edit
    return out
