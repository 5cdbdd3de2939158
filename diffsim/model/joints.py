"""Joint models: configuration/velocity sizes, joint transforms, motion subspaces and the
configuration manifold of each joint type (Featherstone 2008, Table 4.1 and §4.4).

Velocity coordinates ``v`` (``nv`` per joint) and their spatial meaning:

=========  ====  ====  ======================================================================
type        nq    nv    q / v
=========  ====  ====  ======================================================================
fixed        0     0    —
revolute     1     1    angle [rad] about ``axis`` / rate [rad/s]
prismatic    1     1    displacement [m] along ``axis`` / rate [m/s]
spherical    4     3    quaternion [w,x,y,z] of child in predecessor / relative angular velocity
                        of the child **in the child frame** (the quasi-velocities of seed 000)
free         7     6    position [m] of the child origin in the predecessor frame + quaternion /
                        ``[V, ω]``: linear velocity of the child origin and angular velocity,
                        both **in the child (body) frame** (seed 000's V0, ω0)
planar       3     3    ``[x, y, θ]`` in the predecessor's xy-plane / ``[ẋ, ẏ, θ̇]`` (q̇ = v)
=========  ====  ====  ======================================================================

The joint's predecessor frame is the parent body frame moved by the body's tree placement;
the successor frame is the child body frame.
"""

from __future__ import annotations

import enum

import jax.numpy as jnp

from .. import spatial as sp


class JointType(enum.Enum):
    FIXED = "fixed"
    REVOLUTE = "revolute"
    PRISMATIC = "prismatic"
    SPHERICAL = "spherical"
    FREE = "free"
    PLANAR = "planar"


NQ = {
    JointType.FIXED: 0,
    JointType.REVOLUTE: 1,
    JointType.PRISMATIC: 1,
    JointType.SPHERICAL: 4,
    JointType.FREE: 7,
    JointType.PLANAR: 3,
}
NV = {
    JointType.FIXED: 0,
    JointType.REVOLUTE: 1,
    JointType.PRISMATIC: 1,
    JointType.SPHERICAL: 3,
    JointType.FREE: 6,
    JointType.PLANAR: 3,
}
# joints that carry a quaternion in q (the q index where it starts within the joint)
QUAT_OFFSET = {JointType.SPHERICAL: 0, JointType.FREE: 3}
USES_AXIS = (JointType.REVOLUTE, JointType.PRISMATIC)


def neutral(jtype: JointType, dtype=None):
    """The zero configuration of a joint."""
    if jtype is JointType.SPHERICAL:
        return sp.quat_identity(dtype)
    if jtype is JointType.FREE:
        return jnp.concatenate([jnp.zeros(3, dtype), sp.quat_identity(dtype)])
    return jnp.zeros(NQ[jtype], dtype)


def joint_transform(jtype: JointType, axis, q) -> sp.Transform:
    """``XJ``: successor-from-predecessor Plücker transform (Featherstone's ``jcalc``)."""
    if jtype is JointType.FIXED:
        return sp.Transform.identity(axis.dtype)
    if jtype is JointType.REVOLUTE:
        return sp.Transform.from_placement(sp.rot_axis_angle(axis, q[0]), jnp.zeros(3, axis.dtype))
    if jtype is JointType.PRISMATIC:
        return sp.Transform(jnp.eye(3, dtype=axis.dtype), axis * q[0])
    if jtype is JointType.SPHERICAL:
        return sp.Transform.from_placement(sp.quat_to_rot(q), jnp.zeros(3, q.dtype))
    if jtype is JointType.FREE:
        return sp.Transform.from_placement(sp.quat_to_rot(q[3:7]), q[:3])
    if jtype is JointType.PLANAR:
        z = jnp.zeros((), q.dtype)
        return sp.Transform.from_placement(sp.rot_z(q[2]), jnp.stack([q[0], q[1], z]))
    raise ValueError(f"unsupported joint type {jtype}")


def motion_subspace(jtype: JointType, axis, q):
    """``S`` [6, nv]: joint velocity -> spatial velocity of successor rel. predecessor, in
    successor coordinates."""
    dt = axis.dtype
    if jtype is JointType.FIXED:
        return jnp.zeros((6, 0), dt)
    if jtype is JointType.REVOLUTE:
        return jnp.concatenate([axis, jnp.zeros(3, dt)])[:, None]
    if jtype is JointType.PRISMATIC:
        return jnp.concatenate([jnp.zeros(3, dt), axis])[:, None]
    if jtype is JointType.SPHERICAL:
        return jnp.concatenate([jnp.eye(3, dtype=dt), jnp.zeros((3, 3), dt)])
    if jtype is JointType.FREE:
        Z, I3 = jnp.zeros((3, 3), dt), jnp.eye(3, dtype=dt)
        return jnp.block([[Z, I3], [I3, Z]])
    if jtype is JointType.PLANAR:
        c, s = jnp.cos(q[2]), jnp.sin(q[2])
        o, z = jnp.ones_like(c), jnp.zeros_like(c)
        cols = [
            jnp.stack([z, z, z, c, -s, z]),
            jnp.stack([z, z, z, s, c, z]),
            jnp.stack([z, z, o, z, z, z]),
        ]
        return jnp.stack(cols, axis=1)
    raise ValueError(f"unsupported joint type {jtype}")


def bias_acceleration(jtype: JointType, axis, q, v):
    """``cJ = S̊ q̇``: the apparent derivative of ``S`` in successor coordinates times the joint
    velocity (Featherstone eq 4.? ``c_J``); zero for every joint whose ``S`` is constant."""
    if jtype is JointType.PLANAR:
        c, s = jnp.cos(q[2]), jnp.sin(q[2])
        wd = v[2]
        lin = wd * (v[0] * jnp.stack([-s, -c, 0.0 * c]) + v[1] * jnp.stack([c, -s, 0.0 * c]))
        return jnp.concatenate([jnp.zeros(3, q.dtype), lin])
    return jnp.zeros(6, axis.dtype)


def configuration_rate(jtype: JointType, q, v):
    """``q̇`` from the velocity coordinates (quaternion kinematics for spherical/free)."""
    if jtype is JointType.SPHERICAL:
        return sp.quat_rate(q, v)
    if jtype is JointType.FREE:
        R = sp.quat_to_rot(q[3:7])
        return jnp.concatenate([sp.mv(R, v[:3]), sp.quat_rate(q[3:7], v[3:6])])
    return v


def integrate(jtype: JointType, q, v, dt=1.0):
    """Retraction ``q ⊕ v dt``: exact on SO(3) (``q ⊗ exp(ω dt)``), and for the free joint the
    position moves by ``R(q) V dt`` (R³ × SO(3), the inverse of :func:`difference`)."""
    if jtype is JointType.SPHERICAL:
        return sp.quat_integrate(q, v, dt)
    if jtype is JointType.FREE:
        R = sp.quat_to_rot(q[3:7])
        return jnp.concatenate([q[:3] + sp.mv(R, v[:3]) * dt, sp.quat_integrate(q[3:7], v[3:6], dt)])
    return q + v * dt


def difference(jtype: JointType, q0, q1):
    """Tangent vector ``v`` with ``integrate(q0, v) == q1`` (``q1 ⊖ q0``)."""
    if jtype is JointType.SPHERICAL:
        return sp.quat_log(sp.quat_mul(sp.quat_conj(q0), q1))
    if jtype is JointType.FREE:
        R = sp.quat_to_rot(q0[3:7])
        return jnp.concatenate(
            [sp.mv(R.T, q1[:3] - q0[:3]), sp.quat_log(sp.quat_mul(sp.quat_conj(q0[3:7]), q1[3:7]))]
        )
    return q1 - q0


def normalize(jtype: JointType, q):
    """Project a joint configuration onto its manifold (unit quaternions)."""
    if jtype is JointType.SPHERICAL:
        return sp.quat_normalize(q)
    if jtype is JointType.FREE:
        return jnp.concatenate([q[:3], sp.quat_normalize(q[3:7])])
    return q
