"""Fuzzing `lockdocs diff` over hostile git trees (issue 23, item 8).

A pull request controls the tree its commits hold, and git accepts trees its own commands never
write: names with `..`, `.`, a slash, a newline or an escape sequence, a symlink out of the
repository, a submodule, a file and a folder of one name, `locks.yaml` as a folder. The trees
here are written object by object (zlib-compressed loose objects), so each can hold anything.
For each tree the revision's side is read as `lockdocs diff` reads it and compared with a sane
working tree, and every output format is made; the run must end in a side or a plain
DiffInputError (never another exception), write nothing outside its scratch folder, create no
symlink, stay within seconds, and print no raw control or invisible character.

The default suite runs a sample of the generator with a fixed seed and every case of the kept
corpus (tests/fixtures/fuzz-diff/*.json: the attack classes, and any tree that ever broke it);
`make fuzz` (`-m fuzz`) runs the long run, seeded by LOCKDOCS_FUZZ_SEED (default 20261129).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lockdocs.diagnostics import printable
from lockdocs.diff import FORMATTERS
from lockdocs.diff.compare import compare
from lockdocs.diff.gitread import RevisionError, repository, resolve
from lockdocs.diff.sides import DiffInputError, open_side
from lockdocs.diff.snapshot import materialize

CORPUS = Path(__file__).parent / "fixtures" / "fuzz-diff"
SEED = int(os.environ.get("LOCKDOCS_FUZZ_SEED", "20261129"))
LONG = int(os.environ.get("LOCKDOCS_FUZZ_CASES", "10000")) // 20
SAMPLE = 25
SLOWEST = 20.0  # seconds one case may take on a loaded CI machine
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

LOCKS = b"""\
lockdocs: 1
page: {title: Fuzz}
code: ["db/**/*.sql"]
locks:
  job:
    title: Job row
    kind: row
    table: app.jobs
    modes: {for update: claiming}
    taken_by:
      - {name: LockJob, kind: query}
"""
PATHS = b"""\
group: Jobs
paths:
  claim:
    title: Claim a job
    steps:
      - take: job
        via: LockJob
"""
QUERIES = b"-- name: LockJob :one\nSELECT id FROM app.jobs WHERE id = $1 FOR UPDATE;\n"


# --- writing git objects by hand -----------------------------------------------------------------


def _object(git_dir: Path, kind: str, body: bytes) -> str:
    data = f"{kind} {len(body)}\0".encode() + body
    oid = hashlib.sha1(data).hexdigest()  # git's object name, not a security hash
    target = git_dir / "objects" / oid[:2] / oid[2:]
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(zlib.compress(data, 1))
    return oid


# A tree: name -> ("blob", content, mode) | ("link", target) | ("tree", subtree) | ("commit", oid)
Tree = dict[bytes, tuple[Any, ...]]


def _tree(git_dir: Path, tree: Tree, *, unsorted: bool = False) -> str:
    entries: list[tuple[bytes, bytes, str]] = []
    for name, node in tree.items():
        if node[0] == "blob":
            entries.append((node[2].encode(), name, _object(git_dir, "blob", node[1])))
        elif node[0] == "link":
            entries.append((b"120000", name, _object(git_dir, "blob", node[1])))
        elif node[0] == "tree":
            entries.append((b"40000", name, _tree(git_dir, node[1])))
        else:
            entries.append((b"160000", name, node[1]))
    # git's order: by name, a folder's as if it ended in a slash
    entries.sort(key=lambda e: e[1] + (b"/" if e[0] == b"40000" else b""), reverse=unsorted)
    body = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries)
    return _object(git_dir, "tree", body)


def _commit(git_dir: Path, tree: str) -> str:
    body = (
        f"tree {tree}\nauthor T <t@example.invalid> 0 +0000\n"
        "committer T <t@example.invalid> 0 +0000\n\nfuzz\n"
    ).encode()
    return _object(git_dir, "commit", body)


# --- the generator -------------------------------------------------------------------------------

_HOSTILE_NAMES = [
    b"..",
    b".",
    b"",
    b"a/b",
    b"../escape.yaml",
    b"x\n\n<img src=x onerror=alert(1)>\n.yaml",
    b"\x1b]52;c;Zm9v\x07.sql",
    b"\xff\xfe.yaml",
    "\u202eevil.sql".encode(),
    b"a" * 300 + b".sql",
    b".git",
    b"locks.yaml",
    b"Paths",
    b"q\r.sql",
    b"-rf.sql",
    b"@everyone.yaml",
]
_HOSTILE_LOCKS = [
    b'code: ["../../**/*"]\n',
    b'code: ["/etc/*"]\n',
    b'code: ["**/**/**/**/**/**/*.sql"]\n',
    b'code: ["db/[a-\\\\]*.sql", "db/*.py", "**"]\n',
    b"paths: ../..\n",
    b"paths: /etc\n",
    b'paths: "x\\n</details>"\n',
    b"paths: .\n",
    b"paths: db\n",
    b'code: "not a list"\n',
    b"code: [1, 2]\n",
    b"\xff\xfe not utf-8\n",
    b"&a [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n",
]
_HOSTILE_CONTENT = [
    b"",
    b"\x00\x01\x02",
    b"SELECT 1x; SELECT * FROM app.jobs FOR UPDATE;\n",
    b"-- name: \x1b[2JClear :one\nSELECT id FROM app.jobs FOR UPDATE;\n",
    b'group: G\npaths:\n  "p\\n# heading":\n    title: "@octocat #1 \\u202e"\n    steps:\n      - take: job\n',
    b"group: G\npaths: [",
    b"\xef\xbb\xbf" + PATHS,
    QUERIES * 50,
]


def _base_tree() -> Tree:
    return {
        b"locks.yaml": ("blob", LOCKS, "100644"),
        b"paths": ("tree", {b"jobs.yaml": ("blob", PATHS, "100644")}),
        b"db": ("tree", {b"queries.sql": ("blob", QUERIES, "100644")}),
    }


def _random_node(rng: random.Random, depth: int) -> tuple[Any, ...]:
    roll = rng.random()
    if roll < 0.15:
        return (
            "link",
            rng.choice(
                [b"/etc/passwd", b"../../../../etc/shadow", b"..", b"db", b"paths/jobs.yaml"]
            ),
        )
    if roll < 0.2:
        return ("commit", "".join(rng.choice("0123456789abcdef") for _ in range(40)))
    if roll < 0.4 and depth < 4:
        return (
            "tree",
            {_random_name(rng): _random_node(rng, depth + 1) for _ in range(rng.randint(0, 3))},
        )
    mode = rng.choice(["100644", "100644", "100755", "100664", "100600"])
    return ("blob", rng.choice([*_HOSTILE_CONTENT, QUERIES, PATHS]), mode)


def _random_name(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return rng.choice(_HOSTILE_NAMES)
    stem = bytes(rng.choice(b"abcxyz_-.") for _ in range(rng.randint(1, 8)))
    return stem + rng.choice([b".sql", b".yaml", b".yml", b".py", b".go", b""])


def random_tree(rng: random.Random) -> Tree:
    """A project tree with hostile entries grafted on: its locks.yaml, its folders, its files."""
    tree = _base_tree()
    if rng.random() < 0.5:
        extra = rng.choice(_HOSTILE_LOCKS)
        tree[b"locks.yaml"] = ("blob", LOCKS + extra, "100644")
    folders = [tree, tree[b"paths"][1], tree[b"db"][1]]
    for _ in range(rng.randint(1, 6)):
        rng.choice(folders)[_random_name(rng)] = _random_node(rng, 0)
    if rng.random() < 0.1:
        tree[b"locks.yaml"] = rng.choice(
            [("tree", {}), ("link", b"/etc/passwd"), ("commit", "0" * 40)]
        )
    if rng.random() < 0.1:
        tree[b"paths"] = rng.choice([("blob", b"x", "100644"), ("link", b"/etc")])
    return tree


# --- one case --------------------------------------------------------------------------------------


@dataclass
class Lab:
    repo: Path  # the repository: its working tree is a sane project
    git_dir: Path
    canary: Path  # a folder beside the scratch folders: nothing may appear in it


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    top = tmp_path_factory.mktemp("fuzz-diff")
    repo = top / "repo"
    repo.mkdir()
    subprocess.run(
        ["git", "init", "-q", "-b", "main"], cwd=repo, check=True, env={**os.environ, **GIT_ENV}
    )
    (repo / "locks.yaml").write_bytes(LOCKS)
    (repo / "paths").mkdir()
    (repo / "paths" / "jobs.yaml").write_bytes(PATHS)
    (repo / "db").mkdir()
    (repo / "db" / "queries.sql").write_bytes(QUERIES)
    canary = top / "canary"
    canary.mkdir()
    return Lab(repo, repo / ".git", canary)


_RAW = set(map(chr, [*range(0x09), *range(0x0B, 0x20), 0x7F, 0x202E, 0x200B, 0x2066]))


def run_case(lab: Lab, tree: Tree, *, unsorted: bool = False) -> tuple[str, str]:
    """Read one hostile tree as `lockdocs diff` does: the outcome ("compared" or "refused")
    and what a terminal shows of it. Asserts the invariants."""
    commit = _commit(lab.git_dir, _tree(lab.git_dir, tree, unsorted=unsorted))
    before = sorted(p.name for p in lab.repo.rglob("*") if ".git" not in p.parts)
    started = time.monotonic()
    # The scratch folder itself: every file inside it, no symlink, nothing written beside it.
    scratch = lab.canary.parent / "scratch"
    repo_info = repository(lab.repo)
    assert repo_info is not None and resolve(commit, repo_info) == commit
    with contextlib.suppress(RevisionError):  # its own refusal; anything else is a crash
        materialize(commit, commit, repo_info, scratch)
    for path in scratch.rglob("*") if scratch.exists() else ():
        assert not path.is_symlink(), path
        assert path.resolve().is_relative_to(scratch.resolve()), path
    shutil.rmtree(scratch, ignore_errors=True)
    outcome, shown = "refused", ""
    try:
        with open_side(commit, lab.repo) as base, open_side(None, lab.repo) as head:
            result = compare(base, head)
        result["link"] = None
        for fmt, formatter in FORMATTERS.items():
            out = formatter(result)
            if fmt == "json":
                json.loads(out)
                continue
            if fmt == "text":
                shown = out
            assert not _RAW & set(out), (fmt, [c for c in out if c in _RAW][:5])
            if fmt == "markdown":
                for line in out.splitlines():
                    assert not line.lstrip().startswith(("<img", "# ", "</details>x")), line
        outcome = "compared"
    except DiffInputError as exc:
        shown = exc.details + printable(exc.message)
    elapsed = time.monotonic() - started
    assert elapsed < SLOWEST, f"{elapsed:.1f} s"
    assert not any(lab.canary.iterdir()), "something was written outside the scratch folder"
    after = sorted(p.name for p in lab.repo.rglob("*") if ".git" not in p.parts)
    assert after == before, "the working tree changed"
    return outcome, shown


def _fuzz(lab: Lab, cases: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    seen: dict[str, int] = {}
    for n in range(cases):
        tree = random_tree(rng)
        try:
            outcome, _ = run_case(lab, tree, unsorted=rng.random() < 0.05)
        except AssertionError as exc:
            raise AssertionError(f"case {n} of seed {seed}: {exc}\ntree: {_show(tree)}") from exc
        seen[outcome] = seen.get(outcome, 0) + 1
    return seen


def _show(tree: Tree) -> str:
    return json.dumps(_to_json(tree), indent=1)[:4000]


# --- the corpus: a tree as JSON (names and contents as latin-1 text, so any byte fits) ---------


def _to_json(tree: Tree) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, node in tree.items():
        key = name.decode("latin-1")
        if node[0] == "blob":
            out[key] = {"blob": node[1].decode("latin-1"), "mode": node[2]}
        elif node[0] == "link":
            out[key] = {"link": node[1].decode("latin-1")}
        elif node[0] == "tree":
            out[key] = {"tree": _to_json(node[1])}
        else:
            out[key] = {"commit": node[1]}
    return out


def _from_json(data: dict[str, Any]) -> Tree:
    out: Tree = {}
    for key, node in data.items():
        name = key.encode("latin-1")
        if "repeat" in node:  # a large file, kept small in the corpus
            data = node["repeat"].encode("latin-1") * node["times"]
            out[name] = ("blob", data, node.get("mode", "100644"))
        elif "blob" in node:
            out[name] = ("blob", node["blob"].encode("latin-1"), node.get("mode", "100644"))
        elif "link" in node:
            out[name] = ("link", node["link"].encode("latin-1"))
        elif "tree" in node:
            out[name] = ("tree", _from_json(node["tree"]))
        else:
            out[name] = ("commit", node["commit"])
    return out


CASES = sorted(CORPUS.glob("*.json"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_corpus(lab: Lab, case: Path) -> None:
    spec = json.loads(case.read_text(encoding="utf-8"))
    outcome, shown = run_case(lab, _from_json(spec["tree"]), unsorted=spec.get("unsorted", False))
    assert outcome == spec["outcome"], spec["why"]
    for text in spec.get("shows", []):
        assert text in shown, (spec["why"], shown)


def test_fuzz_diff_sample(lab: Lab) -> None:
    seen = _fuzz(lab, SAMPLE, SEED)
    assert sum(seen.values()) == SAMPLE
    assert seen.get("compared", 0) > 0, seen


@pytest.mark.fuzz
def test_fuzz_diff_long(lab: Lab) -> None:
    seen = _fuzz(lab, LONG, SEED + 1)
    print(f"\nfuzz (diff over git trees, seed {SEED + 1}): {LONG} trees: {seen}")
    assert seen.get("compared", 0) > LONG // 10, seen
