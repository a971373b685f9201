"""YAML is parsed within bounds before any value is built (mixlab.runfile.yaml_text), and everything
mixlab stores reads back.

- an alias bomb, a self-referencing alias, deep nesting and (for stored text) a Python tag or
  a text past 1 MiB are refused with a reason, in milliseconds;
- a user's spec file may share settings with anchors: the run stores the spec written out in
  full, without anchors, and reads it back;
- a spec whose stored text would pass 1 MiB is refused before the run starts (exit 2, naming
  the key that holds the bulk), by ``--dry-run`` too; one just under it runs and reads back.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from mixlab.cli import cli
from mixlab.runfile import yaml_text
from mixlab.runfile.store import RunReader
from mixlab.runfile.yaml_text import (
    EXPANDED_NODES,
    MAX_DEPTH,
    STORED_TEXT_BYTES,
    YamlRefused,
    dump,
    load_stored,
    load_user,
)

from .variants import alias_bomb_text

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "experiments/toy/gaussian.yaml"
LOADERS = (load_stored, load_user)


@pytest.mark.parametrize("load", LOADERS)
@pytest.mark.parametrize("text, reason", [
    (alias_bomb_text(9), "expand it to more than"),          # 10^9 elements
    ("a: &x [1, *x]\n", "contain itself"),
    ("a: &x {b: {c: *x}}\n", "contain itself"),
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), f"more than {MAX_DEPTH} levels"),
    # 40 anchors, each a list of two aliases of the one before: 2^40 nodes in 1 KB
    ("".join(f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]\n" if i else "l0: &l0 [x]\n"
             for i in range(40)), "expand it to more than"),
    # shallow text, deep value: each anchor nests the one before one level deeper
    ("".join(f"d{i}: &d{i} [*d{i - 1}]\n" if i else "d0: &d0 [x]\n"
             for i in range(MAX_DEPTH + 2)), f"more than {MAX_DEPTH} levels"),
])
def test_expansion_is_refused_before_it_happens(load, text, reason):
    with pytest.raises(YamlRefused, match=reason):
        load(text)


def test_stored_text_refuses_tags_and_size_that_a_user_text_may_hold():
    for text in ("a: !!binary aGVsbG8=\n", "a: !!set {x}\n",
                 "a: !!python/object/apply:os.system ['true']\n", "a: !custom 1\n"):
        with pytest.raises(YamlRefused, match="tag"):
            load_stored(text)
    assert load_user("a: !!binary aGVsbG8=\n") == {"a": b"hello"}
    big = "b: " + "x" * STORED_TEXT_BYTES + "\n"
    with pytest.raises(YamlRefused, match="bytes of YAML mixlab stores"):
        load_stored(big)
    # multi-byte characters count as bytes: 2^19 + 1 two-byte characters pass 1 MiB
    with pytest.raises(YamlRefused, match="bytes"):
        load_stored("b: " + "é" * (STORED_TEXT_BYTES // 2 + 1) + "\n")
    assert len(load_user(big)["b"]) == STORED_TEXT_BYTES


def test_aliases_within_the_bounds_read_as_their_expanded_value():
    text = "base: &b {step: 0.5, n: 3}\none: *b\ntwo: {<<: *b, n: 4}\n"
    want = {"base": {"step": 0.5, "n": 3}, "one": {"step": 0.5, "n": 3},
            "two": {"step": 0.5, "n": 4}}
    assert load_user(text) == want and load_stored(text) == want
    # exactly at the node budget: a list of EXPANDED_NODES - 1 aliases of one scalar
    at_budget = "a: &a x\nb: [" + ", ".join(["*a"] * (EXPANDED_NODES - 6)) + "]\n"
    assert len(load_user(at_budget)["b"]) == EXPANDED_NODES - 6
    with pytest.raises(YamlRefused):
        load_user(at_budget.replace("[", "[*a, *a, ", 1))


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 6 else 4)
    if kind == 0:
        return rng.choice([None, True, False, 0, -3, 1.5e-300, float("inf"), 2**70])
    if kind == 1:
        return rng.choice(["", "yes", "1e3", "&a", "*a", "!!x", "- x", "é\u2028", "a: b", "~"])
    if kind == 2:
        return rng.uniform(-1e6, 1e6)
    if kind == 3:
        return "".join(rng.choice("ab: -&*!#'\"\n") for _ in range(rng.randrange(12)))
    if kind in (4, 5):
        return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_everything_dump_writes_load_stored_reads_back_equal():
    rng = random.Random(52)
    for _ in range(300):
        value = {"v": _random_value(rng)}
        shared = {"s": _random_value(rng)}
        value["x"], value["y"] = shared, shared          # shared: written in full twice
        text = dump(value, sort_keys=False, default_flow_style=None)
        assert "&id" not in text and "*id" not in text
        assert load_stored(text) == value


def _run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.output


ANCHORED = """name: anchored
experiment: toy.gaussian
dim: 4
chains: 4
step: 0.8
budget: {draws: 100}
sweep: {grid: {step: &s [1, 2], chains: *s}, summary: [accept_rate]}
"""


def test_a_spec_file_with_anchors_runs_and_its_run_stores_no_alias(tmp_path):
    """The two grid axes share one list: yaml.safe_dump would store it as an anchor and an
    alias; the run stores it written out twice and reads it back."""
    spec = tmp_path / "anchored.yaml"
    spec.write_text(ANCHORED)
    code, out = _run("run", spec, "--out", tmp_path / "run", "-q")
    assert code == 0, out
    with RunReader(tmp_path / "run") as r:
        assert r.spec["sweep"]["grid"] == {"step": [1, 2], "chains": [1, 2]}
        assert "*" not in r.attrs["spec"] and "&" not in r.attrs["spec"]
    assert "&" not in (tmp_path / "run" / "spec.yaml").read_text()


def test_an_alias_bomb_spec_file_is_one_line_and_exit_2(tmp_path):
    spec = tmp_path / "bomb.yaml"
    spec.write_text(SPEC.read_text() + alias_bomb_text(9).replace("a0:", "x0:", 1))
    code, out = _run("run", spec, "--out", tmp_path / "run", "-q", "--dry-run")
    assert code == 2 and "expand it to more than" in out and str(spec) in out, out
    code, out = _run("run", SPEC, "--out", tmp_path / "run2", "-q",
                     "description=&a [*a]")
    assert code == 2 and "contain itself" in out, out


@pytest.mark.parametrize("dry", [True, False])
def test_a_spec_past_the_stored_bound_is_refused_before_the_run_starts(tmp_path, dry):
    spec = tmp_path / "big.yaml"
    spec.write_text(SPEC.read_text() + "description: " + "d" * 2_000_000 + "\n")
    code, out = _run("run", spec, "--out", tmp_path / "run", "-q", "budget.draws=100",
                     *(["--dry-run"] if dry else []))
    assert code == 2, out
    assert "spec key 'description'" in out and "1,048,576 bytes" in out, out
    assert not (tmp_path / "run").exists()


def test_a_spec_just_under_the_stored_bound_runs_and_reads_back(tmp_path):
    spec = tmp_path / "big.yaml"
    spec.write_text(SPEC.read_text() + "description: " + "d" * (STORED_TEXT_BYTES - 2000)
                    + "\n")
    code, out = _run("run", spec, "--out", tmp_path / "run", "-q", "budget.draws=100")
    assert code == 0, out
    with RunReader(tmp_path / "run") as r:
        assert len(r.spec["description"]) == STORED_TEXT_BYTES - 2000
    code, out = _run("show", tmp_path / "run")
    assert code == 0, out
    assert yaml_text.text_bytes(out) < 200_000              # shown cut
