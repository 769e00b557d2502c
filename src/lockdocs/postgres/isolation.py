"""A scenario as a PostgreSQL isolation-tester spec (src/test/isolation), to keep with a team's
own tests: the tables in setup, one session per transaction, a step per lock, the permutation.

The tables live in a schema of their own (lockdocs_replay), dropped in teardown, so the spec
never meets the team's tables. As in PostgreSQL's own deadlock specs, the session that closes
the cycle has a short deadlock_timeout and the others a long one, so the same session fails on
every run and the expected output is stable.
"""

from __future__ import annotations

from lockdocs.postgres.replay import session_setups
from lockdocs.postgres.scenario import Scenario

SCHEMA = "lockdocs_replay"


def _name(text: str) -> str:
    return '"' + text.replace('"', "'") + '"'


def _block(statements: list[str], indent: str = "  ") -> str:
    body = "\n".join(f"{indent}{s};" for s in statements)
    return "{\n" + body + "\n}"


def spec(scenario: Scenario) -> str:
    """The isolation spec of a scenario built with schema=SCHEMA."""
    sc = scenario
    lines = [
        f"# lockdocs replay of {sc.code} at {sc.location}",
        f"# {sc.message}",
        f"# Expected: one session fails with {sc.expected} ({sc.why_expected}).",
    ]
    lines.extend(f"# Stand-in: {note}" for note in sc.stand_ins)
    setup = [f"create schema if not exists {SCHEMA}"]
    setup += [stmt for stmt in sc.setup if stmt not in setup]
    lines += ["", "setup", _block(setup), "", "teardown"]
    lines.append(_block([f"drop schema if exists {SCHEMA} cascade"]))
    setups, _ = session_setups(sc)
    names: list[str] = []
    for i, s in enumerate(sc.sessions):
        lines += ["", f"session {_name(s.name)}"]
        first = [stmt for stmt in setups[i] if not stmt.startswith("set application_name")]
        lines += ["setup", _block(first, "  ")]
        for n, st in enumerate(sc.steps):
            if st.session != i:
                continue
            verb = "takes" if st.action == "take" else "asks for"
            name = f"{s.name} {verb} {st.target.label} ({st.mode}) [{n + 1}]"
            lines.append(f"step {_name(name)} {{ {st.sql}; }}")
        lines.append(f"step {_name(f'{s.name} ends')} {{ rollback; }}")
        lines += ["teardown", _block(["select pg_advisory_unlock_all()"])]
    for n, st in enumerate(sc.steps):
        s = sc.sessions[st.session]
        verb = "takes" if st.action == "take" else "asks for"
        names.append(_name(f"{s.name} {verb} {st.target.label} ({st.mode}) [{n + 1}]"))
    # The closer fails; then each session, from the closer back, ends and so frees the one
    # that waits for it.
    k = len(sc.sessions)
    order = [(sc.closer - j) % k for j in range(k)]
    names += [_name(f"{sc.sessions[i].name} ends") for i in order]
    lines += ["", "permutation " + " ".join(names), ""]
    return "\n".join(lines)
