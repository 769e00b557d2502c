"""A thin MkDocs plugin: the lock page regenerated in memory on every build and `mkdocs serve`.

The core does not depend on MkDocs: `lockdocs build` writes plain Markdown, DOT and SVG into
docs/, which any site generator can serve. This plugin only adds conveniences for MkDocs:

- it checks the declarations and fails the build (PluginError) on invalid declarations or an
  unwaived error finding: validate before publishing;
- it serves the page rendered from the current declarations, so an edit to locks.yaml shows up
  without running `lockdocs build` (the committed copy in docs/ is replaced in memory, never
  written);
- it publishes the pages of further projects (`projects:`) under their own folder, with SVG
  diagrams rendered at build time;
- a generated page hides Material's left sidebar, so its wide tables get the room, and each
  diagram links to itself at full size (a large lock-order graph is scaled down to fit);
- under `mkdocs serve` it watches locks.yaml, paths/, templates/, pyproject.toml and the files
  the `code:` globs match (the folder each glob starts in, so a new file there counts too) so
  an edit reloads the page, and a failure does not stop the server: the last page that built
  stays, with the error on it and in the terminal, until the files are fixed.

```yaml
plugins:
  - search
  - lockdocs:
      root: .                      # the folder of locks.yaml; default: the folder of mkdocs.yml
      projects: [examples/dstack]  # more projects, each published under its own path
```
"""

from __future__ import annotations

import html
import logging
import os
import posixpath
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import File, Files

from lockdocs.api import check
from lockdocs.render.manifest import DOCS
from lockdocs.render.pages import render_outputs
from lockdocs.render.stamps import dot_hash, svg_stamp
from lockdocs.render.svg import GraphvizError, render_svgs
from lockdocs.render.targets import RenderError, read_manifest
from lockdocs.report import REPORTERS
from lockdocs.scan.collect import glob_files
from lockdocs.site import missing

if TYPE_CHECKING:
    from collections.abc import Callable

    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer
    from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.plugins.lockdocs")

# SVG by the sha256 of its DOT: `mkdocs serve` rebuilds often and most diagrams do not change.
_SVG_CACHE: dict[str, str] = {}
_SVG_CACHE_MAX = 4096


# An <img> of an SVG, and the <a ...> right before it when it already is a link.
_DIAGRAM_RE = re.compile(r'(<a\b[^>]*>\s*)?(<img\b[^>]*?\bsrc="([^"<>]+\.svg)"[^>]*>)')


def _link_diagram(match: re.Match[str]) -> str:
    if match.group(1):
        return match.group(0)
    return (
        f'<a class="lockdocs-diagram" href="{match.group(3)}" '
        f'title="Open the diagram at full size">{match.group(2)}</a>'
    )


class LockdocsConfig(base.Config):  # type: ignore[no-untyped-call]
    root = c.Optional(c.Type(str))
    projects = c.ListOfItems(c.Type(str), default=[])


@dataclass(frozen=True)
class _Project:
    root: Path
    prefix: str  # "" for the main project; else the posix folder its pages go under, "a/b/"
    label: str  # how messages name it


def _svgs(root: Path, dots: dict[str, str]) -> dict[str, str]:
    """The SVG of each DOT ({dot path: DOT} -> {svg path: SVG}): the committed one when its
    stamp matches the DOT, else one drawn earlier in this process, else drawn now (together,
    many to a `dot` process)."""

    out: dict[str, str] = {}
    todo: dict[str, str] = {}
    for rel, dot in dots.items():
        svg_rel = rel[: -len(".dot")] + ".svg"
        digest = dot_hash(dot)
        committed = root / svg_rel
        text = ""
        if committed.is_file():
            try:
                text = committed.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
        if svg_stamp(text) == digest:
            out[svg_rel] = text
        elif digest in _SVG_CACHE:
            out[svg_rel] = _SVG_CACHE[digest]
        else:
            todo[svg_rel] = dot
    try:
        drawn = render_svgs(todo)
    except GraphvizError as exc:
        raise PluginError(f"lockdocs: cannot draw the diagrams: {exc}") from None
    for svg_rel, svg in drawn.items():
        if len(_SVG_CACHE) >= _SVG_CACHE_MAX:
            _SVG_CACHE.clear()
        _SVG_CACHE[dot_hash(todo[svg_rel])] = svg
    out.update(drawn)
    return {rel: out[rel] for rel in sorted(out)}


_WILD = re.compile(r"[*?\[]")


def code_watch(root: Path, globs: tuple[Any, ...]) -> set[tuple[Path, bool]]:
    """What `mkdocs serve` watches for the `code:` globs: (path, recursive). A glob's folder
    before its first wildcard, whole, so a file added there counts too; for a glob that starts
    with a wildcard (the whole project would be too much to watch), the folders of the files
    it matches now, each alone."""
    out: set[tuple[Path, bool]] = set()
    for glob in globs:
        parts = [p for p in glob.pattern.split("/") if p not in ("", ".")]
        fixed: list[str] = []
        for part in parts[:-1]:
            if _WILD.search(part):
                break
            fixed.append(part)
        if fixed:
            out.add((root.joinpath(*fixed), True))
            continue
        files, _ = glob_files(root, [glob])
        out.update((path.parent, False) for _, path in files)
    return out


def _report(diagnostics: list[Any]) -> str:
    return str(REPORTERS["text"](diagnostics, ""))


def render_project(project: _Project) -> tuple[dict[str, str], set[tuple[Path, bool]]]:
    """Check one project and render its pages: posix path relative to docs/ -> text, and
    what `mkdocs serve` watches: the declaration files read and the `code:` files, as
    (path, recursive).

    Raises PluginError when the declarations are invalid or a finding is an unwaived error.
    """

    if not (project.root / "locks.yaml").is_file():
        raise PluginError(f"lockdocs: no locks.yaml in {project.root} ({project.label})")
    result = check(project.root, drift=False)
    if result.bad_input or result.model is None:
        raise PluginError(
            f"lockdocs: the declarations of {project.label} are not valid; the lock page is not "
            f"published.\n{_report(result.diagnostics)}hint: run 'lockdocs validate --root "
            f"{project.root}' and fix the errors above"
        )
    blocking = [d for d in result.diagnostics if d.blocking]
    if blocking:
        raise PluginError(
            f"lockdocs: {len(blocking)} unwaived error finding(s) in {project.label}; the lock "
            f"page is not published.\n{_report(blocking)}hint: run 'lockdocs check --root "
            f"{project.root}', then fix each finding or declare an exception for it"
        )
    others = [d for d in result.diagnostics if not d.waived_by]
    if others:
        log.info(
            "lockdocs: %s has %d warning or info finding(s); run 'lockdocs check'",
            project.label,
            len(others),
        )
    try:
        rendered = render_outputs(result.model, result.diagnostics, result.coverage)
    except RenderError as exc:
        raise PluginError(
            f"lockdocs: cannot render the lock page of {project.label}.\n{_report(exc.diagnostics)}"
        ) from None
    outputs: dict[str, str] = {}
    for rel, text in rendered.items():
        # render_outputs names files from the project root (docs/...); MkDocs wants them
        # relative to its docs_dir.
        outputs[rel.removeprefix(DOCS + "/")] = text
    svgs = _svgs(
        project.root, {rel: text for rel, text in rendered.items() if rel.endswith(".dot")}
    )
    outputs.update({rel.removeprefix(DOCS + "/"): text for rel, text in svgs.items()})
    root = project.root
    declared = [root / name for name in result.model.files]
    watch = {(f.parent, True) if f.parent != root else (f, False) for f in declared}
    return outputs, watch | code_watch(root, result.model.code)


def _require_extensions(outputs: dict[str, str], config: MkDocsConfig, project: _Project) -> None:
    """Stop the build when the site lacks a Markdown extension the page relies on: without
    attr_list every heading would show its {#anchor} and every in-page link would break, and
    MkDocs would still build, strict or not."""

    for rel, text in sorted(outputs.items()):
        if not rel.endswith(".md"):
            continue
        lacking = missing(text, config["markdown_extensions"])
        if lacking:
            lines = "".join(f"    - {ext}   # {why}\n" for ext, why in lacking)
            names = [ext for ext, _ in lacking]
            these = (
                f"extension {names[0]}, which mkdocs.yml does not enable; add it"
                if len(names) == 1
                else f"extensions {', '.join(names[:-1])} and {names[-1]}, which mkdocs.yml "
                "does not enable; add them"
            )
            raise PluginError(
                f"lockdocs: the lock page {project.prefix}{rel} needs the Markdown {these}:\n"
                f"  markdown_extensions:\n{lines}"
            )


def _tell(error: str) -> None:
    """The error in the terminal, as MkDocs words its own, but not through its logger: under
    `strict: true` a logged warning or error would fail the build this plugin keeps going."""

    first, *rest = error.splitlines() or [""]
    sys.stderr.write(f"ERROR    -  {first}\n" + "".join(f"           {r}\n" for r in rest))
    sys.stderr.write(
        "ERROR    -  lockdocs: serving the last page that built; fix the files and it reloads\n"
    )


def _banner(error: str) -> str:
    """The error at the top of the page while it fails (Material's failure admonition, as
    plain HTML so it needs no Markdown extension)."""

    return (
        '<div class="admonition failure lockdocs-error">\n'
        '<p class="admonition-title">lockdocs: this page is the last one that built; the '
        "declarations now fail</p>\n"
        f"<pre><code>{html.escape(error)}</code></pre>\n</div>\n\n"
    )


def _committed(project: _Project) -> dict[str, str]:
    """What the project's last `lockdocs build` wrote (its manifest), for a server whose very
    first build fails: those files, as committed, relative to docs/."""

    out: dict[str, str] = {}
    for rel in read_manifest(project.root):
        try:
            out[rel.removeprefix(DOCS + "/")] = (project.root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return out


def _guarded(project: _Project) -> tuple[dict[str, str], set[tuple[Path, bool]]]:
    """render_project, with anything else that goes wrong (a file system error, a bug) also
    a PluginError with a plain message, as the command line words it: MkDocs prints a
    PluginError's message and stops, where any other exception prints a traceback."""

    try:
        return render_project(project)
    except PluginError:
        raise
    except OSError as exc:
        raise PluginError(
            f"lockdocs: cannot read {project.label}: {exc.strerror or exc} "
            f"({exc.filename or project.root})"
        ) from None
    except Exception as exc:
        if os.environ.get("LOCKDOCS_DEBUG"):
            raise
        raise PluginError(
            f"lockdocs: internal error while rendering {project.label}: "
            f"{type(exc).__name__}: {exc}\nThis is a bug in lockdocs. Run again with "
            "LOCKDOCS_DEBUG=1 for the traceback and report it."
        ) from None


class LockdocsPlugin(BasePlugin[LockdocsConfig]):  # type: ignore[no-untyped-call]
    """See the module docstring."""

    def __init__(self) -> None:
        self._projects: list[_Project] = []
        self._watch: set[tuple[Path, bool]] = set()  # (path, recursive)
        self._pages: set[str] = set()  # src_uri of every generated Markdown page
        # `mkdocs serve` keeps this instance across rebuilds (it has on_startup): the last
        # outputs that rendered, per project, and the error each failing project has now.
        self._serving = False
        self._last_good: dict[Path, dict[str, str]] = {}
        self._failing: dict[str, str] = {}  # project prefix -> the error, this build

    def on_startup(self, *, command: str, dirty: bool) -> None:
        """Under `mkdocs serve` a failure does not stop the server: the last good page stays,
        with the error on it and in the terminal (a PluginError would stop the first build,
        and make a later one leave every request waiting until the files are fixed)."""
        self._serving = command == "serve"

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig | None:
        base_dir = Path(config.config_file_path or ".").resolve().parent
        root = Path(self.config.root) if self.config.root else base_dir
        if not root.is_absolute():
            root = base_dir / root
        projects = [_Project(root.resolve(), "", "the site's project")]
        seen: set[str] = set()
        for entry in self.config.projects:
            prefix = posixpath.normpath(entry.replace("\\", "/")).strip("/")
            if not prefix or prefix == "." or prefix.startswith(".."):
                raise PluginError(
                    f"lockdocs: projects entry '{entry}' must be a folder below mkdocs.yml"
                )
            if prefix in seen:
                raise PluginError(f"lockdocs: project '{entry}' is listed twice")
            seen.add(prefix)
            projects.append(_Project((base_dir / prefix).resolve(), prefix + "/", prefix))
        self._projects = projects
        return config

    def on_files(self, files: Files, /, *, config: MkDocsConfig) -> Files | None:
        self._failing = {}
        for project in self._projects:
            try:
                outputs, read = _guarded(project)
                _require_extensions(outputs, config, project)
            except PluginError as exc:
                if not self._serving:
                    raise
                _tell(str(exc))
                self._failing[project.prefix] = str(exc)
                outputs = self._last_good.get(project.root) or _committed(project)
                read = set()
            else:
                self._last_good[project.root] = outputs
            self._watch.update(read)
            for rel, text in sorted(outputs.items()):
                src_uri = project.prefix + rel
                existing = files.get_file_from_path(src_uri)
                if existing is not None:
                    files.remove(existing)
                files.append(File.generated(config, src_uri, content=text))
                if src_uri.endswith(".md"):
                    self._pages.add(src_uri)
            log.debug("lockdocs: %s: %d generated files", project.label, len(outputs))
        return files

    def on_page_markdown(
        self, markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files
    ) -> str | None:
        """Lock tables are wide: a generated page hides the left sidebar (Material's `hide`),
        unless its front matter says otherwise."""
        if page.file.src_uri in self._pages and "hide" not in page.meta:
            page.meta["hide"] = ["navigation"]
        if page.file.src_uri in self._pages:
            for prefix, error in self._failing.items():
                if page.file.src_uri.startswith(prefix):
                    return _banner(error) + markdown
        return markdown

    def on_page_content(
        self, html: str, /, *, page: Page, config: MkDocsConfig, files: Files
    ) -> str | None:
        """A diagram scaled down to fit the column links to itself at full size."""
        if page.file.src_uri not in self._pages:
            return html
        return _DIAGRAM_RE.sub(_link_diagram, html)

    def on_serve(
        self, server: LiveReloadServer, /, *, config: MkDocsConfig, builder: Callable[..., Any]
    ) -> LiveReloadServer | None:
        watched = set(self._watch)
        for project in self._projects:
            for name in ("locks.yaml", "paths", "templates", "pyproject.toml"):
                watched.add((project.root / name, True))
        for path, recursive in sorted(watched):
            if path.exists():
                server.watch(str(path), recursive=recursive)
        return server
