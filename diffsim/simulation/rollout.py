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

from .._util import is_concrete
from ..dynamics.configuration import normalize
from ..dynamics.dispatch import AbstractDynamics, Default, as_dynamics
from ..loads import Loads, as_loads
from ..model.model import Model
from ..precision import full_precision
from .system import System
from .trajectory import Status, Trajectory
from .vector_field import vector_field

_C = np.array([0.0, 0.5, 0.5, 1.0])  # stage nodes
_W = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0  # weights
RK4_WEIGHTS = _W  # the classical RK4 weights b_i (a cost integrated over a step: dt Σ b_i ℓ(x_i))


def rk4_step(model: Model, loads: Loads, t, q, v, dt, dynamics: AbstractDynamics = Default()):
    """One classical RK4 step of ``(q, v)`` from ``t`` to ``t + dt`` (stages in a scan)."""
    q1, v1, _ = rk4_step_stages(model, loads, t, q, v, dt, dynamics)
    return q1, v1


def rk4_step_stages(model: Model, loads: Loads, t, q, v, dt, dynamics: AbstractDynamics = Default()):
    """:func:`rk4_step` and its stage states: ``(q1, v1, (q_s [4, nq], v_s [4, nv]))`` with
    ``x_1 = x``, ``x_{i+1} = x + c_{i+1} dt k_i`` (``k_i`` the vector field at ``x_i``; Butcher
    nodes ``c = (0, ½, ½, 1)``), the states at which the step evaluates the dynamics."""
    args = (model, loads, None, as_dynamics(dynamics), None)  # no prescribed motion

    def stage(carry, cw):
        kq, kv, acc_q, acc_v = carry
        c, w = cw[0], cw[1]
        qs, vs = q + c * dt * kq, v + c * dt * kv
        kq, kv, _ = vector_field(t + c * dt, (qs, vs, None), args)
        return (kq, kv, acc_q + w * kq, acc_v + w * kv), (qs, vs)

    zq, zv = jnp.zeros_like(q), jnp.zeros_like(v)
    cw = jnp.asarray(np.stack([_C, _W], 1), q.dtype)
    (_, _, dq, dv), stages = jax.lax.scan(stage, (zq, zv, zq, zv), cw)
    return normalize(model, q + dt * dq), v + dt * dv, stages


@full_precision
def rollout(system, *args, dt=None, n_steps=None, t0=None, tau=None, forces=(), ctrl=None, loads: Loads | None = None,
            dynamics=None, save_every: int = 1, checkpoint: int | bool = False) -> Trajectory:
    """The state at the ``n_steps + 1`` grid times ``t0 + k dt`` by classical RK4, as a
    :class:`Trajectory` (``t`` [T], ``q`` [T, nq], ``v`` [T, nv]; ``status`` ``NONFINITE`` if the
    state left the finite numbers).

    ``rollout(system, dt, n_steps)`` steps a :class:`System` (its model, initial state, loads,
    dynamics and ``t0``; a system with contact, joint limits or prescribed motion is refused: RK4
    on the smooth dynamics cannot apply them, :func:`diffsim.simulate` does); ``rollout(model, q0,
    v0, dt, n_steps, *, t0, tau, forces, ctrl, loads, dynamics)`` is the same from the pieces. Loads as in :func:`diffsim.simulate` (``tau`` or ``ctrl`` may be a
    callable of ``(t, q, v)`` or a :class:`diffsim.TimeSeries`, e.g. a control sequence being
    optimised). Works under ``jit``, ``vmap`` and ``grad``; ``n_steps`` is static.

    Memory (what XLA plans per sample; S0, float64: the state is 328 B, one RK4 step's reverse-mode
    residuals about 47 KB; ``benchmarks/bench_memory.py``):

    * ``save_every=k`` (a divisor of ``n_steps``) keeps every k-th state only (``T = n_steps/k + 1``);
      ``save_every=n_steps`` keeps the initial and the final state. The scan carries the state
      alone, and under ``jit`` a caller that reads only the final state (``traj.q[-1]``,
      ``traj.v[-1]``, ``traj.status``) gets the same with the default ``save_every=1``: XLA drops the
      unused saved states (S0: 4.8 KB of temporaries per sample, for any ``n_steps``).
    * Reverse mode stores every step's residuals (``n_steps`` × ~47 KB on S0). ``checkpoint=c``
      (``True`` = 1; a divisor of ``n_steps`` that divides or is a multiple of ``save_every``) stores
      the state every c steps and recomputes the c steps in between (``jax.checkpoint`` per block):
      about ``n_steps/c`` states + c steps' residuals (S0: 328 B × n_steps/c + 52 KB × c + 21 KB),
      for one more forward pass of compute. For a loss of the final state pass ``save_every=n_steps`` too:
      otherwise the backward pass also holds the (zero) cotangent of the saved trajectory, one more
      state per step.

    The saved states do not depend on ``save_every`` or ``checkpoint``: they are bit-identical to
    the corresponding rows of the default rollout (gradients with ``checkpoint`` agree to rounding)."""
    if isinstance(system, System):
        if (len(args) > 2 or tau is not None or forces or ctrl is not None or loads is not None or dynamics is not None
                or t0 is not None):
            raise TypeError("rollout(system, dt, n_steps) takes the loads, dynamics and t0 from the system")
        ignored = [what for what, x in (("contact", system.contact), ("joint limits", system.limits),
                                        ("prescribed motion", system.prescribed)) if x is not None]
        if ignored:  # RK4 on the smooth dynamics would step through them as if they were not there
            raise ValueError(f"rollout steps a system's smooth dynamics and cannot apply its {' and '.join(ignored)}: "
                             "use ds.simulate, or build the System without them (limits=False for a model "
                             "file's joint ranges)")
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
        ld, dyn = as_loads(tau, forces, loads, ctrl, model), as_dynamics(dynamics)
        t0 = 0.0 if t0 is None else t0
    else:
        raise TypeError(f"rollout expects a diffsim System or Model, got {type(system).__name__}")
    if dt is None or n_steps is None:
        raise TypeError("rollout needs the step dt and the number of steps n_steps")
    if isinstance(n_steps, bool) or int(n_steps) != n_steps or int(n_steps) < 1:  # 2.7 became 2
        raise ValueError(f"n_steps must be a positive integer, got {n_steps}")
    if is_concrete(dt) and not float(dt) > 0:  # a negative step integrated backwards, 0 stood still
        raise ValueError(f"the step dt must be positive, got {dt}")
    dtype = model.dtype
    dt = jnp.asarray(dt, dtype)
    t0 = jnp.asarray(t0, dtype)

    n = int(n_steps)
    k_save = _divisor(save_every, n, "save_every")
    k_ckpt = 0 if not checkpoint else _divisor(1 if checkpoint is True else checkpoint, n, "checkpoint")
    if k_ckpt and k_save % k_ckpt and k_ckpt % k_save:
        raise ValueError(f"checkpoint ({k_ckpt}) must divide or be a multiple of save_every ({k_save})")

    def step(carry, k):
        q, v = carry
        q, v = rk4_step(model, ld, t0 + k * dt, q, v, dt, dyn)
        return (q, v), (q, v)

    qa = normalize(model, q0)
    ks = jnp.arange(n, dtype=dtype)
    if k_save == 1 and not k_ckpt:
        (qf, vf), (qs, vs) = jax.lax.scan(step, (qa, v0), ks)
        # the last row from the carry (the same values as ys[-1]): a caller under jit that reads only
        # the final state leaves the stacked states unused, and XLA drops them
        qs, vs = qs[:-1], vs[:-1]
    else:
        (qf, vf), (qs, vs) = _saved_states(step, (qa, v0), ks, k_save, k_ckpt)
    ts = t0 + dt * jnp.arange(0, n + 1, k_save, dtype=dtype)
    qs = jnp.concatenate([qa[None], qs, qf[None]])
    vs = jnp.concatenate([v0[None], vs, vf[None]])
    finite = jnp.all(jnp.isfinite(qf)) & jnp.all(jnp.isfinite(vf))
    status = jnp.where(finite, Status.SUCCESS, Status.NONFINITE).astype(jnp.int32)
    return Trajectory(t=ts, q=qs, v=vs, status=status, num_steps=jnp.asarray(n, jnp.int32), model=model)


def _divisor(k, n, name):
    if isinstance(k, bool) or int(k) != k or int(k) < 1 or n % int(k):
        raise ValueError(f"{name} must be a positive integer dividing n_steps ({n}), got {k!r}")
    return int(k)


def _saved_states(step, carry, ks, k_save, k_ckpt):
    """Final carry and the states after steps k_save, 2 k_save, …, n − k_save (the final one is the
    carry), stepping in nested scans; with ``k_ckpt`` each block of that many steps is a
    ``jax.checkpoint`` (reverse mode stores its input state only and recomputes it)."""

    def advance(c, seg):  # the state after the steps of seg, nothing stacked
        return jax.lax.scan(lambda c, k: (step(c, k)[0], None), c, seg)[0]

    def remat(f):
        return jax.checkpoint(f, prevent_cse=False)  # inside a scan: CSE is harmless

    def save(f):  # a scan body that also emits the state it reaches
        def body(c, x):
            c = f(c, x)
            return c, c

        return body

    if k_ckpt and k_ckpt > k_save:  # blocks of k_ckpt steps, each saving k_ckpt / k_save states
        def block(c, b):
            return jax.lax.scan(save(advance), c, b)

        carry, ys = jax.lax.scan(remat(block), carry, ks.reshape(-1, k_ckpt // k_save, k_save))
        ys = jax.tree.map(lambda y: y.reshape(-1, *y.shape[2:]), ys)
    else:  # segments of k_save steps, each in blocks of k_ckpt (or one plain scan)
        if k_ckpt:
            blk = remat(advance)

            def segment(c, seg):
                return jax.lax.scan(lambda c, b: (blk(c, b), None), c, seg.reshape(-1, k_ckpt))[0]
        else:
            segment = advance
        carry, ys = jax.lax.scan(save(segment), carry, ks.reshape(-1, k_save))
    return carry, jax.tree.map(lambda y: y[:-1], ys)
