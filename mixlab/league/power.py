"""The league's power: the smallest tempering ``|1 − β|`` it finds ``biased`` in at least 95% of
repeated leagues, per target (``mixlab league FAMILY --power R``).

Each repeat is the family's league at the spec's budgets with another seed (``seed + r``, r =
0..R−1), run on the calibration set's tempered sampler alone (mixlab.league.calibration:
heat bath on ``p(x)^β``) at every ``β`` of the set's ``POWER_BETAS``. A target's power is
the smallest ``|1 − β|`` whose cells are ``biased`` in at least :data:`LEVEL` of the R
repeats (with R = 10, all ten); ``power.md`` and ``power.csv`` in the output directory give
the fraction at every β. A cell that did not complete counts in no fraction: a β with one is
marked in ``power.md``, left out of the smallest ``|1 − β|``, and the command exits 1 after
writing, so that running it again completes just those cells.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from ..runfile import confined

LEVEL = 0.95


def power_raw(raw: dict, family: str) -> dict:
    """A league spec (as loaded, before resolving) turned into a power league: the
    calibration set's tempered sampler at every power β, alone."""
    from . import calibration

    mod = calibration.load(family)
    samplers = {f"beta{b:g}": mod.power_entry(b) for b in mod.POWER_BETAS}
    return {**raw, "calibration": True, "samplers": samplers, "only_samplers": list(samplers)}


def run_power(specs: list[dict], out: Path, workers: int = 1, quiet: bool = True,
              scheduler: str | None = None) -> tuple[str, int]:
    """Run the resolved power leagues ``specs`` (one per repeat, each its own seed) into
    ``out/r<k>``, write ``power.md`` and ``power.csv`` into ``out``; returns the markdown and
    the number of cells that did not complete.

    The repeats run one after another, each league's cells side by side on ``workers``
    processes or on the Dask cluster at ``scheduler`` (mixlab.league.league.run_league)."""
    from .league import run_league

    flagged: dict[tuple[str, float], list[int | None]] = {}
    for r, one in enumerate(specs):
        _, entries = run_league(one, out / f"r{r}", workers=workers, scheduler=scheduler,
                                quiet=quiet)
        for e in entries:
            beta = float(one["samplers"][e.sampler]["beta"])
            flagged.setdefault((e.target, beta), []).append(
                int(e.biased) if e.status == "complete" else None)
    md, table = report(flagged, specs)
    out.mkdir(parents=True, exist_ok=True)
    confined.write_atomic(out, "power.md", md.encode())
    confined.write_atomic(out, "power.csv", table.encode())
    return md, sum(v is None for vs in flagged.values() for v in vs)


def smallest_flagged(fractions: dict[float, float], level: float = LEVEL) -> float:
    """The smallest ``|1 − β|`` whose fraction flagged is at least ``level`` (NaN: none)."""
    hits = [abs(1 - b) for b, f in fractions.items() if f >= level]
    return min(hits) if hits else math.nan


def report(flagged: dict, specs: list[dict]) -> tuple[str, str]:
    """``(markdown, csv)`` of the fraction of repeats flagged per target and β.

    ``flagged[(target, β)]`` holds one entry per repeat: 1 (``biased``), 0, or None (the cell
    did not complete). A fraction is over the complete cells; a β with fewer than R of them
    is marked and does not count toward the smallest ``|1 − β|``."""
    spec, repeats = specs[0], len(specs)
    targets = list(dict.fromkeys(t for t, _ in flagged))   # in the leagues' order
    betas = sorted({b for _, b in flagged}, reverse=True)
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["target", *[f"beta={b:g}" for b in betas], "smallest_flagged_1_minus_beta",
                "incomplete_cells"])
    lines = [f"# {spec['family']} league power ({spec.get('scale', 'quick')} scale, R = "
             f"{repeats} repeats)", "",
             f"Fraction of {repeats} leagues (seeds {', '.join(str(s['seed']) for s in specs)}) "
             f"that find heat bath on p(x)^β `biased`; the last column is the smallest |1 − β| "
             f"found `biased` in at least {LEVEL:.0%} of them.", "",
             "| target | " + " | ".join(f"β = {b:g}" for b in betas) + " | smallest 1 − β |",
             "|---|" + "---|" * (len(betas) + 1)]
    missing = 0
    for t in targets:
        runs = {b: flagged[(t, b)] for b in betas if (t, b) in flagged}
        done = {b: [v for v in vs if v is not None] for b, vs in runs.items()}
        fr = {b: sum(v) / len(v) for b, v in done.items() if v}
        small = smallest_flagged({b: f for b, f in fr.items() if len(done[b]) == repeats})
        lost = sum(len(runs[b]) - len(done[b]) for b in runs)
        missing += lost
        cells = ["–" if b not in done else _cell(fr.get(b), len(done[b]), repeats)
                 for b in betas]
        lines.append(f"| {t} | " + " | ".join(cells)
                     + " | " + ("none" if math.isnan(small) else f"{small:.2g}") + " |")
        w.writerow([t, *[fr.get(b, "") for b in betas], "" if math.isnan(small) else small,
                    lost])
    if missing:
        lines += ["", f"**Incomplete:** {missing} cell(s) did not complete (their reasons are in "
                  f"r<k>/league.csv). A fraction marked \"of n\" is over the n complete "
                  f"leagues and does not count toward the last column; run the same command "
                  f"again to complete them."]
    return "\n".join(lines) + "\n", buf.getvalue()


def _cell(fraction: float | None, complete: int, repeats: int) -> str:
    """One β's fraction flagged over its ``complete`` leagues (None: none complete), marked
    when fewer than ``repeats`` completed."""
    if fraction is None:
        return "none complete"
    return f"{fraction:.2f}" if complete == repeats else f"{fraction:.2f} of {complete}"
