"""A synthetic declaration generator: N locks, M paths, K steps per path, fixed seed.

The proportions follow the flagship (member console): about a third advisory keys (fixed names,
prefixed families, bare hashtext ids), the rest row locks with a declared instance order; paths
of a few to a dozen steps with loops, branches, called paths, second transactions and external
calls. Locks are taken mostly in one global order, as in a healthy code base, with a small share
of paths against it so the cycle search has real work.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

PATHS_PER_FILE = 100


def _lock(i: int, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.05:
        body = (
            f"    kind: advisory\n    key: {{hashtextextended: {{text: fixed-{i}}}}}\n"
            "    modes: {shared: readers, exclusive: writers}\n"
        )
    elif r < 0.25:
        body = (
            f'    kind: advisory\n    key: {{hashtextextended: {{prefix: "fam{i}:", parts: [object id]}}}}\n'
            "    modes: {exclusive: writers}\n"
        )
    elif r < 0.32:
        body = (
            "    kind: advisory\n    key: {hashtext: {parts: [external id], cardinality: 10000}}\n"
            "    modes: {exclusive: writers}\n"
        )
    else:
        body = (
            f"    kind: row\n    table: app.table_{i}\n"
            "    modes: {for update: writers, for key share: foreign-key checks}\n"
            "    instances: {order: ascending id}\n"
        )
    return f"  l{i}:\n    title: Lock {i}\n{body}    serializes: synthetic lock {i}\n"


def _mode(lock: str, kinds: dict[str, str], rng: random.Random) -> str:
    kind = kinds[lock]
    if kind == "fixed":
        return "shared" if rng.random() < 0.7 else "exclusive"
    if kind == "row":
        return "for update" if rng.random() < 0.8 else "for key share"
    return "exclusive"


def _take(lock: str, kinds: dict[str, str], rng: random.Random, indent: str) -> str:
    return (
        f"{indent}- take: {lock}\n{indent}  mode: {_mode(lock, kinds, rng)}\n"
        f"{indent}  via: fn_{lock}\n"
    )


def generate(out: Path, locks: int, paths: int, steps: int, seed: int) -> None:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    (out / "paths").mkdir(exist_ok=True)
    lock_text = []
    kinds: dict[str, str] = {}
    for i in range(locks):
        text = _lock(i, rng)
        lock_text.append(text)
        kinds[f"l{i}"] = (
            "fixed" if "text: fixed" in text else "row" if "kind: row" in text else "advisory"
        )
    (out / "locks.yaml").write_text(
        "lockdocs: 1\n"
        "page: {title: Synthetic locks, output: synthetic-locks.md}\n"
        'issues: "https://example.invalid/issues/{number}"\n'
        "transactions:\n"
        "  bounded: {opened_by: Begin, lock_timeout: 5s, isolation: read committed}\n"
        "  plain: {lock_timeout: none}\n"
        "locks:\n" + "".join(lock_text),
        encoding="utf-8",
    )
    names = list(kinds)
    window = 12
    for f in range(0, paths, PATHS_PER_FILE):
        body = [
            f"group: Group {f // PATHS_PER_FILE}\norder: {f // PATHS_PER_FILE}\n"
            "transaction: bounded\npaths:\n"
        ]
        for p in range(f, min(paths, f + PATHS_PER_FILE)):
            base = rng.randrange(max(1, len(names) - window))
            chosen = sorted(
                rng.sample(
                    range(base, min(len(names), base + window)),
                    k=min(steps, window, len(names) - base),
                )
            )
            if rng.random() < 0.005 and len(chosen) > 1:  # against the order
                chosen[0], chosen[-1] = chosen[-1], chosen[0]
            lines = [f"  p{p}:\n    title: Path {p}\n    entry: handler_{p}\n    steps:\n"]
            for j, li in enumerate(chosen):
                lock = names[li]
                r = rng.random()
                if r < 0.1 and kinds[lock] == "row":
                    lines.append(
                        f"      - loop: each {lock}\n        order: ascending id\n"
                        "        steps:\n" + _take(lock, kinds, rng, "          ")
                    )
                elif r < 0.15:
                    lines.append(
                        "      - branches:\n          a:\n"
                        + _take(lock, kinds, rng, "            ")
                        + "          b:\n            - call: nothing_locked\n"
                    )
                else:
                    lines.append(_take(lock, kinds, rng, "      "))
                if j == 1 and rng.random() < 0.1:
                    lines.append("      - write: state\n")
            if p > 0 and rng.random() < 0.05:
                lines.append("      - commit\n      - begin: plain\n")
            if rng.random() < 0.05:
                lines.append("      - commit\n      - external: notify\n")
            body.append("".join(lines))
        (out / "paths" / f"g{f // PATHS_PER_FILE:05d}.yaml").write_text(
            "".join(body), encoding="utf-8"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--locks", type=int, default=18)
    ap.add_argument("--paths", type=int, default=45)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=20261129)
    a = ap.parse_args()
    generate(a.out, a.locks, a.paths, a.steps, a.seed)


if __name__ == "__main__":
    main()
