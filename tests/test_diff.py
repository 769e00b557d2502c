"""`lockdocs diff` through the real command line.

Each folder under tests/fixtures/diff/<case>/ holds a `base` and a `head` project and the
expected text output (`expected.txt`, rewritten by `pytest --update-golden`): adding a case means
adding files. The JSON checks below say what each case is about.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import lockdocs_process, run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "diff"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "base").is_dir())


lockdocs = lockdocs_process
FOLDERS = ("--base-dir", "base", "--head-dir", "head")


def diff_json(case: str, *extra: str) -> dict[str, Any]:
    proc = lockdocs("diff", *FOLDERS, "--format", "json", *extra, cwd=FIXTURES / case)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def _ids(rows: list[dict[str, Any]], key: str = "id") -> list[Any]:
    return [r[key] for r in rows]


def _edges(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(r["src"], r["dst"]) for r in rows]


def _lock_added(d: dict[str, Any]) -> None:
    assert _ids(d["locks"]["added"]) == ["budget"]
    assert d["locks"]["added"][0]["table"] == "ledger.budgets"
    assert d["summary"] == "1 lock added"


def _lock_removed(d: dict[str, Any]) -> None:
    assert _ids(d["locks"]["removed"]) == ["journal"]
    assert _ids(d["paths"]["removed"]) == ["close-journal"]
    assert _edges(d["edges"]["removed"]) == [("journal", "account"), ("ledger-gate", "journal")]
    assert d["edges"]["removed"][0]["paths"] == ["close-journal"]


def _lock_renamed(d: dict[str, Any]) -> None:
    # One rename; not a removal plus an addition, and nothing downstream moves.
    assert d["locks"]["renamed"] == [
        {
            "from": "account",
            "to": "account-row",
            "matched_by": "same table ledger.accounts",
            "changes": [],
        }
    ]
    assert d["locks"]["added"] == d["locks"]["removed"] == []
    assert d["edges"]["added"] == d["edges"]["removed"] == []
    assert d["paths"]["changed"] == []
    assert d["rules"]["changed"] == []
    assert d["summary"] == "1 lock renamed"


def _lock_mode_changed(d: dict[str, Any]) -> None:
    assert d["locks"]["changed"] == [
        {
            "id": "journal",
            "changes": [{"field": "modes", "before": "exclusive", "after": "exclusive, shared"}],
        }
    ]


def _lock_text_changed(d: dict[str, Any]) -> None:
    """A lock's text fields as declared are compared with no list of their own (a new field
    shows as it is added), except the prose the diff leaves out (diff.compare.NOT_COMPARED)."""
    from lockdocs import model as m
    from lockdocs.diff.compare import NOT_COMPARED

    assert d["locks"]["changed"] == [
        {
            "id": "account",
            "changes": [
                {"field": "row", "before": "", "after": "one account's balance row"},
                {"field": "serializes", "before": "", "after": "postings to one account"},
            ],
        }
    ]
    assert "notes" in NOT_COMPARED and set(m.as_declared(m.Lock)) >= NOT_COMPARED
    assert d["summary"] == "1 lock changed"


def _edge_new_cycle(d: dict[str, Any]) -> None:
    assert ("budget", "account") in _edges(d["edges"]["added"])
    assert ("account", "budget") in _edges(d["edges"]["added"])
    assert _ids(d["paths"]["added"]) == ["close-budget"]
    assert d["paths"]["added"][0]["acquisitions"] == [
        "ledger-gate shared (first in posting)",
        "budget for no key update",
        "account for no key update",
    ]
    [new] = d["findings"]["new"]
    assert (new["code"], new["severity"], new["waived_by"]) == ("LD201", "error", None)
    assert new["paths"] == ["transfer", "close-budget"]
    assert d["new_unwaived"] == 1


def _path_reordered(d: dict[str, Any]) -> None:
    [p] = d["paths"]["changed"]
    assert p["id"] == "close-journal"
    assert p["reordered"] is True
    assert p["before"][1:] == ["journal exclusive", "account for no key update"]
    assert p["after"][1:] == ["account for no key update", "journal exclusive"]
    assert _edges(d["edges"]["added"]) == [("account", "journal")]
    assert _edges(d["edges"]["removed"]) == [("journal", "account")]
    # No cycle: only one path takes both, so there is nothing new to fix.
    assert d["findings"]["new"] == []


def _exception_added(d: dict[str, Any]) -> None:
    [exc] = d["exceptions"]["added"]
    assert (exc["rule"], exc["path"], exc["issue"]) == ("LD202", "transfer", 12)
    [waived] = d["findings"]["newly_waived"]
    assert waived["code"] == "LD202"
    assert waived["waived_by"]
    assert d["findings"]["new"] == d["findings"]["fixed"] == []
    assert d["new_unwaived"] == 0


def _finding_fixed(d: dict[str, Any]) -> None:
    [fixed] = d["findings"]["fixed"]
    assert fixed["code"] == "LD201"
    assert d["findings"]["new"] == []
    assert _edges(d["edges"]["removed"]) == [("budget", "account")]
    assert d["paths"]["changed"][0]["reordered"] is True


def _no_change(d: dict[str, Any]) -> None:
    # Only comments and line numbers moved: the findings match without their lines.
    assert d["summary"] == "no change to the locks, their order or the findings"
    assert d["changed"] is False


def _waived_unchanged(d: dict[str, Any]) -> None:
    # A finding waived on both sides (its line moved) is no change: nothing to comment on.
    assert d["changed"] is False
    assert d["unchanged_waived"] == 1
    assert d["summary"] == "no change to the locks, their order or the findings"
    for section in ("locks", "edges", "paths", "findings", "exceptions", "rules"):
        lists = {k: v for k, v in d[section].items() if k != "context"}
        assert all(v == [] for v in lists.values()), (section, lists)


def _finding_changed(d: dict[str, Any]) -> None:
    # LD301 names one more path: one changed finding, not a new one plus a fixed one.
    assert d["findings"]["new"] == d["findings"]["fixed"] == []
    [changed] = d["findings"]["changed"]
    assert changed["code"] == "LD301"
    assert changed["was"].endswith("2 paths wait for locks in it (close-journal, transfer)")
    assert changed["message"].endswith(
        "3 paths wait for locks in it (close-journal, reopen-journal, transfer)"
    )
    assert changed["new_paths"] == ["reopen-journal"]
    assert d["new_unwaived"] == 0  # an info finding gates nothing
    assert d["summary"] == "1 path added, 1 finding changed"


EXPECT: dict[str, Callable[[dict[str, Any]], None]] = {
    "finding-changed": _finding_changed,
    "lock-added": _lock_added,
    "lock-removed": _lock_removed,
    "lock-renamed": _lock_renamed,
    "lock-mode-changed": _lock_mode_changed,
    "lock-text-changed": _lock_text_changed,
    "edge-new-cycle": _edge_new_cycle,
    "path-reordered": _path_reordered,
    "exception-added": _exception_added,
    "finding-fixed": _finding_fixed,
    "no-change": _no_change,
    "waived-unchanged": _waived_unchanged,
}


def test_every_case_has_a_check() -> None:
    assert sorted(EXPECT) == CASES


@pytest.mark.parametrize("case", CASES)
def test_case_json(case: str) -> None:
    EXPECT[case](diff_json(case))


@pytest.mark.parametrize("case", CASES)
def test_case_text_golden(case: str, update_golden: bool) -> None:
    proc = lockdocs("diff", *FOLDERS, cwd=FIXTURES / case)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    golden = FIXTURES / case / "expected.txt"
    if update_golden:
        golden.write_text(proc.stdout, encoding="utf-8")
    assert proc.stdout == golden.read_text(encoding="utf-8")


def test_json_is_sorted_and_stable() -> None:
    first = lockdocs("diff", *FOLDERS, "-f", "json", cwd=FIXTURES / "edge-new-cycle")
    again = lockdocs("diff", *FOLDERS, "-f", "json", cwd=FIXTURES / "edge-new-cycle")
    assert first.stdout == again.stdout
    data = json.loads(first.stdout)
    assert first.stdout == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert data["base"] == "base"
    assert data["head"] == "head"


def test_markdown_is_a_pr_comment() -> None:
    proc = lockdocs("diff", *FOLDERS, "--format", "markdown", cwd=FIXTURES / "edge-new-cycle")
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    lines = md.splitlines()
    assert lines[0] == "**lockdocs diff** folder `base` → folder `head`"
    assert lines[2].startswith("⚠️ 3 order edges added")
    assert "<details open><summary><b>Findings</b>" in md  # new findings are not hidden
    # a finding is a list item, not a wide monospace block: where, why it matters, the fix
    item = next(line for line in lines if line.startswith("- 🔴 **LD201** error, new, at "))
    assert "`paths/postings.yaml:13`" in item, item
    assert "  <br>Why it matters: Postgres breaks a deadlock" in md
    assert "  <br>Fix: make 'close-budget' take account before budget" in md
    assert "<details><summary><b>Order edges" in md
    assert md.count("<details") == md.count("</details>")
    assert "```dot" not in md  # GitHub does not draw DOT
    named, style, graph = _mermaid(md)
    assert graph.startswith("graph LR\n")
    assert "#1a7f37" in style[named.index(("budget", "-->", "close-budget", "account"))]  # green
    assert "#8c959f" in style[named.index(("account", "-->", "transfer", "account"))]  # grey


def _mermaid(md: str) -> tuple[list[tuple[str, str, str, str]], dict[int, str], str]:
    """The Mermaid graph's edges as (src, arrow, label, dst), its link styles, its text."""
    graph = md.split("```mermaid\n", 1)[1].split("```", 1)[0]
    nodes = dict(re.findall(r'^  (n\d+)\["([^"]+)"\]$', graph, re.MULTILINE))
    edges = re.findall(r'^  (n\d+) (-->|-\.->)\|"([^"]*)"\| (n\d+)$', graph, re.MULTILINE)
    named = [(nodes[a], arrow, label, nodes[b]) for a, arrow, label, b in edges]
    style = {int(i): st for i, st in re.findall(r"^  linkStyle (\d+) (.+)$", graph, re.MULTILINE)}
    return named, style, graph


def test_markdown_shows_removed_edges_red() -> None:
    proc = lockdocs("diff", *FOLDERS, "-f", "markdown", cwd=FIXTURES / "path-reordered")
    named, style, _ = _mermaid(proc.stdout)
    removed = named.index(("journal", "-.->", "close-journal", "account"))  # dashed
    assert style[removed].startswith("stroke:#cf222e")  # red
    assert "<details open><summary><b>Findings" not in proc.stdout  # nothing new to fix


def test_fail_on_new_findings() -> None:
    cycle = lockdocs("diff", *FOLDERS, "--fail-on", "new-findings", cwd=FIXTURES / "edge-new-cycle")
    assert cycle.returncode == 1
    assert "1 new unwaived finding to fix or waive" in cycle.stdout
    # Without --fail-on the same diff exits 0: it reports, it does not gate.
    assert lockdocs("diff", *FOLDERS, cwd=FIXTURES / "edge-new-cycle").returncode == 0
    for case in ("finding-fixed", "exception-added", "lock-renamed"):
        proc = lockdocs("diff", *FOLDERS, "--fail-on", "new-findings", cwd=FIXTURES / case)
        assert proc.returncode == 0, (case, proc.stdout)


# --- bad input -----------------------------------------------------------------------------


def test_invalid_side_is_exit_2(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "lock-added" / "base", tmp_path / "base")
    shutil.copytree(FIXTURES / "lock-added" / "base", tmp_path / "head")
    (tmp_path / "head" / "paths" / "postings.yaml").write_text(
        "group: Postings\npaths:\n  x:\n    title: X\n    steps:\n      - take: nope\n",
        encoding="utf-8",
    )
    proc = lockdocs("diff", *FOLDERS, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "LD004 error: unknown lock 'nope'" in proc.stderr
    assert proc.stderr.endswith("lockdocs: the declarations at folder head are not valid\n")
    assert "Traceback" not in proc.stderr


def test_folder_without_locks_yaml(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    shutil.copytree(FIXTURES / "lock-added" / "base", tmp_path / "base")
    proc = lockdocs("diff", "--base-dir", "empty", "--head-dir", "base", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "lockdocs: no locks.yaml in empty\n"


def test_revision_outside_git(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "lock-added" / "base", tmp_path / "app")
    proc = lockdocs("diff", "HEAD~1", cwd=tmp_path / "app")
    assert proc.returncode == 2
    assert "is not in a git repository" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- git revisions -------------------------------------------------------------------------

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose project lives in a subfolder, with two commits: base, then head."""
    if shutil.which("git") is None:  # pragma: no cover - git is part of the dev setup
        pytest.skip("git is not installed")
    project = tmp_path / "repo" / "services" / "ledger"
    shutil.copytree(FIXTURES / "edge-new-cycle" / "base", project)
    (project / "README.md").write_text("not a declaration\n", encoding="utf-8")
    git("init", "-q", cwd=tmp_path / "repo")
    git("add", "-A", cwd=tmp_path / "repo")
    git("commit", "-q", "-m", "base", cwd=tmp_path / "repo")
    shutil.rmtree(project / "paths")
    shutil.copytree(FIXTURES / "edge-new-cycle" / "head" / "paths", project / "paths")
    git("add", "-A", cwd=tmp_path / "repo")
    git("commit", "-q", "-m", "head", cwd=tmp_path / "repo")
    return project


def test_git_revision_against_working_tree(repo: Path) -> None:
    proc = lockdocs("diff", "HEAD~1", "--format", "json", cwd=repo / "paths")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["base"], data["head"]) == ("HEAD~1", "working tree")
    folders = json.loads(
        lockdocs("diff", *FOLDERS, "-f", "json", cwd=FIXTURES / "edge-new-cycle").stdout
    )
    for key in ("locks", "edges", "paths", "findings", "exceptions", "rules", "summary"):
        assert data[key] == folders[key], key


def test_git_two_revisions(repo: Path) -> None:
    proc = lockdocs("diff", "HEAD~1", "HEAD", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    base, head = (_commit(repo, rev) for rev in ("HEAD~1", "HEAD"))
    assert proc.stdout.startswith(
        f"lockdocs diff HEAD~1 (revision {base[:12]}) -> HEAD (revision {head[:12]})\n"
    )
    assert "  + budget -> account  (close-budget)" in proc.stdout
    same = lockdocs("diff", "HEAD", cwd=repo)
    assert same.stdout == (
        f"lockdocs diff HEAD (revision {head[:12]}) -> working tree: no change to the locks, "
        "their order or the findings\n"
    )


def _commit(repo: Path, rev: str) -> str:
    out = subprocess.run(
        ["git", "rev-parse", rev], cwd=repo, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_git_root_option_from_repo_top(repo: Path) -> None:
    top = repo.parent.parent
    proc = lockdocs(
        "diff", "HEAD~1", "--root", "services/ledger", "--fail-on", "new-findings", cwd=top
    )
    assert proc.returncode == 1, proc.stderr
    missing = lockdocs("diff", "HEAD~1", cwd=top)
    assert missing.returncode == 2
    assert missing.stderr == (
        "lockdocs: no locks.yaml at revision HEAD~1\n"
        "hint: run lockdocs diff in the project's folder, or pass --root DIR\n"
    )


def test_git_revision_brings_settings_and_a_custom_paths_folder(tmp_path: Path) -> None:
    """pyproject.toml (severities) and the folder `paths:` names come from the revision too."""
    project = tmp_path / "repo"
    shutil.copytree(FIXTURES / "edge-new-cycle" / "head", project)
    (project / "paths").rename(project / "decl")
    locks = (project / "locks.yaml").read_text(encoding="utf-8")
    (project / "locks.yaml").write_text(locks + "paths: decl  # the path files\n", "utf-8")
    (project / "pyproject.toml").write_text('[tool.lockdocs.checks]\nLD201 = "off"\n', "utf-8")
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    git("commit", "-q", "-m", "one", cwd=project)
    proc = lockdocs("diff", "HEAD", "-f", "json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["summary"] == "no change to the locks, their order or the findings"
    assert data["findings"]["fixed"] == []  # LD201 is off on both sides


def test_git_unknown_revision(repo: Path) -> None:
    proc = lockdocs("diff", "no-such-branch", cwd=repo)
    assert proc.returncode == 2
    assert proc.stderr == (
        "lockdocs: unknown revision no-such-branch\n"
        "hint: name a commit, branch or tag (git log shows them); to compare folders, pass "
        "--base-dir DIR\n"
    )
    opt = lockdocs("diff", "--", "--output=x", cwd=repo)
    assert opt.returncode == 2
    assert opt.stderr.startswith("lockdocs: unknown revision --output=x\n")
    assert not (repo / "x").exists()


def test_git_revision_with_invalid_declarations(repo: Path) -> None:
    (repo / "locks.yaml").write_text("lockdocs: 1\npage: [\n", encoding="utf-8")
    git("commit", "-q", "-am", "broken", cwd=repo)
    git("checkout", "-q", "HEAD~1", "--", "locks.yaml", cwd=repo)
    proc = lockdocs("diff", "HEAD", cwd=repo)
    assert proc.returncode == 2
    assert "LD001" in proc.stderr
    assert proc.stderr.endswith("lockdocs: the declarations at revision HEAD are not valid\n")


# --- the CI examples -----------------------------------------------------------------------

EXAMPLES = Path(__file__).parent.parent / "examples" / "ci"


def test_the_pull_request_that_adopts_lockdocs(tmp_path: Path) -> None:
    """The base has no locks.yaml: it is an empty project and everything shows as added."""
    top = tmp_path / "repo"
    top.mkdir()
    (top / "README.md").write_text("an application\n", encoding="utf-8")
    git("init", "-q", cwd=top)
    git("add", "-A", cwd=top)
    git("commit", "-q", "-m", "before lockdocs", cwd=top)
    project = top / "services" / "ledger"
    shutil.copytree(FIXTURES / "edge-new-cycle" / "head", project)
    proc = lockdocs("diff", "HEAD", "--format", "json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["base"] == "HEAD (no locks.yaml)"
    assert _ids(data["locks"]["added"]) == ["ledger-gate", "account", "journal", "budget"]
    assert sorted(_ids(data["paths"]["added"])) == ["close-budget", "close-journal", "transfer"]
    assert [f["code"] for f in data["findings"]["new"]] == ["LD201"]
    assert data["changed"] is True
    md = lockdocs("diff", "HEAD", "--format", "markdown", cwd=project).stdout
    commit = _commit(top, "HEAD")[:12]
    assert md.startswith(
        f"**lockdocs diff** `HEAD` (revision `{commit}`, no locks.yaml) → working tree\n"
    )


def test_markdown_links_findings_and_paths_to_the_head_revision(repo: Path) -> None:
    top = repo.parent.parent
    base = "https://github.com/acme/ledger/blob/0123abc/services/ledger/paths/postings.yaml"
    md = lockdocs(
        "diff",
        "HEAD~1",
        "-f",
        "markdown",
        "--repo-url",
        "https://github.com/acme/ledger/",
        "--revision",
        "0123abc",
        cwd=repo,
    ).stdout
    assert f"[`paths/postings.yaml:13`]({base}#L13): lock-order cycle" in md
    assert f"- ➕ **close-budget** (Close a budget), [`paths/postings.yaml:22`]({base}#L22)" in md
    # from GitHub's environment, as in the workflow
    env = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/ledger"}
    proc = run_cli(
        "diff",
        "HEAD~1",
        "-f",
        "markdown",
        "--root",
        "services/ledger",
        "--revision",
        "0123abc",
        cwd=top,
        env=env,
    )
    assert f"({base}#L13)" in proc.out, proc.err
    # without a repository URL there are no links
    plain = lockdocs("diff", "HEAD~1", "-f", "markdown", cwd=repo).stdout
    assert "](" not in plain.replace("](#", "")


def test_markdown_fits_a_github_comment_and_says_what_was_cut(tmp_path: Path) -> None:
    head = tmp_path / "head"
    shutil.copytree(FIXTURES / "edge-new-cycle" / "head", head)
    steps = "    steps:\n      - take: budget\n      - take: account\n"
    many = "".join(
        f"  close-budget-{i:04}:\n    title: Close budget {i} with a long title\n{steps}"
        for i in range(900)
    )
    extra = head / "paths" / "many.yaml"
    extra.write_text(f"group: Many\ntransaction: posting\npaths:\n{many}", encoding="utf-8")
    proc = lockdocs(
        "diff",
        "--base-dir",
        str(FIXTURES / "edge-new-cycle" / "base"),
        "--head-dir",
        str(head),
        "-f",
        "markdown",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    full = lockdocs(
        "diff",
        "--base-dir",
        str(FIXTURES / "edge-new-cycle" / "base"),
        "--head-dir",
        str(head),
        cwd=tmp_path,
    ).stdout
    assert len(full) > 65_536, "the case must be too long to post whole"
    assert len(md) < 65_536 - 200
    assert md.count("<details") == md.count("</details>")
    assert md.count("```") % 2 == 0
    note = md.splitlines()[-1]
    assert note.startswith("_Cut to fit GitHub's comment limit: ") and "paths" in note, note
    assert md.splitlines()[2].startswith("⚠️ "), "the summary is never cut"
