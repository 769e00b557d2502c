"""What a check is called with: a `Finder` makes the findings of one rule, with the code and
default severity its registration gives, and holds the project's values of the rule's options.
Its own module, so that the registry and the helpers every check shares (`context`) both use it
without importing each other."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.records import record


@record
class Finder:
    """What a check is called with: `finding(message, location, hint, ...)` makes a finding of
    the rule (its code, its default severity unless `severity` says otherwise), and `options`
    holds the project's value of each of the rule's options (the default where none is set)."""

    code: str
    severity: Severity
    options: Mapping[str, object]

    def __call__(
        self,
        message: str,
        location: Location,
        hint: str = "",
        *,
        severity: Severity | None = None,
        **keys: Any,
    ) -> Diagnostic:
        return Diagnostic(self.code, severity or self.severity, message, location, hint, **keys)
