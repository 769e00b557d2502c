"""The JSON Schema: valid, described everywhere, shipped, and in step with the model."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import jsonschema

from conftest import REPO, run_cli
from lockdocs import model as m
from lockdocs import records
from lockdocs.rules.catalog import option_schemas
from lockdocs.schema.definition import locks_schema, paths_schema, shipped_files

SCHEMA_DIR = REPO / "src" / "lockdocs" / "schema"


def _walk(node: Any, where: str, out: list[str]) -> None:
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            if "description" not in sub and "$ref" not in sub:
                out.append(f"{where}.{name}")
            _walk(sub, f"{where}.{name}", out)
        for key in ("additionalProperties", "items"):
            if isinstance(node.get(key), dict):
                _walk(node[key], f"{where}[{key}]", out)
        for key in ("oneOf", "anyOf"):
            for i, sub in enumerate(node.get(key) or []):
                _walk(sub, f"{where}/{key}{i}", out)
        for name, sub in (node.get("$defs") or {}).items():
            _walk(sub, f"$defs.{name}", out)


def test_schemas_are_valid_draft_2020_12() -> None:
    for schema in (locks_schema(), locks_schema(option_schemas()), paths_schema()):
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_property_has_a_description() -> None:
    missing: list[str] = []
    _walk(locks_schema(option_schemas()), "locks", missing)
    _walk(paths_schema(), "paths", missing)
    assert not missing


def test_shipped_files_are_current() -> None:
    for name, text in shipped_files(option_schemas()).items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run python -m lockdocs.devdocs"
        )


def test_cli_prints_the_schema() -> None:
    result = run_cli("schema")
    assert result.code == 0
    assert json.loads(result.out) == locks_schema(option_schemas())
    assert json.loads(run_cli("schema", "paths").out) == paths_schema()
    assert run_cli("schema", "nope").code == 2


def _fields(cls: type) -> set[str]:
    return {f.name for f in records.fields(cls)}


# Schema names that the model stores under another name, or derives.
RENAMED = {
    "taken_by": "takers",
    "instances": "instance_order",
    "issues": "issues",
}


def test_lock_schema_and_model_in_step() -> None:
    props = set(locks_schema()["properties"]["locks"]["additionalProperties"]["properties"])
    model_fields = _fields(m.Lock) - {"id", "location"}
    mapped = {RENAMED.get(p, p) for p in props}
    # instances: holds order (instance_order), within and key (the model's columns)
    lock = locks_schema()["properties"]["locks"]["additionalProperties"]
    instances = set(lock["properties"]["instances"]["properties"]) - {"order"}
    mapped |= {"columns" if p == "key" else p for p in instances}
    assert mapped == model_fields, mapped ^ model_fields


def test_transaction_and_path_schema_in_step() -> None:
    tx = set(locks_schema()["properties"]["transactions"]["additionalProperties"]["properties"])
    tx_fields = _fields(m.TransactionKind) - {"id", "location"}
    assert {"first_lock", "first_mode"} <= tx_fields
    assert {p for p in tx if p != "first"} == tx_fields - {"first_lock", "first_mode"}
    path = set(paths_schema()["properties"]["paths"]["additionalProperties"]["properties"])
    path_fields = _fields(m.Path) - {"id", "location", "group", "file"}
    assert path == path_fields


def test_step_kinds_in_step() -> None:
    steps = paths_schema()["$defs"]["step"]["oneOf"]
    keys = {next(iter(s["required"])) for s in steps if "required" in s}
    assert keys == {
        "take",
        "set",
        "loop",
        "branches",
        "run",
        "call",
        "external",
        "write",
        "begin",
        "commit",
        "rollback",
        "leave_open",
        "release",
    }
    take = next(s for s in steps if s.get("required") == ["take"])
    # derived: a take the declarations imply (a foreign-key check or its re-check), never
    # written as a step
    derived = {"location", "derived", "recheck"}
    # try: is a Python keyword; the model calls it attempt
    written = {"attempt" if k == "try" else k for k in take["properties"]}
    assert written - {"take"} | {"lock"} == (_fields(m.Take) - derived)
    # a set's elements are takes: what the set and an element can say is a take's
    one = next(s for s in steps if s.get("required") == ["set"])
    element = one["properties"]["set"]["items"]["oneOf"][1]
    said = {"attempt" if k == "try" else k for k in (*one["properties"], *element["properties"])}
    assert said - {"set", "take"} <= _fields(m.Take) | {"note"}


def test_editor_schema_lines_point_at_shipped_files() -> None:
    for yaml_file in [REPO / "locks.yaml", *sorted((REPO / "paths").glob("*.yaml"))]:
        if not yaml_file.exists():
            continue
        first = yaml_file.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), yaml_file
        target = (yaml_file.parent / first.split("=", 1)[1].strip()).resolve()
        assert target.is_file(), target
        assert Path(target).parent == SCHEMA_DIR


def _contract_rows(section: str) -> set[str]:
    """The field names of one table of docs/export.md (every code span of the first column)."""
    text = (REPO / "docs" / "export.md").read_text(encoding="utf-8")
    part = text.split(f"\n## {section}\n", 1)[1].split("\n#", 1)[0]
    names: set[str] = set()
    for line in part.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return names


def test_the_export_contract_page_lists_every_field_the_export_writes() -> None:
    from lockdocs.api import load
    from lockdocs.export import export_json

    model, _ = load(REPO)
    assert model is not None
    doc = json.loads(export_json(model))
    for section, sample in (
        ("Locks", doc["locks"][0]),
        ("Transaction kinds", doc["transactions"][0]),
        ("Paths", doc["paths"][0]),
    ):
        assert set(sample) == _contract_rows(section), section
    # the version the document carries is the one the contract page states
    version = doc["lockdocs_export"]
    text = (REPO / "docs" / "export.md").read_text(encoding="utf-8")
    assert f'The document carries `"lockdocs_export": {version}`' in text
    assert f"The version of this contract: `{version}`." in text
    # a backend's fields as the contract's Locks table lists them (dstack declares backends)
    other, _ = load(REPO / "examples" / "dstack")
    assert other is not None
    backends = [b for lock in json.loads(export_json(other))["locks"] for b in lock["backends"]]
    assert backends
    for b in backends:
        assert set(b) == {"name", "kind", "scope", "table", "mode", "how"}


def test_a_field_as_declared_is_in_the_schema_the_export_and_the_view() -> None:
    """model.locks.AS_DECLARED: the one mark that makes a lock's text field read, exported and
    given to the templates; the schema and the contract page must say it too."""
    from lockdocs.export import lock_json
    from lockdocs.render.view.locks import LockView

    declared = m.as_declared(m.Lock)
    assert {"title", "serializes", "notes"} <= set(declared)
    props = locks_schema()["properties"]["locks"]["additionalProperties"]["properties"]
    lock = m.Lock("a", "A", "row", "transaction", m.Location("locks.yaml", 1, 1))
    for name in declared:
        assert props[name]["type"] == "string", name
        assert name in lock_json(lock) and name in _contract_rows("Locks"), name
    assert "declared" in {f.name for f in dataclasses.fields(LockView)}
