"""Records behave as the dataclasses they replace: each class here is declared twice, once with
`dataclasses` and once with `lockdocs.records`, and every behaviour lockdocs relies on is
compared (construction, defaults and factories, equality, hashing, order, repr, frozenness,
`replace`, `__post_init__`, inheritance, pattern matching)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pytest

from lockdocs import records


@pytest.fixture(autouse=True, params=["generic", "specialised"])
def init_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: with the generic `__init__`, and with the one compiled for the class
    (`records.SPECIALISE_AFTER`: a class made often gets it), from its second instance on."""
    monkeypatch.setattr(records, "SPECIALISE_AFTER", 10**9 if request.param == "generic" else 1)
    return str(request.param)


def test_a_class_made_often_gets_its_own_init(init_kind: str) -> None:
    @records.record
    class Point:
        x: int
        y: int = 0
        tags: tuple[str, ...] = records.field(default_factory=tuple)
        seen: int = records.field(default=0, init=False)

    generic = Point.__init__
    first = Point(1)
    assert (Point.__init__ is generic) == (init_kind == "generic")
    again = Point(1)
    assert again == first and (again.x, again.y, again.tags, again.seen) == (1, 0, (), 0)
    assert Point.__init__.__qualname__.endswith("Point.__init__")


def _pair(body: str, decorator: str) -> tuple[type[Any], type[Any]]:
    """The same class body under `@dataclasses.dataclass(...)` and `@records.record(...)`
    (a record is frozen unless it says otherwise; a dataclass, the other way round)."""
    # dataclasses reads a string annotation's ClassVar in the class's module: this one.
    ns: dict[str, Any] = {"__name__": __name__, "dataclasses": dataclasses, "records": records}
    assert globals()["ClassVar"] is ClassVar
    made = []
    sides = (
        ("dataclasses.dataclass", decorator, "dataclasses.field"),
        ("records.record", decorator or "(frozen=False)", "records.field"),
    )
    for deco, args, fld in sides:
        src = f"@{deco}{args}\nclass C:\n" + body.replace("FIELD", fld)
        exec(src, ns)
        made.append(ns["C"])
    return made[0], made[1]


BODY = """
    name: str
    count: int = 0
    tags: tuple[str, ...] = ()
    notes: tuple[str, ...] = FIELD(default_factory=tuple)
    extra: dict[str, int] = FIELD(default_factory=dict, compare=False, hash=False)
    kind: ClassVar[str] = "plain"

    def label(self) -> str:
        return f"{self.name}:{self.count}"
"""


@pytest.mark.parametrize("decorator", ["(frozen=True)", "(frozen=True, order=True)", ""])
def test_a_record_behaves_as_its_dataclass(decorator: str) -> None:
    dc, rc = _pair(BODY, decorator)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("a",), {}),
        (("a", 2), {}),
        (("a",), {"count": 3, "tags": ("x",)}),
        ((), {"name": "b", "notes": ("n",)}),
        (("c", 1, ("t",), ("n",), {"k": 1}), {}),
    ]
    made_d = [dc(*a, **k) for a, k in calls]
    made_r = [rc(*a, **k) for a, k in calls]
    for d, r in zip(made_d, made_r, strict=True):
        assert repr(d) == repr(r)
        assert [getattr(d, f.name) for f in dataclasses.fields(d)] == [
            getattr(r, f.name) for f in records.fields(r)
        ]
        assert r.label() == d.label() and rc.kind == "plain"
    for i, (d1, r1) in enumerate(zip(made_d, made_r, strict=True)):
        for d2, r2 in zip(made_d[i:], made_r[i:], strict=True):
            assert (d1 == d2) == (r1 == r2)
            if "order" in decorator:
                assert (d1 < d2, d1 <= d2, d1 > d2) == (r1 < r2, r1 <= r2, r1 > r2)
    assert rc("a", extra={"x": 1}) == rc("a", extra={"y": 2}), "compare=False is left out"
    assert rc("a") != dc("a") and (rc("a") == ("a",)) is False
    if "frozen" in decorator:
        assert hash(rc("a", extra={"x": 1})) == hash(rc("a", extra={"y": 2}))
        assert len({rc("a"), rc("a"), rc("b")}) == 2
        with pytest.raises(records.FrozenInstanceError):
            rc("a").count = 1  # type: ignore[misc]
        with pytest.raises(AttributeError):
            del rc("a").name
        assert issubclass(records.FrozenInstanceError, AttributeError)
    else:
        with pytest.raises(TypeError):
            hash(rc("a"))
        r = rc("a")
        r.count = 5
        assert r.count == 5
    changed = records.replace(rc("a", 1), count=7)
    assert changed == rc("a", 7) and type(changed) is rc
    assert rc.__match_args__ == dc.__match_args__


def test_construction_errors_match() -> None:
    dc, rc = _pair(BODY, "(frozen=True)")
    for args, kwargs in [((), {}), (("a",), {"name": "b"}), (("a",), {"nope": 1})]:
        with pytest.raises(TypeError):
            dc(*args, **kwargs)
        with pytest.raises(TypeError):
            rc(*args, **kwargs)
    with pytest.raises(TypeError):
        rc("a", 1, (), (), {}, "one too many")
    with pytest.raises(ValueError, match="mutable default"):
        _pair("    items: list[int] = []\n", "")
    with pytest.raises(TypeError, match="follows default"):
        records.record(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 1}))


def test_post_init_inheritance_and_own_methods() -> None:
    @records.record
    class Base:
        a: int
        b: int = 2

        def __post_init__(self) -> None:
            object.__setattr__(self, "total", self.a + self.b)

    @records.record
    class Child(Base):
        c: int = 3

        def __repr__(self) -> str:
            return "child"

    child = Child(1, c=5)
    assert (child.a, child.b, child.c) == (1, 2, 5)
    assert child.total == 3  # type: ignore[attr-defined]
    assert repr(child) == "child", "a method the class defines is kept"
    assert [f.name for f in records.fields(Child)] == ["a", "b", "c"]
    assert Child(1) != Base(1), "another class is never equal"
    match child:
        case Child(1, 2, 5):
            pass
        case _:
            pytest.fail("pattern matching follows __match_args__")


def test_a_factory_makes_one_value_per_instance() -> None:
    @records.record(frozen=False)
    class Bag:
        items: list[int] = records.field(default_factory=list)

    first, second = Bag(), Bag()
    first.items.append(1)
    assert second.items == [] and first.items is not second.items


def test_replace_refuses_what_is_not_a_record() -> None:
    with pytest.raises(TypeError):
        records.replace(object())  # type: ignore[type-var]
