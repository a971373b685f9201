"""The page of ``make figures``: each figure beside the paper's claims it tests, with the
paper's number, mixlab's number (read from the run files) and the verdict.

The figures are drawn again from the runs (``runs/<scale>/<figure>``, the same functions as
``mixlab plot``), their notes in the caption; the claims come from the claims tables
(mixlab.report.claims). A figure run that no claim names is shown after the papers' sections.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..runfile import confined
from ..runfile.store import RUN_FILE, RunReader
from . import claims as claims_mod
from .cells import cell
from .page import Figure

VERDICT_CLS = {claims_mod.REPRODUCED: "v-ok", claims_mod.NOT_REPRODUCED: "v-biased"}


def _figures_of(runs_dir: Path, figure: str) -> tuple[list[Figure], str]:
    """Every figure of the run ``runs_dir/figure``, or why there is none."""
    from .run_page import run_figures

    try:
        d = confined.check(runs_dir, figure, directory=True)
        if not confined.exists(d, RUN_FILE):
            return [], f"not run at this scale (make {figure})"
        with RunReader(d) as run:
            figs, skipped = run_figures(run)
    except Exception as exc:  # noqa: BLE001  (a refused or damaged run: say why, go on)
        return [], str(exc)
    for f in figs:
        f.title = f"{figure}: {f.title}"
    return figs, "; ".join(f"{n}: {why}" for n, why in skipped)


def _claim_rows(outcomes: list) -> list[list[dict]]:
    rows = []
    for o in outcomes:
        mine = ", ".join(f"{n} {v}" for n, v in o.numbers) or "–"
        cls = VERDICT_CLS.get(o.verdict, "v-none")
        rows.append([cell(o.claim.claim, numeric=False, cls="wrap"),
                     cell(o.claim.paper, numeric=False), cell(mine, numeric=False, cls="wrap"),
                     cell(o.verdict, numeric=False, cls=cls),
                     cell(o.why, numeric=False, cls="wrap")])
    return rows


HEAD = [("claim", False), ("paper", False), ("mixlab", False), ("verdict", False),
        ("how judged", False)]


def context(figures_dir: str | Path, runs_dir: str | Path, claims_dir: str | Path,
            draw: bool = True) -> dict:
    """The template context of ``figures.html``."""
    runs_dir, claims_dir = Path(runs_dir), Path(claims_dir)
    results = claims_mod.Results(runs_dir)
    papers, named = [], set()
    for path in claims_mod.find(claims_dir):
        paper, claims = claims_mod.load(path)
        sections = []
        for figure in dict.fromkeys(c.figure for c in claims):
            named.add(figure)
            outcomes = [claims_mod.judge(c, results) for c in claims if c.figure == figure]
            figs, why = _figures_of(runs_dir, figure) if draw else ([], "")
            sections.append({"figure": figure, "figures": figs, "why": why,
                             "rows": _claim_rows(outcomes)})
        papers.append({"paper": paper, "source": str(path), "sections": sections})
    others = []
    for name in confined.list_dir(runs_dir):
        d = runs_dir / name
        if name not in named and d.is_dir() and not d.is_symlink() and os.path.lexists(
                d / RUN_FILE):
            figs, why = _figures_of(runs_dir, name) if draw else ([], "")
            others.append({"figure": name, "figures": figs, "why": why, "rows": []})
    counts: dict[str, int] = {}
    for p in papers:
        for s in p["sections"]:
            for r in s["rows"]:
                counts[r[3]["text"]] = counts.get(r[3]["text"], 0) + 1
    return {"kind": "figures", "title": f"figures of {Path(figures_dir).name} runs",
            "papers": papers, "others": others, "head": HEAD,
            "counts": sorted(counts.items()), "runs_dir": str(runs_dir),
            "generated_from": f"{runs_dir} and {claims_dir}/*.yaml"}
