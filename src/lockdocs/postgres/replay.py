"""Replay a finding's interleaving on a live server and judge what it answered.

`replay()` runs one `Scenario` (scenario.py) through the driver in a database of its own and
returns a `Verdict`: each step's answer, the errors with their DETAIL lines mapped back to the
sessions, paths and declared locks, and whether Postgres deadlocked as the finding says. A step
that went otherwise (a take that waited, an ask that was granted at once, no error at all) is
named, since that is a bug in the analysis or in the replay.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psycopg

from lockdocs.postgres import driver
from lockdocs.postgres import statements as sq
from lockdocs.postgres.logs import Wait, advisory_tag_of, parse_detail
from lockdocs.postgres.scenario import HANG, PRODUCTION_DEADLOCK_TIMEOUT_MS, Scenario, ScenarioStep

REPLAY_DEADLOCK_TIMEOUT_MS = 100
HANG_SECONDS = 1.0  # how long a replay waits before it calls a cycle nothing breaks a hang
LONG_DEADLOCK_TIMEOUT_MS = 60_000
CANCELLED = "57014"  # our own cancel at the time limit
# The words a session's BEGIN may hold (the schema's enum; nothing else is ever written there).
ISOLATION_LEVELS = ("read committed", "repeatable read", "serializable")


@dataclass
class ErrorReport:
    session: int
    step: int
    sqlstate: str
    message: str
    detail: tuple[str, ...]  # Postgres's DETAIL lines
    mapped: tuple[str, ...]  # each wait line in the declarations' words
    hint: str = ""
    context: str = ""


@dataclass
class Verdict:
    scenario: Scenario
    index: int  # the finding's index in `check --format json`
    answers: list[driver.Answer] = field(default_factory=list)
    errors: list[ErrorReport] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    answer: str = ""  # the SQLSTATE that broke the cycle, "" for none
    deadlock_timeout: str = ""
    timed_out: bool = False

    @property
    def as_reported(self) -> bool:
        return not self.differences and self.answer == self.scenario.expected

    @property
    def replayed(self) -> bool:
        return not self.scenario.unsupported


def _scaled(ms: int, replay_dt: int, production_dt: int) -> int:
    return max(1, ms * replay_dt // production_dt) if ms else 0


def session_setups(
    scenario: Scenario, superuser: bool = True, server_dt: int = 1000, production_dt: int = 1000
) -> tuple[list[list[str]], str]:
    """Each session's first statements, and the deadlock_timeout the replay runs with.

    As a superuser the session that closes the cycle gets a short deadlock_timeout and the
    others a long one, so it is always that session's detector that finds the cycle and the
    same session fails every run (the trick of PostgreSQL's own deadlock isolation tests).
    lock_timeouts are scaled by the same factor, so which of the two fires first stays as it
    would be in production."""
    replay_dt = REPLAY_DEADLOCK_TIMEOUT_MS if superuser else server_dt
    closer = scenario.closer
    setups: list[list[str]] = []
    for i, s in enumerate(scenario.sessions):
        stmts = [f"set application_name = 'lockdocs replay {s.name}'"]
        if superuser:
            dt = replay_dt if i == closer else LONG_DEADLOCK_TIMEOUT_MS
            stmts.append(f"set deadlock_timeout = '{dt}ms'")
        timeout = _scaled(s.lock_timeout_ms, replay_dt, production_dt)
        stmts.append(f"set lock_timeout = '{timeout}ms'")
        if s.isolation and s.isolation not in ISOLATION_LEVELS:
            raise ValueError(f"not an isolation level: {s.isolation!r}")
        stmts.append(f"begin isolation level {s.isolation}" if s.isolation else "begin")
        setups.append(stmts)
    return setups, f"{replay_dt}ms"


class _Names:
    """The server's numbers (pids, xids, relation OIDs, advisory tags) -> the scenario's words."""

    def __init__(self, scenario: Scenario, run: driver.Run, obs: Any) -> None:
        self.scenario = scenario
        self.session_of = {pid: i for i, pid in enumerate(run.pids)}
        self.xid_owner: dict[int, int] = {}
        for pid, rows in run.held.items():
            for locktype, xid, *_ in rows:
                if locktype == "transactionid" and xid is not None:
                    self.xid_owner[int(xid)] = self.session_of[pid]
        self.tags: dict[tuple[int, int, int], str] = {}
        self.relations: dict[int, str] = {}
        for t in scenario.targets:
            if t.key_args:
                values = driver.query(obs, f"select {t.key_args}", t.params)
                self.tags[advisory_tag_of(tuple(int(v) for v in values))] = t.label
            if t.table is not None:
                for tb in (t.table, t.table.child):
                    (oid,) = obs.execute("select %s::regclass::oid::bigint", (tb.sql,)).fetchone()
                    self.relations[int(oid)] = tb.label

    def who(self, pid: int) -> str:
        i = self.session_of.get(pid)
        if i is None:
            return f"process {pid} (not one of the replay's sessions)"
        s = self.scenario.sessions[i]
        return f"{s.name} ({s.path})"

    def asked(self, pid: int) -> ScenarioStep | None:
        i = self.session_of.get(pid)
        wants = [st for st in self.scenario.steps if st.session == i and st.action == "want"]
        return wants[-1] if wants else None

    def wait(self, w: Wait) -> str:
        asked = self.asked(w.pid)
        if w.tag.kind == "advisory":
            tag = w.tag.advisory_tag
            what = (
                self.tags.get(tag, f"an advisory lock no step took ({w.tag.text})") if tag else ""
            )
            what = f"{what} ({w.mode})"
        elif w.tag.kind == "transaction":
            owner = self.xid_owner.get(w.tag.fields[0])
            whose = f"{self.scenario.sessions[owner].name}'s" if owner is not None else "a"
            row = f"{asked.target.label} ({asked.mode})" if asked else "a row"
            what = f"{row}: it waits for {whose} transaction to end"
        elif w.tag.kind in ("tuple", "relation"):
            rel = self.relations.get(w.tag.relation or 0, f"relation {w.tag.relation}")
            row = f"{asked.target.label} ({asked.mode}) in " if asked else ""
            what = f"{row}{rel}"
        else:
            what = w.tag.text
        return f"{self.who(w.pid)} waits for {what}, blocked by {self.who(w.blocker)}"


def replay(
    scenario: Scenario,
    dsn: str,
    index: int = -1,
    time_limit: float = 10.0,
    production_deadlock_timeout_ms: int = PRODUCTION_DEADLOCK_TIMEOUT_MS,
) -> Verdict:
    """Run `scenario` on the database at `dsn` (one the caller created for it)."""

    verdict = Verdict(scenario, index)
    if scenario.unsupported:
        return verdict
    with psycopg.connect(dsn, autocommit=True) as obs:
        for stmt in scenario.setup:
            obs.execute(stmt)
        row = obs.execute(
            "select current_setting('is_superuser'), "
            "(select setting::int from pg_settings where name = 'deadlock_timeout')"
        ).fetchone()
        assert row is not None
        superuser, server_dt = row[0] == "on", int(row[1])
        setups, verdict.deadlock_timeout = session_setups(
            scenario, superuser, server_dt, production_deadlock_timeout_ms
        )
        if any(st.action == "pause" for st in scenario.steps):
            why = _why_no_pause(obs)
            if why:
                verdict.scenario = replace(
                    scenario,
                    unsupported="the cycle needs a race replay forces by pausing a server "
                    f"process, and {why}",
                )
                return verdict
        schedule = [
            driver.Statement(
                st.session,
                st.sql,
                st.describe(scenario.sessions),
                sq.params_for(st.sql, st.target),
                signal=_SIGNALS.get(st.action, 0),
            )
            for st in scenario.steps
        ]
        # A hang is one nothing breaks: a second, ten deadlock_timeouts of the replay, shows it.
        limit = min(time_limit, HANG_SECONDS) if scenario.expected == HANG else time_limit
        run = driver.run(dsn, setups, schedule, time_limit=limit, observer=obs)
        names = _Names(scenario, run, obs)
    verdict.answers = run.answers
    verdict.timed_out = run.timed_out
    _judge(verdict, run, names)
    return verdict


_SIGNALS = {"pause": signal.SIGSTOP, "resume": signal.SIGCONT}


def _why_no_pause(obs: Any) -> str:
    """Why replay cannot pause the server's processes ("" when it can): it must reach the
    server over a Unix socket (on this machine) and be allowed to signal it."""
    if not str(obs.info.host).startswith("/"):
        return "the server is not on this machine (reached over TCP)"
    pid = int(obs.info.backend_pid)
    try:
        name = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
        os.kill(pid, 0)
    except OSError:
        return "this user may not signal the server's processes"
    if name != "postgres":
        return f"process {pid} is not the server's"
    return ""


def _judge(verdict: Verdict, run: driver.Run, names: _Names) -> None:
    sc = verdict.scenario
    errors = sorted(
        (a for a in run.answers if a.error and a.sqlstate != CANCELLED),
        key=lambda a: a.finished_at,
    )
    for a in errors:
        detail = parse_detail(a.detail)
        verdict.errors.append(
            ErrorReport(
                a.session,
                a.statement,
                a.sqlstate,
                a.message,
                tuple(a.detail.split("\n")) if a.detail else (),
                tuple(names.wait(w) for w in detail.waits),
                a.hint,
                a.context,
            )
        )
    first_error = errors[0].finished_at if errors else float("inf")
    verdict.answer = errors[0].sqlstate if errors else ""
    last_ask = max(i for i, st in enumerate(sc.steps) if st.action == "want")
    for i, (st, a) in enumerate(zip(sc.steps, run.answers, strict=True)):
        said = st.describe(sc.sessions)
        if st.action in ("pause", "resume"):
            continue
        if a.dropped:
            verdict.differences.append(f"step {i + 1} ({said}) was never sent: {a.dropped}")
            continue
        if a.sent_at > first_error:
            continue  # the cycle was already broken; what follows is unconstrained
        if st.action == "take" and a.waited:
            verdict.differences.append(
                f"step {i + 1} ({said}) waited: another session held {st.target.label} in a "
                "conflicting mode before the asks began"
            )
        elif st.action in ("take", "end") and a.error:
            verdict.differences.append(f"step {i + 1} ({said}) failed: {a.sqlstate} {a.message}")
        elif st.action == "want" and i != last_ask and a.done and not a.waited and not a.error:
            verdict.differences.append(
                f"step {i + 1} ({said}) was granted at once: no other session held "
                f"{st.target.label} in a mode it waits for"
            )
    if sc.expected == HANG and not errors:
        # A hang: nothing broke the cycle. Every ask waits, each for a session that is idle in
        # its transaction (the driver ends the run there), so Postgres has no cycle to break.
        still = [
            i
            for i, (st, a) in enumerate(zip(sc.steps, run.answers, strict=True))
            if st.action == "want" and not (a.left_waiting or (run.timed_out and a.waited))
        ]
        for i in still:
            verdict.differences.append(
                f"step {i + 1} ({sc.steps[i].describe(sc.sessions)}) did not wait to the end: "
                "something let it through"
            )
        if not still:
            verdict.answer = HANG
        return
    if run.timed_out:
        verdict.differences.append(
            "no answer within the time limit: the sessions were still waiting (cancelled)"
        )
    elif not errors:
        verdict.differences.append(
            "every step finished without an error: Postgres saw no deadlock and no lock timeout"
        )
    elif verdict.answer != sc.expected:
        verdict.differences.append(
            f"Postgres answered {verdict.answer} ({errors[0].message}), "
            f"not {sc.expected} ({sc.why_expected})"
        )
