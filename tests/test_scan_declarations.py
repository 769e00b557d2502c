"""Declaring what the code does is clean (issue 25 items 4 and 5): a function that takes one
lock twice is declared as two takes through one via; a step's via that names nothing is LD701;
waivers are written in the language of the file (SQL, Python, Go), a stale one weighs what a
stale exception weighs, and an exception can name one taker; LD702 says which kind of lock a
table lacks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_project
from lockdocs.api import check
from lockdocs.diagnostics import Diagnostic

LOCKS = """\
lockdocs: 1
page: {title: Locks}
code: ["db/*.sql"]
locks:
  job-row:
    title: Job row
    kind: row
    table: app.jobs
    modes: {for update: claiming, for no key update: the state change}
"""
CLAIM = """\
CREATE FUNCTION app.claim(p_id bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM app.jobs WHERE id = p_id FOR UPDATE;
  UPDATE app.jobs SET state = 'running' WHERE id = p_id;
END
$$;
"""


def _paths(*steps: str) -> str:
    body = "".join(f"      - {s}\n" for s in steps)
    return f"group: Jobs\npaths:\n  claim:\n    title: Claim a job\n    steps:\n{body}"


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKDOCS_CACHE", "off")


def _check(tmp_path: Path, files: dict[str, str]) -> list[Diagnostic]:
    result = check(write_project(tmp_path / "p", files), drift=False)
    assert not result.bad_input, result.diagnostics
    return [d for d in result.diagnostics if d.code.startswith(("LD7", "LD4"))]


def test_one_lock_taken_twice_through_one_via_in_order(tmp_path: Path) -> None:
    paths = _paths(
        "{take: job-row, mode: for update, via: app.claim}",
        "{take: job-row, mode: for no key update, via: app.claim}",
        "commit",
    )
    files = {"locks.yaml": LOCKS, "paths/jobs.yaml": paths, "db/f.sql": CLAIM}
    assert _check(tmp_path / "a", files) == []  # main: a false LD703 on the second take
    # in the wrong order, each take is held to its own statement
    swapped = paths.replace("mode: for update,", "mode: X,").replace(
        "mode: for no key update,", "mode: for update,"
    )
    swapped = swapped.replace("mode: X,", "mode: for no key update,")
    found = _check(tmp_path / "b", {**files, "paths/jobs.yaml": swapped})
    assert sorted((d.code, d.location.line) for d in found) == [("LD703", 3), ("LD703", 4)]
    # the hint names the file the declared mode is written in
    assert all("mode in paths/jobs.yaml" in d.hint for d in found), [d.hint for d in found]


def test_a_mode_from_the_lock_points_at_locks_yaml(tmp_path: Path) -> None:
    locks = LOCKS.replace(
        "{for update: claiming, for no key update: the state change}", "{for share: readers}"
    )
    locks += "    taken_by:\n      - {name: app.claim, kind: sql-function}\n"
    found = _check(tmp_path, {"locks.yaml": locks, "db/f.sql": CLAIM})
    (d,) = [d for d in found if d.code == "LD703"]
    assert "takes 'job-row' FOR UPDATE, but it is declared FOR SHARE" in d.message
    assert "mode in locks.yaml" in d.hint


def test_a_step_via_that_names_nothing_is_ld701(tmp_path: Path) -> None:
    paths = _paths("{take: job-row, mode: for update, via: app.clam}", "commit")
    locks = LOCKS + "    taken_by:\n      - {name: app.claim, kind: sql-function}\n"
    found = _check(tmp_path, {"locks.yaml": locks, "paths/jobs.yaml": paths, "db/f.sql": CLAIM})
    (d,) = [d for d in found if d.code == "LD701"]
    assert d.location.file == "paths/jobs.yaml" and d.location.line == 6
    assert "via 'app.clam'" in d.message and "names nothing in the scanned code" in d.message
    assert d.hint.startswith("did you mean 'app.claim'?")


def test_a_go_function_via_is_not_looked_up_without_go(tmp_path: Path) -> None:
    # as for a taker of kind function: with no Go or Python scanned, it cannot be found
    paths = _paths("{take: job-row, mode: for update, via: [claimNext, app.claim]}", "commit")
    locks = LOCKS + "    taken_by:\n      - {name: app.claim, kind: sql-function}\n"
    files = {"locks.yaml": locks, "paths/jobs.yaml": paths, "db/f.sql": CLAIM}
    assert not [d for d in _check(tmp_path / "a", files) if d.code == "LD701"]
    alone = paths.replace("[claimNext, app.claim]", "claimNext")
    assert not [
        d for d in _check(tmp_path / "b", {**files, "paths/jobs.yaml": alone}) if d.code == "LD701"
    ]


PY = """\
class Jobs:
    def claim(self, cur):
        # lockdocs: ignore LD702 claimed under the queue's advisory lock
        cur.execute(
            "SELECT id FROM app.jobs "
            "WHERE id = %s FOR UPDATE"
        )

    def peek(self, cur):
        # lockdocs: ignore LD702 nothing here locks any more
        cur.execute("SELECT id FROM app.jobs WHERE id = %s")

    def unwaived(self, cur):
        cur.execute("SELECT id FROM app.jobs WHERE id = %s FOR SHARE")
"""
GO = """\
package jobs

func (s *Store) Claim() error {
	// lockdocs: ignore LD702 claimed under the queue's advisory lock
	_, err := s.db.Exec(ctx, `SELECT id FROM app.jobs
		WHERE id = $1 FOR UPDATE`, id)
	row := s.db.QueryRow(ctx,
		// lockdocs: ignore LD702 the second one, waived at its literal
		"SELECT id FROM app.jobs WHERE id = $1 FOR NO KEY UPDATE", id)
	// lockdocs: ignore
	s.db.Exec(ctx, "SELECT id FROM app.jobs WHERE id = $1 FOR SHARE")
	return err
}
"""


def test_waivers_in_python_and_go_comments_above_the_call(tmp_path: Path) -> None:
    files = {"locks.yaml": LOCKS.replace('["db/*.sql"]', '["code/*"]'), "code/jobs.py": PY}
    files["code/jobs.go"] = GO
    found = _check(tmp_path, files)
    waived = sorted((d.location.file, d.location.line) for d in found if d.waived_by)
    assert waived == [("code/jobs.go", 5), ("code/jobs.go", 9), ("code/jobs.py", 5)]
    open_ = sorted((d.code, d.location.file, d.location.line) for d in found if not d.waived_by)
    assert open_ == [
        ("LD702", "code/jobs.go", 11),  # the bad waiver waives nothing
        ("LD702", "code/jobs.py", 14),
        ("LD707", "code/jobs.go", 10),
        ("LD708", "code/jobs.py", 10),  # a stale waiver: an error, as a stale exception is
    ]
    by_code = {d.code: d for d in found if not d.waived_by}
    assert by_code["LD708"].blocking
    assert "'// lockdocs: ignore LD7xx" in by_code["LD707"].hint
    python_hint = next(
        d.hint for d in found if d.location.file == "code/jobs.py" and d.code == "LD702"
    )
    assert "'# lockdocs: ignore LD702 <reason>' on the line above the statement" in python_hint


def test_a_stale_sql_waiver_fails_the_check(tmp_path: Path) -> None:
    sql = "-- lockdocs: ignore LD703 written before the mode was fixed\nSELECT 1;\n"
    found = _check(tmp_path, {"locks.yaml": LOCKS, "db/q.sql": sql})
    (d,) = found
    assert d.code == "LD708" and d.blocking


def test_an_exception_names_one_taker(tmp_path: Path) -> None:
    locks = LOCKS + (
        "    taken_by:\n      - {name: LockJob, kind: query}\n      - {name: LockJobs, kind: query}\n"
        "exceptions:\n"
        "  - {rule: LD701, lock: job-row, taker: LockJob, why: moved to a service not scanned}\n"
        "  - {rule: LD701, taker: Gone, why: stale}\n"
    )
    found = _check(tmp_path, {"locks.yaml": locks, "db/q.sql": "SELECT 1;\n"})
    result = {(d.code, d.location.line, bool(d.waived_by)) for d in found}
    assert result == {("LD701", 11, True), ("LD701", 12, False), ("LD401", 15, False)}
    stale = next(d for d in found if d.code == "LD401")
    assert "taker 'Gone'" in stale.message


def test_ld702_names_the_kind_a_table_lacks(tmp_path: Path) -> None:
    locks = LOCKS.replace(
        "  job-row:",
        "  jobs-table:\n    title: Jobs table\n    kind: table\n    table: app.jobs\n"
        "    modes: {share row exclusive: imports}\n  job-row:",
    ).replace("table: app.jobs\n    modes: {for update", "table: app.other\n    modes: {for update")
    sql = "-- name: Peek :one\nSELECT id FROM app.jobs WHERE id = $1 FOR SHARE;\n"
    (d,) = [
        d for d in _check(tmp_path, {"locks.yaml": locks, "db/q.sql": sql}) if d.code == "LD702"
    ]
    assert "no declared row lock is on app.jobs ('jobs-table' on it is a table lock)" in d.message
