"""Drift of the generated docs is a finding: one per file, in every output format and the
summary, with the changed sections; the full diff only on request."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import run_cli

PAGE = "docs/database-locks.md"


def _init(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    assert run_cli("init", str(root)).code == 0
    return root


def _rename_title(root: Path) -> None:
    locks = root / "locks.yaml"
    locks.write_text(
        locks.read_text(encoding="utf-8").replace("title: Account row", "title: Account record"),
        encoding="utf-8",
    )


def _first_line_with(root: Path, rel: str, text: str) -> int:
    lines = (root / rel).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, start=1) if text in line)


def test_a_clean_project_has_no_drift_findings(tmp_path: Path) -> None:
    root = _init(tmp_path)
    result = run_cli("check", "--format", "json", "--root", str(root))
    assert result.code == 0, result.out
    assert result.json()["drift"] == {"files": [], "fix": None}


def test_text_is_short_by_default_and_full_with_diff(tmp_path: Path) -> None:
    root = _init(tmp_path)
    line = _first_line_with(root, PAGE, "Account row")
    _rename_title(root)
    result = run_cli("check", "--root", str(root))
    assert result.code == 1
    lines = result.out.splitlines()
    assert re.match(
        rf"{PAGE}:{line}:1: LD602 error: {PAGE} differs from what the declarations generate "
        r"\([0-9]+ lines changed in [^)]*\bAccount record\b",
        lines[0],
    ), lines[0]
    assert lines[1] == "  hint: run lockdocs build; lockdocs check --diff shows the changes"
    assert lines[-1] == (
        "5 errors, 0 warnings, 0 info, 0 waived; 5 generated files differ: run lockdocs build"
    )
    assert len(lines) == 11, "one finding and one hint per file, then the summary"
    assert "+++ b/" not in result.out
    full = run_cli("check", "--diff", "--root", str(root))
    assert full.code == 1
    assert f"--- a/{PAGE}\n+++ b/{PAGE}\n" in full.out
    # A lock's details sit in a collapsible block, indented under it.
    assert (
        "-    #### Account row {#lock-account-row}\n+    #### Account record {#lock-account-row}"
        in full.out
    )
    assert full.out.endswith(lines[-1] + "\n")


def test_json_lists_the_files_and_their_sections(tmp_path: Path) -> None:
    root = _init(tmp_path)
    _rename_title(root)
    result = run_cli("check", "--format", "json", "--root", str(root))
    assert result.code == 1
    doc = result.json()
    files = {f["file"]: f for f in doc["drift"]["files"]}
    assert sorted(files) == [
        PAGE,
        "docs/database-locks/lock-order-account-sync.dot",
        "docs/database-locks/lock-order-account-sync.svg",
        "docs/database-locks/paths/sync-account.dot",
        "docs/database-locks/paths/sync-account.svg",
    ]
    assert doc["drift"]["fix"] == "lockdocs build"
    assert files[PAGE]["status"] == "changed"
    assert "Account record" in files[PAGE]["sections"]
    # the node, and the diagram's title, which names the locks it draws
    assert files["docs/database-locks/lock-order-account-sync.dot"]["sections"] == [
        "graph attributes",
        "node account-row",
    ]
    assert files["docs/database-locks/lock-order-account-sync.svg"]["status"] == "unstamped"
    assert all("diff" not in f for f in files.values())
    codes = [d["code"] for d in doc["diagnostics"]]
    assert codes == ["LD602"] * 5
    assert doc["summary"].startswith("5 errors")
    # --diff keeps the diff in the JSON and prints it on stderr, so stdout stays JSON
    full = run_cli("check", "--format", "json", "--diff", "--root", str(root))
    page = next(f for f in full.json()["drift"]["files"] if f["file"] == PAGE)
    assert page["diff"].startswith(f"--- a/{PAGE}\n")
    assert f"--- a/{PAGE}" in full.err


def test_github_annotates_the_generated_file(tmp_path: Path) -> None:
    root = _init(tmp_path)
    line = _first_line_with(root, PAGE, "Account row")
    _rename_title(root)
    result = run_cli("check", "--format", "github", "--root", str(root))
    assert result.code == 1
    first = result.out.splitlines()[0]
    assert first.startswith(f"::error file={PAGE},line={line},col=1,title=LD602::{PAGE} differs")


def test_missing_stale_and_interrupted(tmp_path: Path) -> None:
    root = _init(tmp_path)
    (root / PAGE).unlink()
    (root / "docs" / "database-locks" / "old.dot").write_text("digraph {}\n", encoding="utf-8")
    manifest = root / "docs" / ".lockdocs-manifest"
    manifest.write_text(
        manifest.read_text(encoding="utf-8") + "docs/database-locks/old.dot\n", encoding="utf-8"
    )
    result = run_cli("check", "--format", "json", "--root", str(root))
    by_file = {d["file"]: d["code"] for d in result.json()["diagnostics"]}
    assert by_file == {PAGE: "LD603", "docs/database-locks/old.dot": "LD604"}
    (root / "docs" / ".lockdocs-journal").write_text("[]", encoding="utf-8")
    result = run_cli("check", "--root", str(root))
    assert result.code == 1
    assert result.out.startswith("docs/.lockdocs-journal: LD605 error: a build was interrupted")


def test_drift_severity_is_configurable(tmp_path: Path) -> None:
    root = _init(tmp_path)
    _rename_title(root)
    locks = root / "locks.yaml"
    locks.write_text(locks.read_text(encoding="utf-8") + "checks:\n  LD602: warning\n")
    result = run_cli("check", "--root", str(root))
    assert result.code == 0
    assert "LD602 warning" in result.out
    locks.write_text(locks.read_text(encoding="utf-8").replace("LD602: warning", "LD602: off"))
    result = run_cli("check", "--format", "json", "--root", str(root))
    assert result.code == 0 and result.json()["diagnostics"] == []


def test_no_svg_compares_dot_only(tmp_path: Path) -> None:
    root = _init(tmp_path)
    # no Graphviz on this machine: build --no-svg writes the page and the DOT only
    result = run_cli("build", "--no-svg", "--root", str(root), env={"PATH": "/nonexistent"})
    assert result.code == 0, result.err
    assert "removed docs/database-locks/lock-order-account-sync.svg" in result.out
    assert not list((root / "docs").rglob("*.svg"))
    assert run_cli("check", "--root", str(root)).code == 1, "the SVGs are missing"
    result = run_cli("check", "--no-svg", "--root", str(root))
    assert result.code == 0, result.out
    # a DOT edit is still drift without SVGs
    _rename_title(root)
    result = run_cli("check", "--no-svg", "--format", "json", "--root", str(root))
    assert result.code == 1
    assert not any(f["file"].endswith(".svg") for f in json.loads(result.out)["drift"]["files"])


def test_a_hand_edit_of_a_diagram_is_drift_and_build_draws_it_again(tmp_path: Path) -> None:
    """An SVG is compared by the hash of its own text, not only by the DOT it came from:
    a hand edit is drift on any machine, and build draws it again."""
    root = _init(tmp_path)
    svg = root / "docs" / "database-locks" / "paths" / "sync-account.svg"
    drawn = svg.read_text(encoding="utf-8")
    assert "lockdocs-svg-sha256: " in drawn
    # a checkout that turned every line end into CRLF is not an edit
    svg.write_bytes(drawn.replace("\n", "\r\n").encode("utf-8"))
    assert run_cli("check", "--root", str(root)).code == 0
    edited = drawn.replace("</svg>", "<text>edited by hand</text>\n</svg>")
    assert edited != drawn
    svg.write_text(edited, encoding="utf-8")
    result = run_cli("check", "--format", "json", "--root", str(root))
    assert result.code == 1
    [finding] = result.json()["diagnostics"]
    assert finding["code"] == "LD602"
    assert finding["file"] == "docs/database-locks/paths/sync-account.svg"
    assert "was edited after lockdocs drew it" in finding["message"]
    assert run_cli("build", "--root", str(root)).code == 0
    assert svg.read_text(encoding="utf-8") == drawn
    assert run_cli("check", "--root", str(root)).code == 0
    # an SVG drawn before lockdocs stamped its text is drift until it is drawn again
    svg.write_text(re.sub(r"<!-- lockdocs-svg-sha256: \w+ -->\n", "", drawn), encoding="utf-8")
    result = run_cli("check", "--root", str(root))
    assert result.code == 1
    assert "carries no lockdocs-svg-sha256 stamp" in result.out
