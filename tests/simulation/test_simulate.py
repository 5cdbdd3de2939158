"""simulate(): conservation over long runs, gradients through the solver against finite
differences, jit/vmap/grad equivalence, no recompilation, statuses, loads, convergence order."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.model.random import random_tree
from diffsim.simulation.trajectory import STATUS_MESSAGES, status_from_diffrax


@pytest.fixture(scope="module")
def floating():
    """A free-floating, torque-free, gravity-free two-arm tree (S0-like but asymmetric)."""
    m = random_tree(11, 4, joint_types=("spherical", "revolute"), base="free", n_arms=2, gravity=(0, 0, 0))
    q0 = ds.random_configuration(m, jax.random.PRNGKey(0))
    v0 = 0.5 * jax.random.normal(jax.random.PRNGKey(1), (m.nv,))
    return m, q0, v0


def arm():
    """A fixed-base 3-link arm with gravity and joint damping."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 0, 1], mass=2.0, com=[0.2, 0, 0], inertia=[0.01, 0.05, 0.05], damping=0.2)
    b.add_body("l2", parent="l1", joint="revolute", axis=[0, 1, 0], pos=[0.4, 0, 0], mass=1.5,
               com=[0.2, 0, 0], inertia=[0.01, 0.04, 0.04], damping=0.1)
    b.add_body("l3", parent="l2", joint="revolute", axis=[0, 1, 0], pos=[0.4, 0, 0], mass=1.0,
               com=[0.15, 0, 0], inertia=[0.005, 0.02, 0.02], damping=0.1)
    return b.build()


@pytest.mark.slow
def test_free_floating_tree_conserves_momentum_and_energy_over_10s(floating):
    m, q0, v0 = floating
    tr = ds.simulate(m, q0, v0, 10.0, solver="dopri8", rtol=1e-14, atol=1e-14, saveat=51)
    assert tr.ok, tr.message
    h = jax.vmap(lambda q, v: ds.spatial_momentum(m, q, v))(tr.q, tr.v)
    E = tr.energy()
    assert float(jnp.max(jnp.abs(h - h[0])) / jnp.max(jnp.abs(h[0]))) <= 1e-11
    assert float(jnp.max(jnp.abs(E - E[0])) / E[0]) <= 1e-9
    for s, e in m.topology.quat_q_indices:  # saved configurations are on the manifold
        np.testing.assert_allclose(jnp.linalg.norm(tr.q[:, s:e], axis=1), 1.0, atol=1e-14)
    assert tr.body_com().shape == (51, m.nb, 3)


@pytest.mark.slow
def test_gradient_through_simulate_matches_finite_differences():
    m = arm()
    q0, v0 = jnp.array([0.3, -0.4, 0.5]), jnp.array([0.5, 0.0, -0.3])

    def loss(mass, damping):
        mm = ds.set_params(m, {"body.l2.mass": mass, "joint.l3.damping": damping})
        tr = ds.simulate(mm, q0, v0, 1.0, solver="dopri8", rtol=1e-13, atol=1e-13, saveat=2)
        return jnp.sum(tr.body_com()[-1] ** 2) + jnp.sum(tr.v[-1] ** 2)

    p = (jnp.asarray(1.5), jnp.array([0.1]))
    g_mass, g_damp = jax.jit(jax.grad(loss, argnums=(0, 1)))(*p)
    f = jax.jit(loss)
    h = 1e-5
    fd_mass = (f(p[0] + h, p[1]) - f(p[0] - h, p[1])) / (2 * h)
    fd_damp = (f(p[0], p[1] + h) - f(p[0], p[1] - h)) / (2 * h)
    np.testing.assert_allclose(g_mass, fd_mass, rtol=1e-6)
    np.testing.assert_allclose(g_damp[0], fd_damp, rtol=1e-6)


@pytest.mark.slow
def test_jit_vmap_grad_match_loops_and_no_recompile():
    traces = []

    def final(m, q0, v0):
        traces.append(1)
        return ds.simulate(m, q0, v0, 0.5, solver="tsit5", rtol=1e-10, atol=1e-10, saveat=2).q[-1]

    f = jax.jit(final)
    m1, m2 = arm(), arm()  # built twice: equal topology, fresh arrays
    q0 = jnp.array([0.3, -0.4, 0.5])
    v0s = jnp.array([[0.5, 0.0, -0.3], [0.0, 1.0, 0.2], [-0.4, 0.3, 0.0]])
    a = f(m1, q0, v0s[0])
    b = f(m2, q0, v0s[0])
    assert len(traces) == 1, "building the same model twice must not recompile"
    np.testing.assert_array_equal(a, b)
    loop = jnp.stack([f(m1, q0, v) for v in v0s])
    batched = jax.jit(jax.vmap(final, in_axes=(None, None, 0)))(m1, q0, v0s)
    np.testing.assert_allclose(batched, loop, rtol=1e-12, atol=1e-12)
    # vmap over a model parameter, and grad∘vmap vs a loop of grads
    masses = jnp.array([1.0, 1.5, 2.0])

    def by_mass(mass):
        return jnp.sum(final(ds.set_params(m1, {"body.l3.mass": mass}), q0, v0s[0]) ** 2)

    vm = jax.jit(jax.vmap(by_mass))(masses)
    # the loop reuses f's compilation: set_params keeps the model's structure
    loop_m = [jnp.sum(f(ds.set_params(m1, {"body.l3.mass": x}), q0, v0s[0]) ** 2) for x in masses]
    assert len(traces) == 3, "changing a parameter value must not recompile"  # f, vmap(final), vmap(by_mass)
    np.testing.assert_allclose(vm, loop_m, rtol=1e-12)
    g_batched = jax.jit(jax.grad(lambda ms: jnp.sum(jax.vmap(by_mass)(ms))))(masses)
    g_one = jax.jit(jax.grad(by_mass))  # one program for the loop (a new jax.grad object would recompile)
    g_loop = [g_one(x) for x in masses]
    np.testing.assert_allclose(g_batched, g_loop, rtol=1e-10)


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_nonfinite_state_is_reported_never_silent():
    m = arm()
    q0, v0 = jnp.zeros(3), jnp.zeros(3)
    blow_up = lambda t, q, v: jnp.where(t > 0.2, jnp.nan, 0.0) * jnp.ones(3)  # noqa: E731
    tr = ds.simulate(m, q0, v0, 1.0, tau=blow_up, throw=False, max_steps=500)
    assert int(tr.status) == ds.Status.NONFINITE
    assert "non-finite" in tr.message and not tr.ok
    with pytest.raises(Exception, match="non-finite"):
        ds.simulate(m, q0, v0, 1.0, tau=blow_up, throw=True, max_steps=500)
    with pytest.raises(Exception, match="not finite"):
        ds.simulate(m, q0.at[0].set(jnp.nan), v0, 1.0)


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_progress_bar_runs_and_changes_nothing(capsys):
    m = arm()
    q0, v0 = jnp.zeros(3), jnp.ones(3)
    plain = ds.simulate(m, q0, v0, 0.5, rtol=1e-9, atol=1e-9, saveat=3)
    shown = ds.simulate(m, q0, v0, 0.5, rtol=1e-9, atol=1e-9, saveat=3, progress=True)
    np.testing.assert_array_equal(plain.q, shown.q)
    assert "100.00%" in capsys.readouterr().err


def test_max_steps_status_and_input_errors():
    m = arm()
    q0, v0 = jnp.zeros(3), jnp.ones(3)
    tr = ds.simulate(m, q0, v0, 5.0, rtol=1e-12, atol=1e-12, max_steps=5, throw=False)
    assert int(tr.status) == ds.Status.MAX_STEPS_REACHED and "max_steps" in tr.message
    with pytest.raises(Exception, match="max_steps|maximum number of solver steps"):
        ds.simulate(m, q0, v0, 5.0, rtol=1e-12, atol=1e-12, max_steps=5, throw=True)
    with pytest.raises(ValueError, match=r"q0 must have shape \(3,\)"):
        ds.simulate(m, jnp.zeros(4), v0, 1.0)
    with pytest.raises(ValueError, match="unknown solver 'rk45'"):
        ds.simulate(m, q0, v0, 1.0, solver="rk45")
    with pytest.raises(ValueError, match="needs dt0"):
        ds.simulate(m, q0, v0, 1.0, solver="rk4")
    with pytest.raises(ValueError, match=r"tau must evaluate to shape \(3,\)"):
        ds.simulate(m, q0, v0, 1.0, tau=jnp.ones(2))
    with pytest.raises(ValueError, match="frame must be 'world' or 'local'"):
        ds.point_force(m, "l3", jnp.ones(3), frame="site")
    with pytest.raises(KeyError, match="no body named 'l9'"):
        ds.point_force(m, "l9", jnp.ones(3))


def test_diffrax_results_map_to_statuses_with_messages():
    """An event root find that reaches its iteration limit is reported as an event not located
    (not as a failed implicit solver, which is what the code means without a root find); every
    status has a message."""
    R, S = diffrax.RESULTS, ds.Status
    cases = [(R.successful, False, S.SUCCESS), (R.max_steps_reached, True, S.MAX_STEPS_REACHED),
             (R.dt_min_reached, True, S.DT_MIN_REACHED), (R.nonlinear_max_steps_reached, True, S.EVENT_NOT_LOCATED),
             (R.nonlinear_max_steps_reached, False, S.SOLVER_FAILED), (R.nonlinear_divergence, True, S.SOLVER_FAILED)]
    for result, root_find, want in cases:
        assert int(jax.jit(lambda r, rf=root_find: status_from_diffrax(r, root_find=rf))(result)) == want, (result, want)
    assert set(STATUS_MESSAGES) == set(S)
    assert "event_time_tol" in STATUS_MESSAGES[S.EVENT_NOT_LOCATED]


def test_rk4_takes_fixed_steps_of_dt0():
    """RK4 is a diffrax ERK whose error estimate is zero: under a PID controller its steps grew
    10x per step (3 steps for 100 of dt0); the default controller must keep dt0."""
    tr = ds.simulate(arm(), jnp.array([0.3, -0.4, 0.5]), jnp.zeros(3), 0.1, solver="rk4", dt0=0.01, saveat=2)
    assert int(tr.num_steps) == 10


@pytest.mark.slow
def test_rk4_converges_at_fourth_order_and_kvaerno5_agrees():
    m = arm()
    q0, v0 = jnp.array([0.3, -0.4, 0.5]), jnp.array([0.5, 0.0, -0.3])
    ref = ds.simulate(m, q0, v0, 1.0, solver="dopri8", rtol=1e-13, atol=1e-13, saveat=2).q[-1]
    errs = [float(jnp.max(jnp.abs(ds.simulate(m, q0, v0, 1.0, solver="rk4", dt0=dt, saveat=2).q[-1] - ref)))
            for dt in (0.01, 0.005, 0.0025)]
    order = np.log2(errs[1] / errs[2])
    assert 3.7 < order < 4.3, (errs, order)
    stiff = ds.simulate(m, q0, v0, 1.0, solver="kvaerno5", rtol=1e-9, atol=1e-9, saveat=2).q[-1]
    np.testing.assert_allclose(stiff, ref, atol=1e-7)


@pytest.mark.slow
def test_loads_world_local_timeseries():
    """A lone free body: world force at the COM gives x = ½ F/m t²; a follower force along the
    body x axis with the body not rotating is the same; a TimeSeries torque spins it up."""
    b = ds.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("box", joint="free", mass=2.0, com=[0.1, 0, 0], inertia=[0.2, 0.3, 0.4])
    b.add_site("s", "box", pos=[0.1, 0, 0])
    m = b.build()
    q0 = ds.neutral_configuration(m)
    v0 = jnp.zeros(6)
    F = jnp.array([3.0, -1.0, 0.5])
    for force in (ds.point_force(m, "box", F, point=[0.1, 0, 0], frame="world"), ds.site_force(m, "s", F, frame="local")):
        tr = ds.simulate(m, q0, v0, 2.0, forces=[force], rtol=1e-12, atol=1e-12, saveat=5)
        com = tr.body_com()[:, 0]
        np.testing.assert_allclose(com - com[0], 0.5 * (F / 2.0) * tr.t[:, None] ** 2, atol=1e-10)
    # tau as an interpolated series: the base wrench [F; M] in the base frame (z torque ramp)
    ts = jnp.linspace(0, 1, 11)
    vals = jnp.zeros((11, 6)).at[:, 5].set(ts)  # M_z = t
    tr = ds.simulate(m, q0, v0, 1.0, tau=ds.TimeSeries(ts, vals), rtol=1e-12, atol=1e-12, saveat=3)
    np.testing.assert_allclose(tr.v[-1, 5], 0.5 / 0.4, rtol=1e-9)  # ω_z = ∫ t dt / Izz
    assert "success" == tr.message
