"""Pathological but valid declarations (bench/pathological.py): the analysis stays linear, says
when it stops, and finds what is there.

The default suite checks what `lockdocs check` answers for each shape (the real CLI, through
run_cli: only the answer is read); the fuzz run (`make fuzz`) draws random mixes of nested
loops, branches and run: chains within the limits and holds every run, in a fresh process, to a
time and a memory bound (os.wait4 gives the child's own peak RSS). Time itself is measured by bench/bounds.py, not asserted here, except as
the fuzz run's generous bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import pathological as p
from conftest import run_cli

# The fuzz run's bounds per case (the machine has 2 cores and other work): generous, but far
# below what the shapes took before the analysis was bounded (minutes, gigabytes).
SECONDS = 60.0
MIB = 400.0
FUZZ_CASES = int(os.environ.get("LOCKDOCS_BOUNDS_CASES", "30"))


def check(root: Path) -> tuple[int, list[dict[str, Any]]]:
    """Exit code and diagnostics of `lockdocs check`."""
    result = run_cli("check", "--no-drift", "--format", "json", "--root", str(root))
    assert "Traceback" not in result.err, result.err
    assert result.code in (0, 1, 2), (result.code, result.err[-2000:])
    return result.code, result.json()["diagnostics"]


def measured_check(root: Path) -> tuple[int, list[dict[str, Any]], float, float]:
    """Exit code, diagnostics, wall seconds and peak RSS (MiB) of `lockdocs check` in a process
    of its own (the peak is the child's alone)."""
    cmd = [sys.executable, "-m", "lockdocs", "check", "--no-drift", "--format", "json"]
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([*cmd, "--root", str(root)], stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.stdout.close()
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    assert "Traceback" not in stderr, stderr
    assert code in (0, 1, 2), (code, stderr[-2000:])
    return code, json.loads(out)["diagnostics"], seconds, usage.ru_maxrss / 1024


def codes(diags: list[dict[str, Any]]) -> list[str]:
    return sorted(d["code"] for d in diags)


def test_deep_nesting_and_long_branch_runs_are_analysed(tmp_path: Path) -> None:
    code, diags = check(_make(tmp_path / "loops", p.nested_loops, 16))
    # every level's rows are held while a deeper level takes its own: reported, not refused
    assert code == 1 and "LD209" not in codes(diags) and "LD201" in codes(diags)
    code, diags = check(_make(tmp_path / "branches", p.sequential_branches, 30))
    assert (code, diags) == (0, [])


def test_a_long_run_chain_is_analysed_or_refused_never_a_crash(tmp_path: Path) -> None:
    code, diags = check(_make(tmp_path / "short", p.run_chain, 300))
    assert (code, diags) == (0, [])
    code, diags = check(_make(tmp_path / "bare", lambda o, n: p.run_chain(o, n, False), 2000))
    assert (code, diags) == (0, [])
    code, diags = check(_make(tmp_path / "long", p.run_chain, 2000))
    assert code == 2
    assert [(d["code"], d["paths"], d["line"]) for d in diags] == [("LD209", ["p0"], 3)]


@pytest.mark.parametrize("noise", [5, 50])
def test_the_ring_beside_gated_noise_is_reported_alone(tmp_path: Path, noise: int) -> None:
    code, diags = check(_make(tmp_path / "ring", lambda o, n: p.ring_with_noise(o, 10, n), noise))
    assert code == 1
    assert [(d["code"], sorted(d["paths"])) for d in diags] == [
        ("LD201", sorted(f"ring{i}" for i in range(10)))
    ]


def test_a_search_past_its_budget_says_so(tmp_path: Path) -> None:
    """With a budget below what the ring's search needs, the ring is not reported as a cycle
    but its component is, as a search that stopped (never silence)."""
    root = _make(tmp_path / "ring", lambda o, n: p.ring_with_noise(o, 10, n), 5)
    text = (root / "locks.yaml").read_text(encoding="utf-8")
    (root / "locks.yaml").write_text(
        text.replace("locks:\n", "limits: {cycle_search: 3}\nlocks:\n", 1), encoding="utf-8"
    )
    code, diags = check(root)
    assert code == 1 and codes(diags) == ["LD204"]
    assert {f"r{i}" for i in range(10)} <= set(diags[0]["locks"])


def _make(out: Path, make: Any, n: int) -> Path:
    make(out, n)
    return out


@pytest.mark.fuzz
def test_random_deep_declarations_stay_within_bounds(tmp_path: Path) -> None:
    worst = [0.0, 0.0]

    @settings(
        max_examples=FUZZ_CASES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(
        seed=st.integers(0, 2**31),
        depth=st.integers(1, 14),
        width=st.integers(1, 24),
        chain=st.integers(1, 80),
    )
    def case(seed: int, depth: int, width: int, chain: int) -> None:
        root = tmp_path / f"case-{seed}-{depth}-{width}-{chain}"
        p.random_deep(root, seed, depth, width, chain)
        _code, _diags, seconds, peak = measured_check(root)
        worst[0] = max(worst[0], seconds)
        worst[1] = max(worst[1], peak)
        assert seconds < SECONDS, (root, seconds)
        assert peak < MIB, (root, peak)

    case()
    print(
        f"\nbounds fuzz: {FUZZ_CASES} cases, slowest {worst[0]:.1f} s, largest {worst[1]:.0f} MiB"
    )
