"""LD204 and LD209: where the analysis stopped at one of its bounds (the cycle search's
states, a path's work, the whole run's work and time) and says so as a finding, rather than
passing over what it could not check."""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.rules.context import CheckContext
from lockdocs.rules.finder import Finder
from lockdocs.rules.registry import rule
from lockdocs.rules.witnesses import where


@rule(
    "LD204",
    "cycle-search-unfinished",
    Severity.ERROR,
    summary="The cycle search stopped at its budget: a deadlock there may be unreported.",
    what=(
        "The search for cycles visits, for each hop of the graph of waits, every state (a hop "
        "with the gate locks claimed so far) it can reach, so it either finds the shortest "
        "cycle no gate cuts or proves there is none. When one search needs more states than "
        "`limits.cycle_search` allows, it stops and this reports the component (its locks) it "
        "could not finish, instead of passing over it in silence. The whole analysis of a run "
        "has a budget too (`limits.analysis_work`, and `limits.analysis_seconds` as a "
        "backstop): when it runs out during the searches, each part of the graph not yet "
        "searched is reported the same way."
    ),
    why=(
        'A check that gives up quietly says "0 errors" about a part of the graph it never '
        "looked at. A stopped search is a finding of its own: the locks it names may still "
        "deadlock."
    ),
    example={
        "locks.yaml": """\
lockdocs: 1
page: {title: Locks}
limits: {cycle_search: 2}
locks:
  a: {title: A, kind: advisory, key: {hashtextextended: {text: a}}, modes: {exclusive: x}}
  b: {title: B, kind: advisory, key: {hashtextextended: {text: b}}, modes: {exclusive: x}}
  c: {title: C, kind: advisory, key: {hashtextextended: {text: c}}, modes: {exclusive: x}}
""",
        "paths/ring.yaml": """\
group: Ring
paths:
  ab: {title: A then B, steps: [{take: a}, {take: b}]}
  bc: {title: B then C, steps: [{take: b}, {take: c}]}
  ca: {title: C then A, steps: [{take: c}, {take: a}]}
""",
    },
    use_instead={
        "locks.yaml": ("limits: {cycle_search: 2}\n", ""),
        "paths/ring.yaml": (
            "  ca: {title: C then A, steps: [{take: c}, {take: a}]}\n",
            "  ca: {title: C then A, steps: [{take: a}, {take: c}]}\n",
        ),
    },
)
def check_unfinished(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        for u in ctx.cycles(backend)[1]:
            on = f" on {backend}" if backend else ""
            shown = ", ".join(u.locks[:12]) + (
                f" and {len(u.locks) - 12} more" if len(u.locks) > 12 else ""
            )
            smaller = (
                "make the component smaller: take these locks in one order, or hold a gate "
                "lock around the paths that do not"
            )
            if u.reason == "search":
                message = f"the cycle search{on} stopped at its budget in the component of {shown}"
                hint = "raise limits.cycle_search in locks.yaml, or " + smaller
                detail = f"visited {u.states:,} states without finishing."
            else:
                spent = "time" if u.reason == "time" else "work"
                message = (
                    f"the analysis's {spent} budget ran out before the cycle search{on} "
                    f"finished the component of {shown}"
                )
                hint = (
                    f"raise limits.analysis_{'seconds' if spent == 'time' else 'work'} in "
                    "locks.yaml, or " + smaller
                )
                if spent == "time":
                    hint += " (a stop on time depends on the machine's speed)"
                detail = "had not finished when the whole analysis's budget ran out."
            yield finding(
                message + "; a deadlock among these locks may be unreported",
                u.start.location,
                hint,
                details=(
                    f"The search through {u.start.src} -> {u.start.dst} ({u.start.path} at "
                    f"{where(u.start)}) {detail}",
                ),
                paths=(u.start.path,),
                locks=u.locks,
            )


@rule(
    "LD209",
    "analysis-limit",
    Severity.ERROR,
    summary="A path is too large to analyse within the analysis's bounds; the run stops.",
    what=(
        "Flattening a path walks each of its steps once per state it can be in (branches, "
        "loops and run: steps inlined). When one path needs more work than `limits.path_work` "
        "allows, all paths together more than twenty times that, or the flattening takes the "
        "rest of the whole analysis's budget (`limits.analysis_work`, and "
        "`limits.analysis_seconds` as a backstop), the analysis stops there and reports the "
        "path, and the run ends as bad input (exit 2): a partial analysis would pass over "
        "deadlocks. The page walks every path with the paths it runs (a long chain of run: "
        "steps costs the square of its length there), within a budget of the same size; past "
        "it the page is not rendered and the path where it stopped is reported the same way."
    ),
    why=(
        "Without a bound, a few dozen lines of nested run: steps can take minutes and "
        "gigabytes; with a silent bound, the locks past it would never be checked."
    ),
    example={
        "locks.yaml": """\
lockdocs: 1
page: {title: Locks}
limits: {path_work: 3}
locks:
  a: {title: A, kind: advisory, key: {hashtextextended: {text: a}}, modes: {exclusive: x}}
  b: {title: B, kind: advisory, key: {hashtextextended: {text: b}}, modes: {exclusive: x}}
""",
        "paths/p.yaml": """\
group: P
paths:
  p: {title: P, steps: [{take: a}, {take: b}, {take: a}, {take: b}]}
""",
    },
    use_instead={"locks.yaml": ("limits: {path_work: 3}\n", "")},
)
def check_refused(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        for r in ctx.refusals(backend):
            on = f" on {backend}" if backend else ""
            split = (
                "split the path (fewer run: steps nested, fewer loops and branches inlined "
                "into one path)"
            )
            hint = f"{split}, or raise limits.path_work in locks.yaml"
            if r.scope == "path":
                what = f"path '{r.path}' needs more than {r.budget:,} units of work to analyse{on}"
            elif r.scope == "total":
                what = f"the paths up to '{r.path}' need more than {r.budget:,} units of work{on}"
            elif r.scope == "time":
                what = (
                    f"the analysis's time budget ran out at path '{r.path}'{on} "
                    "(limits.analysis_seconds; where it stops depends on the machine's speed)"
                )
                hint = f"{split}, or raise limits.analysis_seconds in locks.yaml"
            else:
                what = (
                    f"the analysis's work budget ({r.budget:,} units, limits.analysis_work) "
                    f"ran out at path '{r.path}'{on}"
                )
                hint = (
                    f"{split}; a path that many others run is walked once per caller; or raise "
                    "limits.analysis_work in locks.yaml"
                )
            yield finding(
                what + "; the analysis stopped here",
                r.location,
                hint,
                paths=(r.path,),
            )
