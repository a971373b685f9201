"""The league's calibration sets: samplers whose correctness is known, to measure the verdicts.

For every family with exact truth (spin glass, MRF, RBM), a module here registers correct
variants (other scan orders, partial sweeps) and samplers that are wrong on purpose (tempered,
a sign error, a dropped term), and lists its calibration set: label -> (sampler entry,
``expected``: ``correct`` or ``wrong``). The modules are not among mixlab's plugin groups
(mixlab.plugins.discovery.BUILTIN_GROUPS): they are imported only by a league run with ``calibration:
true`` (``mixlab league FAMILY --calibrate``, or the built-in specs
``league/<family>-calibration``), so their samplers appear in no ordinary league and not in
``mixlab plugins``. Such a league runs the set instead of the family's registered samplers
and writes ``calibration.md`` and ``calibration.csv``: per target, the verdicts of the
correct samplers (any ``biased`` is a false alarm) and of the wrong ones (any not ``biased``
is a miss).
"""

from __future__ import annotations

import csv
import importlib
import io

MODULES = {"spinglass": "mixlab.league.calibration.spinglass",
           "mrf": "mixlab.league.calibration.mrf",
           "rbm": "mixlab.league.calibration.rbm"}
PREFIX = "mixlab.league.calibration"


def families() -> tuple[str, ...]:
    return tuple(MODULES)


def load(family: str):
    """Import (registering its samplers) and return the family's calibration module."""
    from ...errors import SpecError

    if family not in MODULES:
        raise SpecError(f"the {family} league has no calibration set (no exact truth); "
                        f"families with one: {', '.join(MODULES)}", "calibration")
    return importlib.import_module(MODULES[family])


def is_calibration_sampler(kind) -> bool:
    """Whether a registered sampler comes from a calibration module (left out of ordinary
    leagues)."""
    return str(getattr(kind, "module", "")).startswith(PREFIX)


def expected(family: str, label: str, entry: dict, definition: dict | None = None) -> str:
    """``correct``, ``wrong`` or ``""`` (unknown) for a sampler of a calibration league: a
    tempered calibration sampler is wrong unless ``beta`` is 1; otherwise the set's word for
    the label (if its method is the set's), else for a set entry of the same method alone.
    With the target's ``definition``, a wrong-on-purpose sampler whose change leaves that
    target's model as it is (the module's ``alters(method, definition)`` says no: flipping
    the sign of fields that are all zero) samples the target exactly there: ``correct``."""
    mod = load(family)
    method = str(entry.get("method", label))
    if method.startswith("cal-tempered"):
        word = "correct" if float(entry.get("beta", 0.9)) == 1.0 else "wrong"
    elif label in mod.SET and mod.SET[label][0]["method"] == method:
        word = mod.SET[label][1]
    else:
        word = next((w for set_entry, w in mod.SET.values() if set_entry == {"method": method}),
                    "")
    alters = getattr(mod, "alters", None)
    if word == "wrong" and definition is not None and alters is not None \
            and not alters(method, definition):
        return "correct"
    return word


HEAD = ("target", "correct", "correct ok", "correct not mixed", "correct biased (false)",
        "wrong", "wrong biased", "wrong not mixed", "wrong ok (missed)", "false alarms",
        "misses")


def summary(entries, family: str, labels: dict[str, dict],
            definitions: dict[str, dict] | None = None) -> list[tuple]:
    """One row per target (see :data:`HEAD`): counts of the verdicts of the correct and the
    wrong samplers, and the labels of the false ``biased`` and of the wrong samplers not
    found ``biased`` (with their verdicts). ``definitions``: target name -> definition, for
    :func:`expected`'s per-target word."""
    by_target: dict[str, list] = {}
    for e in entries:
        by_target.setdefault(e.target, []).append(e)
    rows = []
    for target, group in by_target.items():
        d = (definitions or {}).get(target)
        words = [expected(family, e.sampler, labels[e.sampler], d) for e in group]
        right = [e for e, w in zip(group, words) if w == "correct" and e.status == "complete"]
        wrong = [e for e, w in zip(group, words) if w == "wrong" and e.status == "complete"]
        count = lambda es, v: sum(e.verdict == v for e in es)  # noqa: E731
        rows.append((target, len(right), count(right, "ok"), count(right, "not mixed"),
                     count(right, "biased"), len(wrong), count(wrong, "biased"),
                     count(wrong, "not mixed"), count(wrong, "ok"),
                     ", ".join(e.sampler for e in right if e.biased),
                     ", ".join(f"{e.sampler} ({e.verdict or 'none'})" for e in wrong
                               if not e.biased)))
    return rows


def markdown(rows: list[tuple], family: str) -> str:
    out = [f"# {family} calibration", "",
           "Verdicts of samplers known to be correct (any `biased` is a false alarm) and "
           "known to be wrong (any verdict but `biased` is a miss), per target. A sampler "
           "wrong on purpose whose change leaves a target's model as it is (flipping the "
           "sign of zero fields) counts as correct on that target.", "",
           "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    out += ["", totals(rows, quote="`"), ""]
    return "\n".join(out)


def totals(rows: list[tuple], quote: str = "") -> str:
    """The sentence summing :func:`summary`'s rows over the targets; ``quote`` marks the
    verdicts (a backtick in Markdown)."""
    t = [sum(int(r[i]) for r in rows) for i in range(1, 9)]
    q = lambda v: f"{quote}{v}{quote}"  # noqa: E731
    return (f"All targets: {t[3]} of {t[0]} correct-sampler cells {q('biased')}; {t[5]} of "
            f"{t[4]} wrong-sampler cells {q('biased')}, {t[6]} {q('not mixed')}, {t[7]} "
            f"{q('ok')}.")


def csv_text(rows: list[tuple]) -> str:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(HEAD)
    w.writerows(rows)
    return buf.getvalue()
