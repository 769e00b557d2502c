"""LD4xx: exceptions (waivers). A finding an exception matches is reported as waived; an
exception that matches nothing is stale and is itself a finding, like an unused `noqa`."""

from __future__ import annotations

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.records import replace
from lockdocs.rules.registry import describe

_LOCKS = """\
lockdocs: 1
page: {title: Locks}
issues: "https://tracker.invalid/issues/{number}"
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for no key update: every writer}
    instances: {order: ascending id}
"""
_PATHS = """\
group: Transfers
paths:
  transfer:
    title: Transfer between two accounts
    steps:
      - loop: both accounts
        order: ascending id
        steps:
          - take: account
"""


# Found by apply_waivers, which sees every other finding.
STALE = describe(
    "LD401",
    "stale-exception",
    Severity.ERROR,
    summary="An exception matches no finding.",
    what="Reports an exception in locks.yaml that no finding of this run matches.",
    why=(
        "A fixed deviation must not linger as a waiver: it would silently cover the next, "
        "different problem of the same rule and path, and the page would describe a deviation "
        "that no longer exists."
    ),
    example={
        "locks.yaml": _LOCKS
        + """\
exceptions:
  - rule: LD202
    path: transfer
    issue: 12
    why: transfers lock accounts in request order
""",
        "paths/transfers.yaml": _PATHS,
    },
    use_instead={
        "locks.yaml": (
            "exceptions:\n  - rule: LD202\n    path: transfer\n    issue: 12\n    why: transfers lock accounts in request order\n",
            "",
        ),
    },
)


def _matches(w: m.Waiver, d: Diagnostic) -> bool:
    if w.rule not in (d.code, d.rule_id):
        return False
    if w.path is not None and w.path not in d.paths:
        return False
    if w.branch is not None and w.branch not in d.branches:
        return False
    if w.taker is not None and w.taker not in d.takers:
        return False
    return w.lock is None or w.lock in d.locks


def matching(model: m.Model, d: Diagnostic) -> m.Waiver | None:
    """The first exception that waives a finding (for `lockdocs observe`'s LD8xx)."""
    return next((w for w in model.waivers if _matches(w, d)), None)


# Observed findings (LD8xx) come from `lockdocs observe`, never from a check: an exception
# for one is not stale because a check does not report it.
OBSERVED = "LD8"


def waiver_label(model: m.Model, w: m.Waiver) -> str:
    label = f"exception {w.index + 1}"
    if w.issue:
        label += f", #{w.issue}"
    return label


def apply_waivers(
    model: m.Model, diags: list[Diagnostic], overrides: dict[str, str]
) -> list[Diagnostic]:
    used: set[int] = set()
    out: list[Diagnostic] = []
    for d in diags:
        if d.code.startswith("LD0"):
            out.append(d)
            continue
        match = next((w for w in model.waivers if _matches(w, d)), None)
        if match is None:
            out.append(d)
            continue
        for w in model.waivers:
            if _matches(w, d):
                used.add(w.index)
        out.append(replace(d, waived_by=waiver_label(model, match)))
    setting = overrides.get(STALE.code)
    if setting == "off":
        return out
    stale = STALE.finder()
    severity = Severity(setting) if setting else None
    for w in model.waivers:
        if w.index in used or w.rule.startswith(OBSERVED):
            continue
        scope = " ".join(
            x
            for x in (
                f"path '{w.path}'" if w.path else "",
                f"lock '{w.lock}'" if w.lock else "",
                f"taker '{w.taker}'" if w.taker else "",
            )
            if x
        )
        out.append(
            stale(
                f"exception {w.index + 1} ({w.rule}{' on ' + scope if scope else ''}) "
                "matches no finding",
                w.location,
                "the deviation is gone: delete the exception (and close its issue"
                + (f" #{w.issue}" if w.issue else "")
                + ")",
                paths=(w.path,) if w.path else (),
                locks=(w.lock,) if w.lock else (),
                severity=severity,
            )
        )
    return out
