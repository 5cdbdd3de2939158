"""Batched planning over targets (issue 16 §3.5, the fast version of
``experiments/plan_batch_ur5.py`` on the smallest arm): a handful of goals solved at once under
``jit(vmap(...))``, the goal closed over in the terminal cost, each reached."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from plan_models import pendulum

import diffsim as ds
from diffsim.plan.costs import LeastSquares

M = pendulum()
DOWN = jnp.array([math.pi / 2])
GOALS = jnp.array([-math.pi / 2, 0.0, 0.8, -2.0])  # upright, horizontal (both sides), 25° past upright [rad]


def _run(q, v, tau):
    return 1e-2 * jnp.sum(tau**2)


def _solve(goal):
    term = LeastSquares(lambda q, v: jnp.concatenate([q - goal, v]), [1e4, 1e2])
    return ds.plan.solve(M, DOWN, jnp.zeros(1), horizon=40, dt=0.03, running_cost=_run, terminal_cost=term,
                         tau_limits=(-6.0, 6.0), tol=1e-12)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_goals_under_vmap_are_each_reached():
    plans = jax.jit(jax.vmap(_solve))(GOALS[:, None])
    assert np.all(np.asarray(plans.status) == ds.plan.PlanStatus.CONVERGED)
    # the terminal penalty leaves an offset ~ (effort gradient)/w_p: well under 1e-2 rad at w_p = 1e4
    err = np.abs(np.asarray(plans.q[:, -1, 0] - GOALS))
    assert err.max() < 1e-2, err
    assert np.all(np.abs(np.asarray(plans.v[:, -1, 0])) < 0.1)
    assert np.all(np.abs(np.asarray(plans.tau)) <= 6.0 + 1e-12)
