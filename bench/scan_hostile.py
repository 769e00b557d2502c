"""Benchmark: the scan's bounds under hostile code (issue 23): what a pull request can put in
the files `code:` matches. Each row runs `lockdocs check --no-drift` in a fresh process on a
generated project (cache off) and prints the median wall and CPU time, the child's peak RSS,
the exit code and the bound it must stay under; a row over its bound, or exiting 3, is marked
OVER and makes the script exit 1. The bounds say "linear" or "refused early", not "fast here".

    python bench/scan_hostile.py
    python bench/scan_hostile.py --runs 1
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))

from hostile import measure  # noqa: E402 (bench/ is not a package)

LOCKS = """\
lockdocs: 1
page: {title: Scan}
code: ["db/*"]
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for update: every writer}
    taken_by:
      - {name: LockAccount, kind: query}
"""
GOOD = "-- name: LockAccount :one\nSELECT id FROM app.accounts WHERE id = $1 FOR UPDATE;\n"


def project(root: Path, files: dict[str, str | Callable[[Path], None]]) -> Path:
    (root / "db").mkdir(parents=True)
    (root / "locks.yaml").write_text(LOCKS, encoding="utf-8")
    (root / "db" / "good.sql").write_text(GOOD, encoding="utf-8")
    for name, content in files.items():
        if callable(content):
            content(root / name)
        else:
            (root / name).write_text(content, encoding="utf-8")
    return root


def sparse(size: int) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        with path.open("wb") as fh:
            fh.truncate(size)

    return make


ROWS: list[tuple[str, dict[str, str | Callable[[Path], None]], float, float]] = [
    ("4 MiB of 'SELECT 1x;' (lexer errors)", {"db/junk.sql": "SELECT 1x;\n" * 380_000}, 30, 400),
    (
        "4 MiB after an unterminated quote",
        {"db/open.sql": GOOD + "SELECT '" + "a" * 4_000_000},
        20,
        300,
    ),
    (
        "4 MiB of bad escapes in one string",
        {"db/esc.sql": "SELECT E'" + "\\u1 " * 1_000_000 + "';\n"},
        20,
        300,
    ),
    (
        "1 MiB of statements, one syntax error (read one by one)",
        {"db/many.sql": "SELECT 1 FROM app.accounts FOR UPDATE;\n" * 27_000 + "SELEC 1;\n"},
        60,
        600,
    ),
    ("3 GB .sql file (sparse): refused unread", {"db/huge.sql": sparse(3 << 30)}, 10, 200),
    (
        "350 KB of Go literals joined with +",
        {"db/q.go": "package x\nconst q = " + " + ".join(['"SELECT 1 "'] * 25_000) + "\n"},
        20,
        300,
    ),
    (
        "300 KB of Python literals, implicitly joined",
        {"db/q.py": "q = (" + " ".join(['"SELECT 1 "'] * 25_000) + ")\n"},
        20,
        300,
    ),
    (
        "Python: a 25,000-term + chain (refused: too deep)",
        {"db/deep.py": "q = " + " + ".join(['"SELECT 1 "'] * 25_000) + "\n"},
        10,
        300,
    ),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lockdocs-scan-bench-"))
    os.environ["LOCKDOCS_CACHE"] = "off"
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.platform()}",
        "",
        "| input | median wall | CPU | peak RSS | exit | bound (CPU, RSS) |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    over = False
    for n, (label, files, secs, mib) in enumerate(ROWS):
        root = project(tmp / f"case{n}", files)
        argv = [str(BIN / "lockdocs"), "check", "--no-drift", "--root", str(root)]
        wall, cpu, peak, code = measure(argv, args.runs)
        bad = cpu > secs or peak > mib or code not in (0, 1)
        over = over or bad
        lines.append(
            f"| {label} | {wall:.2f} s | {cpu:.2f} s | {peak:.0f} MiB | {code} | "
            f"{secs:g} s, {mib:g} MiB{' OVER' if bad else ''} |"
        )
    print("\n".join(lines))
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
