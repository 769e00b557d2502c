"""The test suite's profile: what each test file (and the slowest tests, and each fixture) costs
in CPU seconds and in processes started.

    python bench/suite_profile.py                      # the default suite, -n 2
    python bench/suite_profile.py -m fuzz              # the fuzz run
    python bench/suite_profile.py tests/test_x.py -n 0 # some files
    python bench/suite_profile.py --report DIR         # summarise an earlier run again

CPU seconds, not wall seconds, are the measure: the machine is shared, so wall time swings with
the load while the CPU a test uses does not (much). A test's CPU is the test process's own
(RUSAGE_SELF) plus that of every child it waited for (RUSAGE_CHILDREN: the CLI, mkdocs, dot,
Chromium, initdb; not a Postgres server, which pg_ctl detaches). Session and module fixtures
are charged to the first test that sets them up. Process counts come from an audit hook in the
test process and in every Python child (bench/suite_plugin.py). The records stay in the
folder printed at the end (tests-*.jsonl, spawns-*.log) for a second look.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from suite_plugin import kind  # noqa: E402

KINDS = ("lockdocs", "inprocess", "site_build", "dot", "chromium", "postgres_cluster")


def run(pytest_args: list[str], out: Path) -> float:
    env = {**os.environ, "SUITE_PROFILE_DIR": str(out)}
    env["PYTHONPATH"] = str(HERE) + (os.pathsep + env["PYTHONPATH"] if "PYTHONPATH" in env else "")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "suite_plugin", *pytest_args]
    print("$", " ".join(cmd), file=sys.stderr)
    started = time.monotonic()
    subprocess.run(cmd, cwd=REPO, env=env, check=False)
    return time.monotonic() - started


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def report(out: Path, wall: float | None) -> str:
    tests: list[dict[str, object]] = []
    for f in sorted(out.glob("tests-*.jsonl")):
        tests += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()]
    spawns: dict[str, Counter[str]] = defaultdict(Counter)
    for f in sorted(out.glob("spawns-*.log")):
        for line in f.read_text(encoding="utf-8").splitlines():
            test, argv = ast.literal_eval(line)
            spawns[str(test)][kind(argv) if argv != ["<inprocess>"] else "inprocess"] += 1
    by_file: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    fixtures: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for t in tests:
        node = str(t["test"])
        row = by_file[_file(node)]
        cpu = float(t["cpu_self"]) + float(t["cpu_children"])  # type: ignore[arg-type]
        t["cpu"] = cpu
        row["tests"] += 1
        row["cpu"] += cpu
        row["cpu_self"] += float(t["cpu_self"])  # type: ignore[arg-type]
        row["cpu_children"] += float(t["cpu_children"])  # type: ignore[arg-type]
        row["wall"] += float(t["wall"])  # type: ignore[arg-type]
        for k, n in spawns.get(node, Counter()).items():
            row[k if k in KINDS else "other"] += n
        for name, sec in dict(t["fixtures"]).items():  # type: ignore[call-overload]
            fixtures[name][0] += 1
            fixtures[name][1] += sec
    total = sum(float(t["cpu"]) for t in tests)  # type: ignore[arg-type]
    lines = []
    if wall is not None:
        lines.append(f"wall {wall:.0f} s, ")
    lines.append(
        f"{len(tests)} tests, CPU {total:.0f} s (test processes "
        f"{sum(r['cpu_self'] for r in by_file.values()):.0f} s, children "
        f"{sum(r['cpu_children'] for r in by_file.values()):.0f} s)\n\n"
    )
    head = ["file", "tests", "CPU s", "%", "self s", "child s", *KINDS, "other"]
    lines.append("| " + " | ".join(head) + " |\n")
    lines.append("|---" + "|---:" * (len(head) - 1) + "|\n")
    totals: Counter[str] = Counter()
    for name, row in sorted(by_file.items(), key=lambda kv: -kv[1]["cpu"]):
        cells = [
            name.removeprefix("tests/"),
            f"{row['tests']:.0f}",
            f"{row['cpu']:.1f}",
            f"{100 * row['cpu'] / total:.1f}" if total else "0",
            f"{row['cpu_self']:.1f}",
            f"{row['cpu_children']:.1f}",
        ]
        cells += [f"{row[k]:.0f}" for k in (*KINDS, "other")]
        for k in (*KINDS, "other"):
            totals[k] += int(row[k])
        lines.append("| " + " | ".join(cells) + " |\n")
    lines.append(
        "| total | "
        + f"{len(tests)} | {total:.1f} | 100 | | | "
        + " | ".join(str(totals[k]) for k in (*KINDS, "other"))
        + " |\n\n"
    )
    lines.append("slowest tests by CPU:\n\n")
    for t in sorted(tests, key=lambda t: -float(t["cpu"]))[:25]:  # type: ignore[arg-type]
        sp = spawns.get(str(t["test"]), Counter())
        lines.append(
            f"  {float(t['cpu']):7.1f} s  {t['test']}  "  # type: ignore[arg-type]
            + " ".join(f"{k}={n}" for k, n in sorted(sp.items()))
            + "\n"
        )
    lines.append("\nfixtures by CPU of their setups (setups, CPU s):\n\n")
    for name, (n, sec) in sorted(fixtures.items(), key=lambda kv: -kv[1][1])[:25]:
        lines.append(f"  {sec:7.1f} s  {n:5.0f}  {name}\n")
    other: Counter[str] = Counter()
    for c in spawns.values():
        for k, n in c.items():
            if k not in KINDS:
                other[k] += n
    if other:
        lines.append("\nother processes: " + ", ".join(f"{k} {n}" for k, n in other.most_common()))
        lines.append("\n")
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, help="summarise the records in this folder")
    parser.add_argument("-n", default="2", help="pytest-xdist workers (default 2)")
    args, rest = parser.parse_known_args()
    if args.report:
        print(report(args.report, None))
        return
    out = Path(tempfile.mkdtemp(prefix="suite-profile-"))
    wall = run(["-n", args.n, *rest], out)
    text = report(out, wall)
    (out / "report.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"records: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
