"""Issue 23, item 7 and the page's part of item 1: a pull request cannot make `lockdocs build`
delete or replace a page a person wrote in docs/ (a planted journal, one manifest line, even
with the file's own hash), nor block later builds by naming the page after lockdocs' own files;
and text that hides or reorders characters (bidi overrides, zero-width characters) shows as
escapes in the page, the DOT and the SVG. Real CLI, real files, the real `dot`."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conftest import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"
JOURNAL = "docs/.lockdocs-journal"
MANIFEST = "docs/.lockdocs-manifest"
HAND = "docs/index.md"
HAND_TEXT = "# Our site\n\nWritten by a person; no tool may delete it.\n"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz dot not installed")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def built(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    result = run_cli("build", "--root", str(root))
    assert result.code == 0, result.err
    (root / HAND).write_text(HAND_TEXT, encoding="utf-8")
    return root


def _hand_is_intact(root: Path) -> None:
    assert (root / HAND).read_text(encoding="utf-8") == HAND_TEXT


@needs_dot
def test_a_planted_journal_that_names_a_hand_written_page_as_added_deletes_nothing(
    built: Path,
) -> None:
    temp = "docs/.index.md.abcd1234.tmp"
    (built / temp).write_text("anything\n", encoding="utf-8")
    entry = {"target": HAND, "backup": None, "temp": temp, "sha": _sha(HAND_TEXT.encode())}
    (built / JOURNAL).write_text(json.dumps([entry]), encoding="utf-8")
    result = run_cli("build", "--root", str(built))
    assert result.code == 0, result.err
    _hand_is_intact(built)
    assert f"kept {HAND}" in result.err and "not a file lockdocs wrote" in result.err
    assert not (built / JOURNAL).exists()


@needs_dot
def test_a_planted_journal_that_would_restore_over_a_hand_written_page_replaces_nothing(
    built: Path,
) -> None:
    backup = "docs/.index.md.abcd1234.tmp"
    (built / backup).write_text("# Replaced\n", encoding="utf-8")
    entry = {"target": HAND, "backup": backup, "temp": None, "sha": _sha(HAND_TEXT.encode())}
    (built / JOURNAL).write_text(json.dumps([entry]), encoding="utf-8")
    result = run_cli("build", "--root", str(built))
    assert result.code == 0, result.err
    _hand_is_intact(built)
    assert f"kept {HAND}" in result.err


@needs_dot
@pytest.mark.parametrize("with_hash", [False, True])
def test_one_manifest_line_does_not_delete_a_hand_written_page(
    built: Path, with_hash: bool
) -> None:
    digest = f" {_sha(HAND_TEXT.encode())}" if with_hash else ""
    manifest = built / MANIFEST
    manifest.write_text(manifest.read_text(encoding="utf-8") + f"{HAND}{digest}\n", "utf-8")
    result = run_cli("build", "--root", str(built))
    assert result.code == 0, result.err
    _hand_is_intact(built)
    assert f"kept {HAND}" in result.err and "not the file lockdocs wrote" in result.err
    # and the manifest no longer names it
    assert HAND not in (built / MANIFEST).read_text(encoding="utf-8")


@needs_dot
def test_a_stale_generated_file_is_still_removed_and_a_changed_one_is_kept(built: Path) -> None:
    """The protection keeps what a person wrote, not what lockdocs wrote: a page a renamed
    output leaves behind goes; the same page edited by hand stays."""
    locks = built / "locks.yaml"
    text = locks.read_text(encoding="utf-8")
    assert "output:" not in text.split("locks:")[0]
    locks.write_text(text.replace("page:\n", "page:\n  output: shop-locks.md\n", 1), "utf-8")
    result = run_cli("build", "--root", str(built))
    assert result.code == 0, result.err
    assert "removed docs/database-locks.md" in result.out
    assert not (built / "docs" / "database-locks.md").exists()
    # back to the old name; then edit the page it leaves behind, and rename again
    locks.write_text(text, "utf-8")
    assert run_cli("build", "--root", str(built)).code == 0
    page = built / "docs" / "database-locks.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nA note of ours.\n", "utf-8")
    locks.write_text(text.replace("page:\n", "page:\n  output: shop-locks.md\n", 1), "utf-8")
    result = run_cli("build", "--root", str(built))
    assert result.code == 0, result.err
    assert page.is_file() and "A note of ours." in page.read_text(encoding="utf-8")
    assert "kept docs/database-locks.md" in result.err


@pytest.mark.parametrize(
    "output", [".lockdocs-journal.md", ".lockdocs-manifest.md", "sub/.lockdocs-lock.md"]
)
def test_a_page_named_after_lockdocs_own_files_is_refused_and_blocks_nothing(
    tmp_path: Path, output: str
) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    text = locks.read_text(encoding="utf-8")
    locks.write_text(text.replace("page:\n", f"page:\n  output: {output}\n", 1), "utf-8")
    result = run_cli("build", "--no-svg", "--root", str(root))
    assert result.code == 2, result.out + result.err
    assert "LD003" in result.out + result.err and ".lockdocs-" in result.out + result.err
    assert not (root / "docs").exists() or not any((root / "docs").iterdir())
    locks.write_text(text, "utf-8")
    result = run_cli("build", "--no-svg", "--root", str(root))
    assert result.code == 0, result.err


HIDDEN = "\u202eevil\u202c\u200b\u2066x\u2069"


@needs_dot
def test_bidi_and_zero_width_characters_show_as_escapes_in_page_dot_and_svg(
    tmp_path: Path,
) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    text = locks.read_text(encoding="utf-8")
    assert "title: Catalog gate" in text
    locks.write_text(
        text.replace("title: Catalog gate", f'title: "Catalog gate {HIDDEN}"'), "utf-8"
    )
    result = run_cli("build", "--root", str(root))
    assert result.code == 0, result.err
    outputs = [p for p in (root / "docs").rglob("*") if p.is_file()]
    shown = 0
    for p in outputs:
        data = p.read_text(encoding="utf-8")
        for ch in HIDDEN:
            if ch != "e" and not ch.isalnum():
                assert ch not in data, (p, hex(ord(ch)))
        shown += "u202e" in data
    assert shown >= 3, "the escape is in the page, a DOT file and its SVG"
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert "Catalog gate \\\\u202eevil\\\\u202c\\\\u200b\\\\u2066x\\\\u2069" in page
