"""The tool's docs state counts the code decides: how many key forms `key:` has, how many checks
there are, how many diagrams the flagship page draws, and the flagship's size. Each is counted
here from the code (the schema, the rule registry, the rendered outputs, the model), not read
from the prose, so a change that adds one fails until the docs say so."""

from __future__ import annotations

import re

from conftest import REPO
from lockdocs.api import analyse, load
from lockdocs.diagnostics import sort_diagnostics
from lockdocs.render.pages import render_outputs
from lockdocs.rules.catalog import load_all
from lockdocs.schema.locks import KEY

NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}


def _doc(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def test_the_key_forms_concepts_announces_are_the_schemas() -> None:
    forms = list(KEY["properties"])
    text = _doc("docs/concepts.md")
    announced = re.search(r"`key:` declares how, in one of (\w+) ways:", text)
    assert announced, "concepts.md no longer says how many ways a key is built"
    assert NUMBERS[announced.group(1)] == len(forms), (announced.group(1), forms)
    # and it lists each, as a definition
    section = text.split(announced.group(0), 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^`(\w+)`\n:", section, flags=re.MULTILINE)
    assert sorted(listed) == sorted(forms)


def test_the_check_count_is_the_registrys() -> None:
    stated = re.search(r"describes each of the (\d+) checks", _doc("docs/concepts.md"))
    assert stated, "concepts.md no longer says how many checks there are"
    assert int(stated.group(1)) == len(load_all())


def test_the_diagram_and_size_counts_of_the_flagship_are_the_outputs() -> None:
    model, diags = load(REPO)
    assert model is not None, diags
    files = render_outputs(model, sort_diagnostics(diags + analyse(model)))
    path_diagrams = [f for f in files if f.startswith("docs/database-locks/paths/")]
    assert len(path_diagrams) == len(model.paths)
    perf = _doc("docs/performance.md")
    said = re.search(r"one diagram per path \((\d+) for the flagship", perf)
    assert said and int(said.group(1)) == len(path_diagrams), said
    for doc in ("docs/performance.md", "README.md"):
        for locks, paths in re.findall(r"flagship \((\d+) locks, (\d+) paths", _doc(doc)):
            assert (int(locks), int(paths)) == (len(model.locks), len(model.paths)), doc
