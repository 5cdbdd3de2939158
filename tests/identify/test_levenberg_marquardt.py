"""The estimator's Levenberg–Marquardt stops on MINPACK's test (cost and step), which holds on
residuals that carry a simulator's round-off; optimistix's per-residual test does not."""

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from diffsim.identify.estimator import FAILED_RESIDUAL, LevenbergMarquardt, gated_jacobian, linear_model

RNG = np.random.default_rng(3)
A = jnp.asarray(RNG.standard_normal((40, 2)) * [1.0, 30.0])
THETA = jnp.array([1.3, -0.4])
B = A @ THETA + 0.01 * jnp.asarray(RNG.standard_normal(40))


def residuals(theta, _):
    """Linear least squares plus a deterministic 1e-9 jitter in θ that the Jacobian does not see:
    an adaptive solver's round-off, which no step can smooth out."""
    return A @ theta - B + jax.lax.stop_gradient(1e-9 * jnp.sin(1e7 * theta[0] + jnp.arange(40.0)))


def solve(solver):
    return optx.least_squares(residuals, solver, jnp.array([0.0, 0.0]), max_steps=60, throw=False)


def noise_limit():
    """How far from the exact optimum θ* the noisy cost can still tell points apart: the jitter
    moves C by up to δC ≈ 2·1e-9 Σ|r_i| between two points, and C − C* = ½ δθᵀ AᵀA δθ, so
    ‖δθ‖ ≲ √(2 δC / λ_min(AᵀA))."""
    best = jnp.linalg.lstsq(A, B)[0]
    dC = 2e-9 * float(jnp.sum(jnp.abs(A @ best - B)))
    return best, float(np.sqrt(2 * dC / np.linalg.eigvalsh(np.asarray(A.T @ A))[0]))


def test_stops_at_the_optimum_of_noisy_residuals():
    best, limit = noise_limit()
    sol = solve(LevenbergMarquardt(rtol=1e-8, atol=1e-10))
    assert sol.result == optx.RESULTS.successful
    assert float(jnp.max(jnp.abs(sol.value - best))) <= limit
    assert int(sol.stats["num_steps"]) <= 15
    # the stock test on the same problem waits for steps too small to change any residual
    stock = solve(optx.LevenbergMarquardt(rtol=1e-8, atol=1e-10))
    assert int(stock.stats["num_steps"]) > int(sol.stats["num_steps"])


def rosenbrock(theta, _=None):
    """Rosenbrock's valley as least squares (optimum (1, 1), cost 0), with the same jitter."""
    r = jnp.array([10.0 * (theta[1] - theta[0] ** 2), 1.0 - theta[0]])
    return r + jax.lax.stop_gradient(1e-9 * jnp.sin(1e7 * theta[0] + jnp.arange(2.0)))


def test_does_not_stop_on_a_rejected_step_far_from_the_optimum():
    """A rejected trial leaves θ and the cost unchanged: that alone is not convergence. Along
    Rosenbrock's curved valley from (−1.2, 1) trials are rejected on the way; the method must
    still arrive (here the jitter limits θ to ~1e-8)."""
    sol = optx.least_squares(rosenbrock, LevenbergMarquardt(rtol=1e-8, atol=1e-10), jnp.array([-1.2, 1.0]),
                             max_steps=200, throw=False)
    assert sol.result == optx.RESULTS.successful
    np.testing.assert_allclose(sol.value, [1.0, 1.0], rtol=0, atol=1e-7)


def test_jacobian_is_computed_only_where_the_step_can_be_accepted():
    """The estimator's forward-mode solve: :class:`LevenbergMarquardt` evaluates its ``dense``
    function (residuals and Jacobian) at the point each step linearises and optimistix linearises
    :func:`linear_model`; the Jacobian is skipped where the cost is above the step's acceptance
    bound (``gated_jacobian``, the trust region's test). Along Rosenbrock's valley from (−1.2, 1)
    the solve takes exactly the path of optimistix's linearisation of the residuals (every point
    and step count equal), with one Jacobian per accepted point and none at a rejected one, and
    returns the Jacobian at its solution as the auxiliary output (``BestSoFarLeastSquares``, as
    in the estimator, keeps the aux of the point it returns)."""
    calls = []

    def dense(inputs, theta, bound):
        def jacobian():
            jax.debug.callback(lambda: calls.append(1))
            return jax.jacfwd(rosenbrock)(theta), rosenbrock(theta)

        J, r = gated_jacobian(rosenbrock(theta), bound, jacobian, theta.size)
        return r, J, None

    y0 = jnp.array([-1.2, 1.0])
    ungated = optx.least_squares(lambda th, args: rosenbrock(th),
                                 optx.BestSoFarLeastSquares(LevenbergMarquardt(rtol=1e-8, atol=1e-10)), y0,
                                 max_steps=200, throw=False)
    sol = optx.least_squares(linear_model, optx.BestSoFarLeastSquares(LevenbergMarquardt(rtol=1e-8, atol=1e-10,
                                                                                         dense=dense)), y0,
                             args=(None, (y0, jnp.zeros(2), jnp.zeros((2, 2)), None)), has_aux=True, max_steps=200,
                             throw=False)
    assert sol.result == optx.RESULTS.successful
    assert int(sol.stats["num_steps"]) == int(ungated.stats["num_steps"])
    np.testing.assert_array_equal(sol.value, ungated.value)
    np.testing.assert_array_equal(sol.aux[0], jax.jacfwd(rosenbrock)(sol.value))
    # one Jacobian per accepted point (the first included), none at a rejected one
    assert len(calls) == int(ungated.state.state.num_accepted_steps) < int(sol.stats["num_steps"])


def test_gated_jacobian_keeps_the_primal_residuals_unless_the_jacobian_run_failed():
    """Below the bound: the Jacobian, with the primal residuals (one function for the search), or
    the failed run's residuals when the Jacobian's run failed (the search rejects the point);
    above it: zeros and the primal residuals."""
    r = jnp.array([1.0, 2.0])
    ok = (jnp.ones((2, 3)), r + 1e-9)
    failed = (jnp.ones((2, 3)), jnp.full(2, FAILED_RESIDUAL))
    J, rr = gated_jacobian(r, 2.5, lambda: ok, 3)
    np.testing.assert_array_equal(J, ok[0])
    np.testing.assert_array_equal(rr, r)
    J, rr = gated_jacobian(r, 2.5, lambda: failed, 3)
    np.testing.assert_array_equal(rr, failed[1])
    np.testing.assert_array_equal(J, jnp.zeros((2, 3)))  # a failed run's Jacobian is never read
    J, rr = gated_jacobian(r, 2.5, lambda: (jnp.full((2, 3), jnp.nan), r + 1e-9), 3)  # non-finite J: failed too
    np.testing.assert_array_equal(rr, jnp.full(2, FAILED_RESIDUAL))
    np.testing.assert_array_equal(J, jnp.zeros((2, 3)))
    J, rr = gated_jacobian(r, 2.4, lambda: failed, 3)
    np.testing.assert_array_equal(J, jnp.zeros((2, 3)))
    np.testing.assert_array_equal(rr, r)
