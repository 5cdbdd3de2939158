"""Analytical derivatives of the rigid-body dynamics (Carpentier & Mansard 2018, "Analytical
derivatives of rigid body dynamics algorithms", RSS), in world-frame spatial algebra.

For a tree of joints whose motion subspace is constant in the body frame (revolute, prismatic,
spherical, free: floating bases included) every quantity below is in world (Plücker)
coordinates: the joint axes ``S_j`` [6] (one per velocity coordinate), the body velocities
``v_i`` and accelerations ``a_i`` (gravity as the base acceleration ``a_0 = [0; −g]``), the
inertias ``I_i`` and the net body forces ``f_i = I_i a_i + v_i ×* I_i v_i − f_ext,i``, so that the
recursions are sums over ancestors, ``v_i = Σ_{k⪯i} S_k q̇_k``, ``a_i = a_0 + Σ_{k⪯i} (S_k q̈_k +
Ṡ_k q̇_k)`` with ``Ṡ_k = v_body(k) × S_k``, and ``τ_j = S_jᵀ F_j`` with ``F_j = Σ_{k⪰j} f_k``
(``⪯``: ancestor-or-same body). A tangent ``δq_m`` (a body-frame twist of joint ``m``,
:func:`diffsim.integrate`'s coordinates) turns everything carried by its body about ``S_m``
(``∂S_k/∂q_m = S_m × S_k``, ``∂I_k/∂q_m = S_m×* I_k − I_k S_m×`` for ``k ⪰ m``), which leaves ``τ``
unchanged; what is left is the change of the velocity and acceleration *relative to the parent
body* ``λ(m)``::

    ∂v_k/∂q_m = S_m × v_k + α_m,                 α_m = −γ_m,  γ_m = S_m × v_λ(m)
    ∂a_k/∂q_m = S_m × a_k + c_m − γ_m × v_k,      c_m = −S_m × a_λ(m) + γ_m × v_λ(m)
    ∂v_k/∂q̇_m = S_m,   ∂a_k/∂q̇_m = Ṡ_m − γ_m + S_m × v_k,

so with the subtree sums ``Iᶜ_j = Σ_{k⪰j} I_k``, ``P_j = Σ I_k (v_k×)`` and
``Q_j = Σ [(I_k v_k)×̄ + v_k×* I_k]`` (``x×̄`` the matrix of ``α ↦ α ×* x``), read at each
coordinate's body::

    ∂τ_j/∂q_m = S_jᵀ D_m,   D_m = S_m×* F_m + Iᶜ_m c_m + P_m γ_m + Q_m α_m        (j ≺ m)
              = S_jᵀ (Iᶜ_j c_m + P_j γ_m + Q_j α_m)                              (m ⪯ j)
    ∂τ_j/∂q̇_m = S_jᵀ E_m,   E_m = Iᶜ_m (Ṡ_m − γ_m) + (Q_m − P_m) S_m               (j ⪯ m)
              = S_jᵀ (Iᶜ_j (Ṡ_m − γ_m) + (Q_j − P_j) S_m)                        (m ≺ j)
    M_jm      = S_jᵀ Iᶜ_m S_m (j ⪯ m),  S_jᵀ Iᶜ_j S_m (m ≺ j)

and zero for joints on different branches (for one-coordinate joints ``Ṡ_m − γ_m = −2 γ_m``). The
configuration derivative is ``∂τ/∂δq · G`` with ``G = ∂δq/∂q`` (:func:`tangent_map`: quaternions
by their body-frame rotation). The joints' passive forces and armature add their own terms. Every
sum over ancestors or descendants is one product with a static 0/1 matrix of the tree, so the
whole pass is a handful of batched operations.

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

#: Joint types the analytical pass handles: motion subspaces constant in the body frame, so that
#: ``Ṡ = v × S`` in world coordinates (revolute, prismatic, spherical, free; not planar).
HANDLED = (JointType.REVOLUTE, JointType.PRISMATIC, JointType.SPHERICAL, JointType.FREE)


def supported(model: Model) -> bool:
    """Whether :func:`rnea_derivatives` handles ``model``: a rigid tree without mimic joints or
    fluid whose joints are revolute, prismatic, spherical or free (weld fixed joints first,
    :mod:`.welded`)."""
    t = model.topology
    return (not t.has_flex and model.mimic is None and model.fluid is None and t.nb > 0
            and all(j in HANDLED for j in t.joint_types))


@functools.cache
def _tree_tables(t: Topology):
    """Static tables: ``anc[i, k] = 1`` if body ``k ⪯ i``; the body of every velocity coordinate
    (in ``v`` order); its parent body (``-1``: the world); and the coordinate masks
    ``up[d, e] = 1`` if ``body(d) ⪯ body(e)``, ``strict_up`` without the same body."""
    nb = t.nb
    anc = np.zeros((nb, nb))
    for i in range(nb):
        k = i
        while k >= 0:
            anc[i, k] = 1.0
            k = t.parent[k]
    body = np.zeros(t.nv_rigid, dtype=np.int32)
    for i in range(nb):
        body[t.v_start[i]:t.v_start[i] + t.nv_joint[i]] = i
    up = anc[body][:, body].T
    same = (body[:, None] == body[None, :]).astype(float)
    return anc, body, np.asarray(t.parent, dtype=np.int32)[body], up, up - same


def _crf_bar(h):
    """``[..., 6, 6]``: the matrix of ``α ↦ α ×* h`` for force vectors ``h`` [..., 6]."""
    n, f = sp.skew(h[..., :3]), sp.skew(h[..., 3:])
    return -jnp.concatenate([jnp.concatenate([n, f], -1), jnp.concatenate([f, jnp.zeros_like(f)], -1)], -2)


def _quat_tangent(qj):
    """``[3, 4]``: the body-frame rotation ``δθ = 2 vec(q̂* ⊗ δq) / |q|`` of a quaternion tangent
    (``q̂ = q/|q|``; the radial part, which the normalised rotation ignores, maps to zero)."""
    n = jnp.linalg.norm(qj)
    w, x, y, z = qj / n
    return (2.0 / n) * jnp.stack([jnp.stack([-x, w, z, -y]), jnp.stack([-y, -z, w, x]), jnp.stack([-z, y, -x, w])])


def tangent_map(model: Model, q):
    """``G`` [nv, nq]: the tangent coordinates ``δq`` (a body-frame twist of each joint, the
    coordinates of :func:`diffsim.integrate`) of a change ``dq`` of the configuration vector:
    identity for revolute/prismatic, :func:`_quat_tangent` for a spherical joint's quaternion and
    ``[R_Jᵀ, 0; 0, quat]`` for a free joint (position in the parent frame, quaternion)."""
    t = model.topology
    if t.nq_rigid == t.nv_rigid:
        return jnp.eye(t.nv_rigid, dtype=model.dtype)
    G = jnp.zeros((t.nv_rigid, t.nq_rigid), model.dtype)
    for i, jtype in enumerate(t.joint_types):
        r, c = t.v_start[i], t.q_start[i]
        if jtype is JointType.SPHERICAL:
            G = G.at[r:r + 3, c:c + 4].set(_quat_tangent(q[c:c + 4]))
        elif jtype is JointType.FREE:
            quat = q[c + 3:c + 7]
            G = G.at[r:r + 3, c:c + 3].set(sp.quat_to_rot(quat).T)
            G = G.at[r + 3:r + 6, c + 3:c + 7].set(_quat_tangent(quat))
        elif t.nv_joint[i]:
            G = G.at[r, c].set(1.0)
    return G


def rnea_derivatives(model: Model, q, v, a, f_ext=None):
    """``(∂τ/∂q [nv, nq], ∂τ/∂q̇ [nv, nv], M [nv, nv])`` of ``τ = ID(q, q̇, a, f_ext)``
    (:func:`~.rnea.inverse_dynamics_rigid`, passive forces and armature included) by the
    world-frame pass of the module docstring; ``∂τ/∂q`` with respect to the configuration vector
    (the tangent derivative times :func:`tangent_map`). ``model`` must be :func:`supported`."""
    if not supported(model):
        raise ValueError("rnea_derivatives: rigid trees of revolute, prismatic, spherical and free joints only "
                         "(weld fixed joints first)")
    t = model.topology
    dt = model.dtype
    anc, body, parent, up, strict_up = _tree_tables(t)
    anc, up, strict_up = (jnp.asarray(x, dt) for x in (anc, up, strict_up))
    low, strict_low = up.T, strict_up.T  # m ⪯ j (same body included), m ≺ j
    jd = JointData(model, q)
    kin = forward_kinematics(model, q)
    X0 = sp.Transform.from_placement(kin.R, kin.p)  # i_X_0
    # world-frame axes (one row per coordinate), inertias and external forces
    Sb = jnp.concatenate([jd.S[i].T for i in range(t.nb)], 0)
    S = sp.Transform(X0.E[body], X0.r[body]).inv_apply_motion(Sb)  # [nv, 6]
    Xm = X0.motion_matrix()
    I = jnp.einsum("bji,bjk,bkl->bil", Xm, body_spatial_inertias(model), Xm)  # 0_X_i^* I_i i_X_0
    Adb = anc[:, body]  # [nb, nv]: body(d) ⪯ i
    # velocities and accelerations: sums over ancestors
    vel = Adb @ (S * v[:, None])
    Sdot = sp.cross_motion(vel[body], S)  # Ṡ_d = v_body(d) × S_d
    a0 = base_acceleration(model)
    acc = a0 + Adb @ (S * a[:, None] + Sdot * v[:, None])
    h = jnp.einsum("bij,bj->bi", I, vel)
    f = jnp.einsum("bij,bj->bi", I, acc) + sp.cross_force(vel, h)
    if f_ext is not None:
        f = f - X0.inv_apply_force(f_ext)
    # each coordinate's parent-body velocity and acceleration (the world's: 0 and a_0)
    has_par = (parent >= 0)[:, None]
    v_par = jnp.where(has_par, vel[np.maximum(parent, 0)], 0.0)
    a_par = jnp.where(has_par, acc[np.maximum(parent, 0)], a0)
    gamma = sp.cross_motion(S, v_par)
    alpha = -gamma
    c = -sp.cross_motion(S, a_par) + sp.cross_motion(gamma, v_par)
    # subtree sums, per body, then read at each coordinate's body
    desc = anc.T
    P_b = I @ sp.crm(vel)
    Q_b = _crf_bar(h) + jnp.swapaxes(-sp.crm(vel), -1, -2) @ I  # v×* = −(v×)ᵀ
    Ic, Pc, Qc = (jnp.einsum("jk,kab->jab", desc, X)[body] for X in (I, P_b, Q_b))
    F = (desc @ f)[body]

    def mv(A, x):
        return jnp.einsum("dij,dj->di", A, x)

    D = sp.cross_force(S, F) + mv(Ic, c) + mv(Pc, gamma) + mv(Qc, alpha)
    E = mv(Ic, Sdot - gamma) + mv(Qc - Pc, S)
    IcS = mv(Ic, S)
    rI, rP, rQ = (jnp.einsum("ja,jab->jb", S, X) for X in (Ic, Pc, Qc))  # S_jᵀ X_body(j)
    dq = strict_up * (S @ D.T) + low * (rI @ c.T + rP @ gamma.T + rQ @ alpha.T)
    dv = up * (S @ E.T) + strict_low * (rI @ (Sdot - gamma).T + (rQ - rP) @ S.T)
    M = up * (S @ IcS.T) + strict_low * (IcS @ S.T)
    jq, jv = jax.jacfwd(lambda q_, v_: joint_passive_forces(model, v_, q_), argnums=(0, 1))(q, v)
    arm = jnp.diag(jnp.broadcast_to(model.armature, (t.nv,)).astype(dt))
    return dq @ tangent_map(model, q) + jq, dv + jv, M + arm


def aba_derivatives(model: Model, q, v, a, f_ext=None):
    """``(∂v̇/∂q, ∂v̇/∂q̇, M⁻¹)`` [nv, nv] each at the accelerations ``a = FD(q, q̇, τ, f_ext)``
    (module docstring: from :func:`rnea_derivatives` and one Cholesky factor of ``M``)."""
    dq, dv, M = rnea_derivatives(model, q, v, a, f_ext)
    L = jnp.linalg.cholesky(M)
    Minv = jsl.cho_solve((L, True), jnp.eye(M.shape[0], dtype=M.dtype))
    return -Minv @ dq, -Minv @ dv, Minv
