"""Diagnostics against closed forms: AR(1) chains written through a real run, read back and
diagnosed. The ESS of an AR(1) process with coefficient φ is n (1-φ)/(1+φ) per chain; chains
offset from each other must give R-hat far above 1. Shuffled draws or chains mixed into each
other would break these numbers (checked on purpose below)."""

import numpy as np
import pytest

from mixlab.diagnostics import diagnose
from mixlab.diagnostics.mixing import diagnose_arrays
from mixlab.plugins import registry
from mixlab.run.context import execute
from mixlab.runfile.store import RunReader
from mixlab.spec.resolver import resolve
from mixlab.spec.schema import Param

PHI = (0.5, 0.9)
OFFSET = 10.0            # chain c of coordinate 2 is shifted by c * OFFSET


class AR1:
    """Chains of AR(1) coordinates: x_t = φ x_{t-1} + e_t, stationary start; coordinate 2 is
    coordinate 0 shifted by chain index * OFFSET (chains that disagree)."""

    def __init__(self, chains):
        self.chains = chains

    def init(self, rng):
        x = rng.standard_normal((self.chains, 2)) / np.sqrt(1 - np.square(PHI))
        return {"x": x}

    def step(self, state, rng):
        x = state["x"] * np.asarray(PHI) + rng.standard_normal((self.chains, 2))
        shifted = x[:, :1] + OFFSET * np.arange(self.chains)[:, None]
        return {"x": x}, {"samples": np.concatenate([x, shifted], axis=1)}, {}


def _summaries(block):
    s = block["samples"]
    return {"first": s[:, :, 0], "second": s[:, :, 1]}


@pytest.fixture(scope="module", autouse=True)
def ar1_experiment():
    registry.load_plugins()  # restoring must not drop mixlab's own registrations
    before = registry.snapshot()

    @registry.experiment("testdiag.ar1", schema={"chains": Param(4, int, lo=1),
                                                 "draws": Param(20000, int, lo=1),
                                                 "summaries": Param(False, bool)})
    def run(ctx):
        p = ctx.params
        ctx.stream("ar1", AR1(p["chains"]), draws=p["draws"], rng=ctx.rng("ar1"),
                   summarize=_summaries if p["summaries"] else None, block=1000)

    yield
    registry.restore(before)


def _run(tmp_path, **over):
    raw = {"experiment": "testdiag.ar1", **over}
    spec = resolve(raw, default_name="ar1")
    d, _ = execute(spec, tmp_path / "run", quiet=True, render=False)
    return d


def closed_form(phi, chains, n):
    return chains * n * (1 - phi) / (1 + phi)


def test_ar1_ess_matches_the_closed_form_and_offsets_are_caught(tmp_path):
    d = _run(tmp_path, chains=4, draws=20000)
    with RunReader(d) as run:
        rows = {r.statistic: r for r in diagnose(run)}
        x = run.stream("ar1", "samples")
        seconds = float(run.stream_attrs("ar1")["seconds"])
    assert list(rows) == ["samples[0]", "samples[1]", "samples[2]"]
    # ArviZ's bulk ESS of AR(1) chains: unbiased, spread ±5% (φ = 0.5) and ±13% (φ = 0.9)
    # over seeds at this length (measured over 10 seeds)
    assert rows["samples[0]"].ess_bulk == pytest.approx(closed_form(0.5, 4, 20000), rel=0.10)
    assert rows["samples[1]"].ess_bulk == pytest.approx(closed_form(0.9, 4, 20000), rel=0.20)
    assert rows["samples[0]"].rhat < 1.01 and rows["samples[1]"].rhat < 1.02
    assert rows["samples[2]"].rhat > 2.0            # chains 10 sd apart
    assert rows["samples[0]"].ess_per_s == pytest.approx(rows["samples[0]"].ess_bulk / seconds,
                                                         rel=1e-6)
    # the same numbers would fail if the draws were shuffled or chains interleaved
    rng = np.random.default_rng(0)
    shuffled = diagnose_arrays("s", {"a": rng.permuted(x[:, :, 1], axis=1)}, 1.0)[0]
    assert shuffled.ess_bulk > 2.5 * closed_form(0.9, 4, 20000)
    mixed = x[:, :, 2].T.reshape(4, 20000)      # (draw, chain) read as (chain, draw)
    assert diagnose_arrays("s", {"a": mixed}, 1.0)[0].rhat < 1.1


def test_summaries_are_diagnosed_instead_of_coordinates(tmp_path):
    d = _run(tmp_path, chains=3, draws=8000, summaries=True)
    with RunReader(d) as run:
        rows = diagnose(run)
    assert [r.statistic for r in rows] == ["first", "second"]
    assert rows[1].ess_bulk == pytest.approx(closed_form(0.9, 3, 8000), rel=0.25)


def test_one_chain_has_no_rhat_and_the_cli_says_why(tmp_path):
    """The command runs in this process (its table does not depend on a process of its own)."""
    from click.testing import CliRunner

    from mixlab.cli import cli

    d = _run(tmp_path, chains=1, draws=5000)
    with RunReader(d) as run:
        rows = diagnose(run)
    assert all(r.rhat is None for r in rows)
    assert rows[0].ess_bulk == pytest.approx(closed_form(0.5, 1, 5000), rel=0.2)
    r = CliRunner().invoke(cli, ["diagnose", str(d)], prog_name="mixlab")
    assert r.exit_code == 0 and r.exception is None, r.output
    assert "R-hat needs at least 2 chains" in r.stdout


def test_diagnostics_true_stores_results(tmp_path):
    d = _run(tmp_path, chains=2, draws=3000, diagnostics=True)
    with RunReader(d) as run:
        res = run.results()
        rows = diagnose(run)
    for r in rows:
        assert res[f"ess_bulk/ar1/{r.statistic}"] == pytest.approx(r.ess_bulk)
        assert res[f"ess_per_s/ar1/{r.statistic}"] == pytest.approx(r.ess_per_s)
        assert res[f"rhat/ar1/{r.statistic}"] == pytest.approx(r.rhat)
