"""A target family of the plugin's own: the q-state Potts model on a general graph.

``p(x) ∝ exp(Σ_{(i,j) ∈ E} J_ij [x_i = x_j] + Σ_i h_i(x_i))`` over ``x ∈ {0, ..., q-1}^n``.
Registered with :func:`mixlab.api.register_family`, it is a family like mixlab's own: samplers
register for it (:mod:`.potts_samplers`), run in the experiment ``league.sample`` (draws,
summaries for ``mixlab diagnose``, error against the exact truth), list in ``mixlab plugins``
and compete in ``mixlab league potts`` on its three league targets, whose exact single-site
marginals come from enumerating all ``q^n`` states (at most 2^22; the targets have 3^12, 3^12
and 4^10).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixlab.api import DrawKey, Family, LeagueTargets, register_family

POTTS = "potts"
#: the most states :func:`enumerate_states` enumerates
MAX_STATES = 1 << 22


@dataclass(frozen=True)
class PottsTarget:
    """A Potts model: ``q`` states, ``n`` sites, ``edges (E, 2)`` int64 (i < j), couplings
    ``J (E,)`` and fields ``h (n, q)`` float64; ``init`` the chains' start ("random" or
    "zero")."""

    q: int
    n: int
    edges: np.ndarray
    J: np.ndarray
    h: np.ndarray
    init: str = "random"

    def couplings(self) -> np.ndarray:
        """The symmetric coupling matrix ``A (n, n)``: ``A[i, j] = J_ij`` on an edge, else 0."""
        A = np.zeros((self.n, self.n))
        np.add.at(A, (self.edges[:, 0], self.edges[:, 1]), self.J)
        return A + A.T

    def log_weight(self, x: np.ndarray) -> np.ndarray:
        """The unnormalised log probability of states ``x (..., n)`` int: ``(...)``."""
        x = np.asarray(x)
        agree = x[..., self.edges[:, 0]] == x[..., self.edges[:, 1]]        # (..., E)
        return agree @ self.J + np.take_along_axis(
            np.broadcast_to(self.h, x.shape + (self.q,)), x[..., None], -1)[..., 0].sum(-1)


def graph(definition: dict, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """``(n, edges (E, 2))`` of a definition's graph: ``ring`` (n sites), ``grid`` (rows x
    cols, 4-neighbour) or ``random`` (n sites, each pair an edge with probability
    ``edge_prob``)."""
    kind = definition["graph"]
    if kind == "ring":
        n = int(definition["n"])
        return n, np.array([(i, (i + 1) % n) if i + 1 < n else (0, n - 1) for i in range(n)])
    if kind == "grid":
        R, C = int(definition["rows"]), int(definition["cols"])
        idx = np.arange(R * C).reshape(R, C)
        right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1)
        down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], 1)
        return R * C, np.concatenate([right, down])
    if kind == "random":
        n = int(definition["n"])
        i, j = np.triu_indices(n, 1)
        keep = rng.random(i.size) < float(definition["edge_prob"])
        return n, np.stack([i[keep], j[keep]], 1)
    raise ValueError(f"unknown graph {kind!r} (ring, grid or random)")


def build(definition: dict) -> PottsTarget:
    """The model a definition fixes: couplings ``J ~ U[coupling - spread, coupling + spread]``
    and fields ``h ~ U[-field, field]`` drawn from ``model_seed``."""
    rng = np.random.default_rng(int(definition["model_seed"]))
    n, edges = graph(definition, rng)
    c, s = float(definition["coupling"]), float(definition.get("spread", 0.0))
    J = rng.uniform(c - s, c + s, len(edges))
    f = float(definition["field"])
    h = rng.uniform(-f, f, (n, int(definition["q"])))
    return PottsTarget(int(definition["q"]), n, edges.astype(np.int64), J, h)


def enumerate_states(t: PottsTarget) -> tuple[np.ndarray, np.ndarray]:
    """Every state and its probability: ``(states (q^n, n) int8, p (q^n,))``, site 0 the
    fastest-changing digit."""
    if t.q ** t.n > MAX_STATES:
        raise ValueError(f"{t.q}^{t.n} states are too many to enumerate (at most {MAX_STATES})")
    codes = np.arange(t.q ** t.n)
    states = ((codes[:, None] // t.q ** np.arange(t.n)) % t.q).astype(np.int8)
    lw = t.log_weight(states)
    p = np.exp(lw - lw.max())
    return states, p / p.sum()


def exact_marginals(t: PottsTarget) -> np.ndarray:
    """``P(x_i = k)`` for every site and state, ``(n, q)``, by enumeration."""
    states, p = enumerate_states(t)
    return np.stack([np.bincount(states[:, i], weights=p, minlength=t.q) for i in range(t.n)])


def one_hot(t: PottsTarget, x: np.ndarray) -> np.ndarray:
    """The league's features of draws ``x (C, B, n)``: ``[x_i = k]`` as ``(C, B, n q)`` bool,
    in the order of ``exact_marginals(t).ravel()``."""
    x = np.asarray(x)
    return (x[..., None] == np.arange(t.q)).reshape(*x.shape[:-1], t.n * t.q)


def summarizer(t: PottsTarget):
    """Per-draw summaries of ``{"samples": (C, m, n)}``: ``energy`` (minus the log weight),
    ``agreement`` (fraction of edges whose ends agree), ``share0`` (fraction of sites in state
    0), each ``(C, m)`` float64."""
    def summarize(block: dict) -> dict:
        x = np.asarray(block["samples"])
        agree = x[..., t.edges[:, 0]] == x[..., t.edges[:, 1]]
        return {"energy": -t.log_weight(x),
                "agreement": agree.mean(-1) if len(t.edges) else np.zeros(x.shape[:-1]),
                "share0": (x == 0).mean(-1)}

    return summarize


TARGETS = {
    "ring12-q3": {"graph": "ring", "n": 12, "q": 3, "coupling": 1.0, "spread": 0.0,
                  "field": 0.5, "model_seed": 7},
    "grid3x4-q3": {"graph": "grid", "rows": 3, "cols": 4, "q": 3, "coupling": 1.2,
                   "spread": 0.0, "field": 0.5, "model_seed": 7},
    "random10-q4": {"graph": "random", "n": 10, "edge_prob": 0.35, "q": 4, "coupling": 1.0,
                    "spread": 0.5, "field": 0.5, "model_seed": 7},
}

FAMILY = register_family(Family(
    name=POTTS,
    target="`PottsTarget`: `q` states, `n` sites, `edges (E, 2)` int, couplings `J (E,)` and "
           "fields `h (n, q)` float64, p(x) ∝ exp(Σ_E J_ij [x_i = x_j] + Σ_i h_i(x_i)) over x "
           "∈ {0..q-1}^n; `couplings()` the matrix `A (n, n)`, `log_weight(x)`; `init` "
           "(\"random\" or \"zero\")",
    draws=(DrawKey("samples", "(C, n)", lambda t: (t.n,), "iu", False,
                   "the state of every site of each chain, in 0..q-1"),),
    required=("samples",),
    step="one sweep or cluster move: every site assigned a state once (n site updates)",
    cost="site_updates",
    cost_help="sites assigned a state: a Gibbs sweep counts n, a Swendsen-Wang step n (its "
              "bond draws are not counted)",
    summaries="`energy` (minus the log weight), `agreement` (fraction of edges whose ends "
              "agree), `share0` (fraction of sites in state 0) "
              "(mixlab_example_samplers.potts_family.summarizer)",
    exact="`mixlab_example_samplers.potts_family.exact_marginals(target)`: P(x_i = k) of "
          "every site by enumerating the q^n states (`enumerate_states`, at most 2^22)",
    summarize=summarizer,
    league=LeagueTargets(
        definitions=lambda: {k: dict(v) for k, v in TARGETS.items()},
        build=build,
        truth=lambda t: exact_marginals(t).ravel(),
        features=one_hot,
        truth_source="exact single-site marginals P(x_i = k) (all q^n states enumerated)",
        yardstick_name="mean |error| of P(x_i = k)"),
))
