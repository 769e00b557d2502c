"""Benchmark: wall time and peak memory of lockdocs on the flagship and at 10x, 100x, 1000x.

Prints one Markdown table. Each figure is the median of several runs of a fresh process (as a
pre-commit hook or CI runs it); peak memory is the child's maximum resident set size. Beside
each check: the floor, a bare `python -c` that imports yaml and loads the same files with
PyYAML's C loader, and check-jsonschema validating the same files against the same schema.

    python bench/run.py            # all sizes
    python bench/run.py --quick    # flagship and 10x only
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))

from generate import generate  # noqa: E402

# The flagship's own size, measured: 18 locks, 36 paths, about 5 steps a path.
FLAGSHIP = {"locks": 18, "paths": 36, "steps": 5}

FLOOR = (
    "import sys, yaml, pathlib\n"
    "root = pathlib.Path(sys.argv[1])\n"
    "files = [root / 'locks.yaml', *sorted((root / 'paths').glob('*.yaml'))]\n"
    "for f in files:\n"
    "    yaml.load(f.read_text(encoding='utf-8'), Loader=yaml.CSafeLoader)\n"
)


def measure(cmd: list[str], runs: int, cwd: Path | None = None) -> tuple[float, float, int]:
    """Median wall seconds, the median of each run's own peak RSS in MiB, and the exit code
    of the last run (os.wait4 gives every child its own resource usage)."""
    times: list[float] = []
    peaks: list[float] = []
    code = 0
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - start)
        peaks.append(usage.ru_maxrss / 1024)
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        if code not in (0, 1):
            sys.stderr.write(err.decode(errors="replace")[-2000:])
    return statistics.median(times), statistics.median(peaks), code


def files_of(root: Path) -> list[str]:
    return [str(root / "locks.yaml"), *map(str, sorted((root / "paths").glob("*.yaml")))]


def schema_files(tmp: Path) -> tuple[Path, Path]:
    from lockdocs.schema.definition import shipped_files

    out = tmp / "schema"
    out.mkdir(exist_ok=True)
    for name, text in shipped_files().items():
        (out / name).write_text(text, encoding="utf-8")
    return out / "locks.schema.json", out / "paths.schema.json"


def row(label: str, value: tuple[float, float, int]) -> str:
    t, mem, code = value
    return f"| {label} | {t * 1000:,.0f} ms | {mem:,.0f} MiB | {code} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="flagship and 10x only")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    lockdocs = str(BIN / "lockdocs")
    python = sys.executable
    cjs = shutil.which("check-jsonschema", path=str(BIN)) or "check-jsonschema"
    tmp = Path(tempfile.mkdtemp(prefix="lockdocs-bench-"))
    locks_schema, paths_schema = schema_files(tmp)
    sizes: list[tuple[str, int]] = [("flagship", 0), ("10x", 10), ("100x", 100)]
    if not args.quick:
        sizes.append(("1000x", 1000))
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.platform()}",
        "",
        "| what | median wall | peak RSS | exit |",
        "| --- | ---: | ---: | ---: |",
    ]
    for label, factor in sizes:
        if factor == 0:
            root = REPO
        else:
            root = tmp / label
            generate(
                root,
                FLAGSHIP["locks"] * factor,
                FLAGSHIP["paths"] * factor,
                FLAGSHIP["steps"],
                seed=20261129,
            )
            if factor >= 1000:
                # 36,000 paths take about 3.4 million units of analysis, past the default
                # budget (2 million, which keeps a hostile pull request's check short)
                locks = root / "locks.yaml"
                text = locks.read_text(encoding="utf-8")
                locks.write_text(
                    text.replace("page:", "limits: {analysis_work: 10000000}\npage:", 1),
                    encoding="utf-8",
                )
        runs = args.runs if factor <= 100 else 1
        size = sum(Path(f).stat().st_size for f in files_of(root))
        lines.append(f"| **{label}** ({size / 1024:,.0f} KiB of YAML) | | | |")
        check = measure(
            [lockdocs, "check", "--root", str(root)] + ([] if factor == 0 else ["--no-drift"]), runs
        )
        lines.append(row("`lockdocs check`", check))
        floor = measure([python, "-c", FLOOR, str(root)], runs)
        lines.append(row("floor: python + yaml.CSafeLoader", floor))
        lines.append(f"| check / floor | {check[0] / floor[0]:.1f}x | | |")
        validate = measure([lockdocs, "validate", "--root", str(root)], runs)
        lines.append(row("`lockdocs validate` (parse + schema + model)", validate))
        lines.append(
            f"| check minus validate, over floor | {(check[0] - validate[0]) / floor[0]:.2f} | | |"
        )
        if factor <= 100:
            cj = measure([cjs, "--schemafile", str(locks_schema), str(root / "locks.yaml")], runs)
            cp = measure(
                [
                    cjs,
                    "--schemafile",
                    str(paths_schema),
                    *map(str, sorted((root / "paths").glob("*.yaml"))),
                ],
                runs,
            )
            lines.append(
                row(
                    "check-jsonschema (locks.yaml + paths, two runs summed)",
                    (cj[0] + cp[0], max(cj[1], cp[1]), max(cj[2], cp[2])),
                )
            )
        if factor == 0:
            work = tmp / "flagship-copy"
            shutil.copytree(REPO, work, ignore=shutil.ignore_patterns(".venv", ".git", "site"))
            lines.append(
                row("`lockdocs build`", measure([lockdocs, "build", "--root", str(work)], runs))
            )
            mk = BIN / "mkdocs"
            if mk.exists():
                lines.append(
                    row(
                        "`mkdocs build` of the site",
                        measure([str(mk), "build", "-q", "-d", str(tmp / "site")], 3, cwd=REPO),
                    )
                )
    print("\n".join(lines))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
