"""Actuators (issue 18): ``ds.actuation(model)`` maps controls to generalised forces as MuJoCo
does, and ``ctrl=`` drives ``simulate`` / ``rollout``.

* A small MJCF with every supported kind (``motor`` with gear and ``ctrlrange``, ``position`` with
  ``kp``/``kv`` and ``forcerange``, ``velocity``, ``general`` with affine gain and bias on a
  fixed tendon): actuator forces equal MuJoCo's ``actuator_force`` and accelerations its
  ``qacc`` to round-off at random states and controls (some outside ``ctrlrange``, some forces
  clamped), read by ``load_mjcf`` and by ``from_mjmodel``.
* example-robot-data's Panda (URDF compiled by MuJoCo, visuals, collisions and the finger
  ``<mimic>`` removed) with menagerie-style position servos on the seven arm joints and motors on
  the fingers: 1 s under gravity with a step command, MuJoCo's RK4 at h = 1 ms vs ``ds.rollout``
  (classical RK4, same h): the issue asks ≤ 1e-6 rad; both integrate the same ODE with the same
  scheme, so the difference is round-off growth (measured 5.7e-14 rad). MuJoCo applies the URDF
  effort limits as the joints' ``actuatorfrcrange`` (87 / 12 N m): the servos saturate there.
* Gradients of a rollout's final state with respect to the controls and the servo gains: reverse
  mode vs central differences.
* Refusals name the actuator; a hand-built ``position`` / ``velocity`` actuator needs its kind's
  gains (it acted as a motor without them) and a gear.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.io import from_mjmodel, load_mjcf

mujoco = pytest.importorskip("mujoco")

XML = """<mujoco><option gravity="0 0 -9.81" timestep="1e-3" integrator="RK4"/>
<worldbody>
 <body name="a"><joint name="j1" type="hinge" axis="0 1 0" damping="0.1"/>
  <inertial pos="0.2 0 0" mass="1.2" diaginertia="0.01 0.03 0.03"/>
  <body name="b" pos="0.4 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
   <inertial pos="0.15 0 0.02" mass="0.8" diaginertia="0.01 0.02 0.02"/>
   <body name="c" pos="0.3 0 0"><joint name="j3" type="slide" axis="1 0 0"/>
    <inertial pos="0.05 0 0" mass="0.3" diaginertia="0.001 0.002 0.002"/></body></body></body>
</worldbody>
<tendon><fixed name="t"><joint joint="j1" coef="0.5"/><joint joint="j2" coef="-1.5"/></fixed></tendon>
<actuator>
 <motor name="m1" joint="j1" gear="2" ctrllimited="true" ctrlrange="-1 1.5"/>
 <position name="p2" joint="j2" kp="30" kv="3" forcelimited="true" forcerange="-4 5"/>
 <velocity name="v3" joint="j3" kv="7" gear="0.5"/>
 <general name="g" tendon="t" gaintype="affine" gainprm="1.5 0.4 -0.2" biastype="affine" biasprm="0.3 -2 -0.5"/>
</actuator></mujoco>"""


def _mj_qacc(mm, md, q, v, u):
    md.qpos[:], md.qvel[:], md.ctrl[:] = q, v, u
    mujoco.mj_forward(mm, md)
    return md.qacc.copy(), md.actuator_force.copy()


@pytest.fixture(scope="module")
def small():
    mm = mujoco.MjModel.from_xml_string(XML)
    return mm, mujoco.MjData(mm), load_mjcf(XML), from_mjmodel(mm)


def test_forces_and_accelerations_equal_mujoco(small):
    mm, md, m_xml, m_mj = small
    rng = np.random.default_rng(0)
    fd = jax.jit(lambda m, q, v, u: (ds.forward_dynamics(m, q, v, ds.actuation(m)(u, q, v)), ds.actuation(m).force(u, q, v)))
    clamped = 0
    for _ in range(8):
        q, v, u = rng.normal(size=3), rng.normal(size=3), 2.0 * rng.normal(size=4)
        a_mj, f_mj = _mj_qacc(mm, md, q, v, u)
        clamped += int(u[0] > 1.5 or u[0] < -1) + int(f_mj[1] in (-4.0, 5.0))
        for m in (m_xml, m_mj):
            a, f = fd(m, jnp.asarray(q), jnp.asarray(v), jnp.asarray(u))
            np.testing.assert_allclose(f, f_mj, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(a, a_mj, rtol=1e-11, atol=1e-11 * np.abs(a_mj).max())
    assert clamped >= 3  # ctrlrange and forcerange were exercised


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_ctrl_drives_simulate_and_rollout_like_mujoco(small):
    mm, md, m_xml, _ = small
    u = np.array([0.7, 0.4, -0.2, 0.3])
    mujoco.mj_resetData(mm, md)
    md.ctrl[:] = u
    for _ in range(500):
        mujoco.mj_step(mm, md)
    tr = ds.rollout(m_xml, jnp.zeros(3), jnp.zeros(3), 1e-3, 500, ctrl=jnp.asarray(u))
    np.testing.assert_allclose(tr.q[-1], md.qpos, rtol=0, atol=1e-10)
    # the adaptive solver against MuJoCo's RK4 at h = 0.1 ms (RK4's error at 1 ms is 2e-8 rad here)
    mm.opt.timestep = 1e-4
    mujoco.mj_resetData(mm, md)
    md.ctrl[:] = u
    for _ in range(5000):
        mujoco.mj_step(mm, md)
    mm.opt.timestep = 1e-3
    sim = ds.simulate(ds.System(m_xml, ctrl=jnp.asarray(u), t1=0.5, rtol=1e-11, atol=1e-11, saveat=2))
    np.testing.assert_allclose(sim.q[-1], md.qpos, rtol=0, atol=1e-9)


@pytest.mark.slow  # 7-12 s of compile: the full suite runs it, the fast subset (<= 3 min) does not
def test_gradients_match_central_differences(small):
    _, _, m, _ = small

    @jax.jit
    def final(u, act):
        loads = ds.Loads(ctrl=u, actuation=act)
        return ds.rollout(m, jnp.zeros(3), jnp.zeros(3), 1e-3, 200, loads=loads).q[-1] @ jnp.array([1.0, -0.5, 2.0])

    act = ds.actuation(m)
    u = jnp.array([0.7, 0.4, -0.2, 0.3])
    g_u, g_act = jax.grad(final, argnums=(0, 1))(u, act)
    h = 1e-6
    for k in range(4):
        e = jnp.zeros(4).at[k].set(h)
        np.testing.assert_allclose(g_u[k], (final(u + e, act) - final(u - e, act)) / (2 * h), rtol=1e-6, atol=1e-10)
    # the position servo's kp (gain[1, 0], and -kp in its bias)
    kp = act.gain[1, 0]

    @jax.jit
    def with_kp(kp):
        return final(u, eqx.tree_at(lambda a: (a.gain, a.bias), act, (act.gain.at[1, 0].set(kp),
                                                                       act.bias.at[1, 1].set(-kp))))

    g_kp = jax.grad(with_kp)(kp)
    np.testing.assert_allclose(g_kp, (with_kp(kp + h) - with_kp(kp - h)) / (2 * h), rtol=1e-6)


def _panda_urdf():
    files = importlib.metadata.files("example-robot-data") or []
    path = next((f for f in files if str(f).endswith("panda_description/urdf/panda.urdf")), None)
    assert path is not None, "example-robot-data (in the test extra) has no panda_description/urdf/panda.urdf"
    text = path.locate().read_text()
    for tag in ("visual", "collision"):
        text = re.sub(rf"<{tag}>.*?</{tag}>", "", text, flags=re.S)
    return re.sub(r"<mimic[^>]*/>", "", text)


def test_actuated_panda_follows_mujoco():
    spec = mujoco.MjSpec.from_string(_panda_urdf())
    spec.option.timestep = 1e-3
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT  # contacts, limits, friction loss off
    arm = [f"panda_joint{k}" for k in range(1, 8)]
    for j in arm:
        a = spec.add_actuator(name=f"servo_{j}", target=j, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        a.set_to_position(kp=200.0, kv=20.0)
        a.ctrllimited, a.ctrlrange = True, [-2.8, 2.8]
    for j in ("panda_finger_joint1", "panda_finger_joint2"):
        a = spec.add_actuator(name=f"motor_{j}", target=j, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        a.set_to_motor()
        a.forcelimited, a.forcerange = True, [-20.0, 20.0]
    mm = spec.compile()
    md = mujoco.MjData(mm)
    model = from_mjmodel(mm)
    assert len(model.actuators) == 9
    u = np.array([0.3, -0.5, 0.2, -1.8, 0.1, 1.4, 0.6, 5.0, -30.0])  # a finger force beyond its range
    md.ctrl[:] = u
    for _ in range(1000):
        mujoco.mj_step(mm, md)
    tr = ds.rollout(model, jnp.asarray(mm.qpos0), jnp.zeros(mm.nv), 1e-3, 1000, ctrl=jnp.asarray(u), save_every=1000)
    err = np.abs(np.asarray(tr.q[-1]) - md.qpos).max()
    assert err <= 1e-6, err
    assert np.abs(md.qpos[:7] - mm.qpos0[:7]).max() > 0.1  # the servos moved the arm


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_refusals_name_the_actuator():
    xml = XML.replace('<velocity name="v3" joint="j3" kv="7" gear="0.5"/>',
                      '<general name="filt" joint="j3" dyntype="filter" dynprm="0.1"/>')
    with pytest.raises(ds.ActuationError, match="'filt'.*activation dynamics"):
        ds.actuation(load_mjcf(xml))
    xml = XML.replace('<motor name="m1" joint="j1"', '<motor name="m1" site="s"')
    with pytest.raises(ds.ActuationError, match="'m1'.*no site named 's'"):
        ds.actuation(load_mjcf(xml))
    xml = XML.replace('<motor name="m1" joint="j1"', '<motor name="m1" jointinparent="j1"').replace(
        '<motor name="m1" jointinparent="j1"', '<general name="m1" body="b"')
    with pytest.raises(ds.ActuationError, match="'m1'.*body transmissions are not applied"):
        ds.actuation(load_mjcf(xml))
    b = ds.ModelBuilder()
    b.add_body("x", joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(1, 1, 1))
    with pytest.raises(ValueError, match="no actuators"):
        ds.actuation(b.build())
    m = load_mjcf(XML)
    with pytest.raises(ValueError, match=r"ctrl must have shape \(4,\)"):
        ds.actuation(m)(jnp.zeros(3), jnp.zeros(3), jnp.zeros(3))
    with pytest.raises(ValueError, match="ctrl needs the model's actuation"):
        ds.Loads(ctrl=jnp.zeros(4))


def test_servo_kinds_need_their_gains_and_a_gear():
    """An Actuator built by hand with kind position (or velocity) and no gainprm / biasprm was
    applied as a motor (0.5 N m at its target angle), and an empty gear gave a zero force: both
    are refused when added, and gains that are not the kind's when applied."""
    from diffsim.model.model import Actuator

    def builder():
        b = ds.ModelBuilder()
        b.add_body("l", None, joint="revolute", mass=1.0, inertia=(1e-2,) * 3, joint_name="j")
        return b

    for a, msg in ((Actuator("servo", "position", "joint", "j", (1.0,), None, None), r"biasprm=\(0, -kp, -kv\)"),
                   (Actuator("servo", "position", "joint", "j", (1.0,), None, None, (5.0,)), "needs its gains"),
                   (Actuator("servo", "velocity", "joint", "j", (1.0,), None, None), r"biasprm=\(0, 0, -kv\)"),
                   (Actuator("m", "motor", "joint", "j", (), None, None), "gear .. must have 1 to 6 entries"),
                   (Actuator("m", "motor", "joint", "j", (1.0,) * 7, None, None), "1 to 6 entries")):
        with pytest.raises(ds.ModelError, match=f"'{a.name}'.*{msg}"):
            builder().add_actuator(a)
        with pytest.raises(ds.ActuationError, match=f"'{a.name}'.*{msg}"):  # a model holding it by other means
            ds.actuation(dataclasses.replace(builder().build(), actuators=(a,)))
    for a in (Actuator("servo", "position", "joint", "j", (1.0,), None, None, (5.0,), (0.0, -4.0, -1.0)),
              Actuator("servo", "velocity", "joint", "j", (1.0,), None, None, (2.0,), (0.0, 0.0, -2.0), biastype="none")):
        with pytest.raises(ds.ActuationError, match="'servo'.*not a .* actuator's.*use kind 'general'"):
            ds.actuation(builder().add_actuator(a).build())
    # with its gains it is a servo: τ = kp (u − q) − kv q̇
    servo = Actuator("servo", "position", "joint", "j", (1.0,), None, None, (5.0,), (0.0, -5.0, -1.0))
    act = ds.actuation(builder().add_actuator(servo).build())
    np.testing.assert_array_equal(act(jnp.array([0.5]), jnp.array([0.5]), jnp.zeros(1)), [0.0])
    np.testing.assert_allclose(act(jnp.array([0.5]), jnp.array([0.1]), jnp.array([0.2])), [5.0 * 0.4 - 0.2],
                               rtol=1e-15)
