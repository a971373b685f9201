"""The per-family plugin-author pages are generated from mixlab.plugins.families and the registry:
the committed docs equal the generator's output, so they cannot go stale."""

import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.plugins import registry
from mixlab.plugins.discovery import PLUGIN_MODULES
from mixlab.plugins.families import FAMILY_INFO
from mixlab.plugins.family_pages import families_table, family_page, with_table

from .conftest import REPO


@pytest.mark.parametrize("name", sorted(FAMILY_INFO))
def test_committed_family_page_is_the_generated_one(name):
    committed = (REPO / "docs" / "plugins" / f"{name}.md").read_text()
    assert committed == family_page(name), (
        f"docs/plugins/{name}.md is out of date: run 'python -m mixlab.plugins.family_pages'")


def test_plugins_md_holds_the_generated_families_table():
    text = (REPO / "docs" / "plugins.md").read_text()
    assert with_table(text) == text, "run 'python -m mixlab.plugins.family_pages'"
    assert families_table() in text


@pytest.mark.parametrize("name", sorted(FAMILY_INFO))
def test_page_names_the_cost_statistic_and_every_builtin_sampler(name):
    page = family_page(name)
    assert f'`stats["{FAMILY_INFO[name].cost}"]`' in page
    for method, kind in registry.samplers_for(name).items():
        if kind.module in PLUGIN_MODULES:       # mixlab's own (not the calibration set's)
            assert f"| `{method}` |" in page


def test_cli_prints_a_family_page():
    r = CliRunner().invoke(cli, ["plugins", "--markdown", "mrf"])
    assert r.exit_code == 0, r.output
    assert r.output == family_page("mrf")
    r = CliRunner().invoke(cli, ["plugins", "--markdown", "nope"])
    assert r.exit_code == 2 and "rbm, spinglass, logistic, mrf" in r.output


def test_plugins_json_lists_each_familys_cost_statistic():
    import json

    r = CliRunner().invoke(cli, ["plugins", "--json"])
    assert r.exit_code == 0, r.output
    fams = json.loads(r.output)["families"]
    # mixlab's own families (a plugin imported by another test may have added one)
    assert {n: fams[n]["cost"] for n in FAMILY_INFO} == {
        n: f.cost for n, f in FAMILY_INFO.items()}
    assert fams["logistic"]["draws"]["samples"] == {"shape": "(C, d)", "dtypes": ["f"],
                                                    "finite": True}
