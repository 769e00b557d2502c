"""The rules reference (docs/reference/rules.md, from the rule registry) and the CLI reference
(docs/reference/cli.md, from the typer app)."""

from __future__ import annotations

import re
from typing import Any

import typer
import typer.main

from lockdocs.cli import app
from lockdocs.devdocs.text import GENERATED_NOTE, cell, code, code_cell, fence, prose, slug
from lockdocs.rules.catalog import load_all
from lockdocs.rules.registry import FAMILIES, RuleInfo

# The language of an example file's fence, by its suffix (YAML when none matches).
_FENCES = {".sql": "sql", ".py": "python", ".go": "go"}


def _fence_language(name: str) -> str:
    return next((lang for suffix, lang in _FENCES.items() if name.endswith(suffix)), "yaml")


def _files_block(files: dict[str, str]) -> list[str]:
    out: list[str] = []
    for name in sorted(files, key=lambda n: (n != "locks.yaml", n)):
        out += [fence(files[name], _fence_language(name), name), ""]
    return out


def _use_instead(example: dict[str, str], fixed: dict[str, str]) -> list[str]:
    """Only the files the fix changes; the reader has just seen the others."""
    changed = {n: t for n, t in fixed.items() if example.get(n) != t}
    removed = sorted(n for n in example if n not in fixed)
    same = sorted(n for n in fixed if n not in changed)
    out: list[str] = []
    if removed:
        out += ["Without " + ", ".join(code(n) for n in removed) + ".", ""]
    out += _files_block(changed)
    if same and (changed or removed):
        out += ["The other files as in the example.", ""]
    elif same:
        out += _files_block(fixed)
    return out


# What an option's value is, in words, for the Python type names click prints: a reader types
# a path or a number, not a list[Path] or a float range.
_METAVARS = {
    "list[path]": "path",
    "path": "path",
    "float range": "number",
    "float": "number",
    "integer range": "n",
    "int": "n",
    "integer": "n",
    "str": "text",
    "text": "text",
}


def _readable(names: str) -> str:
    """`--time-limit <float range>` -> `--time-limit <number>`; choices and `dir` stay."""
    return re.sub(
        r"<([^>]+)>", lambda m: "<" + _METAVARS.get(m.group(1).lower(), m.group(1)) + ">", names
    )


def rules_reference() -> str:

    registry = load_all()
    lines = [
        GENERATED_NOTE.format(source="the rule registry in lockdocs/rules/"),
        "# Rules reference",
        "",
        "Every finding `lockdocs check` can report has a stable code. The first three characters "
        "name the family. A code's severity is its default: change it per project under `checks:` "
        "in `locks.yaml` (or `[tool.lockdocs.checks]` in `pyproject.toml`) with `error`, "
        "`warning`, `info` or `off`. Only an error that no exception waives fails the check. "
        "Declaration problems (LD0xx) always stop the run. A check with options (listed under "
        "its **Options**) takes them under `checks:` in `locks.yaml`, as a mapping that may also "
        "give the severity: `LD103: {severity: warning, min_odds: 0.01}`.",
        "",
        "`lockdocs rules` prints this list in a terminal.",
        "",
        "| Code | Name | Severity | Summary |",
        "|---|---|---|---|",
    ]
    for info in registry.values():
        lines.append(
            f"| [{info.code}](#{info.code.lower()}) | {code_cell(info.name)} | "
            f"{info.severity.value} | {cell(info.summary)} |"
        )
    lines.append("")
    by_family: dict[str, list[Any]] = {}
    for info in registry.values():
        by_family.setdefault(info.code[:3], []).append(info)
    for prefix, infos in sorted(by_family.items()):
        family = FAMILIES.get(prefix, infos[0].family)
        lines += [f"## {family} ({prefix}xx) {{#{slug(prefix + 'xx')}}}", ""]
        for info in infos:
            lines += [
                f"### {info.code} {info.name} {{#{info.code.lower()}}}",
                "",
                f"*{info.severity.value}* by default · {family}",
                "",
                prose(info.summary),
                "",
                "**What it does**",
                "",
                prose(info.what),
                "",
                "**Why it matters**",
                "",
                prose(info.why),
                "",
            ]
            if info.example:
                lines += ["**Example**", "", *_files_block(info.example)]
            if info.use_instead:
                lines += ["**Use instead**", "", *_use_instead(info.example, info.use_instead)]
            if info.options:
                lines += _options(info)
    return "\n".join(lines).rstrip("\n") + "\n"


def _options(info: RuleInfo) -> list[str]:
    """The rule's options: how to set them, and each one's type, default and meaning."""
    first = next(iter(info.options))
    out = [
        "**Options**",
        "",
        f"Set under `checks:` in `locks.yaml`, beside the severity or alone: "
        f"`{info.code}: {{{first}: ...}}`.",
        "",
        "| Option | Type | Default | What it does |",
        "|---|---|---|---|",
    ]
    for name, opt in info.options.items():
        kind = str(opt.schema.get("type", "any"))
        bounds = [f"{k} {opt.schema[k]}" for k in ("minimum", "maximum") if k in opt.schema]
        out.append(
            f"| {code_cell(name)} | {cell(kind + (' (' + ', '.join(bounds) + ')' if bounds else ''))}"
            f" | {code_cell(str(opt.default))} | {cell(opt.description)} |"
        )
    return [*out, ""]


def cli_reference() -> str:

    group: Any = typer.main.get_command(app)
    root_ctx = typer.Context(group, info_name="lockdocs")
    lines = [
        GENERATED_NOTE.format(source="the command line in lockdocs/cli.py"),
        "# CLI reference",
        "",
        prose(group.help or ""),
        "",
        "Every command finds the project by walking up from the current folder to the first "
        "`locks.yaml`, unless `--root` names the folder.",
        "",
        "## Exit codes",
        "",
        "| Code | Meaning |",
        "|---|---|",
        "| 0 | Clean: no unwaived error, and the generated docs match. |",
        "| 1 | Findings (an unwaived error) or drift of the generated docs. |",
        "| 2 | Bad input or usage: the declarations are not valid, or no `locks.yaml` was found. |",
        "| 3 | An internal error: a bug in lockdocs (set `LOCKDOCS_DEBUG=1` for the traceback). |",
        "",
        "## Commands",
        "",
        "| Command | What it does |",
        "|---|---|",
    ]
    commands = group.commands
    for name in commands:
        short = (commands[name].help or "").strip().split("\n")[0]
        lines.append(f"| [`lockdocs {name}`](#{slug(name)}) | {cell(short)} |")
    lines.append("")
    for name, cmd in commands.items():
        ctx = typer.Context(cmd, info_name=name, parent=root_ctx)
        usage = str(cmd.get_usage(ctx)).removeprefix("Usage: ").strip()
        lines += [
            f"### lockdocs {name} {{#{slug(name)}}}",
            "",
            prose(cmd.help or ""),
            "",
            fence(usage, "text"),
            "",
        ]
        rows: list[str] = []
        for param in cmd.get_params(ctx):
            if param.name == "help" or getattr(param, "hidden", False):
                continue
            record = param.get_help_record(ctx)
            if record is None:
                continue
            names, help_text = record
            rows.append(f"| {code_cell(_readable(names))} | {cell(help_text)} |")
        if rows:
            lines += ["| Option | Description |", "|---|---|", *rows, ""]
    return "\n".join(lines).rstrip("\n") + "\n"
