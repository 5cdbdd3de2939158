"""Recursive Newton–Euler inverse dynamics (Featherstone 2008, Table 5.1, ``ID``)."""

from __future__ import annotations

import jax.numpy as jnp

from .. import spatial as sp
from ..model.model import Model
from .traversal import JointData, backward_pass, base_acceleration, body_spatial_inertias, forward_pass


def _zeros_fext(model):
    return jnp.zeros((model.nb, 6), model.dtype)


def inverse_dynamics(model: Model, q, v, a, f_ext=None):
    """``τ = M(q) a + C(q, v) v + g(q) + D v − Σ Jᵢᵀ f_ext,i``.

    ``f_ext`` [nb, 6]: spatial force ``[n; f]`` on each body, **body coordinates at the body
    origin**. Joint damping ``D`` and armature are included, so that
    ``forward_dynamics(model, q, v, inverse_dynamics(model, q, v, a)) == a``.
    """
    if model.topology.has_flex:
        from ..flexible.dynamics import inverse_dynamics_flexible

        return inverse_dynamics_flexible(model, q, v, a, f_ext)
    t = model.topology
    f_ext = _zeros_fext(model) if f_ext is None else f_ext
    jd = JointData(model, q, v)
    Ib = body_spatial_inertias(model)
    a0 = base_acceleration(model)

    Xm = jd.Xm

    def outward(i, parent):  # (v_i, a_i)
        ai = jd.S[i] @ a[t.v_slice(i)] + jd.cJ[i]
        if parent is None:
            return jd.vJ[i], Xm[i] @ a0 + ai
        v_p, a_p = parent
        vi = Xm[i] @ v_p + jd.vJ[i]
        return vi, Xm[i] @ a_p + ai + sp.cross_motion(vi, jd.vJ[i])

    va = forward_pass(t, outward, None)
    vel = jnp.stack([x[0] for x in va])
    acc = jnp.stack([x[1] for x in va])
    f_all = jnp.einsum("bij,bj->bi", Ib, acc) + sp.cross_force(vel, jnp.einsum("bij,bj->bi", Ib, vel)) - f_ext
    f = backward_pass(t, lambda i, fi: Xm[i].T @ fi, [f_all[i] for i in range(t.nb)])
    tau = [jd.S[i].T @ f[i] for i in range(t.nb)]
    tau = jnp.concatenate(tau) if tau else jnp.zeros(0, model.dtype)
    return tau + model.armature * a + model.damping * v


def bias_forces(model: Model, q, v, f_ext=None):
    """``C(q, v) v + g(q) + D v − Jᵀ f_ext`` (inverse dynamics at zero acceleration)."""
    return inverse_dynamics(model, q, v, jnp.zeros(model.nv, model.dtype), f_ext)


def gravity_forces(model: Model, q):
    """``g(q)``: generalised gravity forces."""
    z = jnp.zeros(model.nv, model.dtype)
    return inverse_dynamics(model, q, z, z)
