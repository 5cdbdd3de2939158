"""``ur5-reach``: a UR5 arm (fixed base, six revolute joints, loaded from its URDF) moves its tool
to a point 1 s later and stops — the planning problem of issue 16, scenario 1, defined once for
diffsim's planner and for the Crocoddyl peer (``benchmarks/crocoddyl_reach.py`` reads the JSON that
:func:`write_problem` writes).

The robot is example-robot-data's ``ur5_robot.urdf`` (BSD-3-Clause, vendored unchanged as
``data/ur5.urdf``); the tool is the frame of its ``tool0`` link (a massless link on a fixed joint,
so a body of the diffsim model).

Discretisation (the planner's, issue 16 §1): ``horizon`` steps of classical RK4 on ``(q, v)`` with
the torque held constant over each step (zero-order hold), ``x_{k+1} = RK4(x_k, τ_k, dt)`` — the
step of :func:`diffsim.rollout` (:func:`diffsim.simulation.rollout.rk4_step`).

Cost (``N`` = horizon, ``p(q)`` the world position of the tool, ``p*`` the target, ``g(q)`` the
generalised gravity forces, :func:`diffsim.gravity_forces`)::

    J(τ) = Σ_{k<N} dt · l̄(q_k, v_k, τ_k) + l_T(q_N, v_N)
    l(q, τ)   = w_u ‖τ − g(q)‖²   (effort="above-gravity", the default)  or  w_u ‖τ‖²  ("total")
    l_T(q, v) = w_p ‖p(q) − p*‖² + w_v ‖v‖²     (reach the point, and stop)

Quadrature of the running cost. Crocoddyl's ``IntegratedActionModelRK`` integrates it with the
RK4 weights over the four stage states of the step, ``dt Σ_i b_i l(x_i, u)`` (``b = (1, 2, 2, 1)/6``;
``x_1 = x_k``, ``x_{i+1} = x_k + c_{i+1} dt k_i``, ``c = (0, ½, ½, 1)``), not ``dt · l(x_k, u_k)`` at
the knot. The stage states are functions of the knot state and the held torque, so the same
number is a running cost of ``(q_k, v_k, τ_k)``: ``quadrature="rk4"`` (the default) gives the
planner ``l̄ = Σ_i b_i l(x_i, τ)`` (:func:`rk4_stage_average`; it costs three more dynamics
evaluations per knot), and the optimal costs of the two codes are then the same problem's.
``quadrature="knot"`` gives ``l̄ = l(q_k, τ_k)``, the natural rule of a planner that sums at the
knots — a different problem, whose optimum differs from Crocoddyl's by the quadrature error.
A cost of the held torque alone (``effort="total"``) is the same under both rules (the weights sum
to one), but measured here gravity makes it hard for Gauss–Newton methods (Crocoddyl's FDDP:
367 iterations from the gravity-holding guess, against 49 for ``τ − g(q)``, which puts the
configuration dependence of the gravity torques into the cost's Gauss–Newton Hessian).
Crocoddyl's costs are ``½ w ‖r‖²``: the peer uses the weights ``2 w``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics.dispatch import Default, gravity_forces
from ..dynamics.kinematics import forward_kinematics
from ..io.urdf import load_urdf
from ..loads import Loads
from ..model.model import Model
from ..simulation.rollout import rk4_step
from ..simulation.vector_field import vector_field

URDF = Path(__file__).with_name("data") / "ur5.urdf"
EFFORTS = ("above-gravity", "total")
QUADRATURES = ("rk4", "knot")
#: the torque box of the limited variant [N m]: active on joints 1, 2, 4, 5, 6 of the unconstrained
#: optimum (|τ| up to 3.4, 49.4, 13.7, 4.5, 2.3, 3.9 N m), wide enough to hold the goal (47.7 N m)
_C, _B = (0.0, 0.5, 0.5, 1.0), (1 / 6, 2 / 6, 2 / 6, 1 / 6)  # classical RK4: nodes, weights
TAU_BOX = ((-2.5, -48.5, -15.0, -3.0, -2.0, -3.0), (2.5, 48.5, 15.0, 3.0, 2.0, 3.0))

#: start: elbow up, tool in front of the base, 0.16 m above the base plane [rad]
Q0 = (0.0, -1.0, 1.5, -0.5, 1.5708, 0.0)
#: the target is the tool position at this configuration (0.43 m from the start) [rad]
Q_GOAL = (0.6, -0.7, 1.1, -0.4, 1.5708, 0.0)


@dataclasses.dataclass(frozen=True)
class Ur5Reach:
    """The problem's data (plain Python numbers, JSON round-trip by :meth:`to_dict`).

    ``q0`` [rad], ``v0`` [rad/s] (6 each), ``target`` [m] (world), ``dt`` [s], ``horizon`` (steps),
    ``w_u`` [1/(N² m² s)], ``w_p`` [1/m²], ``w_v`` [s²/rad²], ``effort`` and ``quadrature`` (module
    docstring), ``tau_limits`` ``(lo, hi)`` [N m] (the box of the torque-limited variant, BoxFDDP /
    ``ddp`` with ``tau_limits``; the unconstrained solves ignore it), ``tau_init`` [N m] (the
    initial guess: this torque held over the whole horizon; default the torque that holds ``q0``
    against gravity), ``tool`` (body name), ``urdf`` (path)."""

    q0: tuple
    v0: tuple
    target: tuple
    tau_init: tuple
    dt: float = 0.01
    horizon: int = 100
    w_u: float = 1e-3
    w_p: float = 1e3
    w_v: float = 1.0
    effort: str = "above-gravity"
    quadrature: str = "rk4"
    tau_limits: tuple | None = TAU_BOX
    tool: str = "tool0"
    urdf: str = str(URDF)

    def __post_init__(self):
        for name in ("q0", "v0", "target", "tau_init"):
            n = 3 if name == "target" else 6
            x = np.asarray(getattr(self, name), float)
            if x.shape != (n,) or not np.all(np.isfinite(x)):
                raise ValueError(f"ur5-reach: {name} must be {n} finite numbers, got {getattr(self, name)!r}")
        if int(self.horizon) != self.horizon or self.horizon < 1:
            raise ValueError(f"ur5-reach: horizon must be a positive integer, got {self.horizon!r}")
        if not self.dt > 0:
            raise ValueError(f"ur5-reach: dt must be positive, got {self.dt!r}")
        if self.effort not in EFFORTS:
            raise ValueError(f"ur5-reach: effort must be one of {EFFORTS}, got {self.effort!r}")
        if self.quadrature not in QUADRATURES:
            raise ValueError(f"ur5-reach: quadrature must be one of {QUADRATURES}, got {self.quadrature!r}")
        if min(self.w_u, self.w_p, self.w_v) < 0:
            raise ValueError("ur5-reach: the weights w_u, w_p, w_v must be >= 0")
        if self.tau_limits is not None:
            lo, hi = (np.asarray(b, float) for b in self.tau_limits)
            if lo.shape != (6,) or hi.shape != (6,) or np.any(lo > hi):
                raise ValueError(f"ur5-reach: tau_limits must be (lo[6], hi[6]) with lo <= hi, got {self.tau_limits!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Ur5Reach:
        d = dict(d)
        for k in ("q0", "v0", "target", "tau_init"):
            d[k] = tuple(float(x) for x in d[k])
        if d.get("tau_limits") is not None:
            d["tau_limits"] = tuple(tuple(float(x) for x in b) for b in d["tau_limits"])
        return cls(**d)


def load_model(urdf=URDF, dtype=None) -> Model:
    """The UR5 as a diffsim model (fixed base, nq = nv = 6; gravity −9.81 m/s² along z)."""
    return load_urdf(Path(urdf), dtype=dtype)


def tool_position(model: Model, q, tool: str = "tool0"):
    """World position [m] of the tool frame (the origin of body ``tool``)."""
    return forward_kinematics(model, q).p[model.topology.body_index(tool)]


@functools.partial(jax.jit, static_argnums=3)
def _target_and_hold(model, q_goal, q0, tool):
    """The tool position at ``q_goal`` and the torque ``g(q0)`` that holds ``q0`` (one compiled
    call: op by op these take seconds)."""
    return tool_position(model, q_goal, tool), gravity_forces(model, q0)


def problem(**overrides) -> Ur5Reach:
    """The default problem with ``overrides`` (any field of :class:`Ur5Reach`; ``q_goal`` [rad]
    sets the target to the tool position at that configuration). ``tau_limits`` defaults to
    :data:`TAU_BOX`; ``"effort"`` takes the URDF's effort limits ±(150, 150, 150, 28, 28, 28) N m."""
    if not jax.config.jax_enable_x64:
        raise ValueError("ur5-reach: the problem's target and initial guess are computed in float64; "
                         'call jax.config.update("jax_enable_x64", True) first')
    model = load_model(overrides.get("urdf", URDF), dtype=jnp.float64)
    q_goal = overrides.pop("q_goal", Q_GOAL)
    q0 = tuple(float(x) for x in overrides.pop("q0", Q0))
    tool = overrides.get("tool", "tool0")
    target, hold = _target_and_hold(model, jnp.asarray(q_goal, float), jnp.asarray(q0, float), tool)
    overrides.setdefault("target", tuple(float(x) for x in np.asarray(target)))
    overrides.setdefault("tau_init", tuple(float(x) for x in np.asarray(hold)))
    if isinstance(overrides.get("tau_limits"), str):
        if overrides["tau_limits"] != "effort":
            raise ValueError(f"ur5-reach: tau_limits must be (lo, hi), None or 'effort', got {overrides['tau_limits']!r}")
        effort = (150.0, 150.0, 150.0, 28.0, 28.0, 28.0)
        overrides["tau_limits"] = (tuple(-e for e in effort), effort)
    return Ur5Reach(q0=q0, v0=tuple(float(x) for x in overrides.pop("v0", (0.0,) * 6)), **overrides)


def effort_cost(p: Ur5Reach, model: Model):
    """``l(q, v, τ)``: ``w_u ‖τ − g(q)‖²`` (``effort="above-gravity"``) or ``w_u ‖τ‖²`` (``"total"``),
    at one state (no quadrature)."""
    above_gravity = p.effort == "above-gravity"

    def ell(q, v, tau):
        e = tau - gravity_forces(model, q) if above_gravity else tau
        return jnp.asarray(p.w_u, tau.dtype) * jnp.sum(e**2)

    return ell


def rk4_stage_average(model: Model, ell, dt):
    """``l̄(q, v, τ) = Σ_i b_i l(x_i, τ)`` (``l`` = ``ell``) over the stage states ``x_i`` of the classical RK4 step
    from ``(q, v)`` with ``τ`` held (Butcher tableau ``c = (0, ½, ½, 1)``, ``b = (1, 2, 2, 1)/6``;
    the stages of :func:`diffsim.simulation.rollout.rk4_step`): Crocoddyl's
    ``IntegratedActionModelRK`` cost quadrature, ``dt · l̄`` per step."""
    dyn = Default()

    def lbar(q, v, tau):
        args = (model, Loads(tau=tau), None, dyn, None)
        h = jnp.asarray(dt, q.dtype)

        def stage(carry, cb):  # k_i at the stage state x_i, then x_{i+1} = x_k + c_{i+1} dt k_i
            (qi, vi), total = carry
            kq, kv, _ = vector_field(0.0, (qi, vi, None), args)
            x = (q + cb[0] * h * kq, v + cb[0] * h * kv)
            return (x, total + cb[1] * ell(x[0], x[1], tau)), None

        cb = jnp.asarray(np.stack([_C[1:], _B[1:]], 1), q.dtype)
        (_, total), _ = jax.lax.scan(stage, ((q, v), _B[0] * ell(q, v, tau)), cb)
        return total

    return lbar


def running_cost(p: Ur5Reach, model: Model):
    """The planner's ``running_cost(q, v, τ)`` = ``l̄`` of the module docstring (the RK4 stage
    average of :func:`effort_cost` for ``quadrature="rk4"``, unless it depends on ``τ`` alone)."""
    ell = effort_cost(p, model)
    if p.quadrature == "knot" or p.effort == "total":
        return ell
    return rk4_stage_average(model, ell, p.dt)


def terminal_cost(p: Ur5Reach, model: Model):
    """``l_T(q, v) = w_p ‖p(q) − p*‖² + w_v ‖v‖²``."""
    i = model.topology.body_index(p.tool)

    def lT(q, v):
        e = forward_kinematics(model, q).p[i] - jnp.asarray(p.target, q.dtype)
        return jnp.asarray(p.w_p, q.dtype) * jnp.sum(e**2) + jnp.asarray(p.w_v, v.dtype) * jnp.sum(v**2)

    return lT


def rollout_zoh(model: Model, q0, v0, tau, dt):
    """States ``q`` [N+1, nq], ``v`` [N+1, nv] under the torques ``tau`` [N, nv], each held over
    its step (``rk4_step`` with a constant load; a time-interpolated signal would give the last
    RK4 stage the next step's torque)."""
    dt = jnp.asarray(dt, model.dtype)

    def step(x, k_tau):
        k, u = k_tau
        x = rk4_step(model, Loads(tau=u), k * dt, x[0], x[1], dt)
        return x, x

    n = tau.shape[0]
    _, (qs, vs) = jax.lax.scan(step, (q0, v0), (jnp.arange(n, dtype=model.dtype), tau))
    return jnp.concatenate([q0[None], qs]), jnp.concatenate([v0[None], vs])


def total_cost(p: Ur5Reach, model: Model, tau):
    """``(J, q, v)``: the cost of the torque sequence ``tau`` [N, 6] and the states it gives."""
    dtype = model.dtype
    q, v = rollout_zoh(model, jnp.asarray(p.q0, dtype), jnp.asarray(p.v0, dtype), tau, p.dt)
    ell, ell_T = running_cost(p, model), terminal_cost(p, model)
    J = jnp.asarray(p.dt, dtype) * jnp.sum(jax.vmap(ell)(q[:-1], v[:-1], tau)) + ell_T(q[-1], v[-1])
    return J, q, v


def write_problem(path, p: Ur5Reach | None = None, **overrides) -> Path:
    """Write the problem (``p``, or :func:`problem` with ``overrides``) as JSON for the peers."""
    p = problem(**overrides) if p is None else p
    Path(path).write_text(json.dumps(p.to_dict(), indent=2) + "\n")
    return Path(path)


def read_problem(path) -> Ur5Reach:
    return Ur5Reach.from_dict(json.loads(Path(path).read_text()))
