"""The user's environment: a non-ASCII project path or file name under LC_ALL=C with UTF-8 mode
off, a git revision holding a blob far larger than any declaration, a closed pipe, a deleted
working folder, a FIFO where a file should be, and hostile settings and mkdocs.yml files.
Located exit-2 errors, a plain exit-2 message, or plain success; never exit 3 and never a
hang. Real CLI, real git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"


def _cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    full = {k: v for k, v in os.environ.items() if k != "LOCKDOCS_DEBUG"}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "lockdocs", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        timeout=300,
        check=False,
    )


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t.invalid", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}


@pytest.mark.skipif(os.name != "posix", reason="locale behaviour of POSIX systems")
def test_a_non_ascii_project_path_under_the_c_locale(tmp_path: Path) -> None:
    root = tmp_path / "dépôt" / "prøject"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    locks.write_text(locks.read_text().replace("title: Shop Locks", "title: Bäckerei Locks"))
    _git("init", "-q", ".", cwd=root)
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "one", cwd=root)
    for args in (
        ["validate"],
        ["build"],
        ["check"],
        ["export"],
        ["diff", "HEAD"],
        ["check", "--diff"],
    ):
        proc = _cli(*args, cwd=root / "paths", env=C_LOCALE)
        err = proc.stderr.decode("ascii", "replace")
        assert proc.returncode in (0, 1), (args, err)
        assert "internal error" not in err and "Traceback" not in err, (args, err)
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert "Bäckerei Locks" in page  # files are UTF-8 whatever the locale


def test_a_huge_blob_in_a_diff_revision_is_refused_unread(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    _git("init", "-q", ".", cwd=root)
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "one", cwd=root)
    with (root / "paths" / "big.yaml").open("wb") as fh:
        chunk = b"# " + b"x" * (1 << 20) + b"\n"
        for _ in range(64):  # 64 MiB, sixteen times the limit
            fh.write(chunk)
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "big", cwd=root)
    (root / "paths" / "big.yaml").unlink()
    proc = _cli("diff", "HEAD", cwd=root)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    # The blob is written sparse, never read: the loader refuses the revision's declarations
    # by their size, as `check` refuses them at that commit.
    refusal = "paths: LD009 error: the declarations are 67,118,"
    assert refusal in err and "the limit is 33,554,432" in err
    assert err.endswith("lockdocs: the declarations at revision HEAD are not valid\n")
    _git("checkout", "-q", "HEAD", "--", "paths/big.yaml", cwd=root)
    at_commit = _cli("check", cwd=root)
    assert refusal in at_commit.stdout.decode() + at_commit.stderr.decode()


def _plain_exit_2(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, err)
    assert "internal error" not in err and "Traceback" not in err, err
    return err


@pytest.mark.skipif(os.name != "posix", reason="locale behaviour of POSIX systems")
def test_a_non_ascii_file_name_under_the_c_locale(tmp_path: Path) -> None:
    """Python decodes file names as ASCII there (a non-ASCII one turns into lone surrogates,
    which no UTF-8 page can hold): the run starts again in UTF-8 mode."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    (root / "paths" / "zürich.yaml").write_text(
        "group: Zürich\npaths:\n  gruezi:\n    title: Grüezi\n    steps: [{take: cache-lock}]\n",
        encoding="utf-8",
    )
    for args in (["build"], ["check"], ["check", "--format", "json"], ["export"]):
        proc = _cli(*args, cwd=root, env=C_LOCALE)
        err = proc.stderr.decode("ascii", "replace")
        assert proc.returncode in (0, 1), (args, err)
        assert "internal error" not in err and "Traceback" not in err, (args, err)
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert "paths/zürich.yaml" in page and "Grüezi" in page


def _closed_pipe_run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run the CLI with stdout on a pipe whose reading end is already closed (`| true`)."""
    read, write = os.pipe()
    os.close(read)
    try:
        full = {k: v for k, v in os.environ.items() if k != "LOCKDOCS_DEBUG"}
        full.update(env or {})
        proc = subprocess.run(
            [sys.executable, "-m", "lockdocs", *args],
            cwd=cwd,
            env=full,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write)
    return _plain_exit_2(proc)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["check"], None),  # the fast route
        (["check"], {"LOCKDOCS_NO_FAST": "1"}),  # the typer route (click's own pipe handling)
        (["export"], None),
        (["rules"], None),
    ],
)
def test_a_closed_pipe_is_a_plain_exit_2(
    tmp_path: Path, args: list[str], env: dict[str, str] | None
) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    err = _closed_pipe_run(args, root, env)
    assert err.count("\n") == 1 and "the output was cut off" in err, err


def _in_deleted_folder(gone: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The CLI started in `gone`, which is deleted before lockdocs looks at it."""
    gone.mkdir(exist_ok=True)
    script = (
        "import os, sys, runpy; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
        "sys.argv = ['lockdocs', *sys.argv[2:]]; runpy.run_module('lockdocs', run_name='__main__')"
    )
    return subprocess.run(
        [sys.executable, "-c", script, str(gone), *args],
        capture_output=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["check"],  # the fast route
        ["build", "--no-svg"],
        ["export"],
        ["scan"],
        ["scan", "db.sql"],
        ["diff", "HEAD"],
        ["init", "."],
        ["check", "--root", "proj"],  # a relative --root means nothing there either
    ],
)
def test_a_deleted_working_folder_is_a_plain_exit_2(tmp_path: Path, args: list[str]) -> None:
    err = _plain_exit_2(_in_deleted_folder(tmp_path / "gone", *args))
    assert err.startswith("lockdocs: the working folder no longer exists"), (args, err)


def test_an_absolute_project_works_from_a_deleted_working_folder(tmp_path: Path) -> None:
    """Nothing needs the working folder when the project is named in full: the report's
    paths stay relative to the project, and init's advice names the project."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    gone = tmp_path / "gone"
    proc = _in_deleted_folder(gone, "check", "--root", str(root), "--format", "json")
    assert proc.returncode == 1, proc.stderr.decode()
    assert '"file": "docs/database-locks.md"' in proc.stdout.decode()
    fresh = tmp_path / "fresh"
    proc = _in_deleted_folder(gone, "init", str(fresh))
    assert proc.returncode == 0, proc.stderr.decode()
    assert f"lockdocs check --root {fresh}" in proc.stdout.decode()


def _streams_run(args: list[str], cwd: Path, **fds: int) -> subprocess.CompletedProcess[bytes]:
    """The CLI with its stdout or stderr closed, or on another file (`stdout=fd`)."""
    closed = [n for n, fd in fds.items() if fd < 0]
    script = (
        "import os, sys\n"
        f"for fd in {[1 if n == 'stdout' else 2 for n in closed]}: os.close(fd)\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'lockdocs', *sys.argv[1:]])\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        stdout=fds["stdout"] if fds.get("stdout", -1) >= 0 else subprocess.DEVNULL,
        stderr=fds["stderr"] if fds.get("stderr", -1) >= 0 else subprocess.PIPE,
        timeout=300,
        check=False,
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_closed_or_full_standard_streams_are_a_plain_exit_2(tmp_path: Path) -> None:
    """>&- (Python gives None for the stream: exit 3 on the first write), 2>&- (the first
    message ended the run with exit 1, as if findings), and a stdout on a full disk."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    for args in (["check"], ["export"], ["rules"]):
        proc = _streams_run(args, root, stdout=-1)
        assert _plain_exit_2(proc) == (
            "lockdocs: the standard output is closed (>&-), so nothing can be written; to "
            "discard the output, send it to /dev/null\n"
        ), args
    with Path(os.devnull).open("wb") as null:
        proc = _streams_run(
            ["check", "--root", str(tmp_path / "none")], root, stdout=null.fileno(), stderr=-1
        )
    assert proc.returncode == 2  # no locks.yaml: said nowhere, but still bad input
    with Path("/dev/full").open("wb") as full:
        for args in (["export"], ["check", "--format", "json"]):
            proc = _streams_run(args, root, stdout=full.fileno())
            assert _plain_exit_2(proc) == (
                "lockdocs: No space left on device (writing the output): the disk is full; "
                "free some space and run it again\n"
            ), args


def _unprivileged() -> list[str]:
    """A prefix that runs a command without root's right to read any file (or nothing when
    not root), so a mode of 000 means unreadable."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv: every file is readable")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}"]


def test_unreadable_generated_files_and_code_folders_are_said_so(tmp_path: Path) -> None:
    """A page this user cannot read was reported "missing"; a code: folder it cannot read made
    the glob "match no file"."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    db = root / "db" / "sub"
    db.mkdir(parents=True)
    (db / "q.sql").write_text("select 1 from t for update;\n")
    locks = root / "locks.yaml"
    locks.write_text(
        locks.read_text().replace("lockdocs: 1\n", "lockdocs: 1\ncode: ['db/**/*.sql']\n")
    )
    assert _cli("build", "--no-svg", cwd=root).returncode == 0
    page = root / "docs" / "database-locks.md"
    page.chmod(0)
    db.chmod(0)
    try:
        proc = subprocess.run(
            [*_unprivileged(), sys.executable, "-m", "lockdocs", "check", "--format", "json"],
            cwd=root,
            capture_output=True,
            timeout=300,
            check=False,
        )
    finally:
        page.chmod(0o644)
        db.chmod(0o755)
    found = {(d["code"], d["file"], d["message"]) for d in json.loads(proc.stdout)["diagnostics"]}
    assert (
        "LD603",
        "docs/database-locks.md",
        "docs/database-locks.md cannot be read (Permission denied), so it cannot be compared",
    ) in found, found
    assert (
        "LD710",
        "db/sub",
        "cannot read the folder: Permission denied; the files code: names in it are not scanned",
    ) in found, found
    assert not any(code == "LD711" for code, _, _ in found)  # not "matches no file"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_where_a_file_should_be_is_refused_not_waited_on(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    (root / "templates").mkdir()
    os.mkfifo(root / "templates" / "page.md.j2")
    proc = _cli("build", "--no-svg", cwd=root)  # the helper's timeout fails a hang
    err = _plain_exit_2(proc)
    assert "templates/page.md.j2 cannot be read (not a regular file)" in err, err


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ("x = " + "9" * 5000, "a number has more digits than Python reads"),
        ("x = " + "[" * 50_000 + "]" * 50_000, "it nests too deeply"),
        ("# " + "x" * (4 * 1024 * 1024), "pyproject.toml is too large to read"),
    ],
)
def test_hostile_settings_are_a_located_error(tmp_path: Path, toml: str, words: str) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    (root / "pyproject.toml").write_text(f"[tool.lockdocs]\n{toml}\n", encoding="utf-8")
    proc = _cli("check", cwd=root)
    _plain_exit_2(proc)
    out = proc.stdout.decode()
    assert "pyproject.toml:1:1: LD003 error: " in out and words in out, out[:2000]


def test_an_integer_of_thousands_of_digits_is_a_located_error(tmp_path: Path) -> None:
    """5,000 hex digits: str() of that integer raises ValueError; the message says its size."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    text = locks.read_text(encoding="utf-8")
    locks.write_text(text.replace("lockdocs: 1\n", f"lockdocs: 1\nx: 0x{'f' * 5000}\n"))
    proc = _cli("validate", cwd=root)
    _plain_exit_2(proc)
    assert "the integer of 20,000 bits does not fit in 64 bits" in proc.stdout.decode()


BOMB = textwrap.dedent(
    """\
    a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
    h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
    """
)


@pytest.mark.parametrize(
    ("config", "note"),
    [
        (BOMB + "markdown_extensions: *h\n", "it expands to more than 200,000 values"),
        (BOMB + "nav: *h\n", "it expands to more than 200,000 values"),
        ("nav:\n" + "- " * 900 + "x\n", "it nests deeper than 100 levels"),
        # libyaml's own bound on nesting (PyYAML's pure-Python parser recurses instead)
        ("nav:\n" + "- " * 5000 + "x\n", "while increasing block level|it nests too deeply"),
        ("x: !!int ²\ny: " + "9" * 5000 + "\nmarkdown_extensions: [attr_list]\n", None),
        ("# " + "x" * (4 * 1024 * 1024) + "\n", "the file is 4,194,320 bytes"),
    ],
)
def test_init_beside_a_hostile_mkdocs_yml(tmp_path: Path, config: str, note: str | None) -> None:
    """init reads an existing mkdocs.yml for what to advise; an alias bomb (in nav: it hung),
    deep nesting (RecursionError), a value no constructor reads, or a huge file is a note."""
    target = tmp_path / "site"
    target.mkdir()
    (target / "mkdocs.yml").write_text("site_name: x\n" + config, encoding="utf-8")
    proc = _cli("init", str(target), cwd=tmp_path)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 0 and "internal error" not in out, out[-2000:]
    if note is None:  # read: the advice names what the page lacks, attr_list is there
        assert "cannot read mkdocs.yml" not in out and "- attr_list" not in out, out[-2000:]
    else:
        assert any(f"cannot read mkdocs.yml ({n}" in out for n in note.split("|")), out[-2000:]
        assert "already has what the page needs" not in out, out[-2000:]
