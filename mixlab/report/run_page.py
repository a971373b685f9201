"""The page of one run: status, spec, provenance, results, diagnostics and every figure.

Read through :class:`mixlab.runfile.store.RunReader` (the run file checked whole by
mixlab.runfile.check, every file opened through mixlab.runfile.confined): nothing the run names is
opened, nothing in it is run.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import FigureNotReady, MixlabError
from ..runfile.provenance import provenance
from ..runfile.store import RunReader
from .cells import cell
from .page import Figure
from .values import SPEC_CHARS, cut_items


def run_figures(run: RunReader) -> tuple[list[Figure], list[tuple[str, str]]]:
    """Every figure of the run (those ``mixlab plot`` draws), notes kept for the caption; and
    ``(name, why)`` for each figure the run cannot draw yet."""
    from ..plotting import describe, draw, figure_names

    figures, skipped = [], []
    for name in figure_names(run):
        try:
            png, notes = draw(run, name, notes_below=False)
        except (FigureNotReady, MixlabError) as exc:
            skipped.append((name, str(exc)))
            continue
        figures.append(Figure(name, png, describe(run, name), notes))
    return figures, skipped


def diagnostics_rows(run: RunReader) -> tuple[list[list[dict]], str]:
    """The rows of ``mixlab diagnose`` as table cells, or a reason why there are none."""
    from ..diagnostics import diagnose

    try:
        rows = diagnose(run)
    except Exception as exc:  # noqa: BLE001  (a damaged stream: the page says why)
        return [], f"diagnostics could not be computed: {type(exc).__name__}: {exc}"
    if not rows:
        return [], "no stream with at least 4 draws and real-valued statistics"
    return [[cell(r.stream, numeric=False), cell(r.statistic, numeric=False),
             cell(r.ess_bulk), cell(r.ess_tail), cell(r.rhat), cell(r.mcse), cell(r.ess_per_s),
             cell(f"{r.chains}×{r.draws}", numeric=False)] for r in rows], ""


DIAG_HEAD = [("stream", False), ("statistic", False), ("ESS bulk", True), ("ESS tail", True),
             ("R-hat", True), ("MCSE", True), ("ESS/s", True), ("chains×draws", False)]


def _plugins(prov: dict) -> list[list[dict]]:
    rows = []
    for p in prov.get("plugins") or []:
        if isinstance(p, dict):
            rows.append([cell(p.get(k), numeric=False) for k in
                         ("module", "source", "file", "sha256", "distribution", "version")])
        else:
            rows.append([cell(p, numeric=False)] + [cell(None)] * 5)
    return rows


def context(run_dir: str | Path, with_figures: bool = True) -> dict:
    """The template context of ``run.html`` for the run directory ``run_dir``."""
    with RunReader(run_dir) as run:
        spec = run.spec
        attrs = run.attrs
        prov = provenance(run)
        results = run.results()
        diag, diag_note = diagnostics_rows(run)
        figures, skipped = run_figures(run) if with_figures else ([], [])
        status, live = run.status, run.live_status()
        streams = run.stream_names()
    spec_text = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100)
    res_items, res_more = cut_items(sorted(results.items()))
    packages = prov.pop("packages", {})
    plugins = _plugins(prov)
    prov.pop("plugins", None)
    data = [(k, v) for k, v in sorted(results.items())
            if "sha256" in k or k.startswith(("data", "model/file"))]
    dropped = spec.get("dropped") if isinstance(spec.get("dropped"), dict) else {}
    return {
        "kind": "run", "title": str(spec.get("name") or Path(run_dir).name),
        "run_dir": str(run_dir), "status": status, "live_status": live,
        "status_cls": "status-complete" if status == "complete" else "status-other",
        "summary": [("run directory", str(run_dir)), ("status", live),
                    ("experiment", attrs.get("experiment")),
                    ("description", spec.get("description")), ("scale", spec.get("scale")),
                    ("seed", spec.get("seed")), ("streams", ", ".join(streams) or "none")],
        "provenance": list(prov.items()),
        "packages": sorted((str(k), v) for k, v in packages.items())
        if isinstance(packages, dict) else [("packages", packages)],
        "plugins": plugins, "data": data,
        "dropped": [(str(k), v) for k, v in dropped.items()],
        "results": [[cell(k, numeric=False), cell(v)] for k, v in res_items],
        "results_more": res_more,
        "diagnostics": diag, "diag_head": DIAG_HEAD, "diag_note": diag_note,
        "figures": figures, "skipped": skipped,
        "spec_text": spec_text, "spec_chars": SPEC_CHARS,
        "generated_from": str(run_dir),
    }
