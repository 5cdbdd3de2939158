"""``solve``: the one entry point of the planners (checks the input, builds the
:class:`~.problem.Problem`, runs the chosen method in one compiled program)."""

from __future__ import annotations

import operator

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from ..actuators import actuation as model_actuation
from ..contact.laws import AbstractHysteresisLaw, AbstractStatefulFrictionLaw, Hertz, LinearSpringDamper
from ..contact.model import Contact, ContactSet
from ..dynamics.dispatch import as_dynamics
from ..model.model import Model
from ..precision import full_precision
from .cem import DEFAULTS as CEM_DEFAULTS
from .cem import solve_cem
from .ddp import solve_ddp
from .problem import Problem, actuated_indices
from .result import Plan
from .shooting import solve_shooting

METHODS = ("ddp", "shooting", "cem")
QUADRATURES = ("knot", "rk4")
#: default (max_iter, tol in float64, tol in float32) per method
DEFAULT_SETTINGS = {"ddp": (100, 1e-10, 1e-5), "shooting": (1000, 1e-8, 1e-4), "cem": (50, 1e-3, 1e-3)}


def _limits(lo_hi, nu: int, dtype, actuated: tuple | None = None, nv: int | None = None):
    """``(lo, hi)`` [nu] from scalars, [nu] arrays or, for generalised forces, [nv] arrays (the
    ``actuated`` entries of the latter); ``actuated=None``: the ``nu`` controls of the actuators."""
    try:
        lo, hi = lo_hi
    except (TypeError, ValueError):
        raise ValueError("tau_limits must be a pair (lo, hi)") from None
    what = "the actuated coordinates" if actuated is not None else "the actuators' controls"
    out = []
    for name, x in (("lo", lo), ("hi", hi)):
        x = jnp.asarray(x, dtype)
        if x.shape == ():
            x = jnp.full(nu, x)
        elif actuated is not None and x.shape == (nv,) and nu != nv:
            x = x[np.asarray(actuated)]
        elif x.shape != (nu,):
            also = f" or ({nv},)" if actuated is not None else ""
            raise ValueError(f"tau_limits {name} must be a scalar or have shape ({nu},) ({what}){also}; got {x.shape}")
        out.append(x)
    lo, hi = out
    if is_concrete(lo, hi):
        if np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
            raise ValueError("tau_limits contain NaN")
        if np.any(np.asarray(lo) > np.asarray(hi)):
            bad = np.flatnonzero(np.asarray(lo) > np.asarray(hi)).tolist()
            raise ValueError(f"tau_limits: lo > hi at {what} {bad}")
    return lo, hi


def _check_cem(opts: dict, problem: Problem) -> None:
    """CEM's options: an elite set of at least two (one elite has no spread, which its stopping
    test reads as converged after the first iteration), a positive finite ``sigma`` of a shape that
    broadcasts to the controls [N, nu], and ``0 ≤ smoothing < 1`` (1 would never move)."""
    P, f = opts["population"], opts["elite_fraction"]
    if isinstance(P, bool) or int(P) != P or not 0 < float(f) <= 1:
        raise ValueError(f"cem needs an integer population and 0 < elite_fraction <= 1, got {P!r}, {f!r}")
    if round(int(P) * float(f)) < 2:
        raise ValueError(f"cem's elite set round(population × elite_fraction) = {round(int(P) * float(f))} must hold at "
                         "least 2 samples (the spread of one is 0, which would stop it as converged): raise population "
                         "or elite_fraction")
    sigma = opts["sigma"]
    if sigma is not None:
        shape = (problem.horizon, problem.nu)
        try:
            fits = np.broadcast_shapes(np.shape(sigma), shape) == shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"cem sigma must broadcast to the controls' shape {shape}, got {np.shape(sigma)}")
        if is_concrete(sigma) and not np.all(np.isfinite(sigma) & (np.asarray(sigma) > 0)):
            raise ValueError(f"cem sigma (the initial spread) must be finite and > 0, got {np.asarray(sigma).tolist()}")
    if not 0 <= float(opts["smoothing"]) < 1:
        raise ValueError(f"cem smoothing must lie in [0, 1), got {opts['smoothing']}")


def _scalar_cost(name, fn, *args):
    if not callable(fn):
        raise TypeError(f"{name} must be a callable, got {type(fn).__name__}")
    out = jax.eval_shape(fn, *args)
    shape = getattr(out, "shape", None)
    if shape != ():
        raise ValueError(f"{name} must return a scalar, got {'shape ' + str(shape) if shape is not None else type(out).__name__}")


def _planning_contact(contact):
    """``contact`` checked for fixed-step planning: compliant, laws without impact memory or state."""
    if contact is None:
        return None
    if not isinstance(contact, (Contact, ContactSet)):
        raise TypeError("contact= takes a compliant contact model (diffsim.contact.compliant_contact, "
                        f"diffsim.joint_limits, or a ContactSet of them), got {type(contact).__name__}")
    for part in contact.parts if isinstance(contact, ContactSet) else (contact,):
        law = part.normal
        if isinstance(law, AbstractHysteresisLaw) and not isinstance(law, Hertz):
            raise ValueError(
                f"contact= with the {type(law).__name__} law: its damping K Δⁿ χ′ Δ̇/Δ̇⁽⁻⁾ needs the impact velocity, "
                "which fixed RK4 steps do not locate; plan with a memoryless law (normal_law('linear', K=, c=) "
                "or 'hertz'), or optimise a System's parameters through the event-driven simulation with "
                "diffsim.plan.solve_system")
        if not isinstance(law, (LinearSpringDamper, Hertz)):
            raise ValueError(f"contact= with the normal law {type(law).__name__}: only the memoryless laws "
                             "LinearSpringDamper and Hertz are planned through")
        if isinstance(part.friction, AbstractStatefulFrictionLaw):
            raise ValueError(f"contact= with {type(part.friction).__name__} friction: a friction law with a state "
                             "(bristles) is not planned through; use a stateless law (e.g. 'smooth-coulomb')")
    return contact


def make_problem(model: Model, q0, v0, *, horizon, dt, running_cost, terminal_cost, tau_limits=None, actuation=None,
                 forces=(), dynamics=None, t0=0.0, ctrl: bool = False, contact=None, quadrature: str = "knot") -> Problem:
    """A checked :class:`~.problem.Problem` (arguments as in :func:`solve`)."""
    if not isinstance(model, Model):
        raise TypeError(f"plan.solve expects a diffsim Model, got {type(model).__name__}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)):
        try:
            horizon = operator.index(horizon)
        except TypeError:
            raise TypeError(f"horizon must be an integer number of steps, got {horizon!r}") from None
    if int(horizon) < 1:
        raise ValueError(f"horizon must be >= 1 step, got {horizon}")
    if quadrature not in QUADRATURES:
        raise ValueError(f"quadrature must be one of {QUADRATURES}, got {quadrature!r}")
    dtype = model.dtype
    q0, v0 = jnp.asarray(q0, dtype), jnp.asarray(v0, dtype)
    if q0.shape != (model.nq,):
        raise ValueError(f"q0 must have shape ({model.nq},) for this model, got {q0.shape}")
    if v0.shape != (model.nv,):
        raise ValueError(f"v0 must have shape ({model.nv},) for this model, got {v0.shape}")
    dt = jnp.asarray(dt, dtype)
    if dt.shape != ():
        raise ValueError(f"dt must be a scalar, got shape {dt.shape}")
    if is_concrete(dt) and not float(dt) > 0:
        raise ValueError(f"dt must be positive, got {float(dt)}")
    if is_concrete(q0, v0) and not (np.all(np.isfinite(q0)) and np.all(np.isfinite(v0))):
        raise ValueError("q0/v0 are not finite")
    act = None
    if ctrl:
        if actuation is not None:
            raise ValueError("ctrl=True plans the controls of the model's actuators; actuation= (driven coordinates) "
                             "is for planning generalised forces")
        act = model_actuation(model)
        actuated, nu = (), act.nu
        if tau_limits is None:  # the actuators' ctrlranges (±inf where unlimited)
            lo, hi = act.ctrl_lo.astype(dtype), act.ctrl_hi.astype(dtype)
            bounded = any(a.ctrlrange is not None for a in model.actuators)
        else:  # a box on top of the ctrlranges: the actuators clamp their controls there anyway (planning
            # past a range planned a force the actuator does not give)
            lo, hi = _limits(tau_limits, nu, dtype)
            lo, hi = jnp.maximum(lo, act.ctrl_lo.astype(dtype)), jnp.minimum(hi, act.ctrl_hi.astype(dtype))
            if is_concrete(lo, hi) and np.any(np.asarray(lo) > np.asarray(hi)):
                bad = [model.actuators[k].name for k in np.flatnonzero(np.asarray(lo) > np.asarray(hi))]
                raise ValueError(f"tau_limits lie outside the ctrlrange of the actuators {bad}: no control is allowed")
            bounded = True
        # the box holds the controls in range: the actuators' own clamp would only add kinks
        # (zero derivative beyond the range) to the local models
        inf = jnp.full(nu, jnp.inf, act.ctrl_lo.dtype)
        act = eqx.tree_at(lambda a: (a.ctrl_lo, a.ctrl_hi), act, (-inf, inf))
        probe = jnp.zeros(nu, dtype)
    else:
        actuated = actuated_indices(model, actuation)
        if not actuated:
            raise ValueError("actuation selects no coordinate: nothing to plan")
        nu = len(actuated)
        if tau_limits is None:
            lo, hi = jnp.full(nu, -jnp.inf, dtype), jnp.full(nu, jnp.inf, dtype)
        else:
            lo, hi = _limits(tau_limits, nu, dtype, actuated, model.nv)
        bounded = tau_limits is not None
        probe = jnp.zeros(model.nv, dtype)
    _scalar_cost("running_cost", running_cost, q0, v0, probe)
    _scalar_cost("terminal_cost", terminal_cost, q0, v0)
    return Problem(model=model, q0=q0, v0=v0, dt=dt, t0=jnp.asarray(t0, dtype), lo=lo, hi=hi, forces=tuple(forces),
                   dynamics=as_dynamics(dynamics), horizon=int(horizon), actuated=actuated, running_cost=running_cost,
                   terminal_cost=terminal_cost, bounded=bounded, act=act, contact=_planning_contact(contact),
                   quadrature=quadrature)


def _initial_controls(problem: Problem, tau_init, dtype):
    N, nu, nv = problem.horizon, problem.nu, problem.nv
    if tau_init is None:
        return problem.clip(jnp.zeros((N, nu), dtype))
    tau_init = jnp.asarray(tau_init, dtype)
    if problem.act is not None:
        if tau_init.shape != (N, nu):
            raise ValueError(f"tau_init (the initial controls) must have shape ({N}, {nu}), got {tau_init.shape}")
        return tau_init
    if tau_init.shape == (N, nv):
        return tau_init[:, np.asarray(problem.actuated)]
    if tau_init.shape == (N, nu):
        return tau_init
    raise ValueError(f"tau_init must have shape ({N}, {nv}) (or ({N}, {nu}), the actuated coordinates), "
                     f"got {tau_init.shape}")


@eqx.filter_jit
def _run(problem: Problem, u0, method: str, max_iter: int, tol, key, options: dict):
    if method == "ddp":
        return solve_ddp(problem, u0, max_iter, tol)
    if method == "shooting":
        return solve_shooting(problem, u0, max_iter, tol)
    return solve_cem(problem, u0, max_iter, tol, key, **options)


@full_precision
def solve(model: Model, q0, v0, *, horizon: int, dt, running_cost, terminal_cost, tau_limits=None,
          method: str = "ddp", tau_init=None, max_iter: int | None = None, tol: float | None = None,
          contact=None, actuation=None, forces=(), dynamics=None, t0=0.0, key=None,
          options: dict | None = None, ctrl: bool = False, quadrature: str = "knot") -> Plan:
    """Torques that take ``model`` from ``(q0, v0)`` over ``horizon`` steps of ``dt`` at minimum

        J = Σ_{k<N} dt · running_cost(q_k, v_k, τ_k) + terminal_cost(q_N, v_N)

    with ``(q_{k+1}, v_{k+1})`` one classical RK4 step with ``τ_k`` held (the step of
    :func:`diffsim.rollout`; quaternions on the manifold). Returns a :class:`Plan`.

    Args:
        model: a :class:`diffsim.Model` (rigid or flexible, fixed or free-floating base).
        q0, v0: initial configuration [nq] and velocity [nv].
        horizon: N, the number of steps (static); dt: the step [s].
        running_cost: ``ℓ(q, v, τ) -> scalar`` (τ [nv]); terminal_cost: ``ℓ_f(q, v) -> scalar``.
            JAX callables; a new function object compiles a new program (define them once).
            Helpers: :mod:`diffsim.plan.costs`. A :class:`~.costs.LeastSquares` cost (or a
            :class:`~.costs.Sum` with such terms) gets Gauss–Newton Hessians in ``"ddp"``; a plain
            callable its exact Hessian, PSD-projected.
        tau_limits: ``(lo, hi)``, each a scalar, [nu] or [nv] array: a box on the driven torques.
        method: ``"ddp"`` (box-constrained iLQR, :mod:`.ddp`), ``"shooting"`` (L-BFGS single
            shooting, :mod:`.shooting`) or ``"cem"`` (cross-entropy sampling, :mod:`.cem`).
        tau_init: initial torques [N, nv] (or [N, nu]); default zero (clipped into the box).
        max_iter, tol: iteration budget and stopping tolerance (per-method defaults in
            ``DEFAULT_SETTINGS``; the tolerance's meaning is the method's, see :class:`PlanStatus`).
        contact: a compliant contact model (:func:`diffsim.contact.compliant_contact`,
            :func:`diffsim.joint_limits`, or a ``ContactSet``) whose normal law has no impact
            memory (``'linear'`` spring–damper, ``'hertz'``) and whose friction law no state: its
            generalised force ``Q(q, v)`` is added at every RK4 stage (the events and memory of
            its formulation are not used). Use smoothed laws (``smooth > 0``, ``'smooth-coulomb'``)
            for derivatives through contact, and a ``dt`` that resolves the contact (several steps
            per ``2π√(m/K)``). Impacts located by events and hysteresis laws: optimise a System's
            parameters with :func:`diffsim.plan.solve_system` (the event-driven simulation).
        actuation: the driven coordinates: ``None`` (every joint coordinate: all ``nv`` of a rigid
            model; not a flexible link's modal coordinates), a boolean mask [nv], distinct indices,
            or joint names; the others get ``τ = 0`` (a free-floating base: name the arm joints).
        forces: point forces (:func:`diffsim.point_force`, :func:`diffsim.site_force`) applied too.
        dynamics: a dynamics strategy (default :class:`diffsim.dynamics.Default`).
        t0: time of the first knot [s].
        key: a PRNG key (``"cem"``; default ``PRNGKey(0)``).
        options: ``"cem"`` only: ``population`` (256), ``elite_fraction`` (0.1), ``sigma`` (initial
            spread; default half the box, or 1), ``smoothing`` (0).
        ctrl: plan the controls ``u`` [nu] of the model's actuators (MJCF ``<actuator>``, URDF
            effort limits; :func:`diffsim.actuation`: gears, servo gains and biases, force ranges)
            instead of generalised forces: each step applies ``τ = actuation(u, q, v)`` at every
            RK4 stage (what ``ds.rollout(..., ctrl=)`` does); the running cost is
            ``ℓ(q, v, u)``; the box is the actuators' ``ctrlrange``, tightened by ``tau_limits``
            when given (the actuators clamp their controls to the range); ``tau_init`` is the initial controls [N, nu]; ``Plan.ctrl`` holds the
            controls, ``Plan.tau`` the actuators' generalised forces at the knots.
        quadrature: the running cost's rule over a step: ``"knot"`` (``dt · ℓ(q_k, v_k, τ_k)``, the
            formula above) or ``"rk4"`` (``dt Σ_i b_i ℓ(x_i, τ_k)`` over the RK4 stage states ``x_i`` of
            the step, weights ``b = (1, 2, 2, 1)/6``: Crocoddyl's ``IntegratedActionModelRK``; the
            step computes those states, and in ``"ddp"`` their Jacobians, anyway).

    Works under ``jit``, ``vmap`` (e.g. over ``q0``, targets closed over in the costs, model
    parameters) and in float32/float64 (the model's dtype). Bad input raises ``ValueError`` /
    ``TypeError`` here; a non-finite cost at the initial guess raises ``ValueError`` when the
    inputs are concrete (under a transformation it gives ``status = FAILED``); not for ``"cem"``,
    which samples around the guess and keeps its best finite sample (``FAILED`` if none is finite).
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    problem = make_problem(model, q0, v0, horizon=horizon, dt=dt, running_cost=running_cost,
                           terminal_cost=terminal_cost, tau_limits=tau_limits, actuation=actuation, forces=forces,
                           dynamics=dynamics, t0=t0, ctrl=ctrl, contact=contact, quadrature=quadrature)
    dtype = model.dtype
    d_iter, tol64, tol32 = DEFAULT_SETTINGS[method]
    max_iter = d_iter if max_iter is None else max_iter
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    if tol is None:
        tol = tol64 if jnp.dtype(dtype) == jnp.float64 else tol32
    if not float(tol) >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    opts = {}
    if method == "cem":
        opts = dict(CEM_DEFAULTS)
        unknown = set(options or {}) - set(opts)
        if unknown:
            raise ValueError(f"unknown cem options {sorted(unknown)}; valid: {sorted(opts)}")
        opts.update(options or {})
        _check_cem(opts, problem)
        opts["population"] = int(opts["population"])
        key = jax.random.PRNGKey(0) if key is None else key
    elif options:
        raise ValueError(f"options= are for method 'cem', not {method!r}")
    u0 = _initial_controls(problem, tau_init, dtype)
    plan = _run(problem, u0, method, int(max_iter), jnp.asarray(tol, dtype), key, opts)  # tol traced: no recompile
    if is_concrete(plan.cost_history) and not np.isfinite(np.asarray(plan.cost_history[0])) and method != "cem":
        raise ValueError("the cost at the initial guess is not finite: check the costs, q0/v0 and tau_init "
                         "(the rollout may leave the finite numbers)")
    return plan
