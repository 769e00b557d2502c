"""The whole front end: assemble_model loads the documents and resolves them, section by
section, into one `Model`; the page, `planned:`, `differences:` and `code:` are resolved here.
"""

from __future__ import annotations

from pathlib import Path as FsPath
from typing import Any

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.project.files import load_documents
from lockdocs.project.locks import check_parents, resolve_locks, resolve_replicas
from lockdocs.project.paths import resolve_paths, resolve_transactions
from lockdocs.project.root import LOCKS_FILE
from lockdocs.project.rules import resolve_rules, resolve_waivers
from lockdocs.project.state import Resolver, did_you_mean


def resolve(rv: Resolver) -> m.Model | None:
    """The model, or None when any section found an error (the sections run in this order,
    which is the order of their diagnostics)."""
    locks = resolve_locks(rv)
    check_parents(rv, locks)
    transactions = resolve_transactions(rv, locks)
    paths, groups = resolve_paths(rv, locks, transactions)
    rules = resolve_rules(rv, locks, transactions)
    waivers = resolve_waivers(rv, rules, paths, locks)
    page_raw = rv.data["page"]
    planned = tuple(
        m.Planned(
            p["issue"],
            p["title"],
            tuple(p.get("affects") or ()),
            tuple(
                m.PlannedTake(a["path"], a["lock"], a.get("mode"), a.get("holding"))
                for a in p.get("adds") or ()
            ),
            rv.ld.loc(("planned", i), key=True),
        )
        for i, p in enumerate(rv.data.get("planned") or ())
    )
    for i, pl in enumerate(planned):
        for j, add in enumerate(pl.adds):
            base = ("planned", i, "adds", j)
            if add.path not in paths:
                rv.err(
                    "LD004",
                    rv.ld.loc((*base, "path")),
                    f"unknown path '{add.path}'",
                    did_you_mean(add.path, list(paths)),
                )
            rv.lock_ref(rv.ld, (*base, "lock"), add.lock, locks)
            if add.holding is not None:
                rv.lock_ref(rv.ld, (*base, "holding"), add.holding, locks)
        for j, a in enumerate(pl.affects):
            if a not in locks and a not in paths:
                rv.err(
                    "LD004",
                    rv.ld.loc(("planned", i, "affects", j)),
                    f"'{a}' is neither a lock nor a path",
                    did_you_mean(a, [*locks, *paths]),
                )
    code = resolve_code(rv)
    observe = resolve_observe(rv, paths)
    differences = []
    for i, raw in enumerate(rv.data.get("differences") or ()):
        for j, pid in enumerate(raw.get("paths") or ()):
            if pid not in paths:
                rv.err(
                    "LD004",
                    rv.ld.loc(("differences", i, "paths", j)),
                    f"unknown path '{pid}'",
                    did_you_mean(pid, list(paths)),
                )
        for j, lid in enumerate(raw.get("locks") or ()):
            rv.lock_ref(rv.ld, ("differences", i, "locks", j), lid, locks)
        differences.append(
            m.Difference(
                raw["title"],
                raw["why"],
                raw.get("issue"),
                tuple(raw.get("paths") or ()),
                tuple(raw.get("locks") or ()),
            )
        )
    if any(d.severity is Severity.ERROR for d in rv.diags):
        return None
    return m.Model(
        root=str(rv.root),
        page=m.Page(
            title=page_raw["title"],
            audience=page_raw.get("audience"),
            summary=page_raw.get("summary"),
            intro=page_raw.get("intro"),
            output=page_raw.get("output", "database-locks.md"),
            key_intro=page_raw.get("key_intro"),
            order_intro=page_raw.get("order_intro"),
        ),
        locks=locks,
        transactions=transactions,
        paths=paths,
        groups=groups,
        rules=rules,
        waivers=waivers,
        planned=planned,
        differences=tuple(differences),
        issue_url=rv.data.get("issues"),
        rules_url=rv.data.get("rules_url"),
        checks=resolve_severities(rv.data.get("checks") or {}),
        check_options={
            code: {k: v for k, v in value.items() if k != "severity"}
            for code, value in (rv.data.get("checks") or {}).items()
            if isinstance(value, dict) and set(value) - {"severity"}
        },
        files=(LOCKS_FILE, *(d.file for d in rv.path_docs)),
        code=code,
        code_placeholders=rv.data.get("code_placeholders"),
        replicas=resolve_replicas(rv, locks),
        limits=m.Limits(**(rv.data.get("limits") or {})),
        observe=observe,
    )


def resolve_severities(checks: dict[str, Any]) -> dict[str, str]:
    """The severity set per check code: the value, or its severity: (YAML's false is off)."""
    out = {}
    for code, value in checks.items():
        severity = value.get("severity") if isinstance(value, dict) else value
        if severity is not None:
            out[code] = "off" if severity is False else str(severity)
    return out


def resolve_code(rv: Resolver) -> tuple[m.CodeGlob, ...]:
    """The `code:` globs the scan reads; one that reaches outside the project is an error."""
    out = []
    for i, pattern in enumerate(rv.data.get("code") or ()):
        loc = rv.ld.loc(("code", i))
        parts = pattern.replace("\\", "/").split("/")
        if pattern.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
            rv.err(
                "LD003",
                loc,
                f"code: '{pattern}' reaches outside the project",
                "write a pattern relative to the folder of locks.yaml, e.g. db/**/*.sql",
            )
            continue
        out.append(m.CodeGlob(pattern, loc))
    return tuple(out)


def resolve_observe(rv: Resolver, paths: dict[str, m.Path]) -> m.Observe:
    """`observe:`: every path it maps to must be declared."""
    raw = rv.data.get("observe") or {}
    tags: list[tuple[tuple[str, str], str]] = []
    apps: list[tuple[str, str]] = []
    for key, values in (raw.get("tags") or {}).items():
        for value, path in (values or {}).items():
            if _known_path(rv, ("observe", "tags", key, value), path, paths):
                tags.append(((str(key), str(value)), path))
    for name, path in (raw.get("application_name") or {}).items():
        if _known_path(rv, ("observe", "application_name", name), path, paths):
            apps.append((str(name), path))
    return m.Observe(tuple(tags), tuple(apps))


def _known_path(rv: Resolver, where: tuple[str, ...], path: str, paths: dict[str, m.Path]) -> bool:
    if path in paths:
        return True
    rv.err("LD004", rv.ld.loc(where), f"unknown path '{path}'", did_you_mean(path, list(paths)))
    return False


def assemble_model(root: FsPath) -> tuple[m.Model | None, list[Diagnostic]]:
    """The whole front end: files -> documents -> schema -> resolved model."""
    locks_doc, path_docs, diags = load_documents(root)
    if locks_doc is None:
        return None, diags
    if not path_docs and not any(d.severity is Severity.ERROR for d in diags):
        pass  # a project may declare locks before any path
    resolver = Resolver(root, locks_doc, path_docs)
    model = resolve(resolver)
    diags += resolver.diags
    if any(d.severity is Severity.ERROR for d in diags):
        return None, diags
    return model, diags
