"""Actuators on site transmissions (issue 18): ``ds.actuation`` applies MuJoCo's site
transmission. Without ``refsite`` the actuator pushes along its 6-vector gear in the site frame,
its length is 0 and its moment arm ``gᵀ J_s(q)`` depends on the configuration; with a
``refsite`` (Cartesian end-effector servos) its length is the site's position and rotation
vector relative to the reference site, in that site's frame.

* A floating base with a two-link arm, a thruster site on the base and a tilted site at the tip:
  motors with force, torque and mixed gears, a velocity and a position actuator on sites, a joint
  motor besides, and position servos and a motor from the tip relative to the base's site
  (translation, rotation, mixed gears). Actuator lengths equal MuJoCo's ``actuator_length``,
  forces its ``actuator_force``, generalised forces its
  ``qfrc_actuator`` (through the free joint's velocity frame) and accelerations its ``qacc`` to
  round-off at random states and controls, read by ``load_mjcf`` and by ``from_mjmodel``.
* 0.5 s under constant controls: ``ds.rollout`` (classical RK4, h = 1 ms) against MuJoCo's RK4 at
  the same step: the same ODE and scheme, so the difference is round-off growth.
* Gradients of the final state with respect to the controls and the site gears: reverse mode
  against central differences.
* An unknown reference site is refused, naming the actuator.
"""

from __future__ import annotations

import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.io import from_mjmodel, load_mjcf

mujoco = pytest.importorskip("mujoco")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from io_peers import free_velocity_map  # noqa: E402

XML = """<mujoco><option gravity="0 0 -9.81" timestep="1e-3" integrator="RK4"/>
<worldbody>
 <body name="base" pos="0 0 1"><freejoint name="root"/>
  <inertial pos="0.02 0 0" mass="3" diaginertia="0.05 0.06 0.07"/>
  <site name="thruster" pos="-0.1 0.05 0.02" quat="0.9 0.1 0.3 0"/>
  <body name="l1" pos="0.15 0 0"><joint name="j1" type="hinge" axis="0 1 0" damping="0.05"/>
   <inertial pos="0.15 0 0" mass="0.8" diaginertia="0.004 0.01 0.01"/>
   <body name="l2" pos="0.3 0 0"><joint name="j2" type="hinge" axis="0 0 1"/>
    <inertial pos="0.1 0.01 0" mass="0.4" diaginertia="0.002 0.004 0.004"/>
    <site name="tip" pos="0.2 0.02 -0.01" quat="0.7 0.2 -0.4 0.3"/></body></body></body>
</worldbody>
<actuator>
 <motor name="thrust" site="thruster" gear="0 0 1 0 0 0" ctrllimited="true" ctrlrange="-2 3"/>
 <motor name="wrench" site="tip" gear="0.3 0 0.5 0 1 0.2"/>
 <velocity name="drag" site="tip" kv="2" gear="1 0 0 0 0 0"/>
 <position name="servo" site="tip" kp="5" kv="0.5" gear="0 1 0 0.1 0 0" forcelimited="true" forcerange="-1 1"/>
 <motor name="elbow" joint="j1" gear="1.5"/>
 <position name="reach" site="tip" refsite="thruster" kp="5" kv="0.5" gear="0.2 1 -0.3 0 0 0"/>
 <position name="orient" site="tip" refsite="thruster" kp="2" kv="0.1" gear="0 0 0 1 0.5 -0.2"/>
 <motor name="twist" site="tip" refsite="thruster" gear="0.4 0 0 0.3 0.2 1"/>
</actuator></mujoco>"""


@pytest.fixture(scope="module")
def arm():
    mm = mujoco.MjModel.from_xml_string(XML)
    return mm, mujoco.MjData(mm), load_mjcf(XML), from_mjmodel(mm)


def _state(rng, mm):
    qpos = np.zeros(mm.nq)
    quat = rng.normal(size=4)
    qpos[:3], qpos[3:7], qpos[7:] = rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-2, 2, 2)
    return qpos, rng.normal(size=mm.nv)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_site_actuators_equal_mujoco(arm):
    mm, md, m_xml, m_mj = arm
    fn = jax.jit(lambda m, q, v, u: (ds.actuation(m).force(u, q, v, m), ds.actuation(m)(u, q, v, m),
                                     ds.forward_dynamics(m, q, v, ds.actuation(m)(u, q, v, m))))
    rng = np.random.default_rng(3)
    clamped = 0
    for _ in range(6):
        qpos, qvel = _state(rng, mm)
        u = 2.0 * rng.normal(size=mm.nu)
        md.qpos[:], md.qvel[:], md.ctrl[:] = qpos, qvel, u
        mujoco.mj_forward(mm, md)
        clamped += int(not -2 <= u[0] <= 3) + int(abs(md.actuator_force[3]) == 1.0)
        for m in (m_xml, m_mj):
            q, v = (np.asarray(x) for x in ds.from_mujoco(m, qpos, qvel))
            T, Tdv = free_velocity_map(m, q, v)
            f, tau, a = fn(m, jnp.asarray(q), jnp.asarray(v), jnp.asarray(u))
            np.testing.assert_allclose(ds.actuation(m).length(q, v, m)[0], md.actuator_length, rtol=0, atol=1e-13)
            np.testing.assert_allclose(f, md.actuator_force, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(tau, T.T @ md.qfrc_actuator, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(T @ np.asarray(a) + Tdv, md.qacc, rtol=1e-11, atol=1e-11 * np.abs(md.qacc).max())
    assert clamped >= 2  # ctrlrange and forcerange were exercised
    # the moment arms depend on q: the same control gives different joint torques elsewhere
    act = ds.actuation(m_xml)
    q0, _ = ds.from_mujoco(m_xml, mm.qpos0, np.zeros(mm.nv))
    q1, _ = ds.from_mujoco(m_xml, *_state(rng, mm))
    assert np.abs(np.asarray(act.moments(q1, m_xml) - act.moments(q0, m_xml))).max() > 0.1
    with pytest.raises(ValueError, match="drive sites"):
        act(jnp.zeros(mm.nu), q1, jnp.zeros(mm.nv))


def test_site_actuators_drive_rollout_like_mujoco(arm):
    mm, md, model, _ = arm
    u = np.array([1.2, 0.4, 0.3, -0.2, 0.5, 0.1, 0.3, -0.2])
    mujoco.mj_resetData(mm, md)
    md.ctrl[:] = u
    for _ in range(500):
        mujoco.mj_step(mm, md)
    q0, v0 = ds.from_mujoco(model, mm.qpos0, np.zeros(mm.nv))
    tr = ds.rollout(model, q0, v0, 1e-3, 500, ctrl=jnp.asarray(u), save_every=500)
    q_mj = np.asarray(ds.from_mujoco(model, md.qpos, md.qvel)[0])
    err = np.abs(np.asarray(tr.q[-1]) - q_mj).max()
    assert err <= 1e-10, err
    assert np.abs(q_mj - np.asarray(q0)).max() > 0.05  # the actuators moved it


@pytest.mark.slow  # compile-bound (reverse mode through 200 RK4 steps): the full suite runs it
def test_site_gradients_match_central_differences(arm):
    _, _, model, _ = arm
    q0, v0 = ds.from_mujoco(model, np.r_[0, 0, 1, 1, 0, 0, 0, 0.3, -0.2], np.zeros(model.nv))
    w = jnp.arange(1.0, model.nq + 1) / model.nq

    @jax.jit
    def final(u, act):
        tr = ds.rollout(model, q0, v0, 1e-3, 200, loads=ds.Loads(ctrl=u, actuation=act), save_every=200)
        return tr.q[-1] @ w

    act = ds.actuation(model)
    u = jnp.array([1.2, 0.4, 0.3, -0.2, 0.5, 0.1, 0.3, -0.2])
    g_u, g_act = jax.grad(final, argnums=(0, 1))(u, act)
    h = 1e-6
    for k in range(len(u)):
        e = jnp.zeros(len(u)).at[k].set(h)
        np.testing.assert_allclose(g_u[k], (final(u + e, act) - final(u - e, act)) / (2 * h), rtol=1e-6, atol=1e-10)
    for i, j in ((0, 2), (1, 4), (3, 1), (5, 1), (6, 3)):  # thruster z, wrench y torque, servo y, reach y, orient x
        e = jnp.zeros_like(act.site_gear).at[i, j].set(h)
        up = final(u, eqx.tree_at(lambda a: a.site_gear, act, act.site_gear + e))
        dn = final(u, eqx.tree_at(lambda a: a.site_gear, act, act.site_gear - e))
        np.testing.assert_allclose(g_act.site_gear[i, j], (up - dn) / (2 * h), rtol=1e-6, atol=1e-10)


def test_unknown_sites_are_refused_naming_the_actuator():
    xml = XML.replace('refsite="thruster" gear="0.4', 'refsite="nowhere" gear="0.4')
    with pytest.raises(ds.ActuationError, match="'twist'.*no site named 'nowhere'"):
        ds.actuation(load_mjcf(xml))


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_site_actuation_under_vmap_and_in_float32(arm):
    """The same function batched (``vmap`` = a loop to round-off) and in float32 (relative error
    4.6e-7 measured against float64: float32's resolution times the moment arms' conditioning)."""
    mm, _, m64, _ = arm
    m32 = load_mjcf(XML, dtype=jnp.float32)
    rng = np.random.default_rng(5)
    states = [ds.from_mujoco(m64, *_state(rng, mm)) for _ in range(3)]
    Q, V = jnp.stack([s[0] for s in states]), jnp.stack([s[1] for s in states])
    U = jnp.asarray(rng.normal(size=(3, mm.nu)))

    def tau(m, q, v, u):
        return ds.actuation(m)(u, q, v, m)

    batched = jax.jit(jax.vmap(tau, in_axes=(None, 0, 0, 0)))
    a64 = batched(m64, Q, V, U)
    for k in range(3):
        np.testing.assert_allclose(a64[k], tau(m64, Q[k], V[k], U[k]), rtol=0, atol=1e-13)
    a32 = batched(m32, Q.astype(jnp.float32), V.astype(jnp.float32), U.astype(jnp.float32))
    assert a32.dtype == jnp.float32
    assert float(jnp.abs(a32 - a64).max() / jnp.abs(a64).max()) < 1e-5
