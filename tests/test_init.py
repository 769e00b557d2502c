"""`lockdocs init` through the real command line: a project that passes `check` as it stands,
and never a file written over an existing one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import lockdocs_process

DECLARATIONS = [
    "locks.yaml",
    "paths/accounts.yaml",
    ".lockdocs/locks.schema.json",
    ".lockdocs/paths.schema.json",
]


lockdocs = lockdocs_process


def files_under(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_init_then_check_passes(tmp_path: Path) -> None:
    proc = lockdocs("init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for rel in DECLARATIONS:
        assert (tmp_path / rel).is_file(), rel
        assert f"wrote {rel}\n" in proc.stdout
    check = lockdocs("check", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout == "0 errors, 0 warnings, 0 info, 0 waived\n"


def test_init_writes_the_page_so_check_sees_no_drift(tmp_path: Path) -> None:
    lockdocs("init", cwd=tmp_path)
    page = tmp_path / "docs" / "database-locks.md"
    if not page.is_file():  # pragma: no cover - a build without the renderer
        pytest.skip("this lockdocs cannot render pages")
    before = files_under(tmp_path)
    build = lockdocs("build", cwd=tmp_path)
    if build.returncode == 2 and "No such command" in build.stderr:  # pragma: no cover
        pytest.skip("the build command is not there yet")
    assert build.returncode == 0, build.stderr
    assert files_under(tmp_path) == before  # init wrote exactly what build writes


def test_init_into_a_new_folder(tmp_path: Path) -> None:
    proc = lockdocs("init", "svc/locks", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote svc/locks/locks.yaml\n" in proc.stdout
    assert "lockdocs check --root svc/locks" in proc.stdout
    assert lockdocs("check", "--root", "svc/locks", cwd=tmp_path).returncode == 0


def test_schema_line_points_at_the_written_schema(tmp_path: Path) -> None:
    lockdocs("init", cwd=tmp_path)
    for rel, schema in (("locks.yaml", "locks"), ("paths/accounts.yaml", "paths")):
        first = (tmp_path / rel).read_text(encoding="utf-8").splitlines()[0]
        prefix = "# yaml-language-server: $schema="
        assert first.startswith(prefix)
        target = ((tmp_path / rel).parent / first.removeprefix(prefix)).resolve()
        assert target == (tmp_path / ".lockdocs" / f"{schema}.schema.json").resolve()
        printed = lockdocs("schema", schema, cwd=tmp_path).stdout
        assert json.loads(target.read_text(encoding="utf-8")) == json.loads(printed)


def test_init_prints_how_to_serve_and_the_pre_commit_lines(tmp_path: Path) -> None:
    out = lockdocs("init", cwd=tmp_path).stdout
    assert (
        "The site: mkdocs.yml, docs/index.md and lockdocs' stylesheet "
        "(docs/stylesheets/lockdocs.css) are written; the page is in the nav.\n"
    ) in out
    for serve in ("mkdocs serve", "properdocs serve", "zensical serve"):
        assert serve in out, serve
    assert "      - id: lockdocs-check\n" in out
    assert "lockdocs check " in out  # no --root for the current folder
    assert "--root" not in out


def test_init_writes_a_site_that_builds_strict(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    import yaml

    proc = lockdocs("init", cwd=tmp_path)
    assert "wrote mkdocs.yml\n" in proc.stdout and "wrote docs/index.md\n" in proc.stdout
    config = yaml.safe_load((tmp_path / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["site_name"] and config["theme"]["name"] == "material"
    assert "attr_list" in config["markdown_extensions"]
    assert {"Database locks": "database-locks.md"} in config["nav"]
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    html = (tmp_path / "site" / "database-locks" / "index.html").read_text(encoding="utf-8")
    assert 'id="lock-account-row"' in html and "{#" not in html
    assert (tmp_path / "site" / "index.html").is_file(), "the site's root is not a 404"


MINIMAL_MKDOCS = "site_name: Mine\nnav:\n  - Home: index.md\n"


@pytest.mark.parametrize(
    ("config", "printed"),
    [
        (
            MINIMAL_MKDOCS,
            "Add these lines to your mkdocs.yml, so the page builds as it should:\n\n"
            "    markdown_extensions:\n"
            "      - attr_list   # heading anchors such as {#lock-...}\n"
            "      - pymdownx.details   # folded sections (??? blocks)\n\n"
            "    extra_css:\n"
            "      - stylesheets/lockdocs.css   # lockdocs' stylesheet, written by init\n\n"
            "    nav:\n"
            "      - Database locks: database-locks.md\n",
        ),
        (
            "site_name: Mine\nmarkdown_extensions:\n  - attr_list\n  - pymdownx.details\n"
            "  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
            "extra_css: [stylesheets/lockdocs.css]\n",
            "Your mkdocs.yml already has what the page needs.\n",
        ),
        (
            "site_name: Mine\ndocs_dir: site-src\nmarkdown_extensions: [attr_list, pymdownx.details]\n",
            "Note: mkdocs.yml reads pages from site-src/, but lockdocs writes the page under "
            "docs/; set docs_dir: docs\n",
        ),
    ],
)
def test_init_with_an_existing_mkdocs_yml_prints_exactly_what_to_add(
    tmp_path: Path, config: str, printed: str
) -> None:
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    proc = lockdocs("init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert printed in proc.stdout, proc.stdout
    assert (tmp_path / "mkdocs.yml").read_text(encoding="utf-8") == config, "never rewritten"
    assert not (tmp_path / "docs" / "index.md").exists()


def test_following_the_printed_lines_makes_the_site_build(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "mkdocs.yml").write_text(MINIMAL_MKDOCS, encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Mine\n", encoding="utf-8")
    out = lockdocs("init", cwd=tmp_path).stdout
    block = out.split("as it should:\n\n", 1)[1].split("\n\n\n", 1)[0].split("\nServe", 1)[0]
    added = "\n".join(line.removeprefix("    ") for line in block.splitlines()) + "\n"
    text = (
        (tmp_path / "mkdocs.yml")
        .read_text(encoding="utf-8")
        .replace("nav:\n  - Home: index.md\n", "")
    )
    (tmp_path / "mkdocs.yml").write_text(
        text + added.replace("nav:\n", "nav:\n  - Home: index.md\n"), encoding="utf-8"
    )
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    html = (tmp_path / "site" / "database-locks" / "index.html").read_text(encoding="utf-8")
    assert 'id="lock-account-row"' in html and "{#" not in html


@pytest.mark.parametrize(
    "existing", ["locks.yaml", "paths/accounts.yaml", "docs/database-locks.md"]
)
def test_init_refuses_to_overwrite(tmp_path: Path, existing: str) -> None:
    target = tmp_path / existing
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("mine\n", encoding="utf-8")
    before = files_under(tmp_path)
    proc = lockdocs("init", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        f"lockdocs: {existing} already exists; init writes nothing over existing files\n"
    )
    assert files_under(tmp_path) == before


def test_init_twice(tmp_path: Path) -> None:
    assert lockdocs("init", cwd=tmp_path).returncode == 0
    before = files_under(tmp_path)
    again = lockdocs("init", cwd=tmp_path)
    assert again.returncode == 2
    assert again.stderr == (
        "lockdocs: locks.yaml already exists; init writes nothing over existing files\n"
    )
    assert files_under(tmp_path) == before


def test_init_on_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    proc = lockdocs("init", "f", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "lockdocs: f is not a folder\n"


def test_paths_that_is_a_file_blocks_init(tmp_path: Path) -> None:
    (tmp_path / "paths").write_text("x", encoding="utf-8")
    proc = lockdocs("init", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == "lockdocs: paths exists and is not a folder\n"
    assert files_under(tmp_path) == {"paths": b"x"}


def test_init_writes_lockdocs_stylesheet_and_an_example_that_commits(tmp_path: Path) -> None:
    """The new site shows the page as the tool's own site does: the stylesheet (the package's
    copy, the same as this site's) is written and named in mkdocs.yml, and the example path
    ends its transaction."""
    import yaml

    from lockdocs.scaffold import stylesheet

    assert lockdocs("init", cwd=tmp_path).returncode == 0
    css = tmp_path / "docs" / "stylesheets" / "lockdocs.css"
    assert css.read_bytes() == stylesheet()
    repo = Path(__file__).resolve().parents[1]
    assert (repo / "docs" / "stylesheets" / "lockdocs.css").read_bytes() == stylesheet()
    config = yaml.safe_load((tmp_path / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["extra_css"] == ["stylesheets/lockdocs.css"]
    path = yaml.safe_load((tmp_path / "paths" / "accounts.yaml").read_text(encoding="utf-8"))
    assert path["paths"]["sync-account"]["steps"][-1] == "commit"
    page = (tmp_path / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert "4. Commits" in page
    # no claim about code the project does not name, no "several" where no path takes several
    assert "No code takes" not in page and "several at once" not in page
