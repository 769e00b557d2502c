"""The docs pages generated from the code: format (JSON Schema), rules (registry), CLI (typer),
and the architecture page (the package's imports and module docstrings) with its diagram; and
the JSON Schema files the package ships for editors.

`python -m lockdocs.devdocs` writes docs/reference/format.md, rules.md and cli.md,
docs/architecture.md with architecture/imports.dot and .svg, and the JSON Schema files shipped in
the package (lockdocs/schema/*.schema.json, for editors); `python -m lockdocs.devdocs --check`
exits 1 with a diff when a committed file differs, so neither the docs nor the shipped schemas can
drift from the code (tests/test_devdocs.py runs it).

Everything here is a pure function from the code's own tables to Markdown text: no dates, no
machine paths, sorted where the source has no order, so the output is byte-identical everywhere.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable
from pathlib import Path

from lockdocs.devdocs import architecture
from lockdocs.devdocs.commands import cli_reference, rules_reference
from lockdocs.devdocs.format import format_reference
from lockdocs.devdocs.text import GENERATED_NOTE, fence
from lockdocs.render.stamps import dot_hash, svg_stamp
from lockdocs.render.svg import render_svg
from lockdocs.rules.catalog import option_schemas
from lockdocs.schema.definition import shipped_files

_fence = fence  # the name the tests know

__all__ = [
    "GENERATED_NOTE",
    "PAGES",
    "cli_reference",
    "drift",
    "fence",
    "format_reference",
    "generate",
    "main",
    "rules_reference",
    "write",
]

PAGES: dict[str, Callable[[], str]] = {
    "reference/format.md": format_reference,
    "reference/rules.md": rules_reference,
    "reference/cli.md": cli_reference,
    "architecture.md": lambda: architecture.architecture_pages()["architecture.md"],
    architecture.DOT: lambda: architecture.architecture_pages()[architecture.DOT],
}

# DOT page -> the SVG drawn from it. SVG bytes depend on the Graphviz version and the fonts, so
# the check compares the SVG's stamp (the hash of the DOT it was drawn from), as the lock page's
# drift check does.
DIAGRAMS = {architecture.DOT: architecture.SVG}


# The package's folder of shipped schema files, and how a diff names it.
SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schema"
_SCHEMA_SHOWN = "src/lockdocs/schema"


def generate() -> dict[str, str]:
    """Every generated page: relative posix path under docs/ -> text."""
    return {rel: make() for rel, make in PAGES.items()}


def _targets(docs: Path, pages: dict[str, str]) -> list[tuple[Path, str, str]]:
    """Every generated file: where it is written, how a diff names it, its text."""
    return [(docs / rel, f"docs/{rel}", text) for rel, text in pages.items()] + [
        (SCHEMA_DIR / name, f"{_SCHEMA_SHOWN}/{name}", text)
        for name, text in shipped_files(option_schemas()).items()
    ]


def _default_docs() -> Path:
    repo = Path(__file__).resolve().parents[3]
    if (repo / "mkdocs.yml").is_file():
        return repo / "docs"
    return Path.cwd() / "docs"


def drift(docs: Path, pages: dict[str, str] | None = None) -> list[str]:
    """Unified diffs of the committed pages and shipped schemas against freshly generated ones
    (empty when current)."""
    pages = generate() if pages is None else pages
    diffs: list[str] = []
    for file, shown, text in _targets(docs, pages):
        old = file.read_text(encoding="utf-8") if file.is_file() else ""
        if old != text:
            diffs.append(
                "".join(
                    difflib.unified_diff(
                        old.splitlines(keepends=True),
                        text.splitlines(keepends=True),
                        f"{shown} (committed)",
                        f"{shown} (generated)",
                    )
                )
            )
    for dot, svg in DIAGRAMS.items():
        file = docs / svg
        drawn = svg_stamp(file.read_text(encoding="utf-8")) if file.is_file() else None
        if dot in pages and drawn != dot_hash(pages[dot]):
            diffs.append(f"docs/{svg} is not drawn from the current docs/{dot}\n")
    return diffs


def write(docs: Path, pages: dict[str, str] | None = None) -> list[Path]:
    """Write the pages (and shipped schemas) that changed; returns the files written."""
    pages = generate() if pages is None else pages
    written: list[Path] = []
    for file, _shown, text in _targets(docs, pages):
        if file.is_file() and file.read_text(encoding="utf-8") == text:
            continue
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(file.name + ".tmp")
        tmp.write_text(text, encoding="utf-8", newline="\n")
        tmp.replace(file)
        written.append(file)
    for dot, svg in DIAGRAMS.items():
        file = docs / svg
        drawn = svg_stamp(file.read_text(encoding="utf-8")) if file.is_file() else None
        if dot in pages and drawn != dot_hash(pages[dot]):
            tmp = file.with_name(file.name + ".tmp")
            tmp.write_text(
                render_svg(pages[dot], what=f"docs/{dot}"), encoding="utf-8", newline="\n"
            )
            tmp.replace(file)
            written.append(file)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lockdocs.devdocs",
        description="Generate the format, rules and CLI reference pages, the architecture page and the shipped JSON Schema files from the code.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 with a diff when the committed pages are not current",
    )
    parser.add_argument(
        "--docs", type=Path, default=None, help="the docs folder (default: the repository's docs/)"
    )
    args = parser.parse_args(argv)
    docs: Path = args.docs or _default_docs()
    pages = generate()
    if args.check:
        diffs = drift(docs, pages)
        for diff in diffs:
            sys.stdout.write(diff)
        if diffs:
            sys.stdout.write(
                "the generated pages are out of date; run: python -m lockdocs.devdocs\n"
            )
            return 1
        return 0
    for file in write(docs, pages):
        sys.stdout.write(f"wrote {file}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
