"""Each logged statement read once per shape: its text -> a `Plan` (its statements' transaction
control and the locks each takes), cached by the exact text and by its normalized form.

A test suite logs the same few hundred statements a million times: an extended-protocol
execution logs the same text with other parameters, and a simple query the same text with
other literals (one normalized form: pg_query's normalize, constants made parameters). So a
text seen before costs a dictionary lookup, a new text of a known form one normalize (a
parse in C), and only a new form (or a statement whose advisory key is built from its
literals) the full parse and walk. Not the fingerprint: it drops savepoint, alias and schema
names and parameter numbers, so `SAVEPOINT b` would have been read as the `SAVEPOINT a` before
it. The fingerprint only numbers the shapes findings are grouped by. The caches are
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
from lockdocs.postgres.sqlread import (
    LockSpec,
    Statement,
    literal_tokens,
    reads_parameters,
    statements,
    template,
    unread,
)

MAX_TEXTS = 20_000
MAX_SHAPES = 20_000
MAX_TEXT = 1 << 20  # a text longer than this is read but not kept in the cache


@dataclass(frozen=True, slots=True)
class PlannedStatement:
    """One statement of a plan: its transaction control, or the locks it takes. `needs`
    holds the lock specs whose key depends on the execution's parameters."""

    control: str | None = None
    savepoint: str | None = None
    chain: bool = False
    took: tuple[Took, ...] = ()
    needs: tuple[int, ...] = ()  # indexes into statement.locks resolved per execution
    params: bool = False  # whether a key of `needs` reads the execution's parameters
    statement: Statement | None = None
    keyed: tuple[LockSpec, ...] = ()  # the specs of `needs`, their literals as Literal nodes
    writes: tuple[str, ...] = ()  # the tables it inserts into or updates
    # per table it updates: the foreign-key re-checks it takes if its transaction wrote the
    # table before (Locker.rechecks)
    rechecks: tuple[tuple[str, tuple[Took, ...]], ...] = ()
    keys_first: bool = True  # the advisory calls come before its other locks in the text


@dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[PlannedStatement, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()  # sqlcommenter key/value pairs
    name: str = ""  # sqlc's query name
    error: str = ""  # why the text could not be read
    shape: int = 0  # a small number per fingerprint, for grouping findings
    literals: tuple[object, ...] = ()  # this text's constants, for a shape read once

    @property
    def several(self) -> bool:
        """Several statements that are not transaction control: one implicit transaction."""
        return sum(1 for st in self.steps if st.control is None) > 1


@dataclass
class Shapes:
    """The plan cache of one run, and how often each way of reading was taken."""

    locker: Locker
    texts: dict[str, Plan] = field(default_factory=dict)
    # normalized text -> (steps, shape number, how many constants a text of it holds, or -1
    # when its keys read none)
    shapes: dict[str, tuple[tuple[PlannedStatement, ...], int, int]] = field(default_factory=dict)
    fingerprints: int = 0
    parses: int = 0
    numbers: dict[str, int] = field(default_factory=dict)  # fingerprint -> shape number
    samples: dict[int, str] = field(default_factory=dict)  # shape number -> a masked text

    def plan(self, text: str) -> Plan:
        hit = self.texts.get(text)
        if hit is not None:
            return hit
        plan = self._constant(self._read(text))
        if len(text) <= MAX_TEXT:
            if len(self.texts) >= MAX_TEXTS:
                self.texts.clear()
            self.texts[text] = plan
        return plan

    def _read(self, text: str) -> Plan:
        tokens: list[tuple[str, int, int]] | None = None
        if "/*" in text or "--" in text or "'" in text:
            try:
                tokens = pgparse.tokens(text)
            except pgparse.ParseError:
                tokens = None
        tags, name = _comments(text, tokens or [])
        # The steps are shared by the texts of one normalized form (the text with its comments
        # dropped and its constants made $1, $2, ...): a fingerprint also drops savepoint,
        # alias and schema names and parameter numbers, which decide what a statement locks.
        # A text with a $ of its own ($1 or a dollar quote) could meet a normalized one, so it
        # is read alone (an extended-protocol text repeats whole: the text cache serves it).
        key = None
        if "$" not in text:
            try:
                key = pgparse.normalize(_uncommented(text, tokens) if tokens else text)
            except pgparse.ParseError as exc:
                return Plan(tags=tags, name=name, error=unread(exc))
        cached = self.shapes.get(key) if key is not None else None
        if cached is not None:
            steps, shape, count = cached
            if count < 0:
                return Plan(steps, tags, name, shape=shape)
            # a shape whose keys read its literals: this text's constants, by the lexer
            if tokens is None:
                tokens = _tokens(text)
            found = literal_tokens(text, tokens) if tokens is not None else None
            if found is not None and len(found) == count:
                return Plan(steps, tags, name, shape=shape, literals=tuple(found))
            number = shape
        else:
            try:
                self.fingerprints += 1
                fp = pgparse.fingerprint(text)
            except pgparse.ParseError as exc:
                return Plan(tags=tags, name=name, error=unread(exc))
            number = self.numbers.get(fp) or 0
            if not number:
                number = len(self.numbers) + 1
                if len(self.numbers) < MAX_SHAPES:
                    self.numbers[fp] = number
                    self.samples[number] = text
        try:
            self.parses += 1
            stmts = statements(text)
        except pgparse.ParseError as exc:
            return Plan(tags=tags, name=name, error=unread(exc))
        steps = tuple(self._step(s) for s in stmts)
        if key is None:
            return Plan(steps, tags, name, shape=number)
        if len(self.shapes) >= MAX_SHAPES:
            self.shapes.clear()
        if not any(s.literal_keys for s in stmts):
            self.shapes[key] = (steps, number, -1)
            return Plan(steps, tags, name, shape=number)
        if tokens is None:
            tokens = _tokens(text)
        found = literal_tokens(text, tokens) if tokens is not None else None
        templated = _templated(steps, tokens or [], text) if found is not None else None
        if templated is not None and found is not None:
            self.shapes[key] = (templated, number, len(found))
        return Plan(steps, tags, name, shape=number)

    def _constant(self, plan: Plan) -> Plan:
        """The plan of one text with the keys that read no parameter computed once: they are
        the same in every execution of the text (a fixed rendezvous key, a literal id)."""
        if not any(step.needs and not step.params for step in plan.steps):
            return plan
        # the constructors, not dataclasses.replace: this runs once a new text, and a log's
        # simple queries are new texts
        steps = tuple(
            PlannedStatement(
                step.control,
                step.savepoint,
                step.chain,
                self.took(step, (), plan.literals),
                statement=step.statement,
                writes=step.writes,
                rechecks=step.rechecks,
            )
            if step.needs and not step.params
            else step
            for step in plan.steps
        )
        return Plan(steps, plan.tags, plan.name, plan.error, plan.shape, plan.literals)

    def _step(self, s: Statement) -> PlannedStatement:
        if s.control is not None:
            return PlannedStatement(s.control, s.savepoint, s.chain)
        took: list[Took] = []
        needs: list[int] = []
        for i, spec in enumerate(s.locks):
            if spec.kind == "advisory" and spec.args:
                needs.append(i)  # resolved with the parameters of each execution
                continue
            took.extend(self.locker.took(spec))
        for name in s.calls:
            took.extend(self.locker.function(name))
        written = [spec for spec in s.locks if spec.kind == "write" and spec.table]
        rechecks = []
        for spec in written:
            if spec.implicit in ("update", "upsert"):
                again = self.locker.rechecks(spec.table or "", spec.columns)
                if again:
                    rechecks.append((spec.table or "", again))
        step = PlannedStatement(
            took=tuple(took),
            needs=tuple(needs),
            params=any(reads_parameters(s.locks[i]) for i in needs),
            statement=s,
            writes=tuple(dict.fromkeys(spec.table or "" for spec in written)),
            rechecks=tuple(rechecks),
        )
        return replace(step, keys_first=_keys_first(step)) if needs else step

    def took(
        self, step: PlannedStatement, params: Sequence[str | None], literals: Sequence[object] = ()
    ) -> tuple[Took, ...]:
        """What a step takes in one execution: its fixed locks and its keys computed from
        this execution's literals and parameters, in the statement's order."""
        fixed = step.took
        if fixed and params:
            for p in params:
                if p is not None and p[:1] == "{" and "," in p:
                    # an array of keys: the statement may lock several rows (= ANY($1))
                    fixed = tuple(
                        replace(t, many=True) if t.seen.kind == "row" else t for t in fixed
                    )
                    break
        if not step.needs or step.statement is None:
            return fixed
        specs = step.keyed or tuple(step.statement.locks[i] for i in step.needs)
        took = self.locker.took
        keyed = tuple(t for spec in specs for t in took(spec, params, literals))
        return keyed + fixed if step.keys_first else fixed + keyed


def _tokens(text: str) -> list[tuple[str, int, int]] | None:
    try:
        return pgparse.tokens(text)
    except pgparse.ParseError:
        return None


def _templated(
    steps: tuple[PlannedStatement, ...], tokens: list[tuple[str, int, int]], text: str
) -> tuple[PlannedStatement, ...] | None:
    """The steps with their keys' literals as Literal nodes, or None when one cannot be."""
    out = []
    for step in steps:
        if not step.needs or step.statement is None:
            out.append(step)
            continue
        keyed = []
        for i in step.needs:
            t = template(step.statement.locks[i], tokens, text)
            if t is None:
                return None
            keyed.append(t)
        out.append(replace(step, keyed=tuple(keyed)))
    return tuple(out)


def _keys_first(step: PlannedStatement) -> bool:
    """Whether the advisory calls come before the other locks in the statement's text."""
    s = step.statement
    if s is None:
        return True
    first_key = min((s.locks[i].offset for i in step.needs), default=0)
    others = [lk.offset for i, lk in enumerate(s.locks) if i not in step.needs]
    return not others or first_key <= min(others)


def _uncommented(text: str, tokens: Sequence[tuple[str, int, int]]) -> str:
    """The text with its comments made spaces: a sqlcommenter tag (a trace id) differs on
    every request, and must not make every statement a shape of its own."""
    out: list[str] = []
    at = 0
    for kind, start, end in tokens:
        if kind in ("SQL_COMMENT", "C_COMMENT"):
            out.append(text[at:start])
            out.append(" ")
            at = end
    out.append(text[at:])
    return "".join(out)


def _comments(
    text: str, tokens: Sequence[tuple[str, int, int]]
) -> tuple[tuple[tuple[str, str], ...], str]:
    """The sqlcommenter tags of a statement (`/*key='value',...*/`, URL-encoded values) and
    the sqlc query name (`-- name: LockPools :many`), from its tokens."""
    tags: list[tuple[str, str]] = []
    name = ""
    for kind, start, end in tokens:
        if kind == "SQL_COMMENT":
            words = text[start + 2 : end].split()
            if len(words) >= 2 and words[0] == "name:":
                name = words[1]
        elif kind == "C_COMMENT":
            inner = text[start + 2 : end - 2]
            found = _TAGS.get(inner)
            if found is None:
                if len(_TAGS) >= MAX_TEXTS:
                    _TAGS.clear()
                found = _TAGS[inner] = tuple(sqlcommenter(inner))
            tags.extend(found)
    return tuple(tags), name


# A comment's tags, by its text: an application writes a few tags on many statements.
_TAGS: dict[str, tuple[tuple[str, str], ...]] = {}


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
