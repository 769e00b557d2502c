"""lockdocs' own schema validator agrees with the jsonschema package on lockdocs' schema."""

from __future__ import annotations

import copy
import random
from typing import Any

import jsonschema
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from lockdocs.schema.definition import locks_schema, paths_schema
from lockdocs.schema.fastcheck import Validator
from test_fuzz import LOCKS, PATHS

REFERENCE = {
    "locks": jsonschema.Draft202012Validator(locks_schema()),
    "paths": jsonschema.Draft202012Validator(paths_schema()),
}
OURS = {"locks": Validator(locks_schema()), "paths": Validator(paths_schema())}


def _errors(kind: str, doc: Any) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    theirs = {(tuple(e.absolute_path), e.validator) for e in REFERENCE[kind].iter_errors(doc)}
    ours = {(tuple(e.absolute_path), e.validator) for e in OURS[kind].iter_errors(doc)}
    assert OURS[kind].valid(doc) == (not ours)
    return theirs, ours


def _corrupt(doc: Any, rng: random.Random) -> Any:
    doc = copy.deepcopy(doc)
    nodes: list[Any] = []

    def walk(n: Any) -> None:
        if isinstance(n, dict | list):
            nodes.append(n)
            for v in n.values() if isinstance(n, dict) else n:
                walk(v)

    walk(doc)
    for _ in range(rng.randint(1, 3)):
        n = rng.choice(nodes)
        if isinstance(n, dict) and n:
            k = rng.choice(sorted(n))
            choice = rng.randrange(4)
            if choice == 0:
                del n[k]
            elif choice == 1:
                n[k] = rng.choice([1, "x", [], {}, None, True, 1.5])
            elif choice == 2:
                n["unexpected"] = 1
            else:
                n[k + "x"] = n.pop(k)
        elif isinstance(n, list) and n:
            n[rng.randrange(len(n))] = rng.choice([1, "commit", {}, {"take": 1}, None])
    return doc


def test_agrees_on_the_flagship_and_its_corruptions() -> None:
    docs = [("locks", yaml.safe_load((REPO / "locks.yaml").read_text(encoding="utf-8")))]
    docs += [
        ("paths", yaml.safe_load(p.read_text(encoding="utf-8")))
        for p in sorted((REPO / "paths").glob("*.yaml"))
    ]
    rng = random.Random(7)
    checked = 0
    for kind, doc in docs:
        theirs, ours = _errors(kind, doc)
        assert theirs == ours == set()
        for _ in range(60):
            bad = _corrupt(doc, rng)
            theirs, ours = _errors(kind, bad)
            assert theirs == ours, (kind, theirs ^ ours)
            checked += 1
    assert checked >= 600


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(locks=LOCKS, paths=PATHS, seed=st.integers(0, 1000))
def test_agrees_on_generated_documents(locks: Any, paths: Any, seed: int) -> None:
    rng = random.Random(seed)
    for kind, doc in (("locks", locks), ("paths", paths)):
        for candidate in (doc, _corrupt(doc, rng)):
            theirs, ours = _errors(kind, candidate)
            assert theirs == ours, (kind, theirs ^ ours)
