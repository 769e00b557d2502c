"""The one explicit list of rule modules: importing this module registers every rule.

Each rule module imports `registry` and registers its checks as it is imported; nothing imports
back, so the rules layer has no import circle. `load_all()` is what a caller that needs every
rule (the check, the docs, SARIF, the known codes of an exception) calls; `option_schemas()`
gives the rules' options to the JSON Schema.
"""

from __future__ import annotations

from typing import Any

# Importing a rule module registers its rules: this import is the list.
from lockdocs.rules import (  # noqa: F401
    codescan,
    connections,
    declarations,
    declared,
    declared_levels,
    generated,
    holding,
    keyclash,
    keyrules,
    limits,
    observed,
    ordering,
    practice,
    processes,
    settings,
    upgrades,
    waivers,
)
from lockdocs.rules.registry import REGISTRY, RuleInfo


def load_all() -> dict[str, RuleInfo]:
    """Every registered rule, by code."""
    return dict(sorted(REGISTRY.items()))


def option_schemas() -> dict[str, dict[str, dict[str, Any]]]:
    """Each rule's options as `checks:` in the JSON Schema lists them (code -> option -> its
    schema, with what it does and its default)."""
    return {
        code: {
            name: {
                **opt.schema,
                "description": f"{opt.description} Default: {opt.default}.",
                "default": opt.default,
            }
            for name, opt in info.options.items()
        }
        for code, info in load_all().items()
        if info.options
    }
