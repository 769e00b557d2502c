"""Pathological but valid declarations: the shapes that made the analysis blow up or give up.

Each function writes a project (locks.yaml and paths/p.yaml) to a folder and returns what
`lockdocs check` must report about it (the codes), so bench/bounds.py can time it and the fuzz
run can assert it:

- `nested_loops(depth)`: `depth` loops nested in one path, each taking a row of its own;
- `sequential_branches(n)`: one path of `n` branches in a row, each alternative taking a
  different lock (2^n combinations of held sets);
- `run_chain(n)`: path p0 runs p1, which runs p2, ... p(n-1), each taking a lock first;
- `ring_with_noise(ring, noise)`: a real ring of `ring` locks (path i takes r_i then r_(i+1)),
  beside `noise` gate locks and `noise` guarded locks, connected to the ring, whose every cycle
  holds one gate twice (so none is real): the search must report the ring and only the ring.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HEAD = "lockdocs: 1\npage: {title: Pathological}\nlocks:\n"


def _advisory(name: str) -> str:
    return (
        f"  {name}: {{title: {name}, kind: advisory, key: {{hashtextextended: {{text: {name}}}}},"
        " modes: {exclusive: x}}\n"
    )


def _row(name: str) -> str:
    return (
        f"  {name}: {{title: {name}, kind: row, table: app.{name}, "
        "instances: {order: ascending id}, modes: {for update: x}}\n"
    )


def _write(out: Path, locks: str, paths: str) -> None:
    (out / "paths").mkdir(parents=True, exist_ok=True)
    (out / "locks.yaml").write_text(HEAD + locks, encoding="utf-8")
    (out / "paths" / "p.yaml").write_text("group: P\npaths:\n" + paths, encoding="utf-8")


def nested_loops(out: Path, depth: int) -> set[str]:
    locks = "".join(_row(f"n{i}") for i in range(depth))
    body = ""
    indent = "      "
    for i in range(depth):
        body += f"{indent}- loop: level {i}\n{indent}  order: ascending id\n{indent}  steps:\n"
        body += f"{indent}    - take: n{i}\n"
        indent += "    "
    _write(out, locks, f"  deep:\n    title: Deep\n    steps:\n{body}")
    return set()


def sequential_branches(out: Path, n: int) -> set[str]:
    locks = "".join(_advisory(f"b{i}") for i in range(2 * n))
    steps = ""
    for i in range(n):
        steps += (
            f"      - branches:\n          left: [{{take: b{2 * i}}}]\n"
            f"          right: [{{take: b{2 * i + 1}}}]\n"
        )
    _write(out, locks, f"  wide:\n    title: Wide\n    steps:\n{steps}")
    return set()


def run_chain(out: Path, n: int, takes: bool = True) -> set[str]:
    locks = "".join(_advisory(f"c{i}") for i in range(n)) if takes else _advisory("c0")
    paths = ""
    for i in range(n):
        steps = [f"{{take: c{i}}}"] if takes else ["{call: step}"]
        if i + 1 < n:
            steps.append(f"{{run: p{i + 1}}}")
        standalone = "" if i == 0 else "    standalone: false\n"
        paths += f"  p{i}:\n    title: P{i}\n{standalone}    steps: [{', '.join(steps)}]\n"
    _write(out, locks, paths)
    return set()


def ring_with_noise(out: Path, ring: int, noise: int) -> set[str]:
    """Noise: gates g_j and locks x_j (j < noise). A path holds g_min(a,b) while it takes x_a
    then x_b; others hold g_j while they go from the ring into x_j or out of x_j back to the
    ring. Any cycle through the noise holds the gate of its smallest x twice, so only the ring
    is real."""
    locks = "".join(_advisory(f"r{i}") for i in range(ring))
    locks += "".join(_advisory(f"g{j}") + _advisory(f"x{j}") for j in range(noise))
    paths = ""
    for i in range(ring):
        paths += f"  ring{i}:\n    title: Ring {i}\n    steps: [{{take: r{i}}}, {{take: r{(i + 1) % ring}}}]\n"
    for a in range(noise):
        for b in range(noise):
            if a != b:
                g = min(a, b)
                paths += (
                    f"  noise{a}to{b}:\n    title: Noise {a} to {b}\n"
                    f"    steps: [{{take: g{g}}}, {{take: x{a}}}, {{take: x{b}}}]\n"
                )
    for j in range(noise):
        r_in, r_out = j % ring, (j * 7 + 3) % ring
        paths += (
            f"  into{j}:\n    title: Into {j}\n"
            f"    steps: [{{take: g{j}}}, {{take: r{r_in}}}, {{take: x{j}}}]\n"
            f"  outof{j}:\n    title: Out of {j}\n"
            f"    steps: [{{take: g{j}}}, {{take: x{j}}}, {{take: r{r_out}}}]\n"
        )
    _write(out, locks, paths)
    return {"LD201", "LD301"}


SHAPES = {
    "nested-loops": nested_loops,
    "sequential-branches": sequential_branches,
    "run-chain": run_chain,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("shape", choices=[*SHAPES, "ring-with-noise"])
    ap.add_argument("out", type=Path)
    ap.add_argument("n", type=int)
    ap.add_argument("--noise", type=int, default=5)
    args = ap.parse_args()
    if args.shape == "ring-with-noise":
        ring_with_noise(args.out, args.n, args.noise)
    else:
        SHAPES[args.shape](args.out, args.n)


if __name__ == "__main__":
    main()


def random_deep(out: Path, seed: int, depth: int = 10, width: int = 12, chain: int = 40) -> None:
    """A random project mixing the three shapes within their bounds: loops nested up to
    `depth`, up to `width` branch steps in a row, a run: chain of up to `chain` paths, taking
    a dozen locks of both kinds in random orders and modes (the fuzz run's generator)."""
    import random

    rng = random.Random(seed)
    names = [f"a{i}" for i in range(6)] + [f"w{i}" for i in range(6)]
    locks = "".join(_advisory(n) for n in names[:6]) + "".join(_row(n) for n in names[6:])

    def take(indent: str) -> str:
        lock = rng.choice(names)
        mode = "exclusive" if lock.startswith("a") else "for update"
        return f"{indent}- take: {lock}\n{indent}  mode: {mode}\n"

    def body(level: int, indent: str, budget: list[int]) -> str:
        text = ""
        for _ in range(rng.randint(1, 3)):
            budget[0] -= 1
            r = rng.random()
            if r < 0.35 and level < depth and budget[0] > 0:
                order = rng.choice(["ascending id", "arbitrary"])
                text += (
                    f"{indent}- loop: level {level}\n{indent}  order: {order}\n{indent}  steps:\n"
                )
                text += body(level + 1, indent + "    ", budget)
            elif r < 0.55 and budget[0] > 0:
                text += f"{indent}- branches:\n"
                for alt in ("left", "right"):
                    text += f"{indent}    {alt}:\n" + body(level + 1, indent + "      ", budget)
            else:
                text += take(indent)
        return text

    paths = ""
    links = rng.randint(1, chain)
    for i in range(links):
        steps = body(0, "      ", [width])
        if i + 1 < links:
            steps += f"      - run: c{i + 1}\n"
        standalone = "    standalone: false\n" if i > 0 and rng.random() < 0.7 else ""
        paths += f"  c{i}:\n    title: C{i}\n{standalone}    steps:\n{steps}"
    _write(out, locks, paths)


def random_dense(
    out: Path, n: int, locks: int = 60, seed: int = 1, steps: tuple[int, int] = (3, 12)
) -> None:
    """`n` random paths over `locks` locks (every other one a row lock), `steps` (three to twelve)
    steps each: takes in random orders, a few loops and branches. Few locks and many paths make a
    dense lock-order graph and a denser graph of waits, whose searches once had a budget each
    and none in all (2,000 such paths, 1.4 MB, ran past 600 s and 3.5 GB)."""
    import random

    rng = random.Random(seed)
    names = [f"l{i}" for i in range(locks)]
    text = "".join(_advisory(x) if i % 2 else _row(x) for i, x in enumerate(names))

    def take(name: str, indent: str) -> str:
        mode = "exclusive" if int(name[1:]) % 2 else "for update"
        return f"{indent}- take: {name}\n{indent}  mode: {mode}\n"

    paths = ""
    for i in range(n):
        body = ""
        for _ in range(rng.randint(*steps)):
            lock, r = rng.choice(names), rng.random()
            if r < 0.1:
                body += "      - loop: l\n        order: arbitrary\n        steps:\n"
                body += take(lock, "          ")
            elif r < 0.2:
                other = rng.choice(names)
                body += "      - branches:\n          a:\n" + take(lock, "            ")
                body += "          b:\n" + take(other, "            ")
            else:
                body += take(lock, "      ")
        paths += f"  r{i}:\n    title: R{i}\n    steps:\n{body}"
    _write(out, text, paths)


def both_orders(out: Path, n: int, distinct: bool = True) -> None:
    """`n` paths take a then b and `n` take b then a, every one holding the gate z first, so no
    two of them deadlock. With `distinct`, each also holds its own set of other locks (g* on one
    side, h* on the other): n kinds of transaction each way, and a page that explained the pair
    compared all n² (4,000 such paths took minutes and half a gigabyte)."""
    bits = max(1, n.bit_length())
    locks = "".join(_advisory(x) for x in ("a", "b", "z"))
    locks += "".join(_advisory(f"{side}{k}") for side in "gh" for k in range(bits))

    def held(side: str, i: int) -> str:
        if not distinct:
            return ""
        return "".join(f"{{take: {side}{k}}}, " for k in range(bits) if (i + 1) >> k & 1)

    paths = "".join(
        f"  f{i}:\n    title: F{i}\n    steps: [{{take: z}}, {held('g', i)}{{take: a}}, {{take: b}}]\n"
        f"  b{i}:\n    title: B{i}\n    steps: [{{take: z}}, {held('h', i)}{{take: b}}, {{take: a}}]\n"
        for i in range(n)
    )
    _write(out, locks, paths)
