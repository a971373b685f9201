"""Variational log Z baselines on the grid spin glass (Fig 1 left of Hazan, Maji & Jaakkola 2013).

All functions take a :class:`~mixlab.spinglass.model.SpinGlass` (``field (R, C)``, ``right
(R, C-1)``, ``down (R-1, C)``, spins ±1, ``p(x) ∝ exp θ(x)``) and return the log Z estimate, or
``(logZ, marginals)`` with ``return_marginals=True`` where ``marginals (R, C)`` is the estimate
of ``P(x_rc = +1)``. Iterative methods take ``damping``, ``tol`` and ``max_iter`` keywords and
emit a :class:`VariationalWarning` when they stop without meeting ``tol`` (never silently); the
diagnostics of the last call are in :data:`last_info` (``converged``, ``iterations``,
``residual`` and method-specific entries).

Methods
-------
- :func:`bethe_bp`: loopy sum-product BP (parallel, damped, log-domain messages over all directed
  edges at once); log Z is minus the Bethe free energy at the fixed point.
- :func:`trw`: tree-reweighted BP (Wainwright, Jaakkola & Willsky 2005), the same message passing
  with edge appearance probabilities ``ρ_e``; at its fixed point the value is an **upper bound**.
  Default ``ρ``: the uniform mixture over all "comb" spanning trees of the grid -- the R
  horizontal combs (all horizontal edges plus the vertical edges of one spine column, one comb per
  spine column c = 0..C-1) and the vertical combs (all vertical edges plus the horizontal edges of
  one spine row), the two families with weight 1/2 each. This gives
  ``ρ = 1/2 + 1/(2R)`` on every horizontal edge and ``ρ = 1/2 + 1/(2C)`` on every vertical edge
  (a point of the spanning-tree polytope). ``rho=`` overrides it (scalar or ``(right, down)``).
- :func:`mean_field`: naive mean field, checkerboard coordinate ascent (all sites of one colour
  at once are an exact block update); the value is a lower bound for any iterate.
- :func:`structured_mean_field`: ``q(x) = Π_c q_c(x[:, c])`` over the grid's vertical chains
  (columns); each ``q_c`` is an exact chain distribution (forward-backward) whose field includes
  the mean-field messages ``Σ θ_ij m_j`` of its horizontal neighbours; even then odd columns are
  updated (exact block coordinate ascent). Started from the naive mean-field solution, so its
  value is ``>=`` naive MF. A lower bound for any iterate.
- :func:`ntrw`: negative tree-reweighted bound (Liu & Ihler, UAI 2010, "Negative tree reweighted
  belief propagation") on the vertical and horizontal comb trees -- see its docstring for exactly
  what is implemented (the primal reverse-Jensen bound, optimised by L-BFGS).

Files: bp.py (Bethe BP, TRW), naive_mean_field.py, structured.py (structured mean field),
negative_trw.py (NTRW), trees.py (exact inference on forests and the grid's comb trees), common.py
(``last_info``, the warning, the edge order).

Edge order used internally: the ``R (C-1)`` right edges row-major, then the ``(R-1) C`` down edges.
"""

from .bp import bethe_bp, comb_rho, trw
from .common import VariationalWarning, last_info
from .naive_mean_field import mean_field
from .negative_trw import ntrw
from .structured import structured_mean_field
from .trees import tree_infer

__all__ = ["bethe_bp", "trw", "mean_field", "structured_mean_field", "ntrw", "comb_rho",
           "tree_infer", "VariationalWarning", "last_info"]
