"""A target family from a plugin: the example package's Potts family (examples/plugin) through
the CLI in subprocesses (mixlab plugins, a run of its samplers, mixlab diagnose, mixlab
league with exact-truth bias verdicts), its exact enumeration against an independent brute-force
sum and its samplers' long-run frequencies, and bad family registrations refused with one
paragraph naming the plugin and the field (exit 2)."""

import csv
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import ON_EXAMPLE_SITE, REPO, invoke_mixlab, mixlab_env, run_mixlab, show_run

sys.path.insert(0, str(REPO / "examples" / "plugin" / "src"))

from mixlab_example_samplers import potts_family as pf  # noqa: E402
from mixlab_example_samplers import potts_samplers as ps  # noqa: E402

SPEC = REPO / "examples" / "plugin" / "specs" / "potts.yaml"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def one_paragraph(text: str) -> str:
    err = text.strip()
    assert "Traceback" not in err, err
    assert err.startswith("Error:") and "\n\n" not in err, err
    return err


# -- the exact truth and the samplers, in this process ---------------------------------------------

def small_model(seed=3, n=5, q=3):
    rng = np.random.default_rng(seed)
    edges = np.array([(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (1, 3)])
    return pf.PottsTarget(q, n, edges, rng.uniform(-1.0, 1.5, len(edges)),
                          rng.normal(0, 0.7, (n, q)))


def brute_force_marginals(t):
    """P(x_i = k) by a plain sum over every state, one at a time (no numpy broadcasting)."""
    Z, m = 0.0, np.zeros((t.n, t.q))
    for x in itertools.product(range(t.q), repeat=t.n):
        w = sum(J for (i, j), J in zip(t.edges.tolist(), t.J.tolist()) if x[i] == x[j])
        w = math.exp(w + sum(t.h[i, x[i]] for i in range(t.n)))
        Z += w
        for i in range(t.n):
            m[i, x[i]] += w
    return m / Z


def test_exact_marginals_equal_a_brute_force_sum():
    t = small_model()
    np.testing.assert_allclose(pf.exact_marginals(t), brute_force_marginals(t), atol=1e-12)
    # a league target's model (ring of 12, built from its definition) on its first 6 sites
    # would need 3^12 terms here; its enumeration is checked through the samplers below
    x = np.array([[[0, 2, 1, 1, 0]]])
    assert pf.one_hot(t, x).reshape(5, 3).argmax(1).tolist() == [0, 2, 1, 1, 0]


def long_run_z(sampler, t, steps=300, burn=50, seed=0):
    """z-scores of each P(x_i = k) from the chains' frequencies against the exact marginals,
    with the MCSE from the spread of the independent chains: (n q,)."""
    rng = np.random.default_rng(seed)
    state = sampler.init(rng)
    freq = np.zeros((sampler.chains, t.n * t.q))
    for s in range(steps):
        state, draws, stats = sampler.step(state, rng)
        assert np.all(stats["site_updates"] == t.n)
        if s >= burn:
            freq += pf.one_hot(t, draws["samples"][:, None])[:, 0]
    freq /= steps - burn
    p = pf.exact_marginals(t).ravel()
    se = freq.std(axis=0, ddof=1) / np.sqrt(sampler.chains)
    return (freq.mean(axis=0) - p) / np.maximum(se, 1e-3)


# Σ z² over the 36 features (24 independent: each site's q indicators sum to 1) is about 24
# for an exact sampler (13 to 46 over seeds); couplings 10% off give 88 to 600, half the
# couplings (biased-gibbs) several thousand
CHI2_MAX = 70


@pytest.mark.parametrize("make", [ps.Gibbs, ps.SwendsenWang])
def test_samplers_frequencies_match_the_enumeration(make):
    t = pf.build(pf.TARGETS["grid3x4-q3"])
    z = long_run_z(make(t, 128), t, steps=400)
    assert np.sum(z ** 2) < CHI2_MAX, z


def test_the_wrong_on_purpose_sampler_is_far_from_the_enumeration():
    t = pf.build(pf.TARGETS["grid3x4-q3"])
    z = long_run_z(ps.Gibbs(t, 128, beta=0.5), t, steps=400)
    assert np.sum(z ** 2) > 10 * CHI2_MAX, z


def test_swendsen_wang_with_fields_on_a_small_model_matches_the_brute_force_joint():
    t = small_model()
    t = pf.PottsTarget(t.q, t.n, t.edges, np.abs(t.J), t.h)        # J >= 0 for the clusters
    states, p = pf.enumerate_states(t)
    rng = np.random.default_rng(1)
    s = ps.SwendsenWang(t, 400)
    state, counts = s.init(rng), np.zeros(len(p))
    for step in range(120):
        state, draws, _ = s.step(state, rng)
        if step >= 20:
            codes = (draws["samples"].astype(np.int64) * t.q ** np.arange(t.n)).sum(1)
            counts += np.bincount(codes, minlength=len(p))
    tv = 0.5 * np.abs(counts / counts.sum() - p).sum()
    assert tv < 0.03, tv            # 40,000 draws over 243 states: about 0.015 for exact draws


# -- through the CLI, with the example package installed ------------------------------------------

@ON_EXAMPLE_SITE
def test_mixlab_plugins_lists_the_family_and_prints_its_committed_page(example_site):
    env = mixlab_env(example_site)
    r = run_mixlab("plugins", env=env)
    assert r.returncode == 0, r.stderr
    assert "families from plugins" in r.stdout
    assert "potts                  plugin mixlab_example_samplers: site_updates, league " \
           "targets" in r.stdout, r.stdout
    for name in ("gibbs", "swendsen-wang", "biased-gibbs"):
        assert f"potts/{name}" in r.stdout
    inv = json.loads(run_mixlab("plugins", "--json", env=env).stdout)
    assert inv["families"]["potts"]["cost"] == "site_updates"
    assert inv["families"]["potts"]["source"]["module"] == \
        "mixlab_example_samplers.potts_family"
    r = run_mixlab("plugins", "--markdown", "potts", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (REPO / "docs" / "plugins" / "potts.md").read_text(), \
        "docs/plugins/potts.md is out of date: mixlab plugins --markdown potts > it"


@ON_EXAMPLE_SITE
def test_a_spec_runs_the_family_samplers_and_diagnose_reads_their_summaries(tmp_path,
                                                                          example_site):
    env = mixlab_env(example_site, MIXLAB_DATA_DIR=tmp_path / "data")
    out = tmp_path / "run"
    r = run_mixlab("run", SPEC, "budget.seconds=null", "budget.draws=400", "--out", out,
                   "--quiet", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    shown = json.loads(show_run(out, "--json").stdout)
    assert shown["status"] == "complete"
    res = shown["results"]
    assert {res[f"draws/{s}"] for s in ("gibbs", "swendsen-wang", "biased-gibbs")} == {400}
    assert res["work/gibbs"] == 400 * 10 * 12          # draws x chains x sites
    # 4,000 draws: the exact samplers within the stated error of 1,000 exact draws, the
    # biased one beyond it
    assert res["error/gibbs"] < res["reach_error"] and res["error/swendsen-wang"] < \
        res["reach_error"] < res["error/biased-gibbs"], res
    assert list((out / "figures").glob("league.sample_error*.png"))
    r = run_mixlab("diagnose", out, "--json", env=env)
    assert r.returncode == 0, r.stderr
    rows = {(row["stream"], row["statistic"]) for row in json.loads(r.stdout)}
    assert rows == {(s, k) for s in ("gibbs", "swendsen-wang", "biased-gibbs")
                    for k in ("energy", "agreement", "share0")}


@ON_EXAMPLE_SITE
def test_the_league_of_the_plugin_family_ranks_with_exact_truth_bias_verdicts(tmp_path,
                                                                            example_site):
    env = mixlab_env(example_site, MIXLAB_DATA_DIR=tmp_path / "data")
    out = tmp_path / "league"
    r = run_mixlab("league", "potts", "--targets", "grid3x4-q3", "seconds=0.4", "work=8e4",
                   "seeds=2", "--out", out, "--quiet", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = {row["sampler"]: row for row in csv.DictReader((out / "league.csv").open())}
    assert {s: row["bias_flag"] for s, row in rows.items()} == {
        "gibbs": "0", "swendsen-wang": "0", "biased-gibbs": "1"}
    assert {s: row["status"] for s, row in rows.items()} == dict.fromkeys(rows, "complete")
    assert {rows["biased-gibbs"]["time_rank"], rows["biased-gibbs"]["work_rank"]} == {"3"}
    info = json.loads((out / "league.json").read_text())
    assert info["family"] == "potts" and info["unit"] == "site_updates"
    assert info["truth"]["grid3x4-q3"].startswith("exact single-site marginals")
    for d in info["cells"]:
        res = json.loads(show_run(Path(d), "--json").stdout)["results"]
        assert int(res["exact_truth"]) == 1 and res["unit"] == "site_updates"
    assert rows["biased-gibbs"]["verdict"] == "biased"
    assert {rows[s]["verdict"] for s in ("gibbs", "swendsen-wang")} <= {"ok", "not mixed"}
    assert "biased at" in r.stdout


# -- a family from a one-file plugin, and bad registrations ---------------------------------------

COIN = '''
import numpy as np
from mixlab.api import DrawKey, Family, LeagueTargets, register_family, sampler

class Coins:
    """n independent coins with P(heads) = p: exact draws."""
    def __init__(self, p, chains):
        self.p, self.chains = np.asarray(p), chains
    def init(self, rng):
        return {{"x": np.zeros((self.chains, self.p.size), bool)}}
    def step(self, state, rng):
        x = rng.random((self.chains, self.p.size)) < self.p
        return {{"x": x}}, {{"samples": x}}, {{"flips": np.full(self.chains, float(self.p.size))}}

register_family(Family(
    name={name!r}, target="an array p (n,) of probabilities", {draws}
    required=("samples",), step="every coin flipped once", {cost}
    cost_help="coins flipped", summaries="`heads`", exact="p itself",
    summarize=lambda p: lambda block: {{"heads": block["samples"].mean(-1)}},
    league=LeagueTargets(definitions=lambda: {{"three": {{"p0": 0.2, "p1": 0.5, "p2": 0.9}}}},
                         build=lambda d: np.array([d["p0"], d["p1"], d["p2"]]),
                         truth=lambda p: p)))

@sampler({name!r}, "exact")
def make(target, params, chains):
    return Coins(target, chains)
'''
DRAWS = 'draws=(DrawKey("samples", "(C, n)", lambda p: (p.size,), "b", False, "the coins"),),'
COST = 'cost="flips",'


def test_a_one_file_plugin_family_runs_its_league_with_plugin(tmp_path):
    coin = write(tmp_path / "coins.py", COIN.format(name="coins", draws=DRAWS, cost=COST))
    env = mixlab_env(MIXLAB_DATA_DIR=tmp_path / "data")
    r = run_mixlab("league", "coins", "--plugin", coin, "seconds=0.2", "work=2e4", "seeds=2",
                   "chains=4", "--out", tmp_path / "lg", "--quiet", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    info = json.loads((tmp_path / "lg" / "league.json").read_text())
    [cell] = info["cells"]
    res = json.loads(show_run(Path(cell), "--json").stdout)["results"]
    assert int(res["bias/flag"]) == 0 and res["unit"] == "flips"
    assert res["time/error/median"] < 0.05
    # without the plugin the family is unknown: a usage error listing the families
    r = run_mixlab("league", "coins", env=env, cwd=tmp_path)
    assert r.returncode == 2
    assert "unknown family 'coins'; families: rbm, spinglass, logistic, mrf" in \
        one_paragraph(r.stderr)


BAD = {
    "missing cost": (dict(name="coinz", draws=DRAWS, cost=""),
                     "family 'coinz': field 'cost' must name the per-chain statistic"),
    "missing draws": (dict(name="coinz", draws="", cost=COST),
                      "family 'coinz': field 'draws' must be a non-empty tuple of DrawKey"),
    "built-in name": (dict(name="spinglass", draws=DRAWS, cost=COST),
                      "family 'spinglass' is already registered by mixlab (a built-in family)"),
    "bad name": (dict(name="Coins!", draws=DRAWS, cost=COST),
                 "field 'name' must be a lower-case name"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_family_registration_is_one_paragraph_naming_plugin_and_field(tmp_path, case,
                                                                            clean_registry):
    from mixlab.plugins import registry

    fields, msg = BAD[case]
    bad = write(tmp_path / "bad_family.py", COIN.format(**fields))
    r = run_mixlab("plugins", bad)
    assert r.returncode == 2, r.stderr
    err = one_paragraph(r.stderr)
    assert str(bad) in err and "registered something invalid" in err and msg in err, err
    # in this process: nothing of the plugin stays registered, the built-ins are untouched
    before = dict(registry.FAMILIES)
    spinglass = dict(registry.samplers_for("spinglass"))
    r = invoke_mixlab("plugins", bad)
    assert r.exit_code == 2 and msg in r.output
    assert registry.FAMILIES == before and "coinz" not in registry.FAMILIES
    assert registry.samplers_for("spinglass").keys() == spinglass.keys()


def test_two_plugins_cannot_register_the_same_family(tmp_path, clean_registry):
    one = write(tmp_path / "one.py", COIN.format(name="coins", draws=DRAWS, cost=COST))
    two = write(tmp_path / "two.py", COIN.format(name="coins", draws=DRAWS, cost=COST))
    r = run_mixlab("plugins", one, two)
    assert r.returncode == 2
    err = one_paragraph(r.stderr)
    assert str(two) in err and "family 'coins' is already registered by plugin module " \
        "mixlab_plugin_one" in err, err


def test_a_plugin_failing_after_registering_its_family_leaves_no_trace(tmp_path,
                                                                      clean_registry):
    from mixlab.plugins import registry
    from mixlab.plugins.families import all_families

    code = COIN.format(name="coinz", draws=DRAWS, cost=COST) + "\nraise RuntimeError('boom')\n"
    bad = write(tmp_path / "late.py", code)
    before = dict(registry.FAMILIES)
    r = invoke_mixlab("plugins", bad)
    assert r.exit_code == 1 and "RuntimeError: boom" in r.output
    assert registry.FAMILIES == before and "coinz" not in all_families()
    assert "coinz" not in registry.snapshot()["sampler"]
    # the same family registers cleanly afterwards (its name was given back)
    good = write(tmp_path / "good.py", COIN.format(name="coinz", draws=DRAWS, cost=COST))
    r = invoke_mixlab("plugins", good)
    assert r.exit_code == 0, r.output
    assert "coinz/exact" in r.output and "coinz" in all_families()


FLOATY = '''
@sampler("coins", "floaty")
def make_floaty(target, params, chains):
    class Floaty(Coins):
        def step(self, state, rng):
            state, draws, stats = Coins.step(self, state, rng)
            return state, {"samples": draws["samples"].astype(float)}, stats
    return Floaty(target, chains)
'''

RUN = """
experiment: league.sample
plugins: [./coins.py]
family: coins
target: {target}
samplers: {{{sampler}: {{}}}}
chains: 4
budget: {{draws: 50}}
"""


def test_a_plugin_family_declares_the_draws_its_samplers_are_held_to(tmp_path,
                                                                   clean_registry):
    write(tmp_path / "coins.py", COIN.format(name="coins", draws=DRAWS, cost=COST) + FLOATY)
    # the family's draws table: a float 'samples' is refused at the stream's first step
    spec = write(tmp_path / "bad.yaml", RUN.format(target="three", sampler="floaty"))
    r = invoke_mixlab("run", spec, "--out", tmp_path / "bad", "--quiet")
    assert r.exit_code == 1
    assert "draw 'samples' has dtype float64; the coins family's 'samples' is bool" in r.output
    # the spec names one of the family's league targets (exit 2 before any work)
    spec = write(tmp_path / "typo.yaml", RUN.format(target="thre", sampler="exact"))
    r = invoke_mixlab("run", spec, "--out", tmp_path / "typo", "--quiet")
    assert r.exit_code == 2 and "spec key 'target': unknown target 'thre'" in r.output
    assert not (tmp_path / "typo").exists()
    spec = write(tmp_path / "good.yaml", RUN.format(target="three", sampler="exact"))
    r = invoke_mixlab("run", spec, "--out", tmp_path / "good", "--quiet")
    assert r.exit_code == 0, r.output
    res = json.loads(show_run(tmp_path / "good", "--json").stdout)["results"]
    assert res["draws/exact"] == 50 and res["work/exact"] == 50 * 4 * 3


def test_restoring_a_snapshot_brings_back_a_family_and_its_samplers(clean_registry):
    """The registries' transactions (mixlab.plugins.registrations): a snapshot taken with a
    plugin family holds its sampler table, and restoring one taken before removes both."""
    from mixlab.plugins import registrations as reg

    before = reg.snapshot()
    reg.add_family("zz", "a test family", object(), "test")
    reg._SAMPLERS["zz"]["s"] = "kind"
    after = reg.snapshot()
    reg.restore(before)
    assert "zz" not in reg.FAMILIES and "zz" not in reg._SAMPLERS and "zz" not in reg._FAMILIES
    reg.restore(after)
    assert reg._SAMPLERS["zz"] == {"s": "kind"} and "zz" in reg.FAMILIES
    reg.restore(before)
