"""Issue 24's fixtures against the project's exhaustive oracle (tests/oracle).

Each fixture of issue 24's shapes (tests/fixtures/specs, with exact expected findings) has its
own spec in the oracle's language here, with the same lock and path names, written from what
the declarations mean and what a live server does (tests/test_pg_verdicts.py measures the
Postgres behaviour the specs rely on), not from lockdocs' analysis. The oracle runs every
interleaving of two to four transactions of it; lockdocs' findings on the fixture must explain
exactly the deadlocks found: none missed, none reported without one, and the paths named.
The live-server replays of the same fixtures are tests/test_pg_replay.py (every reporting
fixture), tests/test_pg_silent.py (every silent one) and tests/test_pg_verdicts.py.
"""

from __future__ import annotations

from pathlib import Path as FsPath

import pytest

from lockdocs import api
from oracle import Lock, Loop, Path, Spec, Take, explore
from oracle.compare import ORDER_CODES, Finding, compare

SPECS = FsPath(__file__).resolve().parent / "fixtures" / "specs"

KS, NKU, UPD = "for key share", "for no key update", "for update"

_POSTING = Lock("posting", "advisory", True, ("exclusive",))
_ACCOUNT_ROW = Lock("account", "row", True, (KS, UPD))


def _migrations(singleton: bool) -> Spec:
    return Spec(
        (
            Lock("migrate", "advisory", singleton, ("exclusive",)),
            Lock("version", "row", False, (UPD,)),
        ),
        (
            Path(
                "migrate",
                (Take("migrate", "exclusive"), Loop("arbitrary", (Take("version", UPD),))),
            ),
        ),
    )


def _entries(rechecks: bool) -> Spec:
    # The second update's foreign-key check, measured on the server, is a FOR KEY SHARE take.
    second = (Take("account", KS),) if rechecks else ()
    return Spec(
        (_ACCOUNT_ROW, _POSTING),
        (
            Path("correct-entry", (Take("posting", "exclusive"), *second)),
            Path("close-account", (Take("account", UPD), Take("posting", "exclusive"))),
        ),
    )


CASES: dict[str, Spec] = {
    # shape 5: a fixed key is one lock, whatever computes it
    "silent-fixed-application-key-gates": _migrations(singleton=True),
    "report-application-key-family-does-not-gate": _migrations(singleton=False),
    # shape 4: the foreign-key check of a second update
    "report-fk-recheck-after-own-update": _entries(rechecks=True),
    "silent-fk-update-after-another-table": _entries(rechecks=False),
    # OPEN_FN's child-under-two-parents, as a team would name it
    "report-child-under-two-parents": Spec(
        (
            Lock("tenant", "advisory", False, ("shared",)),
            Lock("setting", "row", False, (UPD, NKU), within="tenant"),
        ),
        (
            Path(
                "copy-setting",
                (
                    Take("tenant", "shared", "a"),
                    Take("setting", UPD, under="a"),
                    Take("tenant", "shared"),
                    Take("setting", NKU),
                ),
            ),
        ),
    ),
}


def fixture_findings(case: FsPath) -> list[Finding]:
    """lockdocs' lock-order findings on a fixture folder, in-process."""
    model, diags = api.load(case)
    assert model is not None, [d.message for d in diags]
    return [
        Finding(d.code, tuple(d.locks), tuple(d.paths), d.message)
        for d in api.analyse(model)
        if d.code in ORDER_CODES
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_oracle_agrees_with_the_fixture(name: str) -> None:
    case = SPECS / name
    assert (case / "expected.txt").is_file(), name
    spec = CASES[name]
    result = explore(spec)
    assert result.complete
    findings = fixture_findings(case)
    cmp = compare(result.deadlocks, findings)
    assert not cmp.missed, [d.describe() for d in cmp.missed]
    assert not cmp.unconfirmed, [str(f) for f in cmp.unconfirmed]
    assert not cmp.wrong_paths, [str(f) for f in cmp.wrong_paths]
    # a silent fixture is one the oracle finds no deadlock in, a reporting one one it does
    assert bool(result.deadlocks) == name.startswith("report-"), name
