"""Per-project settings: rule severities from locks.yaml `checks:` and [tool.lockdocs]."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from lockdocs.diagnostics import Diagnostic, Location, Severity


def pyproject_settings(root: Path) -> tuple[dict[str, Any], list[Diagnostic]]:
    file = root / "pyproject.toml"
    if not file.is_file():
        return {}, []
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        return {}, [
            Diagnostic(
                "LD003",
                Severity.ERROR,
                f"cannot read pyproject.toml: {exc}",
                Location("pyproject.toml", 1, 1),
                "fix the TOML syntax",
            )
        ]
    section = data.get("tool", {}).get("lockdocs", {})
    return (section if isinstance(section, dict) else {}), []


def severity_overrides(
    root: Path, from_locks: dict[str, str]
) -> tuple[dict[str, str], list[Diagnostic]]:
    """locks.yaml wins over pyproject.toml: it sits next to the declarations it configures."""
    settings, diags = pyproject_settings(root)
    merged: dict[str, str] = {}
    checks = settings.get("checks", {})
    if isinstance(checks, dict):
        for code, value in checks.items():
            if value not in ("error", "warning", "info", "off"):
                diags.append(
                    Diagnostic(
                        "LD003",
                        Severity.ERROR,
                        f"[tool.lockdocs] checks.{code} = {value!r} is not a severity",
                        Location("pyproject.toml", 1, 1),
                        "use error, warning, info or off",
                    )
                )
                continue
            merged[str(code)] = str(value)
    merged.update(from_locks)
    return merged, diags


def apply_overrides(diags: list[Diagnostic], overrides: dict[str, str]) -> list[Diagnostic]:
    from dataclasses import replace

    out = []
    for d in diags:
        setting = overrides.get(d.code)
        if setting == "off" and not d.code.startswith("LD0"):
            continue
        if setting in ("error", "warning", "info") and not d.code.startswith("LD0"):
            d = replace(d, severity=Severity(setting))
        out.append(d)
    return out
