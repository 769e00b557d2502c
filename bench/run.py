"""Benchmark: every speed figure of lockdocs against its floor, in one run.

`lockdocs check` runs in pre-commit hooks and in CI, so it is measured against the cheapest
program that reads the same declarations: Python importing PyYAML and loading every file with
its C loader (the floor). Each command runs as a fresh process, as a hook runs it, and the
commands of one size take turns with the floor, round after round; a figure is the median over
the rounds of the command's CPU time divided by the floor's CPU time in the same round. On a
shared machine the load changes from second to second, and a ratio taken side by side keeps
what the machine does meanwhile out of the figure; wall time alone would not.

    python bench/run.py              # flagship, 10x and 100x; the 100x build against `dot`
    python bench/run.py --quick      # flagship and 10x, three rounds: about a minute
    python bench/run.py --instructions   # also total instructions (valgrind's callgrind)

What each column runs:

- floor: `python -c` importing yaml and loading locks.yaml and paths/*.yaml (CSafeLoader).
  For a project with `code:` (the flagship), a second row also divides by a floor that parses
  each SQL file with pglast, as the check's scan must (the goal stays the first floor's).
- check after edit + build: a comment added to locks.yaml, `lockdocs build` (not measured),
  then `lockdocs check`: the pre-commit hook's run after "edit, build, commit".
- check warm: `lockdocs check` after a run with the same inputs (the result cache answers).
- check cold: `LOCKDOCS_CACHE=off lockdocs check`: no cache of any kind, as CI on a fresh clone.
- check --no-drift and validate: cold too.
- build 100x cold: `lockdocs build` of the 100x project into an empty docs/ (every diagram
  drawn), against its floor: `dot` alone drawing the same DOT files, 64 to a process and one
  process per core, as the build draws them.

The package's bytecode is compiled first (`compileall`), as `make setup` leaves it: a run that
compiles every module of lockdocs measures the compiler, not lockdocs.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402

# The flagship's own size: 18 locks, 36 paths, about 5 steps a path.
FLAGSHIP = {"locks": 18, "paths": 36, "steps": 5}
SEED = 20261129

FLOOR = (
    "import sys, yaml, pathlib\n"
    "root = pathlib.Path(sys.argv[1])\n"
    "files = [root / 'locks.yaml', *sorted((root / 'paths').glob('*.yaml'))]\n"
    "for f in files:\n"
    "    yaml.load(f.read_text(encoding='utf-8'), Loader=yaml.CSafeLoader)\n"
)

# The floor of a project whose locks.yaml sets `code:` (the flagship): the same, and pglast
# parsing each SQL file the scan reads, as the check must (Postgres's own parser, imported).
FLOOR_SQL = FLOOR + (
    "import pglast.parser\n"
    "for f in sorted(root.glob('code/**/*.sql')):\n"
    "    pglast.parser.parse_sql_json(f.read_text(encoding='utf-8'))\n"
)

# The goals of issue 27, as ratios to the floor.
GOALS = {"check warm": 1.3, "check cold": 2.0}
BUILD_SECONDS = 30.0
BUILD_OVER_DOT = 2.0


class Sample(NamedTuple):
    cpu: float  # seconds, user + system, of the process and the children it waited for
    wall: float
    code: int


def run(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> Sample:
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code not in (0, 1):
        sys.stderr.write(f"{' '.join(cmd)} exited {code}\n{err.decode(errors='replace')[-2000:]}")
    return Sample(usage.ru_utime + usage.ru_stime, wall, code)


def instructions(cmd: list[str], env: dict[str, str], tmp: Path) -> int:
    """Total instructions of one run under callgrind (children not traced)."""
    out = tmp / "callgrind.out"
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", proc.stderr)
    out.unlink(missing_ok=True)
    return int(found.group(1)) if found else 0


def project(tmp: Path, label: str, factor: int) -> Path:
    """The flagship's declarations and committed docs (a copy: caches are keyed by the
    project's path, and the bench must not write into the repository), or a generated project."""
    root = tmp / label
    if factor == 1:
        root.mkdir()
        for name in ("locks.yaml", "pyproject.toml"):
            shutil.copy2(REPO / name, root / name)
        for name in ("paths", "code", "templates", "docs"):
            if (REPO / name).is_dir():
                shutil.copytree(REPO / name, root / name, symlinks=True)
        return root
    generate(
        root,
        FLAGSHIP["locks"] * factor,
        FLAGSHIP["paths"] * factor,
        FLAGSHIP["steps"],
        seed=SEED,
    )
    if factor >= 1000:
        # 36,000 paths take about 3.4 million units of analysis, past the default budget
        # (2 million, which keeps a hostile pull request's check short)
        locks = root / "locks.yaml"
        text = locks.read_text(encoding="utf-8")
        locks.write_text(
            text.replace("page:", "limits: {analysis_work: 10000000}\npage:", 1), encoding="utf-8"
        )
    return root


def median_ratio(samples: dict[str, list[Sample]], name: str) -> float:
    return statistics.median(
        s.cpu / f.cpu for s, f in zip(samples[name], samples["floor"], strict=True)
    )


def commands(root: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    lockdocs = str(BIN / "lockdocs")
    base = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    cold = {**base, "LOCKDOCS_CACHE": "off"}
    at = ["--root", str(root)]
    sql = (
        {"floor + SQL": ([sys.executable, "-c", FLOOR_SQL, str(root)], base)}
        if (root / "code").is_dir()
        else {}
    )
    return {
        **sql,
        "floor": ([sys.executable, "-c", FLOOR, str(root)], base),
        # run right after `edit_and_build`: the hook's check after "edit, build, commit"
        "check after build": ([lockdocs, "check", *at], base),
        "check warm": ([lockdocs, "check", *at], base),
        "check cold": ([lockdocs, "check", *at], cold),
        "check --no-drift": ([lockdocs, "check", "--no-drift", *at], cold),
        "validate": ([lockdocs, "validate", *at], cold),
    }


def edit_and_build(root: Path, n: int) -> None:
    """An edit of the declarations that changes no generated file (a comment), then `lockdocs
    build` (not measured): what a developer does before the commit that runs the hook."""
    with (root / "locks.yaml").open("a", encoding="utf-8") as f:
        f.write(f"# edit {n}\n")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    if run([str(BIN / "lockdocs"), "build", "--root", str(root)], env).code != 0:
        raise SystemExit(f"lockdocs build failed on {root}")


def measure_size(
    label: str, root: Path, rounds: int, tmp: Path, count_instructions: bool
) -> list[str]:
    cmds = commands(root)
    # Prime the warm cache: the run a hook makes after the previous commit.
    first = run(*cmds["check warm"])
    again = run(*cmds["check warm"])
    if first.code not in (0, 1) or again.code not in (0, 1):
        raise SystemExit(f"lockdocs check failed on {label}")
    samples: dict[str, list[Sample]] = {name: [] for name in cmds}
    for n in range(rounds):
        edit_and_build(root, n)
        for name, (cmd, env) in cmds.items():
            samples[name].append(run(cmd, env))
    size = sum(f.stat().st_size for f in [root / "locks.yaml", *(root / "paths").glob("*.yaml")])
    floor_ms = statistics.median(s.cpu for s in samples["floor"]) * 1000
    cells = [f"**{label}** ({size / 1024:,.0f} KiB)", f"{floor_ms:,.0f} ms"]
    shown = [name for name in cmds if not name.startswith("floor")]
    for name in shown:
        ratio = median_ratio(samples, name)
        goal = GOALS.get(name)
        mark = "" if goal is None else (" ✓" if ratio <= goal else " ✗")
        cpu = statistics.median(s.cpu for s in samples[name]) * 1000
        cells.append(f"{ratio:.2f}x{mark} ({cpu:,.0f} ms)")
    rows = ["| " + " | ".join(cells) + " |"]
    if "floor + SQL" in samples:
        # What the check reads besides the declarations: its `code:` SQL, parsed with pglast
        # (whose import alone is most of it). The goal stays the YAML floor's.
        sql_ms = statistics.median(s.cpu for s in samples["floor + SQL"]) * 1000
        cold = statistics.median(
            c.cpu / f.cpu
            for c, f in zip(samples["check cold"], samples["floor + SQL"], strict=True)
        )
        rows.append(
            f"| {label}, against a floor that also parses its `code:` SQL with pglast "
            f"| {sql_ms:,.0f} ms | | | {cold:.2f}x | | |"
        )
    if count_instructions:
        edit_and_build(root, rounds)
        irs = {name: instructions(cmd, env, tmp) for name, (cmd, env) in cmds.items()}
        floor_ir = irs["floor"] or 1
        cells = [f"{label}: instructions", f"{floor_ir / 1e6:,.0f} M"]
        cells += [f"{irs[n] / floor_ir:.2f}x ({irs[n] / 1e6:,.0f} M)" for n in shown]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def dot_alone(dots: list[Path], out: Path) -> Sample:
    """Graphviz alone on the same DOT files, batched as the build batches them: 64 files to a
    `dot` process, one process per core."""
    chunks = [dots[i : i + 64] for i in range(0, len(dots), 64)]
    before = os.times()
    start = time.perf_counter()

    def draw(chunk: list[Path]) -> int:
        done = subprocess.run(
            ["dot", "-Tsvg", *map(str, chunk)], stdout=subprocess.PIPE, check=False
        )
        (out / f"{chunk[0].stem}.svg").write_bytes(done.stdout)
        return done.returncode

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        codes = list(pool.map(draw, chunks))
    wall = time.perf_counter() - start
    after = os.times()
    cpu = after.children_user - before.children_user + after.children_system
    cpu -= before.children_system
    return Sample(cpu, wall, max(codes, default=0))


def build_row(root: Path, factor: int, built: Sample, load: float, tmp: Path) -> str:
    """The first build of a generated project (every diagram drawn) against `dot` alone."""
    dots = sorted((root / "docs").rglob("*.dot"))
    floor_out = tmp / f"dot-alone-{factor}"
    floor_out.mkdir()
    alone = dot_alone(dots, floor_out)
    wall_ok = "✓" if built.wall < BUILD_SECONDS else "✗"
    over = built.wall / alone.wall
    over_ok = "✓" if over < BUILD_OVER_DOT else "✗"
    return (
        f"| build {factor}x cold ({len(dots):,} diagrams; load {load:.1f}) | "
        f"{built.wall:.1f} s {wall_ok} | {alone.wall:.1f} s | {over:.2f}x {over_ok} | "
        f"{built.cpu:.1f} s | {alone.cpu:.1f} s | {built.cpu / alone.cpu:.2f}x |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="flagship and 10x, 3 rounds")
    ap.add_argument("--rounds", type=int, default=0, help="rounds per size (default 7; quick 3)")
    ap.add_argument(
        "--sizes", default="", help="comma-separated factors of the flagship (default 1,10,100)"
    )
    ap.add_argument(
        "--no-build", action="store_true", help="no build row (the 100x build against dot)"
    )
    ap.add_argument(
        "--instructions", action="store_true", help="also count instructions (callgrind)"
    )
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s] or (
        [1, 10] if args.quick else [1, 10, 100]
    )
    rounds = args.rounds or (3 if args.quick else 7)
    compileall.compile_dir(str(REPO / "src" / "lockdocs"), quiet=2)
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="lockdocs-bench-"))
    os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
    dot = subprocess.run(["dot", "-V"], capture_output=True, text=True, check=False).stderr
    lines = [
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{dot.strip()}; load average {os.getloadavg()[0]:.1f} at the start; "
        f"{rounds} rounds, interleaved; median CPU time over the floor's in the same round",
        "",
        "| declarations | floor (CPU) | check after edit + build | check warm (goal 1.3x) "
        "| check cold (goal 2x) | check --no-drift | validate |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    builds: list[str] = []
    try:
        for factor in sizes:
            label = "flagship" if factor == 1 else f"{factor}x"
            root = project(tmp, label, factor)
            if factor != 1:  # the docs a check compares (the flagship has its own, committed)
                env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "LOCKDOCS_CACHE": "off"}
                load = os.getloadavg()[0]
                built = run([str(BIN / "lockdocs"), "build", "--root", str(root)], env)
                if built.code != 0:
                    raise SystemExit(f"lockdocs build failed on {label}")
                if factor >= 100 and not args.no_build:
                    builds.append(build_row(root, factor, built, load, tmp))
            lines += measure_size(label, root, rounds, tmp, args.instructions)
            print(lines[-1], file=sys.stderr)
        if builds:
            lines += [
                "",
                "| build | wall (goal 30 s) | dot alone, wall | build / dot (goal 2x) "
                "| CPU (lockdocs + dot) | dot alone, CPU | CPU / dot |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
                *builds,
            ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines.append(f"\n(bench took {time.perf_counter() - started:.0f} s)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
