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
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..catalog import CATALOG
from ..dynamics.dispatch import Default, gravity_forces
from ..dynamics.kinematics import forward_kinematics
from ..io.results import write_json
from ..io.urdf import load_urdf
from ..loads import Loads
from ..model.model import Model
from ..options import defaults
from ..plan.costs import LeastSquares
from ..plan.solve import make_problem, solve
from ..simulation.system import set_params
from ..simulation.vector_field import vector_field
from ..viz.plots import plot_series
from .base import Scenario

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


def _effort_residual(p: Ur5Reach, model: Model):
    """``e(q, τ)`` [6]: ``τ − g(q)`` (``effort="above-gravity"``) or ``τ`` (``"total"``); ``g``'s
    forward-mode derivative from the analytical ``∂g/∂q`` (DDP's local models push the six
    tangents of ``q`` through it at every stage, as Crocoddyl does with Pinocchio's)."""
    above_gravity = p.effort == "above-gravity"

    def e(q, tau):
        return tau - gravity_forces(model, q, tangents="analytic") if above_gravity else tau

    return e


def effort_cost(p: Ur5Reach, model: Model):
    """``l(q, v, τ)``: ``w_u ‖τ − g(q)‖²`` (``effort="above-gravity"``) or ``w_u ‖τ‖²`` (``"total"``),
    at one state (no quadrature); a :class:`diffsim.plan.costs.LeastSquares` (residual ``e``,
    weight ``w_u``), so DDP uses its Gauss–Newton Hessian."""
    e = _effort_residual(p, model)
    return LeastSquares(lambda q, v, tau: e(q, tau), p.w_u)


def rk4_stage_states(model: Model, q, v, tau, dt):
    """The stage states ``x_i`` [4] (``q`` [4, nq], ``v`` [4, nv]) of the classical RK4 step from
    ``(q, v)`` with ``τ`` held: ``x_1 = x_k``, ``x_{i+1} = x_k + c_{i+1} dt k_i`` with ``k_i`` the
    vector field at ``x_i`` (Butcher tableau ``c = (0, ½, ½, 1)``; the stages of
    :func:`diffsim.simulation.rollout.rk4_step`)."""
    args = (model, Loads(tau=tau), None, Default(), None)
    h = jnp.asarray(dt, q.dtype)

    def stage(x, c):
        kq, kv, _ = vector_field(0.0, (x[0], x[1], None), args)
        x = (q + c * h * kq, v + c * h * kv)
        return x, x

    _, (qs, vs) = jax.lax.scan(stage, (q, v), jnp.asarray(_C[1:], q.dtype))
    return jnp.concatenate([q[None], qs]), jnp.concatenate([v[None], vs])


def rk4_stage_average(model: Model, ell, dt):
    """``l̄(q, v, τ) = Σ_i b_i l(x_i, τ)`` (``l`` = ``ell``) over the stage states ``x_i`` of the
    classical RK4 step from ``(q, v)`` with ``τ`` held (:func:`rk4_stage_states`; weights
    ``b = (1, 2, 2, 1)/6``): Crocoddyl's ``IntegratedActionModelRK`` cost quadrature, ``dt · l̄`` per
    step."""

    def lbar(q, v, tau):
        qs, vs = rk4_stage_states(model, q, v, tau, dt)
        return jnp.asarray(_B, q.dtype) @ jax.vmap(ell, (0, 0, None))(qs, vs, tau)

    return lbar


def running_cost(p: Ur5Reach, model: Model):
    """The planner's ``running_cost(q, v, τ)`` = ``l̄`` of the module docstring, a
    :class:`diffsim.plan.costs.LeastSquares` of weight ``w_u``: for ``quadrature="rk4"`` the RK4 stage
    average ``Σ_i b_i w_u ‖e(x_i, τ)‖²`` (:func:`rk4_stage_average` of :func:`effort_cost`) written as
    the residual ``[√b_i e(x_i, τ)]_{i=1..4}`` [24] (the same number; DDP then takes the Gauss–Newton
    Hessian through the stage states, as Crocoddyl does); :func:`effort_cost` itself for
    ``"knot"`` or when it depends on ``τ`` alone (``effort="total"``)."""
    if p.quadrature == "knot" or p.effort == "total":
        return effort_cost(p, model)
    e = _effort_residual(p, model)
    sqrt_b = jnp.sqrt(jnp.asarray(_B))

    def stacked(q, v, tau):
        qs, _ = rk4_stage_states(model, q, v, tau, p.dt)
        return (sqrt_b.astype(q.dtype)[:, None] * jax.vmap(e, (0, None))(qs, tau)).ravel()

    return LeastSquares(stacked, p.w_u)


def terminal_cost(p: Ur5Reach, model: Model):
    """``l_T(q, v) = w_p ‖p(q) − p*‖² + w_v ‖v‖²``: a :class:`diffsim.plan.costs.LeastSquares` with the
    residual ``(p(q) − p*, v)`` [9] and the weights ``(w_p ×3, w_v ×6)``."""
    i = model.topology.body_index(p.tool)

    def residual(q, v):
        return jnp.concatenate([forward_kinematics(model, q).p[i] - jnp.asarray(p.target, q.dtype), v])

    return LeastSquares(residual, [p.w_p] * 3 + [p.w_v] * model.nv)


def planner_costs(p: Ur5Reach, model: Model) -> dict:
    """The costs as :func:`diffsim.plan.solve` takes them: ``running_cost`` = :func:`effort_cost`
    (``l`` at one state) with ``quadrature=p.quadrature`` — the planner integrates it over each step
    itself, from the step's own stage states (``"rk4"``: the same number as :func:`running_cost`'s
    stage average, computed once with the step), and ``terminal_cost``."""
    return dict(running_cost=effort_cost(p, model), terminal_cost=terminal_cost(p, model), quadrature=p.quadrature)


def planning_problem(p: Ur5Reach, model: Model, *, limits: bool = False):
    """The :class:`diffsim.plan.Problem` (discretisation and cost) of ``p``; with ``limits`` its
    torque box."""
    return make_problem(model, jnp.asarray(p.q0, model.dtype), jnp.asarray(p.v0, model.dtype), horizon=p.horizon,
                        dt=p.dt, tau_limits=p.tau_limits if limits else None, **planner_costs(p, model))


def total_cost(p: Ur5Reach, model: Model, tau):
    """``(J, q, v)``: the cost of the torque sequence ``tau`` [N, 6] and the states [N+1, 6] it
    gives (each torque held over its RK4 step: the planner's rollout)."""
    prob = planning_problem(p, model)
    q, v = prob.rollout(tau)
    return prob.trajectory_cost(q, v, tau), q, v


def write_problem(path, p: Ur5Reach | None = None, **overrides) -> Path:
    """Write the problem (``p``, or :func:`problem` with ``overrides``) as JSON for the peers."""
    p = problem(**overrides) if p is None else p
    Path(path).write_text(json.dumps(p.to_dict(), indent=2) + "\n")
    return Path(path)


def read_problem(path) -> Ur5Reach:
    return Ur5Reach.from_dict(json.loads(Path(path).read_text()))


# --------------------------------------------------------------------------------------
# the scenario: ``diffsim plan ur5-reach`` / ``diffsim run ur5-reach``
# --------------------------------------------------------------------------------------

INFO = CATALOG["ur5-reach"]  # declared in diffsim.catalog (JAX-free)
OPTIONS = defaults(INFO.options)


def plan_arguments(options: dict, params: dict | None = None) -> tuple[Ur5Reach, Model, dict]:
    """``(problem, model, kwargs)`` with ``ds.plan.solve(model, q0, v0, **kwargs)`` the scenario's
    solve; ``params`` are named model parameters (``body.upper_arm_link.mass``, ...)."""
    o = {**OPTIONS, **options}
    p = problem(**{k: o[k] for k in ("dt", "horizon", "w_u", "w_p", "w_v", "effort", "quadrature")})
    model = load_model(p.urdf, dtype=jnp.float64)
    if params:
        model = set_params(model, params)
    kwargs = dict(horizon=p.horizon, dt=p.dt, **planner_costs(p, model), tau_limits=p.tau_limits if o["limits"] else None, method=o["method"], max_iter=int(o["max_iter"]),
                  tau_init=jnp.tile(jnp.asarray(p.tau_init), (p.horizon, 1)))
    return p, model, kwargs


def figures_of_merit(p: Ur5Reach, model: Model, plan) -> dict:
    """The task's own figures: the tool's distance from the target [m], the final joint speed
    ``‖v_N‖`` [rad/s], the largest torque [N m]."""
    tool = np.asarray(tool_position(model, plan.q[-1], p.tool))
    return {"tool_error_m": float(np.linalg.norm(tool - np.asarray(p.target))),
            "final_speed_rad_s": float(np.linalg.norm(np.asarray(plan.v[-1]))),
            "tau_max_abs_Nm": np.abs(np.asarray(plan.tau)).max(axis=0).tolist()}


def _run(options, params, out: Path) -> dict:
    p, model, kw = plan_arguments(options, params)
    q0, v0 = jnp.asarray(p.q0), jnp.asarray(p.v0)
    t = time.perf_counter()
    plan = jax.block_until_ready(solve(model, q0, v0, **kw))
    first = time.perf_counter() - t
    times = {"first_call_s": first}
    if options["timing"]:
        t = time.perf_counter()
        plan = jax.block_until_ready(solve(model, q0, v0, **kw))
        times["solve_s"] = time.perf_counter() - t
        times["compile_s"] = max(first - times["solve_s"], 0.0)
    np.savez_compressed(out / "plan.npz", t=np.asarray(plan.t), tau=np.asarray(plan.tau), q=np.asarray(plan.q),
                        v=np.asarray(plan.v))
    write_json(out / "problem.json", p.to_dict())
    figs = []
    if options["plots"]:
        n = int(plan.iterations) + 1
        hist = np.asarray(plan.cost_history)[:n]
        figs.append(plot_series({"J": (np.arange(n), hist)}, out / "cost_history.png", xlabel="iteration",
                                ylabel="cost J", title=f"ur5-reach, {kw['method']}"))
        tt, tau = np.asarray(plan.t)[:-1], np.asarray(plan.tau)
        figs.append(plot_series({f"τ{j + 1}": (tt, tau[:, j]) for j in range(tau.shape[1])}, out / "torques.png",
                                ylabel="torque [N m]", title="planned torques (held over each step)"))
        tool = np.asarray(jax.vmap(lambda q: tool_position(model, q, p.tool))(plan.q))
        figs.append(plot_series({a: (np.asarray(plan.t), tool[:, k] - p.target[k]) for k, a in enumerate("xyz")},
                                out / "tool_error.png", ylabel="tool − target [m]", title="the motion of the tool"))
    return {"cost": float(plan.cost), "iterations": int(plan.iterations), "status": plan.message, **times,
            **figures_of_merit(p, model, plan), "figures": [f.name for f in figs]}


UR5_REACH = Scenario(INFO, run=_run)
