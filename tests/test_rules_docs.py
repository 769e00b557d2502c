"""Every rule is documented beside its code, and every documented example does what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Run, run_cli, write_project
from lockdocs.rules.catalog import load_all

REGISTRY = load_all()


def test_codes_are_stable_and_grouped() -> None:
    for code, info in REGISTRY.items():
        assert code == info.code
        assert code[:2] == "LD" and len(code) == 5 and code[2:].isdigit()
        assert info.name and info.name == info.name.lower()
        assert info.summary.endswith("."), code
        assert info.what and info.why, code
        assert info.family


def test_every_rule_has_an_example() -> None:
    missing = [code for code, info in REGISTRY.items() if not info.example]
    assert not missing


def _run(code: str, root: Path, *args: str) -> Run:
    """`lockdocs check` on an example, or for an observed rule (LD8xx) `lockdocs observe` on
    the log the example holds."""
    if code.startswith("LD8"):
        log = str(root / "server.log")
        return run_cli("observe", log, "--format", "json", "--root", str(root))
    return run_cli("check", *args, "--format", "json", "--root", str(root))


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_example_triggers_its_rule(tmp_path: Path, code: str) -> None:
    info = REGISTRY[code]
    root = write_project(tmp_path / "bad", info.example)
    drift = [] if code.startswith("LD6") else ["--no-drift"]  # LD6xx concern the rendering
    result = _run(code, root, *drift)
    assert "Traceback" not in result.err
    diagnostics = result.json()["diagnostics"]
    codes = {d["code"] for d in diagnostics}
    assert code in codes, result.out
    # a finding is made from its registration: the example finds it at the default severity
    found = {d["severity"] for d in diagnostics if d["code"] == code}
    assert found == {info.severity.value}, result.out
    empty = [d for d in diagnostics if not d["message"].strip()]
    assert not empty, empty  # every diagnostic says what is wrong
    if info.severity.value == "error":
        assert result.code in (1, 2)


@pytest.mark.parametrize("code", sorted(c for c, i in REGISTRY.items() if i.use_instead))
def test_use_instead_is_clean_of_the_rule(tmp_path: Path, code: str) -> None:
    root = write_project(tmp_path / "good", REGISTRY[code].use_instead)
    result = _run(code, root, "--no-drift")
    codes = {d["code"] for d in result.json()["diagnostics"]}
    assert code not in codes, result.out
    assert result.code in (0, 1)


def test_severity_can_be_changed_and_turned_off(tmp_path: Path) -> None:
    info = REGISTRY["LD302"]
    files = dict(info.example)
    root = write_project(tmp_path / "p", files)
    assert run_cli("check", "--no-drift", "--root", str(root)).code == 0  # a warning
    files["locks.yaml"] = files["locks.yaml"] + "checks:\n  LD302: error\n"
    write_project(root, files)
    result = run_cli("check", "--no-drift", "--root", str(root))
    assert result.code == 1 and "LD302 error" in result.out
    files["locks.yaml"] = files["locks.yaml"].replace("LD302: error", "LD302: off")
    write_project(root, files)
    result = run_cli("check", "--no-drift", "--root", str(root))
    assert result.code == 0 and "LD302" not in result.out


def test_pyproject_settings_apply_and_locks_yaml_wins(tmp_path: Path) -> None:
    files = dict(REGISTRY["LD302"].example)
    files["pyproject.toml"] = "[tool.lockdocs.checks]\nLD302 = 'error'\n"
    root = write_project(tmp_path / "p", files)
    assert run_cli("check", "--no-drift", "--root", str(root)).code == 1
    files["locks.yaml"] = files["locks.yaml"] + "checks:\n  LD302: info\n"
    write_project(root, files)
    result = run_cli("check", "--no-drift", "--root", str(root))
    assert result.code == 0 and "LD302 info" in result.out


def test_rules_command_lists_every_code() -> None:
    result = run_cli("rules", "--format", "json")
    assert [r["code"] for r in result.json()] == sorted(REGISTRY)
