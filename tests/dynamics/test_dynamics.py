"""Cross-algorithm identities of the rigid-body algorithms (ABA, CRBA, RNEA), conservation
laws as exact rate identities, Jacobians and gradients against central finite differences in
the tangent space."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.model.random import random_tree

MIXED = ("revolute", "prismatic", "spherical", "planar", "fixed")
CASES = [
    (0, dict(n_bodies=8, joint_types=MIXED, base="free", damping=True)),
    (1, dict(n_bodies=7, joint_types=MIXED, base="free", n_arms=3, damping=True)),
    (2, dict(n_bodies=6, joint_types=MIXED, base="planar", damping=True)),
    (3, dict(n_bodies=6, joint_types=MIXED, base=None, n_arms=2, damping=True)),
    (4, dict(n_bodies=9, joint_types=("spherical", "revolute"), base="free", n_arms=2)),
]


def state(m, seed):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    q = ds.random_configuration(m, k[0])
    v = jax.random.normal(k[1], (m.nv,))
    tau = jax.random.normal(k[2], (m.nv,))
    f_ext = jax.random.normal(k[3], (m.nb, 6))
    return q, v, tau, f_ext


def rel(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1e-300))


@pytest.mark.parametrize("seed, kw", CASES)
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_aba_crba_rnea_agree(seed, kw):
    m = random_tree(seed, **kw)
    q, v, tau, f_ext = state(m, seed)
    a = ds.forward_dynamics(m, q, v, tau, f_ext)
    M = ds.mass_matrix(m, q)
    a_crba = jnp.linalg.solve(M, tau - ds.bias_forces(m, q, v, f_ext))
    assert rel(a, a_crba) <= 1e-10
    assert rel(ds.inverse_dynamics(m, q, v, a, f_ext), tau) <= 1e-10
    # mass matrix: symmetric, positive definite, and the Hessian of T in v
    assert rel(M, M.T) <= 1e-13
    assert float(jnp.linalg.eigvalsh(M).min()) > 0
    np.testing.assert_allclose(ds.kinetic_energy(m, q, v), 0.5 * v @ M @ v, rtol=1e-12)
    # columns of M from RNEA: M e_k = ID(q, 0, e_k) - g(q) with damping off
    m0 = ds.set_params(m, {f"joint.{j}.damping": np.zeros(n) for j, n in zip(m.topology.joint_names, m.topology.nv_joint) if n})
    k = m.nv // 2
    e = jnp.zeros(m.nv).at[k].set(1.0)
    z = jnp.zeros(m.nv)
    col = ds.inverse_dynamics(m0, q, z, e) - ds.gravity_forces(m0, q)
    assert rel(col, M[:, k]) <= 1e-10


@pytest.mark.parametrize("seed, kw", CASES[:3])
@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_energy_rate_is_power_of_loads(seed, kw):
    """d/dt (T + V) = τ·v − vᵀDv + Σ f_ext,i · v_i along the exact dynamics."""
    m = random_tree(seed, **kw)
    q, v, tau, f_ext = state(m, seed)
    a = ds.forward_dynamics(m, q, v, tau, f_ext)
    qd = ds.configuration_rate(m, q, v)
    _, dE = jax.jvp(lambda q, v: ds.total_energy(m, q, v), (q, v), (qd, a))
    vel = jnp.stack(ds.body_velocities(m, q, v))
    power = tau @ v - v @ (m.damping * v) + jnp.sum(f_ext * vel)
    np.testing.assert_allclose(dE, power, rtol=1e-10, atol=1e-10 * float(jnp.abs(tau @ v)))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_momentum_rate_is_external_wrench(seed):
    """Gravity-free tree, no base wrench: d/dt [L; P] = Σ_i (0_X_i)* f_ext,i."""
    m = random_tree(seed, 7, joint_types=MIXED, base="free", gravity=(0, 0, 0))
    q, v, tau, f_ext = state(m, seed)
    tau = tau.at[:6].set(0.0)  # joint torques are internal, a base wrench is not
    a = ds.forward_dynamics(m, q, v, tau, f_ext)
    qd = ds.configuration_rate(m, q, v)
    _, dh = jax.jvp(lambda q, v: ds.spatial_momentum(m, q, v), (q, v), (qd, a))
    X0 = ds.dynamics.world_transforms(m, q)
    wrench = sum(X0[i].inv_apply_force(f_ext[i]) for i in range(m.nb))
    np.testing.assert_allclose(dh, wrench, rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_point_jacobian_matches_tangent_finite_differences():
    m = random_tree(5, 6, joint_types=MIXED, base="free")
    q, v, _, _ = state(m, 5)
    body, point = 4, jnp.array([0.1, -0.2, 0.3])

    def pos(q):
        k = ds.forward_kinematics(m, q)
        return k.p[body] + k.R[body] @ point

    J = ds.point_jacobian(m, q, body, point)
    h = 1e-6
    cols = [(pos(ds.integrate(m, q, e * h)) - pos(ds.integrate(m, q, -e * h))) / (2 * h) for e in jnp.eye(m.nv)]
    np.testing.assert_allclose(J, jnp.stack(cols, 1), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(J @ v, ds.point_velocity(m, q, v, body, point), rtol=1e-12, atol=1e-14)


def test_integrate_difference_roundtrip_and_normalize():
    m = random_tree(6, 6, joint_types=MIXED, base="free")
    q, v, _, _ = state(m, 6)
    q1 = ds.integrate(m, q, v, 0.3)
    np.testing.assert_allclose(ds.difference(m, q, q1), 0.3 * v, rtol=1e-10, atol=1e-12)
    for s, e in m.topology.quat_q_indices:
        np.testing.assert_allclose(jnp.linalg.norm(q1[s:e]), 1.0, rtol=1e-14)
    q_bad = q1.at[3:7].multiply(2.0)
    qn = ds.normalize(m, q_bad)
    np.testing.assert_allclose(qn, q1, rtol=1e-14, atol=1e-15)
    # the dynamics does not depend on the quaternion's norm
    np.testing.assert_allclose(ds.forward_dynamics(m, q_bad, v), ds.forward_dynamics(m, q1, v), rtol=1e-12)


@pytest.mark.slow
def test_gradients_of_forward_dynamics_match_finite_differences():
    """∂a/∂q in the tangent space, ∂a/∂v, and ∂a/∂(mass, inertia, damping) vs central FD."""
    m = random_tree(7, 5, joint_types=MIXED, base="free", damping=True)
    q, v, tau, f_ext = state(m, 7)
    w = jax.random.normal(jax.random.PRNGKey(99), (m.nv,))

    def loss(m, dq, v):
        return w @ ds.forward_dynamics(m, ds.integrate(m, q, dq), v, tau, f_ext)

    dq0 = jnp.zeros(m.nv)
    g_m, g_dq, g_v = jax.grad(loss, argnums=(0, 1, 2))(m, dq0, v)
    loss = jax.jit(loss)  # many finite-difference evaluations: compile once
    h = 1e-6
    for k in range(m.nv):
        e = jnp.zeros(m.nv).at[k].set(h)
        np.testing.assert_allclose(g_dq[k], (loss(m, e, v) - loss(m, -e, v)) / (2 * h), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(g_v[k], (loss(m, dq0, v + e) - loss(m, dq0, v - e)) / (2 * h), rtol=1e-6, atol=1e-7)
    for name in ["body.b2.mass", "body.b3.com", "body.b1.inertia", "joint.b4.damping", "body.b5.pos"]:
        x = ds.get_param(m, name)
        g = ds.get_param(g_m, name)
        flat = np.asarray(x).ravel()
        for k in range(flat.size):
            d = np.zeros_like(flat)
            d[k] = h
            fp = loss(ds.set_params(m, {name: (flat + d).reshape(np.shape(x))}), dq0, v)
            fm = loss(ds.set_params(m, {name: (flat - d).reshape(np.shape(x))}), dq0, v)
            np.testing.assert_allclose(np.ravel(g)[k], (fp - fm) / (2 * h), rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.slow
def test_jit_vmap_match_loop_and_float32_accuracy():
    m = random_tree(8, 6, joint_types=MIXED, base="free", damping=True)
    keys = jax.random.split(jax.random.PRNGKey(3), 8)
    qs = jax.vmap(lambda k: ds.random_configuration(m, k))(keys)
    vs = jax.vmap(lambda k: jax.random.normal(k, (m.nv,)))(keys)
    fd = jax.jit(jax.vmap(ds.forward_dynamics, in_axes=(None, 0, 0)))
    batched = fd(m, qs, vs)
    loop = jnp.stack([ds.forward_dynamics(m, q, v) for q, v in zip(qs[:3], vs[:3])])
    batched = batched[:3]
    np.testing.assert_allclose(batched, loop, rtol=1e-12, atol=1e-12)
    # float32: documented accuracy ~1e-5 relative for well-conditioned trees
    m32 = m.astype(jnp.float32)
    a32 = ds.forward_dynamics(m32, qs[0].astype(jnp.float32), vs[0].astype(jnp.float32))
    assert a32.dtype == jnp.float32
    assert rel(a32.astype(jnp.float64), loop[0]) < 1e-4
