"""The clean-check cache: a check that finds no drift remembers, outside the project, the
inputs it read and the sha256 of every generated file; the next check with the same inputs and
the same files skips the renderer (no jinja2, no rendering). Nothing is written into the
project, so committed files never depend on it; LOCKDOCS_CACHE=off turns it off."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from lockdocs import __version__, inputs
from lockdocs import model as m
from lockdocs.render.targets import MANIFEST, confined, read_manifest, read_or_none, sha

if TYPE_CHECKING:
    from lockdocs.scan.decls import Coverage


def inputs_digest(model: m.Model, coverage: Coverage | None = None) -> str:
    """Everything the generated files are a function of, hashed as this run read it (see
    `inputs.py`): the declarations, pyproject.toml, the project's templates, this lockdocs
    (its version and its own files), and the coverage of the scanned SQL the page states."""
    root = Path(model.root)
    seen = inputs.seen(root)
    if inputs.TEMPLATE_DIR + "/" not in seen:  # nothing rendered yet: read them now, once
        inputs.template_snapshot(root)
        seen = inputs.seen(root)
    h = hashlib.sha256()
    h.update(__version__.encode())
    if coverage is not None:
        h.update(json.dumps(coverage.to_json(), sort_keys=True).encode())
    wanted = [*model.files, "pyproject.toml"]
    for label in sorted(set(wanted) | {k for k in seen if k.startswith(inputs.TEMPLATE_DIR)}):
        h.update(f"{label}\0{seen.get(label, '<unread>')}\0".encode("utf-8", "surrogateescape"))
    pkg = Path(__file__).parent.parent
    for f in sorted(pkg.rglob("*")):
        if f.is_file() and f.suffix in (".py", ".j2", ".json") and "__pycache__" not in f.parts:
            data = f.read_bytes()
            h.update(f"pkg/{f.relative_to(pkg).as_posix()}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


def _cache_file(root: Path) -> Path | None:
    if os.environ.get("LOCKDOCS_CACHE", "").lower() in ("0", "off", "no", "false"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    # fsencode: a non-ASCII project path under LC_ALL=C PYTHONUTF8=0 holds surrogates.
    key = hashlib.sha256(os.fsencode(root.resolve())).hexdigest()[:32]
    return Path(base) / "lockdocs" / f"{key}.json"


def _outputs_now(root: Path) -> dict[str, str] | None:
    out = {}
    if not confined(root, MANIFEST):
        return None
    for rel in [*read_manifest(root), MANIFEST]:
        data = read_or_none(root / rel)
        if data is None:
            return None
        out[rel] = sha(data)
    return out


def remember_clean(
    root: Path,
    model: m.Model,
    outputs: dict[str, str],
    *,
    svg: bool = True,
    coverage: Coverage | None = None,
) -> None:
    """Record that these outputs ({file: sha256 of the text compared or written}, the
    manifest among them) match the inputs this run read (best effort, never fails); `svg`
    says whether the SVGs were part of the comparison."""
    target = _cache_file(root)
    if target is None:
        return
    record = json.dumps(
        {"inputs": inputs_digest(model, coverage), "outputs": outputs, "svg": svg},
        sort_keys=True,
    )
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(record, encoding="utf-8")
        tmp.replace(target)


def unchanged_since_clean(
    root: Path, model: m.Model, *, svg: bool = True, coverage: Coverage | None = None
) -> bool:
    target = _cache_file(root)
    if target is None:
        return False
    try:
        seen = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return (
        isinstance(seen, dict)
        and seen.get("svg", True) == svg
        and seen.get("inputs") == inputs_digest(model, coverage)
        and seen.get("outputs") == _outputs_now(root)
    )
