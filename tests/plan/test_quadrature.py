"""``quadrature="rk4"``: the running cost integrated over each step with the RK4 weights at the
step's own stage states (Crocoddyl's ``IntegratedActionModelRK``). Checked against a second
implementation written as an ordinary knot cost (``rk4_stage_average`` of the ur5-reach
scenario: the stage states recomputed from the knot by the vector field): the same trajectory
cost, the same DDP local models (Gauss–Newton for least-squares terms, exact PSD-projected for a
plain term), gradients against central differences, and DDP reaching a stationary point."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from plan_models import two_link

import diffsim as ds
from diffsim.plan import costs
from diffsim.scenarios.ur5_reach import rk4_stage_average, rk4_stage_states

M = two_link()
Q0, V0 = jnp.array([math.pi / 2 - 0.3, 0.2]), jnp.zeros(2)
N, DT = 12, 0.05
W = np.array([1e-2, 1e-2, 1.0])


def residual(q, v, tau):  # effort and the elbow's height: nonlinear in q, so the GN Hessian is not the exact one
    return jnp.concatenate([tau, 0.5 * jnp.sin(q[:1] + q[1:])])


def plain(q, v, tau):
    return 0.05 * jnp.sum(v**2) + 0.01 * jnp.sum(jnp.cos(q))


def terminal(q, v):
    return 10.0 * jnp.sum((q - jnp.array([0.3, -0.4])) ** 2) + jnp.sum(v**2)


LS = costs.LeastSquares(residual, W)
RUN = costs.Sum(LS, plain)


def _stacked(q, v, tau):  # the second implementation: stage states from the knot, √b_i-weighted residuals
    qs, vs = rk4_stage_states(M, q, v, tau, DT)
    b = jnp.sqrt(jnp.array([1.0, 2.0, 2.0, 1.0]) / 6)
    return (b[:, None] * jax.vmap(residual, (0, 0, None))(qs, vs, tau)).ravel()


KNOT = costs.Sum(costs.LeastSquares(_stacked, np.tile(W, 4)), rk4_stage_average(M, plain, DT))


@pytest.fixture(scope="module")
def problems():
    kw = dict(horizon=N, dt=DT, terminal_cost=terminal)
    return (ds.plan.make_problem(M, Q0, V0, running_cost=RUN, quadrature="rk4", **kw),
            ds.plan.make_problem(M, Q0, V0, running_cost=KNOT, **kw))


def rel(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1e-300))


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_cost_and_local_models_equal_the_stage_average_written_at_the_knots(problems):
    rk4, knot = problems
    us = 0.5 * jax.random.normal(jax.random.PRNGKey(0), (N, 2))

    @jax.jit
    def both(rk4, knot, us):
        qs, vs = knot.rollout(us)
        return (rk4.rollout_cost(us), rk4.trajectory_cost(qs, vs, us), knot.trajectory_cost(qs, vs, us), (qs, vs),
                rk4.local_models(qs, vs, us), knot.local_models(qs, vs, us))

    (q1, v1, J1), J2, J_ref, (qs, vs), lm, lm_ref = both(rk4, knot, us)
    assert rel(q1, qs) == 0 and rel(v1, vs) == 0  # the rollout is the same steps
    assert rel(J1, J_ref) <= 1e-14 and rel(J2, J_ref) <= 1e-14
    for name, a, b in zip(("A", "B", "g", "H", "g_f", "H_f"), lm, lm_ref):
        assert rel(a, b) <= 1e-12, name
    # and the stage average is not the knot rule (this test could tell them apart)
    knot_rule = ds.plan.make_problem(M, Q0, V0, horizon=N, dt=DT, running_cost=RUN, terminal_cost=terminal)
    assert rel(jax.jit(lambda p, u: p.objective(u))(knot_rule, us), J_ref) > 1e-5  # measured 3.8e-4


def _with_ad_tangents(problem):
    """The same problem with forward-mode AD through ABA in its local models (the planner switches
    the default dynamics to :class:`ds.dynamics.AnalyticTangents` there)."""

    class ADTangents(type(problem)):
        def for_jacobians(self):
            return self

    return ADTangents(**{f.name: getattr(problem, f.name) for f in dataclasses.fields(problem)})


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_local_models_with_analytic_tangents_equal_forward_mode_ad(problems):
    """DDP's local models with the analytical derivatives = with AD tangents (the rk4 quadrature:
    step Jacobians, stage-state Jacobians through the chain rule, a plain term's exact Hessian)."""
    us = 0.5 * jax.random.normal(jax.random.PRNGKey(2), (N, 2))
    for p in problems[:1]:
        assert isinstance(p.for_jacobians().dynamics, ds.dynamics.AnalyticTangents)
        ad = _with_ad_tangents(p)

        @jax.jit
        def both(p, ad, us):
            qs, vs = p.rollout(us)
            return p.local_models(qs, vs, us), ad.local_models(qs, vs, us)

        lm, lm_ref = both(p, ad, us)
        for name, a, b in zip(("A", "B", "g", "H", "g_f", "H_f"), lm, lm_ref):
            assert rel(a, b) <= 1e-12, (p.quadrature, name)


@pytest.mark.slow
def test_gradient_and_ddp(problems):
    rk4, _ = problems
    us = 0.5 * jax.random.normal(jax.random.PRNGKey(1), (N, 2))
    J = jax.jit(lambda u: rk4.objective(u))
    g = jax.jit(jax.grad(lambda u: rk4.objective(u)))(us)
    h = 1e-6
    for k, i in ((0, 0), (5, 1), (N - 1, 0)):
        fd = (J(us.at[k, i].add(h)) - J(us.at[k, i].add(-h))) / (2 * h)
        assert abs(float(fd) - float(g[k, i])) <= 1e-7 * (1 + abs(float(fd)))
    plan = ds.plan.solve(M, Q0, V0, horizon=N, dt=DT, running_cost=RUN, terminal_cost=terminal, quadrature="rk4",
                         tol=1e-14, max_iter=200)
    assert plan.message == "converged"
    assert abs(float(plan.cost) / float(J(plan.u)) - 1) <= 1e-13
    g0 = float(jnp.max(jnp.abs(jax.grad(rk4.objective)(jnp.zeros_like(us)))))
    assert float(jnp.max(jnp.abs(jax.grad(rk4.objective)(plan.u)))) <= 1e-6 * g0


def test_bad_quadrature():
    with pytest.raises(ValueError, match="quadrature must be one of"):
        ds.plan.make_problem(M, Q0, V0, horizon=N, dt=DT, running_cost=RUN, terminal_cost=terminal,
                             quadrature="trapezoid")


def test_eager_rollouts_of_one_problem_compile_once(problems, compile_log):
    """Problem.rollout / rollout_cost called eagerly (a plan's result, a user's check) reuse their
    first compile for new controls (their scan was traced from a new closure and compiled again
    on every call: 20 scan compiles in tests/plan/test_solve.py, now 1)."""
    prob = problems[0]
    us = [jnp.full((N, 2), a) for a in (0.0, 0.1, -0.2)]
    first = prob.rollout_cost(us[0]), prob.rollout(us[0])
    with compile_log() as compiles:
        later = [(prob.rollout_cost(u), prob.rollout(u)) for u in us[1:]]
    assert not compiles, compiles
    np.testing.assert_array_equal(first[0][0], first[1][0])  # the same states either way
    assert all(np.isfinite(float(c[2])) for c, _ in later)
