"""Time and peak memory of `lockdocs check` on pathological but valid declarations.

The shapes that made the analysis blow up or give up (bench/pathological.py): loops nested
deep, branches in a row, run: chains, and a real ring beside gate-guarded noise. Each row is a
fresh process (as CI runs it): median wall time, the process's own peak RSS (os.wait4), its exit
code and what it reported (the codes, counted).

    python bench/bounds.py            # every shape, the sizes of issue 18 and beyond
    python bench/bounds.py --quick    # one size each
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pathological as p  # noqa: E402

BIN = Path(sys.executable).parent

SHAPES: list[tuple[str, Callable[[Path], object]]] = [
    ("12 nested loops", lambda out: p.nested_loops(out, 12)),
    ("20 nested loops", lambda out: p.nested_loops(out, 20)),
    ("20 branches in a row", lambda out: p.sequential_branches(out, 20)),
    ("40 branches in a row", lambda out: p.sequential_branches(out, 40)),
    ("run: chain of 600 paths, a lock each", lambda out: p.run_chain(out, 600)),
    ("run: chain of 2,000 paths, a lock each", lambda out: p.run_chain(out, 2000)),
    ("run: chain of 2,000 paths, no locks", lambda out: p.run_chain(out, 2000, takes=False)),
    ("ring of 10 beside 5+5 noise locks", lambda out: p.ring_with_noise(out, 10, 5)),
    ("ring of 10 beside 50+50 noise locks", lambda out: p.ring_with_noise(out, 10, 50)),
    ("random mix (seed 4)", lambda out: p.random_deep(out, 4)),
]
QUICK = {0, 2, 5, 8}


def measure(root: Path, runs: int) -> tuple[float, float, int, Counter[str]]:
    """Median wall seconds, median peak RSS in MiB, exit code, and the codes reported."""
    times: list[float] = []
    peaks: list[float] = []
    code = 0
    codes: Counter[str] = Counter()
    cmd = [str(BIN / "lockdocs"), "check", "--no-drift", "--format", "json", "--root", str(root)]
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - start)
        peaks.append(usage.ru_maxrss / 1024)
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        try:
            codes = Counter(d["code"] for d in json.loads(out)["diagnostics"])
        except (ValueError, KeyError):
            codes = Counter({"(no report)": 1})
    return statistics.median(times), statistics.median(peaks), code, codes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="one size of each shape")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lockdocs-bounds-"))
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.platform()}",
        "",
        "| declarations | median wall | peak RSS | exit | reported |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for n, (label, make) in enumerate(SHAPES):
        if args.quick and n not in QUICK:
            continue
        root = tmp / f"shape{n}"
        make(root)
        t, mem, code, codes = measure(root, args.runs)
        shown = ", ".join(f"{c} x{k}" for c, k in sorted(codes.items())) or "nothing"
        lines.append(f"| {label} | {t * 1000:,.0f} ms | {mem:,.0f} MiB | {code} | {shown} |")
        print(lines[-1], file=sys.stderr, flush=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
