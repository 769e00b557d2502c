"""The command line: options parsed by typer, then one command body of `lockdocs.commands`
called, loaded only when that command runs; nothing else.

Exit codes: 0 clean, 1 findings or drift, 2 bad input or usage, 3 an internal error.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from typer._completion_classes import completion_init
from typer._completion_shared import get_completion_script

from lockdocs import __version__, commands
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


RootOpt = Annotated[
    Path | None,
    typer.Option(
        "--root",
        help="The folder that holds locks.yaml (default: the nearest one upward).",
        file_okay=False,
    ),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
LogLinePrefixOpt = Annotated[
    str | None,
    typer.Option(
        "--log-line-prefix",
        help="The server's log_line_prefix, for a stderr log (default: told from the log "
        "among the common settings).",
    ),
]
TEXT = Format("text")


@app.command()
def validate(root: RootOpt = None, fmt: FormatOpt = TEXT) -> None:
    """Load and validate the declarations (format and references only)."""
    from lockdocs.commands import check as body

    raise typer.Exit(body.validate(root, fmt))


@app.command()
def check(
    root: RootOpt = None,
    fmt: FormatOpt = TEXT,
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
    from lockdocs.commands import check as body

    raise typer.Exit(body.check(root, fmt, drift=not no_drift, show_diff=show_diff, svg=not no_svg))


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
    from lockdocs.commands import scan as body

    raise typer.Exit(body.scan(root, list(paths or []), fmt, coverage))


@app.command()
def export(
    root: RootOpt = None,
    fmt: Annotated[
        commands.ExportFormat, typer.Option("--format", "-f", help="Export format.")
    ] = commands.ExportFormat.json,
) -> None:
    """Print the resolved model (locks, transactions, paths with acquisitions, rules, exceptions)."""
    from lockdocs.commands import describe

    raise typer.Exit(describe.export(root, fmt))


@app.command()
def schema(
    kind: Annotated[str, typer.Argument(help="locks or paths")] = "locks",
) -> None:
    """Print the JSON Schema of locks.yaml (or of a paths/ file)."""
    from lockdocs.commands import describe

    raise typer.Exit(describe.schema(kind))


@app.command()
def rules(
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or json")] = "text",
) -> None:
    """List every check with its code, default severity and summary."""
    from lockdocs.commands import describe

    raise typer.Exit(describe.rules(fmt))


@app.command()
def diff(
    base: Annotated[
        str | None,
        typer.Argument(help="A git revision (a commit, branch or tag); or pass --base-dir."),
    ] = None,
    head: Annotated[
        str | None,
        typer.Argument(help="A git revision (default: the working tree); or pass --head-dir."),
    ] = None,
    root: RootOpt = None,
    fmt: Annotated[
        commands.DiffFormat,
        typer.Option("--format", "-f", help="text, markdown (a PR comment) or json."),
    ] = commands.DiffFormat.text,
    fail_on: Annotated[
        commands.FailOn,
        typer.Option(
            "--fail-on",
            help="new-findings: exit 1 when HEAD has unwaived errors or warnings that BASE had not.",
        ),
    ] = commands.FailOn.never,
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
    base_dir: Annotated[
        Path | None,
        typer.Option(
            "--base-dir",
            help="Compare with the project in this folder instead of a revision.",
            file_okay=False,
        ),
    ] = None,
    head_dir: Annotated[
        Path | None,
        typer.Option(
            "--head-dir",
            help="Take the head from the project in this folder instead of the working tree.",
            file_okay=False,
        ),
    ] = None,
) -> None:
    """Compare two versions of the declarations: locks, order edges, paths, findings, exceptions."""
    from lockdocs.commands import diff as body

    raise typer.Exit(
        body.diff(base, head, root, fmt, fail_on, repo_url, revision, base_dir, head_dir)
    )


@app.command()
def init(
    directory: Annotated[
        Path, typer.Argument(help="The folder to start a project in (default: here).")
    ] = Path(),
) -> None:
    """Start a project: a commented locks.yaml, an example path, JSON Schemas and the page."""
    from lockdocs.commands import init as body

    raise typer.Exit(body.init(directory))


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
    from lockdocs.commands import replay as body

    raise typer.Exit(
        body.replay(
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
    log_line_prefix: LogLinePrefixOpt = None,
) -> None:
    """Decode a server log's deadlocks and lock timeouts back to declared locks, paths and findings."""
    from lockdocs.commands import explain as body

    raise typer.Exit(body.explain(root, logfile, fmt, log_format, show_literals, log_line_prefix))


@app.command()
def observe(
    logs: Annotated[
        list[str],
        typer.Argument(
            help="PostgreSQL server logs written with log_statement = 'all' (stderr, csvlog or "
            "jsonlog; gzip too), read in order; - for stdin."
        ),
    ],
    root: RootOpt = None,
    fmt: FormatOpt = TEXT,
    log_format: Annotated[
        commands.LogFormat,
        typer.Option("--log-format", help="The logs' format (default: told from each file)."),
    ] = commands.LogFormat.auto,
    log_line_prefix: LogLinePrefixOpt = None,
    propose: Annotated[
        Path | None,
        typer.Option(
            "--propose",
            help="Write draft declarations for what the log showed and the declarations lack "
            "into this folder (a whole project when there is no locks.yaml).",
            file_okay=False,
        ),
    ] = None,
) -> None:
    """Check the transactions a server log shows against the declarations: orders, locks, paths."""
    from lockdocs.commands import observe as body

    raise typer.Exit(body.observe(logs, root, fmt, log_format, log_line_prefix, propose))


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
    from lockdocs.commands import build as body

    raise typer.Exit(body.build(root, svg=not no_svg, dot_timeout=dot_timeout))


@app.command()
def completion(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")]) -> None:
    """Print the shell completion script (bash: eval "$(lockdocs completion bash)" in ~/.bashrc)."""

    completion_init()
    script = get_completion_script(
        prog_name="lockdocs", complete_var=COMPLETE_VAR, shell=shell.value
    )
    sys.stdout.write(script.rstrip("\n") + "\n")
