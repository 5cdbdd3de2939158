"""``Plan``: what a planner hands back, and its status codes."""

from __future__ import annotations

import enum

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .problem import Problem


class PlanStatus(enum.IntEnum):
    """How a solve ended (``Plan.status``).

    CONVERGED: the method's stopping test held (DDP: expected decrease ≤ ``tol``·|J|; shooting:
    gradient norm ≤ ``tol``·(1 + |J|); CEM: sampling spread below ``tol`` of its start).
    MAX_ITER: ``max_iter`` iterations without meeting it (the plan is the best iterate).
    FAILED: no further decrease was possible (DDP: the regularisation reached its maximum; any
    method: a non-finite cost at the initial guess). The plan is still the best iterate found,
    never a silent NaN."""

    CONVERGED = 0
    MAX_ITER = 1
    FAILED = 2


class AbstractOutcome(eqx.Module):
    """How a plan's solve ended, as every plan reports it: ``status``, a :class:`PlanStatus` code."""

    status: eqx.AbstractVar[jax.Array]

    @property
    def message(self) -> str:
        """The status as text (concrete plans only)."""
        return PlanStatus(int(self.status)).name.lower()

    @property
    def converged(self):
        return self.status == PlanStatus.CONVERGED


class Plan(AbstractOutcome):
    """A planned trajectory (a pytree: works as the output of ``jit``/``vmap``).

    t [N+1]: the grid ``t0 + k dt`` [s]; tau [N, nv]: the generalised forces held over each step
    (zero on unactuated coordinates; for a plan of actuator controls, their force at each knot,
    ``ctrl`` [N, nu] being the controls held); q [N+1, nq], v [N+1, nv]: the states they produce;
    cost: ``J`` at the plan; iterations: iterations run; status: a :class:`PlanStatus` code;
    cost_history [max_iter+1]: ``J`` after each iteration (entry 0: the initial guess; after the
    last iteration the final value is repeated); problem: the :class:`~.problem.Problem` solved
    (model, costs, limits), which :func:`diffsim.plan.sensitivity` differentiates."""

    t: jax.Array
    tau: jax.Array
    q: jax.Array
    v: jax.Array
    cost: jax.Array
    iterations: jax.Array
    status: jax.Array
    cost_history: jax.Array
    problem: Problem
    method: str = eqx.field(static=True, default="ddp")
    ctrl: jax.Array | None = None

    @property
    def u(self):
        """The planned controls [N, nu]: the driven torques (``tau`` at the actuated coordinates),
        or the actuators' controls ``ctrl`` of a plan made with ``ctrl=True``."""
        if self.ctrl is not None:
            return self.ctrl
        return self.tau[..., np.asarray(self.problem.actuated, dtype=np.int32)]



def make_plan(problem: Problem, us, qs, vs, cost, iterations, status, history, method) -> Plan:
    t = problem.t0 + problem.dt * jnp.arange(problem.horizon + 1, dtype=problem.dt.dtype)
    return Plan(t=t, tau=problem.generalized(qs, vs, us), q=qs, v=vs, cost=cost,
                iterations=jnp.asarray(iterations, jnp.int32), status=jnp.asarray(status, jnp.int32),
                cost_history=history, problem=problem, method=method, ctrl=us if problem.act is not None else None)


def fill_history(history, it, value):
    """Repeat ``value`` in ``history`` from entry ``it`` on."""
    idx = jnp.arange(history.shape[0])
    return jnp.where(idx >= it, value, history)
