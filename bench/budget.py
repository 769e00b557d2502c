"""Before and after: the whole analysis's budget, run: chains walked in one pass, the walk of
`code:` globs and the page's comparison of pairs taken both ways, on the shapes of issue 23 that
ran for minutes or out of memory.

Each shape runs `lockdocs check --format json` (the whole check, as a pre-commit hook runs it:
the page is rendered to compare it with docs/) in a fresh process with the source tree given by
--before (another checkout's src/, e.g. main's) and with this one, the two interleaved shape by
shape, so both see the same machine load. A row gives each side's CPU seconds (user + system:
steadier than wall on a shared machine), wall seconds, its own peak RSS (os.wait4), its exit
code and what it reported (leaving out LD603: the page was never built, so it is missing);
a side killed at --timeout shows as such. --no-drift leaves the page out.

    python bench/budget.py --before /tmp/main/src            # every shape
    python bench/budget.py --before /tmp/main/src --quick    # the cheaper shapes only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))

import pathological as p  # noqa: E402


def same_lock_chain(out: Path, n: int, standalone: bool) -> None:
    """p0 runs p1 ... runs p(n-1), each taking lock c first (later takes are re-takes)."""
    links = "".join(
        f"  p{i}:\n    title: P{i}\n"
        + ("" if standalone or i == 0 else "    standalone: false\n")
        + f"    steps: [{{take: c}}{f', {{run: p{i + 1}}}' if i + 1 < n else ''}]\n"
        for i in range(n)
    )
    p._write(out, p._advisory("c"), links)


def deep_globs(out: Path, depth: int) -> None:
    """A small project whose code: glob nests six ** over a chain of `depth` folders."""
    p._write(out, p._advisory("c"), "  a: {title: A, steps: [{take: c}]}\n")
    text = (out / "locks.yaml").read_text()
    (out / "locks.yaml").write_text(
        text.replace("page:", "code: ['db/**/**/**/**/**/**/*.sql']\npage:", 1)
    )
    here = out / "db"
    for level in range(depth):
        here = here / f"d{level}"
        here.mkdir(parents=True)
        for n in range(3):
            (here / f"q{n}.sql").write_text("select 1 from t for update;\n")


SHAPES: list[tuple[str, Callable[[Path], object], bool]] = [
    ("run: chain, 400 links, each a path of its own", lambda o: same_lock_chain(o, 400, True), True),
    ("run: chain, 1,200 links, each a path of its own", lambda o: same_lock_chain(o, 1200, True), False),
    ("run: chain, 3,000 links, each a path of its own", lambda o: same_lock_chain(o, 3000, True), False),
    ("run: chain, 3,000 links under one path", lambda o: same_lock_chain(o, 3000, False), True),
    ("200 random paths over 60 locks", lambda o: p.random_dense(o, 200), True),
    ("2,000 random paths over 60 locks (0.9 MB)", lambda o: p.random_dense(o, 2000), False),
    ("2,000 random paths over 60 locks (1.4 MB)", lambda o: p.random_dense(o, 2000, steps=(6, 17)), False),
    ("2,000 paths each way of a pair, one kind", lambda o: p.both_orders(o, 2000, False), False),
    ("2,000 paths each way of a pair, each its own", lambda o: p.both_orders(o, 2000), False),
    ("code: six nested ** over 14 folders", lambda o: deep_globs(o, 14), True),
]  # fmt: skip


def measure(
    src: Path, root: Path, timeout: float, drift: bool = True
) -> tuple[float, float, float, str, str]:
    """CPU seconds, wall seconds, peak RSS (MiB), exit code (or "killed") and the codes."""
    env = {**os.environ, "PYTHONPATH": str(src), "LOCKDOCS_CACHE": "off"}
    cmd = [sys.executable, "-m", "lockdocs", "check", "--format", "json"]
    if not drift:
        cmd.append("--no-drift")
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [*cmd, "--root", str(root)], stdout=out, stderr=subprocess.DEVNULL, env=env
        )
        killed = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                proc.kill()
                killed = True
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        raw = out.read()
    cpu = usage.ru_utime + usage.ru_stime
    if killed:
        return cpu, wall, usage.ru_maxrss / 1024, "killed", f"(killed at {timeout:.0f} s)"
    try:
        counts = Counter(d["code"] for d in json.loads(raw)["diagnostics"] if d["code"] != "LD603")
        shown = ", ".join(f"{c} x{k}" for c, k in sorted(counts.items())) or "nothing"
    except (ValueError, KeyError):
        shown = "(no report)"
    return cpu, wall, usage.ru_maxrss / 1024, str(proc.returncode), shown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", type=Path, required=True, help="the src/ folder to compare with")
    ap.add_argument("--quick", action="store_true", help="the shapes that end in seconds")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--no-drift", action="store_true", help="the analysis only, no page")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lockdocs-budget-"))
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.platform()}",
        "",
        "| declarations | side | CPU | wall | peak RSS | exit | reported |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for n, (label, make, quick) in enumerate(SHAPES):
        if args.quick and not quick:
            continue
        root = tmp / f"shape{n}"
        make(root)
        for side, src in (("before", args.before), ("after", SRC)):
            cpu, wall, mem, code, shown = measure(src, root, args.timeout, not args.no_drift)
            lines.append(
                f"| {label} | {side} | {cpu:,.1f} s | {wall:,.1f} s | {mem:,.0f} MiB | {code} "
                f"| {shown} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
