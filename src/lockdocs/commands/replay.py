"""`lockdocs replay`: a finding's interleaving run on a live PostgreSQL (or written as an
isolation-tester spec). Loaded only by this command (it imports psycopg)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import psycopg

from lockdocs.api import check as run_check
from lockdocs.commands import ReplayFormat
from lockdocs.commands.common import NoRoot, emit, fail, resolve_root
from lockdocs.model import Model
from lockdocs.postgres import present, run
from lockdocs.postgres.driver import DriverError
from lockdocs.postgres.isolation import SCHEMA, spec
from lockdocs.postgres.present import shown as printable
from lockdocs.postgres.run import Selected
from lockdocs.postgres.scenario import Scenario, duration_ms
from lockdocs.postgres.server import ServerUnavailable
from lockdocs.postgres.stopping import Stopped, stop_on_signals


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
    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    production_dt = duration_ms(deadlock_timeout)
    if production_dt <= 0:
        return fail(
            printable(f"--deadlock-timeout '{deadlock_timeout}' is not a duration"),
            "write it as PostgreSQL does: 1s, 500ms or 1min",
        )
    result = run_check(base, drift=False)
    if result.bad_input or result.model is None:
        emit(result.diagnostics, "text", "the declarations are not valid")
        return 2
    try:
        chosen = run.select(result.diagnostics, index, code, path)
    except run.SelectError as exc:
        return fail(printable(str(exc)), "list them with: lockdocs check --format json")
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
    scenarios = run.scenarios(model, chosen, SCHEMA)
    playable = [(s, sc) for s, sc in zip(chosen, scenarios, strict=True) if not sc.unsupported]
    if output is None:
        if len(playable) != 1:
            return fail(
                f"{len(playable)} findings to write; an isolation spec holds one",
                "pick one with --index N (or --code and --path), or write one file each "
                "with --output DIR",
            )
        sys.stdout.write(spec(playable[0][1]))
        return 0
    specs = [
        (output / f"lockdocs-{sc.code.lower()}-{s.index}.spec", spec(sc)) for s, sc in playable
    ]
    try:
        output.mkdir(parents=True, exist_ok=True)
        for name, text in specs:
            name.write_text(text, encoding="utf-8")
            sys.stdout.write(f"wrote {printable(str(name))}\n")
    except OSError as exc:
        where = printable(str(exc.filename or output))
        return fail(
            f"cannot write the specs to {where}: {exc.strerror or exc}",
            "give --output a folder that can be made and written",
        )
    return 0


def _replay_on_server(
    scenarios: list[Scenario],
    indexes: list[int],
    fmt: ReplayFormat,
    dsn: str | None,
    time_limit: float,
    production_dt: int,
) -> int:
    try:
        with stop_on_signals(), run.database(dsn) as scratch:
            verdicts = run.replay_all(
                scenarios,
                indexes,
                scratch,
                time_limit,
                production_dt,
            )
    except KeyboardInterrupt as exc:  # SIGINT, or Stopped: SIGTERM, SIGHUP
        signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
        sys.stderr.write(
            f"lockdocs: stopped by {signal.Signals(signum).name}; the scratch database and "
            "the throwaway server are gone\n"
        )
        return 128 + signum
    except ServerUnavailable as exc:
        return fail(
            printable(str(exc)), "or point --dsn (or the PG* variables) at a server of yours"
        )
    except psycopg.errors.InsufficientPrivilege as exc:
        return fail(
            printable(f"the server refused to create a scratch database: {exc}".strip()),
            "replay needs a database of its own (advisory locks are per database, so its keys "
            "then never meet the application's); grant CREATEDB, or leave out --dsn for a "
            "throwaway cluster",
        )
    except (psycopg.Error, DriverError) as exc:
        return fail(printable(f"cannot use the server: {str(exc).strip()}"))
    sys.stdout.write(
        present.text(verdicts) if fmt is ReplayFormat.text else present.as_json(verdicts)
    )
    return 0 if all(v.as_reported for v in verdicts if v.replayed) else 1
