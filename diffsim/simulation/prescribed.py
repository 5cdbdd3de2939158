"""The mixed problem: some joints torque-driven, others motion-prescribed (seed 003 §3).

A :class:`Prescribed` names joints (revolute/prismatic) whose coordinates follow a given
function of time. ``simulate(..., prescribed=...)`` integrates the other coordinates with the
O(n) sweep (:func:`diffsim.flexible.articulated_flexible`), and :func:`joint_torques` returns the
driving torques the prescribed joints need (damping and armature included).
"""

from __future__ import annotations

from typing import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..contact.laws import AbstractFrictionLaw, AbstractStatefulFrictionLaw
from ..dynamics.flexible import articulated_flexible
from ..loads import as_loads
from ..model import joints as jt
from ..model.model import Model
from ..precision import full_precision


class Prescribed(eqx.Module):
    """Joints with imposed motion ``motion(t) -> q_p`` [k] (one coordinate per joint, in the
    order of ``joints``); velocities and accelerations by forward-mode differentiation of
    ``motion`` (exact), or ``motion`` may return ``(q, q̇, q̈)`` itself."""

    bodies: tuple[int, ...] = eqx.field(static=True)
    v_index: tuple[int, ...] = eqx.field(static=True)
    q_index: tuple[int, ...] = eqx.field(static=True)
    motion: Callable

    def evaluate(self, t):
        """``(q_p, q̇_p, q̈_p)`` at time ``t``."""
        out = self.motion(t)
        if isinstance(out, tuple):
            return tuple(jnp.asarray(x) for x in out)
        f = lambda s: jnp.asarray(self.motion(s))  # noqa: E731
        q, qd = jax.jvp(f, (t,), (jnp.ones_like(t),))
        qdd = jax.jvp(lambda s: jax.jvp(f, (s,), (jnp.ones_like(s),))[1], (t,), (jnp.ones_like(t),))[1]
        return q, qd, qdd

    def impose(self, t, q, v):
        """``q``, ``v`` with the prescribed entries replaced, and the full-length ``q̈`` vector
        holding the prescribed accelerations."""
        qp, vp, ap = self.evaluate(t)
        qi, vi = np.asarray(self.q_index), np.asarray(self.v_index)
        q = q.at[qi].set(qp.astype(q.dtype))
        v = v.at[vi].set(vp.astype(v.dtype))
        qdd = jnp.zeros_like(v).at[vi].set(ap.astype(v.dtype))
        return q, v, qdd


def prescribe(model: Model, joints: Sequence[str], motion: Callable) -> Prescribed:
    """:class:`Prescribed` for the named joints (revolute or prismatic)."""
    t = model.topology
    bodies, vi, qi = [], [], []
    for name in joints:
        i = t.joint_index(name)
        if t.joint_types[i] not in (jt.JointType.REVOLUTE, jt.JointType.PRISMATIC):
            raise ValueError(
                f"joint {name!r} is {t.joint_types[i].value}; only revolute and prismatic joints can be motion-prescribed"
            )
        bodies.append(i)
        vi.append(t.v_start[i])
        qi.append(t.q_start[i])
    if len(set(bodies)) != len(bodies):
        raise ValueError(f"a joint is listed twice in {list(joints)}")
    return Prescribed(bodies=tuple(bodies), v_index=tuple(vi), q_index=tuple(qi), motion=motion)


def mixed_dynamics(model: Model, prescribed: Prescribed, t, q, v, tau, f_ext):
    """``(q, v, v̇, τ_joint)``: state with the prescribed entries imposed, accelerations and
    the joint forces (the driving torques on prescribed joints)."""
    q, v, qdd = prescribed.impose(t, q, v)
    nvr = model.topology.nv_rigid
    vdot, tau_j = articulated_flexible(model, q, v, tau, f_ext, prescribed.bodies, qdd[:nvr])
    return q, v, vdot, tau_j


def joint_friction(model: Model, coulomb=0.0, viscous=0.0, width=1e-3, law=None):
    """Joint friction as a ``tau`` callable on every joint DOF.

    Default: ``τ = −F_s tanh(q̇/ε) − F_v q̇`` (the smoothed sign of seed 003's
    ``F_s sgn(q̇) + F_v q̇``; ``width`` ε → 0 recovers the sign). ``coulomb``, ``viscous`` and
    ``width``: scalars or [nv_rigid] arrays (differentiable).

    ``law``: any static friction law of :mod:`diffsim.contact.laws` (Coulomb, Stribeck,
    Ambrosio, Threlfall, …) evaluated at the joint rate with unit normal force, so that its
    ``μ`` parameters are friction torques [N m] (forces for prisms): ``τ = law(q̇, 1) − F_v q̇``.
    The dynamic LuGre law needs a state per joint and is not accepted here.

    The model's own joint friction — ``joint.<j>.frictionloss`` (Coulomb, smoothed over
    ``friction_width``) and ``joint.<j>.damping`` (viscous) — is the same law with named,
    fittable parameters, included by every algorithm; this helper is for other laws."""
    n = model.topology.nv_rigid
    ne = model.topology.ne
    if law is not None:
        if isinstance(law, AbstractStatefulFrictionLaw):
            raise ValueError("joint_friction: the LuGre law has a bristle state; use it in contact "
                             "(ds.compliant_contact)")
        if not isinstance(law, AbstractFrictionLaw):
            raise ValueError(f"joint_friction: law must be a diffsim friction law, got {type(law).__name__}")
    elif np.any(np.asarray(width) <= 0):
        raise ValueError(f"friction width must be positive, got {width}")

    def tau(t, q, v):
        vj = v[:n]
        if law is not None:
            f = law(vj, jnp.ones_like(vj)) - jnp.asarray(viscous) * vj
        else:
            f = -jnp.asarray(coulomb) * jnp.tanh(vj / jnp.asarray(width)) - jnp.asarray(viscous) * vj
        return jnp.concatenate([f, jnp.zeros(ne, v.dtype)])

    return tau


@full_precision
def joint_torques(traj, prescribed: Prescribed, tau=None):
    """Joint forces [T, nv_rigid] along a trajectory: the applied ``tau`` on free joints and, on
    prescribed joints, the driving torque on top of the applied loads (pass the same ``tau`` as
    to ``simulate``, e.g. :func:`joint_friction`)."""
    model = traj.model
    loads = as_loads(tau, (), None)

    def one(t, q, v):
        u, f = loads.evaluate(model, t, q, v)
        return mixed_dynamics(model, prescribed, t, q, v, u, f)[3]

    return jax.jit(jax.vmap(one))(traj.t, traj.q, traj.v)
