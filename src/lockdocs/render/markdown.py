"""The page's Markdown from the view model and the Jinja2 templates.

The package ships default templates; a project's own `templates/` folder (next to locks.yaml)
overrides any of them by file name. StrictUndefined turns a misspelt field into an error instead
of a silently empty cell; autoescape is off because the output is Markdown, and every user string
is escaped by a filter from `escape.py` where it lands. Declared text is passed as data, never
compiled as a template, so `{{ ... }}` in a lock title stays text. Templates run sandboxed and
bounded (`sandbox.py`): a project template is code from whoever edits the repository.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from pathlib import Path
from types import TracebackType

import jinja2

from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.inputs import template_snapshot
from lockdocs.render.coverage import CoverageView
from lockdocs.render.escape import FILTERS
from lockdocs.render.sandbox import Sandbox, TemplateLimit, bounded_output, deadline, time_limit
from lockdocs.render.view import PageView

PAGE_TEMPLATE = "page.md.j2"
TEMPLATE_DIR = "templates"


class TemplateProblem(Exception):
    """A template could not be loaded or rendered; carries the located diagnostic."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


class TemplateOutside(jinja2.TemplateError):
    """The project's templates/ cannot be read as it stands: a file leads outside the
    project (a symlink), is too large or is not UTF-8."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class _SnapshotLoader(jinja2.BaseLoader):
    """The project's templates from the one snapshot this render took (`inputs.py`)."""

    def __init__(self, root: Path, sources: dict[str, str]) -> None:
        self.root = root
        self.sources = sources

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        if template not in self.sources:
            raise jinja2.TemplateNotFound(template)
        filename = str(self.root / TEMPLATE_DIR / template)
        return self.sources[template], filename, lambda: True


class _CompiledTemplates(jinja2.BytecodeCache):
    """Compiled templates kept for the life of the process, keyed by template and checked
    against a hash of the source, so a changed template is compiled again. Compiling is two
    thirds of a render: the MkDocs plugin while serving, and a check that renders to compare,
    would otherwise compile the same fifteen templates on every run. Each render still gets a
    fresh environment (and with it fresh sandbox budgets)."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if (data := self._code.get(bucket.key)) is not None:
            bucket.bytecode_from_string(data)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


_COMPILED = _CompiledTemplates()


def environment(root: Path) -> Sandbox:
    """Project templates first, then the package's defaults; sandboxed either way."""

    sources, problem = template_snapshot(root)
    if problem:
        raise TemplateOutside(problem)
    loaders: list[jinja2.BaseLoader] = []
    if sources:
        loaders.append(_SnapshotLoader(root, sources))
    loaders.append(jinja2.PackageLoader("lockdocs", "templates"))
    env = Sandbox(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
        bytecode_cache=_COMPILED,
    )
    env.filters.update(FILTERS)
    return env


def _display(root: Path, filename: str | None, name: str | None) -> str:
    """A template's file as the user knows it: relative to the project, else by name."""
    if filename:
        try:
            return Path(filename).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return f"(lockdocs default template) {name or filename or '?'}"


def _frame_location(root: Path, tb: TracebackType | None) -> Location | None:
    """The innermost template line in a render error's traceback (Jinja maps frames to it)."""
    found: Location | None = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename.endswith(".j2"):
            found = Location(_display(root, code.co_filename, None), tb.tb_lineno, 1)
        tb = tb.tb_next
    return found


def _problem(root: Path, exc: Exception) -> TemplateProblem:
    """A template exception as a located LD601 diagnostic."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        loc = Location(_display(root, exc.filename, exc.name), exc.lineno or 1, 1)
        message = f"template syntax error: {exc.message}"
    elif isinstance(exc, TemplateOutside):
        where = exc.problem.split(" ", 1)[0]
        loc = Location(where if where.startswith(TEMPLATE_DIR) else TEMPLATE_DIR, 0, 0)
        message = f"template refused: {exc.problem}"
    elif isinstance(exc, jinja2.TemplateNotFound):
        loc = Location(f"{TEMPLATE_DIR}/{exc.name}", 0, 0)
        message = f"template not found: {exc.name}"
    else:
        # Stopped before any template line ran (a time limit, say): the project's templates
        # if it has any, else lockdocs' own page template.
        own = (root / TEMPLATE_DIR).is_dir()
        fallback = Location(TEMPLATE_DIR if own else _display(root, None, PAGE_TEMPLATE), 0, 0)
        loc = _frame_location(root, exc.__traceback__) or fallback
        if isinstance(exc, TemplateLimit):
            message = f"template over a limit: {exc}"
        elif isinstance(exc, RecursionError):
            message = "template error: it recurses without end (a macro that calls itself?)"
        else:
            message = f"template error: {type(exc).__name__}: {exc}"
    if loc.file != TEMPLATE_DIR and not loc.file.startswith(TEMPLATE_DIR + "/"):
        # lockdocs' own template: the project has nothing in templates/ to fix.
        hint = (
            "this is lockdocs' own template: the page these declarations make is past one of "
            "its bounds (see the message); shorten the longest texts or split the project"
            if isinstance(exc, TemplateLimit)
            else "this is a bug in lockdocs' own template; please report it"
        )
    else:
        hint = (
            "fix the template in templates/ (or delete it to use lockdocs' default); "
            "the fields a template can use are the view objects in lockdocs/render/view/"
        )
    return TemplateProblem(Diagnostic("LD601", Severity.ERROR, message, loc, hint))


_BLANKS = re.compile(r"\n{3,}")


def tidy(text: str) -> str:
    """Trailing spaces off every line, one blank line at most, one newline at the end: the
    templates can stay readable and the output stays stable."""
    lines = [line.rstrip() for line in text.split("\n")]
    out = _BLANKS.sub("\n\n", "\n".join(lines)).strip("\n")
    return out + "\n"


def render_page(root: Path, page: PageView, coverage: CoverageView | None = None) -> str:
    """Render the page template; any template problem becomes a TemplateProblem."""
    try:
        env = environment(root)
        with deadline(time_limit()):
            template = env.get_template(PAGE_TEMPLATE)
            chunks: Generator[str, None, None] = template.generate(  # type: ignore[assignment]
                page=page, coverage=coverage
            )
            text = bounded_output(chunks)
    except Exception as exc:  # noqa: BLE001 - whatever a template does wrong is LD601
        raise _problem(root, exc) from None
    return tidy(text)
