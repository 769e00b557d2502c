"""The review workflow on a project with `code:` (issue 25): every documented CI step, run at each
commit of a real git history, says what `lockdocs check` says there.

The project is a job queue: SQL (a schema with an enum and a composite type), a PL/pgSQL
function with an enum-typed variable, a record and a composite-array parameter, sqlc queries,
Python and Go with SQL in string literals. Its history: the code before lockdocs, the commit that
adopts lockdocs, a code-only commit that adds an undeclared locking statement, a README-only
commit, and a commit whose declarations close a lock-order cycle. At each commit the check step,
the SARIF step and the shipped pre-commit hook agree with `lockdocs check`; each side of a diff
(two revisions, a revision and the working tree, two folders, the adoption PR and the no-op PR)
has the findings `check` gives at that commit; and the workflow's diff step comments what
changed, and nothing for the no-op PR.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, lockdocs_process, shared_folder
from lockdocs.api import check
from lockdocs.diff.sides import open_side

WORKFLOW = REPO / "examples" / "ci" / "github-workflow.yml"
DRIFT = ("LD602", "LD603", "LD604", "LD605")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

CODE = {
    "README.md": "A job queue.\n",
    "db/schema.sql": """\
CREATE SCHEMA jobs;
CREATE TYPE jobs.state AS ENUM ('queued', 'running', 'done');
CREATE TYPE jobs.item AS (id bigint, qty integer);
CREATE TABLE jobs.queue (
  id bigint PRIMARY KEY,
  state jobs.state NOT NULL DEFAULT 'queued',
  payload jsonb
);
""",
    "db/functions/claim.sql": """\
CREATE FUNCTION jobs.claim(p_items jobs.item[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_state jobs.state;
  v_row record;
BEGIN
  SELECT q.state, q.* INTO v_state, v_row
    FROM jobs.queue q
   WHERE q.id = (p_items[1]).id
     FOR UPDATE;
  IF v_state <> 'queued' THEN
    RETURN NULL;
  END IF;
  RETURN v_row.id;
END
$$;
""",
    "db/queries/jobs.sql": """\
-- name: LockJob :one
SELECT id, state FROM jobs.queue WHERE id = $1 FOR UPDATE;

-- name: ListJobs :many
SELECT id, state FROM jobs.queue ORDER BY id;
""",
    "app/jobs.py": '''\
"""The job API."""


def list_jobs(conn):
    return conn.execute("SELECT id, state FROM jobs.queue WHERE state = %s", ("queued",))


def finish_job(conn, job_id):
    conn.execute("UPDATE jobs.queue SET state = 'done' WHERE id = %(id)s", {"id": job_id})
''',
    "worker/worker.go": """\
// Package worker runs jobs.
package worker

import (
\t"context"
\t"database/sql"
)

// lockWorker takes the worker's slot for the transaction.
func lockWorker(ctx context.Context, tx *sql.Tx, workerID string) error {
\t_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('worker:' || $1, 0))", workerID)
\treturn err
}
""",
}

LOCKS = """\
lockdocs: 1
page: {title: Job queue locks}
code: ["db/**/*.sql", "app/*.py", "worker/*.go"]
transactions:
  job:
    opened_by: BeginJob
    lock_timeout: 5s
locks:
  job-row:
    title: Job row
    kind: row
    table: jobs.queue
    modes:
      for update: claiming a job
      for no key update: finishing a job
    taken_by:
      - {name: jobs.claim, kind: sql-function, mode: for update}
      - {name: LockJob, kind: query, mode: for update}
      - {name: finish_job, kind: function, mode: for no key update}
  worker:
    title: Worker slot
    kind: advisory
    key:
      hashtextextended: {prefix: "worker:", parts: [worker id]}
    modes: {exclusive: one run of a worker at a time}
    taken_by:
      - {name: lockWorker, kind: function}
"""

PATHS = """\
group: Jobs
transaction: job
paths:
  run-job:
    title: Run a job
    steps:
      - take: worker
        via: lockWorker
      - take: job-row
        mode: for update
        via: LockJob
      - take: job-row
        mode: for no key update
        again: true
        via: finish_job
"""

UNDECLARED = """
-- name: LockJobForAudit :one
SELECT id FROM jobs.queue WHERE id = $1 FOR UPDATE;
"""

CYCLE = """\
  audit-job:
    title: Audit a job
    steps:
      - take: job-row
        mode: for update
        via: LockJob
      - take: worker
        via: lockWorker
"""


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
    return proc.stdout.strip()


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _hook_config() -> str:
    """The shipped hook's own definition, run by this venv's lockdocs (language: system, so
    pre-commit installs nothing)."""
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    local = {k: v for k, v in hook.items() if k != "minimum_pre_commit_version"}
    local["language"] = "system"
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]})


def _env() -> dict[str, str]:
    return {
        **os.environ,
        **GIT_ENV,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }


@dataclass
class History:
    repo: Path
    commits: dict[str, str]  # name -> sha, in order
    trees: dict[str, Path]  # name -> a checkout of that commit
    hook: dict[str, subprocess.CompletedProcess[str]]  # name -> the hook's run on that commit

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": str(self.repo),
            "commits": self.commits,
            "trees": {k: str(v) for k, v in self.trees.items()},
            "hook": {k: [v.returncode, v.stdout, v.stderr] for k, v in self.hook.items()},
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> History:
        return History(
            Path(data["repo"]),
            data["commits"],
            {k: Path(v) for k, v in data["trees"].items()},
            {
                k: subprocess.CompletedProcess([], code, out, err)
                for k, (code, out, err) in data["hook"].items()
            },
        )


COMMITS = ["before", "adopt", "undeclared", "readme", "cycle"]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """The history, built once for the whole run and shared by pytest-xdist's workers."""

    def build(shared: Path) -> None:
        built = _build_history(shared / "build")
        (shared / "history.json").write_text(json.dumps(built.to_json()), encoding="utf-8")

    shared = shared_folder(tmp_path_factory, "review-workflow-history", build)
    return History.from_json(json.loads((shared / "history.json").read_text(encoding="utf-8")))


def _build_history(top: Path) -> History:
    """The repository, built commit by commit with the shipped hook installed: each commit runs
    the hook (its verdict kept); a commit the hook refuses is made anyway (--no-verify), as a
    pull request's would be, so the history has every state."""
    repo = top / "repo"
    repo.mkdir(parents=True)
    git("init", "-q", cwd=repo)
    _write(repo, {**CODE, ".pre-commit-config.yaml": _hook_config()})
    home = top / "pre-commit-home"
    env = {**_env(), "PRE_COMMIT_HOME": str(home)}
    hooks: dict[str, subprocess.CompletedProcess[str]] = {}

    def commit(name: str) -> None:
        git("add", "-A", cwd=repo)
        run = subprocess.run(
            [sys.executable, "-m", "pre_commit", "run"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        hooks[name] = run
        git("commit", "-q", "--no-verify", "-m", name, cwd=repo)

    commit("before")
    _write(repo, {"locks.yaml": LOCKS, "paths/jobs.yaml": PATHS})
    assert lockdocs_process("build", cwd=repo).returncode == 0
    commit("adopt")
    queries = repo / "db" / "queries" / "jobs.sql"
    queries.write_text(queries.read_text(encoding="utf-8") + UNDECLARED, encoding="utf-8")
    commit("undeclared")
    (repo / "README.md").write_text("A job queue, with its locks declared.\n", encoding="utf-8")
    commit("readme")
    paths = repo / "paths" / "jobs.yaml"
    paths.write_text(paths.read_text(encoding="utf-8") + CYCLE, encoding="utf-8")
    assert lockdocs_process("build", cwd=repo).returncode == 0
    commit("cycle")
    shas = git("rev-list", "--reverse", "HEAD", cwd=repo).split()
    commits = dict(zip(COMMITS, shas, strict=True))
    trees = {}
    for name, sha in commits.items():
        tree = top / "at" / name
        git("worktree", "add", "-q", "--detach", str(tree), sha, cwd=repo)
        trees[name] = tree
    return History(repo, commits, trees, hooks)


def _check_json(tree: Path) -> tuple[int, list[dict[str, Any]]]:
    proc = lockdocs_process("check", "--format", "json", cwd=tree)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["diagnostics"]


def _key(d: dict[str, Any]) -> tuple[Any, ...]:
    return (d["code"], d["file"], d["line"], d["message"])


# --- each side of a diff is what check says at that commit ---------------------------------------


@pytest.mark.parametrize("name", COMMITS[1:])
def test_a_revision_side_has_the_findings_check_gives_at_that_commit(
    history: History, name: str
) -> None:
    with open_side(history.commits[name], history.repo) as side:
        found = sorted((d.code, d.location.file, d.location.line, d.message) for d in side.findings)
    result = check(history.trees[name])
    expected = sorted(
        (d.code, d.location.file, d.location.line, d.message)
        for d in result.diagnostics
        if d.code not in DRIFT
    )
    assert found == expected
    assert any(code.startswith("LD7") for code, *_ in found), "the code: files are read"


def _diff(*args: str, cwd: Path) -> dict[str, Any]:
    proc = lockdocs_process("diff", *args, "--format", "json", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


SECTIONS = ("locks", "edges", "paths", "findings", "exceptions", "rules", "summary", "changed")


def test_the_five_pull_request_forms_agree_with_check(history: History) -> None:
    c, trees = history.commits, history.trees
    # 1. two revisions: the code-only commit brings one undeclared locking statement
    two = _diff(c["adopt"], c["undeclared"], cwd=history.repo)
    _, before = _check_json(trees["adopt"])
    _, after = _check_json(trees["undeclared"])
    added = {_key(d) for d in after} - {_key(d) for d in before}
    assert [(f["code"], f["message"]) for f in two["findings"]["new"]] == [
        (code, message) for code, _, _, message in sorted(added) if code not in DRIFT
    ]
    assert [f["code"] for f in two["findings"]["new"]] == ["LD702"]
    assert two["findings"]["fixed"] == two["findings"]["changed"] == []
    assert two["new_unwaived"] == 1
    # 2. a revision and the working tree (the head checked out)
    worktree = _diff(c["adopt"], cwd=trees["undeclared"])
    # 3. two folders
    folders = _diff(
        "--base-dir", str(trees["adopt"]), "--head-dir", str(trees["undeclared"]), cwd=history.repo
    )
    for key in SECTIONS:
        assert worktree[key] == two[key], key
        assert folders[key] == two[key], key
    assert (two["sides"]["base"]["kind"], two["sides"]["head"]["kind"]) == ("revision", "revision")
    assert two["sides"]["base"]["commit"] == c["adopt"]
    assert worktree["sides"]["head"]["kind"] == "working tree"
    assert folders["sides"]["base"]["kind"] == "folder"
    # 4. the pull request that adopts lockdocs: every finding of check there is new
    adoption = _diff(c["before"], c["adopt"], cwd=history.repo)
    assert adoption["sides"]["base"]["note"] == "no locks.yaml"
    _, adopted = _check_json(trees["adopt"])
    assert sorted((f["code"], f["message"]) for f in adoption["findings"]["new"]) == sorted(
        (d["code"], d["message"]) for d in adopted if d["code"] not in DRIFT
    )
    assert [lk["id"] for lk in adoption["locks"]["added"]] == ["job-row", "worker"]
    # 5. the no-op pull request (README only): no change, however the code: files were read
    for noop in (
        _diff(c["undeclared"], c["readme"], cwd=history.repo),
        _diff(c["undeclared"], cwd=trees["readme"]),
    ):
        assert noop["changed"] is False
        assert noop["summary"] == "no change to the locks, their order or the findings"


def test_the_pull_request_that_closes_a_cycle(history: History) -> None:
    c = history.commits
    data = _diff(c["readme"], c["cycle"], cwd=history.repo)
    assert [f["code"] for f in data["findings"]["new"]] == ["LD201"]
    assert [p["id"] for p in data["paths"]["added"]] == ["audit-job"]


# --- the workflow's steps and the hook, at each commit -------------------------------------------


def _steps() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return {s.get("name", ""): s for job in doc["jobs"].values() for s in job["steps"]}


def _run_step(
    step: dict[str, Any], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=cwd,
        env={**_env(), **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


_ANNOTATION = re.compile(
    r"^::(error|warning|notice) file=([^,]*),(?:line=(\d+),col=\d+,)?title=(LD\d+)::"
)


@pytest.mark.parametrize("name", COMMITS[1:])
def test_the_check_and_sarif_steps_say_what_check_says(history: History, name: str) -> None:
    tree = history.trees[name]
    code, diagnostics = _check_json(tree)
    steps = _steps()
    # annotations: one per unwaived finding, placed where check places it; the same exit code
    gate = _run_step(steps["lockdocs check"], tree)
    assert gate.returncode == code, gate.stderr
    annotations = sorted(
        (m.group(4), m.group(2), int(m.group(3) or 0))
        for m in map(_ANNOTATION.match, gate.stdout.splitlines())
        if m
    )
    assert annotations == sorted(
        (d["code"], d["file"], d["line"]) for d in diagnostics if not d["waived_by"]
    )
    # SARIF: every finding, waived ones as suppressed; the step is green on findings
    sarif = _run_step(steps["lockdocs check (SARIF)"], tree)
    assert sarif.returncode == 0, sarif.stderr
    results = json.loads((tree / "lockdocs.sarif").read_text(encoding="utf-8"))["runs"][0][
        "results"
    ]
    located = sorted(
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"].get("region", {}).get("startLine", 0),
        )
        for r in results
    )
    assert located == sorted((d["code"], d["file"], d["line"]) for d in diagnostics)
    (tree / "lockdocs.sarif").unlink()


@pytest.mark.parametrize("name", COMMITS)
def test_the_hook_says_what_check_says(history: History, name: str) -> None:
    hook = history.hook[name]
    out = hook.stdout + hook.stderr
    assert "lockdocs check" in out and "Skipped" not in out, out  # it runs on every commit
    if name == "before":  # no locks.yaml yet: the check has nothing to read
        assert hook.returncode != 0 and "no locks.yaml" in out
        return
    code, diagnostics = _check_json(history.trees[name])
    assert (hook.returncode == 0) == (code == 0), out
    for d in diagnostics:
        if d["code"] not in DRIFT and not d["waived_by"] and d["severity"] == "error":
            assert d["code"] in out


def test_a_code_only_commit_with_an_undeclared_lock_fails_the_hook(history: History) -> None:
    hook = history.hook["undeclared"]
    assert hook.returncode != 0
    assert "db/queries/jobs.sql:8:" in hook.stdout and "LD702" in hook.stdout


def _pull_request(history: History, tmp_path: Path, base: str, head: str) -> Path:
    """A clone checked out at `head`, whose origin/main is `base`: what the workflow sees."""
    work = tmp_path / f"pr-{base}-{head}"
    git("clone", "-q", str(history.repo), str(work), cwd=tmp_path)
    git("update-ref", "refs/remotes/origin/main", history.commits[base], cwd=work)
    git("checkout", "-q", "--detach", history.commits[head], cwd=work)
    return work


def _diff_step(work: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], str, str]:
    output = tmp_path / f"output-{work.name}"
    summary = tmp_path / f"summary-{work.name}"
    proc = _run_step(
        _steps()["lockdocs diff"],
        work,
        {
            "BASE_REF": "main",
            "HEAD_SHA": "0123abc",
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": "acme/jobs",
        },
    )
    changed = output.read_text(encoding="utf-8") if output.exists() else ""
    return proc, changed, (work / "lockdocs-diff.md").read_text(encoding="utf-8")


def test_the_diff_step_comments_what_the_pull_request_changes(
    history: History, tmp_path: Path
) -> None:
    work = _pull_request(history, tmp_path, "adopt", "undeclared")
    proc, changed, md = _diff_step(work, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert changed == "changed=true\n"
    assert (
        "**LD702** error, new, at [`db/queries/jobs.sql:8`](https://github.com/acme/jobs/blob/0123abc/db/queries/jobs.sql#L8)"
        in md
    )
    assert "LD709" not in md and "LD701" not in md, "nothing that was already there is new"
    # the no-op pull request: no change, so no comment
    noop = _pull_request(history, tmp_path, "undeclared", "readme")
    proc, changed, md = _diff_step(noop, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert changed == "changed=false\n"
    assert md.count("\n") == 1 and md.endswith(
        "no change to the locks, their order or the findings\n"
    )
