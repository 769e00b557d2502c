"""Every step kind is handled everywhere the code dispatches on one, so a new member of the
model's `Step` union cannot be forgotten silently.

Two shapes of dispatch are allowed. A table keyed by the step class (the export's JSON, the
path diagram's node) must hold every kind: checked here. A `match step:` (the analysis's walk
and summaries, the page's step lines, the diff's acquisition sequence, the structural walks)
names every kind in its cases (a walk that only goes down into nested steps passes the kinds
with no steps inside as one `case m.Leaf():`) and ends in `case _: assert_never(step)`, so mypy
(strict) reports a match a new kind is missing from; checked here too, without mypy. What is left is
an `isinstance` chain, which fails nothing when a kind is missing: the scan below finds none.
"""

from __future__ import annotations

import ast
import typing

from conftest import REPO
from lockdocs import api
from lockdocs import model as m
from lockdocs.export import STEP_JSON, step_json
from lockdocs.render.dot import STEP_NODES, path_dot

SRC = REPO / "src" / "lockdocs"
KINDS = set(typing.get_args(m.Step))
NAMES = {k.__name__ for k in KINDS}
LEAVES = {k.__name__ for k in KINDS if issubclass(k, m.Leaf)}

# Tables keyed by the step class: each must hold every kind (no table handles a subset).
TABLES = {"export.STEP_JSON": STEP_JSON, "render.dot.STEP_NODES": STEP_NODES}

# isinstance chains over one step allowed to stay ("file function(variable)": why): none
# today. Tests of one or two kinds ("is it a take", flatten's `_NESTING` tuple, the model's own
# walk_steps) are not chains: the scan counts three or more kinds tested on one variable in one
# function.
ALLOWED_CHAINS: dict[str, str] = {}


def _kinds_named(node: ast.expr) -> list[str]:
    """The step kinds an isinstance's second argument or a class pattern names (`m.Take`,
    or a bare `Take` inside the model itself)."""
    if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "m":
        return [node.attr] if node.attr in NAMES else []
    if isinstance(node, ast.Name):
        return [node.id] if node.id in NAMES else []
    if isinstance(node, ast.Tuple):
        return [k for e in node.elts for k in _kinds_named(e)]
    return []


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of a function, not those of the functions defined inside it."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _sources() -> list[tuple[str, ast.Module]]:
    return [
        (f.relative_to(REPO).as_posix(), ast.parse(f.read_text(encoding="utf-8")))
        for f in sorted(SRC.rglob("*.py"))
    ]


def isinstance_chains() -> list[str]:
    """`file function(variable)` of each function testing one variable against three or more
    step kinds with isinstance."""
    found = []
    for rel, tree in _sources():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            tested: dict[str, set[str]] = {}
            for node in _own_nodes(fn):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", "") == "isinstance"
                    and len(node.args) == 2
                    and isinstance(node.args[0], ast.Name)
                ):
                    tested.setdefault(node.args[0].id, set()).update(_kinds_named(node.args[1]))
            found += [
                f"{rel} {fn.name}({var})"
                for var, kinds in sorted(tested.items())
                if len(kinds) >= 3
            ]
    return found


def step_matches() -> list[tuple[str, ast.Match]]:
    """Every `match` statement whose cases name a step kind."""
    out = []
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Match) and any(_pattern_kinds(c.pattern) for c in node.cases):
                out.append((f"{rel}:{node.lineno}", node))
    return out


def _pattern_kinds(p: ast.pattern) -> set[str]:
    if isinstance(p, ast.MatchClass):
        if isinstance(p.cls, ast.Attribute) and p.cls.attr == "Leaf":
            return set(LEAVES)
        return set(_kinds_named(p.cls))
    if isinstance(p, ast.MatchOr):
        return {k for q in p.patterns for k in _pattern_kinds(q)}
    if isinstance(p, ast.MatchAs) and p.pattern is not None:
        return _pattern_kinds(p.pattern)
    return set()


def test_every_table_keyed_by_step_kind_holds_every_kind() -> None:
    assert {"Take", "Loop", "Branches", "Release"} <= NAMES  # the union is read, not empty
    for name, table in TABLES.items():
        assert set(table) == KINDS, (name, NAMES ^ {k.__name__ for k in table})
        assert all(callable(h) for h in table.values()), name


def test_the_leaves_are_the_kinds_with_no_steps_inside() -> None:
    """`case m.Leaf():` may pass a kind over only if nothing nests in it: a kind holding steps
    (a field typed with Step) or naming a path to run is no leaf."""
    nesting = {
        k.__name__
        for k in KINDS
        if any("Step" in str(t) for t in k.__annotations__.values()) or k is m.Run
    }
    assert {"Loop", "Branches", "Run"} <= nesting  # the scan of the fields is not blind
    assert nesting == NAMES - LEAVES


def test_every_match_over_a_step_names_every_kind_and_ends_in_assert_never() -> None:
    matches = step_matches()
    # flatten (2), summaries (4), view/steps (2), compare, observe, project, order,
    # stepview, processes: 14 today; fewer means a site went back to something unchecked.
    assert len(matches) >= 14, [where for where, _ in matches]
    for where, match in matches:
        named = set().union(*(_pattern_kinds(c.pattern) for c in match.cases[:-1]))
        assert named == NAMES, (where, "missing", sorted(NAMES - named))
        last = match.cases[-1]
        assert isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None, where
        assert last.guard is None, where
        call = last.body[0]
        assert (
            isinstance(call, ast.Expr)
            and isinstance(call.value, ast.Call)
            and getattr(call.value.func, "id", "") == "assert_never"
            and ast.dump(call.value.args[0]) == ast.dump(match.subject)
        ), f"{where}: the last case must be `case _: assert_never(<subject>)`"


def test_no_isinstance_chain_over_step_kinds_is_left() -> None:
    chains = isinstance_chains()
    left = [c for c in chains if c not in ALLOWED_CHAINS]
    assert not left, "dispatch on a step with a table or an exhaustive match:\n" + "\n".join(left)


def test_the_scans_see_a_chain_and_a_partial_match() -> None:
    """The two scans are not blind: a chain and a match missing a kind, parsed from text."""
    chain = ast.parse(
        "def f(s):\n"
        "    if isinstance(s, m.Take): pass\n"
        "    elif isinstance(s, (m.Loop, m.Run)): pass\n"
    )
    fn = chain.body[0]
    kinds = {
        k
        for n in _own_nodes(fn)
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "isinstance"
        for k in _kinds_named(n.args[1])
    }
    assert kinds == {"Take", "Loop", "Run"}
    partial = ast.parse(
        "match s:\n    case m.Take() | m.Loop() if x:\n        pass\n    case _:\n        pass\n"
    ).body[0]
    assert isinstance(partial, ast.Match)
    assert _pattern_kinds(partial.cases[0].pattern) == {"Take", "Loop"}


def test_the_page_fixture_has_every_kind_and_each_table_handles_it() -> None:
    """tests/fixtures/render_project (the page golden's project; the step-kind recipe adds a
    step there) declares every kind, and each table's handler runs on each."""
    model, diagnostics = api.load(REPO / "tests" / "fixtures" / "render_project")
    assert model is not None, diagnostics
    steps = [s for p in model.paths.values() for s in m.walk_steps(p.steps)]
    assert {type(s) for s in steps} == KINDS
    for s in steps:
        out = step_json(s)
        assert out["line"] == s.location.line and "type" in out
    for p in model.paths.values():
        assert "\ndigraph " in path_dot(model, p, {}), p.id


def test_the_recipe_names_the_tables() -> None:
    recipe = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    recipe = recipe.split("\n## Recipe: a new step kind\n", 1)[1].split("\n## ", 1)[0]
    for name in ("STEP_JSON", "STEP_NODES", "assert_never", "m.Leaf", "tests/test_step_kinds.py"):
        assert name in recipe, name
