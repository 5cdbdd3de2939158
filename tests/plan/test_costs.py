"""diffsim.plan.costs against closed forms."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from plan_models import floating_arm, two_link

import diffsim as ds
from diffsim.beams import euler_bernoulli_modes
from diffsim.plan import costs


def _Ry(a):  # rotation about +y: x -> (cos a, 0, -sin a)
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def test_site_position_and_orientation_errors_match_planar_kinematics():
    m = two_link()
    q = jnp.array([0.4, -1.1])
    tip = 0.6 * _Ry(0.4)[:, 0] + 0.5 * _Ry(0.4 - 1.1)[:, 0]
    target = np.array([0.2, 0.1, -0.3])
    np.testing.assert_allclose(costs.site_position_error(m, q, "tip", target), np.sum((tip - target) ** 2),
                               rtol=1e-13)
    d = 0.3  # target turned by d about y from the site's orientation: 2 (1 − cos d)
    np.testing.assert_allclose(costs.site_orientation_error(m, q, 0, _Ry(0.4 - 1.1 + d)), 2 * (1 - math.cos(d)),
                               rtol=1e-12)
    np.testing.assert_allclose(costs.site_orientation_error(m, q, "tip", _Ry(-0.7)), 0.0, atol=1e-14)


def test_base_attitude_change_is_the_rotation_angle_and_sign_invariant():
    m = floating_arm()
    q_ref = ds.integrate(m, ds.neutral_configuration(m), jnp.array([0.1, 0.2, 0.3, 0.5, -0.4, 0.2, 0.3, 0.1]))
    axis = jnp.array([1.0, 2.0, -2.0]) / 3.0
    theta = 0.8
    dv = jnp.concatenate([jnp.array([0.3, 0.0, 0.1]), theta * axis, jnp.array([0.4, -0.2])])
    q = ds.integrate(m, q_ref, dv)  # base turned by theta (plus a translation and arm motion)
    np.testing.assert_allclose(costs.base_attitude_change(m, q, q_ref), 4 * math.sin(theta / 2) ** 2, rtol=1e-12)
    flipped = q.at[3:7].multiply(-1.0)
    np.testing.assert_allclose(costs.base_attitude_change(m, flipped, q_ref), 4 * math.sin(theta / 2) ** 2,
                               rtol=1e-12)
    np.testing.assert_allclose(costs.base_attitude_change(m, q_ref, q_ref), 0.0, atol=1e-14)


def test_box_penalty_limits_and_smoothness():
    x = jnp.array([0.5, 1.3, -1.2])
    lo, hi = -1.0, 1.0
    # narrow width: the squared violation (0.3² + 0.2²), the inside point contributes w² e^{-2d/w}
    np.testing.assert_allclose(costs.box_penalty(x, lo, hi, 1e-4), 0.3**2 + 0.2**2, rtol=1e-9)
    w = 0.05
    inside = costs.box_penalty(jnp.array([0.8]), lo, hi, w)
    assert 0 < float(inside) <= w**2 * math.exp(-2 * 0.2 / w) * 1.01
    # gradient vs central differences (smooth: no kink at the limit)
    f = lambda y: costs.box_penalty(y, lo, hi, w)  # noqa: E731
    for y in (jnp.array([1.0]), jnp.array([-1.02]), jnp.array([0.97])):
        g = jax.grad(f)(y)
        h = 1e-6
        np.testing.assert_allclose(g, (f(y + h) - f(y - h)) / (2 * h), rtol=1e-6)
    tau = jnp.array([0.0, 5.0, -7.0])
    np.testing.assert_allclose(costs.torque_barrier(tau, -3.0, 3.0, 1e-4, indices=[1]), 4.0, rtol=1e-9)
    np.testing.assert_allclose(costs.joint_limit_barrier(tau, -3.0, 3.0, 1e-4), 4.0 + 16.0, rtol=1e-9)


def test_elastic_energy_is_strain_plus_modal_kinetic_energy():
    link = ds.beam(0.8, 3.14, EI_z=300.0, modes_y=euler_bernoulli_modes("cf", 2))
    b = ds.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("l1", None, joint="revolute", axis=(0, 0, 1), flex=link)
    b.add_body("l2", "l1", joint="revolute", axis=(0, 0, 1), flex=link)
    m = b.build()
    t = m.topology
    q = jnp.array([0.3, -0.5, 0.01, -0.002, 0.02, 0.003])
    assert m.nq == 6 and t.nv_rigid == 2
    v_modal = jnp.array([0.0, 0.0, 0.5, -0.1, 0.2, 0.3])
    E_el = jax.jit(lambda q, v: costs.elastic_energy(m, q, v))
    # no gravity: with the joints still, all the energy is elastic (strain + modal motion)
    np.testing.assert_allclose(E_el(q, v_modal), jax.jit(lambda q, v: ds.total_energy(m, q, v))(q, v_modal),
                               rtol=1e-12)
    # at rest: the strain energy ½ δᵀKδ of each link
    K = m.flex[0].K
    strain = 0.5 * q[2:4] @ K @ q[2:4] + 0.5 * q[4:6] @ m.flex[1].K @ q[4:6]
    np.testing.assert_allclose(E_el(q, jnp.zeros(6)), strain, rtol=1e-12)
    # joint rates do not count, and an undeformed link at rest has none
    v = v_modal.at[:2].set(jnp.array([1.0, -2.0]))
    np.testing.assert_allclose(E_el(q, v), E_el(q, v_modal), rtol=1e-12)
    assert float(E_el(q.at[2:].set(0.0), v.at[2:].set(0.0))) == 0.0
    assert float(costs.elastic_energy(two_link(), jnp.zeros(2), jnp.ones(2))) == 0.0


def test_cost_helpers_refuse_what_they_would_misread():
    """A batch of targets broadcast into a sum over them, a (3,) orientation target into a matrix,
    an out-of-range site index was clamped to the last site, and a box with lower > upper was a
    penalty everywhere; each is now an error naming the argument."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=[0.01, 0.03, 0.03])
    b.add_site("tip", "l1", pos=[0.5, 0, 0])
    m = b.build()
    q = jnp.array([0.3])
    p = ds.site_poses(m, q)[1][0]
    assert float(costs.site_position_error(m, q, 0, p)) == 0.0  # the index form still works
    with pytest.raises(ValueError, match=r"target must have shape \(3,\), got \(3, 3\).*vmap"):
        costs.site_position_error(m, q, "tip", jnp.stack([p + 0.1, p - 0.2, p]))
    with pytest.raises(ValueError, match=r"site must be a site name or an index in \[0, 1\), got 5"):
        costs.site_position_error(m, q, 5, p)
    with pytest.raises(ValueError, match=r"target_rot \(a rotation matrix\) must have shape \(3, 3\)"):
        costs.site_orientation_error(m, q, "tip", jnp.array([0.0, 0.3, 0.0]))
    with pytest.raises(ValueError, match="lower > upper"):
        costs.joint_limit_barrier(q, 1.0, -1.0)
    with pytest.raises(ValueError, match="width must be > 0"):
        costs.torque_barrier(q, -1.0, 1.0, width=0.0)


def test_default_actuation_drives_the_joints_not_the_elastic_modes():
    """``actuation=None`` drove every velocity coordinate, a flexible link's modal coordinates too
    (forces on its elastic modes that no actuator can apply); now the joints' coordinates."""
    link = ds.beam(0.8, 3.14, EI_z=300.0, modes_y=euler_bernoulli_modes("cf", 2))
    b = ds.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("l1", None, joint="revolute", axis=(0, 0, 1), flex=link)
    b.add_body("l2", "l1", joint="free", pos=(0.8, 0, 0), mass=1.0, inertia=(0.1, 0.1, 0.1))
    m = b.build()
    t = m.topology
    joints = tuple(k for i in range(len(t.joint_names)) for k in range(t.v_slice(i).start, t.v_slice(i).stop))
    assert m.nv == 9 and len(joints) == 7
    assert ds.plan.actuated_indices(m, None) == tuple(sorted(joints))
    assert ds.plan.actuated_indices(m, [True] * 9) == tuple(range(9))  # asked for explicitly: allowed
    rigid = ds.ModelBuilder()
    rigid.add_body("a", joint="free", mass=1.0, inertia=(1, 1, 1))
    assert ds.plan.actuated_indices(rigid.build(), None) == tuple(range(6))
