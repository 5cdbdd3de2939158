"""Articulated-body algorithm: O(n) forward dynamics of rigid trees (Featherstone 2008,
Table 7.1, ``FDab``)."""

from __future__ import annotations

import jax.numpy as jnp

from .. import spatial as sp
from ..model.model import Model, joint_passive_forces
from .rnea import inverse_dynamics_rigid
from .traversal import (
    JointData,
    backward_pass,
    base_acceleration,
    body_spatial_inertias,
    forward_pass,
    implicit_forward_dynamics,
)


def articulated_body_algorithm(model: Model, q, v, tau, f_ext=None):
    """ABA itself (Featherstone 2008, Table 7.1): ``v̇`` [nv] of a rigid tree for joint forces
    ``tau`` [nv] and body wrenches ``f_ext`` [nb, 6] (body coordinates, at the body origins)."""
    t = model.topology
    tau = tau - joint_passive_forces(model, v, q)
    jd = JointData(model, q, v)
    Xm = jd.Xm  # i_X_λ(i) [nb, 6, 6]; its transpose carries forces to the parent
    Ib = body_spatial_inertias(model)

    # pass 1: velocities root to leaves; then c = cJ + v × vJ and pA = v ×* I v − f_ext, batched
    vel = jnp.stack(forward_pass(t, lambda i, v_p: jd.vJ[i] if v_p is None else Xm[i] @ v_p + jd.vJ[i]))
    c = jd.cJ + sp.cross_motion(vel, jd.vJ)  # for a root v = vJ, so v × vJ = 0
    pA0 = sp.cross_force(vel, jnp.einsum("bij,bj->bi", Ib, vel))
    if f_ext is not None:
        pA0 = pA0 - f_ext

    # pass 2: articulated inertias, leaves to root
    def inward(i, acc):
        IA, pA = acc
        has_parent = t.parent[i] >= 0
        if not t.nv_joint[i]:
            return ((Xm[i].T @ IA @ Xm[i], Xm[i].T @ (pA + IA @ c[i])) if has_parent else None), None
        S, sl = jd.S[i], t.v_slice(i)
        U = IA @ S
        Dinv = sp.small_inv(S.T @ U + jnp.diag(model.armature[sl]))
        u = tau[sl] - S.T @ pA
        msg = None
        if has_parent:
            UD = U @ Dinv
            Ia = IA - UD @ U.T
            pa = pA + Ia @ c[i] + UD @ u
            msg = (Xm[i].T @ Ia @ Xm[i], Xm[i].T @ pa)
        return msg, (U, Dinv, u)

    _, UDu = backward_pass(t, inward, [(Ib[i], pA0[i]) for i in range(t.nb)])

    # pass 3: accelerations, root to leaves
    def outward(i, parent):
        ai = Xm[i] @ parent[0] + c[i]
        if not t.nv_joint[i]:
            return ai, None
        U, Dinv, u = UDu[i]
        qdd = Dinv @ (u - U.T @ ai)
        return ai + jd.S[i] @ qdd, qdd

    out = forward_pass(t, outward, (base_acceleration(model), None))
    qdd = [o[1] for o in out if o[1] is not None]
    return jnp.concatenate(qdd) if qdd else jnp.zeros(0, model.dtype)


def _minv_rigid(model: Model, q, x):
    """``M⁻¹ x`` by ABA at rest, without gravity and springs (:meth:`Model.at_rest_unloaded`)."""
    return articulated_body_algorithm(model.at_rest_unloaded(), q, jnp.zeros(model.nv, model.dtype), x, None)


#: ABA with derivatives from the implicit function ``RNEA(q, v, v̇) = τ``
#: (:func:`~.traversal.implicit_forward_dynamics`).
forward_dynamics_aba = implicit_forward_dynamics(articulated_body_algorithm, inverse_dynamics_rigid, _minv_rigid)
