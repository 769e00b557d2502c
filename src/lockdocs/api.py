"""The pipeline: load -> model -> analyse -> render. The CLI and the MkDocs plugin call these."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TextIO

from lockdocs import checkcache, colour
from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Severity, sort_diagnostics
from lockdocs.project.assemble import assemble_model
from lockdocs.records import field, record
from lockdocs.report import REPORTERS

if TYPE_CHECKING:
    from lockdocs.progress import Progress
    from lockdocs.rules.context import CheckContext
    from lockdocs.scan.decls import Coverage


@record(frozen=False)
class CheckResult:
    diagnostics: list[Diagnostic]
    model: m.Model | None
    # The drift findings (LD602-LD605), also in `diagnostics`: one per generated file that
    # `lockdocs build` would change.
    drift: list[Diagnostic] = field(default_factory=list)
    bad_input: bool = False
    coverage: Coverage | None = None  # set when locks.yaml has code:

    @property
    def exit_code(self) -> int:
        if self.bad_input:
            return 2
        if any(d.blocking for d in self.diagnostics):
            return 1
        return 0


def load(root: Path) -> tuple[m.Model | None, list[Diagnostic]]:
    model, diags = assemble_model(root)
    return model, sort_diagnostics(diags)


def analyse(model: m.Model, *, blame: frozenset[str] = frozenset()) -> list[Diagnostic]:
    """Run every registered check, then exceptions, then severity settings. `blame`: paths a
    change added or reordered, which hints name first (`lockdocs diff`)."""
    return analyse_all(model, blame=blame)[0]


def analyse_all(
    model: m.Model, *, blame: frozenset[str] = frozenset()
) -> tuple[list[Diagnostic], Coverage | None]:
    """`analyse`, and the comparison with the SQL of `code:` when it is set (then also its
    coverage); without `code:` the scanner is not even imported."""
    done = analysis(model, blame=blame)
    return done.findings, done.coverage


class Analysis(NamedTuple):
    findings: list[Diagnostic]
    coverage: Coverage | None
    # What the checks computed (the flattened paths, the lock-order graphs): the page's
    # lock-order edges are the same graph, so a build hands it on instead of redoing it.
    facts: CheckContext


def analysis(model: m.Model, *, blame: frozenset[str] = frozenset()) -> Analysis:
    """`analyse_all`, with the facts the checks computed."""
    # The lazy boundary of the analysis: the checks and the settings that tune them.
    from lockdocs.config import apply_overrides, check_options, severity_overrides
    from lockdocs.rules.catalog import load_all
    from lockdocs.rules.context import CheckContext
    from lockdocs.rules.waivers import apply_waivers

    registry = load_all()
    ctx = CheckContext(model, blame=blame)
    overrides, diags = severity_overrides(Path(model.root), model.checks)
    options, bad_options = check_options(Path(model.root), model.check_options)
    if bad_options:
        return Analysis(sort_diagnostics(diags + bad_options), None, ctx)
    found: list[Diagnostic] = []
    if ctx.refused:
        # A path too large to analyse: the analysis stopped (LD209, bad input); the other
        # checks would only read a part of the paths, and at the cost the limit guards against.
        return Analysis(sort_diagnostics(diags + registry["LD209"].run(ctx)), None, ctx)
    for info in registry.values():
        if overrides.get(info.code) != "off":
            found.extend(info.run(ctx, options.get(info.code)))
    coverage = None
    if model.code:
        from lockdocs.scan.run import check_code

        code_found, coverage = check_code(model)
        found.extend(d for d in code_found if overrides.get(d.code) != "off")
    found = apply_overrides(found, overrides)
    found = apply_waivers(model, found, overrides)
    return Analysis(sort_diagnostics(diags + found), coverage, ctx)


def _remember(
    root: Path,
    model: m.Model,
    diags: list[Diagnostic],
    found: list[Diagnostic],
    coverage: Coverage | None,
) -> tuple[bool, list[Diagnostic], list[Diagnostic]]:
    """What a check concludes from a model and its findings (bad declarations, the findings
    it reports, the bad outputs), remembered with every input read (`checkcache`). A build
    computes the same findings, so it remembers them too: the check a hook runs after
    `lockdocs build` is then answered without loading the declarations again."""
    from lockdocs.render.targets import output_diagnostics

    # A page.output outside docs/ is bad input for a check with drift, not drift.
    bad = output_diagnostics(model)
    # Bad declarations, or a path too large to analyse (LD209: the analysis stopped).
    bad_declarations = any(
        (d.code.startswith("LD0") or d.code == "LD209") and d.severity is Severity.ERROR
        for d in found
    )
    findings = found if bad_declarations else sort_diagnostics(diags + found)
    checkcache.remember(
        root,
        findings,
        bad_input=bad_declarations,
        output_problems=bad,
        files=model.files,
        coverage=None if coverage is None or bad_declarations else coverage.to_json(),
        rules_url=model.rules_url,
    )
    return bad_declarations, findings, bad


def check(root: Path, *, drift: bool = True, svg: bool = True) -> CheckResult:
    """Load, analyse and (with `drift`) compare the committed docs; `svg` False compares only
    the Markdown and the DOT (a project built with --no-svg). The findings are remembered
    with every input read (`checkcache`): `commands.check` answers the next check from them
    while those inputs stay as they are."""
    model, diags = load(root)
    if model is None:
        checkcache.remember(
            root, diags, bad_input=True, output_problems=[], files=(), coverage=None, rules_url=None
        )
        return CheckResult(diags, None, bad_input=True)
    found, coverage = analyse_all(model)
    bad_declarations, findings, bad = _remember(root, model, diags, found, coverage)
    if bad_declarations:
        return CheckResult(found, model, bad_input=True)
    result = CheckResult(findings, model, coverage=coverage)
    if drift:
        from lockdocs.render.current import docs_current

        shown = None if coverage is None else coverage.to_json()
        if not bad and docs_current(root, model.files, result.diagnostics, shown, svg=svg):
            return result
        from lockdocs.config import apply_overrides, severity_overrides
        from lockdocs.render.drift import drift_diagnostics
        from lockdocs.render.targets import RenderError

        # A broken project template is bad input too.
        if not bad:
            try:
                found_drift = drift_diagnostics(
                    model, result.diagnostics, svg=svg, coverage=coverage, known=False
                )
            except RenderError as exc:
                bad = exc.diagnostics
        if bad:
            return CheckResult(
                sort_diagnostics(result.diagnostics + bad), model, bad_input=True, coverage=coverage
            )
        if found_drift:
            overrides, _ = severity_overrides(root, model.checks)
            result.drift = apply_overrides(found_drift, overrides)
            result.diagnostics = sort_diagnostics(result.diagnostics + result.drift)
    return result


def build(
    root: Path,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    svg: bool = True,
    dot_timeout: float | None = None,
) -> int:
    """`lockdocs build`: load, analyse, then hand the model and its findings to the renderer.
    0 written, 2 bad input (nothing written), 3 Graphviz failed; `svg` False skips Graphviz.
    `dot_timeout` (seconds one diagram may take) overrides [tool.lockdocs] dot_timeout. A
    build that runs longer than a couple of seconds shows its progress on a terminal."""

    from lockdocs.progress import Progress  # a thread that only a build may need

    root = root.absolute()  # the writer names its temporary files from the root
    err = err or sys.stderr
    with Progress(err) as progress:
        return _build(root, out, err, svg, dot_timeout, progress)


def _build(
    root: Path,
    out: TextIO | None,
    err: TextIO,
    svg: bool,
    dot_timeout: float | None,
    progress: Progress,
) -> int:
    from lockdocs.render.targets import docs_problem
    from lockdocs.render.write import refuse, restore, write_docs

    problem = docs_problem(root) or restore(root, err)
    if problem is not None:
        return refuse(err, problem)
    progress.say("lockdocs: checking the declarations")
    model, diags = load(root)
    if model is None:
        colour.write(
            err, REPORTERS["text"](diags, "the declarations are not valid; nothing written")
        )
        return 2
    found, coverage, facts = analysis(model)
    if any(d.code.startswith("LD0") and d.severity is Severity.ERROR for d in found):
        colour.write(
            err, REPORTERS["text"](found, "the declarations are not valid; nothing written")
        )
        return 2
    if dot_timeout is None:
        from lockdocs.config import dot_timeout as configured

        dot_timeout = configured(root)
    written = write_docs(
        root,
        model,
        sort_diagnostics(diags + found),
        out=out,
        err=err,
        svg=svg,
        coverage=coverage,
        dot_timeout=dot_timeout,
        progress=progress,
        facts=facts,
    )
    if written == 0:
        _remember(root, model, diags, found, coverage)
    return written
