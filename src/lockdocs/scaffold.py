"""`lockdocs init`: a new project that `lockdocs check` accepts as it stands.

The files are a working example rather than empty stubs: a team learns the format by editing a
lock and a path that already pass, and every comment says what the field is for. The JSON Schema
files are written beside them (from `lockdocs.schema.definition`, the one source of the schema)
so an editor completes and checks the YAML with no network access. Nothing existing is ever
overwritten: init checks every target first and writes nothing when one is there.
"""

from __future__ import annotations

import io
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from lockdocs.api import build
from lockdocs.render.manifest import DOCS
from lockdocs.report.where import project_prefix, repository_top
from lockdocs.rules.catalog import option_schemas
from lockdocs.schema.definition import shipped_files
from lockdocs.site import STYLESHEET, advise, index_md, mkdocs_yml

if TYPE_CHECKING:
    from lockdocs.site import Advice

SCHEMA_DIR = ".lockdocs"

LOCKS_YAML = """\
# yaml-language-server: $schema=.lockdocs/locks.schema.json
#
# The database locks of this application: every lock class, how each advisory key is built, the
# transaction kinds, the rules every code path keeps and the known exceptions. The order in which
# each code path takes its locks lives in paths/*.yaml.
#
#   lockdocs check   checks the lock order, the keys and the rules (run it in CI and pre-commit)
#   lockdocs build   writes the page (docs/database-locks.md) from these files
#   lockdocs schema  prints the JSON Schema that .lockdocs/locks.schema.json holds
lockdocs: 1

page:
  title: Database Locks
  summary: >-
    Which locks the application takes, how each advisory key is built, and in what order each
    code path takes them.
  output: database-locks.md   # the page's file under docs/

# The link for an issue number (exceptions and locks name issues by number).
issues: "https://example.invalid/your-app/issues/{number}"

# How transactions are opened. A kind may take a lock as its first statement (first:) and bound
# every lock wait inside it (lock_timeout: 5s; none waits until the request gives up).
transactions:
  app:
    title: app transaction
    opened_by: db.begin
    isolation: read committed
    lock_timeout: 5s
    on_timeout: SQLSTATE 55P03 (lock_not_available); the request fails and can be retried.

# One entry per lock class: an advisory key family, a table whose rows are locked with FOR UPDATE
# (or FOR NO KEY UPDATE, ...), a LOCK TABLE, or an in-process lock (kind: memory).
locks:
  account-sync:
    title: Account sync
    kind: advisory
    # pg_advisory_xact_lock(hashtextextended('account-sync:' || account_id, 0)). The prefix keeps
    # this family's keys apart from every other family's; lockdocs checks the prefixes.
    key:
      hashtextextended: {prefix: "account-sync:", parts: [account id]}
    modes:
      exclusive: one sync of an account at a time
    serializes: Two syncs of one account.
    taken_by:
      - {name: SyncAccount, kind: function}
  account-row:
    title: Account row
    kind: row
    table: public.accounts
    row: one account
    modes:
      for no key update: every change to an account's balance
    instances: {order: ascending id}   # the one order for several accounts in one transaction
    serializes: Two balance updates of one account.
    taken_by:
      - {name: LockAccount, kind: query, mode: for no key update}

# Invariants every path keeps; lockdocs check proves each one on every path.
rules:
  sync-before-row:
    title: The account sync lock comes before the account row
    before: {first: account-sync, then: account-row}

# Known deviations from a rule (or a check code), each with the issue that tracks it. An
# exception that no longer matches a finding is reported, like an unused noqa.
# exceptions:
#   - rule: LD202
#     path: sync-account
#     issue: 12
#     why: why it is safe, or what is planned
"""

PATH_YAML = """\
# yaml-language-server: $schema=../.lockdocs/paths.schema.json
#
# One group of code paths. Each path lists its steps in the order the code runs them:
#   take: a lock (mode:, via: the function or query that takes it, note:)
#   loop: several instances, with order:      branches: alternatives, one of which runs
#   run: another declared path, inline        write: / external: / commit
group: Accounts
transaction: app   # the default transaction kind of the paths in this file
paths:
  sync-account:
    title: Sync an account
    entry: SyncAccount
    summary: Takes the account's sync lock, then its row, and writes the new balance.
    steps:
      - take: account-sync
        via: SyncAccount
      - take: account-row
        via: LockAccount
      - write: balance
      - commit
"""

PRE_COMMIT_SNIPPET = """\
repos:
  - repo: {repo}   # a clone of lockdocs, or the URL of its repository
    rev: {rev}   # a tag or commit there
    hooks:
      - id: lockdocs-check
"""


def _lockdocs_clone() -> tuple[str, str] | None:
    """The folder and commit of the git clone this lockdocs runs from (an install from a
    clone, as docs/getting-started.md says), or None (a wheel, or no git)."""
    top = Path(__file__).resolve().parents[2]
    if not (top / ".pre-commit-hooks.yaml").is_file() or not (top / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--verify", "HEAD"],
            cwd=top,
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = head.stdout.strip()
    if head.returncode != 0 or len(commit) != 40:
        return None
    return str(top), commit


def pre_commit_snippet() -> str:
    """The .pre-commit-config.yaml block for the hook: the clone this lockdocs runs from, at
    its commit, when it runs from one; else the two values to fill in."""
    found = _lockdocs_clone()
    repo, rev = found if found else ("PATH-OR-URL-OF-LOCKDOCS", "TAG-OR-COMMIT")
    return PRE_COMMIT_SNIPPET.format(repo=repo, rev=rev)


class ScaffoldError(Exception):
    """A file init would write already exists (exit 2; nothing is written)."""


PAGE = "database-locks.md"  # page.output in LOCKS_YAML
PAGE_TITLE = "Database locks"


@dataclass(frozen=True)
class Scaffold:
    root: Path
    files: dict[str, bytes]  # relative posix path -> content, in the order they are written
    page_note: str = ""  # why the page was not built, when it was not
    # What an existing mkdocs.yml lacks for the page (None: init writes a new mkdocs.yml).
    advice: Advice | None = None


def declarations() -> dict[str, bytes]:
    """The declaration and schema files init writes; pure, so the tests can read them."""

    files = {"locks.yaml": LOCKS_YAML, "paths/accounts.yaml": PATH_YAML}
    for name, text in sorted(shipped_files(option_schemas()).items()):
        files[f"{SCHEMA_DIR}/{name}"] = text
    return {rel: text.encode("utf-8") for rel, text in files.items()}


def refuse_existing(root: Path, names: list[str]) -> None:
    """ScaffoldError naming the first file (or blocking non-folder) that is already there."""
    for rel in names:
        target = root / rel
        if target.exists() or target.is_symlink():
            raise ScaffoldError(f"{target} already exists; init writes nothing over existing files")
        for parent in reversed(Path(rel).parents):
            folder = root / parent
            if parent != Path() and folder.is_symlink():
                raise ScaffoldError(
                    f"{folder} is a symlink; init does not write through one (it could lead "
                    "anywhere): replace it with a folder, or start the project elsewhere"
                )
            if folder.exists() and not folder.is_dir():
                raise ScaffoldError(f"{folder} exists and is not a folder")


def _built_page(files: dict[str, bytes]) -> tuple[dict[str, bytes], str]:
    """The page `lockdocs build` makes of these declarations, built in a scratch folder so that
    `lockdocs check` passes at once (it compares the committed page with the declarations)."""

    with tempfile.TemporaryDirectory(prefix="lockdocs-init-") as tmp:
        scratch = Path(tmp)
        for rel, content in files.items():
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            (scratch / rel).write_bytes(content)
        err = io.StringIO()
        if build(scratch, out=io.StringIO(), err=err) != 0:
            return {}, err.getvalue().strip().removeprefix("lockdocs: ")
        docs = scratch / DOCS
        return {
            f.relative_to(scratch).as_posix(): f.read_bytes()
            for f in sorted(docs.rglob("*"))
            if f.is_file()
        }, ""


def _site(root: Path, page: dict[str, bytes]) -> tuple[dict[str, bytes], Advice | None]:
    """A complete mkdocs.yml (and a home page) when the folder has no mkdocs.yml; otherwise
    nothing to write, and what the existing one lacks."""

    markdown = page.get(f"docs/{PAGE}", b"").decode("utf-8")
    # lockdocs' stylesheet, beside the page (an existing one is left as it is)
    css: dict[str, bytes] = {}
    if not (root / "docs" / STYLESHEET).exists():
        css[f"docs/{STYLESHEET}"] = stylesheet()
    existing = root / "mkdocs.yml"
    if existing.is_file():
        return css, advise(existing, markdown, PAGE, PAGE_TITLE)
    name = root.resolve().name.replace("-", " ").replace("_", " ").strip() or "Documentation"
    name = name[:1].upper() + name[1:]
    files = {**css, "mkdocs.yml": mkdocs_yml(name, PAGE).encode("utf-8")}
    if not (root / "docs" / "index.md").exists():
        files["docs/index.md"] = index_md(name, PAGE, PAGE_TITLE).encode("utf-8")
    return files, None


def stylesheet() -> bytes:
    """lockdocs' stylesheet for a lock page on MkDocs Material (the package's copy)."""
    return (resources.files("lockdocs") / "assets" / "lockdocs.css").read_bytes()


def make(root: Path) -> Scaffold:
    """Every file init writes: the declarations, the schemas, the page when it can be built,
    and a site (mkdocs.yml, a home page) when the folder has none.

    Refuses before any build when a declaration file exists, and again for the page's files.
    """
    files = declarations()
    refuse_existing(root, list(files))
    page, note = _built_page(files)
    refuse_existing(root, list(page))
    site, advice = _site(root, page)
    return Scaffold(root, {**files, **page, **site}, note, advice)


def write(scaffold: Scaffold) -> list[Path]:
    """Write the files; exclusive creation, so a file that appeared meanwhile is never replaced."""
    refuse_existing(scaffold.root, list(scaffold.files))
    written: list[Path] = []
    for rel, content in scaffold.files.items():
        target = scaffold.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        refuse_existing(scaffold.root, [rel])  # again: a link may have appeared meanwhile
        with target.open("xb") as fh:
            fh.write(content)
        written.append(target)
    return written


def next_steps(root: Path, advice: Advice | None = None) -> str:
    """What init prints after the files: the two commands, the site (what was written, or what
    to add to an existing mkdocs.yml), the three ways to serve it, and the pre-commit hook."""
    try:
        here: Path | None = Path.cwd().resolve()
    except OSError:  # the working folder was deleted: the project is named in full
        here = None
    where = "" if root.resolve() == here else f" --root {root}"
    into = "" if not where else f" (in {root})"
    out = (
        "Next:\n"
        f"  lockdocs check{where}    check the declarations, and that the page is current\n"
        f"  lockdocs build{where}    rewrite docs/{PAGE} after each change\n"
        "\n"
    )
    if advice is None:
        out += (
            "The site: mkdocs.yml, docs/index.md and lockdocs' stylesheet "
            f"(docs/{STYLESHEET}) are written; the page is in the nav.\n"
        )
    elif advice.add:
        out += "Add these lines to your mkdocs.yml, so the page builds as it should:\n\n"
        out += _indent(advice.add + "\n")
    elif advice.read:
        out += "Your mkdocs.yml already has what the page needs.\n"
    for note in advice.notes if advice else ():
        out += f"Note: {note}\n"
    out += (
        f"\nServe the site{into}; mkdocs.yml works with each generator:\n"
        "  MkDocs      pip install mkdocs-material              mkdocs serve\n"
        "  ProperDocs  pip install properdocs mkdocs-material   properdocs serve\n"
        "  Zensical    pip install zensical                     zensical serve\n"
        "  (Zensical also reads the same settings from a zensical.toml.)\n"
        "\nRun the check before each commit (.pre-commit-config.yaml):\n\n"
        + _indent(pre_commit_snippet())
    )
    return out + _ci(root)


def _ci(root: Path) -> str:
    """The CI part of the printout: where the workflow is, and why it has no path filter."""
    prefix = project_prefix(root) if repository_top(root) is not None else ""
    where = f"\nAdd --root {prefix} to each lockdocs command in them." if prefix else ""
    return (
        "\nIn CI, run the check and post `lockdocs diff` on each pull request: lockdocs'\n"
        "docs/ci.md has a GitHub workflow and GitLab jobs to copy. Run them on every change,\n"
        f"with no path filter: the check reads the files code: names too.{where}\n"
    )


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" if line else "\n" for line in text.splitlines())
