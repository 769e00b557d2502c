"""Careless and hostile scalars: ids with a trailing newline, YAML tags that cannot construct,
integers too large to read or to use, values that break a schema constraint. Each is a located
exit-2 error with a message that says what is wrong; none exits 3."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from lockdocs.schema.definition import locks_schema, paths_schema
from lockdocs.schema.fastcheck import Validator

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"


def _project(tmp_path: Path, old: str, new: str, file: str = "locks.yaml") -> Path:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    target = root / file
    text = target.read_text()
    assert old in text
    target.write_text(text.replace(old, new, 1))
    return root


def _refused(root: Path, code: str, words: str) -> str:
    result = run_cli("validate", "--root", str(root))
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    assert result.code == 2, result.out + result.err
    line = next((ln for ln in result.out.splitlines() if f" {code} error: " in ln), "")
    assert line, result.out
    assert words in line, line
    file, lineno, col = line.split(":")[:3]
    assert file.endswith(".yaml") and int(lineno) > 0 and int(col) > 0
    return line


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("  checkout:\n", '  "checkout\\n":\n', "is not a valid id"),
        ("  checkout:\n", '  "checkout\\n\\n":\n', "is not a valid id"),
        ("lock_timeout: 5s", 'lock_timeout: "5s\\n"', "does not have the expected form"),
    ],
)
def test_a_trailing_newline_is_not_part_of_a_valid_id_or_duration(
    tmp_path: Path, old: str, new: str, words: str
) -> None:
    _refused(_project(tmp_path, old, new), "LD003", words)


def test_a_path_id_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    paths = sorted((root / "paths").glob("*.yaml"))[0]
    text = paths.read_text()
    first = next(ln for ln in text.splitlines() if ln.startswith("  ") and ln.endswith(":"))
    paths.write_text(text.replace(first + "\n", f'  "{first.strip()[:-1]}\\n":\n', 1))
    _refused(root, "LD003", "is not a valid id")


@pytest.mark.parametrize(
    ("value", "code", "words"),
    [
        ("!!int abc", "LD001", "'abc' is not a valid int"),
        ("!!float nope", "LD001", "'nope' is not a valid float"),
        ("!!int 0x", "LD001", "is not a valid int"),
        ("!!timestamp 2020-99-99", "LD001", "is not a valid timestamp"),
        ("9" * 5000, "LD001", "more digits than any number lockdocs reads"),
        ("!!int " + "9" * 100000, "LD001", "more digits than any number lockdocs reads"),
        ("9" * 30, "LD003", "does not fit in 64 bits"),
        ("-" + "9" * 20, "LD003", "does not fit in 64 bits"),
    ],
)
def test_scalars_that_cannot_be_read_are_located(
    tmp_path: Path, value: str, code: str, words: str
) -> None:
    root = _project(tmp_path, "title: Shop Locks", f"title: {value}")
    line = _refused(root, code, words)
    assert line.startswith("locks.yaml:5:10:")
    assert len(line) < 400  # the value is quoted short, never in full


def test_an_issue_number_below_one_says_so(tmp_path: Path) -> None:
    root = _project(tmp_path, "    kind: advisory\n", "    kind: advisory\n    issues: [0]\n")
    _refused(root, "LD003", "0 is below the smallest allowed value, 1")


def _keywords(schema: object, found: set[str]) -> set[str]:
    if isinstance(schema, dict):
        found.update(k for k in schema if isinstance(k, str))
        for v in schema.values():
            _keywords(v, found)
    elif isinstance(schema, list):
        for v in schema:
            _keywords(v, found)
    return found


def test_every_schema_error_has_a_message() -> None:
    """Whatever the validator reports, the diagnostic says something (issues: [0] once gave an
    LD003 with an empty message)."""
    from lockdocs.load import parse_text
    from lockdocs.schema.validate import validate

    documents = {
        "locks": [
            "lockdocs: 1\npage: {title: t}\nlocks: {a: {title: A, kind: row, table: t.a, "
            "issues: [0]}}\n",
            "lockdocs: 2\npage: {title: t}\nlocks: {}\n",
            "lockdocs: 1\npage: {title: ''}\nlocks: {}\n",
            "lockdocs: 1\npage: {title: t, output: '../x'}\nlocks: {}\n",
            "lockdocs: 1\npage: {title: t}\nlocks: {A: {title: A, kind: nope}}\n",
            "lockdocs: 1\npage: {title: t}\nlocks: {a: {kind: row}}\nextra: 1\n",
            "lockdocs: 1\npage: {title: t}\nissues: no-number\nlocks: {}\n",
        ],
        "paths": [
            "group: g\npaths: {p: {title: P, steps: [{take: a, loop: b}]}}\n",
            "group: g\npaths: {p: {title: P, steps: [{nothing: 1}]}}\n",
            "group: g\npaths: {p: {title: P, steps: [commit], issues: [-1]}}\n",
            "group: 7\npaths: {}\n",
            "group: g\npaths: {p: {title: P, steps: [{take: a, via: ''}]}}\n",
        ],
    }
    used = _keywords(locks_schema(), set()) | _keywords(paths_schema(), set())
    assert {"minimum", "minLength", "pattern", "enum", "const", "required"} <= used
    seen: set[str] = set()
    for kind, texts in documents.items():
        for text in texts:
            doc, diags = parse_text(text, f"{kind}.yaml")
            assert doc is not None, diags
            found = validate(doc, kind)
            assert found, text
            for d in found:
                assert d.message.strip() and d.hint.strip(), (text, d)
            schema = locks_schema() if kind == "locks" else paths_schema()
            todo = list(Validator(schema).iter_errors(doc.data))
            while todo:
                e = todo.pop()
                seen.add(str(e.validator))
                todo.extend(e.context)
    assert {"minimum", "minLength", "pattern", "enum", "const", "required"} <= seen


# --- control characters never reach the terminal raw ------------------------------------------

FAKE_OK = "\x1b[2K\r\x1b[32mok: 0 errors\x1b[0m"
CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_escape_sequences_in_declarations_are_shown_escaped(tmp_path: Path, fmt: str) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    locks.write_text(
        locks.read_text().replace("  catalog-gate:\n", '  "gate\\e[32m\\u009b":\n', 1), "utf-8"
    )
    maint = root / "paths" / "maintenance.yaml"
    text = maint.read_text()
    assert "Mail: send the notices" in text
    maint.write_text(text.replace("Mail: send the notices", "Mail" + FAKE_OK + CLIPBOARD), "utf-8")
    result = run_cli("check", "--no-drift", "--format", fmt, "--root", str(root))
    raw = result.out + result.err
    assert "\x1b" not in raw and "\x07" not in raw and "\x9b" not in raw and "\u202e" not in raw
    assert "\r" not in raw
    assert "gate\\x1b[32m\\x9b" in raw  # the LD003 for the invalid id, escaped
    assert "LD001" in raw  # the raw ESC bytes in maintenance.yaml, located
    assert result.code == 2


def test_escape_sequences_in_a_finding_are_shown_escaped(tmp_path: Path) -> None:
    """YAML's double-quoted escapes (\\e, \\r, \\a) put the bytes into a declared name."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    maint = root / "paths" / "maintenance.yaml"
    escaped = r"Mail\e[2K\r\e[32mok: 0 errors\e[0m\e]52;c;ZWNobyBwd25lZA==\a"
    maint.write_text(maint.read_text().replace("Mail: send the notices", escaped), "utf-8")
    result = run_cli("check", "--no-drift", "--root", str(root))
    assert "\x1b" not in result.out and "\x07" not in result.out
    assert "Mail\\x1b[2K\\r\\x1b[32mok: 0 errors\\x1b[0m\\x1b]52;c;" in result.out  # LD302
