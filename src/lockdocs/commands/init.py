"""`lockdocs init`: a new project (a commented locks.yaml, an example path, JSON Schemas and
the page), written into a folder. Loaded only by this command."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from lockdocs.project.root import RootNotFound, working_folder
from lockdocs.scaffold import ScaffoldError, make, next_steps, write


def init(directory: Path) -> int:
    """0 written, 2 when the folder cannot take the project. Messages go through typer.echo,
    as they always have."""
    if not directory.is_absolute():
        try:
            working_folder()
        except RootNotFound as gone:
            typer.echo(f"lockdocs: {gone}", err=True)
            return 2
    if directory.exists() and not directory.is_dir():
        typer.echo(f"lockdocs: {directory} is not a folder", err=True)
        return 2
    try:
        scaffold = make(directory)
        written = write(scaffold)
    except ScaffoldError as exc:
        typer.echo(f"lockdocs: {exc}", err=True)
        return 2
    except OSError as exc:
        typer.echo(f"lockdocs: cannot write the project: {exc}", err=True)
        return 2
    for path in written:
        typer.echo(f"wrote {path}")
    if scaffold.page_note:
        typer.echo(f"lockdocs: the page was not built ({scaffold.page_note})", err=True)
    typer.echo("")
    sys.stdout.write(next_steps(directory, scaffold.advice))
    return 0
