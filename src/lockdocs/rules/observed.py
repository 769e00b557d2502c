"""LD8xx: the running application against the declarations. `lockdocs observe LOG...` reads
a server log written with log_statement = 'all' and reports these; `lockdocs check` never
does (it reads no log).

The reading lives in lockdocs/observe/ (it sits above the rules); the codes, their docs and
their examples are registered here like every other rule's. Each example holds the log a
small project's test run wrote (`server.log`); the rules test runs `lockdocs observe` on it.
An exception in locks.yaml can waive an LD8xx finding by path and lock; one that matches
nothing in a log is not stale (the log may not have run that path).
"""

from __future__ import annotations

from lockdocs.diagnostics import Severity
from lockdocs.rules.examples import ACCOUNT_ROW, HEAD
from lockdocs.rules.registry import describe

_LOCKS = (
    HEAD
    + "locks:\n"
    + ACCOUNT_ROW.replace("{for no key update: writers}", "{for update: transfers}")
    + """\
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for update: postings}
"""
)

_PATHS = """\
group: Money
paths:
  transfer:
    title: Transfer
    steps:
      - take: account
      - take: ledger
"""

_P = "2026-11-30 10:00:0{s}.000 UTC [{pid}] "


def _log(*sessions: tuple[int, list[str]]) -> str:
    lines = []
    for i, (pid, statements) in enumerate(sessions):
        for st in statements:
            lines.append(_P.format(s=i, pid=pid) + "LOG:  statement: " + st)
    return "\n".join(lines) + "\n"


_TRANSFER = [
    "BEGIN",
    "SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE",
    "SELECT 1 FROM app.ledgers WHERE id = 7 FOR UPDATE",
    "COMMIT",
]
_REVERSED = [
    "BEGIN",
    "SELECT 1 FROM app.ledgers WHERE id = 7 FOR UPDATE",
    "SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE",
    "COMMIT",
]


describe(
    "LD801",
    "observed-order",
    Severity.WARNING,
    summary="A logged transaction took two declared locks in an order no declared path has.",
    what="Collects, from every transaction in the log, each lock taken while another was held "
    "(held A, then took B), by lock class as lockdep does. Reports an order between two "
    "declared locks that no declared path takes, at the log line where B was taken, with the "
    "line where A was; one finding per order, however often it ran. A take that orders "
    "nothing in the analysis orders nothing here: a lock the transaction's path takes only on "
    "a row it inserted itself (inserted: true), and a foreign-key re-check the log cannot "
    "confirm (an update of a table the transaction wrote before).",
    why="An order the declarations do not have is invisible to `lockdocs check`: the cycle it may "
    "close with another path, and the page's account of the order, are both incomplete. The "
    "declarations are missing a path or a step.",
    example={
        "locks.yaml": _LOCKS,
        "paths/money.yaml": _PATHS,
        "server.log": _log((101, _TRANSFER), (102, _REVERSED)),
    },
    use_instead={
        "paths/money.yaml": _PATHS
        + "  audit:\n    title: Audit\n    steps:\n      - take: ledger\n      - take: account\n",
    },
)

describe(
    "LD802",
    "observed-deadlock",
    Severity.ERROR,
    summary="Logged transactions took locks in orders that can deadlock with each other or with the "
    "declared paths.",
    what="Gives each distinct sequence of locks the log shows a path of its own, located at its log "
    "lines, and runs the same cycle search as LD201 over them and the declared paths "
    "together: modes, gate locks and row queues included. Reports each cycle that needs an "
    "observed order and that `lockdocs check` does not already report on the same locks, "
    "with its proof: the transactions' log lines, hop by hop. It is reported at the log line "
    "that takes the undeclared order, beside its LD801. `lockdocs observe --propose` "
    "drafts the observed paths, and `lockdocs replay` runs the cycle on a live server once "
    "they are declared.",
    why="It is a deadlock the declarations missed: the application can run it today, and under "
    "load one of the transactions fails with 40P01.",
    example={
        "locks.yaml": _LOCKS,
        "paths/money.yaml": _PATHS,
        "server.log": _log((101, _TRANSFER), (102, _REVERSED)),
    },
    use_instead={"server.log": _log((101, _TRANSFER), (102, _TRANSFER))},
)

describe(
    "LD803",
    "observed-undeclared-lock",
    Severity.ERROR,
    summary="A logged statement took an explicit row or table lock on a table no lock declares.",
    what="Maps every lock a logged statement takes to the declared locks: a locking clause (FOR "
    "UPDATE and the other strengths) or LOCK TABLE on a table no declared lock names is "
    "reported at its log line, one finding per statement shape. The row locks UPDATE and "
    "DELETE take on such a table are left alone, as LD702 leaves them.",
    why="A lock the page does not list is the one nobody thinks of when the next deadlock comes; "
    "the code takes it today.",
    example={
        "locks.yaml": _LOCKS,
        "paths/money.yaml": _PATHS,
        "server.log": _log(
            (101, ["BEGIN", "SELECT 1 FROM app.invoices WHERE id = 3 FOR UPDATE", "COMMIT"])
        ),
    },
    use_instead={
        "locks.yaml": _LOCKS
        + "  invoice:\n    title: Invoice row\n    kind: row\n    table: app.invoices\n"
        "    modes: {for update: billing}\n",
    },
)

describe(
    "LD804",
    "observed-departure",
    Severity.WARNING,
    summary="A transaction of a known path took a lock its steps lack, in another mode, or in "
    "another order.",
    what="For a transaction whose path is known (a `lockdocs_path` sqlcommenter tag, a tag or an "
    "application_name that locks.yaml's `observe:` maps, or an application_name that is a "
    "path id), compares the locks it took, in order, with the path's steps: a declared lock "
    "the steps do not take, a mode the steps do not take it in, or two locks in the order "
    "the steps reverse. Reported at the log line, naming the path's step. A lock the steps "
    "take only on a row the transaction inserted itself (inserted: true) is no departure, in "
    "any order.",
    why="The page documents what the code does not do: a reviewer reasons about orders that are "
    "not the real ones, and the analysis checks a path that does not run.",
    example={
        "locks.yaml": _LOCKS,
        "paths/money.yaml": _PATHS,
        "server.log": _log(
            (
                101,
                [
                    "BEGIN",
                    "SELECT 1 FROM app.ledgers WHERE id = 7 FOR UPDATE "
                    "/*lockdocs_path='transfer'*/",
                    "SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE",
                    "COMMIT",
                ],
            )
        ),
    },
    use_instead={
        "server.log": _log(
            (
                101,
                [
                    "BEGIN",
                    "SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE "
                    "/*lockdocs_path='transfer'*/",
                    "SELECT 1 FROM app.ledgers WHERE id = 7 FOR UPDATE",
                    "COMMIT",
                ],
            )
        ),
    },
)

_ADVISORY = """\
lockdocs: 1
page: {title: Locks}
locks:
  job:
    title: Job
    kind: advisory
    key: {hashtextextended: {prefix: "job:", parts: [job id], seed: 0}}
    modes: {exclusive: the runner}
  tenant:
    title: Tenant
    kind: advisory
    key: {hashtextextended: {prefix: "tenant:", parts: [tenant id], seed: 0}}
    modes: {exclusive: the billing run}
"""

describe(
    "LD805",
    "observed-unknown-key",
    Severity.ERROR,
    summary="A logged statement took an advisory lock whose key no declared key produces.",
    what="Computes each advisory key from the statement's literals and the parameters the log "
    "gives for it (hashtext and hashtextextended exactly as Postgres computes them) and "
    "looks for the declared lock whose fixed key has that tag, or the families whose "
    "construction, prefix and seed can produce it. Reports a key that fits none, at its log "
    "line, one finding per statement shape.",
    why="An advisory lock outside every family is a lock the page does not list, and its keys "
    "may meet a family's keys: two unrelated objects would then wait on each other.",
    example={
        "locks.yaml": _ADVISORY,
        "server.log": _log(
            (101, ["SELECT pg_advisory_xact_lock(hashtextextended('jobs-' || '42', 0))"])
        ),
    },
    use_instead={
        "server.log": _log(
            (101, ["SELECT pg_advisory_xact_lock(hashtextextended('job:' || '42', 0))"])
        ),
    },
)

_BARE = """\
lockdocs: 1
page: {title: Locks}
locks:
  order:
    title: Order
    kind: advisory
    key: {hashtext: {parts: [order id]}}
    modes: {exclusive: checkout}
  refund:
    title: Refund
    kind: advisory
    key: {hashtext: {parts: [refund id]}}
    modes: {exclusive: refunds}
"""
_BARE_PATHS = """\
group: Shop
paths:
  checkout:
    title: Checkout
    steps:
      - take: order
  refund:
    title: Refund
    steps:
      - take: refund
"""

describe(
    "LD806",
    "observed-key-clash",
    Severity.ERROR,
    summary="Two advisory families produced the same key in the log.",
    what="Keeps every advisory key the log shows with the family its transaction's path says it "
    "belongs to, and reports a key two families produced: the second place, naming the "
    "first.",
    why="The same key is the same lock: an order and a refund that hash to it wait on each "
    "other, and a cycle through them is one no declaration shows. Give each family a prefix "
    "of its own (LD101).",
    example={
        "locks.yaml": _BARE,
        "paths/shop.yaml": _BARE_PATHS,
        "server.log": _log(
            (101, ["SELECT pg_advisory_xact_lock(hashtext('7')) /*lockdocs_path='checkout'*/"]),
            (102, ["SELECT pg_advisory_xact_lock(hashtext('7')) /*lockdocs_path='refund'*/"]),
        ),
    },
    use_instead={
        "server.log": _log(
            (101, ["SELECT pg_advisory_xact_lock(hashtext('7')) /*lockdocs_path='checkout'*/"]),
            (102, ["SELECT pg_advisory_xact_lock(hashtext('8')) /*lockdocs_path='refund'*/"]),
        ),
    },
)

describe(
    "LD807",
    "observed-cut",
    Severity.INFO,
    summary="The log begins or ends inside a transaction, or lines of a session are missing.",
    what="Reports a transaction the log shows only part of: one whose COMMIT comes before any "
    "BEGIN of its session (the log began inside it), one still open at the end of the log, "
    "and one whose session's line numbers jump (lines lost). Its locks are still read, as "
    "far as the log shows them; nothing is guessed past the cut.",
    why="The orders of a cut transaction are incomplete, so a finding about it may miss a lock "
    "it held; start the log before the test run and stop it after.",
    example={
        "locks.yaml": _LOCKS,
        "paths/money.yaml": _PATHS,
        "server.log": _log((101, _TRANSFER[:3])),
    },
    use_instead={"server.log": _log((101, _TRANSFER))},
)

describe(
    "LD808",
    "observed-unread",
    Severity.WARNING,
    summary="A logged statement that lockdocs cannot read, and the server ran.",
    what="Reads every logged statement with PostgreSQL 15's parser (pglast). A statement it "
    "cannot parse, which the server ran without an error (newer syntax, or a statement cut "
    "by the log), is reported at its log line, once per text: the locks it took are not "
    "known.",
    why="A lock lockdocs did not read is one it cannot check; the finding says where the reading "
    "stops, so a clean run never rests on statements nobody read.",
    example={
        "locks.yaml": _LOCKS,
        "paths/money.yaml": _PATHS,
        "server.log": _log((101, ["SELECT 1 FROM app.accounts WHERE FOR UPDATE"])),
    },
    use_instead={"server.log": _log((101, ["SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE"]))},
)

describe(
    "LD809",
    "observed-unknown-path",
    Severity.WARNING,
    summary="A logged statement's lockdocs_path tag names no declared path.",
    what="Reads the `lockdocs_path` sqlcommenter tag of every statement; a value that is not a "
    "declared path id is reported once per value, at its first log line.",
    why="The tag is how the log says which path ran: a misspelt or stale one leaves the "
    "transaction matched by guesswork, and its departures unchecked.",
    example={
        "locks.yaml": _LOCKS,
        "paths/money.yaml": _PATHS,
        "server.log": _log(
            (
                101,
                [
                    "BEGIN",
                    "SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE "
                    "/*lockdocs_path='transfers'*/",
                    "COMMIT",
                ],
            )
        ),
    },
    use_instead={"server.log": _log((101, _TRANSFER))},
)
