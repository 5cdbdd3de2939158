"""Recursive Newton–Euler inverse dynamics of rigid trees (Featherstone 2008, Table 5.1, ``ID``)."""

from __future__ import annotations

import jax.numpy as jnp

from .. import spatial as sp
from ..model.model import Model, joint_passive_forces
from .traversal import JointData, backward_pass, base_acceleration, body_spatial_inertias, forward_pass


def inverse_dynamics_rigid(model: Model, q, v, a, f_ext=None):
    """``τ = M(q) a + C(q, v) v + g(q) + D(v) − Σ Jᵢᵀ f_ext,i`` of a rigid tree; ``D(v)`` the
    joints' passive forces (damping, Coulomb friction) and armature included, so that
    ``articulated_body_algorithm(model, q, v, inverse_dynamics_rigid(model, q, v, a)) == a``."""
    t = model.topology
    f_ext = jnp.zeros((model.nb, 6), model.dtype) if f_ext is None else f_ext
    jd = JointData(model, q, v)
    Ib = body_spatial_inertias(model)
    Xm = jd.Xm

    def outward(i, parent):  # (v_i, a_i)
        ai = jd.S[i] @ a[t.v_slice(i)] + jd.cJ[i]
        if parent is None:
            return jd.vJ[i], Xm[i] @ base_acceleration(model) + ai
        v_p, a_p = parent
        vi = Xm[i] @ v_p + jd.vJ[i]
        return vi, Xm[i] @ a_p + ai + sp.cross_motion(vi, jd.vJ[i])

    va = forward_pass(t, outward)
    vel = jnp.stack([x[0] for x in va])
    acc = jnp.stack([x[1] for x in va])
    f_all = jnp.einsum("bij,bj->bi", Ib, acc) + sp.cross_force(vel, jnp.einsum("bij,bj->bi", Ib, vel)) - f_ext
    f, _ = backward_pass(t, lambda i, fi: (Xm[i].T @ fi, None), [f_all[i] for i in range(t.nb)])
    tau = [jd.S[i].T @ f[i] for i in range(t.nb)]
    tau = jnp.concatenate(tau) if tau else jnp.zeros(0, model.dtype)
    return tau + model.armature * a + joint_passive_forces(model, v, q)
