"""A run: chain as the walk records it: the paths a step is reached through (outermost first),
or the places of the run: steps that reached it. Each `run:` step adds one name to its
caller's chain, and every event of the callee shares the result.

A tuple would copy the whole chain at each `run:` (and hash all of it on each event): a chain
of n runs then costs n²/2 to build and to hash, and n³/6 when every link is a path of its own
(3,000 links ran out of memory). Here adding a name is O(1) and the hash is kept as the chain
grows, so a walk through n runs costs n. A chain reads as a sequence of its names (`len`,
indexing, iteration, `join`); `[-1]`, `len` and truth are O(1), the rest walks it once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload


class Chain(Sequence[str]):
    """An immutable chain of names, shared by the chains that extend it."""

    __slots__ = ("_hash", "_last", "_len", "_rest")

    def __init__(self, last: str | None = None, rest: Chain | None = None) -> None:
        self._last = last
        self._rest = rest
        if last is None:
            self._len = 0
            self._hash = hash(("lockdocs-chain",))
        else:
            assert rest is not None
            self._len = rest._len + 1
            self._hash = hash((rest._hash, last))

    def add(self, name: str) -> Chain:
        """This chain with `name` added at the inner end."""
        return Chain(name, self)

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def _names(self) -> list[str]:
        """The names innermost first (a walk of the chain: O(len))."""
        out: list[str] = []
        node: Chain | None = self
        while node is not None and node._last is not None:
            out.append(node._last)
            node = node._rest
        return out

    def __iter__(self) -> Iterator[str]:
        return reversed(self._names())

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, int) and index == -1 and self._last is not None:
            return self._last
        return tuple(self)[index]

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Chain):
            return NotImplemented
        a: Chain | None = self
        b: Chain | None = other
        while a is not b:
            if a is None or b is None or a._hash != b._hash or a._len != b._len:
                return False
            if a._last != b._last:
                return False
            a, b = a._rest, b._rest
        return True

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Chain):
            return NotImplemented
        return tuple(self) < tuple(other)

    def __repr__(self) -> str:
        return f"Chain{tuple(self)!r}"


EMPTY = Chain()
