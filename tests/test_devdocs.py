"""The generated reference pages (format, rules, CLI) are current and cover the code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lockdocs import devdocs

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"


def test_committed_reference_pages_are_current() -> None:
    diffs = devdocs.drift(DOCS)
    assert not diffs, "docs/reference/ is out of date; run: python -m lockdocs.devdocs\n" + "".join(
        diffs
    )


def test_generation_is_deterministic() -> None:
    assert devdocs.generate() == devdocs.generate()


def test_format_reference_names_every_property() -> None:
    from lockdocs.rules.catalog import option_schemas
    from lockdocs.schema.definition import locks_schema, paths_schema

    text = devdocs.format_reference()

    def walk(node: object) -> set[str]:
        names: set[str] = set()
        if isinstance(node, dict):
            for name in node.get("properties", {}):
                names.add(name)
            for value in node.values():
                names |= walk(value)
        elif isinstance(node, list):
            for value in node:
                names |= walk(value)
        return names

    for name in walk(locks_schema(option_schemas())) | walk(paths_schema()):
        assert f"| `{name}` |" in text, name
    for mode in ("for no key update", "access exclusive", "skip locked"):
        assert f"`{mode}`" in text


def test_rules_reference_has_every_rule_with_its_sections() -> None:
    from lockdocs.rules.catalog import load_all

    text = devdocs.rules_reference()
    for info in load_all().values():
        assert f"### {info.code} {info.name} {{#{info.code.lower()}}}" in text
        assert f"[{info.code}](#{info.code.lower()})" in text
    assert text.count("**What it does**") == len(load_all())
    assert '```yaml title="locks.yaml"' in text


def test_cli_reference_has_every_command_and_option() -> None:
    import typer.main

    from lockdocs.cli import app

    text = devdocs.cli_reference()
    group = typer.main.get_command(app)
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        assert f"### lockdocs {name} {{#{name}}}" in text
        for param in cmd.params:
            for opt in param.opts:
                if opt.startswith("--"):
                    assert opt in text, (name, opt)
    assert "--no-drift" in text


def test_check_mode_exits_1_on_a_stale_page_and_0_when_current(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    assert devdocs.main(["--docs", str(docs)]) == 0
    assert devdocs.main(["--docs", str(docs), "--check"]) == 0
    page = docs / "reference" / "rules.md"
    page.write_text(page.read_text(encoding="utf-8") + "hand edit\n", encoding="utf-8")
    assert devdocs.main(["--docs", str(docs), "--check"]) == 1


def test_module_entry_point(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lockdocs.devdocs", "--check", "--docs", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "run: python -m lockdocs.devdocs" in proc.stdout


def test_unencodable_example_text_is_escaped_not_fatal() -> None:
    block = devdocs._fence("group: Caf\udce9\n", "yaml", "paths/x.yaml")
    assert "\\udce9" in block
    block.encode("utf-8")
