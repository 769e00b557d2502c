"""A logged statement's locks -> the declared locks they are (or an undeclared one).

A row lock belongs to the declared row lock of its table; an UPDATE takes FOR UPDATE when it
sets a column of a unique key the scanned DDL of `code:` shows, else FOR NO KEY UPDATE; an
INSERT or UPDATE of a child table that a declared `references:` names takes FOR KEY SHARE on
the parent's lock, and an UPDATE that leaves the referencing column alone takes it again when
its transaction wrote the table before (`rechecks`: Postgres re-checks the foreign keys of a
row version the transaction created itself; the log cannot say whether it is the same row, so
such a take is a possible one, `Took.recheck`); LOCK TABLE and DDL take table locks. An advisory lock belongs to the lock
whose fixed key has its tag, or to the families whose construction, prefix and seed fit the
key computed from the statement (several bare families fit one key: the lock is then any of
them, and the transaction's path may tell which). A call of a SQL function that `code:`
defines takes what its body takes, as the scan found it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lockdocs import model as m
from lockdocs import pghash
from lockdocs.postgres.sqlread import AdvisoryCall, KeyPart, LockSpec, advisory
from lockdocs.scan.collect import Item, ScanResult, same_table
from lockdocs.scan.found import KeyShape


@dataclass(frozen=True, slots=True)
class Seen:
    """A lock as the log shows it: the declared locks it can be (none: undeclared), and how
    to name it otherwise."""

    locks: tuple[str, ...]
    kind: str  # row | table | advisory
    label: str  # "row lock on core.jobs", "advisory hashtext('job:...')", ...
    table: str | None = None
    explicit: bool = True  # a locking clause, LOCK TABLE or an advisory call (not implied)
    tag: tuple[int, int, int] | None = None  # an advisory key's tag, when computed
    key_text: str | None = None  # the hashed text (or its known start), for messages
    why: str = ""  # for an undeclared lock: why no declared lock fits


@dataclass(frozen=True, slots=True)
class Took:
    """One lock one statement took: what, in which mode, and how."""

    seen: Seen
    mode: str
    option: str | None = None  # nowait | skip locked | try
    how: str = ""  # the SQL that takes it: SELECT ... FOR UPDATE, UPDATE, a function's body
    via: str = ""  # the function of code: whose body takes it
    order_by: tuple[str, ...] = ()
    many: bool = False  # one statement locked several rows (an array of keys as a parameter)
    call: AdvisoryCall | None = None  # an advisory lock's key, as computed
    static: AdvisoryCall | None = None  # and as its statement's text alone gives it
    # a foreign-key re-check of an UPDATE of this child table, taken only if the row is one
    # its transaction wrote before (the log cannot tell): a possible take, never a certain one
    recheck: str | None = None


def _text_of(part: KeyPart) -> str:
    if part.text is not None:
        return f"'{part.text}'"
    if part.prefix is not None:
        return f"'{part.prefix}...'"
    return "..."


def describe(call: AdvisoryCall) -> str:
    """How an advisory key reads: hashtext('job:42'), 12345, (1, 'x'...)."""
    shown = []
    for p in call.parts:
        if p.function == "hashtextextended":
            shown.append(f"hashtextextended({_text_of(p)}, {p.seed})")
        elif p.function:
            shown.append(f"{p.function}({_text_of(p)})")
        else:
            shown.append(str(p.value) if p.value is not None else "?")
    return shown[0] if len(shown) == 1 else "(" + ", ".join(shown) + ")"


class Locker:
    """The declarations and the scanned code, indexed once for a run."""

    def __init__(self, model: m.Model | None, scan: ScanResult | None) -> None:
        self.model = model
        locks = list(model.locks.values()) if model is not None else []
        self.row_locks = [(lk.id, lk.table) for lk in locks if lk.kind == "row" and lk.table]
        self.table_locks = [(lk.id, lk.table) for lk in locks if lk.kind == "table" and lk.table]
        self.modes = {lk.id: lk.mode_names for lk in locks}
        self.advisory = [lk for lk in locks if lk.kind == "advisory" and lk.key is not None]
        # the keys that are families (a fixed key is only its own tag), in declaration order
        self.families = [
            (lk.id, lk.key) for lk in self.advisory if lk.key is not None and lk.key.tag is None
        ]
        self.tags: dict[tuple[int, int, int], list[str]] = {}
        for lk in self.advisory:
            assert lk.key is not None
            if lk.key.tag is not None:
                self.tags.setdefault(lk.key.tag, []).append(lk.id)
        self.references = [
            (lk.id, lk.table, ref) for lk in locks if lk.table for ref in lk.references
        ]
        self.keys: dict[str, list[tuple[str, ...]]] = {}
        self.functions: dict[str, list[Item]] = {}
        if scan is not None:
            for _, fs in scan.files:
                for table, cols in fs.keys:
                    self.keys.setdefault(table, []).extend(cols)
                    self.keys.setdefault(table.rsplit(".", 1)[-1], []).extend(cols)
            for item in scan.items:
                if item.site.kind == "function":
                    for alias in item.site.aliases or (item.site.name or "",):
                        self.functions.setdefault(alias, []).append(item)
        self._seen: dict[tuple[object, ...], Seen] = {}
        self.static = False  # keep each advisory key as its text alone gives it (--propose)

    # --- rows and tables ----------------------------------------------------------------

    def _intern(self, seen: Seen) -> Seen:
        key = (seen.locks, seen.kind, seen.label, seen.explicit, seen.tag)
        return self._seen.setdefault(key, seen)

    def row(self, table: str, mode: str, explicit: bool) -> Seen:
        found = [lid for lid, t in self.row_locks if same_table(table, t)]
        if len(found) > 1:
            fitting = [lid for lid in found if mode in self.modes[lid]]
            found = fitting or found
        why = "" if found else "no declared row lock is on this table"
        return self._intern(
            Seen(tuple(found), "row", f"row lock on {table}", table, explicit, why=why)
        )

    def table(self, table: str, explicit: bool) -> Seen:
        found = [lid for lid, t in self.table_locks if same_table(table, t)]
        why = "" if found else "no declared table lock is on this table"
        return self._intern(
            Seen(tuple(found), "table", f"table lock on {table}", table, explicit, why=why)
        )

    def update_mode(self, table: str, columns: Sequence[str]) -> str:
        """FOR UPDATE when the UPDATE sets a column of a unique key (the scanned DDL)."""
        sets = set(columns)
        strong = any(sets & set(k) for k in self.keys.get(table, ()))
        return "for update" if strong else "for no key update"

    def foreign_keys(self, table: str, implicit: str, columns: Sequence[str]) -> list[Took]:
        out = []
        for lid, parent, ref in self.references:
            if not same_table(table, ref.table):
                continue
            named = ref.column is None or ref.column in columns
            fills = (implicit == "insert" and (not columns or named)) or (
                implicit in ("update", "upsert") and named
            )
            if fills:
                seen = self._intern(
                    Seen((lid,), "row", f"row lock on {parent}", parent, explicit=False)
                )
                how = f"{'INSERT' if implicit == 'insert' else 'UPDATE'} into {table} (foreign key)"
                out.append(Took(seen, "for key share", how=how))
        return out

    def rechecks(self, table: str, columns: Sequence[str]) -> tuple[Took, ...]:
        """The parents' FOR KEY SHARE of an UPDATE of `table` that sets `columns`, where the
        update leaves the referencing column alone: Postgres takes them only when the updated
        row version is one its transaction created (an insert, or an earlier update)."""
        out = []
        for lid, parent, ref in self.references:
            if not same_table(table, ref.table) or ref.column is None or ref.column in columns:
                continue  # another table, or foreign_keys() derives it for every update
            seen = self._intern(
                Seen((lid,), "row", f"row lock on {parent}", parent, explicit=False)
            )
            how = f"UPDATE of {table} (foreign-key re-check of a row the transaction wrote)"
            out.append(Took(seen, "for key share", how=how, recheck=table))
        return tuple(out)

    # --- advisory locks -----------------------------------------------------------------

    def family(self, call: AdvisoryCall, tag: tuple[int, int, int] | None) -> tuple[list[str], str]:
        """The declared locks an advisory key can belong to, and why none when none."""
        if tag is not None and tag in self.tags:
            return list(self.tags[tag]), ""
        out = [lid for lid, key in self.families if _fits(key, call)]
        if out:
            return out, ""
        return [], "no declared key has this tag and no family's key is built like it"

    def advisory_lock(self, call: AdvisoryCall) -> Seen:
        tag = call.tag
        found, why = self.family(call, tag)
        first = call.parts[0] if call.parts else KeyPart()
        text = first.text if first.text is not None else first.prefix
        # Not interned: a log holds as many keys as objects it locked.
        return Seen(
            tuple(found),
            "advisory",
            f"advisory {describe(call)}",
            explicit=True,
            tag=tag,
            key_text=text,
            why=why,
        )

    # --- statements ---------------------------------------------------------------------

    def took(
        self, spec: LockSpec, params: Sequence[str | None] = (), literals: Sequence[object] = ()
    ) -> list[Took]:
        """What one lock spec of a statement takes (a write may take none, or several)."""
        if spec.kind == "advisory":
            call = advisory(spec, params, literals)
            # the key as the text alone gives it, for a draft's family (--propose only)
            # (a literal of the text stays: only the parameters are what the code passes in)
            static = (advisory(spec, (), literals) if params else call) if self.static else None
            option = "try" if call.tries else None
            how = f"{call.function}(...)"
            return [
                Took(self.advisory_lock(call), call.mode, option, how, call=call, static=static)
            ]
        table = spec.table or ""
        if spec.kind == "table":
            explicit = spec.how == "LOCK TABLE"
            return [Took(self.table(table, explicit), spec.mode, spec.option, spec.how)]
        if spec.kind == "row":
            explicit = spec.implicit is None
            seen = self.row(table, spec.mode, explicit)
            return [Took(seen, spec.mode, spec.option, spec.how, order_by=spec.order_by)]
        out: list[Took] = []
        if spec.implicit in ("update", "upsert"):
            mode = self.update_mode(table, spec.columns)
            out.append(Took(self.row(table, mode, False), mode, how=spec.how))
        out += self.foreign_keys(table, spec.implicit or "", spec.columns)
        return out

    def function(self, name: str) -> list[Took]:
        """The locks the body of a `code:` function takes, in body order."""
        items = self.functions.get(name) or self.functions.get(name.rsplit(".", 1)[-1], [])
        out: list[Took] = []
        for it in sorted(items, key=lambda i: (i.lock.line, i.lock.column)):
            lk = it.lock
            via = it.site.name or name
            if lk.kind == "advisory":
                call = _call_of_shape(lk.shape, lk.mode, lk.scope, lk.try_)
                option = "try" if lk.try_ else None
                seen = self.advisory_lock(call)
                out.append(
                    Took(seen, lk.mode, option, lk.function or "", via, call=call, static=call)
                )
            elif lk.kind == "table":
                out.append(
                    Took(self.table(lk.table or "", True), lk.mode, lk.option, "LOCK TABLE", via)
                )
            elif lk.kind == "row":
                explicit = lk.implicit is None
                seen = self.row(lk.table or "", lk.mode, explicit)
                how = "SELECT ... " + lk.mode.upper() if explicit else (lk.implicit or "").upper()
                out.append(Took(seen, lk.mode, lk.option, how, via))
        return out


def _call_of_shape(
    shape: KeyShape | None, mode: str, scope: str | None, try_: bool
) -> AdvisoryCall:
    """A function body's advisory call from the scan's key shape: its value when literal."""
    if shape is None:
        return AdvisoryCall("pg_advisory_lock", scope or "session", mode, (KeyPart(),), try_)
    if shape.construction in ("hashtext", "hashtextextended"):
        seed = shape.seed or 0
        value = None
        if shape.literal is not None and not shape.parts:
            value = (
                pghash.hashtext(shape.literal)
                if shape.construction == "hashtext"
                else pghash.hashtextextended(shape.literal, seed)
            )
        part = KeyPart(
            value,
            shape.construction,
            shape.literal if not shape.parts else None,
            shape.prefix,
            seed,
        )
        parts: tuple[KeyPart, ...] = (part,)
    elif shape.construction == "constant":
        parts = (KeyPart(shape.value),)
    elif shape.construction == "int4pair" and shape.pair is not None:
        parts = tuple(KeyPart(p.value) for p in shape.pair)
    else:
        parts = (KeyPart(),)
    return AdvisoryCall("pg_advisory_xact_lock", scope or "transaction", mode, parts, try_)


def _fits(key: m.Key, call: AdvisoryCall) -> bool:
    """Whether a family's key can produce the key the statement computes (or, when its
    value is not known, is built the same way)."""
    parts = call.parts
    if key.construction in ("hashtext", "hashtextextended"):
        if len(parts) != 1 or parts[0].function != key.construction or key.text is None:
            return False
        kt, part = key.text, parts[0]
        seen = part.text if part.text is not None else part.prefix
        prefix = kt.prefix or ""
        if key.construction == "hashtextextended" and part.seed != kt.seed:
            return False
        return (seen is not None and seen.startswith(prefix)) or (seen is None and not prefix)
    if key.construction in ("integer", "application"):
        if len(parts) != 1 or parts[0].function is not None:
            return False
        value = parts[0].value
        bits = key.bits
        return value is None or bits >= 64 or -(1 << bits) < value < (1 << bits)
    if key.construction == "int4pair":
        if len(parts) != 2:
            return False
        return all(
            _half_fits(half, part) for half, part in ((key.first, parts[0]), (key.second, parts[1]))
        )
    return False


def _half_fits(half: m.KeyText | m.IntegerPart | int | None, part: KeyPart) -> bool:
    if isinstance(half, int) and not isinstance(half, bool):
        return part.value is None or part.value == half
    if isinstance(half, m.KeyText):
        if half.fixed and half.text is not None:
            return part.value is None or part.value == pghash.hashtext(half.text)
        return part.function == "hashtext"
    return part.function is None
