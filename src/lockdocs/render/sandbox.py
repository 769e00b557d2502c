"""The Jinja environment project templates run in: sandboxed, and bounded in size and time.

A project's `templates/` folder comes with the repository, so on a pull request's CI run it is
code from whoever opened the pull request. Jinja's sandbox keeps it from reaching Python
(`lipsum.__globals__`, `__class__`, ...) and from mutating the view; the bounds here keep it
from exhausting the machine: no value a template builds with an expression (a string, a list,
an integer) may exceed `MAX_VALUE` characters (items, digits); the page may not exceed
`MAX_OUTPUT` characters, nor may a block of it that a template captures (`{% filter %}`,
`{% set %}...{% endset %}`, a macro's output), which is page text and bounded as the page is
(lockdocs' own templates indent all the details of one kind of lock as one block, which a
large project takes past `MAX_VALUE`); `range()` hands out at most `MAX_RANGE_ITEMS` items per render, and a render that
runs longer than `TIME_LIMIT` seconds is stopped (on the main thread, where a timer can
interrupt it). Recursion is bounded by Python's own limit; every breach is a `TemplateLimit`,
which the renderer reports as LD601 at the template line that caused it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
import pkgutil
import re
import signal
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any

from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.nodes import Concat
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from lockdocs.render import coverage, escape, view

MAX_VALUE = 4_000_000  # characters (or items) in one value a template builds
MAX_OUTPUT = 256_000_000  # characters of one rendered page
MAX_RANGE_ITEMS = 2_000_000  # range() items over a whole render
MAX_INT_BITS = 64_000  # about 19,000 digits: far past any count, far below a blow-up
MAX_INDENT = 1_000  # columns the indent filter may add to each line
TIME_LIMIT = 120.0  # seconds; LOCKDOCS_TEMPLATE_SECONDS overrides it (the tests use 1)


class TemplateLimit(Exception):
    """A template went past one of the bounds; the message says which."""


def _size(value: object) -> int:
    """How big a value is for the bounds: characters, items or decimal digits."""
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return value.bit_length() * 3 // 10 + 1
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        return len(value)
    return 1


def _check(value: object, what: str, limit: int = MAX_VALUE) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_INT_BITS:
            raise TemplateLimit(f"{what} makes an integer of more than {MAX_INT_BITS:,} bits")
    elif _size(value) > limit:
        raise TemplateLimit(f"{what} makes a value of more than {limit:,} characters or items")
    return value


def _need(estimate: int, what: str, limit: int = MAX_VALUE) -> None:
    if estimate > limit:
        raise TemplateLimit(f"{what} would make a value of about {estimate:,} characters or items")


_WIDTH = re.compile(r"[0-9]+|\*")


def _format_width(fmt: str, args: object) -> int:
    """An upper bound on what the widths and precisions of a %-format can add."""
    total = 0
    for spec in re.findall(r"%[-#0 +]*(?:[0-9]+|\*)?(?:\.(?:[0-9]+|\*))?", fmt):
        for w in _WIDTH.findall(spec):
            total += MAX_VALUE + 1 if w == "*" else int(w)
    return total


def _mul(left: Any, right: Any) -> Any:
    if isinstance(left, int) and isinstance(right, str | list | tuple):
        left, right = right, left
    if isinstance(left, str | list | tuple) and isinstance(right, int):
        _need(len(left) * max(right, 0), "'*'")
    elif (
        isinstance(left, int)
        and isinstance(right, int)
        and left.bit_length() + right.bit_length() > MAX_INT_BITS
    ):
        raise TemplateLimit(f"'*' would make an integer of more than {MAX_INT_BITS:,} bits")
    return left * right


def _pow(left: Any, right: Any) -> Any:
    big = isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1
    if big and left.bit_length() * right > MAX_INT_BITS:
        raise TemplateLimit(f"'**' would make an integer of more than {MAX_INT_BITS:,} bits")
    return left**right


def _mod(left: Any, right: Any) -> Any:
    if isinstance(left, str):
        _need(len(left) + _format_width(left, right) + _size(right), "'%'")
    return _check(left % right, "'%'")


def _add(left: Any, right: Any) -> Any:
    if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
        _need(len(left) + len(right), "'+'")
    return left + right


def _joined(pieces: Iterable[Any], limit: int, what: str) -> str:
    out: list[str] = []
    total = 0
    for piece in pieces:
        s = str(piece)
        total += len(s)
        _need(total, what, limit)
        out.append(s)
    return "".join(out)


def _join(pieces: Iterable[Any]) -> str:
    """`a ~ b`: a value built by an expression, bounded as values are."""
    return _joined(pieces, MAX_VALUE, "joining text")


def _join_block(pieces: Iterable[Any]) -> str:
    """A block's text (`{% filter %}`, `{% set %}...{% endset %}`, a macro's output): page
    text, bounded as the page is."""
    return _joined(pieces, MAX_OUTPUT, "a block of the page")


class _CodeGenerator(CodeGenerator):
    """Compiles `a ~ b` through the bounded join of values; blocks keep Jinja's
    `environment.concat`, which is the (page-bounded) join of blocks."""

    def visit_Concat(self, node: Concat, frame: Frame) -> None:
        self.write("environment.join_values((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _Namespace(Namespace):
    """`namespace()` whose attributes are bounded (a loop could grow one without end)."""

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, _check(value, f"setting {name}"))


# str methods a template may call; the growing ones are checked before they run.
_STR_METHODS = frozenset(
    (
        *("capitalize", "casefold", "count", "endswith", "find", "index", "isalnum", "isalpha"),
        *("isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric"),
        *("isprintable", "isspace", "istitle", "isupper", "lower", "lstrip", "partition"),
        *("removeprefix", "removesuffix", "rfind", "rindex", "rpartition", "rsplit", "rstrip"),
        *("split", "splitlines", "startswith", "strip", "swapcase", "title", "upper"),
        *("center", "ljust", "rjust", "zfill", "expandtabs", "replace", "join"),
    )
)


def _str_estimate(s: str, name: str, args: tuple[Any, ...]) -> int:
    if name in ("center", "ljust", "rjust", "zfill"):
        return max(len(s), int(args[0]) if args and isinstance(args[0], int) else 0)
    if name == "expandtabs":
        size = int(args[0]) if args and isinstance(args[0], int) else 8
        return len(s) + s.count("\t") * max(size, 0)
    if name == "replace" and len(args) >= 2:
        old, new = str(args[0]), str(args[1])
        hits = len(s) + 1 if not old else s.count(old)
        return len(s) + hits * len(new)
    if name == "join" and args:
        items = args[0]
        if isinstance(items, list | tuple):
            return sum(len(str(x)) for x in items) + len(s) * len(items)
    return len(s)


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A built-in filter with its size-taking arguments checked before it runs."""
    lead = 1 if hasattr(func, "jinja_pass_arg") else 0  # the context or environment Jinja passes

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if len(args) <= lead:
            return _check(func(*args, **kwargs), f"the {name} filter")
        value, rest = args[lead], args[lead + 1 :]
        for a in (*rest, *kwargs.values()):
            if isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_VALUE:
                raise TemplateLimit(f"the {name} filter was given {a:,}")
        text = value if isinstance(value, str) else ""
        if name == "replace" and len(rest) >= 2:
            _need(_str_estimate(text, "replace", (rest[0], rest[1])), "the replace filter")
        elif name == "center":
            _need(max(len(text), int(rest[0]) if rest else 80), "the center filter")
        elif name == "indent":  # indents a block of the page: bounded as the page is
            width = rest[0] if rest else kwargs.get("width", 4)
            step = width if isinstance(width, int) else len(str(width))
            if step > MAX_INDENT:
                raise TemplateLimit(f"the indent filter indents by at most {MAX_INDENT:,}")
            estimate = len(text) + (text.count("\n") + 1) * step
            _need(estimate, "the indent filter", MAX_OUTPUT)
            return _check(func(*args, **kwargs), "the indent filter", MAX_OUTPUT)
        elif name == "wordwrap":
            wrap = rest[2] if len(rest) > 2 else kwargs.get("wrapstring") or "\n"
            _need(len(text) * (1 + len(str(wrap))), "the wordwrap filter")
        elif name == "format":
            _need(len(text) + _format_width(text, rest), "the format filter")
        elif name == "tojson":
            indent = rest[0] if rest else kwargs.get("indent")
            if isinstance(indent, int) and indent > 16:
                raise TemplateLimit("the tojson filter indents by at most 16")
        elif name == "join":
            if not isinstance(value, list | tuple | str):
                value = _check(list(value), "the join filter")
                args = (*args[:lead], value, *rest)
            sep = rest[0] if rest else kwargs.get("d", "")
            _need(sum(len(str(x)) for x in value) + len(str(sep)) * len(value), "the join filter")
        return _check(func(*args, **kwargs), f"the {name} filter")

    return guarded


class _Budget:
    """The per-render counters: range() items handed out and characters written."""

    def __init__(self) -> None:
        self.range_items = 0
        self.written = 0

    def finalize(self, value: Any) -> Any:
        """Every `{{ ... }}` result passes here, inside the template that writes it."""
        self.written += len(value) if isinstance(value, str) else 1
        if self.written > MAX_OUTPUT:
            raise TemplateLimit(f"the page would be longer than {MAX_OUTPUT:,} characters")
        return value

    def range(self, *args: int) -> range:
        rng = range(*args)
        self.range_items += len(rng)
        if self.range_items > MAX_RANGE_ITEMS:
            raise TemplateLimit(
                f"range() handed out more than {MAX_RANGE_ITEMS:,} items in one render"
            )
        return rng


@functools.cache
def _view_types() -> frozenset[type]:
    """The frozen dataclasses the templates receive: the page's views (`render/view/`, the
    coverage view) and `Link`."""

    modules = [escape, coverage, view] + [
        importlib.import_module(f"{view.__name__}.{info.name}")
        for info in pkgutil.iter_modules(view.__path__)
    ]
    return frozenset(
        cls
        for module in modules
        for cls in vars(module).values()
        if isinstance(cls, type)
        and dataclasses.is_dataclass(cls)
        and cls.__module__ == module.__name__
        and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    )


class Sandbox(ImmutableSandboxedEnvironment):
    """The environment every lockdocs template runs in (the shipped ones too)."""

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def __init__(self, **options: Any) -> None:
        budget = _Budget()
        super().__init__(finalize=budget.finalize, **options)
        self.budget = budget
        self.binop_table.update({"*": _mul, "**": _pow, "%": _mod, "+": _add})
        self.concat = _join_block  # type: ignore[method-assign]
        self.join_values = _join
        self.globals.pop("lipsum", None)  # n paragraphs of filler: nothing a page needs
        self.globals["namespace"] = _Namespace
        self.globals["range"] = self.budget.range
        for name, func in list(self.filters.items()):
            self.filters[name] = _guard_filter(name, func)

    def getattr(self, obj: Any, attribute: str) -> Any:
        """The page's own view objects (plain frozen data) skip the sandbox's per-access
        checks, which cost a third of a large page's render; anything else is checked."""
        if type(obj) in _view_types() and not attribute.startswith("_"):
            try:
                return getattr(obj, attribute)
            except AttributeError:
                pass
        return super().getattr(obj, attribute)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        return _check(self.binop_table[operator](left, right), f"'{operator}'")

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        inner = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
        owner = getattr(inner, "__self__", None)
        name = getattr(inner, "__name__", "")
        if name in ("format", "format_map") and isinstance(owner, str):
            raise SecurityError("str.format is not available in lockdocs templates; use ~ or %")
        if isinstance(owner, str) and type(owner) is str:
            if name not in _STR_METHODS:
                raise SecurityError(f"str.{name} is not available in lockdocs templates")
            _need(_str_estimate(owner, name, args), f"str.{name}")
        elif isinstance(owner, int | float | bytes | bytearray):
            raise SecurityError(f"{type(owner).__name__}.{name} is not available in templates")
        for a in (*args, *kwargs.values()):
            _check(a, f"calling {name or 'a function'}")
        return _check(super().call(__context, __obj, *args, **kwargs), f"calling {name}")


def time_limit() -> float:
    """The render time limit in seconds (LOCKDOCS_TEMPLATE_SECONDS, else `TIME_LIMIT`)."""
    raw = os.environ.get("LOCKDOCS_TEMPLATE_SECONDS", "")
    try:
        value = float(raw)
    except ValueError:
        return TIME_LIMIT
    return value if value > 0 else TIME_LIMIT


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Stop the code inside after `seconds` (main thread only: elsewhere no timer can)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise TemplateLimit(f"rendering took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def bounded_output(chunks: Generator[str, None, None]) -> str:
    """The rendered text, refused once it passes `MAX_OUTPUT` characters (the refusal is
    thrown into the template, so it is reported at the line that wrote too much)."""
    out: list[str] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > MAX_OUTPUT:
            chunks.throw(TemplateLimit(f"the page would be longer than {MAX_OUTPUT:,} characters"))
        out.append(chunk)
    return "".join(out)
