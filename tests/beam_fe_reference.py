"""Independent reference for elastic-boundary beams: a finite-element Euler–Bernoulli beam.

Cubic Hermite elements (nodal DOFs ``w``, ``w'``), element stiffness ``EI/h³ [12, 6h, −12, 6h; …]``
and consistent mass ``rhoA h/420 [156, 22h, 54, −13h; …]`` (Przemieniecki, *Theory of Matrix
Structural Analysis*, 1968, ch. 11; Cook et al., *Concepts and Applications of FEA*), springs added
to the diagonal of the boundary DOFs, the tip mass and its rotary inertia to the diagonal of the
tip DOFs' mass, rigid supports (``inf``) by removing the DOF, eigenpairs by
``scipy.linalg.eigh(K, M)``. Frequencies converge as ``h⁴`` (from above).

Nothing here uses diffsim: it is the check on :mod:`diffsim.beams.elastic`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg


def _element(EI, rhoA, h):
    k = EI / h**3 * np.array([[12, 6 * h, -12, 6 * h], [6 * h, 4 * h**2, -6 * h, 2 * h**2],
                              [-12, -6 * h, 12, -6 * h], [6 * h, 2 * h**2, -6 * h, 4 * h**2]])  # fmt: skip
    m = rhoA * h / 420 * np.array([[156, 22 * h, 54, -13 * h], [22 * h, 4 * h**2, 13 * h, -3 * h**2],
                                   [54, 13 * h, 156, -22 * h], [-13 * h, -3 * h**2, -22 * h, 4 * h**2]])  # fmt: skip
    return k, m


def fe_beam(n_modes, *, L, EI, rhoA, k_rot_root=np.inf, k_lat_root=np.inf, k_rot_tip=0.0, k_lat_tip=0.0,
            tip_mass=0.0, tip_inertia=0.0, n_el=40, x=None):  # fmt: skip
    """First ``n_modes`` circular frequencies [rad/s] and shapes ``w`` [len(x), n_modes] (unit
    modal mass beam + tip, sign arbitrary: compare with the MAC) sampled at ``x`` (default 101
    points on [0, L]) by the elements' Hermite interpolation. Rigid-body modes (omega ~ 0) of
    unsupported beams are dropped."""
    h = L / n_el
    nd = 2 * (n_el + 1)
    K, M = np.zeros((nd, nd)), np.zeros((nd, nd))
    ke, me = _element(EI, rhoA, h)
    for e in range(n_el):
        s = slice(2 * e, 2 * e + 4)
        K[s, s] += ke
        M[s, s] += me
    keep = np.ones(nd, bool)
    for dof, k in ((0, k_lat_root), (1, k_rot_root), (nd - 2, k_lat_tip), (nd - 1, k_rot_tip)):
        if np.isinf(k):
            keep[dof] = False
        else:
            K[dof, dof] += k
    M[nd - 2, nd - 2] += tip_mass
    M[nd - 1, nd - 1] += tip_inertia
    idx = np.nonzero(keep)[0]
    lam, V = scipy.linalg.eigh(K[np.ix_(idx, idx)], M[np.ix_(idx, idx)])
    elastic = lam > 1e-6 * EI / (rhoA * L**4)  # rigid-body modes: lam ~ 0 (to rounding)
    lam, V = lam[elastic][:n_modes], V[:, elastic][:, :n_modes]
    U = np.zeros((nd, V.shape[1]))
    U[idx] = V
    if x is None:
        x = np.linspace(0.0, L, 101)
    x = np.asarray(x, dtype=float)
    e = np.clip((x / h).astype(int), 0, n_el - 1)
    xi = x / h - e  # local coordinate in [0, 1]
    N = np.stack([1 - 3 * xi**2 + 2 * xi**3, h * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3,
                  h * (-(xi**2) + xi**3)], axis=-1)  # fmt: skip
    w = np.einsum("xk,xkm->xm", N, U[2 * e[:, None] + np.arange(4)])
    return np.sqrt(lam), w


def mac(phi, psi):
    """Modal assurance criterion matrix ``|φᵢᵀψⱼ|² / (φᵢᵀφᵢ ψⱼᵀψⱼ)`` of sampled shapes [m, n] × [m, n']."""
    num = (phi.T @ psi) ** 2
    return num / np.outer(np.sum(phi**2, 0), np.sum(psi**2, 0))
