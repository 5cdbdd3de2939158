"""Derivatives of an optimal plan with respect to parameters, by implicit differentiation of its
optimality condition (the implicit function theorem; e.g. Amos & Kolter 2017 for the KKT form).

At a local optimum ``u*(p)`` of ``J(u, p)`` (the single-shooting objective of the plan's
problem, :meth:`~.problem.Problem.objective`) with the coordinates ``c`` clamped at a torque
limit held fixed, the free coordinates ``f`` satisfy ``∇_{u_f} J(u*, p) = 0``. Differentiating,

    du*_f/dp = −(∇²_{u_f u_f} J)⁻¹ ∇²_{u_f p} J,      du*_c/dp = 0,

and the optimal cost's derivative is the partial one (envelope theorem; the limits do not
depend on ``p``): ``dJ*/dp = ∂J/∂p (u*, p)``. Valid when the active set does not change under a
small change of ``p`` (strict complementarity) and the reduced Hessian is positive definite.
Second derivatives come from forward-over-reverse autodiff through the RK4 rollout; the linear
system is solved densely (Cholesky, ``solver="dense"``) or matrix-free by conjugate gradients
on Hessian-vector products (``solver="cg"``, lineax).
"""

from __future__ import annotations

from typing import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
from jax.flatten_util import ravel_pytree

from .._util import is_concrete
from ..precision import full_precision
from ..simulation.system import System, get_param, set_params
from .result import Plan, PlanStatus


class Sensitivity(eqx.Module):
    """``cost[name]``: ``dJ*/dp`` (the shape of the parameter); ``tau[name]``: ``dτ*/dp``
    [N, nv, *shape]; ``free`` [N, nu]: the coordinates treated as free (not at a limit)."""

    cost: dict
    tau: dict
    free: jax.Array


def _problem_at(plan: Plan, system: System, values: dict):
    s = set_params(system, values)
    return eqx.tree_at(lambda p: (p.model, p.q0, p.v0), plan.problem, (s.model, s.q0, s.v0))


@full_precision
def sensitivity(plan: Plan, params: Sequence[str], *, solver: str = "dense", active_tol: float = 1e-6,
                cg_tol: float = 1e-12) -> Sensitivity:
    """Derivatives of the optimal cost and torques of ``plan`` (one plan, not a batch; ``vmap``
    this function for batches) with respect to the named parameters ``params`` (module
    docstring).

    Args:
        plan: a converged :class:`~.result.Plan` (from :func:`diffsim.plan.solve`).
        params: names as in :func:`diffsim.param_names` of a :class:`diffsim.System` of the
            plan's model: model parameters (``body.<b>.mass``, ``joint.<j>.damping``,
            ``beam.<b>.EI_z``, ``gravity`` …) and the initial state (``q0.<joint>``,
            ``v0.<joint>``); ``name[k]`` for one element.
        solver: ``"dense"`` (the full ``N nu × N nu`` Hessian, Cholesky) or ``"cg"``
            (matrix-free conjugate gradients, for long horizons).
        active_tol: a coordinate within ``active_tol·(hi − lo)`` of a limit is clamped.
        cg_tol: tolerance of CG on the residual (relative and absolute); the torques' error
            can be the Hessian's condition number times larger. Measured on the test suite's
            pendulum swing-up with active limits: 1.6e-5 and 1.9e-4 of the largest entry off the
            dense solve at 1e-10 (the previous default), 2e-8 at 1e-12.
    """
    if not isinstance(plan, Plan):
        raise TypeError(f"sensitivity expects a Plan, got {type(plan).__name__}")
    if plan.ctrl is not None:
        raise ValueError("sensitivity of a plan of actuator controls (ctrl=True) is not built: plan generalised "
                         "forces (actuation=) to differentiate the optimal torques")
    if plan.tau.ndim != 2:
        raise ValueError(f"sensitivity takes one plan, got a batch (tau shape {plan.tau.shape}): vmap it")
    if isinstance(params, str):
        params = [params]
    if solver not in ("dense", "cg"):
        raise ValueError(f"solver must be 'dense' or 'cg', got {solver!r}")
    if plan.method == "cem":  # its "converged" is a small sampling spread, not a stationary point
        raise ValueError("sensitivity differentiates the optimality conditions (a zero gradient), which a CEM plan "
                         "does not meet: its convergence is a small sampling spread. Refine it with method='ddp' or "
                         "'shooting' (tau_init=plan.tau) first")
    if is_concrete(plan.status) and int(plan.status) != PlanStatus.CONVERGED:
        raise ValueError(f"sensitivity differentiates the optimality conditions of a converged plan; this plan "
                         f"ended with status {PlanStatus(int(plan.status)).name.lower()} ({int(plan.iterations)} iterations): "
                         "solve it further (max_iter=, tol=) first")
    out = _sensitivity(plan, tuple(params), solver, float(active_tol), float(cg_tol))
    if is_concrete(*jax.tree.leaves(out)) and not all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree.leaves(out)):
        raise ValueError("sensitivity: the reduced Hessian at the plan (the coordinates not at a limit) is not "
                         "positive definite, so the plan is not a strict local minimum there and its derivatives "
                         "are not defined; check the plan's convergence and the costs' curvature in every control")
    return out


@eqx.filter_jit
def _sensitivity(plan: Plan, params: tuple, solver: str, active_tol: float, cg_tol: float) -> Sensitivity:
    problem = plan.problem
    system = System(problem.model, problem.q0, problem.v0, dynamics=problem.dynamics)
    theta = {name: get_param(system, name) for name in params}
    p0, unravel = ravel_pytree(theta)
    u = plan.u
    shape = u.shape
    n = u.size

    def J(uf, p):
        return _problem_at(plan, system, unravel(p)).objective(uf.reshape(shape))

    uf = u.reshape(-1)
    if problem.bounded:
        span = jnp.where(jnp.isfinite(problem.hi - problem.lo), problem.hi - problem.lo, 1.0)
        clamped = (u <= problem.lo + active_tol * span) | (u >= problem.hi - active_tol * span)
        free = ~clamped
    else:
        free = jnp.ones(shape, bool)
    fm = free.reshape(-1)

    grad_u = jax.grad(J, argnums=0)
    Hp = jax.jacfwd(grad_u, argnums=1)(uf, p0)  # [n, P]
    rhs = jnp.where(fm[:, None], -Hp, 0.0)
    if solver == "dense":
        H = jax.jacfwd(grad_u, argnums=0)(uf, p0)
        H = 0.5 * (H + H.T)
        H = jnp.where(fm[:, None] & fm[None, :], H, jnp.eye(n, dtype=H.dtype))
        op = lx.MatrixLinearOperator(H, (lx.symmetric_tag, lx.positive_semidefinite_tag))
        lsolver = lx.Cholesky()
    else:
        def hvp(x):
            x = jnp.where(fm, x, 0.0)
            Hx = jax.jvp(lambda w: grad_u(w, p0), (uf,), (x,))[1]
            return jnp.where(fm, Hx, x)

        op = lx.FunctionLinearOperator(hvp, jax.ShapeDtypeStruct((n,), uf.dtype), (lx.symmetric_tag, lx.positive_semidefinite_tag))
        lsolver = lx.CG(rtol=cg_tol, atol=cg_tol, max_steps=10 * n)
    # throw=False: an indefinite Hessian gives non-finite values, which sensitivity() reports
    du = jax.vmap(lambda b: lx.linear_solve(op, b, lsolver, throw=False).value, in_axes=1, out_axes=1)(rhs)  # [n, P]
    du = jnp.where(fm[:, None], du, 0.0)
    dJ = jax.grad(J, argnums=1)(uf, p0)

    act = np.asarray(problem.actuated, dtype=np.int32)
    dtau = jnp.zeros((shape[0], problem.nv, du.shape[1]), du.dtype)
    dtau = dtau.at[:, act, :].set(du.reshape(shape[0], shape[1], -1))
    dtau_named = jax.vmap(unravel, in_axes=0, out_axes=0)(dtau.reshape(-1, du.shape[1]))
    dtau_named = {k: v.reshape((shape[0], problem.nv) + jnp.shape(theta[k])) for k, v in dtau_named.items()}
    return Sensitivity(cost=unravel(dJ), tau=dtau_named, free=free)
