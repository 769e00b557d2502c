"""Each logged statement read once per shape: its text -> a `Plan` (its statements' transaction
control and the locks each takes), cached by the exact text and by pglast's fingerprint.

A test suite logs the same few hundred statements a million times: an extended-protocol
execution logs the same text with other parameters, and a simple query the same text with
other literals (one fingerprint). So a text seen before costs a dictionary lookup, a new
text of a known shape one fingerprint (a parse in C), and only a new shape (or a statement
whose advisory key is built from its literals) the full parse and walk. The caches are
bounded; a full one is emptied, which costs speed, never correctness.

Comments are not part of a shape: the sqlcommenter tags (`/*lockdocs_path='settle'*/`) and
sqlc's `-- name: LockPools :many` are read from each text by Postgres's lexer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import unquote

from lockdocs import pgparse
from lockdocs.observe.locks import Locker, Took
from lockdocs.postgres.sqlread import Statement, statements

MAX_TEXTS = 20_000
MAX_SHAPES = 20_000
MAX_TEXT = 1 << 20  # a text longer than this is read but not kept in the cache


@dataclass(frozen=True, slots=True)
class Step:
    """One statement of a plan: its transaction control, or the locks it takes. `needs`
    holds the lock specs whose key depends on the execution's parameters."""

    control: str | None = None
    savepoint: str | None = None
    chain: bool = False
    took: tuple[Took, ...] = ()
    needs: tuple[int, ...] = ()  # indexes into statement.locks resolved per execution
    statement: Statement | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[Step, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()  # sqlcommenter key/value pairs
    name: str = ""  # sqlc's query name
    error: str = ""  # why the text could not be read
    shape: int = 0  # a small number per fingerprint, for grouping findings


@dataclass
class Shapes:
    """The plan cache of one run, and how often each way of reading was taken."""

    locker: Locker
    texts: dict[str, Plan] = field(default_factory=dict)
    shapes: dict[str, tuple[tuple[Step, ...], int]] = field(default_factory=dict)
    fingerprints: int = 0
    parses: int = 0
    numbers: dict[str, int] = field(default_factory=dict)  # fingerprint -> shape number
    samples: dict[int, str] = field(default_factory=dict)  # shape number -> a masked text

    def plan(self, text: str) -> Plan:
        hit = self.texts.get(text)
        if hit is not None:
            return hit
        plan = self._read(text)
        if len(text) <= MAX_TEXT:
            if len(self.texts) >= MAX_TEXTS:
                self.texts.clear()
            self.texts[text] = plan
        return plan

    def _read(self, text: str) -> Plan:
        tags, name = _comments(text) if ("/*" in text or "--" in text) else ((), "")
        try:
            self.fingerprints += 1
            fp = pgparse.fingerprint(text)
        except pgparse.ParseError as exc:
            return Plan(tags=tags, name=name, error=f"the statement does not parse: {exc}")
        number = self.numbers.get(fp)
        if number is None:
            number = len(self.numbers) + 1
            if len(self.numbers) < MAX_SHAPES:
                self.numbers[fp] = number
                self.samples[number] = text
        cached = self.shapes.get(fp)
        if cached is not None:
            return Plan(cached[0], tags, name, shape=cached[1])
        try:
            self.parses += 1
            stmts = statements(text)
        except pgparse.ParseError as exc:
            return Plan(tags=tags, name=name, error=f"the statement does not parse: {exc}")
        steps = tuple(self._step(s) for s in stmts)
        if not any(s.literal_keys for s in stmts):
            if len(self.shapes) >= MAX_SHAPES:
                self.shapes.clear()
            self.shapes[fp] = (steps, number)
        return Plan(steps, tags, name, shape=number)

    def _step(self, s: Statement) -> Step:
        if s.control is not None:
            return Step(s.control, s.savepoint, s.chain)
        took: list[Took] = []
        needs: list[int] = []
        for i, spec in enumerate(s.locks):
            if spec.kind == "advisory" and spec.args:
                needs.append(i)  # resolved with the parameters of each execution
                continue
            took.extend(self.locker.took(spec))
        for name in s.calls:
            took.extend(self.locker.function(name))
        return Step(took=tuple(took), needs=tuple(needs), statement=s)

    def took(self, step: Step, params: Sequence[str | None]) -> tuple[Took, ...]:
        """What a step takes in one execution: its fixed locks and its keys computed from
        this execution's literals and parameters, in the statement's order."""
        fixed = step.took
        if any(p is not None and p.startswith("{") and "," in p for p in params):
            # an array of keys: the statement may lock several rows (= ANY($1))
            fixed = tuple(replace(t, many=True) if t.seen.kind == "row" else t for t in fixed)
        if not step.needs or step.statement is None:
            return fixed
        keyed = [t for i in step.needs for t in self.locker.took(step.statement.locks[i], params)]
        return tuple(keyed) + fixed if _keys_first(step) else fixed + tuple(keyed)


def _keys_first(step: Step) -> bool:
    """Whether the advisory calls come before the other locks in the statement's text."""
    s = step.statement
    if s is None:
        return True
    first_key = min((s.locks[i].offset for i in step.needs), default=0)
    others = [lk.offset for i, lk in enumerate(s.locks) if i not in step.needs]
    return not others or first_key <= min(others)


def _comments(text: str) -> tuple[tuple[tuple[str, str], ...], str]:
    """The sqlcommenter tags of a statement (`/*key='value',...*/`, URL-encoded values) and
    the sqlc query name (`-- name: LockPools :many`)."""
    try:
        found = pgparse.comments(text)
    except pgparse.ParseError:
        return (), ""
    tags: list[tuple[str, str]] = []
    name = ""
    for _, _, body in found:
        if body.startswith("--"):
            words = body[2:].split()
            if len(words) >= 2 and words[0] == "name:":
                name = words[1]
            continue
        tags.extend(sqlcommenter(body[2:-2]))
    return tuple(tags), name


def sqlcommenter(inner: str) -> list[tuple[str, str]]:
    """key='value' pairs separated by commas, as the sqlcommenter libraries write them: keys
    and values URL-encoded, a quote in a value escaped as \\'. Anything else is no tag."""
    out: list[tuple[str, str]] = []
    s = inner.strip()
    i, n = 0, len(s)
    while i < n:
        eq = s.find("=", i)
        if eq < 0 or eq + 1 >= n or s[eq + 1] != "'":
            return out
        key = s[i:eq].strip()
        j = eq + 2
        value: list[str] = []
        while j < n and s[j] != "'":
            if s[j] == "\\" and j + 1 < n:
                value.append(s[j + 1])
                j += 2
                continue
            value.append(s[j])
            j += 1
        if j >= n or not key:
            return out
        out.append((unquote(key), unquote("".join(value))))
        i = j + 1
        while i < n and s[i] in ", ":
            i += 1
    return out
