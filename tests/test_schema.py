"""The JSON Schema: valid, described everywhere, shipped, and in step with the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from conftest import REPO, run_cli
from lockdocs import model as m
from lockdocs import records
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
    for schema in (locks_schema(), paths_schema()):
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_property_has_a_description() -> None:
    missing: list[str] = []
    _walk(locks_schema(), "locks", missing)
    _walk(paths_schema(), "paths", missing)
    assert not missing


def test_shipped_files_are_current() -> None:
    for name, text in shipped_files().items():
        assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run python -m lockdocs.schema.definition"
        )


def test_cli_prints_the_schema() -> None:
    result = run_cli("schema")
    assert result.code == 0
    assert json.loads(result.out) == locks_schema()
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
