"""Validate loaded documents against the JSON Schema and turn errors into located diagnostics.

The validator reports a JSON path only; `Document.loc` maps it back to the YAML line. A step is a
`oneOf` of many shapes, whose raw error says nothing useful, so the step's own key picks the
branch whose errors are reported.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.grammar import an
from lockdocs.load import Document
from lockdocs.schema.definition import locks_schema, paths_schema
from lockdocs.schema.fastcheck import Validator

STEP_KEYS = (
    "take",
    "set",
    "loop",
    "branches",
    "run",
    "call",
    "external",
    "write",
    "begin",
    "commit",
    "rollback",
    "leave_open",
    "release",
)


@functools.cache
def _validator(kind: str) -> Validator:
    return Validator(locks_schema() if kind == "locks" else paths_schema())


def validate_against(doc: Document, schema: dict[str, Any]) -> list[Diagnostic]:
    """A document's errors against another schema than its kind's (a part of it checked with
    what only a later stage knows: the options of each check), worded and located alike."""
    return _errors(doc, Validator(schema), "locks")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _leaf_errors(error: Any) -> list[Any]:
    """Descend a oneOf at a step into the branch its key names."""
    if error.validator != "oneOf" or not error.context:
        return [error]
    inst = error.instance
    subschemas = error.schema.get("oneOf", [])
    words = [i for i, sub in enumerate(subschemas) if "enum" in sub]
    if not isinstance(inst, dict) and len(subschemas) == 2 and len(words) == 1:
        # a word, or a mapping (a check's severity, or its severity and options): a value that
        # is no mapping is a word that is not one of the words
        subs = [e for e in error.context if e.relative_schema_path[0] == words[0]]
        return subs or [error]
    if isinstance(inst, dict):
        present = [k for k in STEP_KEYS if k in inst]
        objects = [i for i, sub in enumerate(subschemas) if sub.get("type") == "object"]
        if len(objects) == 1 and len(subschemas) > 1 and not present:
            # one mapping shape among strings (a set's element): its own errors say more
            subs = [e for e in error.context if e.relative_schema_path[0] == objects[0]]
            return [x for e in subs for x in _leaf_errors(e)] or [error]
        if len(present) == 1:
            for i, sub in enumerate(subschemas):
                if present[0] in sub.get("properties", {}):
                    subs = [e for e in error.context if e.relative_schema_path[0] == i]
                    out: list[Any] = []
                    for e in subs:
                        out.extend(_leaf_errors(e))
                    return out or [error]
    return [error]


def _describe(error: Any, doc: Document) -> Diagnostic:
    path = tuple(error.absolute_path)
    validator = error.validator
    inst = error.instance
    on_key = False
    hint = "see the format reference (lockdocs schema)"
    if "propertyNames" in error.schema_path:  # a key, checked as a value: point at the key
        validator = "propertyNames"
    if validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extras = [k for k in inst if k not in error.schema.get("properties", {})]
        bad = extras[0] if extras else "?"
        path = (*path, bad)
        on_key = True
        message = f"unknown field '{bad}'"
        close = difflib.get_close_matches(bad, allowed, n=1)
        hint = f"did you mean '{close[0]}'?" if close else "allowed here: " + ", ".join(allowed)
    elif validator == "required":
        missing = [k for k in error.validator_value if k not in inst]
        message = f"missing required field '{missing[0] if missing else '?'}'"
        hint = f"add '{missing[0] if missing else '?'}:' here"
    elif validator == "type":
        want = error.validator_value
        message = f"expected {want}, found {_type_name(inst)}"
        hint = f"write {an(want)} here"
    elif validator == "enum":
        choices = ", ".join(str(c) for c in error.validator_value)
        message = f"'{inst}' is not one of the allowed values"
        close = difflib.get_close_matches(str(inst), [str(c) for c in error.validator_value], n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"use one of: {choices}"
    elif validator == "const":
        message = f"expected {error.validator_value!r}, found {inst!r}"
        hint = f"write {error.validator_value!r}"
    elif validator == "pattern":
        message = f"'{inst}' does not have the expected form"
        if path and path[-1] == "lock_timeout":
            hint = "write a duration such as 5s, 500ms or 2min, or none"
        elif path and path[-1] == "issues":
            hint = "the template needs {number} where the issue number goes"
        else:
            hint = "ids are lower-case slugs: letters, digits, '.', '_' and '-'"
    elif validator == "propertyNames":
        path = (*path, str(inst))
        on_key = True
        message = f"'{inst}' is not a valid id"
        hint = (
            "ids are lower-case slugs of at most 128 characters: letters, digits, '.', '_' and "
            "'-' (e.g. pool-row)"
        )
    elif validator == "minLength":
        message = "this text must not be empty"
        if path and path[-1] == "try":
            hint = "say what the code does when the lock is not free (skips, retries, gives up)"
        else:
            hint = "write the text, or remove the field"
    elif validator == "minItems" and path and path[-1] == "set":
        message = f"a set takes several locks in one statement; this one lists {len(inst)}"
        hint = "list two or more locks, or write a single lock as take:"
    elif validator in ("minProperties", "minItems"):
        message = "this must not be empty"
        hint = "add at least one entry, or remove the field"
    elif validator == "minimum":
        message = f"{inst!r} is below the smallest allowed value, {error.validator_value}"
        hint = f"write {error.validator_value} or more"
    elif validator == "maximum":
        message = f"{inst!r} is above the largest allowed value, {error.validator_value}"
        hint = f"write {error.validator_value} or less"
    elif validator == "maxProperties":
        message = "only one of these may be given: " + ", ".join(sorted(inst))
        hint = "keep exactly one"
    elif validator == "oneOf" and len(path) > 1 and path[-2] == "set":
        message = f"{_type_name(inst)} is not an element of a set"
        hint = "an element is a lock id, or a mapping {take: <lock>, mode: ..., instance: ...}"
    elif validator == "oneOf" and isinstance(inst, dict) and path and "steps" in path:
        present = [k for k in STEP_KEYS if k in inst]
        if not present:
            message = "a step needs one of: " + ", ".join(STEP_KEYS)
            keys = list(inst)
            close = difflib.get_close_matches(str(keys[0]), STEP_KEYS, n=1) if keys else []
            hint = f"did you mean '{close[0]}'?" if close else "start the step with take:"
            if keys:
                path = (*path, keys[0])
                on_key = True
        else:
            message = "a step has one kind; found " + ", ".join(present)
            hint = "split it into one step each"
    elif validator == "oneOf" and path and "steps" in path and not isinstance(inst, dict):
        words = [str(w) for sub in error.schema.get("oneOf", []) for w in sub.get("enum", [])]
        if isinstance(inst, str):
            message = f"'{inst}' is not a step"
            close = difflib.get_close_matches(inst, [*words, *STEP_KEYS], n=1)
            lead = f"did you mean '{close[0]}'? (" if close else ""
        else:
            message = f"{_type_name(inst)} is not a step"
            lead = ""
        hint = (
            f"{lead}a step is the word {' or '.join(words)}, or a mapping that starts with one "
            "of " + ", ".join(f"{k}:" for k in STEP_KEYS) + (")" if lead else "")
        )
    elif validator == "oneOf":
        message = f"{_type_name(inst)} is not valid here"
        hint = error.schema.get("description", hint)
    else:
        message = error.message or f"this value breaks the format's '{validator}' constraint"
    if not on_key and path and validator in ("enum", "const") and isinstance(path[-1], str):
        pass
    return Diagnostic("LD003", Severity.ERROR, message, doc.loc(path, key=on_key), hint)


def _step_mode_typo(error: Any, kind: str) -> bool:
    """A step's mode that is no mode at all ('for nokey update'): the model builder says what
    the lock's modes are, which the schema does not know."""
    path = tuple(error.absolute_path)
    return (
        kind == "paths"
        and error.validator == "enum"
        and isinstance(error.instance, str)
        and len(path) >= 2
        and path[-1] == "mode"
        and "steps" in path
    )


def validate(doc: Document, kind: str) -> list[Diagnostic]:
    """All schema errors of one document, located; one per value (a wrong type first)."""
    return _errors(doc, _validator(kind), kind)


def _errors(doc: Document, validator: Validator, kind: str) -> list[Diagnostic]:
    if validator.valid(doc.data):
        return []
    rank = {"type": 0, "const": 1, "enum": 2}
    best: dict[tuple[object, ...], Any] = {}
    order: list[tuple[object, ...]] = []
    for error in validator.iter_errors(doc.data):
        for leaf in _leaf_errors(error):
            if _step_mode_typo(leaf, kind):
                continue  # reported with the lock's own modes when the model is built
            group = "value" if leaf.validator in rank else leaf.validator
            where = (*leaf.absolute_path, group)
            if where not in best:
                order.append(where)
                best[where] = leaf
            elif rank.get(leaf.validator, 9) < rank.get(best[where].validator, 9):
                best[where] = leaf
    out: list[Diagnostic] = []
    bare_seen: set[tuple[object, ...]] = set()
    for w in order:
        bare = _bare_flow_key(best[w], doc)
        if bare is None:
            out.append(_describe(best[w], doc))
        elif bare[0] not in bare_seen:  # one finding per bare key, whatever the schema says
            bare_seen.add(bare[0])
            out.append(bare[1])
    return out


def _bare_flow_key(error: Any, doc: Document) -> tuple[tuple[object, ...], Diagnostic] | None:
    """An error about a bare entry of a flow mapping (`{a: x, y}`, where YAML reads `y` as a
    key of its own): the comma was meant as text, so say that, at the YAML."""
    if not doc.bare_flow_keys:
        return None
    path = tuple(error.absolute_path)
    inst = error.instance
    candidates = [path]
    if isinstance(inst, dict):
        candidates += [(*path, k) for k in inst]
    elif isinstance(inst, str):
        candidates.append((*path, inst))
    for p in candidates:
        before = doc.bare_flow_keys.get(p)
        if before is None:
            continue
        word = str(p[-1])
        return p, Diagnostic(
            "LD003",
            Severity.ERROR,
            f"a comma inside {{...}} ends the value of '{before}': YAML reads '{word}' as a "
            "field of its own",
            doc.loc(p, key=True),
            f'quote the text that holds the comma ({before}: "..., {word}"), or write the '
            "mapping as indented lines",
        )
    return None
