"""What a new user meets on the command line: --version, completion, colour, settings typos and
the messages for the usual slips, through the real CLI (a real pseudo-terminal where the
behaviour depends on one, a real bash for completion)."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from conftest import REPO, run_cli, write_project
from lockdocs.rules.catalog import load_all

# a small project with no findings
CLEAN = {k: v for k, v in load_all()["LD021"].use_instead.items() if k != "pyproject.toml"}
ESC = "\x1b["


def _on_terminal(
    args: list[str], env: dict[str, str] | None = None, stream: str = "stdout"
) -> tuple[int, str, str]:
    """Run the CLI with `stream` on a pseudo-terminal (the other one piped): exit code, what
    the terminal showed, what the pipe got."""
    main, side = pty.openpty()
    full = {**os.environ, "PYTHONHASHSEED": "0", "TERM": "xterm", **(env or {})}
    for name in ("NO_COLOR", "FORCE_COLOR"):
        if name not in (env or {}):
            full.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "lockdocs", *args],
        stdout=side if stream == "stdout" else subprocess.PIPE,
        stderr=side if stream == "stderr" else subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=full,
        cwd=REPO,
    )
    os.close(side)
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    other = proc.stderr if stream == "stdout" else proc.stdout
    assert other is not None
    with other:
        piped = other.read()
    code = proc.wait(timeout=120)
    os.close(main)
    return code, shown.decode("utf-8", "replace"), piped.decode("utf-8", "replace")


def test_version() -> None:
    result = run_cli("--version")
    assert result.code == 0
    assert result.out == f"lockdocs {version('lockdocs')}\n"
    assert "--version" in run_cli("--help").out


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completion_completes_commands_options_and_values() -> None:
    script = run_cli("completion", "bash")
    assert script.code == 0 and "complete -o default -F _lockdocs_completion lockdocs" in script.out
    probe = (
        'eval "$(lockdocs completion bash)"\n'
        "for words in 'lockdocs ch' 'lockdocs check --f' 'lockdocs check --format '; do\n"
        '  read -ra COMP_WORDS <<< "$words"\n'
        '  [ "${words: -1}" = " " ] && COMP_WORDS+=("")\n'
        "  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
        "  _lockdocs_completion lockdocs\n"
        '  echo "${COMPREPLY[*]}"\n'
        "done\n"
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    assert out[0].split() == ["check"]
    assert out[1].split() == ["--format"]
    assert out[2].split() == ["text", "json", "github", "sarif"]
    for shell in ("zsh", "fish"):
        assert "lockdocs" in run_cli("completion", shell).out


def test_colour_on_a_terminal_and_never_in_a_pipe(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", load_all()["LD020"].example)
    args = ["check", "--no-drift", "--root", str(root)]
    code, shown, _ = _on_terminal(args)
    assert code == 0
    assert f"{ESC}1mLD020{ESC}0m {ESC}1;33mwarning{ESC}0m: checks: ld302" in shown
    assert f"{ESC}1;33m1 warning{ESC}0m" in shown
    _, plain, _ = _on_terminal(args, {"NO_COLOR": "1"})
    assert ESC not in plain and "LD020 warning: checks: ld302" in plain
    piped = run_cli(*args, env={"NO_COLOR": None, "FORCE_COLOR": None})
    assert ESC not in piped.out
    forced = run_cli(*args, env={"NO_COLOR": None, "FORCE_COLOR": "1"})
    assert f"{ESC}1;33mwarning" in forced.out


def test_build_progress_on_a_terminal_only(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", CLEAN)
    code, shown, out = _on_terminal(
        ["build", "--no-svg", "--root", str(root)], {"LOCKDOCS_PROGRESS_AFTER": "0"}, "stderr"
    )
    assert code == 0, shown
    assert "\r\x1b[Klockdocs: " in shown  # a line redrawn in place ...
    assert shown.endswith("\r\x1b[K")  # ... and erased at the end
    assert "written" in out
    piped = run_cli("build", "--no-svg", "--root", str(root), env={"LOCKDOCS_PROGRESS_AFTER": "0"})
    assert piped.code == 0 and "\x1b" not in piped.err and piped.err == ""


def test_unknown_check_codes_are_warnings_with_a_suggestion(tmp_path: Path) -> None:
    files = dict(CLEAN)
    files["locks.yaml"] += "checks:\n  LD999: off\n  ld302: info\n"
    files["pyproject.toml"] = '[tool.lockdocs.checks]\nLD3O2 = "info"\n'
    root = write_project(tmp_path / "p", files)
    result = run_cli("check", "--no-drift", "--root", str(root))
    assert result.code == 0  # warnings
    lines = result.out.splitlines()
    assert "locks.yaml:13:3: LD020 warning: checks: LD999 names no lockdocs check" in lines
    assert (
        "  hint: lockdocs rules lists every code; a setting for an unknown code has no effect"
        in lines
    )
    assert (
        "locks.yaml:14:3: LD020 warning: checks: ld302 names no lockdocs check; "
        "did you mean 'LD302'?"
    ) in lines
    assert (
        "pyproject.toml:2:1: LD020 warning: [tool.lockdocs] checks.LD3O2 names no lockdocs "
        "check; did you mean 'LD302'?"
    ) in lines


def test_unknown_setting_and_bad_values_at_their_line(tmp_path: Path) -> None:
    files = dict(CLEAN)
    files["pyproject.toml"] = (
        '[project]\nname = "app"\n\n[tool.lockdocs]\nrule_url = "https://x.invalid/"\n'
        'dot_timeout = -1\n\n[tool.lockdocs.checks]\nLD301 = "loud"\n'
    )
    root = write_project(tmp_path / "p", files)
    result = run_cli("check", "--no-drift", "--root", str(root))
    assert result.code == 2
    out = result.out
    assert (
        "pyproject.toml:5:1: LD021 warning: [tool.lockdocs] has no setting 'rule_url'; "
        "did you mean 'rules_url'?"
    ) in out
    assert (
        "pyproject.toml:6:1: LD003 error: [tool.lockdocs] dot_timeout = -1 is not a number" in out
    )
    assert "pyproject.toml:9:1: LD003 error: [tool.lockdocs] checks.LD301 = 'loud' is not" in out
    (root / "pyproject.toml").write_text("[tool.lockdocs]\nchecks = {LD301 = }\n")
    broken = run_cli("check", "--no-drift", "--root", str(root))
    assert broken.code == 2
    assert broken.out.startswith(
        "pyproject.toml:2:19: LD003 error: pyproject.toml is not valid TOML: "
    )


def test_dot_timeout_from_the_command_line(tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz is not installed")
    root = write_project(tmp_path / "p", CLEAN)
    result = run_cli("build", "--dot-timeout", "0.001", "--root", str(root))
    assert result.code == 2
    assert "did not finish drawing" in result.err and "in 0.001 s" in result.err
    assert "nothing written" in result.err
    assert not (root / "docs").exists()


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ("      - take: ledger\n", "      - take: ledger\n        mode: for nokey update\n"),
            "paths/ledger.yaml:8:15: LD006 error: 'for nokey update' is not a mode of this lock "
            "('ledger'); did you mean 'for no key update'?\n"
            "  hint: lock 'ledger' is declared with for update\n",
        ),
        (
            ("      - take: ledger\n", "      - take: ledger\n      - comit\n"),
            "paths/ledger.yaml:8:9: LD003 error: 'comit' is not a step\n"
            "  hint: did you mean 'commit'? (a step is the word commit or rollback, or a mapping "
            "that starts with one of take:, set:, loop:, branches:, run:, call:, external:, write:, "
            "begin:, commit:, rollback:, leave_open:, release:)\n",
        ),
        (
            ("      - take: ledger\n", "\t- take: ledger\n"),
            "paths/ledger.yaml:7:1: LD001 error: YAML syntax: found character that cannot start "
            "any token\n  hint: YAML indents with spaces only; replace the tab with spaces\n",
        ),
    ],
    ids=["mode-typo", "step-form", "tab"],
)
def test_the_usual_slips(tmp_path: Path, edit: tuple[str, str], expected: str) -> None:
    files = dict(CLEAN)
    files["paths/ledger.yaml"] = files["paths/ledger.yaml"].replace(*edit)
    root = write_project(tmp_path / "p", files)
    result = run_cli("check", "--no-drift", "--root", str(root))
    assert result.code == 2
    assert result.out == expected + "the declarations are not valid\n"
