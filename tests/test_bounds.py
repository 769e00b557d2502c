"""Pathological but valid declarations (bench/pathological.py): the analysis stays linear, says
when it stops, and finds what is there. Its whole run has a budget (limits.analysis_work, and
limits.analysis_seconds as a backstop): spent, it says where it stopped (LD209, LD204).

The default suite checks what `lockdocs check` answers for each shape (the real CLI, through
run_cli: only the answer is read); the fuzz run (`make fuzz`) draws random mixes of nested
loops, branches and run: chains within the limits and holds every run, in a fresh process, to a
time and a memory bound (the child's own peak, conftest.measured_process). Time itself is measured by bench/bounds.py, not asserted here, except as
the fuzz run's generous bound.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import measured_process, run_cli
from lockdocs import api
from lockdocs.analysis import budget
from lockdocs.analysis.chain import EMPTY
from lockdocs.analysis.facts import Facts
from lockdocs.api import load

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import pathological as p

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
    of its own (the peak is the child's alone: conftest.measured_process)."""
    run = measured_process("check", "--no-drift", "--format", "json", "--root", str(root))
    assert "Traceback" not in run.err, run.err
    assert run.code in (0, 1, 2), (run.code, run.err[-2000:])
    return run.code, json.loads(run.out)["diagnostics"], run.seconds, run.peak_mib


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


def _limits(root: Path, limits: str) -> Path:
    text = (root / "locks.yaml").read_text(encoding="utf-8")
    (root / "locks.yaml").write_text(
        text.replace("locks:\n", f"limits: {{{limits}}}\nlocks:\n", 1), encoding="utf-8"
    )
    return root


def _same_lock_chain(root: Path, n: int, standalone: bool) -> None:
    """p0 runs p1, which runs p2, ...: each takes lock c first (held from the first link on, so
    the later takes are re-takes: what grows is the chain, not what is held)."""
    links = "".join(
        f"  p{i}:\n    title: P{i}\n"
        + ("" if standalone or i == 0 else "    standalone: false\n")
        + f"    steps: [{{take: c}}{f', {{run: p{i + 1}}}' if i + 1 < n else ''}]\n"
        for i in range(n)
    )
    p._write(root, p._advisory("c"), links)


def test_a_run_chain_shares_its_names_instead_of_copying_them() -> None:
    """Each run: step adds one name to its caller's chain; the chains share the rest, hash in
    O(1) and read as the tuple of their names."""
    a, b = EMPTY, EMPTY
    for i in range(100_000):
        a = a.add(f"p{i}")
        b = b.add(f"p{i}")
    assert a == b and hash(a) == hash(b) and a is not b
    assert len(a) == 100_000 and a[-1] == "p99999" and tuple(a)[:2] == ("p0", "p1")
    assert a.add("x") != a.add("y") and a != a.add("x") and not EMPTY and a
    assert " -> ".join(EMPTY.add("p").add("q")) == "p -> q"


def test_every_link_of_a_long_run_chain_runs_in_one_walk(tmp_path: Path) -> None:
    """3,000 links under one path: the walk is linear (the chain of names was copied at each
    link, n²/2), and every step is reached through the whole chain before it."""
    root = tmp_path / "chain"
    _same_lock_chain(root, 3000, standalone=False)
    code, diags, _, _ = measured_check(root)
    assert (code, diags) == (0, [])
    model, _ = load(root)
    assert model is not None
    events = Facts(model).events(None)
    assert not Facts(model).refused
    deepest = max(events, key=lambda e: len(e.through))
    assert tuple(deepest.through) == tuple(f"p{i}" for i in range(1, 3000))


def test_a_run_chain_walked_once_per_caller_stops_at_the_analysis_budget(
    tmp_path: Path,
) -> None:
    """Every link a path of its own, each running the next: n²/2 steps (1,200 links took 43 s
    and 2.6 GB; 3,000 ran out of memory). The whole analysis's budget stops it where it runs
    out, as bad input (the default budget is lowered here to keep the test short)."""
    root = tmp_path / "chain"
    _same_lock_chain(root, 600, standalone=True)
    _limits(root, "analysis_work: 100000")
    code, diags, _, peak = measured_check(root)
    assert code == 2 and codes(diags) == ["LD209"], diags
    assert (
        "the analysis's work budget (100,000 units, limits.analysis_work) ran out at path"
        in (diags[0]["message"])
    )
    assert "limits.analysis_work" in diags[0]["hint"] and peak < MIB


def test_a_dense_graph_of_waits_stops_at_the_analysis_budget(tmp_path: Path) -> None:
    """Random paths over few locks make a dense graph of waits: each search had a budget, the
    run had none (2,000 random paths ran past 600 s and 3.5 GB). Past the whole budget the
    part not searched is reported, and nothing else is lost."""
    root = tmp_path / "dense"
    p.random_dense(root, 150, seed=1)
    _limits(root, "analysis_work: 150000")
    code, diags, _, peak = measured_check(root)
    stopped = [d for d in diags if d["code"] == "LD204"]
    assert code == 1 and len(stopped) == 1, codes(diags)
    assert stopped[0]["message"].startswith(
        "the analysis's work budget ran out before the cycle search finished the component of"
    )
    assert "raise limits.analysis_work" in stopped[0]["hint"] and peak < MIB
    assert "LD209" not in codes(diags)


def test_the_time_budget_is_a_backstop_that_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Time stops the analysis where work would not (a clock that jumps stands in for a slow
    machine); the finding says that where it stops depends on the machine."""
    ticks = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(budget, "now", lambda: float(next(ticks)))
    root = tmp_path / "loops"
    p.sequential_branches(root, 30)
    found = api.check(root, drift=False)
    assert found.exit_code == 2
    assert [d.code for d in found.diagnostics] == ["LD209"]
    assert "the analysis's time budget ran out at path 'wide'" in found.diagnostics[0].message
    assert "depends on the machine's speed" in found.diagnostics[0].message


def test_the_budget_counts_and_looks_at_the_clock() -> None:
    clock = [0.0]
    b = budget.Budget(10_000, seconds=5, clock=lambda: clock[0])
    assert b.spend(5000) and b.left == 5000
    clock[0] = 6.0
    assert b.spend(10) and b.out is None  # the clock is read every CLOCK_EVERY units
    assert not b.spend(budget.CLOCK_EVERY) and b.out == "time" and b.left == 0
    assert not b.spend(0)
    w = budget.Budget(100)
    assert not w.spend(101) and w.out == "work" and "100 units" in w.words()


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


def test_export_stops_at_the_analysis_bounds_with_a_located_message(tmp_path: Path) -> None:
    """export lists every path's acquisitions, each with its run: chain: a path past its work
    bound ended in exit 3 (an uncaught Stop), and a chain walked once per caller would have
    written gigabytes."""
    root = _make(tmp_path / "long", p.run_chain, 2000)
    result = run_cli("export", "--root", str(root))
    assert result.code == 2 and not result.out
    assert result.err.startswith(
        "paths/p.yaml:3:3: path 'p0' cannot be exported: it needs more work to flatten than "
        "limits.path_work allows\n"
    )
    root = tmp_path / "callers"
    _same_lock_chain(root, 400, standalone=True)
    _limits(root, "analysis_work: 100000")
    result = run_cli("export", "--root", str(root))
    assert result.code == 2 and "limits.analysis_work) ran out here" in result.err


def _both_orders_sentence(root: Path) -> str:
    result = run_cli("build", "--no-svg", "--root", str(root))
    assert result.code == 0, result.out + result.err
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    block = page.split("**a and b are taken in both orders.**", 1)[1].split("\n", 1)[0]
    return block.split("while holding [b](#lock-b). ", 1)[1]


def test_the_page_compares_the_two_orders_of_a_pair_within_a_bound(tmp_path: Path) -> None:
    """The page says what keeps a pair taken both ways apart by comparing each way's
    transactions with the other's: n² comparisons (4,000 such paths took minutes and half a
    gigabyte). Transactions alike are compared once, and past a tenth of limits.analysis_work
    comparisons the page says it did not work the pair out (lowered here: 500)."""
    alike = tmp_path / "alike"
    p.both_orders(alike, 40, distinct=False)  # 1,600 pairs of paths, one of each kind
    assert _both_orders_sentence(_limits(alike, "analysis_work: 5000")).startswith(
        "They never deadlock: B0, B1, "
    )
    distinct = tmp_path / "distinct"
    p.both_orders(distinct, 40)  # 40 kinds each way: 1,600 comparisons
    assert _both_orders_sentence(_limits(distinct, "analysis_work: 5000")) == (
        "lockdocs did not work out what keeps them apart: 40 kinds of transaction take them "
        "one way and 40 the other, more pairs than the page may compare "
        "(limits.analysis_work); the check's own search of them is not affected."
    )
    (distinct / "locks.yaml").write_text(
        (distinct / "locks.yaml").read_text().replace("5000", "20000"), encoding="utf-8"
    )
    assert _both_orders_sentence(distinct).endswith(
        "hold z exclusive meanwhile, and every path that takes them the first way holds it too "
        "(exclusive), so the two orders never run at once."
    )


def test_the_page_walks_a_long_run_chain_within_the_budget_or_says_where_it_stopped(
    tmp_path: Path,
) -> None:
    """The page walks each path with every path it runs: a chain of n links under one path is
    n²/2 steps there (3,000 links: killed after 300 s at 1.5 GB), though the check's own walk
    is linear. The page's walks share a budget (limits.analysis_work, lowered here); past it
    the page is not rendered and the path where it stopped is named (exit 2)."""
    errors = {}
    for work in (20_000, 300_000):  # the page needs 270,600
        root = tmp_path / f"chain{work}"
        _same_lock_chain(root, 300, standalone=False)
        _limits(root, f"analysis_work: {work}")
        result = run_cli("build", "--no-svg", "--root", str(root))
        errors[work] = (result.code, result.err)
    assert errors[300_000][0] == 0, errors[300_000][1]
    code, err = errors[20_000]
    stopped = re.match(r"paths/p.yaml:\d+:3: LD209 error: path 'p\d+' (.*)\n", err)
    assert code == 2 and stopped is not None, err
    assert stopped.group(1) == (
        "and the paths it runs took the rest of the work budget of the page's walks "
        "(20,000 units, limits.analysis_work); the page was not rendered"
    )
    assert not (tmp_path / "chain20000" / "docs").exists()
