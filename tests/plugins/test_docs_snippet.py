"""The ten-line sampler of docs/plugins.md and of the README, exactly as printed, is a correct
sampler: its draws on a 6-variable triplet MRF match the enumerated joint."""

import importlib.util
import re

import numpy as np
import pytest

from mixlab.austerity.mrf import enumerate_joint, make_mrf

from .conftest import REPO


def _snippet(doc: str) -> str:
    """The first Python block of ``doc`` that registers the 'random-scan' sampler."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / doc).read_text(), re.S)
    return next(b for b in blocks if '@sampler(MRF, "random-scan"' in b)


@pytest.mark.parametrize("doc", ["docs/plugins.md", "README.md"])
def test_docs_ten_line_sampler_matches_the_exact_joint(tmp_path, doc):
    code = _snippet(doc)
    path = tmp_path / "doc_sampler.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location("doc_sampler", path)
    mod = importlib.util.module_from_spec(spec)
    from mixlab.plugins import registry

    registry.load_plugins()  # restoring must not drop mixlab's own registrations
    before = registry.snapshot()
    try:
        spec.loader.exec_module(mod)
        kind = registry.samplers_for("mrf")["random-scan"]
        model = make_mrf(D=6, s=0.7, rng=np.random.default_rng(3))
        s = kind.factory(model, {}, 400)
        rng = np.random.default_rng(0)
        st = s.init(rng)
        counts = np.zeros(64)
        for t in range(250):
            st, draws, _ = s.step(st, rng)
            if t >= 20:
                codes = (draws["samples"].astype(int) << np.arange(6)).sum(1)
                counts += np.bincount(codes, minlength=64)
    finally:
        registry.restore(before)
    states, p = enumerate_joint(model)
    order = (states.astype(int) << np.arange(6)).sum(1)
    q = np.zeros(64)
    q[order] = p
    tv = 0.5 * np.abs(counts / counts.sum() - q).sum()
    assert tv < 0.02, tv          # 92,000 draws over 64 states: noise ~0.01
    # the check can fail: the same counts against the mirrored joint (every bit flipped)
    assert 0.5 * np.abs(counts[::-1] / counts.sum() - q).sum() > 0.05
