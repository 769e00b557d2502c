"""A check answered without reading the declarations again is never a stale verdict.

Two shortcuts, each proven here by changing every kind of input it depends on and comparing
with a check that uses neither:

- the result cache (`lockdocs.checkcache`): a check's findings, kept outside the project with
  the sha256 of every file the run read and the tree of every folder it walked;
- the manifest's seal (`lockdocs.render.manifest`): `lockdocs build` seals the list of what it
  wrote with the inputs it rendered, so a check whose inputs are the same reads the manifest and
  the listed files instead of rendering the docs again.

In process (`commands.check.check`, output captured): the subprocess adds nothing here, and
`tests/test_drift.py` runs the same checks through the real command line.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import lockdocs.api as api_mod
import lockdocs.render.manifest as manifest_mod
import lockdocs.render.pages as pages_mod
from conftest import REPO
from lockdocs import checkcache
from lockdocs.api import build
from lockdocs.commands import Format
from lockdocs.commands.check import check

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"
PAGE = "docs/database-locks.md"
SQL = """-- name: LockCustomer :exec
SELECT pg_advisory_xact_lock(hashtextextended('customer:' || $1, 0));
-- name: ReserveStock :exec
UPDATE shop.stock SET reserved = reserved + 1 WHERE sku = $1;
"""


class Runs:
    """Counts what each check had to do: the full pipeline, the renderer."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pipeline = 0
        self.renders = 0
        real_check, real_render = api_mod.check, pages_mod.render_outputs

        def counted_check(*a: object, **k: object) -> api_mod.CheckResult:
            self.pipeline += 1
            return real_check(*a, **k)  # type: ignore[arg-type]

        def counted_render(*a: object, **k: object) -> dict[str, str]:
            self.renders += 1
            return real_render(*a, **k)  # type: ignore[arg-type]

        monkeypatch.setattr(api_mod, "check", counted_check)
        monkeypatch.setattr(pages_mod, "render_outputs", counted_render)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The render fixture with `code:` and [tool.lockdocs] added, built without SVGs (so no
    Graphviz: the checks here compare with --no-svg)."""
    root = tmp_path / "shop"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    locks.write_text(locks.read_text(encoding="utf-8") + 'code: ["sql/**/*.sql"]\n')
    (root / "sql").mkdir()
    (root / "sql" / "queries.sql").write_text(SQL, encoding="utf-8")
    (root / "pyproject.toml").write_text("[tool.lockdocs]\ndot_timeout = 60\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("LOCKDOCS_CACHE", raising=False)
    assert build(root, svg=False, out=_Sink(), err=_Sink()) == 0
    return root


class _Sink:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _check(
    root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *,
    cache: bool = True,
    fmt: Format = Format.json,
) -> tuple[int, str]:
    with monkeypatch.context() as m:
        if not cache:
            m.setenv("LOCKDOCS_CACHE", "off")
        code = check(root, fmt, True, svg=False)
    return code, capsys.readouterr().out


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


MUTATIONS: dict[str, Callable[[Path], object]] = {
    "locks.yaml": lambda r: _replace(r / "locks.yaml", "title: Shop Locks", "title: Shop"),
    "a path file": lambda r: _replace(
        r / "paths" / "checkout.yaml", "title: Place an order", "title: Order"
    ),
    "a path file added": lambda r: (r / "paths" / "zz.yaml").write_text(
        "group: More\ntransaction: plain\npaths:\n  more:\n    title: More\n"
        "    steps:\n      - take: customer\n        via: More\n"
    ),
    "a path file removed": lambda r: (r / "paths" / "maintenance.yaml").unlink(),
    "a folder added under paths": lambda r: (r / "paths" / "sub").mkdir(),
    "pyproject.toml": lambda r: (r / "pyproject.toml").write_text(
        '[tool.lockdocs]\nchecks = {LD301 = "off"}\n'
    ),
    "pyproject.toml removed": lambda r: (r / "pyproject.toml").unlink(),
    "a code file": lambda r: _replace(r / "sql" / "queries.sql", "shop.stock", "shop.stocks"),
    "a code file added": lambda r: (r / "sql" / "more.sql").write_text(
        "SELECT 1 FROM shop.orders WHERE id = $1 FOR UPDATE;\n"
    ),
    "a code file in a new folder": lambda r: (
        (r / "sql" / "deep").mkdir(),
        (r / "sql" / "deep" / "q.sql").write_text("SELECT 1 FROM shop.x FOR UPDATE;\n"),
    ),
    "a template": lambda r: (
        (r / "templates").mkdir(),
        (r / "templates" / "planned.md.j2").write_text("## Planned, by hand\n"),
    ),
    "the generated page": lambda r: _replace(r / PAGE, "Shop Locks", "Shop locks"),
    "a generated file deleted": lambda r: next((r / "docs").rglob("*.dot")).unlink(),
    "the manifest's list": lambda r: _replace(r / "docs" / ".lockdocs-manifest", ".dot ", ".dot  "),
    "an interrupted build": lambda r: (r / "docs" / ".lockdocs-journal").write_text("[]"),
}


@pytest.mark.parametrize("what", list(MUTATIONS))
def test_a_changed_input_is_never_answered_from_the_cache(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    what: str,
) -> None:
    runs = Runs(monkeypatch)
    first = _check(project, capsys, monkeypatch)
    assert runs.pipeline == 0 and runs.renders == 0, "the build's findings and seal answer"
    assert _check(project, capsys, monkeypatch, cache=False) == first
    assert runs.pipeline == 1
    MUTATIONS[what](project)
    cached = _check(project, capsys, monkeypatch)
    assert runs.pipeline == 2, "the change made the check run in full"
    assert cached == _check(project, capsys, monkeypatch, cache=False)


def test_the_cached_answer_is_the_full_answer_in_every_format(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(monkeypatch)
    for fmt in Format:
        full = _check(project, capsys, monkeypatch, cache=False, fmt=fmt)
        assert _check(project, capsys, monkeypatch, fmt=fmt) == full
    assert runs.pipeline == len(Format), "the build filled the cache; every cached check read it"


def test_another_lockdocs_does_not_read_the_cache(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(monkeypatch)
    _check(project, capsys, monkeypatch)
    assert runs.pipeline == 0, "the build's findings answer"
    monkeypatch.setattr(checkcache, "tool", lambda: "another lockdocs")
    _check(project, capsys, monkeypatch)
    assert runs.pipeline == 1


def test_a_symlink_where_a_walk_looks_turns_the_cache_off(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a link leads can change while the folder does not: never cached."""
    (project / "shared").mkdir()
    shutil.move(project / "paths" / "maintenance.yaml", project / "shared" / "m.yaml")
    (project / "paths" / "maintenance.yaml").symlink_to(project / "shared" / "m.yaml")
    runs = Runs(monkeypatch)
    first = _check(project, capsys, monkeypatch)
    assert _check(project, capsys, monkeypatch) == first
    assert runs.pipeline == 2


# --- the manifest's seal, with no cache at all (CI on a fresh clone) ---------------------------


@pytest.fixture
def cold(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCKDOCS_CACHE", "off")
    return project


def _codes(out: str) -> dict[str, str]:
    import json

    return {d["file"]: d["code"] for d in json.loads(out)["diagnostics"] if "LD6" in d["code"]}


def test_a_sealed_manifest_answers_for_the_docs_without_rendering(
    cold: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = Runs(monkeypatch)
    code, out = _check(cold, capsys, monkeypatch)
    assert code in (0, 1) and _codes(out) == {}
    assert runs.renders == 0, "the seal holds: nothing rendered"
    head = (cold / "docs" / ".lockdocs-manifest").read_text().splitlines()[1]
    assert head.startswith(manifest_mod.SEAL_HEAD)


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("the generated page", {PAGE: "LD602"}),
        ("a generated file deleted", "LD603"),
        ("locks.yaml", "LD602"),
        ("the manifest's list", {"docs/.lockdocs-manifest": "LD602"}),
    ],
)
def test_whatever_breaks_the_seal_is_rendered_and_reported(
    cold: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    what: str,
    expected: dict[str, str] | str,
) -> None:
    MUTATIONS[what](cold)
    runs = Runs(monkeypatch)
    code, out = _check(cold, capsys, monkeypatch)
    assert runs.renders == 1 and code == 1
    found = _codes(out)
    if isinstance(expected, dict):
        assert found == expected
    else:
        assert found and set(found.values()) == {expected}


def test_an_input_change_that_leaves_the_docs_as_they_are_is_no_drift(
    cold: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment in locks.yaml breaks the seal but changes no generated file: rendered and
    compared, no drift; with the cache on, this machine remembers the list holds for these
    inputs and the next check renders nothing."""
    locks = cold / "locks.yaml"
    locks.write_text(locks.read_text(encoding="utf-8") + "# a comment\n", encoding="utf-8")
    runs = Runs(monkeypatch)
    full = _check(cold, capsys, monkeypatch)
    assert _codes(full[1]) == {} and runs.renders == 1
    assert _check(cold, capsys, monkeypatch) == full and runs.renders == 2, "no cache: renders"
    monkeypatch.delenv("LOCKDOCS_CACHE")
    assert _check(cold, capsys, monkeypatch) == full and runs.renders == 3
    assert _check(cold, capsys, monkeypatch) == full
    assert runs.renders == 3, "the local seal vouches now"


def test_a_manifest_another_lockdocs_wrote_is_rendered_and_compared(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "shop"
    shutil.copytree(FIXTURE, root)
    monkeypatch.setenv("LOCKDOCS_CACHE", "off")
    with monkeypatch.context() as m:
        m.setattr(manifest_mod, "__version__", "0.0.1")
        assert build(root, svg=False, out=_Sink(), err=_Sink()) == 0
    runs = Runs(monkeypatch)
    _, out = _check(root, capsys, monkeypatch)
    assert runs.renders == 1, "another version's seal vouches for nothing"
    assert _codes(out) == {}, "the files are what this version writes: no drift"
    assert build(root, svg=False, out=_Sink(), err=_Sink()) == 0
    rendered = runs.renders
    _check(root, capsys, monkeypatch)
    assert runs.renders == rendered, "rebuilt: this version's seal holds"


def test_a_manifest_other_code_of_the_same_version_wrote_is_rendered_and_compared(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A git install or an edited checkout keeps its version while its templates and views
    # change: a seal by the version alone vouched for docs this code would write otherwise.
    root = tmp_path / "shop"
    shutil.copytree(FIXTURE, root)
    monkeypatch.setenv("LOCKDOCS_CACHE", "off")
    with monkeypatch.context() as m:
        m.setattr(manifest_mod, "package_digest", lambda: "0" * 64)
        assert build(root, svg=False, out=_Sink(), err=_Sink()) == 0
    runs = Runs(monkeypatch)
    _check(root, capsys, monkeypatch)
    assert runs.renders == 1, "other code's seal vouches for nothing"
    assert build(root, svg=False, out=_Sink(), err=_Sink()) == 0
    rendered = runs.renders
    _check(root, capsys, monkeypatch)
    assert runs.renders == rendered, "rebuilt by this code: its seal holds"


def test_the_package_digest_reads_what_the_files_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("LOCKDOCS_CACHE", raising=False)
    checkcache.package_digest.cache_clear()
    try:
        first = checkcache.package_digest()
        memo = tmp_path / "cache" / "lockdocs" / f"package-{checkcache.tool()[:32]}"
        assert memo.read_text(encoding="ascii").strip() == first, "kept under tool()"
        checkcache.package_digest.cache_clear()
        assert checkcache.package_digest() == first, "read back from the memo"
        monkeypatch.setenv("LOCKDOCS_CACHE", "off")
        # With the cache off, the memo sits beside the package's bytecode (`make setup`
        # writes it): one, this package's; a stale one is removed, a bad one computed again.
        bytecode = Path(checkcache.__file__).parent / "__pycache__"
        kept = bytecode / f"package-{checkcache.tool()[:32]}"
        stale = bytecode / "package-0123456789abcdef0123456789abcdef"
        stale.write_text("f" * 64 + "\n", encoding="ascii")
        kept.write_text("not a digest\n", encoding="ascii")
        checkcache.package_digest.cache_clear()
        assert checkcache.package_digest() == first, "the same without the cache folder"
        assert kept.read_text(encoding="ascii").strip() == first, "kept beside the bytecode"
        assert not stale.exists(), "another package's memo is removed"
        checkcache.package_digest.cache_clear()
        assert checkcache.package_digest() == first, "read back from beside the bytecode"
        # the names and bytes of the package's files, nothing of where they sit on this disk
        names = [name for name, _ in checkcache._package_files()]
        assert "render/manifest.py" in names and "templates/page.md.j2" in names
        assert all(not name.startswith("/") for name in names)
    finally:
        checkcache.package_digest.cache_clear()


def test_an_svg_read_as_bytes_says_what_its_text_says() -> None:
    """The manifest's check reads each SVG's stamps from its bytes; whatever the bytes hold,
    that is the stamp `svg_stamp` reads from the text."""
    from lockdocs.render.stamps import svg_stamp, svg_stamp_of

    drawn = (REPO / "docs" / "database-locks" / "legend.svg").read_text(encoding="utf-8")
    assert svg_stamp(drawn) is not None
    title = "<title>Légende</title>"
    variants = {
        "as drawn": drawn,
        "CRLF": drawn.replace("\n", "\r\n"),
        "edited": drawn.replace("</svg>", "<g/></svg>"),
        "non-ASCII head": drawn.replace("<svg", title + "<svg", 1),
        "no content stamp": re.sub(r"<!-- lockdocs-svg-sha256: \w+ -->\n", "", drawn),
        "no stamps": re.sub(r"<!-- lockdocs-(svg|dot)-sha256: \w+ -->\n?", "", drawn),
        "empty": "",
    }
    for name, text in variants.items():
        data = text.encode("utf-8")
        assert svg_stamp_of(data) == svg_stamp(text), name
    bad = drawn.encode("utf-8").replace(b"</svg>", b"\xff</svg>")
    assert svg_stamp_of(bad) == svg_stamp(bad.decode("utf-8", "replace")) is None
