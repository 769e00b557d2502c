"""What `lockdocs replay` does, free of the CLI: pick the findings, get a database of its own
(on the server the user names, or on a throwaway cluster), replay each finding there."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic
from lockdocs.postgres.replay import Verdict, replay
from lockdocs.postgres.scenario import Scenario, from_finding
from lockdocs.postgres.server import scratch_database, throwaway_server

REPLAYABLE = ("LD201", "LD202", "LD203")
PG_ENVIRONMENT = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")


class SelectError(Exception):
    """The options name no finding that can be replayed; the message says what there is."""


@dataclass(frozen=True)
class Selected:
    index: int  # in `check --format json`'s list
    diagnostic: Diagnostic


def select(
    diags: list[Diagnostic], index: int | None, code: str | None, path: str | None
) -> list[Selected]:
    """The findings to replay: the one at `index`, or every LD201/LD202/LD203 finding, narrowed
    by `code` and by `path` (one of the finding's paths)."""
    if index is not None:
        if not 0 <= index < len(diags):
            raise SelectError(
                f"there is no finding {index}: check --format json lists {len(diags)} "
                f"(0 to {len(diags) - 1})"
                if diags
                else f"there is no finding {index}: check reports none"
            )
        d = diags[index]
        if d.code not in REPLAYABLE:
            raise SelectError(
                f"finding {index} is {d.code}; only {', '.join(REPLAYABLE)} findings have an "
                "interleaving to replay"
            )
        return [Selected(index, d)]
    out = [
        Selected(i, d)
        for i, d in enumerate(diags)
        if d.code in REPLAYABLE
        and (code is None or d.code == code)
        and (path is None or path in d.paths)
    ]
    if not out:
        what = " ".join(x for x in (code, f"on path '{path}'" if path else None) if x)
        have = sorted({d.code for d in diags if d.code in REPLAYABLE})
        raise SelectError(
            f"no {what + ' ' if what else ''}finding to replay"
            + (f" (the project has {', '.join(have)} findings)" if have else "")
        )
    return out


def scenarios(model: m.Model, chosen: list[Selected], schema: str | None = None) -> list[Scenario]:
    return [from_finding(model, s.diagnostic, schema) for s in chosen]


def dsn_from_environment(dsn: str | None) -> str | None:
    """The DSN to use: the option, else "" (libpq reads PG*) when PG* variables name a server,
    else None (a throwaway cluster)."""
    if dsn is not None:
        return dsn
    if any(os.environ.get(v) for v in PG_ENVIRONMENT):
        return ""
    return None


@contextlib.contextmanager
def database(dsn: str | None) -> Iterator[str]:
    """A database of its own for the replay: on the server at `dsn`, or on a throwaway
    cluster when `dsn` is None. Both are removed afterwards."""

    if dsn is None:
        with throwaway_server() as server, scratch_database(server.dsn, "lockdocs_replay") as db:
            yield db
    else:
        with scratch_database(dsn, "lockdocs_replay") as db:
            yield db


def replay_all(
    scenarios: list[Scenario],
    indexes: list[int],
    dsn: str,
    time_limit: float,
    production_deadlock_timeout_ms: int,
) -> list[Verdict]:
    """Each scenario in a fresh schema state: its tables are dropped before the next one."""

    out: list[Verdict] = []
    for sc, index in zip(scenarios, indexes, strict=True):
        out.append(replay(sc, dsn, index, time_limit, production_deadlock_timeout_ms))
        with psycopg.connect(dsn, autocommit=True) as conn:
            for t in sc.targets:
                if t.table is not None:
                    conn.execute(f"drop table if exists {t.table.child.sql}, {t.table.sql}")
    return out
