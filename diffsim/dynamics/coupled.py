"""Dynamics of a tree with mimic joints (:mod:`diffsim.model.mimic`): Kane's equations in the
independent coordinates, i.e. the tree's equations projected onto the coupled subspace.

With ``q = G q_r + b``, ``v = G v_r`` (``G`` constant, so ``v̇ = G v̇_r`` with no velocity-product
term), the tree's ``M v̇ + h = τ + Φᵀλ`` (``h = C v + g + D(v) − Jᵀ f_ext``; ``Φᵀλ`` the coupling's
constraint forces, ``Gᵀ Φᵀ = 0``) premultiplied by ``Gᵀ`` gives

    ``M_r v̇_r = τ_r − h_r``,  ``M_r = Gᵀ M G``,  ``h_r = Gᵀ h``,  ``τ_r = Gᵀ τ``

(Kane's method / Jourdain's principle; equivalently Gauss's least constraint: ``v̇ = G v̇_r`` is
the ``M``-orthogonal projection of the unconstrained acceleration onto ``range G``). These are
the quantities Pinocchio's mimic joints give (``crba``, ``rnea`` with ``mimic=True``).
``M`` and ``h`` come from the tree algorithms unchanged (CRBA and RNEA; for flexible trees their
flexible counterparts), evaluated at the coupled state.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ..model.mimic import coupling_matrix, expand_q, expand_v, reduce_q, reduce_v
from ..model.model import Model
from .crba import mass_matrix_crba
from .flexible import inverse_dynamics_flexible, mass_matrix_flexible
from .rnea import inverse_dynamics_rigid
from .traversal import implicit_forward_dynamics


def _tree_mass_matrix(model: Model, q):
    return mass_matrix_flexible(model, q) if model.topology.has_flex else mass_matrix_crba(model, q)


def _tree_inverse_dynamics(model: Model, q, v, a, f_ext=None):
    if model.topology.has_flex:
        return inverse_dynamics_flexible(model, q, v, a, f_ext)
    return inverse_dynamics_rigid(model, q, v, a, f_ext)


def reduced_mass_matrix(model: Model, q_r):
    """``M_r = Gᵀ M(q) G`` [nr, nr] at ``q = expand_q(q_r)`` (armature included)."""
    G = coupling_matrix(model)
    return G.T @ _tree_mass_matrix(model, expand_q(model, q_r)) @ G


def reduced_inverse_dynamics(model: Model, q_r, v_r, a_r, f_ext=None):
    """``τ_r = Gᵀ ID(q, G v_r, G a_r, f_ext) = M_r a_r + h_r`` [nr] (RNEA on the tree, projected)."""
    tau = _tree_inverse_dynamics(model, expand_q(model, q_r), expand_v(model, v_r), expand_v(model, a_r), f_ext)
    return coupling_matrix(model).T @ tau


def _solve(model: Model, q_r, v_r, tau_r, f_ext):
    """``v̇_r = M_r⁻¹ (τ_r − h_r)`` (Cholesky of ``M_r``)."""
    h_r = reduced_inverse_dynamics(model, q_r, v_r, jnp.zeros_like(v_r), f_ext)
    return jsl.cho_solve(jsl.cho_factor(reduced_mass_matrix(model, q_r)), tau_r - h_r)


def _minv(model: Model, q_r, x):
    return jsl.cho_solve(jsl.cho_factor(reduced_mass_matrix(model, q_r)), x)


#: ``v̇_r`` [nr] of ``M_r v̇_r = τ_r − h_r`` at the independent state ``(q_r, v_r)``, for
#: generalised forces ``τ_r`` [nr] on the independent coordinates; derivatives from the
#: implicit function ``reduced_inverse_dynamics(q_r, v_r, v̇_r) = τ_r``
#: (:func:`~.traversal.implicit_forward_dynamics`), multiplier and offset included.
reduced_forward_dynamics = implicit_forward_dynamics(_solve, reduced_inverse_dynamics, _minv)


def forward_dynamics_coupled(model: Model, q, v, tau, f_ext):
    """``v̇ = G v̇_r`` [nv] in the tree's coordinates, with ``v̇_r`` from
    :data:`reduced_forward_dynamics` at ``(q_r, v_r) = (reduce(q), reduce(v))`` and
    ``τ_r = Gᵀ τ``: a torque on a mimic joint acts on its master through the coupling. The mimic
    entries of ``q`` and ``v`` are not read (they follow from their masters)."""
    G = coupling_matrix(model)
    return G @ reduced_forward_dynamics(model, reduce_q(model, q), reduce_v(model, v), G.T @ tau, f_ext)


def project_acceleration(model: Model, q, a_free):
    """Gauss's principle of least constraint: ``v̇ = G (Gᵀ M G)⁻¹ Gᵀ M a_free``, the coupled
    acceleration from the acceleration ``a_free`` that the tree would have with every joint
    free (at the same coupled state and forces). A second route to
    :func:`forward_dynamics_coupled` for any tree algorithm (e.g. ABA)."""
    G = coupling_matrix(model)
    M = _tree_mass_matrix(model, q)
    return G @ jsl.cho_solve(jsl.cho_factor(G.T @ M @ G), G.T @ (M @ a_free))


def coupled_inverse_inertia(model: Model, q, X):
    """``G (Gᵀ M G)⁻¹ Gᵀ X`` [nv, k] for ``X`` [nv, k]: the response ``Δv`` of the coupled system
    to generalised impulses ``X`` (what ``M⁻¹ X`` is without mimics; e.g. the Delassus operator
    ``W G M_r⁻¹ Gᵀ Wᵀ`` of contact impulses). ``q`` is a coupled configuration."""
    G = coupling_matrix(model)
    M_r = G.T @ _tree_mass_matrix(model, q) @ G
    return G @ jsl.cho_solve(jsl.cho_factor(M_r), G.T @ X)
