"""Event location (``diffsim.simulation.event_root.EarliestRoot``): the earliest crossing of the
triggered conditions, bracketed in the step; end to end, two contact points that cross a plane
within one step are located one after the other at their free-fall times."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest

import diffsim as ds
from diffsim.simulation.event_root import EarliestRoot

BRACKET = dict(lower=jnp.asarray(0.0), upper=jnp.asarray(1.0))
SOLVER = EarliestRoot(rtol=1e-15, atol=1e-13)


def _find(fn, solver=SOLVER, args=None):
    return optx.root_find(fn, solver, jnp.asarray(1.0), args=args, options=BRACKET, throw=False, max_steps=256)


def test_two_triggered_conditions_give_the_earliest_root():
    """diffrax passes the values of the triggered conditions and 0 for the others; roots at 0.3
    and 0.6: the event is at 0.3. Newton (diffrax's default) minimises Σ g² between them."""

    def fn(t, _):
        return [0.3 - t, jnp.asarray(0.0), 0.6 - t + 0.5 * (t - 0.6) ** 3], None

    sol = _find(fn)
    assert sol.result == optx.RESULTS.successful
    np.testing.assert_allclose(sol.value, 0.3, atol=1e-13)
    newton = _find(fn, optx.Newton(rtol=1e-15, atol=1e-13))
    assert newton.result != optx.RESULTS.successful or abs(float(newton.value) - 0.3) > 1e-3


def test_the_root_stays_in_the_bracket_where_newton_leaves_it():
    """``atan(20 (t − 0.2))`` from ``t = 1``: Newton's first step lands far outside [0, 1]."""

    def fn(t, _):
        return [-jnp.arctan(20.0 * (t - 0.2))], None

    sol = _find(fn)
    assert sol.result == optx.RESULTS.successful
    np.testing.assert_allclose(sol.value, 0.2, atol=1e-13)
    assert sol.stats["num_steps"] < 60  # bisection alone would need log2(1 / 1e-13) ≈ 43
    newton = _find(fn, optx.Newton(rtol=1e-15, atol=1e-13))
    assert newton.result != optx.RESULTS.successful or abs(float(newton.value) - 0.2) > 1e-3


def test_no_triggered_condition_gives_the_end_of_the_step():
    """Under ``vmap`` diffrax also calls the root find for samples without an event; it then
    passes ``t_next − t`` for every condition."""
    sol = _find(lambda t, _: ([1.0 - t, 1.0 - t], None))
    np.testing.assert_allclose(sol.value, 1.0, atol=1e-13)


def test_the_located_time_has_the_implicit_derivative():
    def root(a):
        return _find(lambda t, a: ([a - t + 0.1 * jnp.sin(5.0 * t)], None), args=a).value

    a = 0.4
    d = jax.grad(root)(a)
    fd = (root(a + 1e-6) - root(a - 1e-6)) / 2e-6
    r = root(a)
    np.testing.assert_allclose(d, 1.0 / (1.0 - 0.5 * np.cos(5.0 * float(r))), rtol=1e-10)  # −g_a / g_t
    np.testing.assert_allclose(d, fd, rtol=1e-7)


@pytest.fixture(scope="module", params=[1e-6, 1e-4])
def two_points_one_step(request):
    """A translating body with two contact points ``dh`` apart in height, the higher one listed
    first, released from rest: both cross the plane within one step of the free fall (its error
    estimate is zero). diffrax keeps only the first-listed of the conditions triggered in a step;
    with one condition per pair the lower point's onset was found at the higher one's time."""
    g, h, dh = 9.81, 0.1, request.param
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -g))
    b.add_body("bar", None, joint="free", mass=1.0, inertia=(0.01, 0.01, 0.01))
    m = b.build()
    points = [ds.ContactPoint("bar", pos=(0.1, 0.0, dh)), ds.ContactPoint("bar", pos=(-0.1, 0.0, 0.0))]
    c = ds.compliant_contact(m, points, [ds.Plane((0.0, 0.0, 1.0), 0.0)],
                             normal=ds.normal_law("hu-guo", K=1e6, c_r=0.8), friction=None)
    q0 = jnp.array([0.0, 0.0, h, 1.0, 0.0, 0.0, 0.0])
    traj = ds.simulate(m, q0, jnp.zeros(6), 0.15, contact=c, rtol=1e-10, atol=1e-10, saveat=2, max_events=8,
                       throw=False)
    return traj, np.sqrt(2 * h / g), np.sqrt(2 * (h + dh) / g)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_two_points_crossing_in_one_step_are_located_in_order(two_points_one_step):
    traj, t_low, t_high = two_points_one_step
    assert int(traj.status) == ds.Status.SUCCESS, traj.message
    rec = traj.contact
    assert int(rec.n_events) >= 2
    # the first event is the lower point's onset alone, the second the higher one's, at their
    # free-fall times (the first contact's force, ≤ 1 N over the ≤ 7e-5 s between them, moves
    # the second by ≤ 1e-9 s; measured 9e-13 s)
    np.testing.assert_array_equal(np.asarray(rec.event_flip[:2]), [[0, 1], [1, 0]])
    np.testing.assert_allclose(rec.event_t[0], t_low, atol=1e-11)
    np.testing.assert_allclose(rec.event_t[1], t_high, atol=1e-9)
