"""Records: classes declared like dataclasses (`@record` for `@dataclass(frozen=True)`,
`@record(frozen=False)` for a plain `@dataclass`), made without generating code.

`dataclasses` writes each method's source and compiles it: about 4.5 M instructions a class,
a quarter of a check's own work once, for the fifty-odd classes a check creates before it reads
a file (and it imports `inspect`). A record's methods are closures over its fields instead, made
in a few microseconds; its instances behave as a dataclass's do: the same `__init__` (positional
or keyword, defaults, `field(default_factory=...)`, `__post_init__`), `__eq__` and `__hash__` over
the compared fields, `__repr__`, ordering with `order=True`, `__match_args__`, and a frozen
record refuses assignment (`FrozenInstanceError`). `replace` and `fields` stand in for the
functions of `dataclasses`, which refuses these classes. Type checkers see dataclasses
(`dataclass_transform`). A class needing more (`kw_only`, `InitVar`, slots) stays a dataclass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record (as `dataclasses.FrozenInstanceError`)."""


class Field:
    """A field's declaration: its name, default or default factory, whether it takes part in
    `__init__`, `__repr__`, comparison and hashing, and the caller's `metadata`."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "init",
        "metadata",
        "name",
        "repr",
    )

    def __init__(
        self,
        default: Any = _MISSING,
        default_factory: Any = _MISSING,
        init: bool = True,
        repr: bool = True,
        hash: bool | None = None,
        compare: bool = True,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = ""
        self.metadata: Mapping[str, Any] = metadata if metadata is not None else {}
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | Any = _MISSING,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """As `dataclasses.field`."""
    return Field(default, default_factory, init, repr, hash, compare, metadata)


def fields(obj: Any) -> tuple[Field, ...]:
    """A record's (or a record class's) fields, in order."""
    found: tuple[Field, ...] | None = getattr(obj, "__record_fields__", None)
    if found is None:
        raise TypeError("fields() needs a record or a record class")
    return found


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of a record with some fields changed, made through its `__init__`, as
    `dataclasses.replace`."""
    for f in fields(obj):
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is not an __init__ field")
            continue
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    if not names:
        return lambda self: ()
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda self: (get(self),)
    return attrgetter(*names)


def _collect(cls: type[Any]) -> tuple[Field, ...]:
    """The fields: those of the record bases, then the class's own annotations (a ClassVar is
    no field), each with its default from the class body."""
    out: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in getattr(base, "__record_fields__", ()):
            out[f.name] = f
    # Read as dataclasses reads them; inspect.get_annotations would import inspect.
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if isinstance(annotation, str):
            classvar = annotation.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))
            initvar = annotation.startswith(("InitVar", "dataclasses.InitVar"))
        else:
            classvar = getattr(annotation, "__origin__", annotation) is ClassVar
            initvar = type(annotation).__name__ == "InitVar"
        if initvar:
            raise TypeError(f"{cls.__qualname__}.{name}: InitVar needs a dataclass")
        if classvar:
            continue
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, Field):
            f = value
            if f.default is not _MISSING:
                setattr(cls, name, f.default)
            else:
                delattr(cls, name)
        else:
            f = Field(default=value)
        if f.default is not _MISSING and f.default.__class__ in (list, dict, set):
            raise ValueError(f"mutable default {type(f.default)} for field {name}: use a factory")
        f.name = name
        out[name] = f
    return tuple(out.values())


def _init(cls: type[Any], all_fields: tuple[Field, ...]) -> Callable[..., None]:
    inits = [f for f in all_fields if f.init]
    names = tuple(f.name for f in inits)
    count = len(names)
    index = {name: i for i, name in enumerate(names)}
    allowed = frozenset(names)
    before = [frozenset(names[:i]) for i in range(count + 1)]  # the names `i` positions fill
    # Defaults go in first with one dict update, then what the call gives, then factories for
    # what it did not: fewer steps per instance than a loop over the fields (a 100x project
    # makes 90,000 records).
    statics = {f.name: f.default for f in all_fields if f.default is not _MISSING}
    factories = [
        (f.name, f.default_factory) for f in all_fields if f.default_factory is not _MISSING
    ]
    required = [f.name for f in inits if f.default is _MISSING and f.default_factory is _MISSING]
    unset = sum(
        1
        for f in all_fields
        if not f.init and f.default is _MISSING and f.default_factory is _MISSING
    )
    settable = len(all_fields) - unset
    post = getattr(cls, "__post_init__", None)
    qual = cls.__qualname__
    seen_default = False
    for f in inits:
        if f.default is not _MISSING or f.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")

    calls = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == SPECIALISE_AFTER and cls.__dict__.get("__init__") is __init__:
            cls.__init__ = _specialised(cls, all_fields, post)
        d = self.__dict__
        given = len(args)
        if given > count:
            raise TypeError(
                f"{qual}.__init__() takes {count + 1} positional arguments "
                f"but {given + 1} were given"
            )
        if statics:
            d.update(statics)
        d.update(zip(names, args, strict=False))
        if kwargs:
            keys = kwargs.keys()
            if keys - allowed or not keys.isdisjoint(before[given]):
                for k in kwargs:
                    if k not in allowed:
                        raise TypeError(
                            f"{qual}.__init__() got an unexpected keyword argument {k!r}"
                        )
                    if index[k] < given:
                        raise TypeError(f"{qual}.__init__() got multiple values for argument {k!r}")
            d.update(kwargs)
        for name, factory in factories:
            if name not in d:
                d[name] = factory()
        if len(d) < settable:
            missing = next(name for name in required if name not in d)
            raise TypeError(f"{qual}.__init__() missing required argument: {missing!r}")
        if post is not None:
            post(self)

    return __init__


# Instances of one class after which its `__init__` is compiled for its own fields: the
# generic one above costs 0.73 us a call against 0.16 us (a 100x check makes 90,000 records),
# and compiling costs about what 100 generic calls do, paid only by the classes made often.
SPECIALISE_AFTER = 200


def _specialised(
    cls: type[Any], all_fields: tuple[Field, ...], post: Callable[[Any], None] | None
) -> Callable[..., None]:
    """An `__init__` that behaves as the generic one (`_init`) for `cls`, with its fields as
    parameters and one store each: the code `dataclasses` would write, written only for a
    class that is instantiated often."""
    ns: dict[str, Any] = {"_MISSING": _MISSING, "_post": post}
    params = ["_r_self"]
    body = ["    _r_d = _r_self.__dict__"]
    for i, f in enumerate(all_fields):
        has_default = f.default is not _MISSING
        has_factory = f.default_factory is not _MISSING
        if has_default:
            ns[f"_default{i}"] = f.default
        if has_factory:
            ns[f"_factory{i}"] = f.default_factory
        if not f.init:
            if has_default:
                body.append(f"    _r_d[{f.name!r}] = _default{i}")
            elif has_factory:
                body.append(f"    _r_d[{f.name!r}] = _factory{i}()")
            continue
        if has_default:
            params.append(f"{f.name}=_default{i}")
            body.append(f"    _r_d[{f.name!r}] = {f.name}")
        elif has_factory:
            params.append(f"{f.name}=_MISSING")
            body.append(
                f"    _r_d[{f.name!r}] = _factory{i}() if {f.name} is _MISSING else {f.name}"
            )
        else:
            params.append(f.name)
            body.append(f"    _r_d[{f.name!r}] = {f.name}")
    if post is not None:
        body.append("    _post(_r_self)")
    if {f.name for f in all_fields} & {*ns, "_r_self", "_r_d"}:
        return cls.__init__  # type: ignore[no-any-return]  # a name the code uses
    source = f"def __init__({', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(source, ns)  # the source is made of the class's own field names
    init: Callable[..., None] = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _methods(
    cls: type[Any], all_fields: tuple[Field, ...], frozen: bool, order: bool
) -> dict[str, Any]:
    shown = tuple(f.name for f in all_fields if f.repr)
    key = _key(tuple(f.name for f in all_fields if f.compare))

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in shown)
        return f"{self.__class__.__qualname__}({inner})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    methods: dict[str, Any] = {
        "__init__": _init(cls, all_fields),
        "__repr__": __repr__,
        "__eq__": __eq__,
        "__match_args__": tuple(f.name for f in all_fields if f.init),
    }
    if frozen:
        hashed = _key(
            tuple(f.name for f in all_fields if (f.compare if f.hash is None else f.hash))
        )
        names = frozenset(f.name for f in all_fields)

        def __hash__(self: Any) -> int:
            return hash(hashed(self))

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cls or name in names:
                raise FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)

        methods.update(__hash__=__hash__, __setattr__=__setattr__, __delattr__=__delattr__)
    else:
        methods["__hash__"] = None  # as a dataclass with eq and without frozen: unhashable
    if order:

        def __lt__(self: Any, other: Any) -> bool:
            return key(self) < key(other) if other.__class__ is self.__class__ else NotImplemented

        def __le__(self: Any, other: Any) -> bool:
            return key(self) <= key(other) if other.__class__ is self.__class__ else NotImplemented

        def __gt__(self: Any, other: Any) -> bool:
            return key(self) > key(other) if other.__class__ is self.__class__ else NotImplemented

        def __ge__(self: Any, other: Any) -> bool:
            return key(self) >= key(other) if other.__class__ is self.__class__ else NotImplemented

        methods.update(__lt__=__lt__, __le__=__le__, __gt__=__gt__, __ge__=__ge__)
    return methods


def _make(cls: type[T], frozen: bool, order: bool) -> type[T]:
    all_fields = _collect(cls)
    own = cls.__dict__
    for name, method in _methods(cls, all_fields, frozen, order).items():
        # A method the class defines is kept, as dataclasses keeps it (a `__hash__` of None
        # is Python's mark of a class that defines `__eq__`, not a definition).
        if name in own and not (name == "__hash__" and own[name] is None and "__eq__" in own):
            continue
        if callable(method):
            method.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, method)
    cls.__record_fields__ = all_fields  # type: ignore[attr-defined]
    return cls


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, frozen: bool = True, order: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(
    cls: type[T] | None = None, /, *, frozen: bool = True, order: bool = False
) -> type[T] | Callable[[type[T]], type[T]]:
    """Make `cls` a record: frozen unless `frozen=False`, ordered with `order=True`."""
    if cls is None:
        return lambda c: _make(c, frozen, order)
    return _make(cls, frozen, order)
