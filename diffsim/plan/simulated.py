"""Planning through the event-driven simulation: the decision variables are named parameters of a
:class:`diffsim.System` (its initial state — a throw —, load or contact parameters), the cost a
function of the :class:`diffsim.Trajectory` that :func:`diffsim.simulate` produces.

This is how impacts enter a plan. :func:`diffsim.plan.solve` integrates fixed RK4 steps, which
cannot resolve a stiff contact phase; :func:`diffsim.simulate` with compliant contact in event mode
locates each onset and separation by a root find on the dense output and differentiates the event
times by the implicit function theorem (:mod:`diffsim.simulation.compliant`), so a cost of
impact times and post-impact states has exact derivatives of the discrete solution.

Method: single shooting over the parameter vector ``θ`` (the named parameters, flattened):
``min_θ J(θ) = objective(simulate(set_params(system, θ)), set_params(system, θ))`` by L-BFGS
(:func:`.shooting.minimise_lbfgs`). Gradients by the system's adjoint: reverse mode through the
solve by default (diffrax's recursive checkpointing), forward mode (one tangent per parameter,
cheaper for a few parameters) when the system's ``options.adjoint`` is
``diffrax.ForwardMode()``. Converged when ``‖∇J‖_∞ ≤ tol · (1 + |J|)`` or when ``J ≤ cost_tol``
(a cost whose optimum is zero, e.g. a target to hit: the gradient of a residual of size ε is of
size ε, so a gradient test alone would ask for more than the solve's accuracy).

Accuracy (``experiments/plan_ball_throw.py``, ``experiments/ball_event_gradients.py``): the
tangents through an impact are the exact derivatives of the *discrete* solution, whose primal
error the step controller bounds but whose tangent error it does not: expect the gradient to
agree with central differences to ~1e-6–1e-4 relative at tolerances 1e-10–1e-12.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from ..precision import full_precision
from ..simulation.simulate import simulate
from ..simulation.system import System, get_param, param_names, set_params
from ..simulation.trajectory import Trajectory
from .result import AbstractOutcome
from .shooting import minimise_lbfgs


class SystemPlan(AbstractOutcome):
    """The result of :func:`solve_system` (a pytree).

    params: ``{name: value}`` at the optimum (each of its parameter's shape); theta [n]: the same
    flattened; system: the system with them set; trajectory: its simulation; cost: ``J``;
    iterations; status (a :class:`PlanStatus` code); cost_history [max_iter + 1] (entry 0: the
    initial guess; the best value after each iteration, repeated after the last)."""

    params: dict
    theta: jax.Array
    system: System
    trajectory: Trajectory
    cost: jax.Array
    iterations: jax.Array
    status: jax.Array
    cost_history: jax.Array


def onset_time(traj: Trajectory, n: int, pair: int = 0):
    """The time [s] of the ``n``-th onset (impact, ``n ≥ 1``) of contact pair ``pair`` in an
    event-mode compliant-contact trajectory (``inf`` if there were fewer). Differentiable: the
    event times depend on the parameters through the located root (implicit function theorem)."""
    rec = getattr(traj, "contact", None)
    if rec is None or not hasattr(rec, "event_flip"):
        raise ValueError("onset_time needs a trajectory with compliant contact in event mode")
    if int(n) < 1:
        raise ValueError(f"onset_time: n counts impacts from 1, got {n}")
    onsets = rec.event_flip[:, pair] == 1
    count = jnp.cumsum(onsets.astype(jnp.int32))
    hit = onsets & (count == int(n))
    return jnp.where(jnp.any(hit), rec.event_t[jnp.argmax(hit)], jnp.inf)


class _Layout(eqx.Module):
    """Where each named parameter sits in the flat vector ``θ``."""

    names: tuple = eqx.field(static=True)
    shapes: tuple = eqx.field(static=True)

    def unflatten(self, theta):
        out, i = {}, 0
        for name, shape in zip(self.names, self.shapes):
            n = int(np.prod(shape, dtype=int))
            out[name] = theta[i:i + n].reshape(shape)
            i += n
        return out


def _layout(system: System, names, init, dtype):
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise ValueError("names must be a non-empty sequence of parameter names (diffsim.param_names(system))")
    known = set(param_names(system))
    init = dict(init or {})
    unknown = set(init) - set(names)
    if unknown:
        raise ValueError(f"init gives values for {sorted(unknown)}, which are not in names")
    shapes, values = [], []
    for name in names:
        base = name.split("[")[0]
        if base not in known:
            raise ValueError(f"unknown system parameter {name!r}; see diffsim.param_names(system)")
        current = jnp.asarray(get_param(system, name), dtype)
        v = jnp.asarray(init.get(name, current), dtype)
        if v.shape != current.shape:
            raise ValueError(f"init[{name!r}] must have shape {current.shape}, got {v.shape}")
        shapes.append(tuple(current.shape))
        values.append(v.ravel())
    return _Layout(tuple(names), tuple(shapes)), jnp.concatenate(values)


def _value_and_forward_grad(f):
    """``f`` with its reverse-mode derivative computed by forward mode (one JVP per entry of
    ``θ``): lets L-BFGS (which asks for ``value_and_grad``) run on a solve that only supports
    forward-mode differentiation (diffrax's ``ForwardMode`` adjoint)."""

    @jax.custom_vjp
    def g(theta):
        return f(theta)

    def fwd(theta):
        J, grad = _forward_value_and_grad(f, theta)
        return J, grad

    def bwd(grad, ct):
        return (ct * grad,)

    g.defvjp(fwd, bwd)
    return g


def _forward_value_and_grad(f, theta):
    basis = jnp.eye(theta.shape[0], dtype=theta.dtype)
    Js, dJ = jax.vmap(lambda e: jax.jvp(f, (theta,), (e,)))(basis)
    return Js[0], dJ


@eqx.filter_jit
def _run(system, layout, theta0, objective, max_iter, tol, cost_tol, forward):
    def cost(theta):
        s = set_params(system, layout.unflatten(theta))
        return objective(simulate(s), s)

    f = _value_and_forward_grad(cost) if forward else cost

    def converged(theta, J, g):
        return (J <= cost_tol) | (jnp.max(jnp.abs(g)) <= tol * (1.0 + jnp.abs(J)))

    theta, J, it, status, history = minimise_lbfgs(f, theta0, max_iter, converged)
    s = set_params(system, layout.unflatten(theta))
    return SystemPlan(params=layout.unflatten(theta), theta=theta, system=s, trajectory=simulate(s), cost=J,
                      iterations=jnp.asarray(it, jnp.int32), status=jnp.asarray(status, jnp.int32),
                      cost_history=history)


@full_precision
def solve_system(system: System, names: Sequence[str], objective: Callable, *, init: dict | None = None,
                 max_iter: int = 100, tol: float = 1e-8, cost_tol: float = 0.0) -> SystemPlan:
    """The named parameters of ``system`` that minimise ``objective(traj, system)`` over its
    simulation (module docstring: single shooting by L-BFGS through :func:`diffsim.simulate`,
    impacts located and differentiated).

    Args:
        system: a :class:`diffsim.System` (e.g. with compliant contact in event mode). Run it with
            ``throw=False`` so that a failed solve is a status, not an exception.
        names: the decision variables, parameter names of the system (:func:`diffsim.param_names`;
            ``"v0.ball"``, one element ``"v0.ball[2]"``, ``"contact.K"`` ...).
        objective: ``(trajectory, system) -> scalar`` (a JAX function; :func:`onset_time` gives
            impact times). A non-finite value counts as ``+inf`` (rejected by the line search).
        init: initial values ``{name: value}`` (default: the system's current values).
        max_iter: L-BFGS iterations; tol: the stationarity test ``‖∇J‖_∞ ≤ tol (1 + |J|)``;
            cost_tol: also converged when ``J ≤ cost_tol`` (default 0: off).

    Returns a :class:`SystemPlan` (optimum, its system and trajectory, cost, status). The whole
    solve is one compiled program (``eqx.filter_jit``; a new ``objective`` function object compiles
    anew). Tested in float64 only.
    """
    if not isinstance(system, System):
        raise TypeError(f"solve_system expects a diffsim System, got {type(system).__name__}")
    if not callable(objective):
        raise TypeError(f"objective must be a callable (trajectory, system) -> scalar, got {type(objective).__name__}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise ValueError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    if is_concrete(tol, cost_tol) and not (float(tol) >= 0 and float(cost_tol) >= 0):
        raise ValueError(f"tol and cost_tol must be >= 0, got {tol}, {cost_tol}")
    dtype = system.model.dtype
    layout, theta0 = _layout(system, list(names), init, dtype)
    out = eqx.filter_eval_shape(lambda s: objective(simulate(s), s), system)
    if getattr(out, "shape", None) != ():
        raise ValueError(f"objective must return a scalar, got {getattr(out, 'shape', type(out).__name__)}")
    forward = isinstance(system.options.adjoint, diffrax.ForwardMode)
    return _run(system, layout, theta0, objective, int(max_iter), jnp.asarray(tol, dtype),
                jnp.asarray(cost_tol, dtype), forward)
