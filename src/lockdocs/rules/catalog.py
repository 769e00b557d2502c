"""The one explicit list of rule modules: importing this module registers every rule.

Each rule module imports `registry` and registers its checks as it is imported; nothing imports
back, so the rules layer has no import circle. `load_all()` is what a caller that needs every
rule (the check, the docs, SARIF, the known codes of an exception) calls.
"""

from __future__ import annotations

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
