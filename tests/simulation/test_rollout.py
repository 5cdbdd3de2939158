"""rollout(): fixed-step RK4 in one scan — 4th order on the rotation manifold, gradients,
vmap."""

import jax
import jax.numpy as jnp
import numpy as np

import diffsim as ds
from diffsim.model.random import random_tree


def test_rollout_is_fourth_order_with_rotations_and_matches_simulate():
    m = random_tree(21, 3, joint_types=("spherical",), base="free", gravity=(0, 0, -9.81))
    q0 = ds.random_configuration(m, jax.random.PRNGKey(0))
    v0 = jax.random.normal(jax.random.PRNGKey(1), (m.nv,))
    tau = 0.5 * jnp.ones(m.nv)
    ref = ds.simulate(m, q0, v0, 0.4, tau=tau, solver="dopri8", rtol=1e-13, atol=1e-13, saveat=2)
    roll = jax.jit(ds.rollout, static_argnums=(4,))
    errs = []
    for n in (20, 40, 80):
        tr = roll(m, q0, v0, 0.4 / n, n, tau=tau)
        t, q = tr.t, tr.q
        assert t.shape == (n + 1,) and q.shape == (n + 1, m.nq)
        errs.append(float(jnp.max(jnp.abs(ds.difference(m, ref.q[-1], q[-1])))))
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all((orders > 3.7) & (orders < 4.4)), (errs, orders)
    for s, e in m.topology.quat_q_indices:
        np.testing.assert_allclose(jnp.linalg.norm(q[:, s:e], axis=1), 1.0, atol=1e-14)


def test_rollout_gradient_and_vmap():
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=[0.01, 0.03, 0.03], damping=0.05)
    b.add_body("l2", parent="l1", joint="revolute", axis=[0, 1, 0], pos=[0.6, 0, 0], mass=0.8,
               com=[0.25, 0, 0], inertia=[0.01, 0.02, 0.02])
    m = b.build()
    q0, v0 = jnp.array([0.2, -0.3]), jnp.zeros(2)

    def loss(u):  # a torque sequence (a control to be optimised), held per step
        controls = ds.TimeSeries(jnp.linspace(0.0, 0.5, 6), u)
        tr = ds.rollout(m, q0, v0, 0.01, 50, tau=controls)
        q, v = tr.q, tr.v
        return jnp.sum(q[-1] ** 2) + 0.1 * jnp.sum(v[-1] ** 2)

    u = 0.3 * jnp.ones((6, 2))
    g = jax.jit(jax.grad(loss))(u)
    f = jax.jit(loss)
    h = 1e-6
    for k in [(0, 0), (3, 1), (5, 0)]:
        e = jnp.zeros_like(u).at[k].set(h)
        np.testing.assert_allclose(g[k], (f(u + e) - f(u - e)) / (2 * h), rtol=1e-6, atol=1e-9)
    us = jnp.stack([u, 2 * u, -u])
    np.testing.assert_allclose(jax.jit(jax.vmap(loss))(us), [f(x) for x in us], rtol=1e-12)
