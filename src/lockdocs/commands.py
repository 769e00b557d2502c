"""The bodies of the hot commands (check, validate), free of the CLI framework.

`cli.py` (typer) calls these for every invocation; `entry.py` calls them directly for the plain
forms of `lockdocs check` and `lockdocs validate`, so a pre-commit hook does not pay the
framework's start-up (typer builds every parameter through pydantic: about 100 ms).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lockdocs.diagnostics import Diagnostic
    from lockdocs.model import Model
    from lockdocs.postgres.run import Selected
    from lockdocs.postgres.scenario import Scenario


class Format(StrEnum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


class NoRoot(Exception):
    """No project folder: a usage error (exit 2), already explained on stderr."""


def resolve_root(root: Path | None) -> Path:
    from lockdocs.project import RootNotFound, find_root

    try:
        if root is not None:
            if not (root / "locks.yaml").is_file():
                raise RootNotFound(f"no locks.yaml in {root}")
            return root.resolve()
        return find_root(Path.cwd())
    except RootNotFound as exc:
        sys.stderr.write(
            f"lockdocs: {exc}\n"
            "hint: run it inside a project, pass --root DIR, or start one with 'lockdocs init'\n"
        )
        raise NoRoot from None


def emit(
    diags: list[Diagnostic],
    fmt: Format,
    summary: str,
    root: Path | None = None,
    rules_url: str | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write the report; JSON, GitHub and SARIF name files from the repository top. `extra`
    adds top-level keys to the JSON (the coverage of the scanned SQL)."""
    from lockdocs.report import HERE, REPORTERS, json_report

    where = HERE
    if root is not None and fmt is not Format.text:
        from lockdocs.report.where import for_project

        where = for_project(root, rules_url)
    if fmt is Format.json and extra:
        sys.stdout.write(json_report(diags, summary, where, extra))
        return
    text = REPORTERS[fmt.value](diags, summary, where)
    if fmt is Format.text:
        from lockdocs import colour

        colour.write(sys.stdout, text)
        return
    sys.stdout.write(text)


def summary(diags: list[Diagnostic]) -> str:
    counts: dict[str, int] = {}
    waived = 0
    for d in diags:
        if d.waived_by:
            waived += 1
            continue
        counts[d.severity.value] = counts.get(d.severity.value, 0) + 1
    parts = [
        f"{counts.get(s, 0)} {s}{'s' if counts.get(s, 0) != 1 and s != 'info' else ''}"
        for s in ("error", "warning", "info")
    ]
    line = ", ".join(parts) + f", {waived} waived"
    drifted = sum(1 for d in diags if "drift" in d.extra and not d.waived_by)
    if drifted:
        files = "generated file differs" if drifted == 1 else "generated files differ"
        line += f"; {drifted} {files}: run lockdocs build"
    return line


def validate(root: Path | None, fmt: Format) -> int:
    from lockdocs.api import load

    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    model, diags = load(base)
    if model is None:
        emit(diags, fmt, "the declarations are not valid", base)
        return 2
    emit(
        diags,
        fmt,
        f"ok: {len(model.locks)} locks, {len(model.paths)} paths in {len(model.files)} files"
        if fmt is Format.text
        else "ok",
        base,
        model.rules_url,
    )
    return 0


def check(
    root: Path | None, fmt: Format, drift: bool, *, show_diff: bool = False, svg: bool = True
) -> int:
    """`lockdocs check`: findings and drift (one finding per generated file that differs).

    `show_diff` prints the unified diff of each drifted file (to stdout in text, else to
    stderr, so stdout stays valid for the format) and keeps it in the JSON.
    """
    from lockdocs.api import check as run_check

    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    result = run_check(base, drift=drift, svg=svg)
    diags = result.diagnostics
    if result.drift:
        if show_diff:
            out = sys.stdout if fmt is Format.text else sys.stderr
            out.write("".join(_shown_diff(_diff_of(d)) for d in result.drift))
        else:
            diags = [_without_diff(d) for d in diags]
    text = "the declarations are not valid" if result.bad_input else summary(diags)
    rules_url = result.model.rules_url if result.model is not None else None
    extra = {"coverage": result.coverage.to_json()} if result.coverage is not None else None
    emit(diags, fmt, text if fmt in (Format.text, Format.json) else "", base, rules_url, extra)
    return result.exit_code


def _shown_diff(diff: str) -> str:
    """A unified diff for the terminal: each line's control characters escaped."""
    from lockdocs.diagnostics import printable

    return "\n".join(printable(line) for line in diff.split("\n"))


def _diff_of(d: Diagnostic) -> str:
    data = d.extra.get("drift")
    return str(data.get("diff", "")) if isinstance(data, dict) else ""


def _without_diff(d: Diagnostic) -> Diagnostic:
    from dataclasses import replace

    data = d.extra.get("drift")
    if not isinstance(data, dict) or "diff" not in data:
        return d
    return replace(d, extra={**d.extra, "drift": {k: v for k, v in data.items() if k != "diff"}})


class ScanFormat(StrEnum):
    text = "text"
    json = "json"


def scan(root: Path | None, paths: list[Path], fmt: ScanFormat, coverage: bool) -> int:
    """`lockdocs scan`: list every lock the SQL takes; with --coverage, how the declarations
    cover it. Warnings (files or statements skipped) go to stderr in text form."""
    from lockdocs.api import load
    from lockdocs.project import RootNotFound, find_root

    model = None
    try:
        base: Path | None = resolve_root(root) if root is not None else find_root(Path.cwd())
    except (NoRoot, RootNotFound):
        if root is not None or not paths:
            if not paths and root is None:
                sys.stderr.write(
                    "lockdocs: no locks.yaml here or above, and no files named\n"
                    "hint: run it inside a project whose locks.yaml sets code:, or name the "
                    "SQL files: lockdocs scan db/queries\n"
                )
            return 2
        base = None
    if base is not None:
        model, diags = load(base)
        if model is None:
            emit(diags, Format.text, "the declarations are not valid")
            return 2
    from lockdocs.report import diagnostic_json
    from lockdocs.scan import output
    from lockdocs.scan.run import scan_model, scan_paths

    if paths:
        result, missing = scan_paths(base or Path.cwd(), paths, model)
        if missing:
            for name in missing:
                sys.stderr.write(f"lockdocs: no such file or folder: {name}\n")
            return 2
    elif model is not None and model.code:
        result = scan_model(model)
    else:
        sys.stderr.write(
            "lockdocs: locks.yaml sets no code: and no files are named\n"
            "hint: add code: with the globs of the project's SQL (e.g. code: [db/**/*.sql]), or "
            "name the files: lockdocs scan db/queries\n"
        )
        return 2
    cov = None
    if coverage:
        if model is None:
            sys.stderr.write("lockdocs: --coverage compares with locks.yaml; none was found\n")
            return 2
        from lockdocs.scan.compare import compare

        cov = compare(model, result)[1]
    if fmt is ScanFormat.json:
        sys.stdout.write(
            output.scan_json(result, [diagnostic_json(d) for d in result.warnings], cov)
        )
        return 0
    from lockdocs.report import REPORTERS

    if result.warnings:
        sys.stderr.write(REPORTERS["text"](result.warnings, ""))
    sys.stdout.write(output.scan_text(result))
    if cov is not None:
        sys.stdout.write(output.coverage_text(cov))
    return 0


class ReplayFormat(StrEnum):
    text = "text"
    json = "json"
    isolation = "isolation"


def _fail(message: str, hint: str = "") -> int:
    sys.stderr.write(f"lockdocs: {message}\n" + (f"hint: {hint}\n" if hint else ""))
    return 2


def replay(
    root: Path | None,
    fmt: ReplayFormat,
    *,
    index: int | None = None,
    code: str | None = None,
    path: str | None = None,
    dsn: str | None = None,
    output: Path | None = None,
    time_limit: float = 10.0,
    deadlock_timeout: str = "1s",
) -> int:
    """Replay findings on a live server: 0 when each deadlocked as reported, 1 when one did
    not, 2 for bad input or no server."""
    from lockdocs.api import check as run_check
    from lockdocs.postgres import run
    from lockdocs.postgres.scenario import duration_ms

    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    production_dt = duration_ms(deadlock_timeout)
    if production_dt <= 0:
        return _fail(
            f"--deadlock-timeout '{deadlock_timeout}' is not a duration",
            "write it as PostgreSQL does: 1s, 500ms or 1min",
        )
    result = run_check(base, drift=False)
    if result.bad_input or result.model is None:
        emit(result.diagnostics, Format.text, "the declarations are not valid")
        return 2
    try:
        chosen = run.select(result.diagnostics, index, code, path)
    except run.SelectError as exc:
        return _fail(str(exc), "list them with: lockdocs check --format json")
    if fmt is ReplayFormat.isolation:
        return _write_isolation(result.model, chosen, output)
    scenarios = run.scenarios(result.model, chosen)
    return _replay_on_server(
        scenarios,
        [s.index for s in chosen],
        fmt,
        run.dsn_from_environment(dsn),
        time_limit,
        production_dt,
    )


def _write_isolation(model: Model, chosen: list[Selected], output: Path | None) -> int:
    from lockdocs.postgres import run
    from lockdocs.postgres.isolation import SCHEMA, spec

    scenarios = run.scenarios(model, chosen, SCHEMA)
    playable = [(s, sc) for s, sc in zip(chosen, scenarios, strict=True) if not sc.unsupported]
    if output is None:
        if len(playable) != 1:
            return _fail(
                f"{len(playable)} findings to write; an isolation spec holds one",
                "pick one with --index N (or --code and --path), or write one file each "
                "with --output DIR",
            )
        sys.stdout.write(spec(playable[0][1]))
        return 0
    output.mkdir(parents=True, exist_ok=True)
    for s, sc in playable:
        name = output / f"lockdocs-{sc.code.lower()}-{s.index}.spec"
        name.write_text(spec(sc), encoding="utf-8")
        sys.stdout.write(f"wrote {name}\n")
    return 0


def _replay_on_server(
    scenarios: list[Scenario],
    indexes: list[int],
    fmt: ReplayFormat,
    dsn: str | None,
    time_limit: float,
    production_dt: int,
) -> int:
    import psycopg

    from lockdocs.postgres import present, run
    from lockdocs.postgres.driver import DriverError
    from lockdocs.postgres.server import ServerUnavailable

    try:
        with run.database(dsn) as scratch:
            verdicts = run.replay_all(
                scenarios,
                indexes,
                scratch,
                time_limit,
                production_dt,
            )
    except ServerUnavailable as exc:
        return _fail(str(exc), "or point --dsn (or the PG* variables) at a server of yours")
    except psycopg.errors.InsufficientPrivilege as exc:
        return _fail(
            f"the server refused to create a scratch database: {exc}".strip(),
            "replay needs a database of its own (advisory locks are per database, so its keys "
            "then never meet the application's); grant CREATEDB, or leave out --dsn for a "
            "throwaway cluster",
        )
    except (psycopg.Error, DriverError) as exc:
        return _fail(f"cannot use the server: {str(exc).strip()}")
    sys.stdout.write(
        present.text(verdicts) if fmt is ReplayFormat.text else present.as_json(verdicts)
    )
    return 0 if all(v.as_reported for v in verdicts if v.replayed) else 1


class ExplainFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class LogFormat(StrEnum):
    auto = "auto"
    stderr = "stderr"
    csvlog = "csvlog"
    jsonlog = "jsonlog"


def explain(
    root: Path | None,
    logfile: str,
    fmt: ExplainFormat,
    log_format: LogFormat = LogFormat.auto,
    show_literals: bool = False,
) -> int:
    """Explain a server log's lock errors: 0 when each is a reported finding or a timeout on a
    declared lock, 1 when one shows the declarations miss a lock, a path or a step (or the
    analysis a cycle), 2 for bad input."""
    from lockdocs.api import check as run_check
    from lockdocs.postgres.explain_output import FORMATTERS
    from lockdocs.postgres.explain_output import explain as run_explain

    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    if logfile == "-":
        text, source = sys.stdin.read(), "<stdin>"
    else:
        try:
            raw = Path(logfile).read_bytes()
        except OSError as exc:
            return _fail(f"cannot read {logfile}: {exc.strerror or exc}")
        text, source = raw.decode("utf-8", errors="replace"), logfile
    result = run_check(base, drift=False)
    if result.bad_input or result.model is None:
        emit(result.diagnostics, Format.text, "the declarations are not valid")
        return 2
    cases = run_explain(result.model, result.diagnostics, text, log_format.value, show_literals)
    sys.stdout.write(FORMATTERS[fmt.value](cases, source))
    return 0 if all(c.verdict in ("reported", "timeout") for c in cases) else 1
