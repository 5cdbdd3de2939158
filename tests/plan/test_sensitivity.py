"""diffsim.plan.sensitivity: derivatives of the optimal cost and torques by implicit
differentiation, against central differences of re-solved plans."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from plan_models import pendulum, swing_running, swing_terminal

import diffsim as ds

DOWN = jnp.array([math.pi / 2])
SWING = dict(horizon=60, dt=0.02, running_cost=swing_running, terminal_cost=swing_terminal, tol=1e-14)
H = 1e-4  # central-difference step (parameters of order 0.05 … 10: truncation ~1e-8 relative)


def _fd(m, name, index, lim):
    """Central differences of the re-solved plan's cost and torques w.r.t. one entry."""
    system = ds.System(m, DOWN, jnp.zeros(1))
    val = jnp.asarray(ds.get_param(system, name))
    out = []
    for sign in (1.0, -1.0):
        new = val.at[index].add(sign * H) if val.ndim else val + sign * H
        s = ds.set_params(system, {name: new})
        out.append(ds.plan.solve(s.model, s.q0, s.v0, **SWING, tau_limits=lim))
    assert all(p.message == "converged" for p in out)
    return (out[0].cost - out[1].cost) / (2 * H), (out[0].tau - out[1].tau) / (2 * H)


def _check(m, sens, lim, cases):
    for name, index in cases:
        dJ, dtau = _fd(m, name, index, lim)
        a_J = sens.cost[name][index] if index is not None else sens.cost[name]
        a_tau = sens.tau[name][..., index] if index is not None else sens.tau[name]
        # the cost: envelope theorem, exact at the optimum (measured ~3e-8 relative)
        np.testing.assert_allclose(a_J, dJ, rtol=1e-6)
        # the torques: the re-solves' convergence error (~1e-9) / 2H and the Hessian's
        # conditioning leave ~3e-6 of the largest entry (measured)
        scale = float(jnp.max(jnp.abs(a_tau)))
        assert scale > 0
        np.testing.assert_allclose(a_tau, dtau, atol=2e-5 * scale)


@pytest.mark.slow
def test_sensitivity_of_the_unconstrained_swing_up_matches_resolved_plans():
    m = pendulum()
    p = ds.plan.solve(m, DOWN, jnp.zeros(1), **SWING)
    assert p.message == "converged"
    s = ds.plan.sensitivity(p, ["body.l1.mass", "q0.l1"])
    assert s.tau["body.l1.mass"].shape == (60, 1) and s.tau["q0.l1"].shape == (60, 1, 1)
    assert bool(jnp.all(s.free))
    _check(m, s, None, [("body.l1.mass", None), ("q0.l1", 0)])


@pytest.mark.slow
def test_sensitivity_with_active_limits_holds_clamped_torques_and_cg_agrees():
    m = pendulum()
    lim = (-5.0, 5.0)
    p = ds.plan.solve(m, DOWN, jnp.zeros(1), **SWING, tau_limits=lim)
    assert p.message == "converged"
    names = ["joint.l1.damping", "gravity", "body.l1.com"]
    s = ds.plan.sensitivity(p, names)
    n_free = int(jnp.sum(s.free))
    assert 5 < n_free < 55  # a mix of clamped and free steps
    for name in names:  # clamped torques do not move with the parameters
        d = s.tau[name].reshape(60, -1)
        assert bool(jnp.all(jnp.where(s.free[:, :1], True, d == 0.0)))
    _check(m, s, lim, [("joint.l1.damping", 0), ("gravity", 2), ("body.l1.com", 0)])
    c = ds.plan.sensitivity(p, names, solver="cg")
    for name in names:  # matrix-free CG (residual 1e-12) to the accuracy of the check above
        scale = float(jnp.max(jnp.abs(s.tau[name])))
        np.testing.assert_allclose(c.tau[name], s.tau[name], atol=2e-5 * scale)
        np.testing.assert_allclose(c.cost[name], s.cost[name], rtol=1e-12)
