"""`lockdocs diff`: what a change to the declarations does to the locks, the order and the findings.

A reviewer of a pull request reads the YAML diff, but the YAML diff does not say that a reordered
step adds an order edge, closes a cycle or fixes a waived finding. This module loads both sides
(a git revision, a folder, or the working tree), resolves and analyses each as `check` does, and
compares the resolved models: locks (with renames told apart from a removal and an addition),
order edges, each path's acquisition sequence, findings, rules and exceptions.

The comparison is one JSON-ready dict; the text, Markdown (a pull-request comment) and JSON
outputs only format it.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Severity

LOCKS_FILE = "locks.yaml"
# What a project's declarations are made of, besides the paths folder (named in locks.yaml).
EXTRA_FILES = ("templates", "pyproject.toml")
# Findings of these severities fail `--fail-on new-findings`; info findings are shown only.
FAILING = (Severity.ERROR, Severity.WARNING)


class DiffInputError(Exception):
    """Bad input at either side: exit 2 with this message (and the side's diagnostics)."""

    def __init__(self, message: str, details: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details  # printed before the message: the side's diagnostics
        self.hint = hint  # printed after it


@dataclass(frozen=True)
class Side:
    """One side of the comparison, loaded and analysed."""

    label: str
    model: m.Model
    findings: list[Diagnostic]


# --- reading a side ---------------------------------------------------------------------------


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise DiffInputError("git is not installed; compare two folders instead") from None


_PATHS_KEY = re.compile(r"""^paths:[ \t]*["']?([^"'#\n]*?)["']?[ \t]*(?:#.*)?$""", re.MULTILINE)


def _paths_folder(locks_text: bytes) -> str:
    """The paths folder that locks.yaml names (paths/ by default). A line match, not a YAML
    parse: the loader parses the file later, with its limits on size and aliases."""
    found = _PATHS_KEY.search(locks_text.decode("utf-8", "replace"))
    folder = found.group(1).strip().strip("/") if found else ""
    return folder or "paths"


def materialize(rev: str, project: Path, dest: Path) -> None:
    """Write the project's declaration files as they are at `rev` into `dest`.

    Only locks.yaml, the paths folder, templates/ and pyproject.toml: what the model and the
    severity settings are built from. The project may sit in a subfolder of the repository.
    """
    if rev.startswith("-"):  # never let a revision be read as an option
        raise DiffInputError(f"unknown revision {rev}")
    top = _git(["rev-parse", "--show-toplevel"], project)
    if top.returncode != 0:
        raise DiffInputError(f"'{rev}' is not a folder, and {project} is not in a git repository")
    toplevel = Path(top.stdout.decode().strip())
    prefix = _git(["rev-parse", "--show-prefix"], project).stdout.decode().strip()
    found = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], toplevel)
    if found.returncode != 0:
        raise DiffInputError(f"unknown revision {rev}")
    commit = found.stdout.decode().strip()
    where = f" (in {prefix.rstrip('/')})" if prefix else ""
    locks = _git(["show", f"{commit}:{prefix}{LOCKS_FILE}"], toplevel)
    if locks.returncode != 0:
        raise DiffInputError(
            f"no {LOCKS_FILE} at revision {rev}{where}",
            hint="run lockdocs diff in the project's folder, or pass --root DIR",
        )
    dest.mkdir(parents=True, exist_ok=True)
    (dest / LOCKS_FILE).write_bytes(locks.stdout)
    wanted = [f"{prefix}{_paths_folder(locks.stdout)}", *(f"{prefix}{x}" for x in EXTRA_FILES)]
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", commit, "--", *wanted], toplevel)
    if listing.returncode != 0:
        raise DiffInputError(
            f"cannot list the files of revision {rev}: {listing.stderr.decode().strip()}"
        )
    for entry in listing.stdout.decode().split("\0"):
        if not entry:
            continue
        meta, _, name = entry.partition("\t")
        if meta.split(" ")[1:2] != ["blob"] or not name.startswith(prefix):
            continue
        rel = Path(name[len(prefix) :])
        if rel.is_absolute() or ".." in rel.parts:
            continue
        blob = _git(["show", f"{commit}:{name}"], toplevel)
        if blob.returncode != 0:
            raise DiffInputError(f"cannot read {name} at revision {rev}")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.stdout)


def _is_revision(spec: str, project: Path) -> bool:
    if spec.startswith("-"):
        return False
    probe = _git(["rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"], project)
    return probe.returncode == 0


def _diagnostics_text(diags: list[Diagnostic]) -> str:
    from lockdocs.report import REPORTERS

    return REPORTERS["text"](diags, "")


def load_side(root: Path, label: str) -> Side:
    """Load and analyse one side; invalid declarations are bad input (exit 2), as in `check`."""
    from lockdocs.api import analyse, load

    model, diags = load(root)
    if model is None:
        raise DiffInputError(f"the declarations at {label} are not valid", _diagnostics_text(diags))
    findings = analyse(model)
    bad = [d for d in findings if d.code.startswith("LD0") and d.severity is Severity.ERROR]
    if bad:
        raise DiffInputError(f"the declarations at {label} are not valid", _diagnostics_text(bad))
    return Side(label, model, findings)


@contextmanager
def open_side(spec: str | None, project: Path) -> Iterator[Side]:
    """A side from a folder, a git revision, or (spec None) the project's working tree.

    A folder wins when it holds locks.yaml; otherwise the spec is a revision.
    """
    if spec is None:
        if not (project / LOCKS_FILE).is_file():
            raise DiffInputError(f"no {LOCKS_FILE} in {project}")
        yield load_side(project, "working tree")
        return
    folder = Path(spec)
    if (folder / LOCKS_FILE).is_file():
        yield load_side(folder, spec)
        return
    if folder.is_dir() and not _is_revision(spec, project):
        raise DiffInputError(f"no {LOCKS_FILE} in {spec}")
    with tempfile.TemporaryDirectory(prefix="lockdocs-diff-") as tmp:
        materialize(spec, project, Path(tmp))
        yield load_side(Path(tmp), spec)


# --- comparing ----------------------------------------------------------------------------------


def _lock_signature(lock: m.Lock) -> tuple[str, str] | None:
    """What makes a lock the same lock under another id: its key, else its table."""
    from lockdocs.keys import key_sql

    if lock.key is not None:
        return ("key", f"{lock.key.construction}|{key_sql(lock.key)}|{lock.key.value}")
    if lock.table:
        return ("table", lock.table)
    return None


def _renames(base: m.Model, head: m.Model) -> dict[str, tuple[str, str]]:
    """base id -> (head id, what matched), when exactly one removed and one added lock agree."""
    removed = [lid for lid in base.locks if lid not in head.locks]
    added = [lid for lid in head.locks if lid not in base.locks]
    out: dict[str, tuple[str, str]] = {}
    for lid in removed:
        lock = base.locks[lid]
        sig = _lock_signature(lock)
        if sig is None:
            continue
        olds = [x for x in removed if _lock_signature(base.locks[x]) == sig]
        news = [
            x
            for x in added
            if head.locks[x].kind == lock.kind and _lock_signature(head.locks[x]) == sig
        ]
        if len(olds) == 1 and len(news) == 1:
            what = "same key" if sig[0] == "key" else f"same table {sig[1]}"
            out[lid] = (news[0], what)
    return out


def _lock_facts(lock: m.Lock) -> dict[str, str]:
    from lockdocs.keys import key_sql

    takers = [f"{t.name} ({t.mode})" if t.mode else t.name for t in lock.takers]
    return {
        "title": lock.title,
        "kind": lock.kind,
        "scope": lock.scope,
        "key": key_sql(lock.key) if lock.key else "",
        "table": lock.table or "",
        "modes": ", ".join(lock.mode_names),
        "takers": ", ".join(takers),
    }


def _lock_brief(lock: m.Lock) -> dict[str, Any]:
    facts = _lock_facts(lock)
    return {
        "id": lock.id,
        "title": lock.title,
        "kind": lock.kind,
        "key": facts["key"] or None,
        "table": lock.table,
        "modes": list(lock.mode_names),
    }


def _lock_changes(before: m.Lock, after: m.Lock) -> list[dict[str, str]]:
    a, b = _lock_facts(before), _lock_facts(after)
    return [{"field": k, "before": a[k], "after": b[k]} for k in a if a[k] != b[k]]


def _compare_locks(
    base: m.Model, head: m.Model, renames: dict[str, tuple[str, str]]
) -> dict[str, list[dict[str, Any]]]:
    renamed_to = {new for new, _ in renames.values()}
    added = [
        _lock_brief(lk)
        for lid, lk in head.locks.items()
        if lid not in base.locks and lid not in renamed_to
    ]
    removed = [
        _lock_brief(lk)
        for lid, lk in base.locks.items()
        if lid not in head.locks and lid not in renames
    ]
    renamed = [
        {
            "from": old,
            "to": new,
            "matched_by": what,
            "changes": _lock_changes(base.locks[old], head.locks[new]),
        }
        for old, (new, what) in sorted(renames.items())
    ]
    changed = []
    for lid, lock in head.locks.items():
        if lid in base.locks:
            changes = _lock_changes(base.locks[lid], lock)
            if changes:
                changed.append({"id": lid, "changes": changes})
    return {"added": added, "removed": removed, "renamed": renamed, "changed": changed}


def _rename_text(text: str, mapping: dict[str, str]) -> str:
    """Old lock ids in a message, replaced by the new ones (whole ids only)."""
    for old, new in mapping.items():
        text = re.sub(rf"(?<![\w.-]){re.escape(old)}(?![\w-]|\.\w)", new, text)
    return text


def order_edges(model: m.Model, mapping: dict[str, str]) -> dict[tuple[str, str], list[str]]:
    """(held, wanted) -> the paths that create the edge, over every backend."""
    from lockdocs.analysis.graph import build_graph
    from lockdocs.rules.context import Context

    ctx = Context(model)
    out: dict[tuple[str, str], set[str]] = {}
    for backend in ctx.backends:
        for e in build_graph(ctx, backend).edges:
            pair = (mapping.get(e.src, e.src), mapping.get(e.dst, e.dst))
            out.setdefault(pair, set()).add(e.path)
    return {pair: sorted(paths) for pair, paths in sorted(out.items())}


def _compare_edges(
    base: dict[tuple[str, str], list[str]], head: dict[tuple[str, str], list[str]]
) -> dict[str, list[dict[str, Any]]]:
    """Edges added and removed, and as context the unchanged edges among the locks they join."""

    def row(pair: tuple[str, str], paths: list[str]) -> dict[str, Any]:
        return {"src": pair[0], "dst": pair[1], "paths": paths}

    added = [p for p in head if p not in base]
    removed = [p for p in base if p not in head]
    nodes = {lock for pair in added + removed for lock in pair}
    context = [p for p in head if p in base and p[0] in nodes and p[1] in nodes]
    return {
        "added": [row(p, head[p]) for p in added],
        "removed": [row(p, base[p]) for p in removed],
        "context": [row(p, head[p]) for p in context],
    }


def acquisition_sequence(
    model: m.Model, path: m.Path, mapping: dict[str, str] | None = None
) -> list[str]:
    """The order a path takes its locks, one line per take, loops and branches indented.

    Read from the steps, not the flattened events: no line numbers and no doubled loop
    iterations, so two sides compare by what a reader sees.
    """
    names = mapping or {}

    def lock(lid: str) -> str:
        return names.get(lid, lid)

    def first_take(tx: str | None, indent: str) -> list[str]:
        kind = model.transactions.get(tx) if tx else None
        if kind is None or not kind.first_lock:
            return []
        return [f"{indent}{lock(kind.first_lock)} {kind.first_mode or 'exclusive'} (first in {tx})"]

    def walk(steps: tuple[m.Step, ...], indent: str, depth: int) -> list[str]:
        out: list[str] = []
        for s in steps:
            if isinstance(s, m.Take):
                extra = " again" if s.again else ""
                extra += f" [{s.backend}]" if s.backend else ""
                out.append(f"{indent}{lock(s.lock)} {s.mode}{extra}")
            elif isinstance(s, m.Loop):
                inner = walk(s.steps, indent + "  ", depth)
                if inner:
                    order = f", {s.order}" if s.order else ""
                    out += [f"{indent}each of {s.label}{order}:", *inner]
            elif isinstance(s, m.Branches):
                for name, alt in s.alternatives:
                    inner = walk(alt, indent + "  ", depth)
                    if inner:
                        out += [f"{indent}if {name}:", *inner]
            elif isinstance(s, m.Run) and s.path in model.paths and depth < 16:
                inner = walk(model.paths[s.path].steps, indent + "  ", depth + 1)
                if inner:
                    out += [f"{indent}run {s.path}:", *inner]
            elif isinstance(s, m.Begin):
                out += [f"{indent}begin {s.transaction}", *first_take(s.transaction, indent)]
            elif isinstance(s, m.End) and s.how != "leave_open":
                out.append(f"{indent}{s.how}")
            elif isinstance(s, m.Release):
                out.append(f"{indent}release {lock(s.lock)}")
        return out

    lines = first_take(path.transaction, "") + walk(path.steps, "", 0)
    # A trailing commit says nothing about order.
    while lines and lines[-1] in ("commit", "rollback"):
        lines.pop()
    return lines


def _compare_paths(
    base: m.Model, head: m.Model, mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    def brief(model: m.Model, p: m.Path, seq: list[str]) -> dict[str, Any]:
        return {"id": p.id, "title": p.title, "file": p.file, "acquisitions": seq}

    added = [
        brief(head, p, acquisition_sequence(head, p))
        for pid, p in head.paths.items()
        if pid not in base.paths
    ]
    removed = [
        brief(base, p, acquisition_sequence(base, p, mapping))
        for pid, p in base.paths.items()
        if pid not in head.paths
    ]
    changed = []
    for pid, p in head.paths.items():
        if pid not in base.paths:
            continue
        before = acquisition_sequence(base, base.paths[pid], mapping)
        after = acquisition_sequence(head, p)
        if before != after:
            changed.append(
                {
                    "id": pid,
                    "title": p.title,
                    "file": p.file,
                    "reordered": sorted(before) == sorted(after),
                    "before": before,
                    "after": after,
                }
            )
    return {"added": added, "removed": removed, "changed": changed}


_LOCATION = re.compile(r"(\b[\w./-]+\.ya?ml):\d+(?::\d+)?")
_LINE = re.compile(r"\bline \d+")


def finding_key(d: Diagnostic, mapping: dict[str, str]) -> tuple[Any, ...]:
    """What makes a finding the same finding on both sides: not its line numbers."""
    message = _LINE.sub("line", _LOCATION.sub(r"\1", d.message))
    return (
        d.code,
        tuple(d.paths),
        tuple(sorted(mapping.get(x, x) for x in d.locks)),
        _rename_text(message, mapping),
    )


def _finding(d: Diagnostic) -> dict[str, Any]:
    from lockdocs.report import diagnostic_json

    return diagnostic_json(d)


def _compare_findings(
    base: list[Diagnostic], head: list[Diagnostic], mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    before: dict[tuple[Any, ...], Diagnostic] = {}
    for d in base:
        before.setdefault(finding_key(d, mapping), d)
    after: dict[tuple[Any, ...], Diagnostic] = {}
    for d in head:
        after.setdefault(finding_key(d, {}), d)
    new = [_finding(d) for k, d in after.items() if k not in before]
    fixed = [_finding(d) for k, d in before.items() if k not in after]
    waived = [
        _finding(d) for k, d in after.items() if k in before and d.waived_by and before[k].waived_by
    ]
    newly_waived = [
        _finding(d)
        for k, d in after.items()
        if k in before and d.waived_by and not before[k].waived_by
    ]
    unwaived = [
        _finding(d)
        for k, d in after.items()
        if k in before and not d.waived_by and before[k].waived_by
    ]
    return {
        "new": new,
        "fixed": fixed,
        "newly_waived": newly_waived,
        "still_waived": waived,
        "no_longer_waived": unwaived,
    }


def _compare_exceptions(
    base: m.Model, head: m.Model, mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    def row(w: m.Waiver, lock: str | None) -> dict[str, Any]:
        return {
            "rule": w.rule,
            "path": w.path,
            "lock": lock,
            "issue": w.issue,
            "title": w.title,
            "why": w.why,
        }

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["rule"], r["path"], r["lock"], r["issue"])

    before = [row(w, mapping.get(w.lock, w.lock) if w.lock else None) for w in base.waivers]
    after = [row(w, w.lock) for w in head.waivers]
    keys_before = {key(r) for r in before}
    keys_after = {key(r) for r in after}
    return {
        "added": [r for r in after if key(r) not in keys_before],
        "removed": [r for r in before if key(r) not in keys_after],
    }


def _renamed_params(value: object, mapping: dict[str, str]) -> object:
    """A rule's parameters with old lock ids replaced, so a rename alone changes no rule."""
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, tuple | list):
        return tuple(_renamed_params(v, mapping) for v in value)
    return value


def _compare_rules(
    base: m.Model, head: m.Model, mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    def row(r: m.Rule) -> dict[str, Any]:
        return {"id": r.id, "title": r.title, "check": r.check}

    def check(r: m.Rule, names: dict[str, str]) -> object:
        return (r.check, tuple((k, _renamed_params(v, names)) for k, v in r.params))

    changed = [
        row(r)
        for rid, r in head.rules.items()
        if rid in base.rules and check(base.rules[rid], mapping) != check(r, {})
    ]
    return {
        "added": [row(r) for rid, r in head.rules.items() if rid not in base.rules],
        "removed": [row(r) for rid, r in base.rules.items() if rid not in head.rules],
        "changed": changed,
    }


def compare(base: Side, head: Side) -> dict[str, Any]:
    """The whole comparison as plain data: what every output format prints."""
    renames = _renames(base.model, head.model)
    mapping = {old: new for old, (new, _) in renames.items()}
    findings = _compare_findings(base.findings, head.findings, mapping)
    failing = [
        f
        for f in findings["new"] + findings["no_longer_waived"]
        if not f["waived_by"] and Severity(f["severity"]) in FAILING
    ]
    result: dict[str, Any] = {
        "base": base.label,
        "head": head.label,
        "locks": _compare_locks(base.model, head.model, renames),
        "edges": _compare_edges(order_edges(base.model, mapping), order_edges(head.model, {})),
        "paths": _compare_paths(base.model, head.model, mapping),
        "findings": findings,
        "exceptions": _compare_exceptions(base.model, head.model, mapping),
        "rules": _compare_rules(base.model, head.model, mapping),
        "new_unwaived": len(failing),
    }
    result["summary"] = summary_line(result)
    return result


def _count(n: int, word: str, plural: str = "") -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def summary_counts(result: dict[str, Any]) -> list[str]:
    """The non-zero counts, in reading order."""
    locks, edges, paths = result["locks"], result["edges"], result["paths"]
    findings, exceptions, rules = result["findings"], result["exceptions"], result["rules"]
    parts = [
        (len(locks["added"]), "lock", "", "added"),
        (len(locks["removed"]), "lock", "", "removed"),
        (len(locks["renamed"]), "lock", "", "renamed"),
        (len(locks["changed"]), "lock", "", "changed"),
        (len(edges["added"]), "order edge", "", "added"),
        (len(edges["removed"]), "order edge", "", "removed"),
        (len(paths["added"]), "path", "", "added"),
        (len(paths["removed"]), "path", "", "removed"),
        (len([p for p in paths["changed"] if p["reordered"]]), "path", "", "reordered"),
        (len([p for p in paths["changed"] if not p["reordered"]]), "path", "", "changed"),
        (len(rules["added"]), "rule", "", "added"),
        (len(rules["removed"]), "rule", "", "removed"),
        (len(rules["changed"]), "rule", "", "changed"),
        (len(exceptions["added"]), "exception", "", "added"),
        (len(exceptions["removed"]), "exception", "", "removed"),
        (len(findings["new"]), "new finding", "new findings", ""),
        (len(findings["no_longer_waived"]), "finding", "", "no longer waived"),
        (len(findings["fixed"]), "finding", "", "fixed"),
        (len(findings["newly_waived"]), "finding", "", "newly waived"),
        (len(findings["still_waived"]), "finding", "", "still waived"),
    ]
    return [
        f"{_count(n, word, plural)}{' ' + verb if verb else ''}"
        for n, word, plural, verb in parts
        if n
    ]


def summary_line(result: dict[str, Any]) -> str:
    counts = summary_counts(result)
    if not counts:
        return "no change to the locks, their order or the findings"
    line = ", ".join(counts)
    if result["new_unwaived"]:
        line += f"; {_count(result['new_unwaived'], 'new unwaived finding')} to fix or waive"
    return line


# --- output -------------------------------------------------------------------------------------


def _finding_text(f: dict[str, Any]) -> str:
    where = f"{f['file']}:{f['line']}:{f['column'] or 1}" if f["line"] else f["file"]
    waived = f" (waived: {f['waived_by']})" if f["waived_by"] else ""
    return f"{where}: {f['code']} {f['severity']}{waived}: {f['message']}"


def _exception_text(e: dict[str, Any]) -> str:
    on = [f"path {e['path']}" if e["path"] else "", f"lock {e['lock']}" if e["lock"] else ""]
    scope = " on " + ", ".join(x for x in on if x) if any(on) else ""
    issue = f" (#{e['issue']})" if e["issue"] else ""
    return f"{e['rule']}{scope}{issue}: {e['why']}"


def _edge_text(e: dict[str, Any]) -> str:
    return f"{e['src']} -> {e['dst']}  ({', '.join(e['paths'])})"


def side_by_side(before: list[str], after: list[str], *, reordered: bool = False) -> list[str]:
    """Two columns. A reordering pairs the lines by position ('~' where they differ); any other
    change aligns the lines the sides share ('-' a line gone, '+' a line new)."""
    width = max([len("before"), *(len(x) for x in before)]) + 2
    rows = [f"  {'before'.ljust(width)}  after"]
    if reordered:
        for a, b in zip(before, after, strict=True):
            rows.append(f"{'~' if a != b else ' '} {a.ljust(width)}  {b}")
        return [r.rstrip() for r in rows]
    ops = SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        left, right = before[i1:i2], after[j1:j2]
        for k in range(max(len(left), len(right))):
            a = left[k] if k < len(left) else ""
            b = right[k] if k < len(right) else ""
            mark = " " if tag == "equal" else "~" if a and b else "-" if a else "+"
            rows.append(f"{mark} {a.ljust(width)}  {b}")
    return [r.rstrip() for r in rows]


def _sections(result: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(title, lines) per non-empty section, shared by the text and Markdown outputs."""
    locks, edges, paths = result["locks"], result["edges"], result["paths"]
    out: list[tuple[str, list[str]]] = []

    lines: list[str] = []
    for lk in locks["added"]:
        lines.append(f"+ {lk['id']}: {lk['title']} ({_lock_kind_text(lk)})")
    for lk in locks["removed"]:
        lines.append(f"- {lk['id']}: {lk['title']} ({_lock_kind_text(lk)})")
    for r in locks["renamed"]:
        lines.append(f"~ {r['from']} -> {r['to']}: renamed ({r['matched_by']})")
        lines += [_change_text(c) for c in r["changes"]]
    for c in locks["changed"]:
        lines.append(f"~ {c['id']}:")
        lines += [_change_text(x) for x in c["changes"]]
    if lines:
        out.append(("Locks", lines))

    lines = [f"+ {_edge_text(e)}" for e in edges["added"]]
    lines += [f"- {_edge_text(e)}" for e in edges["removed"]]
    if lines:
        out.append(("Order edges (held -> taken next)", lines))

    lines = []
    for p in paths["added"]:
        lines.append(f"+ {p['id']}: {p['title']} ({p['file']})")
        lines += [f"    {x}" for x in p["acquisitions"]]
    for p in paths["removed"]:
        lines.append(f"- {p['id']}: {p['title']} ({p['file']})")
    for p in paths["changed"]:
        what = "reordered" if p["reordered"] else "takes other locks"
        lines.append(f"~ {p['id']}: {what} ({p['file']})")
        rows = side_by_side(p["before"], p["after"], reordered=p["reordered"])
        lines += [f"  {x}" for x in rows]
    if lines:
        out.append(("Paths", lines))

    f = result["findings"]
    lines = []
    for label, key in (("new", "new"), ("unwaived", "no_longer_waived")):
        for x in f[key]:
            lines.append(f"{label:<12} {_finding_text(x)}")
            lines += [f"    {d}" if d else "" for d in x["details"]]
            lines += [f"    hint: {x['hint']}"] if x["hint"] else []
    for label, key in (
        ("fixed", "fixed"),
        ("now waived", "newly_waived"),
        ("still waived", "still_waived"),
    ):
        lines += [f"{label:<12} {_finding_text(x)}" for x in f[key]]
    if lines:
        out.append(("Findings", lines))

    lines = [f"+ {r['id']}: {r['title']}" for r in result["rules"]["added"]]
    lines += [f"- {r['id']}: {r['title']}" for r in result["rules"]["removed"]]
    lines += [f"~ {r['id']}: {r['title']} (its check changed)" for r in result["rules"]["changed"]]
    if lines:
        out.append(("Rules", lines))

    lines = [f"+ {_exception_text(e)}" for e in result["exceptions"]["added"]]
    lines += [f"- {_exception_text(e)}" for e in result["exceptions"]["removed"]]
    if lines:
        out.append(("Exceptions", lines))
    return out


def _lock_kind_text(lk: dict[str, Any]) -> str:
    detail = lk["key"] or lk["table"]
    return f"{lk['kind']}, {detail}" if detail else lk["kind"]


def _change_text(c: dict[str, str]) -> str:
    return f"    {c['field']}: {c['before'] or '(none)'} -> {c['after'] or '(none)'}"


def format_text(result: dict[str, Any]) -> str:
    lines = [f"lockdocs diff {result['base']} -> {result['head']}"]
    for title, body in _sections(result):
        lines += ["", title, *(f"  {x}" for x in body)]
    lines += ["", result["summary"]]
    return "\n".join(lines) + "\n"


def format_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _dot_id(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_diagram(result: dict[str, Any]) -> str:
    """The changed part of the order graph: added edges green, removed red, context grey."""
    edges = result["edges"]
    added_locks = {lk["id"] for lk in result["locks"]["added"]}
    renamed = {r["to"]: r["from"] for r in result["locks"]["renamed"]}
    removed_locks = {lk["id"] for lk in result["locks"]["removed"]}
    rows: list[tuple[dict[str, Any], str]] = [
        *((e, 'color="#1a7f37", fontcolor="#1a7f37", penwidth=2') for e in edges["added"]),
        *((e, 'color="#cf222e", fontcolor="#cf222e", style=dashed') for e in edges["removed"]),
        *((e, 'color="#8c959f", fontcolor="#8c959f"') for e in edges["context"]),
    ]
    nodes = sorted({e["src"] for e, _ in rows} | {e["dst"] for e, _ in rows})
    lines = [
        "digraph lock_order_change {",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    for n in nodes:
        style = ""
        if n in added_locks:
            style = ' [color="#1a7f37", penwidth=2]'
        elif n in removed_locks:
            style = ' [color="#cf222e", style="rounded,dashed"]'
        elif n in renamed:
            style = f" [label={_dot_id(n + chr(10) + '(was ' + renamed[n] + ')')}]"
        lines.append(f"  {_dot_id(n)}{style};")
    for e, attrs in rows:
        label = _dot_id(", ".join(e["paths"]))
        lines.append(f"  {_dot_id(e['src'])} -> {_dot_id(e['dst'])} [label={label}, {attrs}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _md_escape(s: str) -> str:
    """Text in Markdown and GitHub's HTML: no tags, no emphasis surprises."""
    return (
        s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("*", "\\*")
        .replace("_", "\\_")
        .replace("`", "\\`")
    )


def _fence(body: str, lang: str) -> list[str]:
    ticks = "```"
    while ticks in body:
        ticks += "`"
    return [f"{ticks}{lang}", body.rstrip("\n"), ticks]


# GitHub refuses comments over 65536 characters: long sections are cut, the summary never is.
MD_SECTION_LINES = 400


def _code(s: str) -> str:
    ticks = "`"
    while ticks in s:
        ticks += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def _side_md(label: str) -> str:
    return label if label == "working tree" else _code(label)


def format_markdown(result: dict[str, Any]) -> str:
    """A pull-request comment: a summary line, then one collapsible section per kind of change."""
    summary = _md_escape(result["summary"])
    lines = [
        f"**lockdocs diff** {_side_md(result['base'])} → {_side_md(result['head'])}",
        "",
        f"⚠️ {summary}" if result["new_unwaived"] else summary,
    ]
    for name, body in _sections(result):
        opened = " open" if name == "Findings" and result["new_unwaived"] else ""
        count = _count(len(_heads(body)), "change")
        if len(body) > MD_SECTION_LINES:
            cut = len(body) - MD_SECTION_LINES
            body = [*body[:MD_SECTION_LINES], f"... {cut} more lines: run lockdocs diff locally"]
        lines += [
            "",
            f"<details{opened}><summary><b>{name}</b> ({count})</summary>",
            "",
            *_fence("\n".join(body), "text" if name == "Findings" else "diff"),
            "",
            "</details>",
        ]
    if result["edges"]["added"] or result["edges"]["removed"]:
        lines += [
            "",
            "<details><summary><b>Order graph</b> (the changed part: added edges green, removed "
            "red, unchanged grey)</summary>",
            "",
            *_fence(dot_diagram(result), "dot"),
            "",
            "</details>",
        ]
    return "\n".join(lines) + "\n"


def _heads(body: list[str]) -> list[str]:
    """The lines that start an item (not its indented detail)."""
    return [x for x in body if x[:1] not in (" ", "")]


FORMATTERS = {"text": format_text, "markdown": format_markdown, "json": format_json}


def run(base: str, head: str | None, project: Path) -> dict[str, Any]:
    """Open both sides and compare them; DiffInputError for bad input at either side."""
    if not project.is_dir():
        raise DiffInputError(f"no folder {project}")
    with open_side(base, project) as before, open_side(head, project) as after:
        return compare(before, after)
