"""Least-squares (Gauss–Newton) costs in diffsim.plan: ``costs.LeastSquares`` is the scalar
``Σ w_i r_i²`` (value and gradient of the equivalent lambda), DDP with Gauss–Newton cost Hessians
reaches the same stationary point as DDP with exact Hessians, bad input errors clearly."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from plan_models import UP, pendulum

import diffsim as ds
from diffsim.plan import costs
from diffsim.plan.problem import quadratic_model

DOWN = jnp.array([math.pi / 2 - 0.2])  # hanging, displaced: at π/2 the tip error is stationary in q
L = 0.3  # the centre of mass' distance from the joint [m]
TOP = jnp.array([math.cos(UP), math.sin(UP)])


# the pendulum's centre of mass in its plane: a residual NONLINEAR in q, so that the Gauss–Newton
# and exact Hessians differ wherever it is not zero (at the optimum the running residual is not)
def com_error(q):
    return L * (jnp.concatenate([jnp.cos(q), jnp.sin(q)]) - TOP)


def run_residual(q, v, tau):
    return jnp.concatenate([tau, com_error(q)])


def term_residual(q, v):
    return jnp.concatenate([com_error(q), v])


RUN_W, TERM_W = np.array([1e-2, 1.0, 1.0]), np.array([100.0, 100.0, 10.0])
RUN_GN = costs.LeastSquares(run_residual, RUN_W)
TERM_GN = costs.LeastSquares(term_residual, TERM_W)


def run_exact(q, v, tau):
    return jnp.sum(jnp.asarray(RUN_W) * run_residual(q, v, tau) ** 2)


def term_exact(q, v):
    return jnp.sum(jnp.asarray(TERM_W) * term_residual(q, v) ** 2)


# the same running cost as a Sum: the torque effort a plain term (exact Hessian), the position a
# residual term (Gauss–Newton)
RUN_MIXED = costs.Sum(lambda q, v, tau: 1e-2 * jnp.sum(tau**2), costs.LeastSquares(lambda q, v, tau: com_error(q)))
SWING = dict(horizon=60, dt=0.02)


@pytest.fixture(scope="module")
def pend():
    return pendulum()


@pytest.fixture(scope="module")
def plans(pend):
    def solve(r, t, tau_init=None):
        return ds.plan.solve(pend, DOWN, jnp.zeros(1), **SWING, running_cost=r, terminal_cost=t, tol=1e-14,
                             tau_init=tau_init)

    gn = solve(RUN_GN, TERM_GN)
    # from one guess the two models may take different swings to different local minima (measured:
    # zero torque -> exact Hessian 13 it. to 0.18320 via q = 3π/2, Gauss–Newton 44 it. to 0.18173
    # via −π/2); the shared fixed point is checked by warm starts at each other's optimum
    return {"gn": gn, "exact_at_gn": solve(run_exact, term_exact, gn.tau), "mixed": solve(RUN_MIXED, TERM_GN)}


def test_least_squares_value_and_gradient_equal_the_scalar_cost():
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, v, tau = (jnp.asarray(rng.normal(size=1)) for _ in range(3))
        np.testing.assert_allclose(RUN_GN(q, v, tau), run_exact(q, v, tau), rtol=1e-14)
        np.testing.assert_allclose(RUN_MIXED(q, v, tau), run_exact(q, v, tau), rtol=1e-14)
        for a, b in zip(jax.grad(RUN_GN, (0, 1, 2))(q, v, tau), jax.grad(run_exact, (0, 1, 2))(q, v, tau)):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(TERM_GN(q, v), term_exact(q, v), rtol=1e-14)
    # a scalar weight broadcasts; equal costs hash alike (one compiled program)
    np.testing.assert_allclose(costs.LeastSquares(run_residual, 2.0)(q, v, tau),
                               2.0 * jnp.sum(run_residual(q, v, tau) ** 2), rtol=1e-15)
    assert costs.LeastSquares(run_residual, RUN_W.tolist()) == RUN_GN
    assert hash(costs.LeastSquares(run_residual, RUN_W.copy())) == hash(RUN_GN)
    assert costs.Sum(RUN_MIXED, run_exact).terms == (*RUN_MIXED.terms, run_exact)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_quadratic_model_is_gauss_newton_for_residuals_and_exact_otherwise():
    """At z with a non-zero residual: the model's gradient is the exact one for both; the Hessian
    is 2 JᵀWJ for LeastSquares (differs from the exact Hessian by 2 Σ w r ∇²r) and the exact one
    for the plain callable (∂²/∂q² of the centre-of-mass error: exact 2 L² cos(q − UP), GN 2 L²;
    positive at this q, so the PSD projection leaves the exact Hessian unchanged)."""
    q, v, tau = jnp.array([-1.0]), jnp.array([-0.3]), jnp.array([0.7])
    lift = lambda z: (z[:1], z[1:2], z[2:])  # noqa: E731
    z = jnp.concatenate([q, v, tau])
    g_e, H_e = quadratic_model(run_exact, lift, z, 0.02)
    g_g, H_g = quadratic_model(RUN_GN, lift, z, 0.02)
    g_m, H_m = quadratic_model(RUN_MIXED, lift, z, 0.02)
    c = lambda z: 0.02 * run_exact(*lift(z))  # noqa: E731
    np.testing.assert_allclose(H_e, jax.hessian(c)(z), rtol=1e-13)
    J = jax.jacfwd(lambda z: run_residual(*lift(z)))(z)
    np.testing.assert_allclose(H_g, 2 * 0.02 * J.T @ (RUN_W[:, None] * J), rtol=1e-13)
    np.testing.assert_allclose(H_m, H_g, rtol=1e-13)  # the effort's exact Hessian is its GN one
    for g in (g_e, g_g, g_m):
        np.testing.assert_allclose(g, jax.grad(c)(z), rtol=1e-13)
    np.testing.assert_allclose(H_g[0, 0], 2 * 0.02 * L**2, rtol=1e-13)
    np.testing.assert_allclose(H_e[0, 0], 2 * 0.02 * L**2 * math.cos(-1.0 - UP), rtol=1e-13)


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_ddp_gauss_newton_and_exact_hessians_share_the_fixed_point(plans):
    """GN and exact-Hessian DDP take different steps (the running residual is not zero at the
    optimum) but have the same fixed point ∇J = 0: the GN plan is upright (residual periodic in q),
    the gradient through the rollout vanishes there, and exact-Hessian DDP started at it stays
    (same cost and torques to the solve tolerance); the mixed Sum follows the GN path."""
    g, e, m = plans["gn"], plans["exact_at_gn"], plans["mixed"]
    for p in (g, e, m):
        assert p.message == "converged"
    assert abs(math.remainder(float(g.q[-1, 0]) - UP, 2 * math.pi)) < 1e-2 and abs(float(g.v[-1, 0])) < 0.1
    grad = jax.jit(jax.grad(g.problem.objective))
    g0 = float(jnp.max(jnp.abs(grad(jnp.zeros_like(g.u)))))
    assert float(jnp.max(jnp.abs(grad(g.u)))) <= 1e-6 * g0  # measured 4e-10 of g0
    assert int(e.iterations) <= 2
    np.testing.assert_allclose(float(e.cost), float(g.cost), rtol=1e-10)
    scale = float(jnp.max(jnp.abs(g.tau)))
    np.testing.assert_allclose(e.tau, g.tau, rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(float(m.cost), float(g.cost), rtol=1e-10)
    np.testing.assert_allclose(m.tau, g.tau, rtol=0, atol=1e-5 * scale)


@pytest.mark.parametrize(("make", "match"), [
    (lambda: costs.LeastSquares(lambda q, v, tau: jnp.sum(tau**2)), "must return a vector"),
    (lambda: costs.LeastSquares(lambda q, v, tau: jnp.outer(tau, tau)), "must return a vector"),
    (lambda: costs.LeastSquares(run_residual, [1.0, 2.0]), r"weights have shape \(2,\)"),
    (lambda: costs.LeastSquares(run_residual, np.ones((3, 1))), "scalar or a vector"),
    (lambda: costs.LeastSquares(run_residual, [1.0, -1.0, 1.0]), ">= 0"),
    (lambda: costs.LeastSquares(run_residual, [1.0, np.nan, 1.0]), ">= 0"),
    (lambda: costs.LeastSquares("tau"), "must be a callable"),
    (lambda: costs.Sum(run_exact, 3.0), "must be a callable"),
    (lambda: costs.Sum(), "at least one term"),
])
def test_bad_least_squares_input_errors_clearly(pend, make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        cost = make()
        ds.plan.make_problem(pend, DOWN, jnp.zeros(1), **SWING, running_cost=cost, terminal_cost=TERM_GN)
