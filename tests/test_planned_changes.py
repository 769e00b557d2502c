"""The two planned changes of the reference page, applied to a copy of the declarations.

#165 adds a usage-row lock under the FedWiki workspace lock: done in the order the page's rules
allow it passes; done wrong it gives a cycle report naming both paths and their lines. #186
gives every advisory key its own family prefix: the key exceptions then match nothing, and the
check says they are stale.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run_cli

HANDLER = "paths/60-fedwiki-handler.yaml"

USAGE_TAKE = """\
      - take: usage-row
        mode: for update
        via: LockNumericUsage
        note: "#165: the usage row, under the workspace lock"
"""


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    root = tmp_path / "flagship"
    root.mkdir()
    shutil.copy2(REPO / "locks.yaml", root / "locks.yaml")
    shutil.copytree(REPO / "paths", root / "paths")
    shutil.copytree(REPO / "code", root / "code")
    return root


def _insert_in_swap(root: Path, before_step: str) -> int:
    """Put the usage-row take before the first swap step starting with `before_step`;
    returns the line the new step starts on."""
    text = (root / HANDLER).read_text(encoding="utf-8")
    swap = text.index("  fedwiki-swap:")
    at = text.index(before_step, swap)
    new = text[:at] + USAGE_TAKE + text[at:]
    (root / HANDLER).write_text(new, encoding="utf-8")
    return new[:at].count("\n") + 1


def test_165_done_right_passes(copy: Path) -> None:
    # After the lifecycle instance locks, as the outcome activities take it after theirs.
    _insert_in_swap(copy, "      - write: swap policy row")
    result = run_cli("check", "--no-drift", "--root", str(copy))
    assert result.code == 0, result.out


def test_165_done_wrong_reports_the_cycle(copy: Path) -> None:
    # Before the lifecycle instance lock: the swap handler would hold the usage row while it
    # waits for an instance lock that an outcome activity holds while it waits for the row.
    line = _insert_in_swap(copy, "      - take: lifecycle-instance\n        instance: activated")
    result = run_cli("check", "--no-drift", "--format", "json", "--root", str(copy))
    assert result.code == 1, result.out
    cycles = [
        d for d in result.json()["diagnostics"] if d["code"] == "LD201" and not d["waived_by"]
    ]
    assert cycles, result.out
    cycle = next(d for d in cycles if "fedwiki-swap" in d["paths"])
    assert set(cycle["locks"]) == {"usage-row", "lifecycle-instance"}
    other = [p for p in cycle["paths"] if p != "fedwiki-swap"]
    assert other and all(p.startswith("record-") for p in other), cycle["paths"]
    proof = "\n".join(cycle["details"])
    # both paths and the lines of their steps are named
    assert f"fedwiki-swap at {HANDLER}:" in proof
    assert re.search(r"record-\S+ at paths/70-fedwiki-outcome\.yaml:\d+:\d+", proof), proof
    assert f"{HANDLER}:{line + 1}:" in proof or f"{HANDLER}:" in proof
    text = run_cli("check", "--no-drift", "--root", str(copy)).out
    assert "lock-order cycle" in text and "deadlock" in text


def test_186_applied_makes_the_key_exceptions_stale(copy: Path) -> None:
    locks = (copy / "locks.yaml").read_text(encoding="utf-8")
    families = ["subscription", "invoice", "product-sync", "fedwiki-workspace"]
    changed = 0
    for fam in families:
        block = re.search(rf"(?ms)^  {re.escape(fam)}:\n.*?(?=^  \S)", locks)
        assert block, fam
        body = block.group(0)
        new_body, n = re.subn(
            r"key:\s*\n?\s*hashtext:\s*\n?\s*(\{)?\s*parts:",
            f'key:\n      hashtextextended:\n        prefix: "{fam}:"\n        parts:',
            body,
        )
        if n == 0:  # flow style: key: {hashtext: {parts: [...]}}
            new_body, n = re.subn(
                r"key: \{hashtext: \{(.*?)\}\}",
                rf'key: {{hashtextextended: {{prefix: "{fam}:", \1}}}}',
                body,
            )
        assert n == 1, body
        locks = locks.replace(body, new_body)
        changed += 1
    (copy / "locks.yaml").write_text(locks, encoding="utf-8")
    assert run_cli("validate", "--root", str(copy)).code == 0
    result = run_cli("check", "--no-drift", "--format", "json", "--root", str(copy))
    diags = result.json()["diagnostics"]
    stale = [d for d in diags if d["code"] == "LD401"]
    assert result.code == 1
    assert len(stale) == 2, [d["message"] for d in stale]
    assert {re.search(r"\((LD10\d)", d["message"]).group(1) for d in stale} == {"LD101", "LD103"}
    assert all("#186" in d["hint"] for d in stale)
    assert not [d for d in diags if d["code"] in ("LD101", "LD103")]
    assert changed == 4
