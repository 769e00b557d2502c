"""Entry points: scan the project's `code:` (or the files named), and compare with the model."""

from __future__ import annotations

from pathlib import Path

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.scan.collect import ScanResult, glob_files, scan_files
from lockdocs.scan.compare import compare
from lockdocs.scan.decls import Coverage
from lockdocs.scan.files import path_files


def references(model: m.Model | None) -> list[tuple[str, m.Reference]]:
    """(the parent table, a foreign key into it) for every declared `references:`."""
    if model is None:
        return []
    return [
        (lock.table, ref) for lock in model.locks.values() if lock.table for ref in lock.references
    ]


def scan_model(model: m.Model) -> ScanResult:
    root = Path(model.root)
    files, diags = glob_files(root, model.code)
    result = scan_files(
        root, files, references(model), complete=True, placeholders=model.code_placeholders
    )
    result.warnings = diags + result.warnings
    result.patterns = tuple(g.pattern for g in model.code)
    return result


def scan_paths(
    root: Path, paths: list[Path], model: m.Model | None
) -> tuple[ScanResult, list[str]]:
    """The files named on the command line; also returns the names that do not exist."""
    files, missing, skipped = path_files(paths, root)
    placeholders = model.code_placeholders if model is not None else None
    result = scan_files(root, files, references(model), complete=False, placeholders=placeholders)
    result.patterns = tuple(str(p) for p in paths)
    result.warnings = [
        Diagnostic(w.code, Severity.WARNING, w.message, Location(name, w.line, w.column), w.hint)
        for name, w in skipped
    ] + result.warnings
    return result, missing


def check_code(model: m.Model) -> tuple[list[Diagnostic], Coverage]:
    """The scan's warnings and the comparison's findings, and the coverage."""
    scan = scan_model(model)
    found, coverage = compare(model, scan)
    return scan.warnings + found, coverage
