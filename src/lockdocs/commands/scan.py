"""`lockdocs scan`: every lock the project's SQL takes, and with --coverage how the
declarations cover it. Loaded only by this command (it imports the scanner and pglast)."""

from __future__ import annotations

import sys
from pathlib import Path

from lockdocs.api import load
from lockdocs.commands import ScanFormat
from lockdocs.commands.common import NoRoot, emit, resolve_root
from lockdocs.diagnostics import printable
from lockdocs.project.root import RootNotFound, find_root, working_folder
from lockdocs.report import REPORTERS, diagnostic_json
from lockdocs.scan import output
from lockdocs.scan.compare import compare
from lockdocs.scan.run import scan_model, scan_paths


def scan(root: Path | None, paths: list[Path], fmt: ScanFormat, coverage: bool) -> int:
    """`lockdocs scan`: list every lock the SQL takes; with --coverage, how the declarations
    cover it. Warnings (files or statements skipped) go to stderr in text form."""
    model = None
    try:
        here = working_folder()
    except RootNotFound as gone:
        if root is None or not root.is_absolute():
            sys.stderr.write(f"lockdocs: {gone}\n")
            return 2
        here = root
    try:
        base: Path | None = resolve_root(root) if root is not None else find_root(here)
    except (NoRoot, RootNotFound):
        if root is not None or not paths:
            if not paths and root is None:
                sys.stderr.write(
                    "lockdocs: no locks.yaml here or above, and no files named\n"
                    "hint: run it inside a project whose locks.yaml sets code:, or name the "
                    "SQL files: lockdocs scan db/queries\n"
                )
            return 2
        base = None
    if base is not None:
        model, diags = load(base)
        if model is None:
            emit(diags, "text", "the declarations are not valid")
            return 2
    if paths:
        result, missing = scan_paths(base or here, paths, model)
        if missing:
            for name in missing:
                sys.stderr.write(f"lockdocs: no such file or folder: {printable(name)}\n")
            return 2
    elif model is not None and model.code:
        result = scan_model(model)
    else:
        sys.stderr.write(
            "lockdocs: locks.yaml sets no code: and no files are named\n"
            "hint: add code: with the globs of the project's SQL (e.g. code: [db/**/*.sql]), or "
            "name the files: lockdocs scan db/queries\n"
        )
        return 2
    cov = None
    if coverage:
        if model is None:
            sys.stderr.write("lockdocs: --coverage compares with locks.yaml; none was found\n")
            return 2
        cov = compare(model, result)[1]
    if fmt is ScanFormat.json:
        sys.stdout.write(
            output.scan_json(result, [diagnostic_json(d) for d in result.findings()], cov)
        )
        return 0
    findings = result.findings()
    if findings:
        sys.stderr.write(REPORTERS["text"](findings, ""))
    sys.stdout.write(output.scan_text(result))
    if cov is not None:
        sys.stdout.write(output.coverage_text(cov))
    return 0
