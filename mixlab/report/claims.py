"""The papers' claims as data: ``claims/<paper>.yaml``, read by the figures page (beside, not
inside, ``experiments/<paper>/``, whose YAML files are all specs).

Each claim names the figure run that tests it (a ``make figures`` target: its run is
``runs/<scale>/<figure>``), the paper's number as the paper states it, and, when a run's
results hold mixlab's number, how to read it and the rule that gives the verdict::

    paper: Breuleux, Bengio & Vincent (2011)
    claims:
      - claim: rates-FPCD ends above the training-set line
        figure: fig-rates-fpcd-2
        paper: "−78.5 vs −80.0"
        measure:                       # name: a results key of the figure's run, or
          rates-FPCD: isl_final/rates-fpcd
          training set: isl_train_set
          worst KS: {key: "tstat/*/ks_stat", of: max}   # a pattern and max or min over it,
                                                        # optionally {run: other-figure}
          ratio: {key: "eps=0.05/samples", over: "eps=0/samples"}   # one key over another
        rule: {greater: [rates-FPCD, training set]}
      - claim: Gibbs' ISL falls over time
        figure: fig-rates-fpcd-3-right
        paper: "falls"
        note: the ISL over time is only in the run's isl curve, not a results key

Rules (an operand is a measure's name or a number): ``greater: [a, b]`` (a > b), ``less``,
``at_least``, ``at_most``, ``within: [a, b, tolerance]`` (|a − b| ≤ tolerance); ``rule`` may
be a list of such rules, all of which must hold. A measure's ``over`` names a second results
key of the same run: the value is the first number divided by the second. A claim without
``measure``, or whose number the run gives as text, is shown as "not measured by a run" with
its ``note`` (why no run holds the number); one whose run lacks the key likewise, saying so;
one whose run is missing or incomplete as "run not available". Nothing here is evaluated as code.
"""

from __future__ import annotations

import fnmatch
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import SpecError
from ..runfile import confined
from ..runfile.store import RUN_FILE, RunReader

CLAIMS_BYTES = 1 << 20
RULES = {"greater": 2, "less": 2, "at_least": 2, "at_most": 2, "within": 3}
MEASURE_KEYS = {"key", "of", "over", "run"}

REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"
NOT_MEASURED = "not measured by a run"
NO_RUN = "run not available"


@dataclass
class Claim:
    paper_name: str
    claim: str
    figure: str
    paper: str
    measure: dict = field(default_factory=dict)
    rules: list[dict] = field(default_factory=list)
    note: str = ""


@dataclass
class Outcome:
    """A claim with mixlab's numbers (``[(name, value text)]``) and the verdict."""
    claim: Claim
    numbers: list[tuple[str, str]]
    verdict: str
    why: str = ""


def _fail(path: Path, where: str, what: str) -> SpecError:
    return SpecError(f"{path}: {where}: {what} (format: see mixlab/report/claims.py)")


def load(path: Path) -> tuple[str, list[Claim]]:
    """``(paper, claims)`` of one claims file, checked (a SpecError names what is wrong)."""
    raw = yaml.safe_load(confined.read_text(path.parent, path.name, limit=CLAIMS_BYTES))
    if not isinstance(raw, dict) or not isinstance(raw.get("claims"), list):
        raise _fail(path, "top level", "needs 'paper' and a list 'claims'")
    paper = str(raw.get("paper", path.parent.name))
    out = []
    for i, c in enumerate(raw["claims"]):
        where = f"claims[{i}]"
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) for k in
                                               ("claim", "figure", "paper")):
            raise _fail(path, where, "needs the strings 'claim', 'figure' and 'paper'")
        measure, rule = c.get("measure") or {}, c.get("rule") or {}
        rules = rule if isinstance(rule, list) else [rule] if rule else []
        if not isinstance(measure, dict) or not all(isinstance(r, dict) for r in rules):
            raise _fail(path, where, "'measure' is a mapping, 'rule' a mapping or a list of them")
        if not isinstance(c.get("note", ""), str):
            raise _fail(path, where, "'note' is a string (why no run holds the number)")
        for name, spec in measure.items():
            _check_measure(path, f"{where}.measure.{name}", spec)
        if measure and not rules:
            raise _fail(path, where, f"a 'measure' needs a 'rule': one of {', '.join(RULES)}")
        for r in rules:
            if len(r) != 1 or next(iter(r)) not in RULES:
                raise _fail(path, where, f"'rule' is one of {', '.join(RULES)}")
            (name, args), = r.items()
            if not isinstance(args, list) or len(args) != RULES[name]:
                raise _fail(path, where, f"rule '{name}' takes {RULES[name]} operands")
            for a in args:
                if not isinstance(a, (int, float)) and a not in measure:
                    raise _fail(path, where, f"operand '{a}' is neither a number nor a "
                                             f"measure's name")
        out.append(Claim(paper, c["claim"], c["figure"], c["paper"], measure, rules,
                         c.get("note", "")))
    return paper, out


def _check_measure(path: Path, where: str, spec) -> None:
    """A measure is a results key, or a mapping of ``key`` with ``of``, ``over``, ``run``."""
    if isinstance(spec, str):
        return
    if not isinstance(spec, dict) or not isinstance(spec.get("key"), str):
        raise _fail(path, where, "is a results key or a mapping with a string 'key'")
    if set(spec) - MEASURE_KEYS:
        raise _fail(path, where, f"unknown {', '.join(sorted(set(spec) - MEASURE_KEYS))} "
                                 f"(keys: {', '.join(sorted(MEASURE_KEYS))})")
    if "of" in spec and spec["of"] not in ("max", "min"):
        raise _fail(path, where, "'of' is max or min")
    for k in ("over", "run"):
        if k in spec and not isinstance(spec[k], str):
            raise _fail(path, where, f"'{k}' is a string")


def find(claims_dir: Path) -> list[Path]:
    """Every ``<paper>.yaml`` in ``claims_dir``, in name order."""
    return [claims_dir / n for n in confined.list_dir(claims_dir)
            if n.endswith(".yaml") and os.path.isfile(claims_dir / n)]


class NoRun(LookupError):
    """The claim's run is missing, incomplete or refused."""


class Results:
    """The results of the figure runs under ``runs_dir``, read once each (confined)."""

    def __init__(self, runs_dir: Path):
        self.runs_dir = runs_dir
        self._cache: dict[str, dict | str] = {}

    def of(self, figure: str) -> dict | str:
        """The run's results, or why there are none."""
        if figure not in self._cache:
            try:
                d = confined.check(self.runs_dir, figure, directory=True)
                if not confined.exists(d, RUN_FILE):
                    self._cache[figure] = f"no run {d} (run 'make {figure}')"
                else:
                    with RunReader(d) as r:
                        self._cache[figure] = (r.results() if r.status == "complete" else
                                               f"run {d} is {r.status}")
            except Exception as exc:  # noqa: BLE001  (a refused run: the page says why)
                self._cache[figure] = str(exc)
        return self._cache[figure]


def _number(res: dict, key: str) -> float | str:
    """The result ``key`` (a float, or the run's string), or raise LookupError(why)."""
    if key not in res:
        raise LookupError(f"the run has no result '{key}'")
    v = res[key]
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def _read(spec, figure: str, results: Results) -> float | str:
    """One measure's value (a float or a run's string), or raise LookupError(why)."""
    if isinstance(spec, str):
        spec = {"key": spec}
    res = results.of(str(spec.get("run", figure)))
    if isinstance(res, str):
        raise NoRun(res)
    key = str(spec.get("key"))
    if "of" not in spec:
        value = _number(res, key)
    else:
        vals = [float(v) for k, v in res.items() if fnmatch.fnmatchcase(k, key)
                and isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not vals:
            raise LookupError(f"the run has no numeric result matching '{key}'")
        value = max(vals) if spec["of"] == "max" else min(vals)
    if "over" not in spec:
        return value
    below = _number(res, str(spec["over"]))
    if not isinstance(value, float) or not isinstance(below, float) or below == 0:
        raise LookupError(f"'{key}' over '{spec['over']}' is not a ratio of two numbers")
    return value / below


def _holds(rule: str, args: list, values: dict) -> tuple[bool | None, str]:
    """Whether one rule holds (None: an operand is not a finite number), and how it reads."""
    ops = [values[a] if isinstance(a, str) else float(a) for a in args]
    text = {"greater": ">", "less": "<", "at_least": "≥", "at_most": "≤", "within": "≈"}[rule]
    why = f"{args[0]} {text} {args[1]}" + (f" (± {args[2]})" if rule == "within" else "")
    if not all(isinstance(o, float) and math.isfinite(o) for o in ops):
        return None, why
    a, b = ops[0], ops[1]
    return {"greater": a > b, "less": a < b, "at_least": a >= b, "at_most": a <= b,
            "within": abs(a - b) <= (ops[2] if len(ops) > 2 else 0)}[rule], why


def judge(claim: Claim, results: Results) -> Outcome:
    """mixlab's numbers for ``claim`` from its run(s), and the verdict of its rules."""
    if not claim.measure:
        return Outcome(claim, [], NOT_MEASURED, claim.note)
    values, numbers = {}, []
    for name, spec in claim.measure.items():
        try:
            v = _read(spec, claim.figure, results)
        except LookupError as exc:
            return Outcome(claim, numbers, NO_RUN if isinstance(exc, NoRun) else NOT_MEASURED,
                           str(exc.args[0]))
        values[name] = v
        numbers.append((name, f"{v:.4g}" if isinstance(v, float) else v))
    held, whys = [], []
    for r in claim.rules:
        (rule, args), = r.items()
        ok, why = _holds(rule, args, values)
        if ok is None:
            text = next(n for n, v in values.items() if not isinstance(v, float)) if any(
                not isinstance(v, float) for v in values.values()) else None
            return Outcome(claim, numbers, NOT_MEASURED, claim.note or (
                f"the run gives '{text}' as text, not a number" if text
                else "a value is not a finite number"))
        held.append(ok)
        whys.append(why if ok else f"{why} fails")
    return Outcome(claim, numbers, REPRODUCED if all(held) else NOT_REPRODUCED, "; ".join(whys))
