"""Benchmark: reading a project's files at a git revision, as `lockdocs diff` does.

Reads N blobs (path files of a few hundred bytes) two ways, interleaved so the machine's load
falls on both alike: one `git show REV:PATH` process per file (how diff read a revision before
issue 23), and one `git cat-file --batch` process for all of them (lockdocs.diff.gitread). Then
times the whole `materialize` (listing, reading, writing the files) and `lockdocs diff REV` on
that repository. Prints one Markdown table of medians and the ratio.

    python bench/diff_revision.py                # 12,000 files, 3 rounds
    python bench/diff_revision.py --files 2000   # a quicker run
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lockdocs.diff.gitread import BlobReader, list_tree, repository, resolve
from lockdocs.diff.snapshot import materialize

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@example.invalid",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@example.invalid",
}


def _repo(top: Path, files: int) -> Path:
    repo = top / "repo"
    (repo / "paths").mkdir(parents=True)
    (repo / "locks.yaml").write_text(
        "lockdocs: 1\npage: {title: B}\nlocks:\n  a:\n    title: A\n    kind: advisory\n"
        "    key: {constant: 1}\n    modes: {exclusive: x}\n",
        encoding="utf-8",
    )
    for i in range(files):
        (repo / "paths" / f"p{i:05}.yaml").write_text(
            f"group: G{i}\npaths:\n  p{i}:\n    title: Path {i}\n    steps:\n      - take: a\n",
            encoding="utf-8",
        )
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "b"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=ENV)
    return repo


def _per_blob(repo: Path, names: list[str]) -> float:
    started = time.perf_counter()
    for name in names:
        subprocess.run(["git", "show", f"HEAD:{name}"], cwd=repo, capture_output=True, check=True)
    return time.perf_counter() - started


def _batch(repo: Path, oids: list[str]) -> float:
    info = repository(repo)
    assert info is not None
    started = time.perf_counter()
    with BlobReader(info) as reader:
        reader.copy_all([(oid, 1 << 20) for oid in oids], lambda _: io.BytesIO())
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=12_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = _repo(Path(tmp), args.files)
        info = repository(repo)
        assert info is not None
        commit = resolve("HEAD", info)
        assert commit is not None
        entries = [e for e in list_tree(commit, info) if e.name.startswith("paths/")]
        names, oids = [e.name for e in entries], [e.oid for e in entries]
        old, new, whole, cli = [], [], [], []
        for _ in range(args.rounds):
            old.append(_per_blob(repo, names))
            new.append(_batch(repo, oids))
            with tempfile.TemporaryDirectory() as dest:
                started = time.perf_counter()
                materialize("HEAD", commit, info, Path(dest))
                whole.append(time.perf_counter() - started)
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "lockdocs", "diff", "HEAD"],
                cwd=repo,
                capture_output=True,
                check=False,
            )
            cli.append(time.perf_counter() - started)
    med = statistics.median
    print(f"| {args.files:,} files at a revision | median of {args.rounds} |")
    print("| --- | ---: |")
    print(f"| one `git show` per file (before) | {med(old):.2f} s |")
    print(f"| one `git cat-file --batch` (now) | {med(new):.2f} s |")
    print(f"| ratio | {med(old) / med(new):.0f}x |")
    print(f"| `materialize` (list, read, write the files) | {med(whole):.2f} s |")
    print(
        f"| `lockdocs diff HEAD` (the loader refuses over 10,000 path files) | {med(cli):.2f} s |"
    )


if __name__ == "__main__":
    main()
