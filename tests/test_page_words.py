"""The sentences the page computes say what the declarations mean: one test per kind of wrong
sentence the page used to print (a run "in this transaction" after the commit, a garbled order
phrase, a timeout outcome for a kind that sets no lock_timeout, a doubled full stop), and the
page's defaults said once instead of per lock."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from conftest import REPO, write_project
from lockdocs import model as m
from lockdocs.api import analyse, load
from lockdocs.diagnostics import sort_diagnostics
from lockdocs.render.escape import ends_once, para, sentence
from lockdocs.render.pages import render_outputs
from lockdocs.render.words import order_words

LOCKS = """\
lockdocs: 1
page: {title: Jobs}
transactions:
  plain: {title: plain, lock_timeout: none, on_timeout: SQLSTATE 55P03}
  worker:
    title: worker
    opened_by: BeginWork
    lock_timeout: 2s
    on_timeout: SQLSTATE 55P03, retried later.
locks:
  job:
    title: Job row
    kind: row
    table: app.jobs
    modes: {for update: the worker.}
    serializes: Two workers on one job..
"""
PATHS = """\
group: Jobs
paths:
  batch:
    title: Batch
    transaction: worker
    steps:
      - take: job
      - commit
      - run: follow-up
        note: after the batch has committed
      - run: sweep
  follow-up:
    title: Follow-up
    standalone: false
    steps:
      - write: job log
  sweep:
    title: Sweep
    steps:
      - loop: each stale job
        steps:
          - begin: worker
          - take: job
          - commit
"""


def _page(root: Path) -> str:
    model, diags = load(root)
    assert model is not None, diags
    files = render_outputs(model, sort_diagnostics(diags + analyse(model)))
    return files[f"docs/{model.page.output}"]


def _small(tmp_path: Path) -> str:
    return _page(write_project(tmp_path, {"locks.yaml": LOCKS, "paths/jobs.yaml": PATHS}))


def test_a_run_after_the_commit_is_not_in_this_transaction(tmp_path: Path) -> None:
    page = _small(tmp_path)
    assert "Runs [Follow-up](#path-follow-up) with no transaction open" in page
    assert "Runs [Sweep](#path-sweep), which opens transactions of its own" in page
    assert "in this transaction — after the batch has committed" not in page


def test_the_flagship_drain_runs_after_the_commit_in_its_own_transactions() -> None:
    page = (REPO / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert "Runs [Drain](#path-drain-change), which opens transactions of its own" in page
    assert "Runs [Drain](#path-drain-change) in this transaction" not in page


def test_an_order_phrase_is_not_garbled() -> None:
    assert order_words("ascending pool_id") == "ascending pool_id order"
    assert order_words("byte order") == "byte order"
    phrase = "the parked site first, then the activated site"
    assert order_words(phrase) == phrase
    page = (REPO / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert "activated site order" not in page


def test_a_kind_without_lock_timeout_has_no_timeout_outcome(tmp_path: Path) -> None:
    page = _small(tmp_path)
    plain = next(line for line in page.splitlines() if line.startswith("| **plain**"))
    assert "no `lock_timeout` (the declared timeout outcome cannot happen" in plain
    worker = next(line for line in page.splitlines() if line.startswith("| **worker**"))
    assert "`lock_timeout` `2s`; past it, SQLSTATE 55P03, retried later." in worker


def _kinds_of(model: m.Model, path_id: str) -> set[str]:
    p = model.paths[path_id]
    kinds = {p.transaction} if p.transaction else {"plain"}

    def walk(steps: tuple[m.Step, ...]) -> None:
        for s in steps:
            if isinstance(s, m.Begin):
                kinds.add(s.transaction)
            elif isinstance(s, m.Loop):
                walk(s.steps)
            elif isinstance(s, m.Branches):
                for _, alt in s.alternatives:
                    walk(alt)
            elif isinstance(s, m.Run) and s.path in model.paths:
                walk(model.paths[s.path].steps)

    walk(p.steps)
    return kinds


def test_the_flagship_promises_no_timeout_where_no_lock_timeout_is_set() -> None:
    """SQLSTATE 55P03 comes from lock_timeout (or NOWAIT): an exception or difference on a
    path whose transactions set none must not say its waits can end in it."""
    model, diags = load(REPO)
    assert model is not None, diags
    texts = [(w.path, w.why) for w in model.waivers] + [
        (p, d.why) for d in model.differences for p in d.paths
    ]
    for path_id, why in texts:
        if not path_id or "55P03" not in why:
            continue
        kinds = _kinds_of(model, path_id)
        assert all(model.transactions[k].lock_timeout for k in kinds), (path_id, why)


def test_every_user_string_ends_with_one_full_stop(tmp_path: Path) -> None:
    assert ends_once("message..") == "message."
    assert ends_once("message.") == "message."
    assert ends_once("why?") == "why?"
    assert sentence("own failure message.") == "own failure message."
    assert para("One.\n\nTwo..") == "One.\n\nTwo."
    page = _small(tmp_path)
    assert "Two workers on one job." in page and "job.." not in page
    assert "the worker." in page and "worker.." not in page
    for path in (REPO / "docs" / "database-locks.md", REPO / "examples/dstack/docs/locking.md"):
        text = path.read_text(encoding="utf-8").replace("...", "")
        assert not re.search(r"[^.]\.\.(?!\.)", text), path


def test_defaults_are_said_once_not_per_lock() -> None:
    page = (REPO / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert page.count("released at commit or rollback") == 0
    assert page.count("when its transaction commits or rolls back") == 1
    assert "(transaction-kind" not in page and "(sql-function)" not in page
    assert "hand-written page" not in page and "the page names" not in page.lower()
    assert "Remaining findings" not in page and "LD101" not in page.split("## Where")[0]
    # Each issue once per lock: tracked and planned is one mention.
    rendezvous = page.split("#### Materialization rendezvous")[1].split("####")[0]
    assert rendezvous.count("issues/213") == 1


def test_no_placeholder_steps_in_the_flagship() -> None:
    for f in sorted((REPO / "paths").glob("*.yaml")):
        doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        text = yaml.safe_dump(doc)
        for placeholder in ("call: no ", "call: nothing"):
            assert placeholder not in text, (f.name, placeholder)
