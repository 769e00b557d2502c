"""The columns an instance is named by, and what a loop's sort says about them: the words of
the declarations the analysis reads (the model layer, so resolving the declarations needs no
analysis).

A lock's instances are often named by columns of the rows a loop walks: an account lock keyed
by `account_id::text`, a balance lock keyed by (journal_id, account_id, currency). When the
declarations name those columns (the key's `parts:`, or `instances: {key: [...]}` where the
parts are prose), and a loop's `order:` names its sort (`ascending (account_id, currency,
journal_id)`), lockdocs knows two things a plain loop does not say:

- which instances one iteration takes: every take of a keyed lock is the current row's, so two
  locks that share a column agree on it within an iteration;
- how they move from one iteration to the next: the rows come sorted, so every leading run of
  the sort's columns (`(account_id)`, `(account_id, currency)`, ...) never decreases. A lock
  whose key is exactly such a leading run follows that order (it *refines* the lock's own
  order when the two name the same columns): its instances come in it, the same one possibly
  several times in a row.

Both are per column tuple (a *dimension*), and a hop of a wait cycle carries the relation its
held and wanted instances have on each: `<` for a sorted run (a wait is for a later instance),
`<=` for a later iteration of a sorted loop. A cycle whose every hop moves forward on one
dimension, and strictly on one of them, would need that dimension to come back to where it
started: it cannot happen (lockdocs.analysis.search).

The words are lockdocs' own (an order is `ascending` or `descending` and one column or a
parenthesised list; a key part is a column name, optionally with a `::type` cast), read with
plain string operations; anything else is prose, which ties nothing.
"""

from __future__ import annotations

from typing import NamedTuple


class Order(NamedTuple):
    direction: str  # ascending | descending
    columns: tuple[str, ...]

    def dimension(self, n: int | None = None) -> str:
        """The name of the leading `n` columns (all of them by default) as a dimension."""
        cols = self.columns if n is None else self.columns[:n]
        return f"{self.direction} ({', '.join(cols)})"


def _ident(text: str) -> str | None:
    t = text.strip().lower()
    if t and (t[0].isalpha() or t[0] == "_") and all(c.isalnum() or c == "_" for c in t):
        return t if t.isascii() else None
    return None


def parse_order(text: str | None) -> Order | None:
    """`ascending account_id`, `descending (account_id, currency)`; None for prose."""
    if not text:
        return None
    head, _, rest = text.strip().partition(" ")
    direction = head.lower()
    if direction not in ("ascending", "descending"):
        return None
    rest = rest.strip()
    if rest.startswith("(") and rest.endswith(")"):
        names = [_ident(p) for p in rest[1:-1].split(",")]
    else:
        names = [_ident(rest)]
    if not names or any(n is None for n in names):
        return None
    cols = tuple(n for n in names if n is not None)
    return Order(direction, cols) if len(set(cols)) == len(cols) else None


def part_column(part: str) -> str | None:
    """A key part that names a column: `account_id`, `account_id::text`."""
    name, _, cast = part.partition("::")
    if cast and _ident(cast.replace(" ", "_")) is None:
        return None
    return _ident(name)


def key_columns(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The columns a family's parts name, when every part names one; () otherwise."""
    cols = [part_column(p) for p in parts]
    if not cols or any(c is None for c in cols):
        return ()
    return tuple(c for c in cols if c is not None)


def same_order(a: str | None, b: str | None) -> bool:
    """Do two orders say the same (word for word, or the same direction and columns)?"""
    if a is None or b is None:
        return False
    if a == b:
        return True
    pa, pb = parse_order(a), parse_order(b)
    return pa is not None and pa == pb


def nested(orders: tuple[str | None, ...]) -> str | None:
    """The order of the rows a nest of loops visits, outermost first, when each is sorted by
    columns in one direction: an inner loop walks the rows of one outer row, so the nest is
    sorted by the outer columns, then the inner ones (`ascending account_id` around `ascending
    (currency, journal_id)` is `ascending (account_id, currency, journal_id)`). None when one
    of them is not so written."""
    parsed = [parse_order(o) for o in orders]
    if not parsed or any(p is None for p in parsed):
        return None
    direction = parsed[0].direction if parsed[0] else ""
    cols: list[str] = []
    for p in parsed:
        assert p is not None
        if p.direction != direction:
            return None
        cols.extend(c for c in p.columns if c not in cols)
    return Order(direction, tuple(cols)).dimension()


def followed(loop_order: str | None, key: tuple[str, ...]) -> Order | None:
    """The order a keyed lock's instances follow in a loop sorted by `loop_order`: the sort's
    leading columns that are exactly the key's (in the sort's order), or None when no leading
    run of the sort names the whole key."""
    order = parse_order(loop_order)
    if order is None or not key:
        return None
    want = set(key)
    for n in range(1, len(order.columns) + 1):
        lead = set(order.columns[:n])
        if not lead <= want:
            return None
        if lead == want:
            return Order(order.direction, order.columns[:n])
    return None


def dimensions(loop_order: str | None, a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    """The leading runs of a loop's sort that both keys name: the dimensions on which a later
    iteration's instance of one is never before an earlier iteration's of the other."""
    order = parse_order(loop_order)
    if order is None or not a or not b:
        return []
    both = set(a) & set(b)
    out: list[str] = []
    for n in range(1, len(order.columns) + 1):
        if not set(order.columns[:n]) <= both:
            break
        out.append(order.dimension(n))
    return out


def dimension_columns(dim: str) -> set[str]:
    """The columns a dimension (Order.dimension) names."""
    return set(dim.partition("(")[2].rstrip(")").split(", "))


def dimension_of(order_text: str | None) -> str | None:
    """The dimension a sorted run moves along: its order's columns, or its words."""
    if not order_text:
        return None
    parsed = parse_order(order_text)
    return parsed.dimension() if parsed is not None else order_text
