"""Benchmark: `lockdocs build` on a large project (100x the flagship by default).

Four builds of one generated project, each a fresh process: the first (no docs yet: every
diagram drawn), the same again (every SVG's stamp matches: nothing drawn), after one path's
title changed (that path's diagram redrawn), and the first build with --no-svg (no Graphviz).
Prints one Markdown table: wall time, the CPU time of lockdocs and its `dot` children, and the
load average when the build started (a busy machine stretches wall time, not CPU time).

    python bench/build.py              # 100x: 1,800 locks, 3,600 paths
    python bench/build.py --scale 10
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402

BIN = Path(sys.executable).parent


def run(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the process and its children) and the last line it printed."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace")[-2000:])
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    cpu = _children_cpu()
    out = proc.stdout.decode().strip()
    last = out.splitlines()[-1] if out else ""
    return wall, cpu, f"{last} (load {load:.1f})"


_SEEN = [0.0]


def _children_cpu() -> float:
    """CPU seconds of the children finished since the last call (lockdocs and its dot runs)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = r.ru_utime + r.ru_stime
    spent, _SEEN[0] = total - _SEEN[0], total
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=100)
    args = ap.parse_args()
    lockdocs = str(BIN / "lockdocs")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        generate(root, 18 * args.scale, 36 * args.scale, 5, 20261129)
        rows = []
        _children_cpu()
        rows.append(("first build (every diagram drawn)", *run([lockdocs, "build"], root)))
        rows.append(("again, nothing changed", *run([lockdocs, "build"], root)))
        paths = sorted((root / "paths").glob("*.yaml"))[0]
        paths.write_text(paths.read_text().replace("title: Path 1\n", "title: Path one\n", 1))
        rows.append(("one path's title changed", *run([lockdocs, "build"], root)))
        shutil.rmtree(root / "docs")
        rows.append(("first build, --no-svg", *run([lockdocs, "build", "--no-svg"], root)))
    dot = subprocess.run(["dot", "-V"], capture_output=True, text=True, check=False).stderr.strip()
    print(
        f"{args.scale}x the flagship ({18 * args.scale:,} locks, {36 * args.scale:,} paths); "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{dot}\n"
    )
    print("| build | wall | CPU (lockdocs + dot) | result |")
    print("| --- | ---: | ---: | --- |")
    for name, wall, cpu, last in rows:
        print(f"| {name} | {wall:.1f} s | {cpu:.1f} s | {last} |")


if __name__ == "__main__":
    main()
