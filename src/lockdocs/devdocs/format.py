"""The format reference (docs/reference/format.md): every field of locks.yaml and paths/*.yaml,
from the JSON Schema that `lockdocs validate` checks them against."""

from __future__ import annotations

import json
from typing import Any

from lockdocs.devdocs.text import GENERATED_NOTE, cell, code, code_cell, prose, slug
from lockdocs.rules.catalog import option_schemas
from lockdocs.schema.definition import locks_schema, paths_schema


class _SchemaPage:
    """Walks a JSON Schema breadth-first; every object with properties becomes one section."""

    def __init__(self) -> None:
        self.sections: list[tuple[str, str, dict[str, Any]]] = []  # (yaml path, anchor, schema)
        self._by_shape: dict[str, str] = {}  # canonical JSON of an object schema -> anchor
        self._queue: list[tuple[str, str, dict[str, Any]]] = []
        self.defs: dict[str, Any] = {}

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target: dict[str, Any] = self.defs[ref.removeprefix("#/$defs/")]
            return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    def _section_for(self, where: str, node: dict[str, Any], prefix: str) -> str:
        """The anchor of the section describing `node`, queueing one when it is new."""
        shape = json.dumps(node, sort_keys=True)
        if shape in self._by_shape:
            return self._by_shape[shape]
        anchor = slug(f"{prefix} {where}")
        self._by_shape[shape] = anchor
        self._queue.append((where, anchor, node))
        return anchor

    @staticmethod
    def _is_section(node: dict[str, Any]) -> bool:
        if "properties" in node:
            return True
        alts = node.get("oneOf", [])
        return sum(1 for a in alts if isinstance(a, dict) and "properties" in a) > 1

    def type_of(self, node: dict[str, Any], where: str, prefix: str) -> str:
        node = self._resolve(node)
        if "const" in node:
            return f"the constant {code(json.dumps(node['const']))}"
        if self._is_section(node):
            anchor = self._section_for(where, node, prefix)
            label = "object" if "properties" in node else "one of several forms"
            return f"[{label}](#{anchor})"
        if "oneOf" in node:
            return " or ".join(
                self.type_of(alt, where, prefix) for alt in node["oneOf"] if isinstance(alt, dict)
            )
        kind = node.get("type")
        if kind == "array":
            items = node.get("items", {})
            return f"list of {self.type_of(items, where + '[]', prefix)}"
        if kind == "object":
            value = node.get("additionalProperties")
            if isinstance(value, dict):
                names = node.get("propertyNames", {})
                key = (
                    "mode"
                    if "enum" in names
                    else ("code" if "pattern" in names and "LD" in names["pattern"] else "id")
                )
                return f"map of {key} → {self.type_of(value, f'{where}.<{key}>', prefix)}"
            return "object"
        if "enum" in node and kind is None:
            kinds = sorted({type(v).__name__ for v in node["enum"]})
            return " or ".join({"str": "string", "int": "integer"}.get(k, k) for k in kinds)
        return str(kind or "any")

    @staticmethod
    def constraints(node: dict[str, Any]) -> list[str]:
        out: list[str] = []
        if "enum" in node:
            out.append("One of " + ", ".join(code(str(v)) for v in node["enum"]) + ".")
        if "pattern" in node:
            out.append(f"Must match {code(node['pattern'])}.")
        if "minimum" in node:
            out.append(f"At least {node['minimum']}.")
        if "maximum" in node:
            out.append(f"At most {node['maximum']}.")
        if "minItems" in node:
            out.append(f"At least {node['minItems']} item(s).")
        if "minLength" in node:
            out.append("Not empty.")
        if node.get("minProperties") and node.get("maxProperties") == 1:
            out.append("Exactly one field.")
        elif node.get("minProperties"):
            out.append(f"At least {node['minProperties']} entry.")
        items = node.get("items")
        if isinstance(items, dict) and "enum" in items:
            out.append("Items: " + ", ".join(code(str(v)) for v in items["enum"]) + ".")
        names = node.get("propertyNames")
        if isinstance(names, dict):
            if "pattern" in names:
                out.append(f"Keys must match {code(names['pattern'])}.")
            if "enum" in names:
                out.append("Keys: " + ", ".join(code(str(v)) for v in names["enum"]) + ".")
        value = node.get("additionalProperties")
        if isinstance(value, dict) and "enum" in value:
            out.append("Values: " + ", ".join(code(str(v)) for v in value["enum"]) + ".")
        return out

    def row(self, name: str, node: dict[str, Any], required: bool, where: str, prefix: str) -> str:
        node_r = self._resolve(node)
        typ = self.type_of(node, where, prefix)
        desc = cell(str(node_r.get("description", "")))
        extra = " ".join(self.constraints(node_r))
        if extra:
            desc = f"{desc} {extra}".strip()  # constraints put every `|` in a code span
        return f"| {code_cell(name)} | {'yes' if required else ''} | {typ} | {desc} |"

    def render_section(
        self, where: str, anchor: str, node: dict[str, Any], prefix: str, level: str
    ) -> list[str]:
        out = [f"{level} {code(where)} {{#{anchor}}}", ""]
        if node.get("description"):
            out += [prose(node["description"]), ""]
        if "properties" in node:
            required = set(node.get("required", []))
            out += ["| Field | Required | Type | Description |", "|---|---|---|---|"]
            for name, prop in node["properties"].items():
                child = f"{where}.{name}" if where else name
                out.append(self.row(name, prop, name in required, child, prefix))
            out.append("")
            if node.get("additionalProperties") is False:
                out += ["No other field is allowed.", ""]
            return out
        # A value with several object forms (a step): one table row per form.
        out += ["| Form | Written as | Description |", "|---|---|---|"]
        for alt in node.get("oneOf", []):
            if "properties" in alt:
                first = next(iter(alt.get("required", list(alt["properties"]))))
                anchor_alt = self._section_for(f"{where} ({first})", alt, prefix)
                out.append(
                    f"| [{code_cell(first)}](#{anchor_alt}) | "
                    f"{code_cell(first + ': ...')} | {cell(alt.get('description', ''))} |"
                )
            elif "enum" in alt:
                words = ", ".join(code_cell(str(v)) for v in alt["enum"])
                out.append(f"| {words} | a bare word | {cell(alt.get('description', ''))} |")
        out.append("")
        return out

    def _render_tree(self, where: str, anchor: str, node: dict[str, Any], prefix: str) -> list[str]:
        """A section, then the sections it introduced, depth first: children follow parents."""
        self._queue = []
        out = self.render_section(where, anchor, node, prefix, "###")
        children, self._queue = self._queue, []
        for child in children:
            out += self._render_tree(*child, prefix)
        return out

    def render(self, schema: dict[str, Any], file_label: str, prefix: str) -> list[str]:
        self.defs = schema.get("$defs", {})
        out = [f"## {code(file_label)} {{#{slug(prefix)}}}", ""]
        if schema.get("description"):
            out += [prose(schema["description"]), ""]
        top = {
            k: v
            for k, v in schema.items()
            if k not in ("$defs", "$schema", "$id", "title", "description")
        }
        self._queue = []
        out += self.render_section("", slug(prefix), top, prefix, "###")[2:]
        children, self._queue = self._queue, []
        for child in children:
            out += self._render_tree(*child, prefix)
        return out


def format_reference() -> str:

    page = _SchemaPage()
    lines = [
        GENERATED_NOTE.format(source="the JSON Schema in lockdocs/schema/definition.py"),
        "# Format reference",
        "",
        "Every field of `locks.yaml` and of the files under `paths/`, generated from the JSON "
        "Schema that `lockdocs validate` checks them against. Print the schema itself with "
        "`lockdocs schema locks` or `lockdocs schema paths`; the [concepts](../concepts.md) page "
        "explains what the fields mean together.",
        "",
        "Ids (of locks, transaction kinds, paths and rules) are short slugs: lower-case letters, "
        "digits, `.`, `_` and `-`, starting with a letter or a digit.",
        "",
        '!!! tip "Completion in your editor"',
        "",
        "    Write the schema to a file (`lockdocs schema locks > locks.schema.json`) and put "
        "`# yaml-language-server: $schema=./locks.schema.json` on the first line of `locks.yaml`: "
        "VS Code, Neovim and Zed then complete and check the fields as you type.",
        "",
    ]
    lines += page.render(locks_schema(option_schemas()), "locks.yaml", "locks-yaml")
    lines += page.render(paths_schema(), "paths/*.yaml", "paths-yaml")
    return "\n".join(lines).rstrip("\n") + "\n"
