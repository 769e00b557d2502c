"""Where a report's paths start and where its rule links point.

Diagnostics locate files relative to the project (the folder of locks.yaml). CI reads paths
relative to the repository: with the project in `services/bank`, an annotation must say
`services/bank/paths/transfers.yaml` or GitHub cannot place it. The prefix is the project's
folder relative to the git top level (found by walking up to `.git`, no git process), or to
the current folder outside git.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from lockdocs.records import record


@record
class Where:
    """`prefix`: the project folder relative to the repository top, posix, "" at the top.
    `rules_url`: the URL of the rules reference page, for a link per rule (or None)."""

    prefix: str = ""
    rules_url: str | None = None

    def path(self, file: str) -> str:
        """A project-relative file as the repository sees it."""
        if not self.prefix or not file:
            return file
        return (PurePosixPath(self.prefix) / file).as_posix()

    def rule_url(self, code: str) -> str | None:
        """The rule's section of the rules page (its anchor is the lower-case code)."""
        if not self.rules_url:
            return None
        return f"{self.rules_url.split('#', 1)[0]}#{code.lower()}"


def repository_top(folder: Path) -> Path | None:
    """The nearest folder at or above `folder` holding `.git` (a folder, or the file of a
    worktree or submodule)."""
    here = folder.resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_prefix(root: Path, cwd: Path | None = None) -> str:
    """The project's folder relative to the repository top; outside git, relative to `cwd`
    when the project is below it, else "" (paths stay relative to the project)."""
    root = root.resolve()
    base = repository_top(root)
    if base is None:
        try:
            base = (cwd or Path.cwd()).resolve()
        except OSError:  # the working folder was deleted: paths stay relative to the project
            return ""
    rel = Path(os.path.relpath(root, base)).as_posix()
    if rel in {".", ".."} or rel.startswith("../"):
        return ""
    return rel


def rules_url(root: Path, from_locks: str | None) -> str | None:
    """locks.yaml's `rules_url`, else [tool.lockdocs] rules_url in pyproject.toml."""
    if from_locks:
        return from_locks

    # The lazy boundary of the settings: a text report never reads pyproject.toml.
    from lockdocs.config import pyproject_settings

    settings: dict[str, Any] = pyproject_settings(root)[0]
    value = settings.get("rules_url")
    return value if isinstance(value, str) and value.startswith(("https://", "http://")) else None


def for_project(root: Path, from_locks: str | None = None) -> Where:
    return Where(project_prefix(root), rules_url(root, from_locks))
