"""rollout(): fixed-step RK4 in one scan — 4th order on the rotation manifold, gradients,
vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.model.random import random_tree


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
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


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
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


def _pendulum():
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=[0.01, 0.03, 0.03])
    b.add_body("l2", parent="l1", joint="revolute", axis=[0, 1, 0], pos=[0.6, 0, 0], mass=0.8,
               com=[0.25, 0, 0], inertia=[0.01, 0.02, 0.02])
    return b.build()


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_rollout_save_every_and_checkpoint_are_bit_identical_rows():
    m = _pendulum()
    q0, v0, n = jnp.array([0.2, -0.3]), jnp.array([0.1, 0.0]), 12
    roll = jax.jit(ds.rollout, static_argnums=(4,), static_argnames=("save_every", "checkpoint"))
    ref = roll(m, q0, v0, 0.01, n)
    for se, ck in [(n, False), (3, False), (1, True), (1, 4), (4, 2), (2, 6), (n, 3)]:
        tr = roll(m, q0, v0, 0.01, n, save_every=se, checkpoint=ck)
        assert tr.q.shape == (n // se + 1, m.nq)
        for a, b in ((tr.t, ref.t), (tr.q, ref.q), (tr.v, ref.v)):
            np.testing.assert_array_equal(a, b[::se])

    def loss(mass, **kw):
        tr = ds.rollout(ds.set_params(m, {"body.l1.mass": mass}), q0, v0, 0.01, n, **kw)
        return jnp.sum(tr.q[-1] ** 2) + jnp.sum(tr.v[-1] ** 2)

    g = jax.grad(loss)(1.0)
    for kw in ({"checkpoint": True}, {"checkpoint": 4, "save_every": n}):
        np.testing.assert_allclose(jax.grad(lambda x, kw=kw: loss(x, **kw))(1.0), g, rtol=1e-13)
    for bad in ({"save_every": 5}, {"checkpoint": 5}, {"save_every": 4, "checkpoint": 6}, {"save_every": 0}):
        with np.testing.assert_raises(ValueError):
            ds.rollout(m, q0, v0, 0.01, n, **bad)


def test_batched_final_state_rollout_holds_no_trajectory():
    """Issue 15: vmap(rollout) reading only the final state used to keep every step's state in XLA's
    temporaries (n_steps × the state per sample); now its memory does not grow with n_steps."""
    m = _pendulum()
    q0, B = jnp.array([0.2, -0.3]), 32
    state = (m.nq + m.nv) * 8

    def temp(n, **kw):
        def one(v):
            tr = ds.rollout(m, q0, v, 0.01, n, **kw)
            return tr.q[-1], tr.v[-1], tr.status

        def final(V):
            return jax.vmap(one)(V)

        ma = jax.jit(final).lower(jnp.zeros((B, m.nv))).compile().memory_analysis()
        return None if ma is None else ma.temp_size_in_bytes

    for kw in ({}, {"save_every": "n"}):
        t50, t400 = (temp(n, **{k: n for k in kw}) for n in (50, 400))
        if t50 is None:  # backend without memory analysis
            return
        assert t400 - t50 < 0.1 * 350 * state * B, (kw, t50, t400)


def test_a_system_with_contact_limits_or_prescribed_motion_is_refused():
    """RK4 on the smooth dynamics would step through a plane, a joint stop or an imposed motion as
    if they were not there (a ball fell 1.5 m through its plane with status success): refused,
    with what to do instead. Without them the same model rolls out."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("ball", joint="free", mass=1.0, inertia=(0.004,) * 3)
    ball = b.build()
    contact = ds.compliant_contact(ball, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0, 0, 1), 0.0)],
                                   normal=ds.normal_law("hunt-crossley", K=1e5, c_r=0.7))
    q0 = jnp.array([0, 0, 0.3, 1, 0, 0, 0.0])
    with pytest.raises(ValueError, match="cannot apply its contact: use ds.simulate"):
        ds.rollout(ds.System(ball, q0, contact=contact), 0.01, 2)
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=[0.01, 0.03, 0.03])
    b.add_joint_limit("l1", -0.5, 0.5)
    arm = b.build()
    with pytest.raises(ValueError, match="cannot apply its joint limits.*limits=False"):
        ds.rollout(ds.System(arm), 0.01, 2)
    moved = ds.System(arm, limits=False, prescribed=ds.prescribe(arm, ["l1"], lambda t: (0.1 * t, 0.1, 0.0)))
    with pytest.raises(ValueError, match="cannot apply its prescribed motion"):
        ds.rollout(moved, 0.01, 2)
    assert ds.rollout(ds.System(arm, limits=False), 0.01, 2).q.shape == (3, 1)
    # a step <= 0 integrated backwards or stood still; a fractional step count was truncated
    for dt, n in ((-0.01, 2), (0.0, 2), (0.01, 2.7)):
        with pytest.raises(ValueError, match="dt must be positive|n_steps must be a positive integer"):
            ds.rollout(arm, jnp.zeros(1), jnp.zeros(1), dt, n)
