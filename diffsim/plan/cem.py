"""The sampling baseline: the cross-entropy method (Rubinstein 1999; as a trajectory optimiser,
e.g. Botev et al. 2013, Chua et al. 2018's PETS). Chosen over MPPI because CEM keeps only the
*ranks* of the sampled costs: it has no temperature to tune to the scale of each problem's cost,
which makes it a fair, untuned baseline across problems; box limits are kept by clipping samples.

Iteration ``i``: draw ``P`` control sequences ``u = clip(μ + σ ε)``, ``ε ~ N(0, I)`` (key
``fold_in(key, i)``), roll them all out at once (``vmap``), refit ``μ, σ`` to the ``E`` best
(elites), smoothed ``μ ← (1 − s) μ_elite + s μ`` with ``s = smoothing``; the mean itself is
evaluated too, and the best sequence ever seen is the plan. Converged when ``max σ ≤ tol·σ₀``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .problem import Problem
from .result import PlanStatus, fill_history, make_plan

DEFAULTS = dict(population=256, elite_fraction=0.1, sigma=None, smoothing=0.0)


def solve_cem(problem: Problem, u_init, max_iter: int, tol, key, population: int, elite_fraction: float, sigma,
              smoothing: float):
    """CEM (module docstring) from the mean ``u_init`` [N, nu]; returns a Plan."""
    dtype = u_init.dtype
    n_elite = max(1, round(population * elite_fraction))
    if sigma is None:  # half the box where bounded, else 1 (in the units of τ)
        sig = (0.5 * (problem.hi - problem.lo)) if problem.bounded else jnp.ones(problem.nu, dtype)
        sig = jnp.where(jnp.isfinite(sig), sig, 1.0)
    else:
        sig = jnp.asarray(sigma, dtype)
    sigma0 = jnp.broadcast_to(sig, u_init.shape).astype(dtype)

    def cost(u):
        J = problem.objective(u)
        return jnp.where(jnp.isfinite(J), J, jnp.inf)

    mean = problem.clip(u_init)
    J0 = cost(mean)

    def cond(s):
        return (s["it"] < max_iter) & ~s["done"]

    def body(s):
        mean, std = s["mean"], s["std"]
        eps = jax.random.normal(jax.random.fold_in(key, s["it"]), (population,) + mean.shape, dtype)
        samples = jnp.concatenate([mean[None], problem.clip(mean + std * eps)])
        costs = jax.vmap(cost)(samples)
        order = jnp.argsort(costs)
        elites = samples[order[:n_elite]]
        new_mean = (1 - smoothing) * jnp.mean(elites, 0) + smoothing * mean
        new_std = (1 - smoothing) * jnp.std(elites, 0) + smoothing * std
        better = costs[order[0]] < s["J"]
        best = jnp.where(better, samples[order[0]], s["best"])
        J = jnp.where(better, costs[order[0]], s["J"])
        it = s["it"] + 1
        # relative to the initial spread; a coordinate pinned by lo = hi (no spread) does not count
        conv = jnp.max(jnp.where(sigma0 > 0, new_std / jnp.where(sigma0 > 0, sigma0, 1.0), 0.0)) <= tol
        return dict(mean=new_mean, std=new_std, best=best, J=J, it=it, done=conv,
                    status=jnp.where(conv, PlanStatus.CONVERGED, PlanStatus.MAX_ITER).astype(jnp.int32),
                    history=fill_history(s["history"], it, J))

    s0 = dict(mean=mean, std=sigma0, best=mean, J=J0, it=jnp.asarray(0), done=jnp.asarray(False),
              status=jnp.asarray(PlanStatus.MAX_ITER, jnp.int32), history=jnp.full(max_iter + 1, J0, dtype))
    s = jax.lax.while_loop(cond, body, s0)
    status = jnp.where(jnp.isfinite(s["J"]), s["status"], PlanStatus.FAILED).astype(jnp.int32)
    qs, vs = problem.rollout(s["best"])
    return make_plan(problem, s["best"], qs, vs, s["J"], s["it"], status, s["history"], "cem")
