"""Measures of a configuration chain, solved with scipy's sparse solvers.

Reachability is decided on the graph first (which configurations reach the target with
probability 0 and which with probability 1), so every linear system solved is non-singular and
an infinite expected time is reported as infinite rather than as a numerical accident.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .dtmc import Chain

if TYPE_CHECKING:
    import scipy.sparse as sp


def _backward_closure(P: sp.csr_matrix, sources: np.ndarray, blocked: np.ndarray | None = None) -> np.ndarray:
    """Configurations with a path into `sources`; paths may not pass through `blocked` ones."""
    A = (P != 0).astype(np.int8).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    reached = sources.copy()
    frontier = sources.copy()
    while frontier.any():
        pred = (A @ frontier.astype(np.int8)) != 0  # i -> j for some j in the frontier
        if blocked is not None:
            pred &= ~blocked
        frontier = pred & ~reached
        reached |= frontier
    return reached


def classify(P: sp.csr_matrix, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(zero, one): the configurations that reach `target` with probability 0, and with probability 1
    (decided on the graph, so exactly)."""
    zero = ~_backward_closure(P, target)
    one = ~_backward_closure(P, zero, blocked=target)  # cannot stray to a configuration that never reaches it
    return zero, one


def reach_probability(chain: Chain, target: np.ndarray) -> np.ndarray:
    """Probability of ever reaching `target`, from every configuration."""
    import scipy.sparse as sp  # imported when used (with the measures)
    P = chain.P
    zero, one = classify(P, target)
    x = one.astype(float)
    unknown = np.flatnonzero(~one & ~zero)
    if len(unknown):
        ones = np.flatnonzero(one)
        A = sp.identity(len(unknown), format="csc") - P[unknown][:, unknown].tocsc()
        b = np.asarray(P[unknown][:, ones].sum(axis=1)).ravel()
        x[unknown] = _solve(A, b)
    return x


def hitting_times(chain: Chain, target: np.ndarray) -> np.ndarray:
    """Expected interactions until `target` is reached (0 inside it), from every configuration;
    infinite where it is reached with probability below 1."""
    import scipy.sparse as sp  # imported when used (with the measures)
    P = chain.P
    _, finite = classify(P, target)
    h = np.full(chain.size, np.inf)
    h[target] = 0.0
    todo = np.flatnonzero(finite & ~target)
    if len(todo):
        A = sp.identity(len(todo), format="csc") - P[todo][:, todo].tocsc()
        h[todo] = _solve(A, np.ones(len(todo)))
    return h


def holding_times(chain: Chain, inside: np.ndarray) -> np.ndarray:
    """Expected interactions until the chain first leaves `inside`, from every configuration in it."""
    return hitting_times(chain, ~inside)


def transient(chain: Chain, start: np.ndarray, steps: list[int]) -> np.ndarray:
    """Distributions after each number of interactions in `steps` (sorted), from distribution `start`."""
    PT = chain.P.T.tocsr()
    out = np.zeros((len(steps), chain.size))
    pi = start.astype(float)
    t = 0
    for k, target in enumerate(steps):
        while t < target:
            pi = PT @ pi
            t += 1
        out[k] = pi
    return out


def _solve(A: sp.spmatrix, b: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Solve A x = b: BiCGSTAB with a Jacobi preconditioner (direct factorisation fills in badly on
    these chains), falling back to a sparse LU when the iteration does not reach the tolerance."""
    import scipy.sparse.linalg as spla
    A = A.tocsr()
    d = A.diagonal()
    precond = spla.LinearOperator(A.shape, matvec=lambda y: y / d)
    x, info = spla.bicgstab(A, b, rtol=rtol, atol=0.0, maxiter=20 * A.shape[0] + 1000, M=precond)
    scale = np.abs(b).max() or 1.0
    if info != 0 or not np.isfinite(x).all() or np.abs(A @ x - b).max() > 1e-8 * scale:
        x = spla.spsolve(A.tocsc(), b, permc_spec="COLAMD")
    return np.asarray(x, dtype=float).reshape(-1)
