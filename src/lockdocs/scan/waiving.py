"""The comparison's findings, and the waivers in the code that apply to them: a finding at a
statement is waived by a `lockdocs: ignore` comment that covers that statement (in the SQL, or
above the Python or Go statement holding it); a waiver that covers nothing is LD708, one
written wrong LD707. The lines the scan could not read (LD709, LD712) are findings here too,
naming the declarations they leave unchecked. `compare.Comparison` builds on this.
"""

from __future__ import annotations

from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.records import replace
from lockdocs.scan.collect import Item, ScanResult, unread_finding
from lockdocs.scan.decls import plain_name, waiver_how
from lockdocs.scan.found import FileScan, Site


def site_key(rel: str, site: Site) -> tuple[str, int, int]:
    return (rel, site.line, site.column)


class Findings:
    """Where the comparison's findings go (`found`), and how the code's waivers apply."""

    scan: ScanResult
    file_scans: dict[str, FileScan]
    found: list[Diagnostic]
    used: set[tuple[str, int, int]]
    # an unread statement -> the declarations that name it (not checked, or only partly)
    unchecked: dict[tuple[str, int, int], list[tuple[str, bool]]]

    def waive_here(self, it: Item, code: str) -> str:
        """How to waive a finding at a statement, in the words of its file's language."""
        fs = self.file_scans.get(it.file)
        return waiver_how(fs.kind if fs else "sql", code)

    def add(
        self,
        code: str,
        message: str,
        location: Location,
        hint: str,
        *,
        details: tuple[str, ...] = (),
        locks: tuple[str, ...] = (),
        item: Item | None = None,
        takers: tuple[str, ...] = (),
    ) -> Diagnostic:
        """A finding (waived where the code says so); `takers` are the names an exception's
        `taker:` matches (by default every name of the statement)."""
        names = takers or (item.site.aliases if item is not None else ())
        d = Diagnostic(
            code,
            Severity.ERROR,
            message,
            location,
            hint,
            details,
            locks=locks,
            takers=tuple(dict.fromkeys(plain_name(n) for n in names)),
        )
        if item is not None:
            d = self._waive(d, item.file, item.site)
        self.found.append(d)
        return d

    def _waive(self, d: Diagnostic, rel: str, site: Site) -> Diagnostic:
        fs = self.file_scans.get(rel)
        for w in fs.waivers if fs else ():
            covers = fs is not None and any(fs.sites[i] == site for i in w.sites)
            if w.problem is None and covers and d.code in w.codes:
                self.used.add((rel, w.line, w.column))
                return replace(d, waived_by=f"{rel}:{w.line}: {w.reason}")
        return d

    def unread_findings(self) -> None:
        """LD709/LD712 for every span not read, naming the declarations it leaves unchecked."""
        for rel, site, u in self.scan.unread():
            named = self.unchecked.get(site_key(rel, site), [])
            takers = tuple(dict.fromkeys(label for label, _ in named))
            partly = bool(named) and all(found for _, found in named)
            d = unread_finding(rel, site, u, takers, partly)
            self.found.append(self._waive(d, rel, site))

    def waiver_findings(self) -> None:
        for rel, fs in self.scan.files:
            for w in fs.waivers:
                loc = Location(rel, w.line, w.column)
                if w.problem is not None:
                    self.add(
                        "LD707",
                        w.problem,
                        loc,
                        "name the codes and say why: "
                        + waiver_how(fs.kind, "LD7xx", "<why the finding does not apply>"),
                    )
                elif (rel, w.line, w.column) not in self.used:
                    self.found.append(
                        Diagnostic(
                            "LD708",
                            Severity.ERROR,
                            f"this waiver of {', '.join(w.codes)} waives no finding",
                            loc,
                            "the finding is gone: delete the comment",
                        )
                    )
