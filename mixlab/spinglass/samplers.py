"""The spin glass family's samplers, registered in mixlab's sampler registry.

Every factory gets a :class:`~mixlab.spinglass.target.SpinGlassTarget`, the sampler's spec
entry (its own keys) and the number of chains. Draws: ``samples (chains, R, C)`` bool (True =
+1). The MCMC samplers' step is one sweep (R·C site updates per chain); a perturb-and-MAP step
is one independent perturbed MAP solution per chain.
"""

from __future__ import annotations

from ..errors import SpecError
from ..plugins.registry import sampler
from ..spec.schema import Param
from . import mcmc, perturb, tempering
from .target import SpinGlassTarget

INIT = Param(None, str, nullable=True, choices=mcmc.INITS,
             help="initial spins (plus_minus: even chains all +1, odd all -1); null: the "
                  "experiment's mcmc.init (a league's overdispersed starts)")
MAP = Param("auto", str, choices=("auto", "graphcut", "max_product"),
            help="MAP solver: auto = graph cut for attractive models with local perturbations, "
                 "else max-product (narrow grids)")

#: the perturb-and-MAP samplers: independent draws, budgeted in MAP solutions, not sweeps
PERTURB_AND_MAP = ("local", "pairwise")


def _mcmc(cls):
    def factory(target: SpinGlassTarget, params: dict, chains: int):
        return cls(target, chains=chains, init=params.get("init") or target.init)
    return factory


for _name, _cls, _help in (
        ("gibbs", mcmc.Gibbs, "checkerboard single-site Gibbs (heat bath)"),
        ("metropolis", mcmc.Metropolis, "checkerboard single-site Metropolis (spin flips)"),
        ("swendsen_wang", mcmc.SwendsenWang,
         "Swendsen-Wang cluster updates, general couplings and fields")):
    sampler("spinglass", _name, params={"init": INIT}, help=_help)(_mcmc(_cls))


REPLICA_PARAMS = {
    "init": INIT,
    "replicas": Param(8, int, lo=1, hi=256,
                      help="replicas per chain K, on a geometric inverse-temperature ladder "
                           "from beta_min to 1 (1: the base sweep alone)"),
    "beta_min": Param(0.25, float, lo=0.0, hi=1.0, lo_open=True, hi_open=True,
                      help="the hottest replica's inverse temperature (the potential θ(x) is "
                           "multiplied by it)"),
    "sweep": Param("gibbs", str, choices=tuple(tempering.SWEEPS),
                   help="each replica's sweep: checkerboard heat bath or Metropolis"),
}


@sampler("spinglass", "parallel_tempering", params=REPLICA_PARAMS,
         help="replica exchange: K checkerboard sweeps on a geometric ladder, adjacent swaps")
def _parallel_tempering(target: SpinGlassTarget, params: dict, chains: int):
    return tempering.ParallelTempering(
        target, chains=chains, init=params.get("init") or target.init,
        replicas=params["replicas"], beta_min=params["beta_min"], sweep=params["sweep"])


def _perturb_and_map(kind: str):
    def factory(target: SpinGlassTarget, params: dict, chains: int):
        if params["map"] == "graphcut" and not target.attractive:
            raise SpecError("graph cuts need attractive couplings (all >= 0) and this model "
                            "has negative ones; use map: max_product (grids whose narrow side "
                            "is at most 22) or map: auto", "map")
        if params["map"] == "graphcut" and kind == "pairwise":
            raise SpecError("pairwise perturbations are not submodular: graph cuts do not "
                            "apply; use map: max_product or auto", "map")
        return perturb.PerturbMAPSampler(target, chains=chains, perturbation=kind,
                                         method=params["map"])
    return factory


sampler("spinglass", "local", params={"map": MAP},
        help="perturb-and-MAP with local (unary) Gumbel perturbations (Hazan et al. §4)"
        )(_perturb_and_map("local"))
sampler("spinglass", "pairwise", params={"map": MAP},
        help="perturb-and-MAP with pairwise Gumbel perturbations (exact max-product)"
        )(_perturb_and_map("pairwise"))
