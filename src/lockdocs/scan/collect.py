"""The files of `code:` (or of the command line) -> one `ScanResult`: every lock, resolved.

Each file is scanned once per content (the cache); what depends on several files or on the
declarations is settled here: an UPDATE takes FOR UPDATE when the scanned DDL shows it sets a
column of a unique key and FOR NO KEY UPDATE otherwise, and an INSERT into (or an UPDATE of the
column of) a table that a declared `references:` names takes FOR KEY SHARE on the parent.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lockdocs import inputs
from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Location, Severity, sort_diagnostics
from lockdocs.project.globs import walk
from lockdocs.records import field, record, replace
from lockdocs.scan.cache import Cache, content_key
from lockdocs.scan.files import MAX_BYTES as _MAX_BYTES
from lockdocs.scan.files import read_file, unreadable
from lockdocs.scan.found import FileScan, FoundLock, Site, Unread, Warning
from lockdocs.scan.golang import go_units
from lockdocs.scan.sources import Unit, driver_placeholders, file_kind

MAX_BYTES = _MAX_BYTES  # the largest file the scan reads (diff's snapshot reads it from here)


@record
class Item:
    """One lock, resolved, with the file and statement it is in."""

    file: str
    lock: FoundLock
    site: Site


@record(frozen=False)
class ScanResult:
    files: list[tuple[str, FileScan]] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    patterns: tuple[str, ...] = ()

    def unread(self) -> list[tuple[str, Site, Unread]]:
        """Every span the scan could not read: (file, its statement, the span)."""
        return [(rel, fs.sites[u.site], u) for rel, fs in self.files for u in fs.unread]

    def findings(self) -> list[Diagnostic]:
        """What `lockdocs scan` reports on its own: the warnings and the lines not read."""
        unread = [unread_finding(rel, site, u) for rel, site, u in self.unread()]
        return sort_diagnostics(self.warnings + unread)

    def names(self) -> dict[str, list[tuple[str, Site]]]:
        """Every name a scanned statement answers to -> the statements."""
        out: dict[str, list[tuple[str, Site]]] = {}
        for rel, fs in self.files:
            for site in fs.sites:
                for alias in site.aliases:
                    out.setdefault(alias, []).append((rel, site))
        return out


def same_table(found: str, declared: str) -> bool:
    """core.pools matches core.pools, and a bare pools (the search path) matches it too."""
    if found == declared:
        return True
    return "." not in found and declared.rsplit(".", 1)[-1] == found


_LIMIT = (
    "lockdocs compiles PL/pgSQL without the database (and with stand-in types): either the "
    "body has an error Postgres reports too, or it needs what only the database knows"
)
_HINTS = {
    "LD709": "fix the SQL so Postgres can parse it (a templated file: see code_placeholders), "
    "or leave the file out of code:; a '-- lockdocs: ignore LD709 <reason>' comment above the "
    "statement accepts that its locks are not checked",
    "LD712": "if Postgres compiles the function, this is a limit of lockdocs: check its locks "
    "by hand and waive this with '-- lockdocs: ignore LD712 <reason>' above the CREATE "
    "FUNCTION; otherwise fix the function",
}


def unread_finding(
    rel: str, site: Site, u: Unread, takers: tuple[str, ...] = (), partly: bool = False
) -> Diagnostic:
    """LD709 or LD712: lines not read, named, and the declared takers this leaves unchecked."""
    lines = f"line {u.first}" if u.first == u.last else f"lines {u.first}-{u.last}"
    if u.code == "LD712":
        what = f"function '{site.name}'" if site.name else "a DO block"
        subject = f"lockdocs cannot read the PL/pgSQL of {what} ({u.reason})"
        details: tuple[str, ...] = (_LIMIT,)
    else:
        what = f"'{site.name}'" if site.name else "a statement"
        if site.kind == "function":
            what = f"the body of function {what}"
        subject = f"{what} does not parse ({u.reason})"
        details = ()
        if 'near "%' in u.reason:
            details = (
                "a psycopg placeholder (%s, %(name)s)? If the project's .sql files are "
                "psycopg templates, set code_placeholders: psycopg in locks.yaml",
            )
    if takers:
        state = "checked only in the lines read" if partly else "not checked"
        details += (f"{state}: " + "; ".join(takers),)
    return Diagnostic(
        u.code,
        Severity.ERROR,
        f"{subject}: {lines} not read, so no lock taken there is checked",
        Location(rel, u.line, u.column),
        _HINTS[u.code],
        details,
    )


def _warning(rel: str, line: int, col: int, code: str, message: str, hint: str) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, message, Location(rel, line, col), hint)


def glob_files(
    root: Path, globs: Iterable[m.CodeGlob]
) -> tuple[list[tuple[str, Path]], list[Diagnostic]]:
    """The files the globs match, sorted and once each; a glob that matches none is a
    warning at the glob, and so is each folder a glob needed that cannot be read."""
    found: dict[str, Path] = {}
    diags: list[Diagnostic] = []
    unread: dict[str, str] = {}
    base = root.resolve()
    for g in globs:
        inputs.record_glob(root, g.pattern)
        hits = 0
        files, folders = walk(base, g.pattern)  # one walk, whatever the pattern (globs.py)
        for folder, why in folders:
            rel = folder.relative_to(base).as_posix() if folder != base else "."
            unread.setdefault(rel, why)
        for p in files:
            if not p.is_file():
                continue
            try:
                rel = p.resolve().relative_to(base).as_posix()
            except ValueError:
                continue  # a symlink out of the project
            hits += 1
            found.setdefault(rel, p)
        if not hits and not folders:
            diags.append(
                Diagnostic(
                    "LD711",
                    Severity.WARNING,
                    f"code: '{g.pattern}' matches no file",
                    g.location,
                    "fix the pattern (relative to the folder of locks.yaml; ** matches any "
                    "depth), or remove it",
                )
            )
    diags.extend(
        Diagnostic(
            "LD710",
            Severity.WARNING,
            f"cannot read the folder: {why}; the files code: names in it are not scanned",
            Location(rel),
            "make it readable, or leave it out of code:",
        )
        for rel, why in sorted(unread.items())
    )
    return sorted(found.items()), diags


def scan_text(rel: str, kind: str, data: bytes, placeholders: str | None = None) -> FileScan:
    """One file's scan, from its bytes alone (and, for a .sql file, how it writes its
    parameters: `code_placeholders`)."""
    bad = unreadable(data)
    if bad is not None:
        return FileScan(kind, warnings=(bad,))
    from lockdocs.scan.sqltext import Analyser, Result  # pglast: only when a file is read

    text = data.decode("utf-8").removeprefix("\ufeff")
    result = Result()
    analyser = Analyser(text, result)
    if kind == "sql":
        if placeholders == "psycopg" and "%" in text:
            # %s and %(name)s become $1, offsets kept; the file's own text still places them.
            analyser.add(Unit(driver_placeholders(text, strict=False) or text))
        else:
            analyser.add(Unit(text))
    else:
        if kind == "python":
            from lockdocs.scan.pysource import python_module, python_units  # ast, tokenize

        try:
            units, comments = (
                python_units(text, python_module(rel)) if kind == "python" else go_units(text)
            )
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            line = getattr(exc, "lineno", None) or 1
            col = getattr(exc, "offset", None) or 1
            msg = getattr(exc, "msg", None) or str(exc)
            if isinstance(exc, RecursionError | MemoryError):
                msg = "it nests deeper than Python's parser reads"
            # Python counts a lone CR as a line break, lockdocs only LF: stay inside the file.
            line = min(line, text.count("\n") + 1)
            return FileScan(
                kind,
                warnings=(
                    Warning(
                        line,
                        col,
                        "LD710",
                        f"not valid {'Python' if kind == 'python' else 'Go'} ({msg}); skipped",
                        "fix the syntax error",
                    ),
                ),
            )
        analyser.add_sources(units, comments)
    return FileScan(
        kind,
        sites=tuple(result.sites),
        locks=tuple(result.locks),
        keys=_keys(result.keys),
        waivers=tuple(result.waivers),
        warnings=tuple(result.warnings),
        names=tuple(sorted(result.names)),
        unread=tuple(result.unread),
    )


def _keys(
    pairs: list[tuple[str, tuple[str, ...]]],
) -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
    by_table: dict[str, list[tuple[str, ...]]] = {}
    for table, cols in pairs:
        if cols not in by_table.setdefault(table, []):
            by_table[table].append(cols)
    return tuple(sorted((t, tuple(c)) for t, c in by_table.items()))


def _cached(raw: object) -> FileScan | None:
    """A cache entry back as a FileScan; a damaged one is as good as none."""
    if raw is None:
        return None
    try:
        return FileScan.from_json(raw)  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None


def scan_files(
    root: Path,
    files: list[tuple[str, Path]],
    references: list[tuple[str, m.Reference]],
    *,
    complete: bool,
    placeholders: str | None = None,
) -> ScanResult:
    cache = Cache(root)
    result = ScanResult()
    for rel, path in files:
        data, early = read_file(rel, path)
        if early is not None:
            inputs.uncacheable(root, f"code:{rel}")  # its stat, not its bytes, decided
            fs = early
        else:
            assert data is not None
            inputs.record(root, f"code:{rel}", data)
            kind = file_kind(rel) or "sql"
            key = content_key(f"{kind}:{placeholders}" if kind == "sql" else kind, data)
            hit = _cached(cache.get(key))
            if hit is None:
                hit = scan_text(rel, kind, data, placeholders)
                cache.put(key, hit.to_json())
            fs = hit
        result.files.append((rel, fs))
        for w in fs.warnings:
            result.warnings.append(_warning(rel, w.line, w.column, w.code, w.message, w.hint))
    cache.save(complete=complete)
    result.items = resolve(result.files, references)
    return result


def resolve(
    files: list[tuple[str, FileScan]], references: list[tuple[str, m.Reference]]
) -> list[Item]:
    """Writes -> the row locks they take, given every file's unique keys and the declared
    foreign keys (parent table, reference)."""
    keys: dict[str, list[tuple[str, ...]]] = {}
    for _, fs in files:
        for table, cols in fs.keys:
            keys.setdefault(table, []).extend(cols)
            keys.setdefault(table.rsplit(".", 1)[-1], []).extend(cols)
    items: list[Item] = []
    for rel, fs in files:
        for lk in fs.locks:
            site = fs.sites[lk.site]
            if lk.kind == "write":
                table = lk.table or ""
                if lk.implicit in ("update", "upsert"):
                    sets = set(lk.columns)
                    strong = any(sets & set(k) for k in keys.get(table, ()))
                    items.append(
                        Item(
                            rel,
                            replace(
                                lk, kind="row", mode="for update" if strong else "for no key update"
                            ),
                            site,
                        )
                    )
                for parent, ref in references:
                    if not same_table(table, ref.table):
                        continue
                    # a reference with no declared column: any insert or update may fill it
                    named = ref.column is None or ref.column in lk.columns
                    fills = (lk.implicit == "insert" and (not lk.columns or named)) or (
                        lk.implicit in ("update", "upsert") and named
                    )
                    if fills:
                        items.append(
                            Item(
                                rel,
                                replace(
                                    lk,
                                    kind="row",
                                    mode="for key share",
                                    table=parent,
                                    implicit="foreign key",
                                    columns=(ref.column,) if ref.column else (),
                                ),
                                site,
                            )
                        )
                continue
            items.append(Item(rel, lk, site))
    items.sort(key=lambda i: (i.file, i.lock.line, i.lock.column, i.lock.kind, i.lock.table or ""))
    return items
