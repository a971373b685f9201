"""Negative tree-reweighted lower bound (Liu & Ihler, UAI 2010) on the comb spanning trees."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.optimize
import scipy.sparse

from ..model import SpinGlass
from .common import VariationalWarning, edges, set_info
from .naive_mean_field import MF_INITS
from .structured import smf_best
from .trees import comb_tree, tree_infer


def ntrw(model: SpinGlass, *, weights=(0.01, 0.1), tol: float = 1e-6,
         max_iter: int = 500, inits=MF_INITS, restarts: int = 4, seed=0,
         return_marginals: bool = False):
    """Negative tree-reweighted lower bound on log Z on the vertical and horizontal comb trees.

    What is implemented (the primal form of Liu & Ihler's bound). Reverse Jensen: for weights
    ``ρ_V = 1 + a > 0`` and ``ρ_H = -a < 0`` (``a > 0``, ``ρ_V + ρ_H = 1``) and any parameters
    ``θ^V`` on the vertical comb spanning tree V (all down edges + the right edges of row 0) and
    ``θ^H`` on the horizontal comb H (all right edges + the down edges of column 0) with
    ``ρ_V θ^V + ρ_H θ^H = θ``, convexity of ``Φ = log Z`` gives
    ``B_a = ρ_V Φ(θ^V) + ρ_H Φ(θ^H) <= Φ(θ)`` (``θ^V`` is a convex combination of ``θ`` and
    ``θ^H``). Edges in one tree only are forced (``θ^V_e = θ_e/ρ_V`` on down edges outside
    column 0, ``θ^H_e = θ_e/ρ_H`` on right edges outside row 0). The free variables are ``θ^V``
    on every node and on the edges both trees share, and ``θ^H = ((1+a) θ^V - θ)/a`` follows
    there; this parametrisation keeps the gradient ``(1+a)(μ^V - μ^H)`` (μ = tree moments) on
    the same scale for every ``a``. Both Φ are exact tree sums; ``B_a`` is maximised by L-BFGS
    (``max_iter`` iterations, gradient tolerance ``tol``). The problem is not concave, but
    **every** point is a valid lower bound.

    **The limiting case.** For ``a > 0`` and ``q`` the V-tree distribution of ``θ^V``,
    ``B_a <= E_q[θ] + H(q) - a (H_H(q) - H(q)) <= E_q[θ] + H(q)`` (``H_H(q)`` is the entropy of
    the H-tree distribution with ``q``'s marginals on H, which is ``>= H(q)``), i.e. in this
    two-tree parametrisation NTRW is at most *structured mean field over V-tree distributions*,
    and that is what the bound tends to as ``a -> 0`` (its dual). Product-of-vertical-chains
    distributions are V-tree distributions (zero couplings on the spine, row 0), so the
    vertical-chain structured mean-field optimum of :func:`structured_mean_field` (same
    ``inits``/``restarts``/``seed``) is a point of that limit, and its value is a valid lower
    bound. The returned value is the **best valid bound found** over the limit point and the
    runs ``a ∈ weights``; each ``a`` is started from whichever of two points has the larger
    bound: the same structured-MF solution (``θ^V`` = its chain parameters: effective fields,
    vertical couplings, 0 on the spine) or ``θ^V = θ^H = θ``. Hence NTRW ``>=`` structured MF by
    construction, and NTRW can exceed it only through the ``a > 0`` runs. Exact (start point
    ``θ^V = θ^H = θ``) when all edges lie in both trees, e.g. a 1 x n or n x 1 chain.

    Marginals: the vertical comb's singleton marginals at the best ``a > 0`` optimum, or the
    structured-MF marginals when the limit wins. ``last_info``: ``weight`` (the best ``a``, 0.0
    for the limit), ``bounds`` (``{a: best bound}``, key 0.0 for the limit), ``smf``."""
    R, C = model.shape
    n = model.n
    src, dst, J = edges(model)
    E = J.size
    h = model.field.ravel()
    weights = [float(a) for a in weights]
    for a in weights:
        if a <= 0:
            raise ValueError(f"NTRW weights must be > 0, got {a}")
    smf = smf_best(model, 1e-10, 10000, "mean_field", inits, restarts, seed)
    fV, eV = comb_tree(R, C, vertical=True)
    fH, eH = comb_tree(R, C, vertical=False)
    inV = np.zeros(E, bool)
    inV[eV[eV >= 0]] = True
    inH = np.zeros(E, bool)
    inH[eH[eH >= 0]] = True
    shared = np.flatnonzero(inV & inH)
    # map edges to node slots of each forest (the node whose parent edge it is)
    slotV = np.full(E, -1)
    slotV[eV[eV >= 0]] = np.flatnonzero(eV >= 0)
    slotH = np.full(E, -1)
    slotH[eH[eH >= 0]] = np.flatnonzero(eH >= 0)
    onlyV = inV & ~inH
    onlyH = inH & ~inV
    # structured-MF start: θ^V = the chains' natural parameters (heff on nodes, the model's
    # vertical couplings on down edges, 0 on the spine's right edges)
    ER = R * (C - 1)
    z_smf = np.concatenate([smf["heff"].ravel(), np.where(shared >= ER, J[shared], 0.0)])
    z_sym = np.concatenate([h, J[shared]])
    results = [dict(value=smf["value"], a=0.0, marg=(1.0 + smf["m"]) / 2.0,
                    converged=smf["converged"], nit=smf["iterations"], gnorm=smf["residual"])]
    for a in weights:
        rV, rH = 1.0 + a, -a
        JV_fixed = np.zeros(n)
        JV_fixed[slotV[onlyV]] = J[onlyV] / rV
        JH_fixed = np.zeros(n)
        JH_fixed[slotH[onlyH]] = J[onlyH] / rH

        def unpack(z, a=a, JV_fixed=JV_fixed, JH_fixed=JH_fixed):
            hV = z[:n]
            hH = ((1.0 + a) * hV - h) / a
            JV = JV_fixed.copy()
            JV[slotV[shared]] = z[n:]
            JH = JH_fixed.copy()
            JH[slotH[shared]] = ((1.0 + a) * z[n:] - J[shared]) / a
            return hV, JV, hH, JH

        def fun(z, a=a, unpack=unpack):
            hV, JV, hH, JH = unpack(z)
            zV, mV, pV = tree_infer(fV, hV, JV)
            zH, mH, pH = tree_infer(fH, hH, JH)
            val = (1.0 + a) * zV - a * zH
            grad = (1.0 + a) * np.concatenate([mV - mH, pV[slotV[shared]] - pH[slotH[shared]]])
            return -val, -grad

        z0 = min((z_smf, z_sym), key=lambda z: fun(z)[0])     # the start with the larger bound
        best = scipy.optimize.minimize(fun, z0, jac=True, method="L-BFGS-B",
                                       options=dict(maxiter=max_iter, gtol=tol, ftol=1e-15,
                                                    maxfun=4 * max_iter))
        hV, JV, _, _ = unpack(best.x)
        _, mV, _ = tree_infer(fV, hV, JV)
        gnorm = float(np.max(np.abs(best.jac)))
        results.append(dict(value=-float(best.fun), a=a, marg=((1.0 + mV) / 2.0).reshape(R, C),
                            converged=gnorm <= tol, nit=int(best.nit), gnorm=gnorm))
    r = max(results, key=lambda t: t["value"])
    if not r["converged"]:
        warnings.warn(f"ntrw (a={r['a']}) stopped after {r['nit']} iterations with residual "
                      f"{r['gnorm']:.3g} > tol; the value is still a valid lower bound but may "
                      f"not be the tightest", VariationalWarning, stacklevel=2)
    set_info(method="ntrw", converged=r["converged"], iterations=r["nit"], residual=r["gnorm"],
              weight=r["a"], bounds={t["a"]: t["value"] for t in results}, smf=smf["value"])
    return (r["value"], r["marg"]) if return_marginals else r["value"]
