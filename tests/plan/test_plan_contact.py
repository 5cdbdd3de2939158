"""Torques planned through compliant contact (issue 16): ``ds.plan.solve(..., contact=)``.

A pusher (1 kg, actuated slider) and a box (2 kg, unactuated slider with viscous damping 8 N s/m)
on one line, two spheres (r = 5 cm) touching at the start, a linear spring–damper contact
(K = 2000 N/m, c = 20 N s/m, smoothed over 1 mm) without friction; no gravity along
the line. The box can only be moved through the contact, and only pushed: the plan must push it
0.3 m and let its damping stop it there after 1.5 s (150 RK4 steps of 10 ms; the contact's period
``2π√(m_eff/K)`` = 0.11 s spans 11 steps).

* The goal is reached: the box (never driven) within 1 mm of its target (measured 0.09 mm) and
  nearly at rest (9 mm/s: the optimum's trade against effort), pushed by up to 8.4 N of contact
  force. DDP converges (tol 1e-8) in about 300 iterations: the last ones crawl along a nearly flat
  valley (the optimum's cost to 1e-8, its torques to ~3e-5), so where it stops depends on
  round-off — 259 to 400 iterations at tol 1e-10 with and without LLVM's optimisations.
* The planner's discrete dynamics is the library's compliant-contact simulation: replaying the
  planned torques (held over each step) in ``ds.simulate`` with the same contact in smooth mode
  (adaptive Tsit5, rtol = atol = 1e-12) gives the RK4 rollout's final state up to RK4's error,
  which falls as ``dt⁴``: measured 7.3e-6, 4.8e-7, 3.3e-8 with 1, 2, 4 sub-steps per knot (the
  same held torques), 15.3× and 14.4× per halving.
* The planning objective's gradient through the contact equals central differences.
* Hysteresis laws and stateful friction are refused with the reason.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.contact import ContactPoint, compliant_contact, friction_law, normal_law
from diffsim.plan.solve import make_problem

R, TARGET, T, N = 0.05, 0.6, 1.5, 150
DT = T / N


def _model():
    b = ds.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body("pusher", joint="prismatic", axis=(1, 0, 0), mass=1.0, inertia=(1e-3, 1e-3, 1e-3))
    b.add_body("box", joint="prismatic", axis=(1, 0, 0), mass=2.0, inertia=(1e-3, 1e-3, 1e-3), damping=8.0)
    return b.build()


def _contact(model, mode="events", law=None, friction=None):
    points = [ContactPoint("pusher", radius=R, name="p"), ContactPoint("box", radius=R, name="b")]
    law = normal_law("linear", K=2000.0, c=20.0, smooth=1e-3) if law is None else law
    return compliant_contact(model, points, sphere_pairs=[("p", "b")], normal=law, friction=friction, mode=mode)


Q0 = jnp.array([0.2, 0.3])  # centres 0.1 m apart: the two 5 cm spheres touch


def running(q, v, tau):
    return 1e-3 * jnp.sum(tau**2)


def terminal(q, v):
    return 1e3 * (q[1] - TARGET) ** 2 + 1e2 * jnp.sum(v**2)


@pytest.fixture(scope="module")
def planned():
    model = _model()
    contact = _contact(model)
    plan = ds.plan.solve(model, Q0, jnp.zeros(2), horizon=N, dt=DT, running_cost=running, terminal_cost=terminal,
                         contact=contact, actuation=["pusher"], max_iter=600, tol=1e-8)
    return model, contact, plan


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_the_box_is_pushed_to_its_target_through_the_contact(planned):
    model, contact, plan = planned
    assert int(plan.status) == int(ds.plan.PlanStatus.CONVERGED), plan.status
    assert abs(float(plan.q[-1, 1]) - TARGET) < 1e-3, plan.q[-1]
    assert np.abs(np.asarray(plan.v[-1])).max() < 0.02, plan.v[-1]  # (the optimum trades 1 cm/s against effort)
    assert np.all(np.asarray(plan.tau[:, 1]) == 0.0)  # the box is never driven
    f = jax.vmap(lambda q, v: contact.forces(model, q, v, jnp.full(1, 1e-4)).f_n[0])(plan.q, plan.v)
    assert float(f.max()) > 1.0, f.max()  # N: the contact pushed the box


@pytest.mark.slow  # a 1e-12 adaptive reference and three rollout lengths to compile
def test_rk4_plan_converges_to_the_adaptive_compliant_simulation(planned):
    model, _, plan = planned
    smooth = _contact(model, mode="smooth")
    us = plan.tau

    def held(t, q, v):
        return us[jnp.clip(jnp.floor(t / DT).astype(int), 0, N - 1)]

    sys = ds.System(model, Q0, jnp.zeros(2), tau=held, contact=smooth, t1=T, rtol=1e-12, atol=1e-12, saveat=2,
                    max_steps=400_000)
    ref = ds.simulate(sys)
    x_ref = np.concatenate([np.asarray(ref.q[-1]), np.asarray(ref.v[-1])])

    def rk4(n_sub):
        prob = make_problem(model, Q0, jnp.zeros(2), horizon=N * n_sub, dt=DT / n_sub, running_cost=running,
                            terminal_cost=terminal, actuation=["pusher"], contact=smooth)
        q, v = prob.rollout(jnp.repeat(us[:, :1], n_sub, axis=0))
        return np.concatenate([np.asarray(q[-1]), np.asarray(v[-1])])

    e1, e2, e4 = (np.abs(rk4(n) - x_ref).max() for n in (1, 2, 4))
    assert e1 < 1e-4, e1
    assert 10.0 < e1 / e2 < 24.0 and 10.0 < e2 / e4 < 24.0, (e1, e2, e4)  # fourth order: 16 per halving


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_objective_gradient_through_contact_matches_central_differences(planned):
    model, contact, plan = planned
    prob = make_problem(model, Q0, jnp.zeros(2), horizon=N, dt=DT, running_cost=running, terminal_cost=terminal,
                        actuation=["pusher"], contact=contact)
    us = 0.7 * plan.tau[:, :1]  # a non-optimal iterate: the gradient is not ~0
    J = jax.jit(lambda u: prob.objective(u))
    g = jax.jit(jax.grad(lambda u: prob.objective(u)))(us)
    h = 1e-4  # N: truncation ~1e-9 relative here; h = 1e-6 is already round-off-bound (3e-6 at k = 140)
    for k in (0, 20, 75, 140):
        e = jnp.zeros_like(us).at[k, 0].set(h)
        fd = (J(us + e) - J(us - e)) / (2 * h)
        np.testing.assert_allclose(g[k, 0], fd, rtol=1e-6, atol=1e-9 * float(jnp.abs(g).max()))
    assert float(jnp.abs(g).max()) > 1e-3


def test_memory_laws_and_stateful_friction_are_refused():
    model = _model()
    kw = dict(horizon=3, dt=DT, running_cost=running, terminal_cost=terminal, actuation=["pusher"])
    with pytest.raises(ValueError, match="HuntCrossley.*impact velocity.*solve_system"):
        ds.plan.solve(model, Q0, jnp.zeros(2), contact=_contact(model, law=normal_law("hunt-crossley", K=1e4)), **kw)
    lugre = friction_law("lugre", mu_k=0.3, mu_s=0.4, v_s=0.01)
    with pytest.raises(ValueError, match="LuGre.*state"):
        ds.plan.solve(model, Q0, jnp.zeros(2), contact=_contact(model, friction=lugre), **kw)
    with pytest.raises(TypeError, match="compliant contact model"):
        ds.plan.solve(model, Q0, jnp.zeros(2), contact=object(), **kw)


@pytest.mark.slow  # compiles the batched DDP
@pytest.mark.optimized  # its time is in running its programs: LLVM level 1 (tests/conftest.py)
def test_plans_through_contact_under_vmap(planned):
    """Two initial pusher positions (touching, and 5 mm into the box) solved at once under
    ``vmap``: each reaches the target, and the batch equals the single solve."""
    model, contact, plan = planned

    def solve(x0):
        return ds.plan.solve(model, jnp.array([x0, 0.3]), jnp.zeros(2), horizon=N, dt=DT, running_cost=running,
                             terminal_cost=terminal, contact=contact, actuation=["pusher"], max_iter=600, tol=1e-8)

    plans = jax.jit(jax.vmap(solve))(jnp.array([0.2, 0.195]))
    assert np.all(np.asarray(plans.status) == int(ds.plan.PlanStatus.CONVERGED))
    np.testing.assert_allclose(plans.q[:, -1, 1], TARGET, atol=1e-3)
    # the same optimum; where DDP stops in the flat valley depends on round-off (module docstring)
    np.testing.assert_allclose(plans.cost[0], plan.cost, rtol=1e-7)
    np.testing.assert_allclose(plans.tau[0], plan.tau, rtol=0, atol=1e-3 * float(jnp.abs(plan.tau).max()))
