"""The shared state of resolving: the documents, the diagnostics found so far, and the checks
every section makes on a reference (a lock named, the mode it is taken in).

The sections (locks, steps, paths, rules, build) are free functions over one `Resolver`.
"""

from __future__ import annotations

import difflib
from pathlib import Path as FsPath
from typing import Any

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.grammar import an
from lockdocs.load import Document
from lockdocs.modes import modes_for_kind
from lockdocs.schema.vocabulary import ALL_MODES


def did_you_mean(name: str, known: list[str]) -> str:
    """The hint for an unknown name: the closest declared one, or what is declared."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    if not known:
        return "declare it first"
    shown = ", ".join(sorted(known)[:8])
    return f"declared ones: {shown}{', ...' if len(known) > 8 else ''}"


def via(value: Any) -> tuple[str, ...]:
    """A `via:` value (one name or a list) as a tuple."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


class Resolver:
    """The documents being resolved and the diagnostics found so far; every section of the
    resolving reads and appends to this one object."""

    def __init__(self, root: FsPath, locks_doc: Document, path_docs: list[Document]) -> None:
        self.root = root
        self.ld = locks_doc
        self.path_docs = path_docs
        self.diags: list[Diagnostic] = []
        self.data: dict[str, Any] = locks_doc.data

    def err(self, code: str, loc: Location, message: str, hint: str) -> None:
        self.diags.append(Diagnostic(code, Severity.ERROR, message, loc, hint))

    def lock_ref(
        self, doc: Document, path: tuple[str | int, ...], name: str, locks: dict[str, m.Lock]
    ) -> bool:
        if name in locks:
            return True
        self.err(
            "LD004",
            doc.loc(path),
            f"unknown lock '{name}'",
            did_you_mean(name, list(locks)),
        )
        return False

    def mode_ok(
        self,
        doc: Document,
        path: tuple[str | int, ...],
        lock: m.Lock,
        mode: str | None,
    ) -> str:
        """The mode a reference means; reports a mode the lock's kind (or the lock) lacks."""
        if mode is None:
            if lock.default_mode is None:
                self.err(
                    "LD006",
                    doc.loc(path),
                    f"lock '{lock.id}' is taken in several modes; this step names none",
                    "add mode: " + " or ".join(lock.mode_names),
                )
                return lock.mode_names[0]
            return lock.default_mode
        valid = modes_for_kind(lock.kind)
        if mode not in ALL_MODES:  # a typo: the schema lets it through for this message
            close = difflib.get_close_matches(mode, [*lock.mode_names, *valid], n=1)
            self.err(
                "LD006",
                doc.loc((*path, "mode")),
                f"'{mode}' is not a mode of this lock ('{lock.id}')"
                + (f"; did you mean '{close[0]}'?" if close else ""),
                f"lock '{lock.id}' is declared with " + " or ".join(lock.mode_names),
            )
        elif mode not in valid:
            self.err(
                "LD006",
                doc.loc((*path, "mode")),
                f"{an(lock.kind)} lock has no mode '{mode}'",
                f"modes of {an(lock.kind)} lock: " + ", ".join(valid),
            )
        elif mode not in lock.mode_names:
            self.err(
                "LD006",
                doc.loc((*path, "mode")),
                f"lock '{lock.id}' is not declared with mode '{mode}'",
                f"add '{mode}' to the modes of lock '{lock.id}' in locks.yaml, or use "
                + " or ".join(lock.mode_names),
            )
        return mode
