"""``rollout``: fixed-step classical RK4 inside one ``lax.scan`` — for planning, MPC and
batched studies where a fixed step is wanted and the adaptive machinery of :func:`simulate`
is not.

RK4 runs on ``(q, v)`` with quaternions embedded in R⁴ (``q̇ = ½ q ⊗ [0, ω]``) and projected
back onto the manifold after every step, so it keeps its 4th order (a tangent-space RK4 that
combines stage velocities at different base points, as MuJoCo's mjINT_RK4 does, is 2nd order
for rotations). The four stages run in an inner scan, so the dynamics is traced (and
compiled) once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics.configuration import normalize
from ..dynamics.dispatch import AbstractDynamics, Default, as_dynamics
from ..loads import Loads, as_loads
from ..model.model import Model
from .system import System
from .trajectory import Status, Trajectory
from .vector_field import vector_field

_C = np.array([0.0, 0.5, 0.5, 1.0])  # stage nodes
_W = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0  # weights


def rk4_step(model: Model, loads: Loads, t, q, v, dt, dynamics: AbstractDynamics = Default()):
    """One classical RK4 step of ``(q, v)`` from ``t`` to ``t + dt`` (stages in a scan)."""
    args = (model, loads, None, as_dynamics(dynamics), None)  # no prescribed motion

    def stage(carry, cw):
        kq, kv, acc_q, acc_v = carry
        c, w = cw[0], cw[1]
        qs, vs = q + c * dt * kq, v + c * dt * kv
        kq, kv, _ = vector_field(t + c * dt, (qs, vs, None), args)
        return (kq, kv, acc_q + w * kq, acc_v + w * kv), None

    zq, zv = jnp.zeros_like(q), jnp.zeros_like(v)
    cw = jnp.asarray(np.stack([_C, _W], 1), q.dtype)
    (_, _, dq, dv), _ = jax.lax.scan(stage, (zq, zv, zq, zv), cw)
    return normalize(model, q + dt * dq), v + dt * dv


def rollout(system, *args, dt=None, n_steps=None, t0=None, tau=None, forces=(), loads: Loads | None = None,
            dynamics=None) -> Trajectory:
    """The state at the ``n_steps + 1`` grid times ``t0 + k dt`` by classical RK4, as a
    :class:`Trajectory` (``t`` [T], ``q`` [T, nq], ``v`` [T, nv]; ``status`` ``NONFINITE`` if the
    state left the finite numbers).

    ``rollout(system, dt, n_steps)`` steps a :class:`System` (its model, initial state, loads,
    dynamics and ``t0``); ``rollout(model, q0, v0, dt, n_steps, *, t0, tau, forces, loads,
    dynamics)`` is the same from the pieces. Loads as in :func:`diffsim.simulate` (``tau`` may be a
    callable of ``(t, q, v)`` or a :class:`diffsim.TimeSeries`, e.g. a control sequence being
    optimised). Works under ``jit``, ``vmap`` and ``grad``; ``n_steps`` is static."""
    if isinstance(system, System):
        if len(args) > 2 or tau is not None or forces or loads is not None or dynamics is not None or t0 is not None:
            raise TypeError("rollout(system, dt, n_steps) takes the loads, dynamics and t0 from the system")
        dt = args[0] if args else dt
        n_steps = args[1] if len(args) > 1 else n_steps
        model, q0, v0, ld, dyn, t0 = (system.model, system.q0, system.v0, system.loads, system.dynamics, system.t0)
    elif isinstance(system, Model):
        model = system
        if len(args) > 4:
            raise TypeError("rollout(model, q0, v0, dt, n_steps, ...) takes at most five positional arguments")
        q0, v0 = (list(args) + [None, None])[:2]
        dt = args[2] if len(args) > 2 else dt
        n_steps = args[3] if len(args) > 3 else n_steps
        dtype = model.dtype
        q0, v0 = jnp.asarray(q0, dtype), jnp.asarray(v0, dtype)
        if q0.shape != (model.nq,) or v0.shape != (model.nv,):
            raise ValueError(f"q0, v0 must have shapes ({model.nq},), ({model.nv},); got {q0.shape}, {v0.shape}")
        ld, dyn = as_loads(tau, forces, loads), as_dynamics(dynamics)
        t0 = 0.0 if t0 is None else t0
    else:
        raise TypeError(f"rollout expects a diffsim System or Model, got {type(system).__name__}")
    if dt is None or n_steps is None:
        raise TypeError("rollout needs the step dt and the number of steps n_steps")
    if int(n_steps) < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps}")
    dtype = model.dtype
    dt = jnp.asarray(dt, dtype)
    t0 = jnp.asarray(t0, dtype)

    def step(carry, k):
        q, v = carry
        q, v = rk4_step(model, ld, t0 + k * dt, q, v, dt, dyn)
        return (q, v), (q, v)

    qa = normalize(model, q0)
    _, (qs, vs) = jax.lax.scan(step, (qa, v0), jnp.arange(int(n_steps), dtype=dtype))
    ts = t0 + dt * jnp.arange(int(n_steps) + 1, dtype=dtype)
    qs = jnp.concatenate([qa[None], qs])
    vs = jnp.concatenate([v0[None], vs])
    finite = jnp.all(jnp.isfinite(qs[-1])) & jnp.all(jnp.isfinite(vs[-1]))
    status = jnp.where(finite, Status.SUCCESS, Status.NONFINITE).astype(jnp.int32)
    return Trajectory(t=ts, q=qs, v=vs, status=status, num_steps=jnp.asarray(int(n_steps), jnp.int32), model=model)
