"""What of the declarations the log exercised, as lockdep counts its classes and chains:
each declared lock, path and order edge with how often the log showed it, and the ones it
never showed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Coverage:
    locks: dict[str, int] = field(default_factory=dict)  # every declared lock -> times taken
    paths: dict[str, int] = field(default_factory=dict)  # every path -> transactions of it
    edges: dict[tuple[str, str], int] = field(default_factory=dict)  # declared order -> seen

    @staticmethod
    def of(locks: list[str], paths: list[str], edges: set[tuple[str, str]]) -> Coverage:
        return Coverage(
            dict.fromkeys(sorted(locks), 0),
            dict.fromkeys(sorted(paths), 0),
            dict.fromkeys(sorted(edges), 0),
        )

    def lock(self, lock: str) -> None:
        if lock in self.locks:
            self.locks[lock] += 1

    def path(self, path: str) -> None:
        if path in self.paths:
            self.paths[path] += 1

    def edge(self, pair: tuple[str, str], count: int) -> None:
        if pair in self.edges:
            self.edges[pair] += count

    @staticmethod
    def _part(counts: dict[Any, int], name: str) -> dict[str, Any]:
        unseen = [k for k, n in counts.items() if not n]
        return {
            "declared": len(counts),
            "seen": len(counts) - len(unseen),
            "counts": {_key(k): n for k, n in counts.items()},
            "unseen": [_key(k) for k in unseen],
            "what": name,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "locks": self._part(self.locks, "declared locks"),
            "paths": self._part(self.paths, "declared paths"),
            "edges": self._part(self.edges, "declared order edges (held -> taken)"),
        }

    def text(self) -> list[str]:
        out = []
        for name, counts in (
            ("locks", self.locks),
            ("paths", self.paths),
            ("order edges", self.edges),
        ):
            unseen = [_key(k) for k, n in counts.items() if not n]
            line = f"coverage: {len(counts) - len(unseen)} of {len(counts)} declared {name} seen"
            if unseen:
                shown = ", ".join(unseen[:12]) + (
                    f", ... ({len(unseen)})" if len(unseen) > 12 else ""
                )
                line += f"; never seen: {shown}"
            out.append(line)
        return out


def _key(k: Any) -> str:
    return f"{k[0]} -> {k[1]}" if isinstance(k, tuple) else str(k)
