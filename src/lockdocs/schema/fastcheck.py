"""A validator for the subset of JSON Schema that lockdocs' own schema uses.

The check runs in pre-commit hooks: the jsonschema package costs about 35 ms to import and was
measured at over a second on a 250 KB declaration, most of the check's time. This walks the
same schema directly and yields errors shaped like jsonschema's (validator, path, instance,
schema, context), so `validate.py` words them the same way; `tests/test_fastcheck.py` keeps the
two in agreement on valid and mutated documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from lockdocs.records import field, record

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
}


@record(frozen=False)
class SchemaError:
    validator: str
    validator_value: Any
    instance: Any
    schema: dict[str, Any]
    absolute_path: tuple[str | int, ...]
    schema_path: tuple[str | int, ...] = ()
    relative_schema_path: tuple[str | int, ...] = ()
    context: list[SchemaError] = field(default_factory=list)
    message: str = ""


@cache
def _pattern(p: str) -> re.Pattern[str]:
    """A schema pattern with ECMA-262's meaning of `$`: the end of the string. Python's `$`
    also matches before a final newline, which let "account-row\\n" pass as an id."""
    if p.endswith("$") and not p.endswith("\\$"):
        p = p[:-1] + r"\Z"
    return re.compile(p)


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "null":
        return value is None
    if name in ("object", "array", "string"):
        return isinstance(value, _TYPES[name])
    if name == "boolean":
        return isinstance(value, bool)
    return False


def _equal(a: Any, b: Any) -> bool:
    # JSON equality: true is not 1.
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


_SHAPE_KEYWORDS = (
    "minLength",
    "pattern",
    "minimum",
    "maximum",
    "minItems",
    "items",
    "minProperties",
    "maxProperties",
    "required",
    "propertyNames",
    "properties",
    "additionalProperties",
)


def _nothing(inst: Any) -> bool:
    return False


def _all(checks: list[Callable[[Any], bool]]) -> Callable[[Any], bool]:
    if not checks:
        return lambda inst: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda inst: first(inst) and second(inst)

    def every(inst: Any) -> bool:
        for check in checks:  # noqa: SIM110 - no generator per value: this runs per value
            if not check(inst):
                return False
        return True

    return every


def _enum(values: list[Any]) -> Callable[[Any], bool]:
    if all(isinstance(v, str) for v in values):
        words = frozenset(values)  # only a string equals a string: no bool to tell from 1
        return lambda inst: isinstance(inst, str) and inst in words
    return lambda inst: any(_equal(inst, v) for v in values)


def _string(min_length: int | None, pattern: re.Pattern[str] | None) -> Callable[[Any], bool]:
    if min_length is None and pattern is None:
        return lambda inst: isinstance(inst, str)

    def text(inst: Any) -> bool:
        if not isinstance(inst, str):
            return False
        if min_length is not None and len(inst) < min_length:
            return False
        return pattern is None or pattern.search(inst) is not None

    return text


def _number(integer: bool, minimum: Any, maximum: Any) -> Callable[[Any], bool]:
    kinds: Any = int if integer else int | float

    def number(inst: Any) -> bool:
        if not isinstance(inst, kinds) or isinstance(inst, bool):
            return False
        return (minimum is None or inst >= minimum) and (maximum is None or inst <= maximum)

    return number


def _array(min_items: int, each: Callable[[Any], bool] | None) -> Callable[[Any], bool]:
    def array(inst: Any) -> bool:
        if not isinstance(inst, list) or len(inst) < min_items:
            return False
        if each is not None:
            for item in inst:
                if not each(item):
                    return False
        return True

    return array


class Validator:
    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema
        self.defs: dict[str, Any] = schema.get("$defs", {})
        self._keys: dict[int, dict[str, tuple[int, tuple[str, ...]]]] = {}
        self._compiled: dict[int, Callable[[Any], bool]] = {}

    def valid(self, instance: Any) -> bool:
        """A tight yes/no pass: valid documents (the usual case) never build an error."""
        return self._compile(self.root)(instance)

    def _compile(self, schema: dict[str, Any]) -> Callable[[Any], bool]:
        """The yes/no check of one subschema as one closure over just the keywords it has,
        made once per subschema: walking the schema's dicts for every value of a large
        project was a fifth of its check, and a chain of generic closures per value (a type
        test, then a test for every kind of value) most of what was left. `_check` below
        says why a document fails."""
        found = self._compiled.get(id(schema))
        if found is not None:
            return found
        made: list[Callable[[Any], bool]] = []

        def later(inst: Any) -> bool:  # a $ref back to a schema still being compiled
            return made[0](inst)

        self._compiled[id(schema)] = later
        checks: list[Callable[[Any], bool]] = []
        ref = schema.get("$ref")
        if ref is not None:
            checks.append(self._compile(self.defs[ref[8:]]))
        if "const" in schema:
            const = schema["const"]
            checks.append(lambda inst: _equal(inst, const))
        if "enum" in schema:
            checks.append(_enum(schema["enum"]))
        one_of = schema.get("oneOf")
        if one_of is not None:
            checks.append(self._one_of(schema, [self._compile(sub) for sub in one_of]))
        shape = self._shape(schema)
        if shape is not None:
            checks.append(shape)
        fn = _all(checks)
        made.append(fn)
        self._compiled[id(schema)] = fn
        return fn

    def _one_of(
        self, schema: dict[str, Any], branches: list[Callable[[Any], bool]]
    ) -> Callable[[Any], bool]:
        table = self._table(schema)

        def one(inst: Any) -> bool:
            # `_discriminate` written out (it runs for every step of every path): the one
            # branch whose required keys the mapping has, if exactly one.
            if isinstance(inst, dict):
                branch = -1
                for k in inst:
                    hit = table.get(k)
                    if hit is not None:
                        for r in hit[1]:
                            if r not in inst:
                                break
                        else:
                            if branch >= 0:
                                branch = -1
                                break
                            branch = hit[0]
                if branch >= 0:
                    return branches[branch](inst)
            return sum(1 for b in branches if b(inst)) == 1

        return one

    def _shape(self, schema: dict[str, Any]) -> Callable[[Any], bool] | None:
        """The type and the checks that depend on the kind of value (a string's length and
        pattern, a number's bounds, a list's items, a mapping's keys and values) as one
        closure for the declared type; None when the schema constrains neither."""
        t = schema.get("type")
        text = _string(
            schema.get("minLength"), _pattern(schema["pattern"]) if "pattern" in schema else None
        )
        number = _number(t == "integer", schema.get("minimum"), schema.get("maximum"))
        items = schema.get("items")
        array = _array(
            schema.get("minItems", 0), self._compile(items) if isinstance(items, dict) else None
        )
        mapping = self._mapping(schema)
        typed: dict[str, Callable[[Any], bool]] = {
            "string": text,
            "integer": number,
            "number": number,
            "array": array,
            "object": mapping,
            "boolean": lambda inst: inst.__class__ is bool,
            "null": lambda inst: inst is None,
        }
        if t is not None:
            # a type this subset does not know matches nothing, as in _is_type
            chosen: Callable[[Any], bool] = typed.get(str(t), _nothing)
            return chosen
        if not any(k in schema for k in _SHAPE_KEYWORDS):
            return None

        # No type: each kind of value meets the keywords for its kind (JSON Schema's meaning).
        def shape(inst: Any) -> bool:
            if isinstance(inst, str):
                return text(inst)
            if isinstance(inst, bool):
                return True
            if isinstance(inst, int | float):
                return number(inst)
            if isinstance(inst, list):
                return array(inst)
            if isinstance(inst, dict):
                return mapping(inst)
            return True

        return shape

    def _mapping(self, schema: dict[str, Any]) -> Callable[[Any], bool]:
        min_props = schema.get("minProperties", 0)
        max_props = schema.get("maxProperties")
        required = tuple(schema.get("required", ()))
        names = schema.get("propertyNames")
        name_ok = self._compile(names) if names is not None else None
        props = {k: self._compile(v) for k, v in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties", True)
        extra_ok = self._compile(extra) if isinstance(extra, dict) else None
        closed = extra is False
        get = props.get

        def mapping(inst: Any) -> bool:
            if not isinstance(inst, dict):
                return False
            n = len(inst)
            if n < min_props or (max_props is not None and n > max_props):
                return False
            for k in required:
                if k not in inst:
                    return False
            if name_ok is not None:
                for k in inst:
                    if not name_ok(k):
                        return False
            for k, v in inst.items():
                sub = get(k)
                if sub is not None:
                    if not sub(v):
                        return False
                elif closed or (extra_ok is not None and not extra_ok(v)):
                    return False
            return True

        return mapping

    def _table(self, schema: dict[str, Any]) -> dict[str, tuple[int, tuple[str, ...]]]:
        """A oneOf's branches by the first key each requires: (branch, its required keys)."""
        table = self._keys.get(id(schema))
        if table is None:
            table = {}
            for i, b in enumerate(schema["oneOf"]):
                if isinstance(b, dict) and b.get("required"):
                    table[b["required"][0]] = (i, tuple(b["required"]))
            self._keys[id(schema)] = table
        return table

    def _discriminate(self, inst: Any, schema: dict[str, Any]) -> int | None:
        """The one oneOf branch a mapping can match, by its required keys, if exactly one."""
        if not isinstance(inst, dict):
            return None
        table = self._table(schema)
        fits = [
            i
            for k in inst
            if (hit := table.get(k)) is not None
            for i, req in (hit,)
            if all(r in inst for r in req)
        ]
        return fits[0] if len(fits) == 1 else None

    def iter_errors(self, instance: Any) -> Iterator[SchemaError]:
        yield from self._check(instance, self.root, (), ())

    def _check(
        self,
        inst: Any,
        schema: dict[str, Any],
        path: tuple[str | int, ...],
        spath: tuple[str | int, ...],
    ) -> Iterator[SchemaError]:
        ref = schema.get("$ref")
        if ref is not None:
            target = self.defs[ref.removeprefix("#/$defs/")]
            yield from self._check(inst, target, path, (*spath, "$ref"))

        def err(kw: str, value: Any, message: str = "") -> SchemaError:
            return SchemaError(kw, value, inst, schema, path, (*spath, kw), (kw,), [], message)

        # Like jsonschema, every failing keyword is reported; validate.py keeps one per value.
        if "const" in schema and not _equal(inst, schema["const"]):
            yield err("const", schema["const"])
        if "enum" in schema and not any(_equal(inst, c) for c in schema["enum"]):
            yield err("enum", schema["enum"])
        t = schema.get("type")
        if t is not None and not _is_type(inst, t):
            yield err("type", t)
        if "oneOf" in schema:
            branches = schema["oneOf"]
            if isinstance(inst, dict):
                # A step is named by its key: when exactly one branch can match, check only it
                # (the others lack a required key, so they fail whatever else holds).
                fits = [
                    i
                    for i, b in enumerate(branches)
                    if b.get("required") and all(k in inst for k in b["required"])
                ]
                if len(fits) == 1:
                    i = fits[0]
                    errs = list(self._check(inst, branches[i], path, (*spath, "oneOf", i)))
                    if errs:
                        for e in errs:
                            e.relative_schema_path = (i, *e.relative_schema_path)
                        e = err("oneOf", branches)
                        e.context = errs
                        yield e
                        return
                    branches = []
            context: list[SchemaError] = []
            valid = 0 if branches else 1
            for i, sub in enumerate(branches):
                errs = list(self._check(inst, sub, path, (*spath, "oneOf", i)))
                if not errs:
                    valid += 1
                for e in errs:
                    e.relative_schema_path = (i, *e.relative_schema_path)
                context.extend(errs)
            if valid != 1:
                e = err("oneOf", branches)
                e.context = context
                yield e
                return
        if isinstance(inst, str):
            if "minLength" in schema and len(inst) < schema["minLength"]:
                yield err("minLength", schema["minLength"])
            if "pattern" in schema and not _pattern(schema["pattern"]).search(inst):
                yield err("pattern", schema["pattern"])
        elif isinstance(inst, int | float) and not isinstance(inst, bool):
            if "minimum" in schema and inst < schema["minimum"]:
                yield err("minimum", schema["minimum"])
            if "maximum" in schema and inst > schema["maximum"]:
                yield err("maximum", schema["maximum"])
        elif isinstance(inst, list):
            if "minItems" in schema and len(inst) < schema["minItems"]:
                yield err("minItems", schema["minItems"])
            items = schema.get("items")
            if isinstance(items, dict):
                for i, item in enumerate(inst):
                    yield from self._check(item, items, (*path, i), (*spath, "items"))
        elif isinstance(inst, dict):
            yield from self._object(inst, schema, path, spath, err)

    def _object(
        self,
        inst: dict[str, Any],
        schema: dict[str, Any],
        path: tuple[str | int, ...],
        spath: tuple[str | int, ...],
        err: Any,
    ) -> Iterator[SchemaError]:
        if "minProperties" in schema and len(inst) < schema["minProperties"]:
            yield err("minProperties", schema["minProperties"])
        if "maxProperties" in schema and len(inst) > schema["maxProperties"]:
            yield err("maxProperties", schema["maxProperties"])
        required = schema.get("required")
        if required and any(k not in inst for k in required):
            yield err("required", required)
        names = schema.get("propertyNames")
        if names is not None:
            for key in inst:
                yield from self._check(key, names, path, (*spath, "propertyNames"))
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if extra is False and any(k not in props for k in inst):
            yield err("additionalProperties", False)
        for key, value in inst.items():
            if key in props:
                yield from self._check(value, props[key], (*path, key), (*spath, "properties", key))
            elif isinstance(extra, dict):
                yield from self._check(value, extra, (*path, key), (*spath, "additionalProperties"))
