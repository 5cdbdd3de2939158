"""Articulated-body algorithm: O(n) forward dynamics (Featherstone 2008, Table 7.1, ``FDab``)."""

from __future__ import annotations

import jax.numpy as jnp

from .. import spatial as sp
from ..model.model import Model
from .traversal import JointData, base_acceleration, body_spatial_inertias


def forward_dynamics(model: Model, q, v, tau=None, f_ext=None):
    """Joint accelerations ``v̇`` of ``M v̇ + C v + g + D v = τ + Σ Jᵢᵀ f_ext,i``.

    ``tau`` [nv] generalised forces (joint torques; base wrench ``[F; M]`` in the base frame
    for a free joint); ``f_ext`` [nb, 6] spatial forces on the bodies, body coordinates at the
    body origin. Armature adds to each joint's ``D_i = Sᵢᵀ IAᵢ Sᵢ``.
    """
    t = model.topology
    dt = model.dtype
    tau = jnp.zeros(model.nv, dt) if tau is None else tau
    tau = tau - model.damping * v
    jd = JointData(model, q, v)
    Ib = body_spatial_inertias(model)
    nb = t.nb

    # pass 1: velocities, velocity-product accelerations c, bias forces pA
    vel, c, IA, pA = [None] * nb, [None] * nb, list(Ib), [None] * nb
    for i in range(nb):
        p = t.parent[i]
        if p < 0:
            vel[i] = jd.vJ[i]
            c[i] = jd.cJ[i]
        else:
            vel[i] = jd.Xup[i].apply_motion(vel[p]) + jd.vJ[i]
            c[i] = jd.cJ[i] + sp.cross_motion(vel[i], jd.vJ[i])
        pA[i] = sp.cross_force(vel[i], Ib[i] @ vel[i])
        if f_ext is not None:
            pA[i] = pA[i] - f_ext[i]

    # pass 2: articulated inertias, leaves to root
    U, Dinv, u = [None] * nb, [None] * nb, [None] * nb
    Xm = [X.motion_matrix() for X in jd.Xup]
    for i in reversed(range(nb)):
        S = jd.S[i]
        p = t.parent[i]
        if t.nv_joint[i]:
            sl = t.v_slice(i)
            U[i] = IA[i] @ S
            D = S.T @ U[i] + jnp.diag(model.armature[sl])
            Dinv[i] = sp.small_inv(D)
            u[i] = tau[sl] - S.T @ pA[i]
            if p >= 0:
                Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T
                pa = pA[i] + Ia @ c[i] + U[i] @ (Dinv[i] @ u[i])
        elif p >= 0:
            Ia = IA[i]
            pa = pA[i] + Ia @ c[i]
        if p >= 0:
            IA[p] = IA[p] + Xm[i].T @ Ia @ Xm[i]
            pA[p] = pA[p] + jd.Xup[i].inv_apply_force(pa)

    # pass 3: accelerations, root to leaves
    a0 = base_acceleration(model)
    acc, qdd = [None] * nb, []
    for i in range(nb):
        p = t.parent[i]
        a_p = a0 if p < 0 else acc[p]
        ai = jd.Xup[i].apply_motion(a_p) + c[i]
        if t.nv_joint[i]:
            qdd_i = Dinv[i] @ (u[i] - U[i].T @ ai)
            ai = ai + jd.S[i] @ qdd_i
            qdd.append(qdd_i)
        acc[i] = ai
    return jnp.concatenate(qdd) if qdd else jnp.zeros(0, dt)
