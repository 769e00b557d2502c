"""Drift: what `lockdocs build` would change in the committed docs, as findings.

The renderer regenerates every file in memory; this module compares them with the files on
disk and turns each difference into a diagnostic located at the generated file (LD602 a file
whose content differs, LD603 a file that is missing, LD604 a file no longer generated, LD605 a
build that was interrupted), so drift reaches every reporter (text, JSON, GitHub, SARIF) and the
summary like any other finding. Markdown and DOT are compared exactly; an SVG by the stamps it
carries: the DOT it was drawn from (so another Graphviz version is never drift) and the hash of
its own text (so a hand edit is). Needs no Graphviz.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from lockdocs import checkcache
from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.render import targets as b
from lockdocs.render.atomic import JOURNAL, interrupted
from lockdocs.render.manifest import (
    DOCS,
    MANIFEST,
    body_of,
    manifest_text,
    run_inputs,
    seal,
    svg_path,
    vouch,
)
from lockdocs.render.stamps import content_stamped, dot_hash, drawn_from, svg_stamp

if TYPE_CHECKING:
    from lockdocs.scan.decls import Coverage

FIX = "lockdocs build"
SECTIONS_SHOWN = 6


@dataclass(frozen=True)
class DriftFile:
    """One generated file that differs from what the declarations generate."""

    file: str  # posix, relative to the project root
    # changed | missing | stale | unstamped | edited (an SVG changed since it was drawn) |
    # unsealed (an SVG without the hash of its own text) | manifest | interrupted, or refused
    # (docs/ cannot take the files: a file, a broken symlink) | outside (a symlink leads out
    # of docs/) | unreadable (there, but this user cannot read it)
    status: str
    old: str | None = None  # the committed text (None when missing)
    new: str | None = None  # the regenerated text (None when no longer generated)
    reason: str = ""  # for refused and outside: what is wrong, then what to do
    fix: str = ""

    @property
    def code(self) -> str:
        return {
            "missing": "LD603",
            "unreadable": "LD603",
            "refused": "LD603",
            "stale": "LD604",
            "interrupted": "LD605",
            "outside": "LD012",
        }.get(self.status, "LD602")


def unified(rel: str, old: str, new: str) -> str:
    """A unified diff with a/ and b/ headers, marking a missing final newline."""
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{rel}",
            tofile=f"b/{rel}",
        )
    )
    out = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


# --- where a change is ---------------------------------------------------------------------------

# A heading may be indented: the page nests a lock's details in a collapsible block.
_HEADING = re.compile(r"^\s*(#{1,6})\s+(.*?)\s*(?:\{[^}]*\})?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_DOT_EDGE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*->\s*"((?:[^"\\]|\\.)*)"')
_DOT_NODE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*\[')


Opcodes = Sequence[tuple[str, int, int, int, int]]


def _line_opcodes(old: list[str], new: list[str]) -> Opcodes:
    """The line diff every measure of a change below is read from (computed once per file:
    on a large page it is most of what reporting a drifted file costs)."""
    return difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()


def _changed_lines(ops: Opcodes, old_len: int) -> tuple[list[int], list[int]]:
    """0-based indexes of the lines that differ, in the old and in the new text."""
    a: list[int] = []
    b: list[int] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        a += range(i1, i2)
        b += range(j1, j2)
        if i1 == i2 and i1 < old_len:  # a pure insertion: it lands before old line i1
            a.append(i1)
    return a, b


def _markdown_headings(lines: list[str]) -> list[str]:
    """For each line, the section it stands in: its heading, "front matter", or "the top of
    the page" before the first heading."""
    out: list[str] = []
    current = "the top of the page"
    fenced = False
    front = bool(lines) and lines[0].strip() == "---"
    for n, line in enumerate(lines):
        if front:
            out.append("front matter")
            front = not (n > 0 and line.strip() == "---")
            continue
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            found = _HEADING.match(line)
            if found:
                current = found.group(2)
        out.append(current)
    return out


def _dot_section(line: str) -> str:
    edge = _DOT_EDGE.match(line)
    if edge:
        return f"edge {edge.group(1)} -> {edge.group(2)}"
    node = _DOT_NODE.match(line)
    if node and node.group(1) not in ("graph", "node", "edge"):
        return f"node {node.group(1)}"
    return "graph attributes"


def changed_sections(rel: str, old: str, new: str, ops: Opcodes | None = None) -> list[str]:
    """The sections a change touches: headings of a Markdown page (as the new text names
    them), nodes and edges of a DOT graph; in the order they appear, each once."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if rel.endswith(".md"):
        heads_old, heads_new = _markdown_headings(old_lines), _markdown_headings(new_lines)

        def name_old(i: int) -> str:
            return heads_old[i]

        def name_new(j: int) -> str:
            return heads_new[j]
    elif rel.endswith(".dot"):

        def name_old(i: int) -> str:
            return _dot_section(old_lines[i])

        def name_new(j: int) -> str:
            return _dot_section(new_lines[j])
    else:
        return []
    found: list[str] = []
    if ops is None:
        ops = _line_opcodes(old_lines, new_lines)
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        # What is there now names the section; a deletion is named from the old text.
        names = [name_new(j) for j in range(j1, j2)] or [name_old(i) for i in range(i1, i2)]
        for name in names:
            if name not in found:
                found.append(name)
    return found


def _where_and_how_much(old: str, ops: Opcodes) -> tuple[int, int]:
    """(1-based line of the first difference in the committed file, lines changed)."""
    old_len = len(old.splitlines())
    in_old, in_new = _changed_lines(ops, old_len)
    first = min(in_old) + 1 if in_old else max(old_len, 1)
    return first, max(len(set(in_old)), len(in_new))


# --- drift as findings ---------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def drift_diagnostic(d: DriftFile) -> Diagnostic:
    """The finding for one drifted file, with the data the JSON reporter lists."""
    sections: list[str] = []
    line = 0
    diff = ""
    if d.status == "changed" and d.old is not None and d.new is not None:
        ops = _line_opcodes(d.old.splitlines(), d.new.splitlines())
        sections = changed_sections(d.file, d.old, d.new, ops)
        line, n = _where_and_how_much(d.old, ops)
        diff = unified(d.file, d.old, d.new)
        where = ""
        if sections:
            shown = ", ".join(sections[:SECTIONS_SHOWN])
            more = len(sections) - SECTIONS_SHOWN
            where = f" in {shown}" + (f" and {more} more" if more > 0 else "")
        message = (
            f"{d.file} differs from what the declarations generate "
            f"({_plural(n, 'line')} changed{where})"
        )
        hint = f"run {FIX}; lockdocs check --diff shows the changes"
    elif d.status == "missing":
        message = f"{d.file} is missing; the declarations generate it"
        hint = f"run {FIX} to write it"
    elif d.status == "unreadable":
        message = f"{d.file} cannot be read ({d.reason}), so it cannot be compared"
        hint = f"make it readable for this user, or remove it and run {FIX}"
    elif d.status == "stale":
        message = f"{d.file} is no longer generated by the declarations"
        hint = f"run {FIX} to remove it"
    elif d.status == "edited":
        message = (
            f"{d.file} was edited after lockdocs drew it (its text no longer matches its "
            "lockdocs-svg-sha256 stamp)"
        )
        hint = f"run {FIX} to draw it again; change the page through the declarations or a template"
    elif d.status == "unsealed":
        message = (
            f"{d.file} carries no lockdocs-svg-sha256 stamp, so a hand edit of it could not be "
            "told (an older lockdocs drew it)"
        )
        hint = f"run {FIX} to draw it again with the stamp"
    elif d.status == "unstamped":
        dot = PurePosixPath(d.file).with_suffix(".dot").name
        message = (
            f"{d.file} was not drawn from the current {dot} (its lockdocs-dot-sha256 stamp differs)"
        )
        hint = f"run {FIX} to redraw it"
    elif d.status in ("refused", "outside"):
        message = f"{d.reason}; build refuses to write there"
        hint = d.fix
    elif d.status == "manifest":
        message = (
            f"{d.file} is not the record a build writes for these docs (it lists other files, "
            "or another lockdocs, or other inputs, wrote it)"
        )
        hint = f"run {FIX} to rewrite it"
    else:
        message = (
            "a build was interrupted while it replaced files; the docs folder may mix old "
            "and new files"
        )
        hint = f"run {FIX}: it restores the previous files, then writes"
    data: dict[str, object] = {
        "file": d.file,
        "status": d.status,
        "sections": sections,
    }
    if diff:
        data["diff"] = diff
    return Diagnostic(
        d.code,
        Severity.ERROR,
        message,
        Location(d.file, line, 1 if line else 0),
        hint,
        extra={"drift": data},
    )


def _absent(root: Path, rel: str, new: str | None) -> DriftFile:
    """A generated file that could not be read: missing, or there but not readable (an
    environment fault, said as such rather than "missing")."""
    path = root / rel
    if not path.exists():
        return DriftFile(rel, "missing", None, new)
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        return DriftFile(rel, "unreadable", reason=exc.strerror or type(exc).__name__)
    return DriftFile(rel, "missing", None, new)  # readable again meanwhile


def find_drift(
    model: m.Model,
    diagnostics: list[Diagnostic],
    *,
    svg: bool = True,
    coverage: Coverage | None = None,
    ask_manifest: bool = True,
) -> list[DriftFile]:
    """What `lockdocs build` would change, one entry per file, sorted by path.

    With `svg` False (a project built with --no-svg, or a machine without Graphviz) SVGs are
    neither expected nor compared: only the Markdown and the DOT.
    """
    root = Path(model.root)
    refused = b.docs_problem(root)
    if refused is not None:
        status = "outside" if refused.outside else "refused"
        return [DriftFile(DOCS, status, reason=refused.message, fix=refused.hint)]
    if interrupted(root):
        return [DriftFile(JOURNAL, "interrupted")]
    digest = run_inputs(
        root, model.files, diagnostics, None if coverage is None else coverage.to_json()
    )
    if ask_manifest and vouch(root, digest, svg=svg, local=checkcache.seals(root)):
        return []
    # The lazy boundary of the renderer: only a check the manifest cannot vouch for renders.
    from lockdocs.render import pages

    files = pages.render_outputs(model, diagnostics, coverage)
    confined = b.Confinement(root)
    found: dict[str, DriftFile] = {}
    expected = set(files)
    for rel, new in files.items():
        if not confined(rel):  # never read through a symlink that leads out
            found[rel] = DriftFile(
                rel,
                "outside",
                reason=f"{rel} leads outside {DOCS}/ (a symlink on the way)",
                fix=f"remove the symlink or point it inside {DOCS}/: lockdocs writes only there",
            )
            continue
        old = b.read_or_none(root / rel)
        if old is None:
            found[rel] = _absent(root, rel, new)
        elif old != new:
            found[rel] = DriftFile(rel, "changed", old, new)
        svg_rel = svg_path(rel)
        if not rel.endswith(".dot"):
            continue
        on_disk = b.read_or_none(root / svg_rel) if confined(svg_rel) else None
        if svg or on_disk is not None:
            expected.add(svg_rel)
        if not svg:
            continue  # DOT only: an SVG is neither required nor compared
        if on_disk is None:
            found[svg_rel] = _absent(root, svg_rel, None)
        elif svg_stamp(on_disk) != dot_hash(new):
            status = "unstamped"
            if drawn_from(on_disk) == dot_hash(new):
                status = "edited" if content_stamped(on_disk) else "unsealed"
            found[svg_rel] = DriftFile(svg_rel, status)
    for rel in b.read_manifest(root):
        if rel not in expected and (root / rel).is_file():
            found[rel] = DriftFile(rel, "stale")
    manifest = b.read_or_none(root / MANIFEST) if b.confined(root, MANIFEST) else None
    # The list must be what a build writes; a seal for other inputs is no drift (a comment
    # added to locks.yaml changes no generated file): this machine remembers that the list
    # holds for these inputs, and the next check reads the manifest instead of rendering.
    body = body_of(manifest)
    if not found and body != body_of(manifest_text(sorted(expected), files)):
        found[MANIFEST] = DriftFile(MANIFEST, "manifest")
    if not found and body is not None:
        checkcache.remember_seal(root, seal(digest, body))
    return [found[k] for k in sorted(found)]


def drift_diagnostics(
    model: m.Model,
    diagnostics: list[Diagnostic],
    *,
    svg: bool = True,
    coverage: Coverage | None = None,
    known: bool = True,
) -> list[Diagnostic]:
    """`find_drift` as findings; `known` False: the caller asked the manifest already
    (`current.docs_current`), and it could not vouch."""
    found = find_drift(model, diagnostics, svg=svg, coverage=coverage, ask_manifest=known)
    return [drift_diagnostic(d) for d in found]
