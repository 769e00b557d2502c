"""`lockdocs observe --propose DIR`: draft declarations for what the log showed and the
declarations lack, in the format, each entry with a comment saying where it came from.

Locks: a row lock per table locked explicitly with no declared lock (its modes from the
statements, its instance order from a locking SELECT's ORDER BY), a table lock per table
LOCK TABLE takes, and an advisory lock per key family (a fixed text, a literal prefix and
the parts after it, or an integer). Paths: one per `lockdocs_path` tag that names no declared
path, and one per distinct lock sequence that shows an order no declared path has (on a
project with no declarations at all, every sequence of two locks or more); its steps are the
first takes in the observed order, a statement that locked several rows as a loop.

With no locks.yaml the draft is a whole project (locks.yaml and paths/observed.yaml); with
one, DIR/locks.yaml is the project's own with the new locks added at the end of `locks:`,
and DIR/paths/observed.yaml holds the new paths. `lockdocs check` accepts either.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lockdocs import model as m
from lockdocs.observe.locks import Locker, Took
from lockdocs.observe.paths import PATH_TAG, First, Match
from lockdocs.observe.sessions import Take, Transaction
from lockdocs.observe.shapes import Shapes
from lockdocs.postgres.sqlread import AdvisoryCall

MAX_TEXTS = 64  # advisory key texts kept per family, to find its prefix
MAX_PATHS = 200
_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str, fallback: str = "lock") -> str:
    s = _SLUG.sub("-", text.lower()).strip("-")[:60].strip("-")
    return s if s and s[0].isalnum() else fallback


def q(text: str) -> str:
    """A YAML scalar that reads back as `text` (JSON's strings are YAML's double-quoted)."""
    return json.dumps(text, ensure_ascii=False)


@dataclass
class DraftLock:
    kind: str  # row | table | advisory
    table: str | None
    source: str
    line: int
    how: str
    modes: dict[str, list[str]] = field(default_factory=dict)  # mode -> the statements
    orders: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # sqlc query names and functions
    paths: set[str] = field(default_factory=set)  # the paths (tags) of the transactions
    count: int = 0
    static: AdvisoryCall | None = None  # advisory: the key as the statement's text gives it
    texts: set[str] = field(default_factory=set)  # advisory: texts seen
    values: set[int] = field(default_factory=set)  # advisory: integer keys seen
    id: str = ""

    def mode(self, took: Took, take: Take) -> None:
        hows = self.modes.setdefault(took.mode, [])
        label = took.how + (f" ({take.name})" if take.name else "")
        if label not in hows and len(hows) < 4:
            hows.append(label)
        if take.name:
            self.names.add(take.name)
        if took.via:
            self.names.add(took.via)


@dataclass
class DraftPath:
    id: str
    why: str
    source: str
    line: int
    steps: list[tuple[str, str, str, bool, tuple[str, ...]]]  # lock key, mode, via, many, order
    count: int = 1


class Proposer:
    def __init__(self, locker: Locker, shapes: Shapes) -> None:
        self.locker = locker
        self.shapes = shapes
        self.model = locker.model
        self.locks: dict[tuple[object, ...], DraftLock] = {}
        self.implicit: dict[str, set[str]] = {}  # table -> modes UPDATE and DELETE take
        self.paths: dict[str, DraftPath] = {}
        self.sequences: dict[tuple[object, ...], DraftPath] = {}
        self.declared_pairs: set[tuple[str, str]] = set()

    # --- collecting -----------------------------------------------------------------------

    def _key(self, took: Took, take: Take) -> tuple[object, ...] | None:
        seen = took.seen
        if seen.locks:
            return None
        if seen.kind == "advisory":
            return ("advisory", take.shape, took.via)
        if not seen.explicit:
            if seen.table:
                self.implicit.setdefault(seen.table, set()).add(took.mode)
            return None
        return (seen.kind, seen.table)

    def _lock(self, took: Took, take: Take, path: str | None = None) -> tuple[object, ...] | None:
        key = self._key(took, take)
        if key is None:
            return None
        d = self.locks.get(key)
        if d is None:
            d = self.locks[key] = DraftLock(
                took.seen.kind, took.seen.table, take.source, take.line, took.how
            )
        d.count += 1
        d.mode(took, take)
        if path and len(d.paths) < 8:
            d.paths.add(path)
        d.orders.update(took.order_by[:1])
        if took.call is not None:
            d.static = d.static or took.static
            part = took.call.parts[0] if took.call.parts else None
            if part is not None and part.text is not None and len(d.texts) < MAX_TEXTS:
                d.texts.add(part.text)
            plain = part is not None and part.function is None and part.value is not None
            if plain and part is not None and part.value is not None and len(d.values) < MAX_TEXTS:
                d.values.add(part.value)
        return key

    def add(self, t: Transaction, firsts: list[First], match: Match) -> None:
        steps: list[tuple[str, str, str, bool, tuple[str, ...]]] = []
        chosen: list[str] = []
        tag = t.tags.get(PATH_TAG) or match.path
        for take in t.takes:
            self._lock(take.took, take, tag)
        for f in firsts:
            if f.quiet == "recheck":
                continue  # a possible foreign-key re-check: the check derives it from writes
            took = f.take.took
            key = self._key(took, f.take)
            ref = f.lock if f.lock is not None else (repr(key) if key is not None else None)
            if ref is None:
                continue
            if key is not None:
                ref = "\0" + repr(key)  # a draft lock: named when written
            via = f.take.name or took.via
            steps.append((ref, took.mode, via, took.many, took.order_by))
            chosen.append(ref)
        if not steps:
            return
        tag = t.tags.get(PATH_TAG)
        if match.how == "unknown" and tag is not None:
            path_id = slug(tag, "observed")
            hit = self.paths.get(path_id)
            if hit is None and len(self.paths) < MAX_PATHS:
                self.paths[path_id] = DraftPath(
                    path_id, f"tagged {PATH_TAG}='{tag}'", t.source, t.line, steps
                )
            elif hit is not None:
                hit.count += 1
            return
        if match.how in ("tag", "mapping", "application_name", "exact", "likely"):
            return  # a declared path runs it (its departures are findings)
        declared = self.model is not None
        new_order = any(
            (a, b) not in self.declared_pairs
            for i, a in enumerate(chosen)
            for b in chosen[i + 1 :]
            if a != b
        )
        if len(set(chosen)) < 2 or (declared and not new_order):
            return
        key2 = tuple((s[0], s[1]) for s in steps)
        hit = self.sequences.get(key2)
        if hit is not None:
            hit.count += 1
        elif len(self.sequences) < MAX_PATHS:
            why = "an order no declared path has" if declared else "a sequence of locks"
            self.sequences[key2] = DraftPath("", why, t.source, t.line, steps)

    # --- writing --------------------------------------------------------------------------

    def _name(self, d: DraftLock, taken: set[str]) -> str:
        if d.kind in ("row", "table"):
            base = slug((d.table or "").rsplit(".", 1)[-1]) + (
                "-row" if d.kind == "row" else "-table"
            )
        else:
            prefix, text = _family(d)
            name = next(iter(sorted(d.names)), "")
            path = next(iter(sorted(d.paths)), "")
            # a key's text names its family by its first word: desired-state:..., lifecycle:...
            lead = re.match(r"[A-Za-z0-9_-]*", prefix or text or "")
            named = (lead[0] if lead else "") or name or (f"{path}-key" if path else "")
            base = slug(named or "advisory-key", "advisory-key")
        out, n = base, 2
        while out in taken:
            out, n = f"{base}-{n}", n + 1
        taken.add(out)
        return out

    def write(self, out_dir: Path, root: Path | None) -> list[str]:
        """Write the draft; returns the files written, relative to `out_dir`."""
        taken = set(self.model.locks) if self.model is not None else set()
        taken |= set(self.model.paths) if self.model is not None else set()
        used = self._used()
        drafts = [d for key, d in self.locks.items() if key in used]
        merged: dict[tuple[object, ...], DraftLock] = {}
        families = {_identity(d): d for d in drafts if _family(d)[0]}
        for d in sorted(drafts, key=lambda d: (d.source, d.line)):
            same = merged.get(_identity(d)) or _family_of(d, families)
            if same is None:
                merged[_identity(d)] = d
                d.id = self._name(d, taken)
            else:
                d.id = same.id
                for mode, hows in d.modes.items():
                    same.modes.setdefault(mode, []).extend(
                        h for h in hows if h not in same.modes[mode]
                    )
                same.count += d.count
        for d in merged.values():
            for mode in sorted(self.implicit.get(d.table or "", ())) if d.kind == "row" else ():
                d.modes.setdefault(mode, ["UPDATE or DELETE"])
        names = {repr(k): d.id for k, d in self.locks.items() if d.id}
        written = []
        out_dir.mkdir(parents=True, exist_ok=True)
        lock_text = "".join(_lock_yaml(d) for d in merged.values())
        (out_dir / "paths").mkdir(exist_ok=True)
        if self.model is None:
            (out_dir / "locks.yaml").write_text(_new_locks_file(lock_text or None), "utf-8")
        else:
            assert root is not None
            (out_dir / "locks.yaml").write_text(
                _with_locks(root / "locks.yaml", lock_text), "utf-8"
            )
        written.append("locks.yaml")
        paths = list(self.paths.values())
        for n, p in enumerate(sorted(self.sequences.values(), key=lambda p: (p.source, p.line)), 1):
            p.id = f"observed-{n}"
            while p.id in taken:
                p.id += "-x"
            paths.append(p)
        if paths:
            text = _paths_yaml(paths, names, self.model)
            (out_dir / "paths" / "observed.yaml").write_text(text, "utf-8")
            written.append("paths/observed.yaml")
        return written

    def _used(self) -> set[tuple[object, ...]]:
        return set(self.locks)


def _family_of(d: DraftLock, families: dict[tuple[object, ...], DraftLock]) -> DraftLock | None:
    """The family a fixed-text advisory draft belongs to: one whose prefix its text starts
    with, hashed the same way (a statement that wrote one key of the family in full)."""
    text = _family(d)[1]
    if d.kind != "advisory" or text is None:
        return None
    mine = _identity(d)
    for key, fam in families.items():
        fam_prefix, _ = _family(fam)
        if fam_prefix and text.startswith(fam_prefix) and key[1] == mine[1] and key[4] == mine[4]:
            return fam if fam.id else None
    return None


def _identity(d: DraftLock) -> tuple[object, ...]:
    if d.kind != "advisory":
        return (d.kind, d.table)
    prefix, text = _family(d)
    part = d.static.parts[0] if d.static is not None and d.static.parts else None
    fn = part.function if part is not None else None
    return (
        "advisory",
        fn,
        prefix,
        text,
        part.seed if part is not None else 0,
        len(d.static.parts) if d.static else 0,
    )


def _family(d: DraftLock) -> tuple[str | None, str | None]:
    """(prefix of a family, text of a fixed key) of an advisory draft."""
    part = d.static.parts[0] if d.static is not None and d.static.parts else None
    if part is None or part.function is None:
        return None, None
    if part.text is not None and len(d.texts) <= 1:
        return None, part.text  # the same literal text every time: one fixed key
    if part.text is None:
        return part.prefix or "", None  # a literal prefix, then parameters
    texts = sorted(d.texts)
    common = texts[0][
        : next(
            (i for i, (a, b) in enumerate(zip(texts[0], texts[-1], strict=False)) if a != b),
            min(len(texts[0]), len(texts[-1])),
        )
    ]
    cut = max((i + 1 for i, ch in enumerate(common) if not ch.isalnum()), default=0)
    return common[:cut], None


def _key_yaml(d: DraftLock) -> list[str]:
    part = d.static.parts[0] if d.static is not None and d.static.parts else None
    if d.static is not None and len(d.static.parts) == 2:
        halves = []
        for p in d.static.parts:
            halves.append(str(p.value) if p.value is not None else "{integer: {of: part}}")
        return [f"    key: {{int4pair: {{first: {halves[0]}, second: {halves[1]}}}}}"]
    if part is None or part.function is None:
        if len(d.values) == 1:
            return [f"    key: {{constant: {{value: {next(iter(d.values))}}}}}"]
        return ["    key: {integer: {of: the key the code passes}}"]
    prefix, text = _family(d)
    seed = f", seed: {part.seed}" if part.function == "hashtextextended" else ""
    if text is not None:
        return [f"    key: {{{part.function}: {{text: {q(text)}{seed}}}}}"]
    pre = f"prefix: {q(prefix)}, " if prefix else ""
    return [f"    key: {{{part.function}: {{{pre}parts: [the rest of the key]{seed}}}}}"]


def _lock_yaml(d: DraftLock) -> str:
    where = f"{d.source}:{d.line}"
    seen = f", seen {d.count} times" if d.count > 1 else ""
    title = (
        d.table + (" row" if d.kind == "row" else " table") if d.table else d.id.replace("-", " ")
    )
    lines = [
        f"  {d.id}:  # drafted by lockdocs observe from {where} ({d.how}){seen}",
        f"    title: {q(title)}",
        f"    kind: {d.kind}",
    ]
    if d.table:
        lines.append(f"    table: {q(d.table)}")
    if d.kind == "advisory":
        lines += _key_yaml(d)
    lines.append("    modes:")
    for mode, hows in sorted(d.modes.items()):
        lines.append(f"      {mode}: {q('; '.join(hows))}")
    if d.kind == "row" and len(d.orders) == 1:
        lines.append(f"    instances: {{order: {q(next(iter(d.orders)))}}}")
    return "\n".join(lines) + "\n"


def _new_locks_file(locks: str | None) -> str:
    head = (
        "# Drafted by lockdocs observe from a server log: review every entry, name the locks\n"
        "# and paths as the code does, and say what each serializes, before you commit it.\n"
        "lockdocs: 1\n"
        "page:\n"
        '  title: "Database locks"\n'
    )
    return head + (
        "locks:\n" + locks
        if locks
        else "locks:\n  placeholder:  # the log showed no lock\n    title: placeholder\n    kind: advisory\n    key: {constant: {value: 1}}\n"
    )


def _with_locks(locks_file: Path, extra: str) -> str:
    """The project's locks.yaml with `extra` (entries of `locks:`) added at the end of its
    `locks:` mapping, found with the YAML node marks; without a block `locks:` mapping the
    entries go at the end, under a `locks:` of their own comment."""
    text = locks_file.read_text("utf-8")
    if not extra:
        return text
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        root = None
    if isinstance(root, yaml.MappingNode):
        for k, v in root.value:
            if (
                k.value == "locks"
                and isinstance(v, yaml.MappingNode)
                and not v.flow_style
                and v.value
            ):
                indent = v.value[0][0].start_mark.column
                block = "".join(
                    " " * (indent - 2) + line + "\n" if line.strip() else "\n"
                    for line in extra.rstrip("\n").split("\n")
                )
                lines = text.split("\n")
                end = v.end_mark.line
                # end_mark sits after the last value: step back over trailing blank and comment
                # lines, which belong to what follows.
                while end > 0 and (
                    not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
                ):
                    end -= 1
                return "\n".join(lines[:end]) + "\n" + block + "\n".join(lines[end:])
    return (
        text
        + "\n# lockdocs observe: add these under locks:\n"
        + "".join("# " + line + "\n" for line in extra.split("\n"))
    )


def _paths_yaml(paths: list[DraftPath], names: dict[str, str], model: m.Model | None) -> str:
    lines = [
        "# Drafted by lockdocs observe: the transactions the log showed that no declared path",
        "# covers. Rename each path, give it its entry point, and check its steps against the code.",
        "group: Observed",
        "paths:",
    ]
    for p in paths:
        seen = f", seen {p.count} times" if p.count > 1 else ""
        lines.append(f"  {p.id}:  # {p.why}, from {p.source}:{p.line}{seen}")
        lines.append(f"    title: {q(p.id.replace('-', ' '))}")
        lines.append("    steps:")
        for ref, mode, via, many, order in p.steps:
            lock = names.get(ref[1:], ref[1:]) if ref.startswith("\0") else ref
            take = [f"      - take: {lock}"]
            declared = model.locks.get(lock) if model is not None else None
            if declared is None or mode in declared.mode_names:
                take.append(f"        mode: {mode}")
            else:
                # the log shows a mode the declared lock lacks: the step keeps a declared one
                strongest = declared.mode_names[-1] if declared.mode_names else mode
                take[0] += f"  # the log shows {mode}, which {lock} does not declare"
                take.append(f"        mode: {strongest}")
            if via:
                take.append(f"        via: {q(via)}")
            if many:
                lines.append("      - loop: each row the statement locks")
                lines.append(f"        order: {q(order[0]) if order else 'none'}")
                lines.append("        steps:")
                lines.extend("    " + x for x in take)
            else:
                lines.extend(take)
    return "\n".join(lines) + "\n"


__all__ = ["Proposer", "slug"]
