"""The pieces several rules' examples share: a project's first lines, the ledger row and a path
that posts under it, the fleet lockset and a path that holds it. Each example still reads as a
whole project on the rules page; its common parts are written once, here."""

from __future__ import annotations

HEAD = "lockdocs: 1\npage: {title: Locks}\n"

LEDGER_ROW = """\
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for update: every writer}
"""

# locks.yaml with the ledger row alone.
LEDGER = HEAD + "locks:\n" + LEDGER_ROW

# A path that takes the ledger row.
LEDGER_PATH = """\
group: Ledger
paths:
  post:
    title: Post an entry
    steps:
      - take: ledger
"""

ACCOUNT_ROW = """\
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for no key update: writers}
"""

FLEET_LOCKSET = """\
  fleet:
    title: Fleet lockset
    kind: memory
    modes: {exclusive: processing}
"""

# A path that holds the fleet lockset over a write, and releases it after the commit.
FLEET_PATH = """\
group: Fleets
paths:
  process:
    title: Process a fleet
    steps:
      - take: fleet
      - write: fleet status
      - commit
      - release: fleet
"""
