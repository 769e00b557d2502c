"""A scenario as a PostgreSQL isolation-tester spec (src/test/isolation), to keep with a team's
own tests: the tables in setup, one session per transaction, a step per lock, the permutation.

The tables live in a schema of their own (lockdocs_replay), dropped in teardown, so the spec
never meets the team's tables. As in PostgreSQL's own deadlock specs, the session that closes
the cycle has a short deadlock_timeout and the others a long one, so the same session fails on
every run and the expected output is stable.

A spec is read by isolationtester's own scanner (specscanner.l), and every text of a
declaration is written for it: a comment runs to the end of its line (a newline or a carriage
return), so comments go through `present.shown` (no line break, control or invisible
character left); a quoted name may hold no newline and doubles its quotes; an SQL block ends
at its first `}`, so no SQL here holds one: key texts are plain literals or hex digits
(`statements.inline`), and table names are plain. `spec` checks that before it returns.
"""

from __future__ import annotations

from lockdocs.postgres import statements as sq
from lockdocs.postgres.present import shown
from lockdocs.postgres.replay import session_setups
from lockdocs.postgres.scenario import Scenario, ScenarioStep

SCHEMA = "lockdocs_replay"


class SpecError(ValueError):
    """A text would break out of its place in the spec (a bug: the writers here prevent it)."""


def _name(text: str) -> str:
    """A quoted name: one line, its quotes doubled."""
    return '"' + shown(text).replace('"', '""') + '"'


def _comment(text: str) -> str:
    return "# " + shown(text)


def _sql(statement: str) -> str:
    if "}" in statement or "\x00" in statement:
        raise SpecError(f"a statement would end its spec block early: {statement!r}")
    return statement


def _block(statements: list[str], indent: str = "  ") -> str:
    body = "\n".join(f"{indent}{_sql(s)};" for s in statements)
    return "{\n" + body + "\n}"


def _step_sql(st: ScenarioStep) -> str:
    return _sql(sq.inline(st.sql, sq.params_for(st.sql, st.target)))


def _step_name(scenario: Scenario, n: int, st: ScenarioStep) -> str:
    s = scenario.sessions[st.session]
    if st.action == "end":
        return _name(f"{s.name} commits [{n + 1}]")
    verb = "takes" if st.action == "take" else "asks for"
    return _name(f"{s.name} {verb} {st.target.label} ({st.mode}) [{n + 1}]")


def spec(scenario: Scenario) -> str:
    """The isolation spec of a scenario built with schema=SCHEMA."""
    sc = scenario
    lines = [
        _comment(f"lockdocs replay of {sc.code} at {sc.location}"),
        _comment(sc.message),
        _comment(f"Expected: one session fails with {sc.expected} ({sc.why_expected})."),
    ]
    lines.extend(_comment(f"Stand-in: {note}") for note in sc.stand_ins)
    if any(st.action == "pause" for st in sc.steps):
        lines.append(
            _comment(
                "The cycle needs a race (a waiter, woken, slower than a new request): lockdocs "
                "replay forces it by pausing the waiter's server process, which this spec cannot."
            )
        )
    setup = [f"create schema if not exists {SCHEMA}"]
    setup += [stmt for stmt in sc.setup if stmt not in setup]
    lines += ["", "setup", _block(setup), "", "teardown"]
    lines.append(_block([f"drop schema if exists {SCHEMA} cascade"]))
    setups, _ = session_setups(sc)
    for i, s in enumerate(sc.sessions):
        lines += ["", f"session {_name(s.name)}"]
        first = [stmt for stmt in setups[i] if not stmt.startswith("set application_name")]
        lines += ["setup", _block(first, "  ")]
        for n, st in enumerate(sc.steps):
            # (a pause or resume is replay's, of a server process: no statement here)
            if st.session == i and st.action not in ("pause", "resume"):
                lines.append(f"step {_step_name(sc, n, st)} {{ {_step_sql(st)}; }}")
        lines.append(f"step {_name(f'{s.name} ends')} {{ rollback; }}")
        lines += ["teardown", _block(["select pg_advisory_unlock_all()"])]
    names = [
        _step_name(sc, n, st)
        for n, st in enumerate(sc.steps)
        if st.action not in ("pause", "resume")
    ]
    # The closer fails; then each session, from the closer back, ends and so frees the one
    # that waits for it.
    k = len(sc.sessions)
    order = [(sc.closer - j) % k for j in range(k)]
    names += [_name(f"{sc.sessions[i].name} ends") for i in order]
    lines += ["", "permutation " + " ".join(names), ""]
    return "\n".join(lines)
