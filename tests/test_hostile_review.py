"""Hostile input through the review workflow (issue 23): what a pull request writes reaches a PR
comment, GitHub annotations, SARIF and the terminal only as inert, visible text, and a folder
the pull request adds can never stand in for the base revision.

Each attack class has its test here; the fuzz target over hostile git trees is in
tests/test_fuzz_diff.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from conftest import lockdocs_process
from lockdocs.diagnostics import printable

FIXTURES = Path(__file__).parent / "fixtures" / "diff"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

# Characters that reorder or hide text; a review must show each as an escape.
INVISIBLE = "\u202e\u2066\u2069\u200b\u200c\u200d\u2060\ufeff\u00ad\u2028\U000e0041"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


# --- the terminal escaper ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\u200bb", "a\\u200bb"),  # zero-width space
        ("a\u200c\u200db", "a\\u200c\\u200db"),  # zero-width non-joiner and joiner
        ("a\u2060b\ufeff", "a\\u2060b\\ufeff"),  # word joiner, BOM
        ("soft\u00adhyphen", "soft\\xadhyphen"),
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        ("tag\U000e0041\U000e007f", "tag\\U000e0041\\U000e007f"),  # ASCII smuggled as tags
        ("\u202eevil\u202c", "\\u202eevil\\u202c"),  # bidi override
        ("\u2066x\u2069", "\\u2066x\\u2069"),  # bidi isolate
        ("filler\u3164\u115f", "filler\\u3164\\u115f"),  # Hangul fillers draw nothing
        ("cgj\u034f", "cgj\\u034f"),
        ("\x1b]52;c;Zm9v\x07", "\\x1b]52;c;Zm9v\\x07"),  # OSC 52 clipboard write
    ],
)
def test_printable_shows_every_invisible_character(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_printable_treats_every_ascii_character_as_its_pattern_does() -> None:
    """Plain ASCII skips the pattern (`text.isprintable()`): that must agree with it on each of
    the 128 characters, alone and inside other text."""
    from lockdocs.diagnostics import _unsafe

    for code in range(128):
        ch = chr(code)
        escaped = bool(_unsafe().search(ch))
        assert (printable(ch) != ch) == escaped, repr(ch)
        assert (printable(f"ab{ch}cd") != f"ab{ch}cd") == escaped, repr(ch)


def test_printable_leaves_real_text_alone() -> None:
    text = "Café über Ærø, 数据库锁, ⚠️ emoji with its variation selector, naïve — quotes «»"
    assert printable(text) == text


# --- a hostile head: file names, titles and labels built to break out ---------------------------

EVIL_DIR = "a\n\n<"
EVIL_FILE = "details>\n\n# Heading\n<img src=x.invalid onerror=alert(1)>\n@octocat\n.yaml"
EVIL_PATHS = """\
group: "Evil\\n# Group heading"
transaction: posting
paths:
  evil-path:
    title: "Sweep\\n\\n<img src=https://x.invalid/b.png>\\n# Big heading\\n</details>\\n@octocat #12 GH-7 \\u202e\\u200b`x` [l](https://x.invalid) \\r</details>"
    steps:
      - loop: "every budget\\n</details>\\r# loop heading \\u2066"
        steps:
          - take: budget
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base/ and head/ folders: the head adds a path file under a folder whose names hold
    newlines, HTML and a heading, a path title and loop label built the same way, and a lock
    title with a heading, a team mention and a bidi isolate."""
    top = tmp_path_factory.mktemp("hostile")
    shutil.copytree(FIXTURES / "edge-new-cycle" / "base", top / "base")
    shutil.copytree(FIXTURES / "edge-new-cycle" / "head", top / "head")
    folder = top / "head" / "paths" / EVIL_DIR
    folder.mkdir()
    (folder / EVIL_FILE).write_text(EVIL_PATHS, encoding="utf-8")
    locks = top / "head" / "locks.yaml"
    locks.write_text(
        locks.read_text(encoding="utf-8").replace(
            "title: Budget row", 'title: "Budget\\n# Lock heading @team \\u2066x\\u2069 \\u200b"'
        ),
        encoding="utf-8",
    )
    return top


def _diff(top: Path, fmt: str) -> str:
    proc = lockdocs_process(
        "diff", "--base-dir", "base", "--head-dir", "head", "--format", fmt, cwd=top
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _outside_code(html: str) -> str:
    """The rendered comment without its code spans and blocks (GitHub links and mentions
    nothing inside them)."""
    return re.sub(r"<(code|pre)\b.*?</\1>", "", html, flags=re.DOTALL)


def test_the_pr_comment_holds_no_html_heading_mention_or_hidden_text(hostile: Path) -> None:
    md = _diff(hostile, "markdown")
    assert "LD202" in md and "evil-path" in md, "the hostile path must be in the comment"
    html = MarkdownIt("commonmark", {"html": True}).render(md)
    # No tag, heading or closing </details> of the pull request's making: only the comment's own.
    assert "<img" not in html
    assert not re.search(r"<h[1-6]\b", html)
    assert html.count("<details") == html.count("</details>") == md.count("<details")
    # Every line of the comment is one the comment wrote: none starts with the attack's text.
    for line in md.splitlines():
        assert not line.lstrip().startswith(("#", "<img", "</details>\n", "@")), line
    # No live mention or issue reference outside code.
    prose = _outside_code(html)
    assert not re.search(r"@[A-Za-z0-9]", prose), prose
    assert not re.search(r"(?<![\w&])#[0-9]|GH-[0-9]", prose), prose
    # Bidi and zero-width characters are shown as escapes; the only zero-width space left is
    # the one that breaks a mention or reference, as the entity the source shows.
    assert not any(ch in md for ch in INVISIBLE)
    assert "\\u202e\\u200b" in html and "\\u2066" in html
    ours = re.sub("(@|#|GH-)\u200b", "", html)
    assert not any(ch in ours for ch in INVISIBLE)
    # Emphasis, code and link syntax in a title stay literal.
    assert "\\`x\\`" in md and "\\[l\\](https://x.invalid)" in md


def test_the_terminal_and_json_diff_hide_nothing(hostile: Path) -> None:
    text = _diff(hostile, "text")
    assert not any(ch in text for ch in INVISIBLE + "\r")
    assert "\\u202e\\u200b" in text
    data = json.loads(_diff(hostile, "json"))  # JSON keeps the raw text, for machines
    [path] = [p for p in data["paths"]["added"] if p["id"] == "evil-path"]
    assert "\u202e" in path["title"]


def test_annotations_are_one_command_per_finding_with_nothing_hidden(hostile: Path) -> None:
    proc = lockdocs_process("check", "--no-drift", "--format", "github", cwd=hostile / "head")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    commands = [line for line in lines if line.startswith("::")]
    assert commands == lines  # LD201 and LD202: one line each, however the file is named
    assert len(commands) == 2
    evil = next(c for c in commands if "title=LD202" in c)
    props = evil.split("::")[1]
    assert "%0A" not in props.split("title=")[0].replace("\\n", "")  # no real newline
    assert "\\n\\n</details>\\n\\n# Heading" in props  # the name, shown escaped
    assert not any(ch in proc.stdout for ch in INVISIBLE + "\r")


def test_sarif_messages_make_no_link_and_hide_nothing(hostile: Path) -> None:
    proc = lockdocs_process("check", "--no-drift", "--format", "sarif", cwd=hostile / "head")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    texts = []
    for result in doc["runs"][0]["results"]:
        texts.append(result["message"]["text"])
        texts += [r["message"]["text"] for r in result.get("relatedLocations", [])]
    assert texts
    for t in texts:
        assert not any(ch in t for ch in INVISIBLE + "\r")
        assert not re.search(r"(?<!\\)[\[\]]", t), t  # every bracket escaped: no embedded link
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
    ]
    assert any("%0A%0A%3C/details%3E" in u for u in uris), uris


def test_the_terminal_check_hides_nothing(hostile: Path) -> None:
    proc = lockdocs_process("check", "--no-drift", cwd=hostile / "head")
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert not any(ch in out for ch in INVISIBLE + "\r")
    assert "paths/a\\n\\n</details>\\n\\n# Heading" in out


# --- a revision is a revision ------------------------------------------------------------------


@pytest.fixture
def pull_request(tmp_path: Path) -> Path:
    """A clone whose origin/main holds a project without a cycle, checked out on a branch that
    closes one, and that also commits a folder named origin/main holding a copy of its own
    head: the attack that made `lockdocs diff origin/main` compare the head with itself."""
    origin = tmp_path / "origin"
    shutil.copytree(FIXTURES / "edge-new-cycle" / "base", origin)
    git("init", "-q", cwd=origin)
    git("add", "-A", cwd=origin)
    git("commit", "-q", "-m", "base", cwd=origin)
    work = tmp_path / "work"
    git("clone", "-q", str(origin), str(work), cwd=tmp_path)
    git("checkout", "-q", "-b", "feature", cwd=work)
    shutil.rmtree(work / "paths")
    shutil.copytree(FIXTURES / "edge-new-cycle" / "head" / "paths", work / "paths")
    decoy = work / "origin" / "main"
    decoy.mkdir(parents=True)
    shutil.copy(work / "locks.yaml", decoy / "locks.yaml")
    shutil.copytree(work / "paths", decoy / "paths")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "a cycle, and a decoy base", cwd=work)
    return work


def test_a_folder_named_like_the_base_is_not_the_base(pull_request: Path) -> None:
    proc = lockdocs_process("diff", "origin/main", "--fail-on", "new-findings", cwd=pull_request)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert re.fullmatch(
        r"lockdocs diff origin/main \(revision [0-9a-f]{12}\) -> working tree", first
    )
    assert "1 new unwaived finding" in proc.stdout
    # The folder is compared only when asked for by name, and then said to be a folder.
    folder = lockdocs_process("diff", "--base-dir", "origin/main", cwd=pull_request)
    assert folder.returncode == 0, folder.stderr
    assert folder.stdout.startswith("lockdocs diff folder origin/main -> working tree: no change")


def test_a_folder_is_never_taken_for_a_missing_revision(pull_request: Path) -> None:
    """A shallow clone without the base branch: the decoy folder must not be used instead."""
    git("update-ref", "-d", "refs/remotes/origin/main", cwd=pull_request)
    proc = lockdocs_process("diff", "origin/main", "--fail-on", "new-findings", cwd=pull_request)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "lockdocs: unknown revision origin/main\n"
        "hint: 'origin/main' is also a folder with locks.yaml; lockdocs diff reads BASE and HEAD "
        "as git revisions only: to compare with the folder, pass --base-dir origin/main\n"
    )


def test_base_and_head_are_named_once(pull_request: Path) -> None:
    both = lockdocs_process("diff", "HEAD", "--base-dir", "origin/main", cwd=pull_request)
    assert both.returncode == 2
    assert "name the base once" in both.stderr
    neither = lockdocs_process("diff", cwd=pull_request)
    assert neither.returncode == 2
    assert "name the base once" in neither.stderr
