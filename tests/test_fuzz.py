"""Fuzzing: documents generated from the JSON Schema and mutations of the flagship files.

Whatever the input, lockdocs answers with exit code 0, 1 or 2 and located diagnostics, never a
traceback. The default suite runs a small sample; `pytest -m fuzz` (make fuzz) runs the large,
bounded one and prints its counts.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import REPO, typer_command_once
from lockdocs.cli import app
from lockdocs.schema.definition import locks_schema, paths_schema

RUNNER = CliRunner()
typer_command_once()  # the app's click command built once, not on every invoke
FUZZ_CASES = int(os.environ.get("LOCKDOCS_FUZZ_CASES", "10000"))
SAMPLE_CASES = 150


def run_in_process(root: Path) -> tuple[int, str]:
    result = RUNNER.invoke(app, ["check", "--no-drift", "--format", "json", "--root", str(root)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback on input in {root}: {result.exception!r}") from (
            result.exception
        )
    return result.exit_code, result.stdout


# --- strategies from the JSON Schema -------------------------------------------------------------


def _from_schema(
    node: dict[str, Any], defs: dict[str, Any], depth: int = 0
) -> st.SearchStrategy[Any]:
    if "$ref" in node:
        return st.deferred(lambda: _from_schema(defs[node["$ref"].split("/")[-1]], defs, depth + 1))
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "oneOf" in node:
        return st.one_of([_from_schema(s, defs, depth + 1) for s in node["oneOf"]])
    t = node.get("type")
    if t == "string":
        if "pattern" in node and node["pattern"].startswith("^"):
            return st.from_regex(node["pattern"], fullmatch=True)
        return st.text(min_size=node.get("minLength", 0), max_size=12)
    if t == "integer":
        return st.integers(min_value=node.get("minimum", -(2**63)), max_value=2**63 - 1)
    if t == "boolean":
        return st.booleans()
    if t == "array":
        items = node.get("items", {"type": "string"})
        if depth > 6:
            return st.just([])
        return st.lists(
            _from_schema(items, defs, depth + 1), min_size=node.get("minItems", 0), max_size=3
        )
    if t == "object" or "properties" in node:
        props = node.get("properties", {})
        required = node.get("required", [])
        extra = node.get("additionalProperties")
        fixed = {k: _from_schema(props[k], defs, depth + 1) for k in required if k in props}
        optional = (
            {k: _from_schema(v, defs, depth + 1) for k, v in props.items() if k not in required}
            if depth < 7
            else {}
        )
        base = st.fixed_dictionaries(fixed, optional=optional)
        if isinstance(extra, dict):
            keys = st.from_regex(r"^[a-z][a-z0-9-]{0,6}$", fullmatch=True)
            return st.dictionaries(
                keys,
                _from_schema(extra, defs, depth + 1),
                min_size=node.get("minProperties", 0),
                max_size=3,
            )
        return base
    return st.none()


LOCKS = _from_schema(locks_schema(), locks_schema()["$defs"])
PATHS = _from_schema(paths_schema(), paths_schema()["$defs"])


# --- mutations of the flagship -------------------------------------------------------------------


def _flagship_files() -> dict[str, str]:
    files = {"locks.yaml": (REPO / "locks.yaml").read_text(encoding="utf-8")}
    for p in sorted((REPO / "paths").glob("*.yaml")):
        files[f"paths/{p.name}"] = p.read_text(encoding="utf-8")
    return files


# Hostile scalars (issue 18): tags that cannot construct, numbers too long or too large, ids
# with a trailing newline, escape sequences, links disguised with entities.
HOSTILE_VALUES = [
    "!!int abc",
    "!!float x",
    "!!timestamp 2020-99-99",
    '!!binary "@@"',
    "!!python/object/apply:os.system ['true']",
    "9" * 5000,
    "9" * 30,
    '"5s\\n"',
    '"\\e[32mok\\e[0m\\e]52;c;eA==\\a"',
    '"javascript&#58;alert&#40;1&#41;"',
    '"[x](javascript&colon;alert(1)) !!! danger"',
    '"??? note"',
]


def _mutate(text: str, rng: random.Random) -> str | bytes:
    lines = text.splitlines(keepends=True)
    op = rng.randrange(16)
    if op == 14 and lines:  # a hostile scalar in place of a value
        k = rng.randrange(len(lines))
        value = rng.choice(HOSTILE_VALUES)
        lines[k] = re.sub(r": (\S.*)$", lambda _: ": " + value, lines[k], count=1)
        return "".join(lines)
    if op == 15 and lines:  # an id (a mapping key) with a trailing newline
        k = rng.randrange(len(lines))
        lines[k] = re.sub(r"^(\s+)([a-z0-9][a-z0-9._-]*):", r'\1"\2\\n":', lines[k], count=1)
        return "".join(lines)
    i = rng.randrange(len(lines)) if lines else 0
    j = rng.randrange(len(lines)) if lines else 0
    if op == 0 and lines:  # delete a line
        del lines[i]
    elif op == 1 and lines:  # duplicate a line
        lines.insert(i, lines[i])
    elif op == 2 and lines:  # swap two lines
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:  # change a scalar's type
        lines = [
            re.sub(
                r": (\S.*)$",
                rng.choice([": 12", ": [x]", ": {a: 1}", ": null", ": true", ": ''"]),
                ln,
                count=1,
            )
            if k == i
            else ln
            for k, ln in enumerate(lines)
        ]
    elif op == 4:  # random bytes
        data = bytearray(text.encode("utf-8"))
        for _ in range(rng.randint(1, 8)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    elif op == 5:  # deep nesting
        depth = rng.choice([10, 63, 65, 200, 5000])
        lines.insert(i, "x: " + "[" * depth + "]" * depth + "\n")
    elif op == 6:  # a huge scalar
        lines.insert(i, "  note: " + "x" * rng.choice([10_000, 1_000_000]) + "\n")
    elif op == 7:  # anchors and aliases
        return "a: &a [1, 2]\nb: *a\n" + text + "\nc: &c {x: *a}\n"
    elif op == 8:
        return "\ufeff" + text
    elif op == 9:
        return text.replace("\n", "\r\n")
    elif op == 10 and lines:  # a tab
        lines[i] = "\t" + lines[i]
    elif op == 11 and lines:  # indentation shift
        lines[i] = "  " + lines[i]
    elif op == 12:  # truncate
        return text[: rng.randrange(len(text) + 1)]
    else:  # rename an id-ish token
        lines = [ln.replace(":", "_x:", 1) if k == i else ln for k, ln in enumerate(lines)]
    return "".join(lines)


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    if root.exists():
        shutil.rmtree(root)
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass")
        target.write_bytes(data)


def _mutation_run(tmp: Path, cases: int, seed: int, part: int = 0, parts: int = 1) -> Counter[int]:
    """Check `cases` mutations drawn from `seed`; with `parts`, only the cases n with
    n % parts == part (all are drawn, so each part checks the same cases as the whole run)."""
    rng = random.Random(seed)
    base = _flagship_files()
    names = sorted(base)
    codes: Counter[int] = Counter()
    for n in range(cases):
        files: dict[str, str | bytes] = dict(base)
        name = rng.choice(names)
        files[name] = _mutate(base[name], rng)
        if n % parts != part:
            continue
        root = tmp / "m"
        _write(root, files)
        code, out = run_in_process(root)
        assert code in (0, 1, 2), (n, name, code, out[-500:])
        import json

        diags = json.loads(out)["diagnostics"]
        assert all(d["message"].strip() for d in diags), (n, name, out[-500:])
        if code == 2:
            assert diags and all(d["file"] and d["hint"] for d in diags), (n, name, out[-500:])
        codes[code] += 1
    return codes


def _schema_run(tmp: Path, cases: int, part: int = 0, parts: int = 1) -> Counter[int]:
    """Check `cases` documents drawn from the schema (derandomized); with `parts`, each
    document in the part its digest names. Hypothesis draws the same documents in the same
    order whatever the test does with them (until one fails), so the parts check exactly the
    documents of the whole run between them, and a failing one replays in its part."""
    codes: Counter[int] = Counter()

    @settings(
        max_examples=cases,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(locks=LOCKS, paths=st.lists(PATHS, min_size=0, max_size=2))
    def one(locks: dict[str, Any], paths: list[dict[str, Any]]) -> None:
        files: dict[str, str | bytes] = {"locks.yaml": yaml.safe_dump(locks, sort_keys=False)}
        for k, p in enumerate(paths):
            files[f"paths/p{k}.yaml"] = yaml.safe_dump(p, sort_keys=False)
        if parts > 1 and zlib.crc32(repr(sorted(files.items())).encode()) % parts != part:
            return
        root = tmp / "s"
        _write(root, files)
        code, out = run_in_process(root)
        assert code in (0, 1, 2), out[-500:]
        codes[code] += 1

    one()
    return codes


def test_mutations_sample(tmp_path: Path) -> None:
    codes = _mutation_run(tmp_path, SAMPLE_CASES, seed=1)
    assert sum(codes.values()) == SAMPLE_CASES


def test_schema_documents_sample(tmp_path: Path) -> None:
    codes = _schema_run(tmp_path, SAMPLE_CASES)
    assert sum(codes.values()) >= SAMPLE_CASES


# The long run's two halves in parts, so that `make fuzz` spreads them over its workers: one
# test of 10,000 cases was the run's tail (765 s of its 1,026 s, loaded). Every part draws all
# its half's cases: a mutation is cheap to draw, a schema document is not (about 7 ms of the
# check's time each, 36 s a part), so the schema half has fewer parts.
FUZZ_PARTS = 4
SCHEMA_PARTS = 2


@pytest.mark.fuzz
@pytest.mark.parametrize("part", range(FUZZ_PARTS))
def test_fuzz_long_mutations(tmp_path: Path, part: int) -> None:
    codes = _mutation_run(tmp_path, FUZZ_CASES // 2, seed=20261129, part=part, parts=FUZZ_PARTS)
    assert sum(codes.values()) == len(range(part, FUZZ_CASES // 2, FUZZ_PARTS))
    print(f"\nfuzz: {sum(codes.values())} flagship mutations, exit codes {dict(codes)}")


@pytest.mark.fuzz
@pytest.mark.parametrize("part", range(SCHEMA_PARTS))
def test_fuzz_long_schema(tmp_path: Path, part: int) -> None:
    cases = FUZZ_CASES - FUZZ_CASES // 2
    codes = _schema_run(tmp_path, cases, part=part, parts=SCHEMA_PARTS)
    print(f"\nfuzz: {sum(codes.values())} schema documents, exit codes {dict(codes)}")
