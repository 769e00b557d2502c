"""Hostile project templates: a template is code from whoever edits the repository (a pull
request on CI), so it runs sandboxed and bounded, and whatever goes wrong in it is LD601 at its
file and line, exit 2, nothing written. Real CLI, real files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"
TEMPLATE = "templates/planned.md.j2"


def _project(tmp_path: Path, template: str) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    (root / "templates").mkdir()
    (root / TEMPLATE).write_text(template, encoding="utf-8")
    return root


def _refused(root: Path, words: str, *, line: int = 1, seconds: str = "") -> None:
    """build and check both refuse with LD601 at the template's line; nothing is written."""
    env = {"LOCKDOCS_TEMPLATE_SECONDS": seconds} if seconds else None
    build = run_cli("build", "--root", str(root), env=env)
    assert build.code == 2, build.out + build.err
    assert f"{TEMPLATE}:{line}:1: LD601 error: " in build.err, build.err
    assert words in build.err, build.err
    assert "Traceback" not in build.err and "internal error" not in build.err
    assert not (root / "docs").exists()
    check = run_cli("check", "--root", str(root), env=env)
    assert check.code == 2, check.out + check.err
    assert f"{TEMPLATE}:{line}:1: LD601 error: " in check.out


@pytest.mark.parametrize(
    "escape",
    [
        "{{ lipsum.__globals__['os'].popen('touch %s').read() }}",
        "{{ cycler.__init__.__globals__.os.popen('touch %s') }}",
        "{{ joiner.__init__.__globals__['os'].system('touch %s') }}",
        "{{ namespace.__init__.__globals__['os'].system('touch %s') }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}{{ 'touch %s' }}",
        "{{ self._TemplateReference__context }}{{ 'touch %s' }}",
        "{{ range.__self__ }}{{ 'touch %s' }}",
        "{{ page.title.__class__.__base__.__subclasses__() }}{{ 'touch %s' }}",
        "{{ dict.__init__.__globals__ }}{{ 'touch %s' }}",
    ],
)
def test_a_template_cannot_reach_python(tmp_path: Path, escape: str) -> None:
    marker = tmp_path / "ran"
    root = _project(tmp_path, "Planned\n" + escape.replace("%s", str(marker)) + "\n")
    _refused(root, "template error", line=2)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("template", "words"),
    [
        ("{{ 1/0 }}", "ZeroDivisionError: division by zero"),
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "recurses without end"),
        ("{{ page.planned[10**6] }}", "template error"),
        ("{{ 'x' * 10**10 }}", "'*' would make a value of about 10,000,000,000"),
        ("{{ 2 ** 100000000 }}", "'**' would make an integer"),
        ("{{ '%999999999d' % 1 }}", "'%' would make a value"),
        ("{{ 'a'.ljust(10**9) }}", "str.ljust would make a value"),
        ("{{ '{:>999999999}'.format(1) }}", "str.format is not available"),
        ("{{ 'x'|center(10**9) }}", "the center filter was given"),
        ("{{ range(10)|join('x' * 1000000) }}", "the join filter would make a value"),
        ("{{ 'ab'|replace('', 'x' * 3000000) }}", "the replace filter would make a value"),
        ("{{ 'x'|indent('y' * 5000000) }}", "template over a limit"),
        (
            "{% set ns = namespace(s='x') %}{% for i in range(40) %}"
            "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
            "joining text would make a value",
        ),
        (
            "{% set a = 'x' * 1000000 %}{% set b = a ~ a %}{% set c = b ~ b %}"
            "{% set d %}{{ c }}{{ c }}{% endset %}{{ d ~ d }}",
            "joining text would make a value",
        ),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "range() handed out more than",
        ),
        (
            "{% set s = 'x' * 3000000 %}{% for i in range(100) %}{{ s }}{% endfor %}",
            "the page would be longer than",
        ),
    ],
)
def test_a_template_error_or_blow_up_is_ld601(tmp_path: Path, template: str, words: str) -> None:
    root = _project(tmp_path, "Planned\n\n" + template + "\n")
    _refused(root, words, line=3)


def test_a_template_that_runs_too_long_is_stopped(tmp_path: Path) -> None:
    """Loops over data need no range(): the time limit stops them (5 s here: the default
    templates before it must finish inside the limit even on a loaded machine, or the limit
    is reported at them instead)."""
    loops = (
        "{% set l = range(1000)|list %}{% for a in l %}{% for b in l %}{% for c in l %}"
        "{% endfor %}{% endfor %}{% endfor %}"
    )
    root = _project(tmp_path, loops + "\n")
    _refused(root, "rendering took longer than 5 s", seconds="5")


def test_ordinary_template_code_still_works(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        "## Roadmap\n\n{% set ns = namespace(n=0) %}{% for p in page.planned %}"
        "{% set ns.n = ns.n + 1 %}- {{ ns.n }}. {{ p.title|text|upper }} {{ '%03d'|format(7) }}"
        " {{ 'a,b'.split(',')|join('-') }} {{ ('x' ~ 'y') * 2 }}\n{% endfor %}\n",
    )
    result = run_cli("build", "--root", str(root))
    assert result.code == 0, result.err
    page = (root / "docs" / "database-locks.md").read_text()
    assert "- 1. GIVE THE CUSTOMER KEY A FAMILY PREFIX. 007 a-b xyxy" in page


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_template_symlinked_outside_the_project_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("{{ page.title }} TOP SECRET\n")
    root = _project(tmp_path, "x\n")
    (root / TEMPLATE).unlink()
    (root / TEMPLATE).symlink_to(secret)
    build = run_cli("build", "--root", str(root))
    assert build.code == 2, build.err
    assert f"{TEMPLATE}: LD601 error: template refused" in build.err
    assert "TOP SECRET" not in build.err + build.out
    assert not (root / "docs").exists()


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_symlinked_templates_folder_outside_the_project_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "page.md.j2").write_text("# {{ page.title }} from elsewhere\n")
    root = _project(tmp_path, "x\n")
    shutil.rmtree(root / "templates")
    (root / "templates").symlink_to(elsewhere, target_is_directory=True)
    build = run_cli("build", "--root", str(root))
    assert build.code == 2, build.err
    assert "templates/: LD601 error: template refused: templates/ leads outside" in build.err
    assert not (root / "docs").exists()


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_a_template_symlinked_inside_the_project_is_read(tmp_path: Path) -> None:
    root = _project(tmp_path, "x\n")
    (root / "shared.j2").write_text("## Roadmap from a shared file\n")
    (root / TEMPLATE).unlink()
    (root / TEMPLATE).symlink_to(root / "shared.j2")
    assert run_cli("build", "--root", str(root)).code == 0
    assert "## Roadmap from a shared file" in (root / "docs" / "database-locks.md").read_text()
