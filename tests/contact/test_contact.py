"""Contact geometry, forces, events with impact memory and the work–energy bookkeeping
(the contact issue), on small models; the S1 chain's fast checks are in test_s1.py."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

import diffsim as ds
from diffsim.contact import ContactError

G = 9.81


def ball_model(mass=1.0, inertia=4e-4, g=G):
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -g))
    b.add_body("ball", None, joint="free", mass=mass, inertia=(inertia,) * 3)
    return b.build()


def _quat(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def _rot(qw):
    w, x, y, z = qw
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_sphere_on_tilted_plane_matches_hand_computation():
    """Δ, Δ̇, slip and the generalised force of a spinning sphere on a tilted, offset, moving plane."""
    m = ball_model()
    a = 0.3
    n = np.array([0.0, np.sin(a), np.cos(a)])
    belt = np.array([0.7, 0.2, 0.1])  # the plane keeps only its in-plane part
    c = ds.compliant_contact(m, [ds.ContactPoint("ball", pos=(0.01, -0.02, 0.03), radius=0.1)],
                    [ds.Plane(n, 0.05, velocity=belt)], normal=ds.normal_law("hunt-crossley", K=1e6, c_r=0.7),
                    friction=ds.friction_law("coulomb-viscous", mu_k=0.4, viscous=2.0, width=0.05))
    qw = _quat([0.2, -0.4, 0.9], 0.8)
    R = _rot(qw)
    x = np.array([0.3, -0.2, 0.1])
    q = jnp.asarray(np.concatenate([x, qw]))
    V_body, w_body = np.array([0.4, -0.3, -1.1]), np.array([2.0, -1.0, 3.0])  # free joint: body-frame twist
    v = jnp.asarray(np.concatenate([V_body, w_body]))
    cf = c.forces(m, q, v, jnp.array([1.3]))
    # by hand: centre, contact point, its velocity (world)
    p = x + R @ np.array([0.01, -0.02, 0.03])
    delta = 0.1 - (p @ n - 0.05)
    r_c = p - 0.1 * n  # contact point
    w = R @ w_body
    v_origin = R @ V_body
    v_c = v_origin + np.cross(w, r_c - x)
    w_plane = belt - (belt @ n) * n
    u = v_c - w_plane
    ddot = -(u @ n)
    vt = u - (u @ n) * n
    chi = 1.5 * (1 - 0.7)
    fn = 1e6 * delta**1.5 * (1 + chi * ddot / 1.3)
    s = np.linalg.norm(vt)
    ft = -(0.4 * fn * np.tanh(s / 0.05) + 2.0 * s) * vt / s
    assert delta > 0 and fn > 0
    np.testing.assert_allclose(cf.delta, [delta], rtol=1e-13)
    np.testing.assert_allclose(cf.delta_dot, [ddot], rtol=1e-12)
    np.testing.assert_allclose(cf.slip[0], vt, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cf.f_n, [fn], rtol=1e-12)
    np.testing.assert_allclose(cf.f_t[0], ft, rtol=1e-12, atol=1e-12)
    # generalised force: force and moment about the body origin, in the body frame (free joint)
    F = fn * n + ft
    M = np.cross(r_c - x, F)
    np.testing.assert_allclose(cf.Q, np.concatenate([R.T @ F, R.T @ M]), rtol=1e-12, atol=1e-10)
    # powers: normal −F_N Δ̇, friction F_T·(u + plane velocity)
    np.testing.assert_allclose(cf.power_n, -fn * ddot, rtol=1e-12)
    np.testing.assert_allclose(cf.power_t, ft @ (u + w_plane), rtol=1e-12)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_generalised_force_is_jacobian_transpose_on_a_chain():
    """``Q = Jᵀ F`` with ``J`` from diffsim.point_jacobian, on a 3-joint arm."""
    b = ds.ModelBuilder(gravity=(0, 0, -G))
    b.add_body("a", None, joint="revolute", axis=(0, 0, 1), mass=1.0, com=(0.3, 0, 0), inertia=(0.01, 0.02, 0.03))
    b.add_body("b", "a", joint="revolute", axis=(0, 1, 0), pos=(0.6, 0, 0), mass=1.0, com=(0.2, 0, 0), inertia=(0.01,) * 3)
    b.add_body("c", "b", joint="prismatic", axis=(1, 0, 0), pos=(0.4, 0, 0.1), mass=0.5, inertia=(0.01,) * 3)
    m = b.build()
    pt = np.array([0.1, 0.05, -0.02])
    c = ds.compliant_contact(m, [ds.ContactPoint("c", pos=pt)], [ds.Plane((0.1, 0.2, 1.0), 0.3)],
                    normal=ds.normal_law("hertz", K=1e5), friction=ds.friction_law("smooth-coulomb", mu_k=0.5, width=0.1))
    q = jnp.array([0.4, 0.9, 0.2])
    v = jnp.array([0.3, -0.7, 0.5])
    cf = c.forces(m, q, v, jnp.array([1.0]))
    assert float(cf.f_n[0]) > 0
    J = ds.point_jacobian(m, q, m.topology.body_index("c"), pt)
    F = cf.f_n[0] * cf.normal[0] + cf.f_t[0]
    np.testing.assert_allclose(cf.Q, J.T @ F, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cf.delta_dot[0], -(J @ v) @ cf.normal[0], rtol=1e-12)


def test_sphere_pair_equal_and_opposite():
    b = ds.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("s1", None, joint="free", mass=1.0, inertia=(0.01,) * 3)
    b.add_body("s2", None, joint="free", mass=2.0, inertia=(0.02,) * 3)
    m = b.build()
    c = ds.compliant_contact(m, [ds.ContactPoint("s1", radius=0.2, name="A"), ds.ContactPoint("s2", radius=0.3, name="B")],
                    sphere_pairs=[("A", "B")], normal=ds.normal_law("hertz", K=1e6),
                    friction=ds.friction_law("smooth-coulomb", mu_k=0.3, width=0.01))
    q = jnp.array([0, 0, 0, 1, 0, 0, 0, 0.45, 0.1, 0.05, 1, 0, 0, 0.0])
    v = jnp.array([1.0, 0, 0, 0, 0, 2.0, -1.0, 0.5, 0, 0, 0, 0])
    cf = c.forces(m, q, v, jnp.array([1.0]))
    d = np.array([0.45, 0.1, 0.05])
    np.testing.assert_allclose(cf.delta, [0.5 - np.linalg.norm(d)], rtol=1e-13)
    np.testing.assert_allclose(cf.normal[0], -d / np.linalg.norm(d), rtol=1e-13)  # from B towards A
    # no external force: the total linear force on the pair is zero (identity rotations: Q's
    # linear parts are world forces)
    np.testing.assert_allclose(cf.Q[0:3] + cf.Q[6:9], 0.0, atol=1e-9)
    assert float(jnp.linalg.norm(cf.Q[0:3])) > 1.0


@pytest.mark.slow
def test_flexible_end_point_rides_the_deformation():
    """A point ``at='end'`` of a flexible link moves with the modal coordinates (a cantilever's tip
    by ``Σ W(1) δ`` and turns with the end slope), and its generalised force does the virtual work
    F·δc (checked against finite differences of the positions on the S1 chain)."""
    from diffsim.beams import euler_bernoulli_modes
    from diffsim.scenarios import seed001 as s1

    b = ds.ModelBuilder(gravity=(0, -G, 0))
    modes = euler_bernoulli_modes("cf", 2)
    b.add_body("arm", None, joint="revolute", axis=(0, 0, 1), flex=ds.beam(0.8, 1.2, EI_z=50.0, modes_y=modes,
                                                                         n_quad=8, stiffening=False))
    m = b.build()
    c = ds.compliant_contact(m, [ds.ContactPoint("arm", pos=(0.0, 0.05, 0.0), at="end")], [ds.Plane((0, 1, 0), -2.0)],
                    normal=ds.normal_law("hertz", K=1e6))
    d = jnp.array([0.03, -0.01])
    q = jnp.concatenate([jnp.zeros(1), d])
    W1 = np.asarray(modes.fields(jnp.array(1.0))["W"])
    Th1 = np.asarray(modes.fields(jnp.array(1.0))["Theta"]) / 0.8  # section rotation at the end
    psi = float(Th1 @ d)
    expect = np.array([0.8 - 0.05 * np.sin(psi), float(W1 @ d) + 0.05 * np.cos(psi), 0.0])
    np.testing.assert_allclose(c.geometry.centres(m, q)[0], expect, atol=1e-14)

    m = s1.model("cs-ss-sc", n_quad=8)  # 6 points: integrals off by 7e-6, refused by ds.beam
    c = s1.contact_model(m)
    q, _ = s1.initial_state(m)
    q = q.at[5:].set(jnp.array([0.02, -0.01, 0.015]))  # modal coordinates
    # Timoshenko s/c ends do not move transversally, but link 1's end slope turns link 2
    assert float(jnp.linalg.norm(c.geometry.centres(m, q.at[5].set(0.0))[2] - c.geometry.centres(m, q)[2])) > 1e-3
    v = jnp.array([0.3, -1.0, 0.5, -0.2, 0.4, 1.5, -2.0, 0.7])
    F = jnp.array([[1.0, 2.0, 0.0], [-3.0, 0.5, 0.0], [0.2, -0.7, 0.0], [0.0, 1.0, 0.0]])
    *_, apply = c.geometry.evaluate(m, q, v)
    Q = apply(F)
    h = 1e-6
    dc = (c.geometry.centres(m, q + h * v) - c.geometry.centres(m, q - h * v)) / (2 * h)  # planar: q̇ = v
    np.testing.assert_allclose(Q @ v, jnp.sum(F * dc), rtol=1e-8)


@pytest.mark.slow
def test_contact_jacobians_equal_autodiff_of_the_kinematics():
    """The points' Jacobians come from the link Jacobians the dynamics uses; on a free-floating
    tree of flexible and rigid links (quaternion base, points on deformed ends, spheres, a sphere
    pair) they equal the derivative of the forward kinematics along q̇ = G(q) v."""
    from flex_models import _mixed_tree, _state

    m = _mixed_tree("free", True)
    names = m.topology.body_names
    pts = [ds.ContactPoint(names[0], pos=(0.1, 0.2, 0.3), radius=0.05, name="a"),
           ds.ContactPoint(names[1], at="end", pos=(0.0, 0.1, 0.0), radius=0.02, name="b"),
           ds.ContactPoint(names[-1], pos=(0.2, 0.0, 0.1), radius=0.1, name="c")]
    c = ds.compliant_contact(m, pts, [ds.Plane((0.1, 0.2, 1.0), -0.5)], sphere_pairs=[("a", "c")], normal=ds.normal_law("hertz", K=1e5))
    q, v, _ = _state(m, 3)
    g = c.geometry
    _, _, n, _, u, apply = g.evaluate(m, q, v)
    # reference: the contact material points (centre − r n, plane pairs; centre + r_A … pair) moved
    # rigidly with their frames, differentiated by autodiff
    qdot = ds.configuration_rate(m, q, v)
    cdot = jax.jvp(lambda qq: g.centres(m, qq), (q,), (qdot,))[1]
    R, p = g._frames(m, q)
    Rdot = jax.jvp(lambda qq: g._frames(m, qq)[0], (q,), (qdot,))[1]
    omega = jnp.stack([jnp.array([W[2, 1], W[0, 2], W[1, 0]]) for W in jnp.einsum("kij,kjl->kil", Rdot, jnp.swapaxes(R, 1, 2))])
    r = np.array([0.05, 0.02, 0.1])
    ref = [cdot[k] + jnp.cross(omega[k], -r[k] * n[k]) for k in range(3)]  # the three plane pairs
    ref.append((cdot[0] + jnp.cross(omega[0], -r[0] * n[3])) - (cdot[2] + jnp.cross(omega[2], r[2] * n[3])))  # pair a–c
    np.testing.assert_allclose(u, jnp.stack(ref), atol=1e-12 * float(jnp.max(jnp.abs(u))))
    F = jax.random.normal(jax.random.PRNGKey(1), u.shape)
    np.testing.assert_allclose(apply(F) @ v, jnp.sum(F * u), rtol=1e-12)  # Q = Jᵀ F: F·u = Q·v


# ---------------------------------------------------------------------------------------------
# events and impact memory: a sphere dropped on the ground
# ---------------------------------------------------------------------------------------------


def _exact_restitution(chi):
    """χ′(1+e) = ln((1+χ′)/(1−χ′e)): the restitution of the family F = KΔⁿ(1+χ′Δ̇/Δ̇⁽⁻⁾)."""
    return brentq(lambda e: chi * (1 + e) - np.log((1 + chi) / (1 - chi * e)), 1e-9, min(1.0, 1 / chi - 1e-12))


@eqx.filter_jit
def _drop(m, c, q0, v0):
    return ds.simulate(m, q0, v0, 1.2, contact=c, rtol=1e-11, atol=1e-11, saveat=241, max_events=8, throw=False)


def _ball_contact(m, K=1e7, c_r=0.8, mu_k=0.3):
    """Hu–Guo + Ambrosio (one structure for every test here, so that they share one compile)."""
    return ds.compliant_contact(m, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0, 0, 1), 0.0)],
                       normal=ds.normal_law("hu-guo", K=K, c_r=c_r), friction=ds.friction_law("ambrosio", mu_k=mu_k))


@pytest.fixture(scope="module")
def drop():
    m = ball_model()
    c = _ball_contact(m)
    q0 = jnp.array([0.0, 0.0, 1.0, 1, 0, 0, 0])
    v0 = jnp.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0])
    return m, c, _drop(m, c, q0, v0)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_drop_onset_located_and_memory_is_impact_velocity(drop):
    m, c, tr = drop
    assert tr.ok, tr.message
    ev_t = np.asarray(tr.contact.event_t)
    flips = np.asarray(tr.contact.event_flip)[:, 0]
    t_hit = np.sqrt(2 * 0.9 / G)
    assert flips[0] == 1 and flips[1] == -1
    assert abs(ev_t[0] - t_hit) < 1e-9  # located to the event tolerance (the paper: 1e-8 s)
    # the memory in use after the first onset is the penetration rate at impact, √(2 g h)
    i = int(np.argmax(np.asarray(tr.t) > ev_t[0]))
    np.testing.assert_allclose(tr.contact.memory[i, 0], np.sqrt(2 * G * 0.9), rtol=1e-9)
    # normal force vanishes at both ends of the contact (no adhesion, never negative)
    cf = tr.contact_forces()
    assert float(jnp.min(cf.f_n)) >= 0.0
    assert int(tr.contact.impacts[0]) == int(np.sum(flips == 1)) >= 2


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_drop_rebound_velocity_follows_the_exact_relation():
    """Without gravity (which would add its impulse during the contact) and friction, the
    rebound / impact speed is the law's exact restitution e(χ′) (Hu–Guo, c_r = 0.6)."""
    m = ball_model(g=0.0)
    c = _ball_contact(m, c_r=0.6, mu_k=0.0)
    v_in = 2.0
    tr = _drop(m, c, jnp.array([0.0, 0.0, 0.2, 1, 0, 0, 0]), jnp.array([0.0, 0.0, -v_in, 0.0, 0.0, 0.0]))
    assert tr.ok, tr.message
    flips = np.asarray(tr.contact.event_flip)[:, 0]
    assert list(flips[:3]) == [1, -1, 0]
    chi = 1.5 * (1 - 0.6) / 0.6
    np.testing.assert_allclose(tr.v[-1, 2] / v_in, _exact_restitution(chi), rtol=1e-8)
    # the memory is Δ̇ at the located onset, read from the dense output (4th order for Tsit5,
    # so a little less accurate than the steps themselves)
    np.testing.assert_allclose(tr.contact.memory[-1, 0], v_in, rtol=1e-8)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_work_energy_balance_with_friction(drop):
    m, c, tr = drop
    E, err = tr.energy_balance()
    W = np.asarray(tr.contact.work[-1])
    assert W[1] < -0.1 and W[2] < -1e-3  # the contact dissipated, friction did negative work
    assert float(jnp.max(jnp.abs(err))) < 1e-6  # percent; rtol 1e-11


@pytest.mark.slow
def test_smooth_formulation_gradients_match_finite_differences():
    """Smooth formulation (softplus onset, tanh friction, memory state): reverse-mode gradients of
    a bouncing-sphere trajectory loss w.r.t. K, c_r and μ_k match central differences."""
    m = ball_model()
    q0 = jnp.array([0.0, 0.0, 0.5, 1, 0, 0, 0])
    v0 = jnp.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0])

    def loss(p):
        K, c_r, mu = p
        c = ds.compliant_contact(m, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0, 0, 1), 0.0)],
                        normal=ds.normal_law("hu-guo", K=K, c_r=c_r, smooth=1e-5),
                        friction=ds.friction_law("smooth-coulomb", mu_k=mu, width=1e-2), mode="smooth", memory_tau=1e-3)
        tr = ds.simulate(m, q0, v0, 0.5, contact=c, rtol=1e-11, atol=1e-11, saveat=6, throw=False)
        return jnp.sum(tr.q[:, 0] ** 2) + jnp.sum(tr.q[:, 2] ** 2) + 1e-3 * jnp.sum(tr.v[:, 4] ** 2)

    p = jnp.array([1e7, 0.8, 0.3])
    f = eqx.filter_jit(loss)
    g = eqx.filter_jit(jax.grad(loss))(p)
    assert np.all(np.isfinite(np.asarray(g)))
    # rtol 1e-11 solves: the FD quotient carries solver noise ~ 1e-11·|loss|/h. The μ derivative is
    # tiny (-7.9e-6): measured, h = 1e-5 is noise-bound (5.6e-4), h = 1e-2 truncation-bound (6.3e-4),
    # h = 1e-3 leaves ~6e-6 of each (9.3e-6 in all), while AD changes by 3e-7 from rtol 1e-11 to 1e-12
    for i, (h, rtol) in enumerate([(1e3, 1e-5), (1e-5, 1e-5), (1e-3, 3e-5)]):
        e = jnp.zeros(3).at[i].set(h)
        fd = (f(p + e) - f(p - e)) / (2 * h)
        np.testing.assert_allclose(g[i], fd, rtol=rtol)


@pytest.mark.parametrize("law", ["ambrosio", "smooth-coulomb", "coulomb-viscous", "stribeck"])
def test_no_nan_gradients_at_contact_onset_and_zero_slip(law):
    """d(Q, powers)/d(q, v, law constants) stay finite exactly at Δ = 0 and at zero slip."""
    m = ball_model()
    params = {"ambrosio": dict(mu_k=0.3), "smooth-coulomb": dict(mu_k=0.3, width=1e-3),
              "coulomb-viscous": dict(mu_k=0.3, viscous=1.0, width=1e-3),
              "stribeck": dict(mu_k=0.3, mu_s=0.5, v_s=0.01)}[law]

    def total(q, v, K, c_r):
        c = ds.compliant_contact(m, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0, 0, 1), 0.0)],
                        normal=ds.normal_law("hu-guo", K=K, c_r=c_r), friction=ds.friction_law(law, **params))
        cf = c.forces(m, q, v, jnp.array([1.5]))
        return jnp.sum(cf.Q) + cf.power_n + cf.power_t

    grad = jax.jit(jax.grad(total, argnums=(0, 1, 2, 3)))
    for z, vz in ((0.1, -1.0), (0.0999, 0.0), (0.1, 0.0)):  # onset; in contact at rest; both
        q = jnp.array([0.0, 0.0, z, 1, 0, 0, 0])
        v = jnp.array([0.0, 0.0, vz, 0.0, 0.0, 0.0])  # zero slip
        for g in grad(q, v, 1e7, 0.8):
            assert np.all(np.isfinite(np.asarray(g))), (law, z, vz)


def test_joint_friction_uses_the_contact_laws():
    """Joint friction with a contact friction law (unit normal force: μ are torques)."""
    b = ds.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("a", None, joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(0.1,) * 3)
    b.add_body("b", "a", joint="prismatic", axis=(1, 0, 0), mass=1.0, inertia=(0.1,) * 3)
    m = b.build()
    law = ds.friction_law("stribeck", mu_k=0.2, mu_s=0.5, v_s=0.1, width=1e-3)
    tau = ds.joint_friction(m, law=law, viscous=0.3)
    v = jnp.array([0.05, -2.0])
    mu = 0.2 + 0.3 * np.exp(-((np.abs(v) / 0.1) ** 2))
    np.testing.assert_allclose(tau(0.0, jnp.zeros(2), v), -mu * np.tanh(v / 1e-3) - 0.3 * v, rtol=1e-13)
    amb = ds.joint_friction(m, law=ds.friction_law("ambrosio", mu_k=1.5, v0=1e-3, v1=1e-2))
    np.testing.assert_allclose(amb(0.0, jnp.zeros(2), jnp.array([5e-4, -0.1])), [0.0, 1.5], rtol=1e-14)
    with pytest.raises(ValueError, match="LuGre"):
        ds.joint_friction(m, law=ds.friction_law("lugre", mu_k=0.1, mu_s=0.2, v_s=0.01))


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_bad_input_errors():
    m = ball_model()
    pl = [ds.Plane((0, 0, 1), 0.0)]
    pt = [ds.ContactPoint("ball", radius=0.1)]
    hc = ds.normal_law("hertz", K=1e6)
    with pytest.raises(ValueError, match="K = -1.0 is outside"):
        ds.normal_law("hu-guo", K=-1.0, c_r=0.5)
    for bad in (0.0, 1.2, -0.3):
        with pytest.raises(ValueError, match="c_r"):
            ds.normal_law("hunt-crossley", K=1e6, c_r=bad)
    with pytest.raises(ValueError, match="unknown normal-force law 'hooke'"):
        ds.normal_law("hooke", K=1.0)
    with pytest.raises(ValueError, match="unknown friction law"):
        ds.friction_law("dahl", mu_k=0.1)
    with pytest.raises(ContactError, match="no body named 'wheel'"):
        ds.compliant_contact(m, [ds.ContactPoint("wheel")], pl, normal=hc)
    with pytest.raises(ContactError, match="body index 3 does not exist"):
        ds.compliant_contact(m, [ds.ContactPoint(3)], pl, normal=hc)
    with pytest.raises(ContactError, match="radius must be >= 0"):
        ds.compliant_contact(m, [ds.ContactPoint("ball", radius=-0.1)], pl, normal=hc)
    with pytest.raises(ContactError, match="normal must be non-zero"):
        ds.compliant_contact(m, pt, [ds.Plane((0, 0, 0), 0.0)], normal=hc)
    with pytest.raises(ContactError, match="no contact pairs"):
        ds.compliant_contact(m, pt, [], normal=hc)
    with pytest.raises(ContactError, match="no contact point named 'X'"):
        ds.compliant_contact(m, pt, pl, sphere_pairs=[("p0", "X")], normal=hc)
    with pytest.raises(ContactError, match="unknown contact mode"):
        ds.compliant_contact(m, pt, pl, normal=hc, mode="lcp")
    with pytest.raises(ContactError, match="give a normal-force law"):
        ds.compliant_contact(m, pt, pl)
    with pytest.raises(TypeError, match="compliant contact"):
        ds.simulate(m, jnp.array([0, 0, 1.0, 1, 0, 0, 0]), jnp.zeros(6), 0.1, contact=hc)
