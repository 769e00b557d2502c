"""Bad input: every mistake a user can type gets a located error, exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import measured_process, run_cli, write_project

LOCKS = """\
lockdocs: 1
page:
  title: Locks
transactions:
  bounded:
    lock_timeout: 5s
locks:
  rendezvous:
    title: Rendezvous
    kind: advisory
    key:
      hashtextextended:
        text: rendezvous
    modes:
      shared: materializers
      exclusive: rule changes
  pool:
    title: Pool row
    kind: row
    table: core.pools
    modes:
      for update: writers
"""

PATHS = """\
group: Grants
transaction: bounded
paths:
  revoke:
    title: Revoke
    steps:
      - take: rendezvous
        mode: shared
      - take: pool
"""


def _case(
    locks: str = LOCKS, paths: str | bytes = PATHS, extra: dict[str, str | bytes] | None = None
) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {"locks.yaml": locks, "paths/grants.yaml": paths}
    files.update(extra or {})
    return files


# (id, files, code, file, line, column, words the message must contain)
CASES: list[tuple[str, dict[str, str | bytes], str, str, int, int, str]] = [
    (
        "yaml-syntax",
        _case(paths=PATHS.replace("title: Revoke", "title: [Revoke")),
        "LD001",
        "paths/grants.yaml",
        6,
        10,
        "YAML syntax",
    ),
    (
        "tab-indent",
        _case(paths=PATHS.replace("      - take: pool", "\t- take: pool")),
        "LD001",
        "paths/grants.yaml",
        9,
        1,
        "YAML syntax",
    ),
    (
        "duplicate-key",
        _case(locks=LOCKS.replace("    kind: row\n", "    kind: row\n    kind: row\n")),
        "LD002",
        "locks.yaml",
        20,
        5,
        "duplicate key 'kind'",
    ),
    (
        "duplicate-lock-id",
        _case(locks=LOCKS + "  pool:\n    title: Again\n    kind: row\n    table: t\n"),
        "LD002",
        "locks.yaml",
        23,
        3,
        "duplicate key 'pool'",
    ),
    (
        "wrong-type-title",
        _case(locks=LOCKS.replace("title: Pool row", "title: [1, 2]")),
        "LD003",
        "locks.yaml",
        18,
        12,
        "expected string",
    ),
    (
        "unknown-field",
        _case(
            locks=LOCKS.replace("    table: core.pools\n", "    table: core.pools\n    tabel: x\n")
        ),
        "LD003",
        "locks.yaml",
        21,
        5,
        "unknown field 'tabel'",
    ),
    (
        "unknown-kind",
        _case(locks=LOCKS.replace("kind: row", "kind: rows")),
        "LD003",
        "locks.yaml",
        19,
        11,
        "'rows' is not one of",
    ),
    (
        "missing-title",
        _case(locks=LOCKS.replace("    title: Pool row\n", "")),
        "LD003",
        "locks.yaml",
        18,
        5,
        "missing required field 'title'",
    ),
    (
        "missing-page",
        _case(locks=LOCKS.replace("page:\n  title: Locks\n", "")),
        "LD003",
        "locks.yaml",
        1,
        1,
        "missing required field 'page'",
    ),
    (
        "wrong-version",
        _case(locks=LOCKS.replace("lockdocs: 1", "lockdocs: 2")),
        "LD003",
        "locks.yaml",
        1,
        11,
        "expected 1",
    ),
    (
        "bad-timeout",
        _case(locks=LOCKS.replace("lock_timeout: 5s", "lock_timeout: five")),
        "LD003",
        "locks.yaml",
        6,
        19,
        "does not have the expected form",
    ),
    (
        "bad-lock-id",
        _case(locks=LOCKS.replace("  pool:\n", "  Pool Row:\n")),
        "LD003",
        "locks.yaml",
        17,
        3,
        "is not a valid id",
    ),
    (
        "step-without-kind",
        _case(paths=PATHS.replace("      - take: pool", "      - tkae: pool")),
        "LD003",
        "paths/grants.yaml",
        9,
        9,
        "a step needs one of",
    ),
    (
        "step-two-kinds",
        _case(paths=PATHS.replace("      - take: pool", "      - take: pool\n        run: revoke")),
        "LD003",
        "paths/grants.yaml",
        9,
        9,
        "a step has one kind",
    ),
    (
        "unknown-step-field",
        _case(paths=PATHS.replace("      - take: pool", "      - take: pool\n        nte: x")),
        "LD003",
        "paths/grants.yaml",
        10,
        9,
        "unknown field 'nte'",
    ),
    (
        "unknown-lock-in-step",
        _case(paths=PATHS.replace("take: pool", "take: pools")),
        "LD004",
        "paths/grants.yaml",
        9,
        15,
        "unknown lock 'pools'",
    ),
    (
        "unknown-run",
        _case(paths=PATHS + "      - run: revok\n"),
        "LD004",
        "paths/grants.yaml",
        10,
        14,
        "unknown path 'revok'",
    ),
    (
        "unknown-transaction",
        _case(paths=PATHS.replace("transaction: bounded", "transaction: bonded")),
        "LD004",
        "paths/grants.yaml",
        2,
        14,
        "unknown transaction kind 'bonded'",
    ),
    (
        "exception-unknown-path",
        _case(locks=LOCKS + "exceptions:\n  - rule: LD201\n    path: revokee\n    why: x\n"),
        "LD004",
        "locks.yaml",
        25,
        11,
        "unknown path 'revokee'",
    ),
    (
        "exception-unknown-rule",
        _case(locks=LOCKS + "exceptions:\n  - rule: LD999\n    why: x\n"),
        "LD004",
        "locks.yaml",
        24,
        11,
        "unknown rule 'LD999'",
    ),
    (
        "mode-kind-lacks",
        _case(
            paths=PATHS.replace("      - take: pool", "      - take: pool\n        mode: exclusive")
        ),
        "LD006",
        "paths/grants.yaml",
        10,
        15,
        "a row lock has no mode 'exclusive'",
    ),
    (
        "mode-lock-lacks",
        _case(
            paths=PATHS.replace("      - take: pool", "      - take: pool\n        mode: for share")
        ),
        "LD006",
        "paths/grants.yaml",
        10,
        15,
        "not declared with mode 'for share'",
    ),
    (
        "mode-row-on-advisory",
        _case(paths=PATHS.replace("        mode: shared", "        mode: for update")),
        "LD006",
        "paths/grants.yaml",
        8,
        15,
        "advisory lock has no mode 'for update'",
    ),
    (
        "mode-missing-two-modes",
        _case(paths=PATHS.replace("        mode: shared\n", "")),
        "LD006",
        "paths/grants.yaml",
        7,
        9,
        "taken in several modes",
    ),
    (
        "same-path-two-files",
        _case(extra={"paths/more.yaml": PATHS}),
        "LD005",
        "paths/more.yaml",
        4,
        3,
        "path id 'revoke' is declared twice",
    ),
    (
        "empty-file",
        _case(extra={"paths/empty.yaml": ""}),
        "LD007",
        "paths/empty.yaml",
        1,
        1,
        "the file is empty",
    ),
    (
        "comment-only-file",
        _case(extra={"paths/empty.yaml": "# nothing yet\n"}),
        "LD007",
        "paths/empty.yaml",
        1,
        1,
        "no YAML document",
    ),
    (
        "path-file-without-paths",
        _case(extra={"paths/none.yaml": "group: None\npaths: {}\n"}),
        "LD003",
        "paths/none.yaml",
        2,
        8,
        "must not be empty",
    ),
    (
        "not-utf8",
        _case(extra={"paths/latin1.yaml": "group: Caf\xe9\npaths: {}\n".encode("latin-1")}),
        "LD008",
        "paths/latin1.yaml",
        1,
        11,
        "not UTF-8",
    ),
    (
        "nul-byte",
        _case(extra={"paths/nul.yaml": b"group: x\x00\n"}),
        "LD008",
        "paths/nul.yaml",
        1,
        1,
        "NUL",
    ),
    (
        "alias-bomb",
        _case(
            extra={
                "paths/bomb.yaml": (
                    "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                    + "".join(
                        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
                        for i in range(8)
                    )
                )
            }
        ),
        "LD009",
        "paths/bomb.yaml",
        0,
        0,
        "alias bomb",
    ),
    (
        "deep-nesting",
        _case(extra={"paths/deep.yaml": "group: " + "[" * 100 + "]" * 100 + "\n"}),
        "LD009",
        "paths/deep.yaml",
        0,
        0,
        "nests deeper",
    ),
    (
        "run-cycle",
        _case(paths=PATHS + "      - run: revoke\n"),
        "LD010",
        "paths/grants.yaml",
        10,
        9,
        "run each other in a loop",
    ),
    (
        "key-on-row-lock",
        _case(
            locks=LOCKS.replace(
                "    table: core.pools\n",
                "    table: core.pools\n    key: {constant: {value: 1}}\n",
            )
        ),
        "LD003",
        "locks.yaml",
        21,
        5,
        "has no advisory key",
    ),
    (
        "constant-too-long",
        _case(
            locks=LOCKS.replace(
                "      hashtextextended:\n        text: rendezvous",
                "      constant:\n        bytes: rendezvous",
            )
        ),
        "LD003",
        "locks.yaml",
        13,
        16,
        "a bigint holds 8",
    ),
    (
        "option-on-advisory",
        _case(
            paths=PATHS.replace(
                "        mode: shared", "        mode: shared\n        option: nowait"
            )
        ),
        "LD006",
        "paths/grants.yaml",
        9,
        17,
        "row locks only",
    ),
    (
        "order-level-twice",
        _case(
            locks=LOCKS
            + "rules:\n  order:\n    title: Order\n    order: {levels: [[pool], [pool]]}\n"
        ),
        "LD506",
        "locks.yaml",
        26,
        31,
        "stands in levels 1 and 2",
    ),
]


@pytest.mark.parametrize(
    ("files", "code", "file", "line", "column", "words"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_bad_input_is_located(
    tmp_path: Path,
    files: dict[str, str | bytes],
    code: str,
    file: str,
    line: int,
    column: int,
    words: str,
) -> None:
    root = write_project(tmp_path / "p", files)
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    result = run_cli("check", "--root", str(root), "--format", "json")
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    diags = [d for d in result.json()["diagnostics"] if d["code"] == code]
    assert diags, result.out
    d = diags[0]
    assert d["file"] == file
    if line:
        assert (d["line"], d["column"]) == (line, column), d
    assert words in d["message"], d["message"]
    assert d["hint"], "every error carries a hint"
    # nothing written
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


def test_text_format_is_path_line_col(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", _case(paths=PATHS.replace("take: pool", "take: pools")))
    result = run_cli("validate", "--root", str(root))
    assert result.code == 2
    assert "paths/grants.yaml:9:15: LD004 error: unknown lock 'pools'" in result.out
    assert "  hint: did you mean 'pool'?" in result.out


def test_all_errors_reported_together_sorted(tmp_path: Path) -> None:
    files = _case(
        locks=LOCKS.replace("title: Pool row", "title: [x]"),
        paths=PATHS.replace("title: Revoke", "titel: Revoke"),
    )
    root = write_project(tmp_path / "p", files)
    result = run_cli("validate", "--root", str(root), "--format", "json")
    assert result.code == 2
    got = [(d["file"], d["line"]) for d in result.json()["diagnostics"]]
    assert len(got) >= 2
    assert got == sorted(got)
    assert {f for f, _ in got} == {"locks.yaml", "paths/grants.yaml"}


def test_missing_root_is_usage_error(tmp_path: Path) -> None:
    result = run_cli("check", cwd=tmp_path)
    assert result.code == 2
    assert "no locks.yaml" in result.err
    assert "Traceback" not in result.err


def test_unknown_option_is_usage_error() -> None:
    result = run_cli("check", "--frobnicate")
    assert result.code == 2
    assert "Traceback" not in result.err


def test_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    big = "group: Big\npaths:\n" + "".join(
        f"  p{i}:\n    title: Path {i}\n    summary: {'x' * 200}\n    steps: [commit]\n"
        for i in range(20_000)
    )
    assert len(big) > 4 * 1024 * 1024
    root = write_project(tmp_path / "p", _case(extra={"paths/big.yaml": big}))
    result = run_cli("check", "--root", str(root), "--format", "json")
    assert result.code == 2
    d = next(d for d in result.json()["diagnostics"] if d["code"] == "LD009")
    assert d["file"] == "paths/big.yaml" and "the limit is" in d["message"]


def test_alias_bomb_is_refused_fast_in_bounded_memory(tmp_path: Path) -> None:
    levels = "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n"
        for i in range(12)
    )
    root = write_project(
        tmp_path / "p",
        _case(extra={"paths/bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + levels}),
    )
    # the check's own peak (conftest.measured_process: not the forking worker's)
    run = measured_process("check", "--root", str(root), timeout=60)
    assert run.code == 2 and b"LD009" in run.out
    assert run.seconds < 10, run.seconds  # 10^13 values if expanded; refused after 500,000
    peak_mib = run.peak_mib
    assert 10 < peak_mib < 400, peak_mib


# Every kind of plain scalar YAML 1.1's implicit resolvers tell apart, their spellings and
# near misses: what lockdocs' resolver must tag as PyYAML's does.
SCALARS = [
    *[
        "yes",
        "Yes",
        "YES",
        "no",
        "No",
        "NO",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "y",
        "n",
    ],
    *[
        "0",
        "-1",
        "+1",
        "0b101",
        "-0b1",
        "0x1F",
        "0X1f",
        "017",
        "0o17",
        "1_000",
        "190:20:30",
        "1__0",
        "_1",
        "0x",
        "0b",
    ],
    *[
        "1.0",
        ".5",
        "-1.5e10",
        "1e3",
        "1.5E+3",
        ".inf",
        "-.Inf",
        "+.INF",
        ".nan",
        ".NaN",
        ".NAN",
        "190:20:30.15",
        "1.",
        "-.",
        ".",
        "1_0.5",
    ],
    *["~", "null", "Null", "NULL", "nULL", "none"],
    "",
    *["<<", "=", "==", "2001-12-14t21:59:43.10-05:00", "2002-12-14", "2002-1-1", "12:30"],
    *[
        "abc",
        "é",
        "Ünïcode",
        "日本",
        ":",
        "-",
        "--",
        "?",
        "!",
        "&",
        "*",
        "|",
        ">",
        "%",
        "@",
        "`",
        "#",
        ",",
        "[",
        "]",
        "{",
        "}",
        "'",
        '"',
    ],
    *[
        "12abc",
        "1e",
        "x1",
        "-inf",
        ".infinity",
        "tRUE",
        "oN",
        "0.0.0",
        "1:2:3:4",
        "+12",
        "+.5",
        "-0",
        "0o",
    ],
    "two words",
    " leading",
    "trailing ",
]


def test_the_resolver_tags_every_scalar_as_pyyaml_does() -> None:
    """lockdocs' resolver (`load._Loader.resolve`) answers from tables made once; PyYAML's own
    `resolve` over the same implicit resolvers (no timestamps) must agree on every scalar,
    implicit or not, and on sequences and mappings."""
    from lockdocs.load import _Loader

    class Reference(yaml.SafeLoader):  # PyYAML's resolve, lockdocs' tables
        yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers

    ours, theirs = _Loader(""), Reference("")
    try:
        for value in SCALARS:
            for implicit in ((True, False), (False, True), (False, False), (True, True)):
                got = ours.resolve(yaml.ScalarNode, value, implicit)
                want = theirs.resolve(yaml.ScalarNode, value, implicit)
                assert got == want, (value, implicit, got, want)
        for kind in (yaml.SequenceNode, yaml.MappingNode):
            for implicit in (True, False):
                assert ours.resolve(kind, None, implicit) == theirs.resolve(kind, None, implicit)
    finally:
        ours.dispose()
        theirs.dispose()


def test_documents_read_as_pyyaml_reads_them() -> None:
    """Every scalar above, as a document lockdocs reads: the same values as PyYAML's own
    loader gives (bare, in a list, as a mapping's value), dates excepted (text here)."""
    from lockdocs.load import _Loader, parse_text

    class Reference(yaml.SafeLoader):
        yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers

    for value in SCALARS:
        if value.strip() != value or not value or value[0] in "-?:,[]{}#&*!|>'\"%@`":
            value = "'" + value.replace("'", "''") + "'"  # written as YAML would need it
        text = f"v: {value}\nl: [{value}, x]\n"
        doc, diags = parse_text(text, "x.yaml")
        try:
            want = yaml.load(text, Loader=Reference)
        except yaml.YAMLError:  # `<<` as a value: PyYAML refuses it, and so does lockdocs
            assert doc is None and [d.code for d in diags] == ["LD001"], (text, diags)
            continue
        assert doc is not None and not diags, (text, diags)
        assert doc.data == want, (text, doc.data, want)


def test_text_that_looks_like_a_date_is_text() -> None:
    # The format has no dates: an unquoted 2020-01-01 is the text it reads as.
    from lockdocs.load import parse_text

    doc, diags = parse_text("notes: 2020-01-01\nwhen: 2020-01-01 10:00:00\n", "x.yaml")
    assert doc is not None and diags == [], diags
    assert doc.data == {"notes": "2020-01-01", "when": "2020-01-01 10:00:00"}


def test_an_explicit_timestamp_that_is_none_is_ld001_not_a_traceback() -> None:
    # The fuzz run: `!!timestamp` on text its pattern does not match made PyYAML's constructor
    # raise AttributeError ('NoneType' object has no attribute 'groupdict').
    from lockdocs.load import parse_text

    for text in ("!!timestamp 2020-99-99 the sync opens a plain transaction", "!!timestamp x"):
        _doc, diags = parse_text(f"notes: {text}\n", "x.yaml")
        assert [d.code for d in diags] == ["LD001"], diags
        assert "is not a valid timestamp" in diags[0].message
        assert (diags[0].location.line, diags[0].location.column) == (1, 8)


@pytest.mark.parametrize("name", ["\\0", "paths\\0x", "pa\\tths", "\\e[31m"])
def test_a_paths_folder_named_with_a_control_character_is_refused(
    tmp_path: Path, name: str
) -> None:
    # `paths: "\0"` made Path.resolve raise ValueError (the fuzz run found it): a traceback.
    locks = (
        "lockdocs: 1\npage: {title: T}\n"
        "locks:\n  a: {title: A, kind: advisory, key: {hashtextextended: {text: a}},"
        " modes: {exclusive: x}}\n"
        f'paths: "{name}"\n'
    )
    root = write_project(tmp_path, {"locks.yaml": locks})
    for command in ("check", "build"):
        result = run_cli(command, "--root", str(root))
        assert result.code == 2, result.err
        assert "Traceback" not in result.err
        assert "locks.yaml:5:8: LD012 error: paths: " in result.out + result.err
        assert "control character" in result.out + result.err
    assert not (root / "docs").exists()
