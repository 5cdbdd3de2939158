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

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics.aba import forward_dynamics
from ..dynamics.configuration import normalize
from ..loads import Loads, as_loads
from ..model.model import Model
from .simulate import _vector_field

_C = np.array([0.0, 0.5, 0.5, 1.0])  # stage nodes
_W = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0  # weights


def rk4_step(model: Model, loads: Loads, t, q, v, dt, dynamics: Callable = forward_dynamics):
    """One classical RK4 step of ``(q, v)`` from ``t`` to ``t + dt`` (stages in a scan)."""
    args = (model, loads, None, dynamics, None)  # no prescribed motion

    def stage(carry, cw):
        kq, kv, acc_q, acc_v = carry
        c, w = cw[0], cw[1]
        qs, vs = q + c * dt * kq, v + c * dt * kv
        kq, kv, _ = _vector_field(t + c * dt, (qs, vs, None), args)
        return (kq, kv, acc_q + w * kq, acc_v + w * kv), None

    zq, zv = jnp.zeros_like(q), jnp.zeros_like(v)
    cw = jnp.asarray(np.stack([_C, _W], 1), q.dtype)
    (_, _, dq, dv), _ = jax.lax.scan(stage, (zq, zv, zq, zv), cw)
    return normalize(model, q + dt * dq), v + dt * dv


def rollout(
    model: Model,
    q0,
    v0,
    dt,
    n_steps: int,
    *,
    t0=0.0,
    tau=None,
    forces=(),
    loads: Loads | None = None,
    dynamics: Callable = forward_dynamics,
):
    """``(t, q, v)`` at the ``n_steps + 1`` grid times ``t0 + k dt`` ([T], [T, nq], [T, nv]).

    Loads as in :func:`diffsim.simulate` (``tau`` may be a callable of ``(t, q, v)`` or a
    :class:`diffsim.TimeSeries`, e.g. a control sequence being optimised). Works under
    ``jit``, ``vmap`` and ``grad``; ``n_steps`` is static."""
    if not isinstance(model, Model):
        raise TypeError(f"rollout expects a diffsim Model, got {type(model).__name__}")
    dtype = model.dtype
    q0, v0 = jnp.asarray(q0, dtype), jnp.asarray(v0, dtype)
    if q0.shape != (model.nq,) or v0.shape != (model.nv,):
        raise ValueError(f"q0, v0 must have shapes ({model.nq},), ({model.nv},); got {q0.shape}, {v0.shape}")
    if int(n_steps) < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps}")
    ld = as_loads(tau, forces, loads)
    dt = jnp.asarray(dt, dtype)
    t0 = jnp.asarray(t0, dtype)

    def step(carry, k):
        q, v = carry
        q, v = rk4_step(model, ld, t0 + k * dt, q, v, dt, dynamics)
        return (q, v), (q, v)

    _, (qs, vs) = jax.lax.scan(step, (normalize(model, q0), v0), jnp.arange(int(n_steps), dtype=dtype))
    ts = t0 + dt * jnp.arange(int(n_steps) + 1, dtype=dtype)
    return ts, jnp.concatenate([normalize(model, q0)[None], qs]), jnp.concatenate([v0[None], vs])
