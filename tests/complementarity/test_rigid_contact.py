"""Rigid complementarity contact (issue 5, acceptance 3 and 5): incline stick/slip, restitution
with velocity-level stepping, a resting multibody system balancing gravity, Painlevé's paradox
reported, and clear errors for bad input."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.complementarity import SLIDE, STICK, LCPStatus
from diffsim.contact import ContactError
from diffsim.simulation import lcp_step
from diffsim.simulation.lcp import STEPPERS

G = 9.81


def lcp_simulate(m, q0, v0, rc, t1, dt, method="acceleration", controls=None):
    return ds.simulate(ds.System(m, q0, v0, contact=rc, tau=controls, t1=t1, solver=STEPPERS[method](dt)))


# one compile per model structure and method (the contact constants are traced leaves)
simulate = eqx.filter_jit(lcp_simulate)
step = eqx.filter_jit(lcp_step)


def planar_block(mass=2.0):
    b = ds.ModelBuilder(gravity=(0.0, -G, 0.0))
    b.add_body("block", None, joint="planar", mass=mass, inertia=(0.1, 0.1, 0.1))
    return b.build()


@pytest.mark.parametrize("formulation", ["planar", "polyhedral"])
@pytest.mark.parametrize("method", ["acceleration", "velocity"])
def test_block_on_incline_sticks_below_the_friction_angle_and_slides_above(formulation, method):
    """A point mass on a plane tilted by φ: at rest if tan φ ≤ μ (normal force m g cos φ, friction
    m g sin φ), else sliding down with a = g (sin φ − μ cos φ). The contact acceleration is
    constant, so the fixed-step velocity is exact to round-off."""
    m = planar_block()
    phi = 0.3
    n = (-np.sin(phi), np.cos(phi), 0.0)
    down = np.array([-np.cos(phi), -np.sin(phi)])
    for mu in (0.4, 0.2, float(np.tan(phi)) + 1e-3):
        rc = ds.rigid_contact(m, [ds.ContactPoint("block")], [ds.Plane(n, 0.0)], mu=mu, formulation=formulation, n_directions=8)
        tr = simulate(m, jnp.zeros(3), jnp.zeros(3), rc, t1=0.5, dt=1e-3, method=method)
        assert int(tr.status) == 0
        v_down = np.asarray(tr.v)[:, :2] @ down
        a = G * (np.sin(phi) - mu * np.cos(phi))
        if a > 0:
            np.testing.assert_allclose(v_down, a * np.asarray(tr.t), rtol=0, atol=1e-12)
            assert np.all(np.asarray(tr.contact.mode)[1:, 0] == SLIDE)
            # sliding: |friction| = μ λ_N, pointing up the slope
            np.testing.assert_allclose(np.asarray(tr.contact.friction)[1:, 0, :2] @ down, -mu * np.asarray(tr.contact.lambda_N)[1:, 0], rtol=1e-12)
        else:
            np.testing.assert_allclose(v_down, 0.0, atol=1e-12)
            assert np.all(np.asarray(tr.contact.mode)[:, 0] == STICK)
            np.testing.assert_allclose(np.asarray(tr.contact.friction)[:, 0, :2] @ down, -2.0 * G * np.sin(phi), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(tr.contact.lambda_N)[:, 0], 2.0 * G * np.cos(phi), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(tr.contact.gap), 0.0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["acceleration", "velocity"])
def test_gradients_through_the_lcp_simulation_match_analytic_and_central_differences(method):
    """Sliding block: the down-slope velocity after t1 is g (sin φ − μ cos φ) t1, so
    d/dμ = −g cos φ t1 and d/dφ = g (cos φ + μ sin φ) t1; reverse mode through the scan of Lemke
    solves (implicit active-set derivatives) gives both, and matches central differences."""
    m = planar_block()
    t1 = 0.2

    def v_down(p):
        mu, phi = p
        n = jnp.stack([-jnp.sin(phi), jnp.cos(phi), 0.0])
        rc = ds.rigid_contact(m, [ds.ContactPoint("block")], [ds.Plane(n, 0.0)], mu=mu)
        tr = simulate(m, jnp.zeros(3), jnp.zeros(3), rc, t1=t1, dt=1e-2, method=method)
        return -(tr.v[-1, 0] * jnp.cos(phi) + tr.v[-1, 1] * jnp.sin(phi))

    p = jnp.array([0.2, 0.3])
    g = jax.grad(v_down)(p)
    mu, phi = p
    np.testing.assert_allclose(g, [-G * np.cos(phi) * t1, G * (np.cos(phi) + mu * np.sin(phi)) * t1], rtol=1e-10)
    h = 1e-6
    fd = [(v_down(p + h * e) - v_down(p - h * e)) / (2 * h) for e in jnp.eye(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def ball(radius=0.1):
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -G))
    b.add_body("ball", None, joint="free", mass=1.0, inertia=(4e-3, 4e-3, 4e-3))
    return b.build()


@pytest.mark.parametrize("method", ["velocity", "acceleration"])
def test_dropped_ball_bounces_with_the_set_restitution(method):
    """Newton's law ġ⁺ = −e ġ⁻ at the impact step, exactly; the apex heights then follow e²
    to the O(h) of fixed-step ballistics."""
    m = ball()
    e, h0, dt = 0.7, 0.5, 1e-4
    rc = ds.rigid_contact(m, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0, 0, 1), 0.0)], mu=0.3,
                           restitution=e, formulation="polyhedral", n_directions=4)
    q0 = jnp.array([0.0, 0.0, h0 + 0.1, 1.0, 0.0, 0.0, 0.0])
    tr = jax.jit(lambda q: lcp_simulate(m, q, jnp.zeros(6), rc, t1=1.2, dt=dt, method=method))(q0)
    assert int(tr.status) == 0
    vz = np.asarray(tr.v)[:, 2]
    hits = np.where((vz[:-1] < 0) & (vz[1:] > 0))[0]
    assert len(hits) >= 2
    for k in hits[:2]:
        if method == "velocity":  # the impulse and one step of gravity act together
            np.testing.assert_allclose(vz[k + 1], -e * vz[k], rtol=1e-12)
        else:  # impulse first, then a step of free flight
            np.testing.assert_allclose(vz[k + 1], -e * vz[k] - G * dt, rtol=1e-12)
    z = np.asarray(tr.q)[:, 2] - 0.1
    apex1 = z[hits[0] : hits[1]].max()
    np.testing.assert_allclose(apex1 / h0, e**2, rtol=5e-3)  # O(√(2gh) dt / h) ≈ 6e-4 per passage
    assert z.min() > -4e-3  # at most one step of penetration, √(2 g h0) dt


def hinged_boxes():
    """Two 0.4 × 0.2 × 0.1 m boxes joined by a hinge about y, the first on a free joint."""
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -G))
    b.add_body("box1", None, joint="free", mass=3.0, inertia=(0.0125, 0.0425, 0.05))
    b.add_body("box2", "box1", joint="revolute", axis=(0, 1, 0), pos=(0.4, 0.0, 0.0), mass=1.5, com=(0.2, 0.0, 0.0),
               inertia=(0.00625, 0.02125, 0.025))
    m = b.build()
    pts = [ds.ContactPoint(body, (x, y, -0.05), name=f"{body}{i}")
           for body, x0 in (("box1", -0.2), ("box2", 0.0)) for i, (x, y) in enumerate(
               [(x0, -0.1), (x0, 0.1), (x0 + 0.4, -0.1), (x0 + 0.4, 0.1)])]
    return m, pts


@pytest.mark.parametrize("method", ["acceleration", "velocity"])
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_resting_multibody_contact_forces_balance_gravity(method):
    """Eight corner contacts (statically indeterminate) under two hinged boxes at rest: the
    normal forces sum to the total weight and their moments balance the weights' moments, to
    round-off; nothing moves."""
    m, pts = hinged_boxes()
    rc = ds.rigid_contact(m, pts, [ds.Plane((0, 0, 1), 0.0)], mu=0.5, formulation="polyhedral", n_directions=4)
    q0 = jnp.array([0.0, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0, 0.0])
    tr = simulate(m, q0, jnp.zeros(7), rc, t1=0.05, dt=1e-3, method=method)
    assert int(tr.status) == 0
    lam = np.asarray(tr.contact.lambda_N)
    W = 4.5 * G
    np.testing.assert_allclose(lam.sum(1), W, rtol=1e-12)
    x = np.array([-0.2, -0.2, 0.2, 0.2, 0.4, 0.4, 0.8, 0.8])  # corner x in the world
    np.testing.assert_allclose(lam @ x, 1.5 * G * 0.6, rtol=1e-10)  # moments about y through the origin
    np.testing.assert_allclose(np.asarray(tr.contact.friction), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(tr.v), 0.0, atol=1e-12)


def painleve_rod(mu):
    """A uniform rod (length 2l, I = m l²/3) at 60° with its lower end on the ground."""
    b = ds.ModelBuilder(gravity=(0.0, -G, 0.0))
    b.add_body("rod", None, joint="planar", mass=1.0, inertia=(1 / 3, 1 / 3, 1 / 3))
    m = b.build()
    rc = ds.rigid_contact(m, [ds.ContactPoint("rod", (-1.0, 0.0, 0.0))], [ds.Plane((0, 1, 0), 0.0)], mu=mu)
    th = np.pi / 3
    return m, rc, jnp.array([np.cos(th), np.sin(th), th])


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_painleve_paradox_is_reported_not_guessed():
    """Sliding with its end leading (v_x < 0 at 60°), the rod's normal coefficient
    (1 + 3cos²θ − 3μ sinθ cosθ)/m turns negative for μ > 1.35 while gravity pulls the end down:
    no contact force is consistent (the acceleration-level LCP has no solution) and the step says
    so (RAY, NaN state). The velocity-level step always has a solution."""
    h = 1e-3
    for mu, v_x, expect in ((0.5, -1.0, LCPStatus.SOLVED), (2.0, 1.0, LCPStatus.SOLVED), (2.0, -1.0, LCPStatus.RAY)):
        m, rc, q = painleve_rod(mu)
        v = jnp.array([v_x, 0.0, 0.0])
        q1, v1, info = step(m, rc, q, v, jnp.zeros(3), h, method="acceleration")
        assert int(info["lcp_status"]) == expect, (mu, v_x)
        assert bool(jnp.all(jnp.isfinite(v1))) == (expect == LCPStatus.SOLVED)
        _, v2, info2 = step(m, rc, q, v, jnp.zeros(3), h, method="velocity")
        assert int(info2["lcp_status"]) == LCPStatus.SOLVED and bool(jnp.all(jnp.isfinite(v2)))
    tr = simulate(m, q, v, rc, t1=0.01, dt=h)
    assert int(tr.status) == ds.Status.LCP_FAILED and int(tr.contact.first_failure) == LCPStatus.RAY
    assert bool(jnp.all(jnp.isnan(tr.q[-1])))


def test_bad_input_errors():
    m = planar_block()
    pt, pl = [ds.ContactPoint("block")], [ds.Plane((0, 1, 0), 0.0)]
    with pytest.raises(ContactError, match="friction coefficient mu"):
        ds.rigid_contact(m, pt, pl, mu=-0.1)
    with pytest.raises(ContactError, match="restitution"):
        ds.rigid_contact(m, pt, pl, restitution=1.5)
    with pytest.raises(ContactError, match="formulation"):
        ds.rigid_contact(m, pt, pl, formulation="cone")
    with pytest.raises(ContactError, match="at least one plane"):
        ds.rigid_contact(m, pt, [])
    with pytest.raises(ContactError, match="parallel"):
        ds.rigid_contact(m, pt, [ds.Plane((0, 0, 1), 0.0)])
    with pytest.raises(ContactError, match="multiple of 4"):
        ds.rigid_contact(m, pt, pl, formulation="polyhedral", n_directions=6)
    with pytest.raises(ContactError, match="body"):
        ds.rigid_contact(m, [ds.ContactPoint("nope")], pl)
    rc = ds.rigid_contact(m, pt, pl, mu=0.3)
    with pytest.raises(ValueError, match="whole number of steps"):
        lcp_simulate(m, jnp.zeros(3), jnp.zeros(3), rc, t1=0.105, dt=0.01)
    with pytest.raises(ValueError, match="q0 must have shape"):
        lcp_simulate(m, jnp.zeros(4), jnp.zeros(3), rc, t1=0.1, dt=0.01)
    with pytest.raises(ValueError, match="needs rigid contacts"):
        lcp_simulate(m, jnp.zeros(3), jnp.zeros(3), None, t1=0.1, dt=0.01)
    with pytest.raises(ValueError, match="LCP time stepper"):
        ds.System(m, contact=rc, solver="dopri5", t1=0.1)
    with pytest.warns(DeprecationWarning, match="simulate_lcp"), pytest.raises(ValueError, match="method"):
        ds.simulate_lcp(m, jnp.zeros(3), jnp.zeros(3), rc, t1=0.1, dt=0.01, method="position")


def test_deprecated_simulate_lcp_gives_the_same_trajectory_as_the_system():
    """The previous release's entry point (with ``controls=``) still runs, warns, and returns the
    trajectory ``simulate(System(...))`` gives, its contact forces under ``contact`` (the old
    attribute names still answer, with a warning)."""
    m = planar_block()
    rc = ds.rigid_contact(m, [ds.ContactPoint("block")], [ds.Plane((-0.3, 1.0, 0.0), 0.0)], mu=0.2)
    push = lambda t, q, v: jnp.array([1.0, 0.0, 0.0]) * t  # noqa: E731
    new = lcp_simulate(m, jnp.zeros(3), jnp.zeros(3), rc, 0.05, 1e-3, "velocity", controls=push)
    with pytest.warns(DeprecationWarning, match="simulate_lcp"):
        old = ds.simulate_lcp(m, jnp.zeros(3), jnp.zeros(3), rc, t1=0.05, dt=1e-3, method="velocity", controls=push)
    np.testing.assert_array_equal(np.asarray(old.q), np.asarray(new.q))
    with pytest.warns(DeprecationWarning, match="contact.lambda_N"):
        np.testing.assert_array_equal(np.asarray(old.lambda_N), np.asarray(new.contact.lambda_N))


def test_saveat_picks_the_saved_steps_and_stores_only_those():
    """A rigid-contact run saves on its step grid: ``saveat = N`` (N − 1 dividing the steps), the
    same grid as times, or the stepper's ``save_every`` give the every-step run's rows at those
    steps (the same stepping arithmetic, in segments), and the program stores only the saved rows.
    Counts and times off the grid are refused with the counts that would do."""
    m = planar_block()
    rc = ds.rigid_contact(m, [ds.ContactPoint("block")], [ds.Plane((-0.3, 1.0, 0.0), 0.0)], mu=0.2)
    push = lambda t, q, v: jnp.array([1.0, 0.0, 0.0]) * t  # noqa: E731
    q0, v0 = jnp.array([0.0, 0.05, 0.0]), jnp.array([0.5, 0.0, 0.0])  # lands, then slides
    run = eqx.filter_jit(ds.simulate)

    def system(**kw):
        solver = ds.VelocityLCP(1e-3, save_every=kw.pop("save_every", 1))
        return ds.System(m, q0, v0, contact=rc, tau=push, t1=0.2, solver=solver, **kw)

    every = run(system())
    assert every.t.shape == (201,) and every.contact.lambda_N.shape == (200, 1)
    assert float(jnp.max(every.contact.lambda_N)) > 0  # it did land
    for kw in (dict(saveat=21), dict(saveat=np.linspace(0.0, 0.2, 21)), dict(save_every=10), dict(saveat=21, save_every=10)):
        tr = run(system(**kw))
        assert tr.q.shape == (21, 3) and tr.contact.lambda_N.shape == (20, 1)
        np.testing.assert_allclose(np.asarray(tr.t), np.asarray(every.t[::10]), rtol=0, atol=1e-15)
        for a, b in ((tr.q, every.q[::10]), (tr.v, every.v[::10]), (tr.contact.lambda_N, every.contact.lambda_N[::10]),
                     (tr.contact.friction, every.contact.friction[::10])):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(np.asarray(tr.contact.mode), np.asarray(every.contact.mode[::10]))
    # stored: a run of 20 000 steps saving 11 states keeps kilobytes, not the every-step record
    # (every step's record is 15 numbers: 2.4 MB, which slicing a stacked every-step record would hold)
    long = system(saveat=11).replace(t1=20.0)
    arrays, static = eqx.partition(long, eqx.is_array)
    program = jax.jit(lambda a: ds.simulate(eqx.combine(a, static))).lower(arrays).compile()
    out = eqx.filter_eval_shape(ds.simulate, long)
    assert out.q.shape == (11, 3) and out.contact.gap.shape == (10, 1)
    used = program.memory_analysis()
    assert used.temp_size_in_bytes + used.output_size_in_bytes < 20_000 * 8 * 3  # the step indices: 160 kB
    with pytest.raises(ValueError, match="divide the 200 steps.*saveat = 21 or 26"):
        ds.simulate(system(saveat=24))
    off_grid = np.linspace(0.0, 0.2, 21) + 1e-5 * (np.arange(21) == 3)
    with pytest.raises(ValueError, match="step grid"):
        ds.simulate(system(saveat=off_grid))
    with pytest.raises(Exception, match="step grid"):  # traced times: checked when the program runs
        jax.block_until_ready(run(system(saveat=off_grid)).q)
    with pytest.raises(ValueError, match="disagree"):
        ds.simulate(system(saveat=21, save_every=20))
    with pytest.raises(ValueError, match="save_every = 3 must be a positive integer dividing"):
        ds.simulate(system(save_every=3))
