"""Per-project settings: rule severities from locks.yaml `checks:` and [tool.lockdocs], and the
rules' options from `checks:`, checked against the options each rule registers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lockdocs import inputs
from lockdocs.confine import TooLarge, inside, read_capped
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.load import MAX_FILE_BYTES, read_file
from lockdocs.records import replace
from lockdocs.schema.sections import checks_schema
from lockdocs.schema.validate import validate_against

# Every key [tool.lockdocs] may hold, with what it sets (the LD021 hint lists them).
SETTINGS = {
    "checks": "severity per check code (error, warning, info or off)",
    "rules_url": "the URL of the rules reference page, for SARIF's rule links",
    "dot_timeout": "seconds Graphviz may take to draw one diagram (default 120)",
}
SEVERITIES = ("error", "warning", "info", "off")
_TOML_AT_RE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def pyproject_settings(root: Path) -> tuple[dict[str, Any], list[Diagnostic]]:
    """[tool.lockdocs] of pyproject.toml ({} without one); a TOML error at its line."""
    section, diags, _ = _read_pyproject(root)
    return section, diags


def _read_pyproject(root: Path) -> tuple[dict[str, Any], list[Diagnostic], str]:
    file = root / "pyproject.toml"
    if not file.is_file():
        inputs.record(root, "pyproject.toml", None)
        return {}, [], ""
    if not inside(root, file):
        return (
            {},
            [
                Diagnostic(
                    "LD012",
                    Severity.ERROR,
                    "pyproject.toml is a symlink that leads outside the project; it is not read",
                    Location("pyproject.toml"),
                    "keep the settings inside the project",
                )
            ],
            "",
        )
    import tomllib  # (a project without a pyproject.toml, and most checks, never parse TOML)

    try:
        raw = read_capped(file, MAX_FILE_BYTES)
        inputs.record(root, "pyproject.toml", raw)
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except TooLarge as big:
        return {}, [_unreadable(f"pyproject.toml is too large to read ({big})")], ""
    except tomllib.TOMLDecodeError as exc:
        reason = str(exc)
        at = _TOML_AT_RE.search(reason)
        where = (
            Location("pyproject.toml", int(at[1]), int(at[2]))
            if at
            else Location("pyproject.toml", 1, 1)
        )
        if at:
            reason = reason[: at.start()]
        return (
            {},
            [
                Diagnostic(
                    "LD003",
                    Severity.ERROR,
                    f"pyproject.toml is not valid TOML: {reason[:1].lower()}{reason[1:]}",
                    where,
                    "fix the TOML syntax at this point",
                )
            ],
            "",
        )
    except (UnicodeDecodeError, OSError) as exc:
        return (
            {},
            [
                Diagnostic(
                    "LD003",
                    Severity.ERROR,
                    f"cannot read pyproject.toml: {exc}",
                    Location("pyproject.toml", 1, 1),
                    "save it as UTF-8 text",
                )
            ],
            "",
        )
    except (ValueError, RecursionError) as exc:  # tomllib: 4,300+ digits, deep nesting
        why = (
            "it nests too deeply"
            if isinstance(exc, RecursionError)
            else "a number has more digits than Python reads (4,300)"
            if "digits" in str(exc)
            else str(exc)
        )
        return {}, [_unreadable(f"pyproject.toml cannot be read: {why}")], ""
    tool = data.get("tool", {})
    section = tool.get("lockdocs", {}) if isinstance(tool, dict) else {}
    return (section if isinstance(section, dict) else {}), [], text


def _unreadable(message: str) -> Diagnostic:
    return Diagnostic(
        "LD003",
        Severity.ERROR,
        message,
        Location("pyproject.toml", 1, 1),
        "keep pyproject.toml to plain settings: a few kilobytes, numbers of ordinary size",
    )


def _table_of(header: str) -> tuple[str, ...]:
    """[tool.lockdocs.checks] (or [[...]], a comment after it) -> its key path."""
    inner = header.split("#", 1)[0].strip().strip("[]").strip()
    return tuple(part.strip().strip("\"'") for part in inner.split("."))


def locate(text: str, keys: tuple[str, ...]) -> Location:
    """Where pyproject.toml sets tool.lockdocs.<keys...>: the line of the key (a table header,
    a dotted key or an inline table's entry), else of [tool.lockdocs], else line 1. tomllib
    keeps no positions, so this reads the lines the way TOML writes them."""
    full = ("tool", "lockdocs", *keys)
    table: tuple[str, ...] = ()
    fallback: Location | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            table = _table_of(stripped)
            if table == full[: len(table)] and fallback is None:
                fallback = Location("pyproject.toml", number, 1)
            continue
        name, eq, rest = stripped.partition("=")
        if not eq or stripped.startswith("#"):
            continue
        dotted = (*table, *(part.strip().strip("\"'") for part in name.split(".")))
        column = len(line) - len(line.lstrip()) + 1
        if dotted == full:
            return Location("pyproject.toml", number, column)
        if dotted == full[: len(dotted)] and rest.strip().startswith("{"):
            found = re.search(rf"[\s{{,]\"?{re.escape(full[len(dotted)])}\"?\s*=", line)
            if found:
                return Location("pyproject.toml", number, found.start() + 2)
    return fallback or Location("pyproject.toml", 1, 1)


def _one_edit(a: str, b: str) -> bool:
    """Whether b is a with one character changed, added or removed."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _suggest(word: str, choices: list[str]) -> str:
    """'; did you mean X?' or ''. A check code is suggested only when one code is a single
    edit away (LD3O2 -> LD302; LD999 and LD30x, equally near ten codes, get none)."""
    if word.upper() in choices and word != word.upper():
        return f"; did you mean '{word.upper()}'?"
    if word[:2].upper() == "LD":
        near = [c for c in choices if _one_edit(word.upper(), c)]
        return f"; did you mean '{near[0]}'?" if len(near) == 1 else ""
    import difflib  # only for a word that names nothing

    close = difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def unknown_codes(codes: list[str], known: list[str]) -> list[tuple[str, str]]:
    """(code, ' did you mean ...' or '') for each code that names no lockdocs check."""
    return [(c, _suggest(c, known)) for c in codes if c not in known]


def settings_diagnostics(root: Path, known_codes: list[str]) -> list[Diagnostic]:
    """What [tool.lockdocs] gets wrong: a TOML error (LD003), an unknown key (LD021), a value
    of the wrong kind (LD003) and a check code that does not exist (LD020), each at its line."""
    settings, diags, text = _read_pyproject(root)
    for key in settings:
        if key not in SETTINGS:
            diags.append(
                Diagnostic(
                    "LD021",
                    Severity.WARNING,
                    f"[tool.lockdocs] has no setting '{key}'{_suggest(key, sorted(SETTINGS))}",
                    locate(text, (key,)),
                    "the settings are " + "; ".join(f"{k}: {v}" for k, v in SETTINGS.items()),
                )
            )
    checks = settings.get("checks", {})
    if not isinstance(checks, dict):
        diags.append(
            Diagnostic(
                "LD003",
                Severity.ERROR,
                "[tool.lockdocs] checks must be a table of check codes",
                locate(text, ("checks",)),
                'write [tool.lockdocs.checks] with lines such as LD301 = "info"',
            )
        )
        checks = {}
    for code, value in checks.items():
        if value not in SEVERITIES:
            diags.append(
                Diagnostic(
                    "LD003",
                    Severity.ERROR,
                    f"[tool.lockdocs] checks.{code} = {value!r} is not a severity",
                    locate(text, ("checks", str(code))),
                    "use error, warning, info or off",
                )
            )
    for code, mean in unknown_codes([str(c) for c in checks], known_codes):
        diags.append(
            Diagnostic(
                "LD020",
                Severity.WARNING,
                f"[tool.lockdocs] checks.{code} names no lockdocs check{mean}",
                locate(text, ("checks", code)),
                "lockdocs rules lists every code; a setting for an unknown code has no effect",
            )
        )
    if "rules_url" in settings and not (
        isinstance(settings["rules_url"], str) and re.match(r"^https?://", settings["rules_url"])
    ):
        diags.append(
            Diagnostic(
                "LD003",
                Severity.ERROR,
                "[tool.lockdocs] rules_url must be an http(s) URL",
                locate(text, ("rules_url",)),
                'write the address of your copy of the rules page, e.g. "https://example.com/rules/"',
            )
        )
    timeout = settings.get("dot_timeout")
    if "dot_timeout" in settings and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        diags.append(
            Diagnostic(
                "LD003",
                Severity.ERROR,
                f"[tool.lockdocs] dot_timeout = {timeout!r} is not a number of seconds",
                locate(text, ("dot_timeout",)),
                "write a positive number, e.g. dot_timeout = 300",
            )
        )
    return diags


def locks_yaml_diagnostics(root: Path, checks: dict[str, str]) -> list[Diagnostic]:
    """LD020 for each code under locks.yaml `checks:` that names no lockdocs check."""
    from lockdocs.rules.catalog import load_all

    bad = unknown_codes(list(checks), list(load_all()))
    if not bad:
        return []

    doc, _ = read_file(root / "locks.yaml", "locks.yaml")
    out = []
    for code, mean in bad:
        where = doc.loc(("checks", code), key=True) if doc else Location("locks.yaml", 1, 1)
        out.append(
            Diagnostic(
                "LD020",
                Severity.WARNING,
                f"checks: {code} names no lockdocs check{mean}",
                where,
                "lockdocs rules lists every code; a setting for an unknown code has no effect",
            )
        )
    return out


def severity_overrides(
    root: Path, from_locks: dict[str, str]
) -> tuple[dict[str, str], list[Diagnostic]]:
    """locks.yaml wins over pyproject.toml: it sits next to the declarations it configures.
    The diagnostics are those of `settings_diagnostics`."""
    from lockdocs.rules.catalog import load_all

    settings, _ = pyproject_settings(root)
    diags = settings_diagnostics(root, list(load_all())) + locks_yaml_diagnostics(root, from_locks)
    merged: dict[str, str] = {}
    checks = settings.get("checks", {})
    if isinstance(checks, dict):
        for code, value in checks.items():
            if value in SEVERITIES:
                merged[str(code)] = str(value)
    merged.update(from_locks)
    return merged, diags


def check_options(
    root: Path, model_options: dict[str, dict[str, object]]
) -> tuple[dict[str, dict[str, object]], list[Diagnostic]]:
    """The options locks.yaml sets per check (`checks: {LD103: {min_odds: 0.01}}`), once each
    is checked against the options its rule registers: an unknown option or a value outside
    its schema is an LD003 error at its line, and then no option is used."""
    if not model_options:
        return {}, []
    from lockdocs.rules.catalog import option_schemas

    doc, _ = read_file(root / "locks.yaml", "locks.yaml")
    if doc is None:  # pragma: no cover - it was read a moment ago to build the model
        return {}, []
    known = option_schemas()
    schema = {"type": "object", "properties": {"checks": checks_schema(known)}}
    diags = validate_against(doc, schema)
    if diags:
        return {}, diags
    return {code: opts for code, opts in model_options.items() if code in known}, []


def apply_overrides(diags: list[Diagnostic], overrides: dict[str, str]) -> list[Diagnostic]:
    out = []
    for d in diags:
        setting = overrides.get(d.code)
        if setting == "off" and not d.code.startswith("LD0"):
            continue
        if setting in ("error", "warning", "info") and not d.code.startswith("LD0"):
            d = replace(d, severity=Severity(setting))
        out.append(d)
    return out


def dot_timeout(root: Path) -> float | None:
    """[tool.lockdocs] dot_timeout: the seconds one diagram may take to draw (None: the default;
    a value that is not a positive number is reported by `settings_diagnostics`)."""
    value = pyproject_settings(root)[0].get("dot_timeout")
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)
