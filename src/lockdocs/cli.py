"""The command line: options -> an api call -> output and an exit code; nothing else.

Exit codes: 0 clean, 1 findings or drift, 2 bad input or usage, 3 an internal error.
"""

from __future__ import annotations

import json
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from lockdocs import commands
from lockdocs.commands import Format

app = typer.Typer(
    name="lockdocs",
    help="Declare database locks once in YAML; check their order; render the lock page.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from lockdocs import __version__

        typer.echo(f"lockdocs {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Declare database locks once in YAML; check their order; render the lock page."""


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


COMPLETE_VAR = "_LOCKDOCS_COMPLETE"
if os.environ.get(COMPLETE_VAR):  # the shell asks for completions: typer's classes answer
    from typer._completion_classes import completion_init

    completion_init()


class ExportFormat(StrEnum):
    json = "json"


RootOpt = Annotated[
    Path | None,
    typer.Option(
        "--root",
        help="The folder that holds locks.yaml (default: the nearest one upward).",
        file_okay=False,
    ),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


def _root(root: Path | None) -> Path:
    try:
        return commands.resolve_root(root)
    except commands.NoRoot:
        raise typer.Exit(2) from None


@app.command()
def validate(root: RootOpt = None, fmt: FormatOpt = Format.text) -> None:
    """Load and validate the declarations (format and references only)."""
    raise typer.Exit(commands.validate(root, fmt))


@app.command()
def check(
    root: RootOpt = None,
    fmt: FormatOpt = Format.text,
    no_drift: Annotated[
        bool, typer.Option("--no-drift", help="Skip the generated-docs comparison.")
    ] = False,
    show_diff: Annotated[
        bool,
        typer.Option("--diff", help="Print the unified diff of each generated file that differs."),
    ] = False,
    no_svg: Annotated[
        bool,
        typer.Option(
            "--no-svg", help="Compare the Markdown and DOT only (for docs built with --no-svg)."
        ),
    ] = False,
) -> None:
    """Check the declarations: keys, lock order, rules, exceptions, and drift of the docs."""
    raise typer.Exit(
        commands.check(root, fmt, drift=not no_drift, show_diff=show_diff, svg=not no_svg)
    )


@app.command()
def scan(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="SQL, Python or Go files or folders (default: the globs of code:)."),
    ] = None,
    root: RootOpt = None,
    fmt: Annotated[
        commands.ScanFormat, typer.Option("--format", "-f", help="text or json.")
    ] = commands.ScanFormat.text,
    coverage: Annotated[
        bool,
        typer.Option(
            "--coverage", help="Also show how the declarations cover the scanned SQL, per lock."
        ),
    ] = False,
) -> None:
    """List every lock the scanned SQL takes: file, line, statement, kind, mode, table or key."""
    raise typer.Exit(commands.scan(root, list(paths or []), fmt, coverage))


@app.command()
def export(
    root: RootOpt = None,
    fmt: Annotated[
        ExportFormat, typer.Option("--format", "-f", help="Export format.")
    ] = ExportFormat.json,
) -> None:
    """Print the resolved model (locks, transactions, paths with acquisitions, rules, exceptions)."""
    from lockdocs.api import load
    from lockdocs.export import export_json
    from lockdocs.report import REPORTERS

    base = _root(root)
    model, diags = load(base)
    if model is None:
        sys.stderr.write(REPORTERS["text"](diags, "the declarations are not valid"))
        raise typer.Exit(2)
    sys.stdout.write(export_json(model))


@app.command()
def schema(
    kind: Annotated[str, typer.Argument(help="locks or paths")] = "locks",
) -> None:
    """Print the JSON Schema of locks.yaml (or of a paths/ file)."""
    from lockdocs.schema.definition import locks_schema, paths_schema

    if kind not in ("locks", "paths"):
        typer.echo(f"lockdocs: unknown schema '{kind}'; use locks or paths", err=True)
        raise typer.Exit(2)
    doc = locks_schema() if kind == "locks" else paths_schema()
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")


@app.command()
def rules(
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or json")] = "text",
) -> None:
    """List every check with its code, default severity and summary."""
    from lockdocs.rules.catalog import load_all

    reg = load_all()
    if fmt == "json":
        sys.stdout.write(
            json.dumps(
                [
                    {
                        "code": r.code,
                        "name": r.name,
                        "severity": r.severity.value,
                        "summary": r.summary,
                    }
                    for r in reg.values()
                ],
                indent=2,
            )
            + "\n"
        )
        return
    for r in reg.values():
        typer.echo(f"{r.code}  {r.severity.value:<7}  {r.name:<28} {r.summary}")


class DiffFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"


class FailOn(StrEnum):
    never = "never"
    new_findings = "new-findings"


@app.command()
def diff(
    base: Annotated[str, typer.Argument(help="A git revision, or a folder with locks.yaml.")],
    head: Annotated[
        str | None,
        typer.Argument(help="A git revision or a folder (default: the working tree)."),
    ] = None,
    root: RootOpt = None,
    fmt: Annotated[
        DiffFormat, typer.Option("--format", "-f", help="text, markdown (a PR comment) or json.")
    ] = DiffFormat.text,
    fail_on: Annotated[
        FailOn,
        typer.Option(
            "--fail-on",
            help="new-findings: exit 1 when HEAD has unwaived errors or warnings that BASE had not.",
        ),
    ] = FailOn.never,
    repo_url: Annotated[
        str | None,
        typer.Option(
            "--repo-url",
            help="The repository's web address, for links to files and lines in the Markdown "
            "(default: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY, or $CI_PROJECT_URL on GitLab).",
        ),
    ] = None,
    revision: Annotated[
        str | None,
        typer.Option(
            "--revision",
            help="The head commit the links point at (default: $GITHUB_SHA, or $CI_COMMIT_SHA "
            "on GitLab; in a GitHub pull request pass the head's sha).",
        ),
    ] = None,
) -> None:
    """Compare two versions of the declarations: locks, order edges, paths, findings, exceptions."""
    import os

    from lockdocs.diff import FORMATTERS, DiffInputError
    from lockdocs.diff import run as run_diff
    from lockdocs.project import RootNotFound, find_root

    if root is not None:
        project = root.resolve()
    else:
        try:
            project = find_root(Path.cwd())
        except RootNotFound:
            project = Path.cwd()
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
        result = run_diff(base, head, project, repo_url=repo_url, revision=revision, blob=blob)
    except DiffInputError as exc:
        if exc.details:
            sys.stderr.write(exc.details)
        typer.echo(f"lockdocs: {exc.message}", err=True)
        if exc.hint:
            typer.echo(f"hint: {exc.hint}", err=True)
        raise typer.Exit(2) from None
    sys.stdout.write(FORMATTERS[fmt.value](result))
    if fail_on is FailOn.new_findings and result["new_unwaived"]:
        raise typer.Exit(1)


@app.command()
def init(
    directory: Annotated[
        Path, typer.Argument(help="The folder to start a project in (default: here).")
    ] = Path(),
) -> None:
    """Start a project: a commented locks.yaml, an example path, JSON Schemas and the page."""
    from lockdocs.scaffold import ScaffoldError, make, next_steps, write

    if directory.exists() and not directory.is_dir():
        typer.echo(f"lockdocs: {directory} is not a folder", err=True)
        raise typer.Exit(2)
    try:
        scaffold = make(directory)
        written = write(scaffold)
    except ScaffoldError as exc:
        typer.echo(f"lockdocs: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"lockdocs: cannot write the project: {exc}", err=True)
        raise typer.Exit(2) from None
    for path in written:
        typer.echo(f"wrote {path}")
    if scaffold.page_note:
        typer.echo(f"lockdocs: the page was not built ({scaffold.page_note})", err=True)
    typer.echo("")
    sys.stdout.write(next_steps(directory, scaffold.advice))


@app.command()
def replay(
    root: RootOpt = None,
    fmt: Annotated[
        commands.ReplayFormat,
        typer.Option(
            "--format",
            "-f",
            help="text, json, or isolation (write a PostgreSQL isolation-tester spec; no server).",
        ),
    ] = commands.ReplayFormat.text,
    index: Annotated[
        int | None,
        typer.Option("--index", help="The finding at this index of check --format json (from 0)."),
    ] = None,
    code: Annotated[
        str | None, typer.Option("--code", help="Only findings with this code (LD201, ...).")
    ] = None,
    path: Annotated[
        str | None, typer.Option("--path", help="Only findings about this path id.")
    ] = None,
    dsn: Annotated[
        str | None,
        typer.Option(
            "--dsn",
            help="A server to use (libpq connection string); default: the PG* variables, "
            "else a throwaway cluster. Replay works in a database it creates and drops.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", help="With --format isolation: write one spec per finding here."),
    ] = None,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="Seconds one replay may take.", min=0.1)
    ] = 10.0,
    deadlock_timeout: Annotated[
        str,
        typer.Option(
            "--deadlock-timeout",
            help="Production's deadlock_timeout, to tell 40P01 from 55P03 (default 1s).",
        ),
    ] = "1s",
) -> None:
    """Run each LD201/LD202/LD203 finding's interleaving on a live PostgreSQL and show its answer."""
    raise typer.Exit(
        commands.replay(
            root,
            fmt,
            index=index,
            code=code,
            path=path,
            dsn=dsn,
            output=output,
            time_limit=time_limit,
            deadlock_timeout=deadlock_timeout,
        )
    )


@app.command()
def explain(
    logfile: Annotated[
        str,
        typer.Argument(help="A PostgreSQL server log (stderr, csvlog or jsonlog), or - for stdin."),
    ],
    root: RootOpt = None,
    fmt: Annotated[
        commands.ExplainFormat, typer.Option("--format", "-f", help="text, json or markdown.")
    ] = commands.ExplainFormat.text,
    log_format: Annotated[
        commands.LogFormat,
        typer.Option("--log-format", help="The log's format (default: told from its first line)."),
    ] = commands.LogFormat.auto,
    show_literals: Annotated[
        bool,
        typer.Option(
            "--show-literals", help="Print statements as logged (default: literals as $n)."
        ),
    ] = False,
) -> None:
    """Decode a server log's deadlocks and lock timeouts back to declared locks, paths and findings."""
    raise typer.Exit(commands.explain(root, logfile, fmt, log_format, show_literals))


@app.command()
def build(
    root: RootOpt = None,
    no_svg: Annotated[
        bool,
        typer.Option(
            "--no-svg",
            help="Write the page and its DOT files only (no Graphviz needed); check them with "
            "lockdocs check --no-svg.",
        ),
    ] = False,
    dot_timeout: Annotated[
        float | None,
        typer.Option(
            "--dot-timeout",
            help="Seconds Graphviz may take to draw one diagram (default: dot_timeout under "
            "[tool.lockdocs] in pyproject.toml, else 120).",
            min=0.001,
        ),
    ] = None,
) -> None:
    """Write the lock page, its DOT diagrams and their SVGs under docs/, all or nothing."""
    from lockdocs.api import build as run_build

    base = _root(root)
    raise typer.Exit(run_build(base, svg=not no_svg, dot_timeout=dot_timeout))


@app.command()
def completion(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")]) -> None:
    """Print the shell completion script (bash: eval "$(lockdocs completion bash)" in ~/.bashrc)."""
    from typer._completion_classes import completion_init
    from typer._completion_shared import get_completion_script

    completion_init()
    script = get_completion_script(
        prog_name="lockdocs", complete_var=COMPLETE_VAR, shell=shell.value
    )
    sys.stdout.write(script.rstrip("\n") + "\n")
