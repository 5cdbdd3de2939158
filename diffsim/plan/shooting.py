"""Single shooting: minimise ``J(u)`` over the whole control sequence ``u`` [N, nu] with L-BFGS
(``optax.lbfgs``: two-loop recursion, memory 10, zoom line search under the strong Wolfe
conditions), the gradient by reverse mode through the RK4 rollout. A baseline for DDP.

Torque limits by reparametrisation, not projection (L-BFGS's curvature pairs assume an
unconstrained problem): on a coordinate with finite bounds ``u = c + r tanh(z)`` with
``c = (hi + lo)/2``, ``r = (hi − lo)/2`` (``u = c`` when ``lo = hi``); with one finite bound
``u = lo + softplus(z − lo)`` or ``u = hi − softplus(hi − z)`` (a clip there had a zero gradient
past the bound: controls that reached it stayed). A limit is therefore approached (``z → ±∞``) but never
reached exactly: an active limit leaves the shooting solution slightly inside the box and its
cost slightly above the constrained optimum. Converged when ``‖∇_u J‖_∞ ≤ tol·(1 + |J|)``
(the gradient in the original controls, on the coordinates not pinned at a limit).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
import optax.tree_utils as otu

from .problem import Problem
from .result import PlanStatus, fill_history, make_plan

MEMORY = 10


def _transform(problem: Problem):
    """``(to_u, to_z)``: the reparametrisation of the module docstring (identity when unbounded)."""
    if not problem.bounded:
        return (lambda z: z), (lambda u: u)
    lo, hi = problem.lo, problem.hi
    flo, fhi = jnp.isfinite(lo), jnp.isfinite(hi)
    fin, only_lo, only_hi = flo & fhi, flo & ~fhi, fhi & ~flo
    c = jnp.where(fin, 0.5 * (hi + lo), 0.0)
    r = jnp.where(fin, 0.5 * (hi - lo), 1.0)
    r_safe = jnp.where(r > 0, r, 1.0)  # lo = hi: u = c whatever z
    b = jnp.where(only_lo, lo, jnp.where(only_hi, hi, 0.0))  # the one finite bound

    def to_u(z):
        one = jnp.where(only_lo, b + jax.nn.softplus(z - b), b - jax.nn.softplus(b - z))
        return jnp.where(fin, c + r * jnp.tanh(z), jnp.where(only_lo | only_hi, one, z))

    def inv_softplus(d):  # log(expm1(d)) for d > 0, without overflow
        return d + jnp.log(-jnp.expm1(-d))

    def to_z(u):
        s = jnp.clip((u - c) / r_safe, -0.999, 0.999)
        d = jnp.maximum(jnp.where(only_lo, u - b, b - u), 1e-3)  # a start on or past the bound: just inside
        one = jnp.where(only_lo, b + inv_softplus(d), b - inv_softplus(d))
        return jnp.where(fin, jnp.arctanh(s), jnp.where(only_lo | only_hi, one, u))

    return to_u, to_z


def minimise_lbfgs(f, z0, max_iter: int, converged):
    """L-BFGS (``optax.lbfgs``, memory :data:`MEMORY`, zoom line search under the strong Wolfe
    conditions) on the scalar ``f(z)`` (non-finite values read as ``+inf``), keeping the best
    iterate. ``converged(z_best, J_best, g_best) -> bool`` is the stopping test (``g_best`` the
    gradient of ``f`` there). One ``lax.while_loop``; the value and gradient at each new iterate
    are the line search's own (kept in optax's state), so ``f`` is traced only by the line search
    and once at ``z0``.

    Returns ``(z_best, J_best, iterations, status, history)`` (a :class:`PlanStatus` code:
    CONVERGED, MAX_ITER, or FAILED on a non-finite start or step; history [max_iter + 1]: entry 0
    the start, then the best value after each iteration, repeated after the last)."""

    def fin(z):
        J = f(z)
        return jnp.where(jnp.isfinite(J), J, jnp.inf)

    opt = optax.lbfgs(memory_size=MEMORY)
    J0, g0 = jax.value_and_grad(fin)(z0)
    state0 = otu.tree_set(opt.init(z0), value=J0, grad=g0)

    def cond(s):
        return (s["it"] < max_iter) & ~s["done"]

    def body(s):
        z, state = s["z"], s["state"]
        J, g = otu.tree_get(state, "value"), otu.tree_get(state, "grad")
        upd, state = opt.update(g, state, z, value=J, grad=g, value_fn=fin)
        zn = optax.apply_updates(z, upd)
        Jn, gn = otu.tree_get(state, "value"), otu.tree_get(state, "grad")
        better = Jn < s["J"]
        pick = lambda a, b: jax.tree_util.tree_map(lambda x, y: jnp.where(better, x, y), a, b)
        z_best, g_best, J_best = pick(zn, s["z_best"]), pick(gn, s["g_best"]), jnp.where(better, Jn, s["J"])
        it = s["it"] + 1
        finite = jnp.all(jnp.isfinite(zn))
        conv = converged(z_best, J_best, g_best)
        status = jnp.where(conv, PlanStatus.CONVERGED, jnp.where(finite, PlanStatus.MAX_ITER, PlanStatus.FAILED))
        return dict(z=zn, state=state, z_best=z_best, g_best=g_best, J=J_best, it=it, done=conv | ~finite,
                    status=status.astype(jnp.int32), history=fill_history(s["history"], it, J_best))

    finite0 = jnp.isfinite(J0)
    s0 = dict(z=z0, state=state0, z_best=z0, g_best=g0, J=J0, it=jnp.asarray(0), done=~finite0,
              status=jnp.where(finite0, PlanStatus.MAX_ITER, PlanStatus.FAILED).astype(jnp.int32),
              history=jnp.full(max_iter + 1, J0, J0.dtype))
    s = jax.lax.while_loop(cond, body, s0)
    return s["z_best"], s["J"], s["it"], s["status"], s["history"]


def solve_shooting(problem: Problem, u_init, max_iter: int, tol):
    """L-BFGS single shooting (module docstring) from ``u_init`` [N, nu]; returns a Plan."""
    to_u, to_z = _transform(problem)
    grad_u = jax.grad(problem.objective)

    def stationarity(z, J, g_z):
        u = to_u(z)
        g = grad_u(u) if problem.bounded else g_z  # unbounded: u = z
        if problem.bounded:  # a coordinate held at a limit by its gradient is stationary
            # (a one-sided box: hi − 1e-3 (hi − lo) was −inf, so every coordinate counted as at its limit)
            span = jnp.where(jnp.isfinite(problem.hi - problem.lo), problem.hi - problem.lo, 1.0)
            g = jnp.where(((u >= problem.hi - 1e-3 * span) & (g < 0))
                          | ((u <= problem.lo + 1e-3 * span) & (g > 0)), 0.0, g)
        return jnp.max(jnp.abs(g)) <= tol * (1.0 + jnp.abs(J))

    z_best, J, it, status, history = minimise_lbfgs(lambda z: problem.objective(to_u(z)),
                                                    to_z(problem.clip(u_init)), max_iter, stationarity)
    us = to_u(z_best)
    qs, vs = problem.rollout(us)
    return make_plan(problem, us, qs, vs, J, it, status, history, "shooting")
