"""Planning through contact (issue 16 §3.4): ``ds.plan.solve_system`` throws the ball of
``ball-drop`` so that it lands after one bounce on a target point at a target time, optimised
through the event-driven simulation (``experiments/plan_ball_throw.py`` is the full study)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.plan.simulated import onset_time

_spec = importlib.util.spec_from_file_location(
    "plan_ball_throw", Path(__file__).resolve().parents[2] / "experiments" / "plan_ball_throw.py")
throw = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(throw)


@pytest.fixture(scope="module")
def ball():  # rtol = atol = 1e-12: the tangents through the impacts to ~1e-5 (see the gradient test)
    return throw.throw_system(1e-12, t1=1.0, n_save=11)


def test_bad_input(ball):
    obj = throw.make_objective(throw.TARGET)
    with pytest.raises(TypeError, match="System"):
        ds.plan.solve_system(ball.model, ["v0.ball"], obj)
    with pytest.raises(ValueError, match="unknown system parameter"):
        ds.plan.solve_system(ball, ["v0.nothing"], obj)
    with pytest.raises(ValueError, match="non-empty"):
        ds.plan.solve_system(ball, [], obj)
    with pytest.raises(ValueError, match="shape"):
        ds.plan.solve_system(ball, ["v0.ball"], obj, init={"v0.ball": jnp.zeros(3)})
    with pytest.raises(ValueError, match="not in names"):
        ds.plan.solve_system(ball, ["v0.ball[0]"], obj, init={"v0.ball[2]": 1.0})
    with pytest.raises(TypeError, match="callable"):
        ds.plan.solve_system(ball, ["v0.ball[0]"], 3.0)
    with pytest.raises(ValueError, match="max_iter"):
        ds.plan.solve_system(ball, ["v0.ball[0]"], obj, max_iter=-1)
    with pytest.raises(ValueError, match="event mode"):
        onset_time(object(), 1)
    # plan.solve refuses the ball's hysteresis law (its damping needs the located impact), pointing at solve_system
    with pytest.raises(ValueError, match="solve_system"):
        ds.plan.solve(ball.model, ball.q0, ball.v0, horizon=2, dt=0.1, running_cost=lambda q, v, t: jnp.sum(t**2),
                      terminal_cost=lambda q, v: jnp.sum(v**2), contact=ball.contact)


@pytest.mark.slow
def test_landing_gradient_equals_central_differences(ball):
    """Forward-mode Jacobian of the landing (x_L, t_L) w.r.t. the throw (v_x, v_z), through the
    event times of two impacts, against central differences (h = 1e-4 m/s: truncation O(h²) and
    noise ~ tol/h = 1e-8, both below the AD error). The tangent through an impact is the exact
    derivative of the discrete solution, whose tangent error the step controller does not bound:
    experiments/plan_ball_throw.py measures 9e-6 (start) and 2e-5 (optimum) relative at
    rtol = atol = 1e-12, the same for h = 1e-3 and 1e-4 (so it is the AD side), and 1.1e-3–1.6e-3 at
    1e-10. Tolerance 1e-4. (12 s on the quiet 2 cores, 42 s under load 11.)"""
    f = throw.landing_of(ball)
    # one compiled program gives the value and both tangents (the FD points reuse it)
    value_and_jac = jax.jit(lambda th: jax.vmap(lambda e: jax.jvp(f, (th,), (e,)))(jnp.eye(2, dtype=th.dtype)))
    th = jnp.asarray(throw.START)
    J_ad = np.asarray(value_and_jac(th)[1]).T  # [output, input]
    h = 1e-4
    def value(x):
        return np.asarray(value_and_jac(x)[0][0])

    J_fd = np.stack([(value(th.at[k].add(h)) - value(th.at[k].add(-h))) / (2 * h) for k in range(2)], 1)
    assert np.max(np.abs(J_ad - J_fd)) <= 1e-4 * np.max(np.abs(J_fd))


@pytest.mark.slow
def test_throw_lands_on_the_target_after_one_bounce(ball):
    """From a throw that lands 0.82 m short and 0.26 s early, L-BFGS through the event-driven
    simulation reaches the target point and time (J = 0 at the optimum: two conditions, two
    unknowns), with exactly one bounce before the landing (the experiment, at rtol 1e-10: 15
    iterations, landing errors 6e-11 m and 7e-11 s; bound 1e-6: the event times are located to
    well below it at these tolerances, and L-BFGS needs only a descent direction). 34 s on the quiet
    2 cores (compile-bound), 162 s under load 11."""
    plan = ds.plan.solve_system(ball, list(throw.NAMES), throw.make_objective(throw.TARGET),
                                init=dict(zip(throw.NAMES, throw.START)), max_iter=40, tol=1e-10, cost_tol=1e-18)
    assert np.sqrt(2 * float(plan.cost_history[0])) > 0.5  # the start misses by a lot (0.86 in (m, s))
    assert plan.message == "converged"
    x_l, t_l = np.asarray(throw.landing(plan.trajectory, plan.system))
    assert abs(x_l - throw.TARGET[0]) < 1e-6 and abs(t_l - throw.TARGET[1]) < 1e-6
    ev_t, ev_f = np.asarray(plan.trajectory.contact.event_t), np.asarray(plan.trajectory.contact.event_flip[:, 0])
    assert int(np.sum((ev_f == 1) & (ev_t < t_l))) == 1
