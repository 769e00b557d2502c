"""A rule's options are written once, in its registration: they feed the JSON Schema (what
editors and the format reference read), the rules reference page and the check, and a project
sets them under `checks:` in locks.yaml (LD103: {min_odds: 0.01})."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import run_cli, write_project
from lockdocs import api, devdocs
from lockdocs.rules.catalog import load_all, option_schemas
from lockdocs.schema.definition import locks_schema

REGISTRY = load_all()
WITH_OPTIONS = sorted(code for code, info in REGISTRY.items() if info.options)


def test_some_rule_has_options() -> None:
    assert "LD103" in WITH_OPTIONS


@pytest.mark.parametrize("code", WITH_OPTIONS)
def test_options_feed_the_schema_and_the_rules_page(code: str) -> None:
    info = REGISTRY[code]
    checks = locks_schema(option_schemas())["properties"]["checks"]
    shape = checks["properties"][code]["oneOf"][1]
    page = devdocs.rules_reference()
    section = page[page.index(f"### {code} ") :]
    section = section[: section.index("\n### ")]
    for name, opt in info.options.items():
        # the default fits the option's own schema, and the schema is the one registered
        jsonschema.validate(opt.default, opt.schema)
        assert {k: shape["properties"][name][k] for k in opt.schema} == opt.schema
        assert shape["properties"][name]["default"] == opt.default
        assert f"| `{name}` |" in section and f"| `{opt.default}` |" in section
    assert shape["additionalProperties"] is False
    assert "**Options**" in section


def test_the_schema_command_and_the_shipped_schema_list_the_options() -> None:
    printed = json.loads(run_cli("schema").out)
    assert printed == locks_schema(option_schemas())
    shipped = Path(devdocs.SCHEMA_DIR / "locks.schema.json").read_text(encoding="utf-8")
    assert json.loads(shipped) == printed


def _findings(root: Path, checks: str) -> tuple[list[tuple[str, str]], int]:
    files = dict(REGISTRY["LD103"].example)  # a 32-bit family of 50,000 keys: 25% odds
    files["locks.yaml"] += checks
    write_project(root, files)
    result = api.check(root, drift=False)
    return [(d.code, d.severity.value) for d in result.diagnostics], result.exit_code


def test_an_option_changes_what_the_check_finds(tmp_path: Path) -> None:
    assert _findings(tmp_path, "")[0] == [("LD103", "info")]
    assert _findings(tmp_path, "checks:\n  LD103: {min_odds: 0.1}\n")[0] == [("LD103", "info")]
    assert _findings(tmp_path, "checks:\n  LD103: {min_odds: 0.5}\n") == ([], 0)
    both = "checks:\n  LD103: {severity: error, min_odds: 0.1}\n"
    assert _findings(tmp_path, both) == ([("LD103", "error")], 1)
    assert _findings(tmp_path, "checks:\n  LD103: {severity: off}\n") == ([], 0)


@pytest.mark.parametrize(
    ("setting", "message", "hint"),
    [
        ("LD103: {min_odd: 0.5}", "unknown field 'min_odd'", "did you mean 'min_odds'?"),
        ("LD103: {min_odds: 2}", "2 is above the largest allowed value, 1", "write 1 or less"),
        ("LD103: {min_odds: -1}", "-1 is below the smallest allowed value, 0", "write 0 or more"),
        ("LD103: {min_odds: many}", "expected number, found a string", "write a number here"),
        ("LD301: {min_odds: 0.5}", "unknown field 'min_odds'", "allowed here: severity"),
        ("LD103: {severity: loud}", "'loud' is not one of the allowed values", "use one of"),
    ],
)
def test_a_bad_option_is_a_located_error(
    tmp_path: Path, setting: str, message: str, hint: str
) -> None:
    files = dict(REGISTRY["LD103"].example)
    files["locks.yaml"] += f"checks:\n  {setting}\n"
    root = write_project(tmp_path, files)
    line = files["locks.yaml"].count("\n")
    result = run_cli("check", "--no-drift", "--root", str(root))
    assert result.code == 2, result.out
    assert f"locks.yaml:{line}:" in result.out and f"LD003 error: {message}" in result.out
    assert f"hint: {hint}" in result.out
