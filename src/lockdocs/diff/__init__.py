"""`lockdocs diff`: what a change to the declarations does to the locks, the order and the findings.

A reviewer of a pull request reads the YAML diff, but the YAML diff does not say that a reordered
step adds an order edge, closes a cycle or fixes a waived finding. This package loads both sides
(`sides.py`: a git revision, written out by `snapshot.py` from what `gitread.py` reads; a folder
named with `--base-dir` or `--head-dir`; or the working tree), resolves and analyses each as
`check` does, compares the resolved models (`compare.py`) and prints the comparison as text,
JSON (`text.py`) or a pull-request comment (`markdown.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lockdocs.diff.compare import compare
from lockdocs.diff.markdown import format_markdown
from lockdocs.diff.sides import DiffInputError, open_side
from lockdocs.diff.text import format_json, format_text
from lockdocs.report.where import project_prefix

__all__ = ["FORMATTERS", "DiffInputError", "compare", "run"]

FORMATTERS = {"text": format_text, "markdown": format_markdown, "json": format_json}


def run(
    base: str | None,
    head: str | None,
    project: Path,
    *,
    base_dir: Path | None = None,
    head_dir: Path | None = None,
    repo_url: str | None = None,
    revision: str | None = None,
    blob: str = "blob",
) -> dict[str, Any]:
    """Open both sides and compare them; DiffInputError for bad input at either side.

    `base` and `head` are git revisions (head None: the working tree); `base_dir` and
    `head_dir` name folders instead. With a repository URL and the head revision, the Markdown
    links findings and paths to their files and lines (`result["link"]`); a head given as a
    folder gets no links.
    """
    if not project.is_dir():
        raise DiffInputError(f"no folder {project}")
    if (base is None) == (base_dir is None):
        raise DiffInputError(
            "name the base once: a git revision (BASE) or a folder (--base-dir DIR)"
        )
    if head is not None and head_dir is not None:
        raise DiffInputError(
            "name the head once: a git revision (HEAD) or a folder (--head-dir DIR)"
        )
    with (
        open_side(base, project, folder=base_dir, option="--base-dir") as before,
        open_side(head, project, folder=head_dir, option="--head-dir") as after,
    ):
        result = compare(before, after)
    result["link"] = None
    if repo_url and revision and head_dir is None:
        result["link"] = {
            "repo": repo_url.rstrip("/"),
            "revision": revision,
            "prefix": project_prefix(project),
            "blob": blob,  # the path segment before the revision: GitHub blob, GitLab -/blob
        }
    return result
