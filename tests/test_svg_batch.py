"""Many diagrams to one `dot` process: the SVG of a diagram is the same as when it is drawn alone.

Graphviz's own state leaks from one graph to the next inside a process (the outer group's id,
the order of named subgraphs); these tests draw the committed diagrams of both example projects
both ways with the real `dot` and compare the bytes, so a Graphviz that leaks something else
fails here rather than in somebody's incremental build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO
from lockdocs.render.svg import GraphvizError, plan, render_svg, render_svgs

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")


def _committed() -> dict[str, str]:
    out = {}
    for base in (REPO / "docs", REPO / "examples" / "dstack" / "docs"):
        for f in sorted(base.rglob("*.dot")):
            out[f.relative_to(REPO).as_posix()] = f.read_text(encoding="utf-8")
    return out


def test_batched_svgs_are_the_ones_drawn_alone() -> None:
    dots = _committed()
    jobs = plan(list(dots), dots)
    batched = [job for job in jobs if len(job) > 1]
    assert batched, "the examples must give at least one batch"
    assert sum(len(j) for j in jobs) == len(dots)

    # A DOT with two clusters or more is drawn first in its process (their order in Graphviz
    # 2.43 depends on what the process drew before): it leads a batch, or is drawn alone; the
    # flagship has some of both, and none comes after another graph.
    def clustered(name: str) -> bool:
        return dots[name].count('subgraph "cluster') >= 2

    assert any(clustered(job[0]) for job in batched)
    assert any(clustered(job[0]) for job in jobs if len(job) == 1)
    assert not any(clustered(n) for job in jobs for n in job[1:])
    together = render_svgs(dots, workers=2)
    assert list(together) == list(dots)
    for name, dot_text in dots.items():
        assert together[name] == render_svg(dot_text), name


def test_progress_counts_every_diagram() -> None:
    dots = dict(list(_committed().items())[:10])
    seen: list[tuple[int, int]] = []
    render_svgs(dots, workers=1, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (10, 10)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_bad_diagram_in_a_batch_is_named() -> None:
    dots = dict(list(_committed().items())[:5])
    good = next(n for n in dots if len(plan([n], dots)[0]) == 1)
    dots["broken.dot"] = "digraph broken { a -> }\n"
    with pytest.raises(GraphvizError) as caught:
        render_svgs({good: dots[good], "broken.dot": dots["broken.dot"]}, workers=1)
    assert "broken.dot" in str(caught.value)
    assert caught.value.usage is False  # our DOT was wrong: a bug, exit 3


def test_dot_that_writes_nothing_is_an_error() -> None:
    # Graphviz 2.43 exits 0 with no output when a comment line is longer than its 16 KiB buffer.
    text = "// " + "x" * 17000 + "\ndigraph g { a -> b }\n"
    with pytest.raises(GraphvizError, match="wrote no SVG"):
        render_svg(text, what="g.dot")


def test_timeout_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(GraphvizError) as caught:
        render_svg("digraph g { a -> b }\n", timeout=0.001, what="g.dot")
    message = str(caught.value)
    assert "did not finish drawing g.dot in 0.001 s" in message
    assert "dot_timeout" in message and "--dot-timeout" in message and "--no-svg" in message
    assert caught.value.usage is True
