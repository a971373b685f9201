"""The league's tables: terminal text, ``league.csv`` (one row per cell) and ``league.md``.

Every error is shown as ``median [min–max]`` over the seeds; a rank shared by samplers whose
seeds cannot separate them is written ``2=``; a rank is followed by ``B`` for a sampler the
verdict finds biased, ``M`` for one whose chains have not mixed (mixlab.league.verdict) and,
on a target with exact truth, ``?`` for one without a verdict (``M`` and ``?`` rank after
``ok`` and before ``B``: mixlab.league.rank); a sampler without a cost statistic has ``–`` in
the equal-work columns and the note "ranked by time alone"; a failed cell shows its one-line
reason.

``league.csv`` gives the verdict in ``verdict`` (``ok``, ``not mixed``, ``biased`` or empty),
``verdict_clock`` (the clock it was decided on: ``time`` or ``work``), ``verdict_note``,
``rhat`` (the mixing statistic, max over features), ``rhat_threshold`` and ``budget_needed``
(for ``not mixed``: a multiple of the budget, or empty); the ``bias_*`` columns keep the bias
test of the equal-work streams (else the equal-time ones) alone.
"""

from __future__ import annotations

import csv
import io
import math

from .rank import Entry

#: the columns of league.csv that depend only on the equal-work draws, never on the machine's
#: speed. Not ``verdict`` (decided on whichever clock mixed best: the equal-time streams' draws
#: depend on the machine), nor ``work_rank``/``work_tied`` (the ranking groups samplers by it)
WORK_COLUMNS = ("target", "sampler", "status", "has_work", "bias_flag", "bias_p_value",
                "work_error_median", "work_error_min", "work_error_max", "work_reach_work",
                "work_ess_per_munit")


def _num(v: float, digits: int = 3) -> str:
    if v is None or not math.isfinite(v):
        return "–" if v is None or math.isnan(v) else "not reached"
    return f"{v:.{digits}g}"


def _spread(e: Entry, clock: str) -> str:
    med = e.get(f"{clock}/error/median")
    if not math.isfinite(med):
        return "–"
    return f"{med:.3g} [{e.get(f'{clock}/error/min'):.3g}–{e.get(f'{clock}/error/max'):.3g}]"


def _rank(e: Entry, clock: str) -> str:
    r = e.rank.get(clock)
    if r is None:
        return "–"
    mark = " B" if e.biased else " M" if e.not_mixed else \
        " ?" if e.unchecked and e.get("exact_truth") != 0 else ""
    return f"{r}{'=' if e.tied.get(clock) else ''}{mark}"


def note(e: Entry) -> str:
    if e.status != "complete":
        return f"{e.status}: {e.error}" if e.error else e.status
    parts = []
    said = e.results.get("verdict/note")
    if isinstance(said, str) and said:
        parts.append(said)
    elif e.biased:          # a cell written before verdicts existed
        parts.append(f"BIASED (error {e.get('bias/error_over_mc'):.3g}x its MC error, "
                     f"p={e.get('bias/p_value'):.2g})")
    if not e.has_work:
        parts.append("no cost statistic: ranked by time alone")
    elif e.get("work/capped") == 1:
        parts.append("work budget not reached within work_max_seconds: ranked by time alone")
    if e.get("exact_truth") == 0:
        parts.append("reference truth: no bias test")
    elif e.unchecked and not said:
        parts.append("too few draws and chains for a verdict: ranked after those that "
                     "passed")
    return "; ".join(parts)


HEAD = ("sampler", "error @ equal time", "rank", "error @ equal work", "rank", "s to reach",
        "work to reach", "ESS/s", "ESS/Mwork", "note")


def rows(entries: list[Entry]) -> list[tuple]:
    out = []
    for e in entries:
        out.append((e.sampler, _spread(e, "time"), _rank(e, "time"), _spread(e, "work"),
                    _rank(e, "work"), _num(e.get("time/reach_seconds/median")),
                    _num(e.get("work/reach_work/median")),
                    _ess(e, "time", "ess_per_s"), _ess(e, "work", "ess_per_munit"), note(e)))
    return out


def _ess(e: Entry, clock: str, rate: str) -> str:
    """A clock's median ESS rate, ``≤`` before it when a seed's ESS is only an upper bound
    (the batch-means fallback on batches shorter than a few autocorrelation times:
    mixlab.league.ess_stream)."""
    text = _num(e.get(f"{clock}/{rate}/median"))
    return f"≤ {text}" if e.get(f"{clock}/ess_upper") == 1 and text[0].isdigit() else text


def _by_target(entries: list[Entry]) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = {}
    for e in entries:
        out.setdefault(e.target, []).append(e)
    for group in out.values():
        group.sort(key=lambda e: (e.rank.get("work") or e.rank.get("time") or 10**6,
                                  e.rank.get("time") or 10**6, e.sampler))
    return out


def _yard(info: dict, target: str) -> str:
    """``; yardstick: ...`` when the league's targets are scored by different yardsticks."""
    yards = info.get("yardsticks") or {}
    return f"; yardstick: {yards[target]}" if len(set(yards.values())) > 1 else ""


def _stated(info: dict) -> str:
    """The league's stated error in words: the spec's number, or each target's own."""
    v = info.get("reach_error")
    return f"stated error {v:g} (every target)" if v is not None else \
        "stated error: each target's own (below)"


def _stated_words(info: dict) -> str:
    v = info.get("reach_error")
    return f"{v:g} for every target, set by the spec" if v is not None else \
        "each target's own, given under its name: the expected error of 1,000 independent " \
        "exact draws"


def _reach(info: dict, target: str) -> str:
    """``; stated error X`` of one target (the error 'to reach' is read at)."""
    v = (info.get("reach_errors") or {}).get(target)
    return "" if v is None else f"; stated error {v:g}"


def _scoring(info: dict) -> str:
    """``X s scoring (yardstick and summaries Y s, ESS Z s), `` (empty for a league whose
    cells predate these numbers)."""
    ev, ess = info.get("evaluation_seconds"), info.get("ess_seconds")
    if not ev and not ess:
        return ""
    ev, ess = float(ev or 0.0), float(ess or 0.0)
    return (f"{_seconds(ev + ess)} scoring the draws (yardstick and summaries {_seconds(ev)}, "
            f"ESS {_seconds(ess)}), ")


def _seconds(x: float) -> str:
    """Seconds to two significant figures below 10 (a quick league's 0.4 s is not 0 s)."""
    return f"{x:.2g} s" if x < 10 else f"{x:.0f} s"


def text_table(entries: list[Entry], info: dict) -> str:
    """The terminal table, one block per target."""
    lines = [f"{info['family']} league ({info['scale']}): {info['seeds']} seeds, "
             f"{info['seconds']:g} s and {info['work']:g} {info['unit']} per stream; "
             f"yardstick: {info['yardstick']}; {_stated(info)}",
             f"{len(entries)} cells, {_seconds(info['sampling_seconds'])} of sampling, "
             f"{_scoring(info)}{_seconds(info['wall_seconds'])} of wall time "
             + (f"on the Dask cluster at {info['scheduler']}" if info.get("scheduler")
                else f"with -j {info['workers']}"),
             "rank marks: B biased, M not mixed (chains disagree or the error still falls), "
             "? no verdict; = a tie (docs/league.md)"]
    for target, group in _by_target(entries).items():
        lines.append("")
        lines.append(f"{target}  (truth: {info['truth'].get(target, '?')}{_yard(info, target)}"
                     f"{_reach(info, target)})")
        table = [HEAD] + rows(group)
        widths = [max(len(str(r[i])) for r in table) for i in range(len(HEAD) - 1)]
        for r in table:
            lines.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths))
                         + "  " + r[-1])
    return "\n".join(lines) + "\n"


def markdown(entries: list[Entry], info: dict) -> str:
    out = [f"# {info['family']} league ({info['scale']})", "",
           f"{info['seeds']} seeds per cell; each stream gets {info['seconds']:g} s of sampling "
           f"(equal time) or {info['work']:g} {info['unit']} (equal work, all chains); errors "
           f"are {info['yardstick']} as median [min–max] over seeds; 'to reach' is the median "
           f"cost to reach the stated error ({_stated_words(info)}); rank `n=` is a tie "
           f"(overlapping seed ranges), `B` a biased sampler, `M` one whose chains have not "
           f"mixed, `?` one without a verdict (docs/league.md).", ""]
    for target, group in _by_target(entries).items():
        out += [f"## {target}", "", f"truth: {info['truth'].get(target, '?')}"
                f"{_yard(info, target)}{_reach(info, target)}", "",
                "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
        out += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |"
                for r in rows(group)]
        out.append("")
    return "\n".join(out)


def csv_text(entries: list[Entry], fractions: list[float]) -> str:
    head = ["target", "sampler", "method", "status", "error", "has_work", "bias_flag",
            "bias_p_value", "bias_error_over_mc"]
    for clock in ("time", "work"):
        head += [f"{clock}_error_median", f"{clock}_error_min", f"{clock}_error_max",
                 f"{clock}_rank", f"{clock}_tied"]
        head += [f"{clock}_error@{f:g}_median" for f in fractions]
    head += ["reach_error", "time_reach_seconds", "time_ess_per_s", "work_reach_work",
             "work_ess_per_munit", "note", "verdict", "verdict_clock", "verdict_note", "rhat",
             "rhat_threshold", "budget_needed", "time_ess_upper_bound",
             "work_ess_upper_bound"]
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(head)
    for e in entries:
        row = [e.target, e.sampler, e.results.get("method", ""), e.status, e.error,
               int(e.has_work), int(e.get("bias/flag")) if math.isfinite(e.get("bias/flag"))
               else "", _cell(e.get("bias/p_value")), _cell(e.get("bias/error_over_mc"))]
        for clock in ("time", "work"):
            row += [_cell(e.get(f"{clock}/error/{s}")) for s in ("median", "min", "max")]
            row += ["" if e.rank.get(clock) is None else e.rank[clock],
                    int(bool(e.tied.get(clock)))]
            row += [_cell(e.get(f"{clock}/error@{f:g}/median")) for f in fractions]
        row += [_cell(e.get("reach_error")), _cell(e.get("time/reach_seconds/median")),
                _cell(e.get("time/ess_per_s/median")),
                _cell(e.get("work/reach_work/median")),
                _cell(e.get("work/ess_per_munit/median")), note(e), e.verdict,
                _text(e.results.get("verdict/clock")), _text(e.results.get("verdict/note")),
                _cell(e.get("verdict/rhat")), _cell(e.get("verdict/rhat_threshold")),
                _cell(e.get("verdict/budget_needed")),
                *[_flag(e.get(f"{clock}/ess_upper")) for clock in ("time", "work")]]
        w.writerow(row)
    return buf.getvalue()


def _flag(v: float) -> str:
    """A 0/1 result as ``0``/``1`` (empty when the cell has none, or anything else)."""
    return "1" if v == 1 else "0" if v == 0 else ""


def _text(v) -> str:
    return v if isinstance(v, str) else ""


def _cell(v: float) -> str:
    return "" if v is None or math.isnan(v) else repr(float(v))
