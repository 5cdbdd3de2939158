"""Cost terms for planning: small pure functions returning a scalar, to be combined in the
``running_cost(q, v, τ)`` / ``terminal_cost(q, v)`` given to :func:`diffsim.plan.solve`.

Each is smooth (C^∞) so that DDP's exact cost Hessians are well defined, and each is ≈ a squared
distance near its minimum, so weights read as ``1/tolerance²``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..dynamics.dispatch import kinetic_energy
from ..dynamics.kinematics import site_poses
from ..dynamics.sections import strain_energy
from ..model.joints import JointType
from ..model.model import Model


def _site(model: Model, site) -> int:
    return model.topology.site_index(site) if isinstance(site, str) else int(site)


def site_position_error(model: Model, q, site, target):
    """``|p_s(q) − p*|²`` [m²]: squared distance of site ``site`` (name or index) from the world
    point ``target`` [3]."""
    p = site_poses(model, q)[1][_site(model, site)]
    return jnp.sum((p - jnp.asarray(target, p.dtype)) ** 2)


def site_orientation_error(model: Model, q, site, target_rot):
    """``3 − tr(R*ᵀ R_s(q)) = 2 (1 − cos θ)`` [-], with ``θ`` the angle of the rotation from the
    target orientation ``target_rot`` [3, 3] (world frame) to the site's: ≈ θ² near the target,
    smooth everywhere (no logarithm singularity at θ = 0 or π)."""
    R = site_poses(model, q)[0][_site(model, site)]
    return 3.0 - jnp.sum(jnp.asarray(target_rot, R.dtype) * R)


def _base_quaternion_slice(model: Model, joint):
    t = model.topology
    if joint is None:
        cands = [i for i, jt in enumerate(t.joint_types) if jt in (JointType.FREE, JointType.SPHERICAL)]
        if not cands:
            raise ValueError("base_attitude_change: the model has no free or spherical joint")
        i = cands[0]
    else:
        if joint not in t.joint_names:
            raise ValueError(f"base_attitude_change: no joint named {joint!r}")
        i = t.joint_names.index(joint)
        if t.joint_types[i] not in (JointType.FREE, JointType.SPHERICAL):
            raise ValueError(f"base_attitude_change: joint {joint!r} has no quaternion")
    s = t.q_start[i] + (3 if t.joint_types[i] is JointType.FREE else 0)
    return slice(s, s + 4)


def base_attitude_change(model: Model, q, q_ref, joint: str | None = None):
    """``4 (1 − ⟨ρ, ρ_ref⟩²) = 4 sin²(θ/2)`` [-] (≈ θ²): the rotation angle ``θ`` of the base (the
    first free or spherical joint, or ``joint``) between configurations ``q_ref`` and ``q``;
    invariant to the quaternion's sign."""
    sl = _base_quaternion_slice(model, joint)
    a, b = q[sl], jnp.asarray(q_ref)[sl]
    c = jnp.dot(a, b) / (jnp.linalg.norm(a) * jnp.linalg.norm(b))
    return 4.0 * (1.0 - c**2)


def box_penalty(x, lo, hi, width):
    """``Σ (w·softplus((x − hi)/w))² + (w·softplus((lo − x)/w))²``: a smooth exterior penalty of
    the box ``lo ≤ x ≤ hi`` (→ the squared violation as the width ``w → 0``; ≈ ``w² e^{−2d/w}``
    at a distance ``d`` inside)."""
    x = jnp.asarray(x)
    w = jnp.asarray(width, x.dtype)
    up = w * jax.nn.softplus((x - hi) / w)
    down = w * jax.nn.softplus((lo - x) / w)
    return jnp.sum(up**2 + down**2)


def joint_limit_barrier(q, lower, upper, width=0.01, indices=None):
    """Smooth penalty :func:`box_penalty` of joint positions ``q[indices]`` outside
    ``[lower, upper]`` [rad or m]; ``width`` [same unit] sets how sharp it is."""
    x = q if indices is None else q[jnp.asarray(indices)]
    return box_penalty(x, lower, upper, width)


def torque_barrier(tau, lower, upper, width=0.1, indices=None):
    """Smooth penalty :func:`box_penalty` of torques ``tau[indices]`` outside ``[lower, upper]``
    [N m or N]: soft limits for the unconstrained methods (DDP and shooting also take hard
    limits, ``tau_limits=``)."""
    x = tau if indices is None else tau[jnp.asarray(indices)]
    return box_penalty(x, lower, upper, width)


def elastic_energy(model: Model, q, v):
    """Residual elastic energy of the flexible links [J]: strain energy ``Σ ½ δᵢᵀ Kᵢ δᵢ`` plus the
    kinetic energy of the modal motion alone, ``T(q, [0; δ̇])`` = ``½ δ̇ᵀ M_δδ(q) δ̇`` (the joints
    held still). Zero exactly when every link is undeformed and at rest relative to its floating
    frame: the residual vibration after a rest-to-rest move. Zero for rigid models."""
    t = model.topology
    if not t.has_flex:
        return jnp.zeros((), model.dtype)
    E = jnp.zeros((), model.dtype)
    for i in range(t.nb):
        fb = model.flex[i] if model.flex else None
        if fb is not None:
            E = E + strain_energy(fb, q[t.e_q_slice(i)])
    v_modal = jnp.concatenate([jnp.zeros(t.nv_rigid, v.dtype), v[t.nv_rigid:]])
    return E + kinetic_energy(model, q, v_modal)
