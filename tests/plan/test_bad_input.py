"""diffsim.plan.solve refuses bad input with one clear error each (issue 16, section 5)."""

import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest
from plan_models import pendulum, swing_running, swing_terminal

import diffsim as ds

M = pendulum()
Q0, V0 = jnp.array([math.pi / 2]), jnp.zeros(1)
OK = dict(horizon=3, dt=0.02, running_cost=swing_running, terminal_cost=swing_terminal)


def _solve(**changes):
    args = dict(OK)
    q0 = changes.pop("q0", Q0)
    v0 = changes.pop("v0", V0)
    args.update(changes)
    return ds.plan.solve(M, q0, v0, **args)


@pytest.mark.parametrize("changes, error, match", [
    (dict(q0=jnp.zeros(2)), ValueError, r"q0 must have shape \(1,\)"),
    (dict(v0=jnp.zeros((1, 1))), ValueError, r"v0 must have shape \(1,\)"),
    (dict(q0=jnp.array([jnp.nan])), ValueError, "not finite"),
    (dict(tau_init=jnp.zeros((4, 1))), ValueError, r"tau_init must have shape \(3, 1\)"),
    (dict(tau_limits=(jnp.zeros(2), jnp.ones(2))), ValueError, "tau_limits lo must be a scalar or have shape"),
    (dict(tau_limits=(1.0, -1.0)), ValueError, "lo > hi"),
    (dict(tau_limits=1.0), ValueError, r"pair \(lo, hi\)"),
    (dict(running_cost=lambda q, v, tau: tau), ValueError, "running_cost must return a scalar, got shape"),
    (dict(terminal_cost=lambda q, v: jnp.stack([q[0], v[0]])), ValueError, "terminal_cost must return a scalar"),
    (dict(running_cost=3.0), TypeError, "running_cost must be a callable"),
    (dict(horizon=0), ValueError, "horizon must be >= 1"),
    (dict(horizon=2.5), TypeError, "horizon must be an integer"),
    (dict(dt=-0.1), ValueError, "dt must be positive"),
    (dict(method="newton"), ValueError, "unknown method 'newton'"),
    (dict(contact=object()), TypeError, "compliant contact model"),
    (dict(actuation=[3]), ValueError, r"actuation indices must lie in \[0, 1\)"),
    (dict(actuation=["elbow"]), ValueError, "no joint named 'elbow'"),
    (dict(actuation=[False]), ValueError, "selects no coordinate"),
    (dict(method="cem", options=dict(temperature=1.0)), ValueError, "unknown cem options"),
    (dict(options=dict(population=8)), ValueError, "options= are for method 'cem'"),
    (dict(max_iter=-1), ValueError, "max_iter must be a non-negative integer"),
    (dict(actuation=[0, 0]), ValueError, "actuation indices must be distinct"),
    # CEM options that made it stop after one iteration as "converged", or did nothing
    (dict(method="cem", options=dict(population=10)), ValueError, r"elite set .* = 1 must hold at least 2"),
    (dict(method="cem", options=dict(population=64, elite_fraction=0.01)), ValueError, "must hold at least 2"),
    (dict(method="cem", options=dict(sigma=-2.0)), ValueError, "sigma .* must be finite and > 0"),
    (dict(method="cem", options=dict(sigma=0.0)), ValueError, "sigma .* must be finite and > 0"),
    (dict(method="cem", options=dict(sigma=jnp.ones(2))), ValueError, r"sigma must broadcast to the controls' shape \(3, 1\)"),
    (dict(method="cem", options=dict(smoothing=1.5)), ValueError, r"smoothing must lie in \[0, 1\)"),
    (dict(method="cem", options=dict(population=2.5)), ValueError, "integer population"),
])
def test_bad_input_is_refused_with_a_clear_message(changes, error, match):
    with pytest.raises(error, match=match):
        _solve(**changes)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_a_non_finite_cost_at_the_initial_guess_is_refused():
    with pytest.raises(ValueError, match="cost at the initial guess is not finite"):
        _solve(terminal_cost=lambda q, v: jnp.log(-jnp.sum(q**2)), max_iter=1)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_sensitivity_refuses_a_batch_bad_solver_and_plans_that_are_not_minima():
    p = _solve(max_iter=1, tol=0.0)
    with pytest.raises(ValueError, match="solver must be"):
        ds.plan.sensitivity(p, ["gravity"], solver="qr")
    with pytest.raises(TypeError, match="expects a Plan"):
        ds.plan.sensitivity(p.tau, ["gravity"])
    # one iteration: the optimality conditions it differentiates do not hold (it returned dJ*/dm = -9070
    # on a swing-up whose converged value is 0.13)
    assert int(p.status) == ds.plan.PlanStatus.MAX_ITER
    with pytest.raises(ValueError, match="converged plan; this plan ended with status max_iter"):
        ds.plan.sensitivity(p, ["gravity"])
    # a stationary point that is a maximum in the controls: no derivatives, said in words (lineax raised
    # "a linear solver returned non-finite" from inside the compiled solve)
    m = _solve(running_cost=lambda q, v, tau: -jnp.sum(tau**2), max_iter=0)
    m = eqx.tree_at(lambda x: x.status, m, jnp.asarray(ds.plan.PlanStatus.CONVERGED, jnp.int32))
    with pytest.raises(ValueError, match="reduced Hessian .* is not positive definite"):
        ds.plan.sensitivity(m, ["gravity"])


# ---- found by a review of what a plan returns -------------------------------------------------------

def test_ctrl_limits_tighten_the_ctrlranges_never_widen_them():
    """With ``ctrl=True`` a ``tau_limits`` wider than an actuator's ``ctrlrange`` planned controls the
    actuator clamps (a plan of ±4.3 on a ±0.3 motor: "converged", its replay 0.32 rad off): the box
    is the intersection; a box outside the range is refused."""
    from test_plan_ctrl import XML

    from diffsim.plan.solve import make_problem

    model = ds.load_mjcf(XML)
    kw = dict(horizon=3, dt=0.02, running_cost=lambda q, v, u: jnp.sum(u**2), terminal_cost=lambda q, v: jnp.sum(q**2),
              ctrl=True)
    p = make_problem(model, jnp.zeros(2), jnp.zeros(2), tau_limits=(-5.0, jnp.array([0.1, 5.0])), **kw)
    np.testing.assert_array_equal(p.lo, [-0.3, -0.15])
    np.testing.assert_array_equal(p.hi, [0.1, 0.15])
    with pytest.raises(ValueError, match=r"outside the ctrlrange of the actuators \['motor'\]"):
        make_problem(model, jnp.zeros(2), jnp.zeros(2), tau_limits=(0.2, 1.0), **kw)


def test_shooting_limits_with_one_bound_or_none_keep_a_gradient():
    """A one-sided limit was a clip (zero gradient past the bound: controls that reached it stayed,
    cost 0.356 against DDP's 0.120); ``lo = hi`` divided 0 by 0 (a false "cost at the initial guess is
    not finite"). Now a softplus on one side, ``u = lo`` when pinned."""
    import jax

    from diffsim.plan.shooting import _transform
    from diffsim.plan.solve import make_problem

    for lim in ((-jnp.inf, 2.0), (-1.0, jnp.inf), (0.5, 0.5), (-1.0, 2.0)):
        p = make_problem(M, Q0, V0, tau_limits=lim, **OK)
        to_u, to_z = _transform(p)
        z = jnp.linspace(-30.0, 30.0, 13)[:, None]
        u = jax.vmap(to_u)(z)
        assert bool(jnp.all(jnp.isfinite(u))) and bool(jnp.all((u >= lim[0]) & (u <= lim[1]))), lim
        du = jax.vmap(jax.grad(lambda z: to_u(z)[0]))(z[:, 0:1].reshape(-1, 1))
        if lim[0] < lim[1]:  # the control responds to z everywhere but deep in a two-sided tanh's tail
            assert bool(jnp.all(du[jnp.abs(z[:, 0]) < 5] > 0)), (lim, du)
            if not (np.isfinite(lim[0]) and np.isfinite(lim[1])):
                assert bool(jnp.all(du > 0)), (lim, du)
        inside = jnp.array([[1.0], [-0.5], [1.9], [-0.9]])
        inside = jnp.clip(inside, lim[0], lim[1])
        if lim[0] < lim[1]:
            np.testing.assert_allclose(jax.vmap(lambda x: to_u(to_z(x)))(inside), inside, rtol=1e-9,
                                       atol=1e-3 if np.isfinite(lim[0]) != np.isfinite(lim[1]) else 1e-9)
        else:
            np.testing.assert_array_equal(jax.vmap(lambda x: to_u(to_z(x)))(inside), 0.5)


@pytest.mark.slow  # two small CEM compiles
def test_cem_with_a_pinned_control_converges_and_its_plans_have_no_sensitivity():
    """CEM's stopping test divided by an initial spread of 0 (a control pinned by lo = hi): it never
    converged. ``sensitivity`` took a CEM plan "converged" by its spread as a minimum (dJ*/dm of the
    wrong sign)."""
    pinned = _solve(method="cem", tau_limits=(0.5, 0.5), max_iter=20, options=dict(population=32))
    assert pinned.message == "converged" and int(pinned.iterations) == 1
    np.testing.assert_array_equal(pinned.tau, 0.5)
    plan = _solve(method="cem", tau_limits=(-2.0, 2.0), max_iter=3, options=dict(population=32))
    with pytest.raises(ValueError, match="a CEM plan .* its convergence is a small sampling spread"):
        ds.plan.sensitivity(plan, ["gravity"])
