"""Verdicts -> text or JSON. Pids, transaction ids and OIDs in Postgres's own lines change from
run to run; everything lockdocs says about them is stable (the failing session is always the
one that closes the cycle when the replay can set deadlock_timeout).

Every line of the text goes through `shown` (`printable`, and the invisible characters it
leaves): a declaration's names and texts, and the server's messages that quote them, reach the
terminal with no control, bidi or zero-width character left raw. JSON escapes controls itself; the invisible characters it would leave raw
are written as \\u escapes too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lockdocs.diagnostics import printable
from lockdocs.postgres import statements as sq
from lockdocs.postgres.driver import Answer
from lockdocs.postgres.replay import Verdict
from lockdocs.postgres.scenario import ScenarioStep

# What json.dumps(ensure_ascii=False) leaves raw and a terminal or an editor shows wrongly or
# not at all: bidi controls, zero-width and other invisible characters, line separators.
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]"
)


def _escaped(mt: re.Match[str]) -> str:
    return f"\\u{ord(mt.group(0)):04x}"


def shown(text: str) -> str:
    """A text as a terminal (or a spec's comment) may show it: `printable`, and no invisible
    character left raw either."""
    return _INVISIBLE.sub(_escaped, printable(text))


def _outcome(a: Answer) -> str:
    if a.dropped:
        return f"not sent ({a.dropped})"
    if a.error:
        return f"ERROR {a.sqlstate} {a.message}"
    if a.left_waiting:
        return "waits (until the replay ends the transaction that holds it)"
    if a.waited:
        return "waits, then granted"
    if a.done:
        return "granted"
    return "no answer"


def shown_sql(st: ScenarioStep) -> str:
    """The statement with its bound values in place, as a reader would write it."""
    return sq.inline(st.sql, sq.params_for(st.sql, st.target))


def _step_text(i: int, st: ScenarioStep, a: Answer | None, v: Verdict) -> list[str]:
    head = f"{i + 1}. {st.describe(v.scenario.sessions)}"
    return [f"{head}: {_outcome(a)}" if a else head, f"     {shown_sql(st)}"]


def text(verdicts: list[Verdict]) -> str:
    lines: list[str] = []
    replayed = [v for v in verdicts if v.replayed]
    for v in verdicts:
        sc = v.scenario
        waived = f" (waived: {sc.waived_by})" if sc.waived_by else ""
        lines.append(f"{sc.location}: {sc.code}{waived}: {sc.message}")
        if sc.unsupported:
            lines += [f"  not replayed: {sc.unsupported}", ""]
            continue
        lines.append("  sessions: " + ", ".join(f"{s.name} = {s.path}" for s in sc.sessions))
        lines.extend(f"  stand-in: {note}" for note in sc.stand_ins)
        for i, st in enumerate(sc.steps):
            a = v.answers[i] if i < len(v.answers) else None
            lines.extend("  " + x for x in _step_text(i, st, a, v))
        for e in v.errors:
            who = sc.sessions[e.session]
            lines.append(f"  Postgres answered {who.name} ({who.path}): {e.sqlstate} {e.message}")
            for raw, mapped in zip(e.detail, (*e.mapped, *([""] * len(e.detail))), strict=False):
                lines.append(f"    DETAIL: {raw}")
                if mapped:
                    lines.append(f"      = {mapped}")
            if e.hint:
                lines.append(f"    HINT: {e.hint}")
            if e.context:
                lines.append(f"    CONTEXT: {e.context}")
        if v.as_reported:
            lines.append(f"  as reported: {sc.expected} ({sc.why_expected})")
        else:
            lines.append(f"  NOT as reported: expected {sc.expected} ({sc.why_expected})")
            lines.extend(f"    - {d}" for d in v.differences)
        lines.append("")
    good = sum(1 for v in replayed if v.as_reported)
    skipped = len(verdicts) - len(replayed)
    summary = f"{len(replayed)} replayed, {good} as reported, {len(replayed) - good} not"
    if skipped:
        summary += f", {skipped} not replayable"
    lines.append(summary)
    return "\n".join(shown(line) for line in lines) + "\n"


def _answer_json(a: Answer) -> dict[str, Any]:
    return {
        "outcome": "error"
        if a.error
        else "dropped"
        if a.dropped
        else "waited"
        if a.waited
        else "granted"
        if a.done
        else "none",
        "waited": a.waited,
        "sqlstate": a.sqlstate or None,
        "message": a.message or None,
        "dropped": a.dropped or None,
    }


def as_json(verdicts: list[Verdict]) -> str:
    out = []
    for v in verdicts:
        sc = v.scenario
        out.append(
            {
                "index": v.index,
                "code": sc.code,
                "message": sc.message,
                "file": sc.location.file,
                "line": sc.location.line,
                "waived_by": sc.waived_by or None,
                "replayed": v.replayed,
                "not_replayed_because": sc.unsupported or None,
                "expected": sc.expected or None,
                "why_expected": sc.why_expected or None,
                "answer": v.answer or None,
                "as_reported": v.as_reported if v.replayed else None,
                "differences": v.differences,
                "stand_ins": list(sc.stand_ins),
                "sessions": [
                    {
                        "name": s.name,
                        "path": s.path,
                        "transaction_kind": s.transaction_kind,
                        "lock_timeout": s.lock_timeout,
                    }
                    for s in sc.sessions
                ],
                "steps": [
                    {
                        "session": sc.sessions[st.session].name,
                        "action": st.action,
                        "lock": st.lock,
                        "instance": st.target.instance,
                        "mode": st.mode,
                        "sql": st.sql,
                        "params": [p.value for p in sq.params_for(st.sql, st.target)],
                        **(_answer_json(v.answers[i]) if i < len(v.answers) else {}),
                    }
                    for i, st in enumerate(sc.steps)
                ],
                "errors": [
                    {
                        "session": sc.sessions[e.session].name,
                        "sqlstate": e.sqlstate,
                        "message": e.message,
                        "detail": list(e.detail),
                        "waits": list(e.mapped),
                        "hint": e.hint or None,
                        "context": e.context or None,
                    }
                    for e in v.errors
                ],
            }
        )
    doc = json.dumps({"replays": out}, indent=2, sort_keys=True, ensure_ascii=False)
    return _INVISIBLE.sub(_escaped, doc) + "\n"
