"""Fluid forces of MuJoCo's inertia-based model on each body's equivalent inertia box
(:mod:`diffsim.model.fluid`), as body wrenches.

With the centre-of-mass velocity ``v`` and angular velocity ``ω`` in the body's principal axes,
box sides ``r`` and mean diameter ``d = (r_x + r_y + r_z)/3`` (MuJoCo, *Computation: fluid
forces, inertia model*): viscous (Stokes) ``f_V = −3 β π d v``, ``g_V = −β π d³ ω``; quadratic
drag ``f_D,x = −½ ρ r_y r_z |v_x| v_x`` and ``g_D,x = −(ρ/64) r_x (r_y⁴ + r_z⁴) |ω_x| ω_x``
(cyclically). No wind. The forces act at the centre of mass; the wrenches are returned in body
coordinates at the body origin (``f_ext``'s convention).
"""

from __future__ import annotations

import jax.numpy as jnp

from ..model.model import Model
from .kinematics import body_velocities


def box_sides(model: Model):
    """Sides [nb, 3] of the equivalent inertia boxes (zero for massless bodies)."""
    R = model.fluid.axes
    I = jnp.einsum("bji,bjk,bkl->bil", R, model.inertia, R)  # principal frame
    Ip = jnp.diagonal(I, axis1=1, axis2=2)
    m = model.mass[:, None]
    s = jnp.stack([Ip[:, 1] + Ip[:, 2] - Ip[:, 0], Ip[:, 0] + Ip[:, 2] - Ip[:, 1], Ip[:, 0] + Ip[:, 1] - Ip[:, 2]], -1)
    inside = 6.0 * s / jnp.where(m > 0, m, 1.0)
    return jnp.where((m > 0) & (inside > 0), jnp.sqrt(jnp.where(inside > 0, inside, 1.0)), 0.0)


def fluid_wrenches(model: Model, q, v):
    """Fluid wrenches ``[n; f]`` [nb, 6] on every body (module docstring)."""
    return _wrenches(model, body_velocities(model, q, v))


def _wrenches(model: Model, tw):
    """The fluid wrenches at the body twists ``tw`` [nb, 6] (``[ω; v]``, body coordinates, origin)."""
    fl = model.fluid
    R, c = fl.axes, model.com
    w_b, vo_b = tw[:, :3], tw[:, 3:]
    vc_b = vo_b + jnp.cross(w_b, c)
    w, vc = jnp.einsum("bji,bj->bi", R, w_b), jnp.einsum("bji,bj->bi", R, vc_b)
    r = box_sides(model)
    d = jnp.mean(r, axis=-1, keepdims=True)
    area = jnp.stack([r[:, 1] * r[:, 2], r[:, 0] * r[:, 2], r[:, 0] * r[:, 1]], -1)
    r4 = r**4
    arm = jnp.stack([r[:, 0] * (r4[:, 1] + r4[:, 2]), r[:, 1] * (r4[:, 0] + r4[:, 2]), r[:, 2] * (r4[:, 0] + r4[:, 1])], -1)
    f = -3.0 * fl.viscosity * jnp.pi * d * vc - 0.5 * fl.density * area * jnp.abs(vc) * vc
    g = -fl.viscosity * jnp.pi * d**3 * w - fl.density / 64.0 * arm * jnp.abs(w) * w
    f_b, g_b = jnp.einsum("bij,bj->bi", R, f), jnp.einsum("bij,bj->bi", R, g)
    return jnp.concatenate([g_b + jnp.cross(c, f_b), f_b], axis=-1)


def fluid_power(model: Model, q, v):
    """Power of the fluid forces on the system [W] (≤ 0: the fluid only dissipates)."""
    tw = body_velocities(model, q, v)  # one kinematics pass for the wrenches and their power
    return jnp.sum(_wrenches(model, tw) * tw)
