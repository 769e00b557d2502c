"""The words of the page: mode labels, derived sentences and the key constructions.

Kept apart from the view objects so a wording change is one small diff, and so the DOT writer
labels things the way the page names them.
"""

from __future__ import annotations

import re

from lockdocs import model as m
from lockdocs.grammar import article
from lockdocs.keys import key_sql

KIND_ORDER = ("advisory", "row", "table", "memory")


KIND_TITLES = {
    "advisory": "Advisory locks",
    "row": "Row locks",
    "table": "Table locks",
    "memory": "In-process locks",
}


KIND_NOUN = {
    "advisory": "advisory lock",
    "row": "row lock",
    "table": "table lock",
    "memory": "in-process lock",
}


def mode_label(kind: str, mode: str, option: str | None = None) -> str:
    """Row and table modes read as the SQL that takes them; advisory modes as words."""
    label = mode.upper() if kind in ("row", "table") else mode
    if option:
        label += " " + option.upper()
    return label


def order_words(order: str | None) -> str | None:
    """'ascending sku' -> 'ascending sku order'; a phrase that already names an order or reads
    as a sequence ('provision order', 'the parked site first, then the activated site', 'the
    order the requests were recorded') stays as it is, so 'in ...' never reads garbled."""
    if not order:
        return order
    flat = " ".join(order.split())
    if re.search(r"\border\b", flat, re.IGNORECASE):
        return flat
    if re.search(r"[,;]|\b(first|then|before|after|last)\b", flat, re.IGNORECASE):
        return flat
    return flat + " order"


def order_phrase(order: str | None) -> str | None:
    """An order as a sentence names it after a comma: 'in ascending pool_id order', 'in
    provision order'; a sequence stays as it is ('the parked site first, then the activated
    site'), never 'in the parked site first'."""
    words = order_words(order)
    if not words:
        return words
    if re.search(r"[,;]|\b(first|then|before|after|last)\b", words, re.IGNORECASE):
        return words
    return "in " + words


# What a take finds when it runs, as the page and the diagrams say it: `always` already held
# (a re-take), `later` held from the loop's second pass on (its first pass takes it), `maybe`
# held only when an earlier step took it, `never` not held.
HELD_WORDS = {
    "always": "already held",
    "later": "held after pass 1",
    "maybe": "already held if an earlier step took it",
}
# The held mark of a take no walk reaches (a foreign-key re-check with no earlier write in its
# transaction): the page and the diagram leave it out.
ABSENT = "absent"

HELD_SHORT = {"always": "already held", "later": "held after pass 1", "maybe": "maybe held"}


BACKEND_NAMES = {"postgres": "Postgres", "postgresql": "PostgreSQL", "sqlite": "SQLite"}


def backend_name(name: str | None) -> str | None:
    """A database backend as people write it: 'Postgres', 'SQLite'."""
    if name is None:
        return None
    return BACKEND_NAMES.get(name.lower(), name)


def tx_is_noun(title: str) -> bool:
    """Whether a transaction kind's title reads as a noun ('plain transaction', 'single
    statement') or is a name of the code ('entitlements.Materializing'), which the page says as
    'a transaction of the entitlements.Materializing kind'."""
    return " " in title.strip()


def tx_words(title: str, determiner: str = "a") -> tuple[str, str]:
    """The words before and after a kind's title (its link) for 'opens <a second> <title>':
    ('a second', '') for a noun, ('a second transaction of the', 'kind') for a name."""
    det = article(title) if determiner == "a" and tx_is_noun(title) else determiner
    if tx_is_noun(title):
        return det, ""
    return f"{determiner} transaction of the", "kind"


def waits(lock_timeout: str | None) -> str:
    """How long a lock wait lasts in a kind, as the path's gist says it."""
    if lock_timeout is None or lock_timeout == "none":
        return "waits without a limit"
    return f"waits up to {lock_timeout}"


def sentence(s: str) -> str:
    """A title shown in bold before more prose ends like a sentence."""
    flat = " ".join(s.split())
    return flat if not flat or flat[-1] in ".!?:" else flat + "."


def bare(s: str) -> str:
    """A title used as link text inside a sentence: no closing full stop."""
    return " ".join(s.split()).rstrip(".")


def as_tuple(value: object) -> tuple[object, ...]:
    """A rule parameter as a tuple, whatever YAML shape it had."""
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        return tuple(value)
    return (value,)


def levels(rule: m.Rule) -> tuple[tuple[str, ...], ...]:
    """The written order of an `order` rule, level by level."""
    raw = rule.param("levels")
    return tuple(tuple(str(x) for x in as_tuple(level)) for level in as_tuple(raw))


CATEGORIES: dict[str, tuple[str | None, str, str]] = {
    "hashtextextended-fixed": ("hashtextextended", "of a fixed name", "keys-fixed-name"),
    "hashtextextended-prefix": ("hashtextextended", "of a prefix plus parts", "keys-prefixed"),
    "hashtextextended-bare": ("hashtextextended", "of bare parts, with no prefix", "keys-bare"),
    "hashtext-fixed": ("hashtext", "of a fixed name, widened to bigint", "keys-hashtext-fixed"),
    "hashtext-prefix": (
        "hashtext",
        "of a prefix plus parts, widened to bigint",
        "keys-hashtext-prefixed",
    ),
    "hashtext-bare": ("hashtext", "of a bare id, widened to bigint", "keys-hashtext-bare"),
    "application-fixed": (None, "An application hash of a fixed name", "keys-application-fixed"),
    "application-prefix": (
        None,
        "An application hash of a prefix plus parts",
        "keys-application-prefixed",
    ),
    "application-bare": (None, "An application hash of bare parts", "keys-application-bare"),
    "constant": (None, "A literal constant", "keys-constant"),
    "integer": (None, "A raw integer used as the key", "keys-integer"),
    "int4pair": (None, "The two-int4 form", "keys-int4-pair"),
}


CATEGORY_ORDER = tuple(CATEGORIES)


def key_category(key: m.Key) -> str:
    """Which construction a key belongs to, for 'How keys are built'."""
    if key.construction in ("constant", "int4pair", "integer"):
        return key.construction
    kt = key.text
    if kt is None or kt.fixed:
        shape = "fixed"
    elif kt.prefix:
        shape = "prefix"
    else:
        shape = "bare"
    return f"{key.construction}-{shape}"


def group_heading(function: str | None, shape: str) -> str:
    """How a lock section names its key construction."""
    if function:
        return f"{function} {shape}"
    return shape.lower()


def extent(lock: m.Lock) -> str | None:
    """What one lock of a singleton class covers."""
    if not lock.singleton:
        return None
    if lock.kind == "table":
        return "one lock for the whole table"
    return "one lock for the whole database"


def explain(cat: str, locks: list[m.Lock], has_hashtext: bool) -> str:
    """The sentence under a key construction, derived from its locks."""
    n = len(locks)
    if cat == "hashtextextended-fixed":
        return (
            "One key for the whole database per name; the tool computes each bigint the way "
            "Postgres does, so two fixed keys cannot silently be the same lock."
        )
    if cat == "hashtextextended-prefix":
        return (
            "The prefix keeps each family's keys apart from every other family's: "
            "a family is one prefix and the runtime parts after it."
        )
    if cat == "hashtextextended-bare":
        return (
            "Nothing separates these keys from another family's that hashes the same text: "
            "give each family a prefix."
        )
    if cat.startswith("hashtext-"):
        if n > 1:
            shared = f"so these {n} families share one 32-bit key space"
            if cat == "hashtext-bare":
                shared += " with no prefix between them"
        else:
            shared = "so its keys share a 32-bit key space with every other hashtext key"
        return (
            f"hashtext returns 32 bits, {shared}; a collision makes two unrelated objects "
            "wait for each other, and the odds grow with the number of keys held at once."
        )
    if cat == "constant":
        text = "A number written in the code; its bigint is known exactly."
        if has_hashtext and all(
            lk.key is not None and lk.key.value is not None and not -(2**31) <= lk.key.value < 2**31
            for lk in locks
        ):
            text += (
                " Each value lies outside the 32-bit range, so it cannot collide with a "
                "hashtext key."
            )
        return text
    return (
        "pg_advisory_xact_lock(int4, int4) keys live in a key space of their own: they "
        "never collide with a bigint key, only with another pair."
    )


def scope_facts(model: m.Model) -> tuple[str, ...]:
    """The page's defaults, said once so no lock or step has to repeat them. A claim about the
    code ("no code takes ...") only when locks.yaml names the code (`code:`), which the check
    then reads."""
    facts: list[str] = []
    locks = list(model.locks.values())
    database = [lk for lk in locks if lk.kind != "memory"]
    session = [lk.title for lk in database if lk.scope == "session"]
    in_memory = sorted(
        {b.name for lk in database for b in lk.backends if b.kind == "memory"},
    )
    other = sorted(
        {
            b.name
            for lk in database
            if any(x.kind == "memory" for x in lk.backends)
            for b in lk.backends
            if b.kind != "memory"
        }
    )
    advisory = [lk for lk in locks if lk.kind == "advisory"]
    xact = bool(advisory) and not any(lk.scope == "session" for lk in advisory)
    if database:
        released = (
            "Every database lock here"
            if any(lk.kind == "memory" for lk in locks)
            else "Every lock here"
        )
        if in_memory:
            on = " and ".join(backend_name(b) or b for b in other) or "the database"
            mem = " and ".join(backend_name(b) or b for b in in_memory)
            released = f"On {on}, every lock here"
        text = f"{released} is released when its transaction commits or rolls back"
        if session:
            names = ", ".join(session)
            text += (
                f"; the exception is {names}, session-scoped and held until it is unlocked"
                if len(session) == 1
                else f"; the exceptions are {names}, session-scoped and held until unlocked"
            )
        if in_memory:
            text += (
                f". On {mem}, where the locks live in memory, the code releases each one itself, "
                "after the commit (each path shows where)"
            )
        if xact and not in_memory and not session:
            text += "; advisory locks are taken with pg_advisory_xact_lock"
        facts.append(text + ".")
    if model.code:
        missing = []
        if locks and not any(lk.kind == "table" for lk in locks):
            missing.append("LOCK TABLE")
        row_modes = {mode for lk in locks if lk.kind == "row" for mode in lk.mode_names}
        if any(lk.kind == "row" for lk in locks) and "for share" not in row_modes:
            missing.append("FOR SHARE")
        if missing:
            facts.append("No code takes " + " or ".join(missing) + ".")
    for scope, said in (
        ("process", "In-process locks live in one process and are held until released: "),
        ("session", "In-memory locks every server process shares, held until released: "),
    ):
        titles = [lk.title for lk in locks if lk.kind == "memory" and lk.scope == scope]
        if titles:
            facts.append(said + ", ".join(titles) + ".")
    for backend, n in model.replicas:
        if n > 1:
            on = f" on {backend_name(backend)}" if backend else ""
            facts.append(
                f"{n} server processes run at once{on}, so an in-process lock keeps out the "
                "tasks of its own process only."
            )
    return tuple(facts)


def key_expression(key: m.Key) -> str:
    """The key as SQL; a constant as the literal the code passes, whatever way it was declared."""
    if key.construction == "constant" and key.value is not None:
        return str(key.value)
    return key_sql(key)
