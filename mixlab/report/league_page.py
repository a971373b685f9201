"""The page of a league: one sortable leaderboard per target, each cell marked with the
sampler's verdict; the league's figure (rank heat maps and error curves); budgets, seeds and
truth sources.

Read from the league's own files (``league.csv``, ``league.json``, ``league.png``) through
mixlab.runfile.confined, so ``mixlab league`` writes ``league.html`` from what it has just written and
``mixlab report LEAGUE`` gives the same page. A ``verdict`` column (``ok``, ``not mixed``,
``biased`` or empty) is shown when the table has one; otherwise the verdict is read from
``bias_flag`` (1 biased, 0 ok, anything else no verdict). A calibration league's
``calibration.csv`` (false alarms and misses per target) is shown above the leaderboards.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

from ..errors import RunFileError
from ..league import calibration
from ..runfile import confined
from .cells import cell, verdict_style
from .page import Figure
from .values import SHOWN_ITEMS, fmt

TABLE_BYTES = 64 << 20   # league.csv / league.json: the bound of 'mixlab show' on a league
FIGURE_BYTES = 64 << 20  # league.png


def is_league(path: Path) -> bool:
    return confined.exists(path, "league.csv") and confined.exists(path, "league.json")


def verdict_of(row: dict) -> str:
    """The row's verdict: its ``verdict`` column when the table has one, else from
    ``bias_flag``."""
    if "verdict" in row:
        return (row.get("verdict") or "").strip()
    flag = (row.get("bias_flag") or "").strip()
    return {"1": "biased", "0": "ok"}.get(flag, "")


def _float(text) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v


def _spread(row: dict, clock: str) -> dict:
    med = _float(row.get(f"{clock}_error_median"))
    lo, hi = _float(row.get(f"{clock}_error_min")), _float(row.get(f"{clock}_error_max"))
    if med is None or not math.isfinite(med):
        return cell(None)
    text = f"{med:.3g}" + (f" [{lo:.3g}–{hi:.3g}]" if lo is not None and hi is not None else "")
    return cell(med, text=text)


def _marked(c: dict, cls: str) -> dict:
    """An error cell coloured by the verdict (a cell without a number stays plain)."""
    return {**c, "cls": f"{c['cls']} {cls}".strip()} if c["sort"] != "" else c


def _rank(row: dict, clock: str, cls: str, mark: str) -> dict:
    r = _float(row.get(f"{clock}_rank"))
    if r is None:
        return cell(None)
    tied = "=" if (row.get(f"{clock}_tied") or "").strip() == "1" else ""
    return cell(r, text=f"{int(r)}{tied}", cls=cls, badge=mark, badge_cls=cls)


def _reach(v) -> dict:
    """A cost to reach the stated error: infinite when the stream never reached it."""
    x = _float(v)
    if x is None:
        return cell(None)
    return cell(x, text="not reached" if math.isinf(x) else f"{x:.3g}")


def _number(v, upper: str | None = None) -> dict:
    """An ESS rate, an R-hat or a budget factor: infinite spelled ∞ (chains that never
    meet have R-hat ∞); ``≤`` before an ESS rate whose ``upper`` flag is ``1`` (only an upper
    bound: league.csv's ``*_ess_upper_bound``)."""
    x = _float(v)
    if x is None:
        return cell(None)
    text = ("∞" if x > 0 else "−∞") if math.isinf(x) else f"{x:.3g}"
    return cell(x, text=f"≤ {text}" if (upper or "").strip() == "1" else text)


def _note(r: dict) -> str:
    """The row's note: its verdict note, the table's note (which repeats the verdict note in
    the tables mixlab writes) and a failed cell's error, each part once."""
    status = (r.get("status") or "").strip()
    sources = [r.get("verdict_note"), r.get("note")]
    if status and status != "complete":
        sources.append(r.get("error"))
    parts: list[str] = []
    for text in sources:
        for part in (text or "").split("; "):
            part = part.strip()
            if part and not any(part in seen for seen in parts):
                parts.append(part)
    note = "; ".join(parts)
    if status and status != "complete" and not note.startswith(status):
        note = f"{status}: {note}" if note else status
    return note


HEAD = [("sampler", False), ("verdict", False), ("error @ equal time", True),
        ("time rank", True), ("error @ equal work", True), ("work rank", True), ("s to reach", True),
        ("work to reach", True), ("ESS/s", True), ("ESS/Mwork", True), ("note", False)]


def leaderboard(rows: list[dict]) -> list[list[dict]]:
    """Table cells of one target's rows (in the table's order: best first)."""
    out = []
    for r in rows:
        verdict = verdict_of(r)
        cls, badge = verdict_style(verdict)
        clock = (r.get("verdict_clock") or "").strip()
        marks = {c: (cls if not clock or clock == c else "", badge if not clock or clock == c
                     else "") for c in ("time", "work")}
        out.append([
            cell(r.get("sampler"), numeric=False, cls="name"),
            cell(verdict or "no verdict", numeric=False, cls=cls,
                 text=badge if verdict else "no verdict"),
            _marked(_spread(r, "time"), marks["time"][0]),
            _rank(r, "time", *marks["time"]),
            _marked(_spread(r, "work"), marks["work"][0]),
            _rank(r, "work", *marks["work"]),
            _reach(r.get("time_reach_seconds")), _reach(r.get("work_reach_work")),
            _number(r.get("time_ess_per_s"), r.get("time_ess_upper_bound")),
            _number(r.get("work_ess_per_munit"), r.get("work_ess_upper_bound")),
            *[_number(r.get(k)) for k, _ in EXTRA if k in r],
            cell(_note(r), numeric=False, cls="note")])
    return out


#: columns shown when league.csv has them: (column, header)
EXTRA = [("rhat", "R-hat"), ("budget_needed", "budget needed")]


def head_of(rows: list[dict]) -> list[tuple[str, bool]]:
    """The leaderboard's header: :data:`HEAD` with the :data:`EXTRA` columns the table has."""
    have = [(label, True) for k, label in EXTRA if rows and k in rows[0]]
    return HEAD[:-1] + have + HEAD[-1:]


def calibration_table(league_dir: Path) -> dict | None:
    """The league's ``calibration.csv`` (a calibration league's false alarms and misses per
    target, mixlab.league.calibration) as table cells, with the sentence summing it; None when
    the league has none."""
    if not confined.exists(league_dir, "calibration.csv"):
        return None
    text = confined.read_text(league_dir, "calibration.csv", limit=TABLE_BYTES)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows:
        return None
    head, body = rows[0], rows[1:]
    counts = set(calibration.HEAD[1:9])
    cells = [[cell(_count(v)) if label in counts and _count(v) is not None
              else cell(v, numeric=False) for label, v in zip(head, r)]
             for r in body[:SHOWN_ITEMS]]
    whole = tuple(head) == calibration.HEAD and all(
        len(r) == len(head) and all(_count(r[i]) is not None for i in range(1, 9))
        for r in body)
    return {"head": [(label, label in counts) for label in head], "rows": cells,
            "more": max(0, len(body) - SHOWN_ITEMS),
            "totals": calibration.totals(body) if whole and body else ""}


def _count(text: str) -> int | None:
    """A count of cells written as ASCII digits, else None."""
    text = text.strip()
    return int(text) if re.fullmatch(r"[0-9]{1,15}", text) else None


def _order(r: dict) -> tuple:
    def rank(c):
        v = _float(r.get(f"{c}_rank"))
        return v if v is not None else 1e6
    return rank("work"), rank("time"), str(r.get("sampler"))


def context(league_dir: str | Path) -> dict:
    """The template context of ``league.html`` for the league directory ``league_dir``."""
    d = Path(league_dir)
    text = confined.read_text(d, "league.csv", limit=TABLE_BYTES)
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    try:
        info = json.loads(confined.read_text(d, "league.json", limit=TABLE_BYTES))
    except ValueError as exc:
        raise RunFileError(f"{d / 'league.json'} is not JSON ({exc}); run the league again "
                           f"to rewrite it") from None
    if not isinstance(info, dict):
        raise RunFileError(f"{d / 'league.json'} is not a league's JSON object")
    targets: dict[str, list[dict]] = {}
    for r in rows[:SHOWN_ITEMS]:
        targets.setdefault(str(r.get("target")), []).append(r)
    truth = info.get("truth") if isinstance(info.get("truth"), dict) else {}
    yards = info.get("yardsticks") if isinstance(info.get("yardsticks"), dict) else {}
    reach = info.get("reach_errors") if isinstance(info.get("reach_errors"), dict) else {}
    boards = [{"target": t, "truth": truth.get(t, "?"), "yardstick": yards.get(t, "?"),
               "reach": reach.get(t), "rows": leaderboard(sorted(rs, key=_order))}
              for t, rs in targets.items()]
    figures = []
    if confined.exists(d, "league.png"):
        png = confined.read_bytes(d, "league.png", FIGURE_BYTES)
        figures.append(Figure(
            "league.png", png,
            f"rank heat maps (samplers × targets) at equal time and at equal work, and each "
            f"target's {info.get('yardstick', 'error')} against sampling seconds for every "
            f"sampler and seed"))
    verdicts = [verdict_of(r) for r in rows]
    counts = {v: sum(1 for x in verdicts if (x or "") == v) for v in dict.fromkeys(verdicts)}
    budgets = [("family", info.get("family")), ("scale", info.get("scale")),
               ("seeds per cell", info.get("seeds")),
               ("equal time", f"{fmt(info.get('seconds'))} s of sampling per stream"),
               ("equal work", f"{fmt(info.get('work'))} {info.get('unit', '')} per stream, "
                              f"all chains together"),
               ("stated error", info.get("reach_error") if info.get("reach_error") is not None
                else "each target's own (the expected error of 1,000 exact draws)"),
               ("cells", len(rows)),
               ("sampling seconds", info.get("sampling_seconds")),
               ("wall seconds", info.get("wall_seconds")),
               ("workers", info.get("workers"))]
    return {"kind": "league",
            "title": f"{info.get('family', '?')} league ({info.get('scale', '?')})",
            "boards": boards, "head": head_of(rows), "figures": figures, "budgets": budgets,
            "truths": [(t, truth.get(t, "?")) for t in targets],
            "verdict_counts": [(v or "no verdict", n) for v, n in counts.items()],
            "has_verdict_column": bool(rows) and "verdict" in rows[0],
            "rows_more": max(0, len(rows) - SHOWN_ITEMS),
            "calibration": calibration_table(d),
            "generated_from": str(d)}


def write_league_html(league_dir: str | Path) -> Path:
    """Write ``league.html`` into the league directory (through mixlab.runfile.confined)."""
    from .page import render

    html = render("league.html", **context(league_dir))
    return confined.write_atomic(league_dir, "league.html", html.encode("utf-8"))
