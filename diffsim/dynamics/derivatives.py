"""Analytical derivatives of the rigid-body dynamics (Carpentier & Mansard 2018, "Analytical
derivatives of rigid body dynamics algorithms", RSS), in world-frame spatial algebra.

For a fixed-base tree of one-degree-of-freedom joints (revolute, prismatic) every quantity below
is in world (Plücker) coordinates: the joint axes ``S_j`` [6], the body velocities ``v_i`` and
accelerations ``a_i`` (gravity as the base acceleration ``a_0 = [0; −g]``), the inertias ``I_i``
and the net body forces ``f_i = I_i a_i + v_i ×* I_i v_i − f_ext,i``, so that the recursions are
sums over ancestors, ``v_i = Σ_{k⪯i} S_k q̇_k``, ``a_i = a_0 + Σ_{k⪯i} (S_k q̈_k + Ṡ_k q̇_k)``
with ``Ṡ_k = v_k × S_k``, and ``τ_j = S_jᵀ F_j`` with ``F_j = Σ_{k⪰j} f_k``. Moving joint ``m``
turns everything below it about ``S_m`` (``∂S_k/∂q_m = S_m × S_k``, ``∂I_k/∂q_m = S_m×* I_k −
I_k S_m×`` for ``k ⪰ m``), which leaves ``τ`` unchanged; what is left is the change of the
velocity and acceleration *of the subtree relative to its parent*::

    ∂v_k/∂q_m = S_m × v_k + α_m,                α_m = −S_m × v_λ(m)
    ∂a_k/∂q_m = S_m × a_k + c_m − γ_m × v_k,     γ_m = S_m × v_m,  c_m = −S_m × a_λ(m) + γ_m × v_λ(m)
    ∂v_k/∂q̇_m = S_m,   ∂a_k/∂q̇_m = −2 γ_m + S_m × v_k,

so with the subtree sums ``Iᶜ_j = Σ_{k⪰j} I_k``, ``P_j = Σ I_k (v_k×)`` and
``Q_j = Σ [(I_k v_k)×̄ + v_k×* I_k]`` (``x×̄`` the matrix of ``α ↦ α ×* x``)::

    ∂τ_j/∂q_m = S_jᵀ D_m,   D_m = S_m×* F_m + Iᶜ_m c_m + P_m γ_m + Q_m α_m          (j ⪯ m)
              = S_jᵀ (Iᶜ_j c_m + P_j γ_m + Q_j α_m)                                (m ≺ j)
    ∂τ_j/∂q̇_m = S_jᵀ E_m,   E_m = −2 Iᶜ_m γ_m + (Q_m − P_m) S_m                     (j ⪯ m)
              = S_jᵀ (−2 Iᶜ_j γ_m + (Q_j − P_j) S_m)                                (m ≺ j)
    M_jm      = S_jᵀ Iᶜ_m S_m (j ⪯ m),  S_jᵀ Iᶜ_j S_m (m ≺ j)

and zero for joints on different branches; the joints' passive forces and armature add their
own (diagonal, or tendon-coupled) terms. Every sum over ancestors or descendants is one product
with a static 0/1 matrix of the tree, so the whole pass is a handful of batched operations.

The forward dynamics' derivatives follow at ``v̇ = FD(q, q̇, τ)`` from ``ID(q, q̇, v̇) = τ``:
``∂v̇/∂(q, q̇) = −M⁻¹ ∂ID/∂(q, q̇)``, ``∂v̇/∂τ = M⁻¹`` (one Cholesky factor of ``M``). Forming these
Jacobians once costs about as much as pushing two or three tangents through ABA one by one, so
they pay where many tangents are pushed at once (DDP's local models:
:class:`~.dispatch.AnalyticTangents`); the tests compare them with forward-mode AD of the RNEA.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from .. import spatial as sp
from ..model.joints import JointType
from ..model.model import Model, joint_passive_forces
from ..model.topology import Topology
from .kinematics import forward_kinematics
from .traversal import JointData, base_acceleration, body_spatial_inertias

#: Joint types the analytical pass handles (one coordinate, an axis constant in the body frame).
ONE_DOF = (JointType.REVOLUTE, JointType.PRISMATIC)


def supported(model: Model) -> bool:
    """Whether :func:`rnea_derivatives` handles ``model`` (a rigid tree, without mimic joints or
    fluid, every joint revolute or prismatic: weld fixed joints first, :mod:`.welded`)."""
    t = model.topology
    return (not t.has_flex and model.mimic is None and model.fluid is None and t.nb > 0
            and all(j in ONE_DOF for j in t.joint_types))


@functools.cache
def _tree_masks(t: Topology):
    """``anc[i, k] = 1`` if ``k ⪯ i`` (ancestor or self), the strict version, and the body of each
    velocity coordinate (one per body)."""
    nb = t.nb
    anc = np.zeros((nb, nb))
    for i in range(nb):
        k = i
        while k >= 0:
            anc[i, k] = 1.0
            k = t.parent[k]
    return anc, anc - np.eye(nb), np.asarray(t.v_start, dtype=np.int32)


def _crf_bar(h):
    """``[..., 6, 6]``: the matrix of ``α ↦ α ×* h`` for force vectors ``h`` [..., 6]."""
    n, f = sp.skew(h[..., :3]), sp.skew(h[..., 3:])
    return -jnp.concatenate([jnp.concatenate([n, f], -1), jnp.concatenate([f, jnp.zeros_like(f)], -1)], -2)


def _crm(m):
    """``m×`` [..., 6, 6] (Featherstone eq 2.31) with leading batch axes."""
    w, v = sp.skew(m[..., :3]), sp.skew(m[..., 3:])
    return jnp.concatenate([jnp.concatenate([w, jnp.zeros_like(w)], -1), jnp.concatenate([v, w], -1)], -2)


def rnea_derivatives(model: Model, q, v, a, f_ext=None):
    """``(∂τ/∂q [nv, nv], ∂τ/∂q̇ [nv, nv], M [nv, nv])`` of ``τ = ID(q, q̇, a, f_ext)``
    (:func:`~.rnea.inverse_dynamics_rigid`, passive forces and armature included) by the
    world-frame pass of the module docstring. ``model`` must be :func:`supported`."""
    if not supported(model):
        raise ValueError("rnea_derivatives: rigid fixed-base trees of revolute/prismatic joints only "
                         "(weld fixed joints first)")
    t = model.topology
    dt = model.dtype
    anc, strict, dof = _tree_masks(t)
    anc, strict = jnp.asarray(anc, dt), jnp.asarray(strict, dt)
    desc = anc.T  # desc[j, k] = 1 if k ⪰ j
    jd = JointData(model, q)
    kin = forward_kinematics(model, q)
    R, p = kin.R, kin.p
    X0 = sp.Transform.from_placement(R, p)  # body -> world, as i_X_0 of the inverse transform
    # world-frame joint axes, inertias and external forces
    Sb = jnp.stack([jd.S[i][:, 0] for i in range(t.nb)])
    S = X0.inv_apply_motion(Sb)  # [nb, 6]
    Xm = X0.motion_matrix()  # i_X_0 [nb, 6, 6]
    I = jnp.einsum("bji,bjk,bkl->bil", Xm, body_spatial_inertias(model), Xm)  # 0_X_i^* I_i i_X_0
    qd, qdd = v[dof], a[dof]
    # velocities and accelerations: sums over ancestors
    vel = anc @ (S * qd[:, None])
    Sdot = sp.cross_motion(vel, S)
    a0 = base_acceleration(model)
    acc = a0 + anc @ (S * qdd[:, None] + Sdot * qd[:, None])
    h = jnp.einsum("bij,bj->bi", I, vel)
    f = jnp.einsum("bij,bj->bi", I, acc) + sp.cross_force(vel, h)
    if f_ext is not None:
        f = f - X0.inv_apply_force(f_ext)
    # parents' velocity and acceleration (the world's: 0 and a_0)
    par = np.asarray(t.parent)
    has_par = (par >= 0)[:, None]
    v_par = jnp.where(has_par, vel[np.maximum(par, 0)], 0.0)
    a_par = jnp.where(has_par, acc[np.maximum(par, 0)], a0)
    alpha = -sp.cross_motion(S, v_par)
    gamma = sp.cross_motion(S, vel)
    c = -sp.cross_motion(S, a_par) + sp.cross_motion(gamma, v_par)
    # subtree sums
    P_b = I @ _crm(vel)
    Q_b = _crf_bar(h) + jnp.swapaxes(-_crm(vel), -1, -2) @ I  # v×* = −(v×)ᵀ
    Ic = jnp.einsum("jk,kab->jab", desc, I)
    Pc = jnp.einsum("jk,kab->jab", desc, P_b)
    Qc = jnp.einsum("jk,kab->jab", desc, Q_b)
    F = desc @ f

    def mv(A, x):
        return jnp.einsum("bij,bj->bi", A, x)

    D = sp.cross_force(S, F) + mv(Ic, c) + mv(Pc, gamma) + mv(Qc, alpha)
    E = -2.0 * mv(Ic, gamma) + mv(Qc - Pc, S)
    IcS = mv(Ic, S)
    # rows S_jᵀ X_j for the m ≺ j blocks
    rI, rP, rQ = (jnp.einsum("ja,jab->jb", S, X) for X in (Ic, Pc, Qc))
    up = anc.T  # up[j, m] = 1 if j ⪯ m
    low = strict  # low[j, m] = 1 if m ≺ j
    dq = up * (S @ D.T) + low * (rI @ c.T + rP @ gamma.T + rQ @ alpha.T)
    dv = up * (S @ E.T) + low * (-2.0 * rI @ gamma.T + (rQ - rP) @ S.T)
    M = up * (S @ IcS.T) + low * (IcS @ S.T)
    # from body order to coordinate order (one coordinate per body)
    order = np.argsort(dof)
    dq, dv, M = (x[order][:, order] for x in (dq, dv, M))
    jq, jv = jax.jacfwd(lambda q_, v_: joint_passive_forces(model, v_, q_), argnums=(0, 1))(q, v)
    return dq + jq, dv + jv, M + jnp.diag(jnp.broadcast_to(model.armature, (t.nv,)).astype(dt))


def aba_derivatives(model: Model, q, v, a, f_ext=None):
    """``(∂v̇/∂q, ∂v̇/∂q̇, M⁻¹)`` [nv, nv] each at the accelerations ``a = FD(q, q̇, τ, f_ext)``
    (module docstring: from :func:`rnea_derivatives` and one Cholesky factor of ``M``)."""
    dq, dv, M = rnea_derivatives(model, q, v, a, f_ext)
    L = jnp.linalg.cholesky(M)
    Minv = jsl.cho_solve((L, True), jnp.eye(M.shape[0], dtype=M.dtype))
    return -Minv @ dq, -Minv @ dv, Minv
