"""YAML files -> plain data plus a map from each value's JSON path to its line and column.

PyYAML drops positions once it builds Python objects and silently keeps the last of two equal
keys; here the node tree is walked by hand so every later diagnostic can point at a line, a
duplicate key is an error, and alias bombs and deep nesting are refused with bounded work.
"""

from __future__ import annotations

import hashlib
import operator
from pathlib import Path
from typing import Any

import yaml

from lockdocs.confine import TooLarge, read_capped
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.records import field, record

try:  # libyaml is about five times faster; fall back quietly when it is missing.
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Base = yaml.SafeLoader

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_SEQ = "tag:yaml.org,2002:seq"
_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_MAP = "tag:yaml.org,2002:map"


class _Loader(_Base):  # type: ignore[misc]
    """The format has no dates: a plain scalar that looks like one (`since: 2020-01-01`) is
    text, as it reads, not a date the schema then refuses. An explicit `!!timestamp` is still
    constructed, and refused as LD001 when it is not a valid one."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in _Base.yaml_implicit_resolvers.items()
    }

    # libyaml's composer asks these for every node (a 100x project: 218,000 scalars). lockdocs
    # adds no path resolvers, so PyYAML's versions only return at once; C callables that take
    # the same arguments and do nothing cost a fraction of a Python call.
    descend_resolver = staticmethod(operator.is_)  # (parent node, index): ignored
    ascend_resolver = staticmethod(tuple)

    def resolve(self, kind: type, value: str | None, implicit: tuple[bool, bool]) -> str:
        """The tag PyYAML's `resolve` gives, with its lists made once (`_IMPLICIT`) and without
        its path resolvers (there are none): one lookup by the first character, then only the
        patterns that start with it (most text starts with a letter no pattern starts with)."""
        if kind is yaml.ScalarNode:
            if implicit[0]:
                assert value is not None
                for tag, regexp in _IMPLICIT.get(value[:1], _WILDCARD):
                    if regexp.match(value):
                        return tag  # type: ignore[no-any-return]
            return _STR
        if kind is yaml.SequenceNode:
            return _SEQ
        return _MAP


# Per first character (`""` for the empty text), the implicit resolvers PyYAML tries in
# order: that character's, then those for any character (none in PyYAML's tables).
_WILDCARD = tuple(_Loader.yaml_implicit_resolvers.get(None, ()))
_IMPLICIT = {
    first: (*resolvers, *_WILDCARD)
    for first, resolvers in _Loader.yaml_implicit_resolvers.items()
    if first is not None
}


MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_NODES = 500_000
MAX_DEPTH = 64
# Limits of a whole project, checked as the files are found and read (before the schema, the
# model and the analysis), so a project far beyond any real one is refused in bounded time
# and memory: 10^6 paths once took 100 s and 5.9 GB just to validate.
MAX_PATH_FILES = 10_000
MAX_TOTAL_BYTES = 32 * 1024 * 1024
MAX_PATHS = 50_000
MAX_STEPS = 500_000
MAX_WALK_ENTRIES = 100_000  # files and folders looked at under the paths folder

JsonPath = tuple[str | int, ...]


@record(frozen=False)
class Document:
    """One loaded file: its data and where each value and key stands."""

    file: str
    data: Any
    marks: dict[JsonPath, Any] = field(default_factory=dict)  # yaml Marks (0-based)
    key_marks: dict[JsonPath, Any] = field(default_factory=dict)
    digest: str = ""  # sha256 of the bytes read (set by read_file)
    # Bare entries of a flow mapping (`{a: x, b}`: `b` with no colon): almost always a comma
    # inside a value that was meant as text; each with the key before it. The schema's errors
    # about them point at the YAML instead.
    bare_flow_keys: dict[JsonPath, str] = field(default_factory=dict)

    def loc(self, path: JsonPath, *, key: bool = False) -> Location:
        """The location of a value (or of its key), falling back to the nearest parent."""
        table = self.key_marks if key else self.marks
        p = tuple(path)
        while p:
            mark = table.get(p)
            if mark is None and key:
                mark = self.marks.get(p)
            if mark is not None:
                return Location(self.file, mark.line + 1, mark.column + 1)
            p = p[:-1]
        mark = self.marks.get(())
        if mark is None:
            return Location(self.file, 1, 1)
        return Location(self.file, mark.line + 1, mark.column + 1)


def _error(code: str, file: str, line: int, col: int, message: str, hint: str) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, Location(file, line, col), hint)


class _Builder:
    """Walks the node tree once: plain data out, a position recorded for every value."""

    def __init__(self, file: str, loader: Any) -> None:
        self.file = file
        self.loader = loader
        # yaml Marks are kept as they are and turned into (line, column) only when a
        # diagnostic asks: most positions are never needed.
        self.marks: dict[JsonPath, Any] = {}
        self.key_marks: dict[JsonPath, Any] = {}
        self.nodes = 0
        self.diags: list[Diagnostic] = []
        self.bare_flow_keys: dict[JsonPath, str] = {}

    def build(self, node: yaml.Node, path: JsonPath, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Refused(
                "LD009",
                node,
                f"the document expands to more than {MAX_NODES:,} values "
                "(an alias bomb, or a file far larger than any lock declaration)",
                "remove the repeated aliases (*name) or split the file",
            )
        if depth > MAX_DEPTH:
            raise _Refused(
                "LD009",
                node,
                f"the document nests deeper than {MAX_DEPTH} levels",
                "flatten the structure; no lockdocs construct needs this depth",
            )
        self.marks[path] = node.start_mark
        kind = type(node)
        if kind is yaml.MappingNode:
            out: dict[str, Any] = {}
            key_marks, marks = self.key_marks, self.marks
            flow = getattr(node, "flow_style", False)
            scalar = yaml.ScalarNode
            for key_node, value_node in node.value:
                if type(key_node) is not scalar or key_node.tag == _MERGE:
                    merge = key_node.tag == _MERGE
                    raise _Refused(
                        "LD003",
                        key_node,
                        "merge keys (<<) are not supported"
                        if merge
                        else "a mapping key must be a plain string",
                        "write the keys out; lockdocs files should read on their own"
                        if merge
                        else "use a simple name as the key",
                    )
                key = key_node.value  # (a scalar node's value is text)
                sub = (*path, key)
                if key in out:  # (a path is reached once: an earlier equal key is in `out`)
                    km = key_node.start_mark
                    self.diags.append(
                        _error(
                            "LD002",
                            self.file,
                            km.line + 1,
                            km.column + 1,
                            f"duplicate key '{key}' (first at line {key_marks[sub].line + 1})",
                            "YAML keeps only the last of two equal keys; remove or rename one",
                        )
                    )
                    continue
                key_marks[sub] = key_node.start_mark
                if (
                    flow
                    and out
                    and type(value_node) is scalar
                    and value_node.value == ""
                    and value_node.start_mark.index == value_node.end_mark.index
                ):
                    self.bare_flow_keys[sub] = next(reversed(out))
                if type(value_node) is scalar and value_node.tag == _STR:
                    self.nodes += 1
                    marks[sub] = value_node.start_mark
                    out[key] = value_node.value
                else:
                    out[key] = self.build(value_node, sub, depth + 1)
            return out
        if kind is yaml.SequenceNode:
            return [self.build(v, (*path, i), depth + 1) for i, v in enumerate(node.value)]
        if node.tag == _STR:  # most scalars: no constructor needed
            return node.value
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise _Refused("LD001", node, f"cannot read this value: {exc}", "quote it") from exc
        # `!!int abc`, 5,000 digits; AttributeError: PyYAML's timestamp constructor on a value
        # its pattern does not match (`!!timestamp 2020-99-99 the sync ...`, found by the fuzz run)
        except (ValueError, TypeError, OverflowError, AttributeError) as exc:
            tag = str(node.tag).rsplit(":", 1)[-1]
            why = (
                "it has more digits than any number lockdocs reads"
                if "digits" in str(exc)
                else f"'{_short(node.value)}' is not a valid {tag}"
            )
            raise _Refused(
                "LD001",
                node,
                f"cannot read this value as {tag}: {why}",
                "write the value plainly (quote it to make it text)",
            ) from None
        if type(value) is int and not -(2**63) <= value < 2**63:
            # str() of an integer past 4,300 digits raises ValueError: say its size instead
            shown = (
                _short(str(value))
                if value.bit_length() < 10_000
                else (f"of {value.bit_length():,} bits")
            )
            raise _Refused(
                "LD003",
                node,
                f"the integer {shown} does not fit in 64 bits",
                "lockdocs' numbers (issue numbers, orders, keys) are 64-bit at most",
            )
        return value


def _short(text: object, limit: int = 40) -> str:
    """A value as a message quotes it: one line, at most `limit` characters."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


class _Refused(Exception):
    """Internal to this module: stops the walk; always turned into a Diagnostic."""

    def __init__(self, code: str, node: yaml.Node, message: str, hint: str) -> None:
        super().__init__(message)
        self.code = code
        self.line = node.start_mark.line + 1
        self.column = node.start_mark.column + 1
        self.message = message
        self.hint = hint


def _tab_at(text: str, mark: Any) -> bool:
    """Whether a syntax error sits on a tab in the indentation (the C loader's message says
    only "found character that cannot start any token")."""
    if mark is None:
        return False
    lines = text.split("\n")
    if not 0 <= mark.line < len(lines):
        return False
    line = lines[mark.line]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    return "\t" in indent or line[mark.column : mark.column + 1] == "\t"


def parse_text(text: str, file: str) -> tuple[Document | None, list[Diagnostic]]:
    """Parse YAML text; returns no document when the text cannot be read at all."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return None, [
            _error("LD007", file, 1, 1, "the file is empty", "declare its content or delete it")
        ]
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            problem = exc.problem or "invalid YAML"
            hint = "fix the YAML syntax at this point"
            if _tab_at(text, mark):
                hint = "YAML indents with spaces only; replace the tab with spaces"
            return None, [_error("LD001", file, line, col, f"YAML syntax: {problem}", hint)]
        except yaml.reader.ReaderError as exc:  # a control character: located by position
            at = max(0, min(int(exc.position), len(text)))
            line = text.count("\n", 0, at) + 1
            col = at - (text.rfind("\n", 0, at) + 1) + 1
            char = exc.character if isinstance(exc.character, str) else chr(exc.character)
            return None, [
                _error(
                    "LD001",
                    file,
                    line,
                    col,
                    f"the file holds a control character YAML does not allow ({char!r})",
                    "remove it, or write it as an escape in a double-quoted string (\\e, \\x1b)",
                )
            ]
        except yaml.YAMLError as exc:
            return None, [_error("LD001", file, 1, 1, f"YAML syntax: {exc}", "fix the YAML")]
        except RecursionError:
            return None, [
                _error(
                    "LD009",
                    file,
                    1,
                    1,
                    "the document nests too deeply to parse",
                    "flatten the structure",
                )
            ]
        if node is None:
            return None, [
                _error(
                    "LD007",
                    file,
                    1,
                    1,
                    "the file holds no YAML document",
                    "declare its content or delete it",
                )
            ]
        builder = _Builder(file, loader)
        try:
            data = builder.build(node, (), 0)
        except _Refused as r:
            return None, [*builder.diags, _error(r.code, file, r.line, r.column, r.message, r.hint)]
        except RecursionError:
            return None, [
                _error(
                    "LD009",
                    file,
                    1,
                    1,
                    "the document nests too deeply to read",
                    "flatten the structure",
                )
            ]
        doc = Document(file, data, builder.marks, builder.key_marks)
        doc.bare_flow_keys = builder.bare_flow_keys
        return doc, builder.diags
    finally:
        loader.dispose()


def read_file(path: Path, display: str) -> tuple[Document | None, list[Diagnostic]]:
    """Read and parse one declaration file, refusing what is too large or not UTF-8."""
    try:
        raw = read_capped(path, MAX_FILE_BYTES)
    except TooLarge as big:
        return None, [
            _error(
                "LD009",
                display,
                1,
                1,
                str(big),
                "split the declarations into several files under paths/",
            )
        ]
    except OSError as exc:
        return None, [
            _error(
                "LD008",
                display,
                0,
                0,
                f"cannot read the file: {exc.strerror}",
                "check that it exists and is readable",
            )
        ]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [
            _error(
                "LD008",
                display,
                line,
                col,
                f"the file is not UTF-8 (byte 0x{raw[exc.start]:02x})",
                "save the file as UTF-8",
            )
        ]
    if "\x00" in text:
        i = text.index("\x00")
        line = text.count("\n", 0, i) + 1
        return None, [
            _error(
                "LD008",
                display,
                line,
                1,
                "the file holds a NUL byte",
                "remove the binary content; declarations are text",
            )
        ]
    doc, diags = parse_text(text, display)
    if doc is not None:
        doc.digest = hashlib.sha256(raw).hexdigest()
    return doc, diags
