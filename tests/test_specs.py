"""Small declaration sets with their exact expected findings, run through the real CLI.

Each folder under tests/fixtures/specs/ holds locks.yaml, paths/*.yaml and expected.txt: one
finding per line, `CODE path1,path2` (paths sorted; none for findings about a lock or a key),
with ` waived` appended when an exception waives it; `#` starts a comment; an empty file means
silence. The test runs `lockdocs check --no-drift --format json --root <case>` and
compares the set of (code, sorted paths, waived) and the exit code: 1 when an unwaived error is
expected, else 0. A folder with an xfail.txt is a known false negative of lockdocs: expected.txt
says what it should report, and the test is xfail(strict=True) with the file's reason. A folder
with an output.txt also pins the exact text report of `check --no-drift` (the messages, hops and
interleavings), rewritten by `pytest --update-golden`; an expected LD209 (a path too large to
analyse) means exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli
from lockdocs.diagnostics import Severity
from lockdocs.rules.catalog import load_all

SPECS = Path(__file__).resolve().parent / "fixtures" / "specs"

# The codes whose default severity is error (the registry's): every other code is a warning or
# info and never fails a check.
ERROR_CODES = frozenset(
    code for code, info in load_all().items() if info.severity is Severity.ERROR
)

Finding = tuple[str, tuple[str, ...], bool]


def parse_expected(text: str) -> set[Finding]:
    out: set[Finding] = set()
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        waived = words[-1] == "waived"
        if waived:
            words = words[:-1]
        code = words[0]
        paths = tuple(sorted(words[1].split(","))) if len(words) > 1 else ()
        assert len(words) <= 2, f"bad expected line: {raw!r}"
        out.add((code, paths, waived))
    return out


def _cases() -> list[object]:
    params = []
    for d in sorted(p for p in SPECS.iterdir() if p.is_dir()):
        marks = []
        xfail = d / "xfail.txt"
        if xfail.exists():
            marks.append(pytest.mark.xfail(strict=True, reason=xfail.read_text().strip()))
        params.append(pytest.param(d, id=d.name, marks=marks))
    return params


def run_check(case: Path) -> tuple[int, dict[str, object]]:
    result = run_cli("check", "--no-drift", "--format", "json", "--root", str(case))
    assert "Traceback" not in result.err, result.err
    return result.code, result.json()


@pytest.mark.parametrize("case", _cases())
def test_spec_findings(case: Path) -> None:
    expected = parse_expected((case / "expected.txt").read_text(encoding="utf-8"))
    code, report = run_check(case)
    diagnostics = report["diagnostics"]
    assert isinstance(diagnostics, list)
    actual = {(d["code"], tuple(sorted(d["paths"])), bool(d["waived_by"])) for d in diagnostics}
    detail = "\n".join(f"{d['code']} {d['paths']} {d['message']}" for d in diagnostics)
    assert actual == expected, f"findings differ from expected.txt:\n{detail}"
    blocking = any(c in ERROR_CODES and not waived for c, _, waived in expected)
    refused = any(c == "LD209" for c, _, _ in expected)
    assert code == (2 if refused else 1 if blocking else 0), f"exit code {code}\n{detail}"


def run_text(case: Path) -> str:
    result = run_cli("check", "--no-drift", "--root", str(case))
    assert "Traceback" not in result.err, result.err
    return result.out


WITH_OUTPUT = [d for d in sorted(SPECS.iterdir()) if (d / "output.txt").exists()]


@pytest.mark.parametrize("case", WITH_OUTPUT, ids=[d.name for d in WITH_OUTPUT])
def test_spec_output(case: Path, update_golden: bool) -> None:
    """A case with an output.txt prints exactly that (`pytest --update-golden` rewrites it)."""
    text = run_text(case)
    if update_golden:
        (case / "output.txt").write_text(text, encoding="utf-8")
    assert text == (case / "output.txt").read_text(encoding="utf-8")


def test_there_are_enough_cases() -> None:
    names = {p.name for p in SPECS.iterdir() if p.is_dir()}
    assert len(names) >= 40
    silent = [n for n in names if n.startswith("silent-")]
    assert len(silent) >= 10
    for d in SPECS.iterdir():
        if d.is_dir():
            assert (d / "locks.yaml").exists() and (d / "expected.txt").exists(), d.name
            assert list((d / "paths").glob("*.yaml")), d.name
