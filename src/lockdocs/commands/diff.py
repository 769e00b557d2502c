"""`lockdocs diff`: what a change to the declarations does to the locks, their order and the
findings, printed as text, JSON or a pull-request comment. Loaded only by this command."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from lockdocs.commands import DiffFormat, FailOn
from lockdocs.diagnostics import printable
from lockdocs.diff import FORMATTERS, DiffInputError
from lockdocs.diff import run as run_diff
from lockdocs.project.root import RootNotFound, find_root, working_folder


def diff(
    base: str | None,
    head: str | None,
    root: Path | None,
    fmt: DiffFormat,
    fail_on: FailOn,
    repo_url: str | None,
    revision: str | None,
    base_dir: Path | None = None,
    head_dir: Path | None = None,
) -> int:
    """0, or 1 with --fail-on new-findings and a new unwaived finding, or 2 for bad input.
    Messages go through typer.echo, as they always have."""
    try:
        here = None if root is not None and root.is_absolute() else working_folder()
    except RootNotFound as gone:
        typer.echo(f"lockdocs: {gone}", err=True)
        return 2
    if root is not None:
        project = root.resolve()
    else:
        assert here is not None
        try:
            project = find_root(here)
        except RootNotFound:
            project = here
    env = os.environ
    blob = "blob"
    if env.get("GITLAB_CI") == "true":  # GitLab: its own variables and /-/blob/ links
        repo_url = repo_url or env.get("CI_PROJECT_URL")
        revision = revision or env.get("CI_COMMIT_SHA")
        blob = "-/blob"
    if repo_url is None and env.get("GITHUB_SERVER_URL") and env.get("GITHUB_REPOSITORY"):
        repo_url = f"{env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}"
    revision = revision or env.get("GITHUB_SHA") or None
    try:
        result = run_diff(
            base,
            head,
            project,
            base_dir=base_dir,
            head_dir=head_dir,
            repo_url=repo_url,
            revision=revision,
            blob=blob,
        )
    except DiffInputError as exc:
        if exc.details:
            sys.stderr.write(exc.details)
        typer.echo(f"lockdocs: {printable(exc.message)}", err=True)
        if exc.hint:
            typer.echo(f"hint: {printable(exc.hint)}", err=True)
        return 2
    sys.stdout.write(FORMATTERS[fmt.value](result))
    if fail_on is FailOn.new_findings and result["new_unwaived"]:
        return 1
    return 0
