"""What a site needs to show the lock page: the Markdown extensions the page relies on, the
mkdocs.yml `lockdocs init` writes, and what an existing mkdocs.yml lacks.

The page is plain Markdown plus attribute lists for its anchors (`## Account row {#lock-x}`),
which MkDocs, ProperDocs and Zensical all read from mkdocs.yml's `markdown_extensions`. With
`attr_list` off every generator still builds, strict or not, and every heading shows
`{#lock-x}` while every in-page link is broken; so init writes it and the plugin refuses to
build without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lockdocs.confine import TooLarge, read_capped
from lockdocs.load import MAX_FILE_BYTES

# (extension, what the page uses it for, a pattern that finds that use in the page)
_NEEDS = (
    (
        "attr_list",
        "heading anchors such as {#lock-...}",
        re.compile(r"^#{1,6} .*\{#[^}]+\}\s*$", re.M),
    ),
    ("tables", "the tables of locks, modes and edges", re.compile(r"^\|.*\|\s*$", re.M)),
    ("admonition", "notes and warnings (!!! blocks)", re.compile(r"^!!! ", re.M)),
    ("pymdownx.details", "folded sections (??? blocks)", re.compile(r"^\?\?\?\+? ", re.M)),
    ("md_in_html", "Markdown inside HTML blocks", re.compile(r"<\w+[^>]*\bmarkdown=", re.M)),
    (
        "pymdownx.superfences",
        "the code under a rule, inside the rules' list",
        re.compile(r"^ {4,}```", re.M),
    ),
)

# The stylesheet init writes into a new site (lockdocs/assets/lockdocs.css), under docs/.
STYLESHEET = "stylesheets/lockdocs.css"
# Extensions MkDocs (and ProperDocs) enable on their own; Zensical's defaults include them too.
_BUILT_IN = frozenset({"toc", "tables", "fenced_code"})


def needs(markdown: str) -> list[tuple[str, str]]:
    """(extension, why) for each Markdown extension this page relies on."""
    return [(ext, why) for ext, why, found in _NEEDS if found.search(markdown)]


def enabled_extensions(config_extensions: Any) -> set[str]:
    """The names in a markdown_extensions setting (a list of names or one-key mappings)."""
    names: set[str] = set(_BUILT_IN)
    for entry in config_extensions or ():
        if isinstance(entry, str):
            names.add(entry)
        elif isinstance(entry, dict):
            names.update(str(k) for k in entry)
    # "markdown.extensions.attr_list" and "attr_list" are the same extension
    return names | {n.removeprefix("markdown.extensions.") for n in names}


def missing(markdown: str, config_extensions: Any) -> list[tuple[str, str]]:
    have = enabled_extensions(config_extensions)
    return [(ext, why) for ext, why in needs(markdown) if ext not in have]


def mkdocs_yml(site_name: str, page: str) -> str:
    """The mkdocs.yml init writes when there is none: enough for MkDocs, ProperDocs and
    Zensical to build the page with its anchors, its tables and its diagrams, in lockdocs'
    stylesheet (STYLESHEET, which init writes beside it)."""
    name = site_name.replace('"', "'")
    return f"""\
# The documentation site. MkDocs, ProperDocs and Zensical all read this file:
#   mkdocs serve    properdocs serve    zensical serve
site_name: "{name}"
docs_dir: docs

theme:
  name: material
  font: false   # no Google Fonts: the site makes no request of its own
  palette:      # light or dark, as the reader's system prefers, with a toggle
    - media: "(prefers-color-scheme: light)"
      scheme: default
      toggle: {{icon: material/weather-night, name: Switch to dark mode}}
    - media: "(prefers-color-scheme: dark)"
      scheme: slate
      toggle: {{icon: material/weather-sunny, name: Switch to light mode}}

# lockdocs' stylesheet: wide lock tables, diagrams that fit the column and read in the dark
# scheme, a path's diagram beside its steps
extra_css:
  - {STYLESHEET}

markdown_extensions:
  - toc:
      permalink: true   # an anchor link on every heading
      toc_depth: 3      # the sections and groups; a lock's or a path's details stay folded
  - tables
  - attr_list           # the page's anchors ({{#lock-...}}); without it they show as text
  - admonition          # notes on the page
  - pymdownx.details    # the details a first read does not need, folded (??? blocks)
  - pymdownx.superfences   # code blocks under a rule (a rule's example:)

# The lockdocs plugin (MkDocs and ProperDocs) reloads the page as you edit the declarations
# and warns when the committed page is stale. The site does not depend on it.
plugins:
  - search
  - lockdocs

nav:
  - Home: index.md
  - Database locks: {page}
"""


def index_md(site_name: str, page: str, title: str) -> str:
    """A home page for a new site, so its root is not a 404."""
    return f"# {site_name}\n\n[{title}]({page}): every lock, its key, and the order each code path takes them in.\n"


@dataclass(frozen=True)
class Advice:
    """What an existing mkdocs.yml lacks for the page: YAML to add, and notes."""

    add: str
    notes: tuple[str, ...] = ()
    read: bool = True  # False: mkdocs.yml could not be read, so nothing is known of it


# mkdocs.yml is read with bounds, as the declarations are: a config far larger than any site's,
# an alias bomb (a few lines that expand to billions of values) or nesting that exhausts the
# parser is refused in bounded time and memory, with a note instead of the advice.
MAX_CONFIG_BYTES = MAX_FILE_BYTES
MAX_CONFIG_VALUES = 200_000  # values reached, an alias counted each time it is reached
MAX_CONFIG_DEPTH = 100
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})


class _Unreadable(Exception):
    """mkdocs.yml cannot be read within the bounds; the message says why."""


def _load_lenient(text: str) -> Any:
    """mkdocs.yml as plain data: mappings, lists and every scalar as its text (a plain null as
    None). Tags (!ENV, !!python/name:...) are never constructed, so no value can fail to
    convert (a 5,000-digit integer, `!!int ²`); only what `advise` reads is needed."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except RecursionError:
        raise _Unreadable("it nests too deeply") from None
    finally:
        loader.dispose()
    if node is None:
        return None
    count = 0

    def plain(n: yaml.Node, depth: int) -> Any:
        nonlocal count
        count += 1
        if count > MAX_CONFIG_VALUES:
            raise _Unreadable(
                f"it expands to more than {MAX_CONFIG_VALUES:,} values (an alias bomb?)"
            )
        if depth > MAX_CONFIG_DEPTH:
            raise _Unreadable(f"it nests deeper than {MAX_CONFIG_DEPTH} levels")
        if isinstance(n, yaml.MappingNode):
            out: dict[str, Any] = {}
            for k, v in n.value:
                key = k.value if isinstance(k, yaml.ScalarNode) else ""
                out[str(key)] = plain(v, depth + 1)
            return out
        if isinstance(n, yaml.SequenceNode):
            return [plain(v, depth + 1) for v in n.value]
        value = str(n.value)
        return None if getattr(n, "style", None) is None and value in _NULLS else value

    return plain(node, 0)


try:  # libyaml: faster, and it bounds nesting itself
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader


def advise(config_file: Path, page_markdown: str, page: str, title: str) -> Advice:
    """What to add to an existing mkdocs.yml so the page builds with its anchors, in lockdocs'
    stylesheet."""

    try:
        config = _load_lenient(read_capped(config_file, MAX_CONFIG_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, TooLarge, _Unreadable) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        note = f"cannot read {config_file.name} ({reason}); add attr_list yourself"
        return Advice("", (note,), read=False)
    if not isinstance(config, dict):
        config = {}
    blocks: list[str] = []
    lacking = missing(page_markdown, config.get("markdown_extensions"))
    if lacking:
        lines = ["markdown_extensions:"]
        lines += [f"  - {ext}   # {why}" for ext, why in lacking]
        blocks.append("\n".join(lines))
    css = config.get("extra_css")
    if not (isinstance(css, list) and STYLESHEET in [str(c) for c in css]):
        blocks.append(f"extra_css:\n  - {STYLESHEET}   # lockdocs' stylesheet, written by init")
    nav = config.get("nav")
    if isinstance(nav, list) and page not in _nav_pages(nav):
        blocks.append(f"nav:\n  - {title}: {page}")
    notes: list[str] = []
    docs_dir = str(config.get("docs_dir", "docs")).rstrip("/")
    if docs_dir not in ("docs", "./docs"):
        notes.append(
            f"{config_file.name} reads pages from {docs_dir}/, but lockdocs writes the page under "
            "docs/; set docs_dir: docs"
        )
    return Advice("\n\n".join(blocks), tuple(notes))


def _nav_pages(nav: Any) -> set[str]:
    out: set[str] = set()
    stack = [nav]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.add(item)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return out
