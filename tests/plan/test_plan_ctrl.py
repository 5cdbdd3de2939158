"""Planning the controls of a model's actuators (``ds.plan.solve(..., ctrl=True)``): a two-link
arm with a position servo and a geared motor, both with control ranges, reaches a target with
its tip, and MuJoCo driven by the planned controls (same MJCF, RK4 at the plan's step, the
controls held over each step) follows the planned states."""

import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds

mujoco = pytest.importorskip("mujoco")

XML = """<mujoco><option gravity="0 0 -9.81" timestep="0.02" integrator="RK4"/><worldbody>
<body name="l1"><joint name="j1" axis="0 1 0" damping="0.05"/>
  <geom type="capsule" fromto="0 0 0 .4 0 0" size=".03" mass="1" contype="0" conaffinity="0"/>
  <body name="l2" pos=".4 0 0"><joint name="j2" axis="0 1 0" damping="0.05"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" mass=".6" contype="0" conaffinity="0"/>
    <site name="tip" pos=".3 0 0"/></body></body></worldbody>
<actuator><position name="servo" joint="j1" kp="40" kv="2" ctrlrange="-0.3 0.3"/>
  <motor name="motor" joint="j2" gear="3" ctrlrange="-0.15 0.15"/></actuator></mujoco>"""
N, DT = 60, 0.02
TARGET = jnp.asarray([0.2, 0.0, -0.45])


@pytest.fixture(scope="module")
def arm_plan():
    model = ds.load_mjcf(XML)

    def running(q, v, u):  # the controls, not torques: the third argument with ctrl=True
        return 1e-3 * jnp.sum(u**2)

    def terminal(q, v):
        return 100.0 * jnp.sum((ds.site_poses(model, q)[1][0] - TARGET) ** 2) + jnp.sum(v**2)

    plan = ds.plan.solve(model, jnp.zeros(2), jnp.zeros(2), horizon=N, dt=DT, running_cost=running,
                         terminal_cost=terminal, ctrl=True, max_iter=100)
    return model, plan


@pytest.mark.slow  # one DDP compile (~15 s)
def test_planned_controls_reach_the_target_and_drive_mujoco_the_same(arm_plan):
    model, plan = arm_plan
    # the reach is done within ~10 iterations; the last 1 % of the cost (velocity, effort) creeps
    # along a flat valley with the servo on its bound, so the budget can end it (max_iter)
    assert plan.message in ("converged", "max_iter") and plan.ctrl.shape == (N, 2) and plan.tau.shape == (N, 2)
    assert float(plan.cost) < 1e-5 * float(plan.cost_history[0])
    np.testing.assert_allclose(ds.site_poses(model, plan.q[-1])[1][0], TARGET, atol=1e-5)
    lo, hi = np.array([-0.3, -0.15]), np.array([0.3, 0.15])
    u = np.asarray(plan.ctrl)
    assert np.all(u >= lo - 1e-12) and np.all(u <= hi + 1e-12)
    assert np.any(np.isclose(u, lo) | np.isclose(u, hi))  # the box is active somewhere: a real constraint
    mm = mujoco.MjModel.from_xml_string(XML)
    md = mujoco.MjData(mm)
    qs = [md.qpos.copy()]
    for k in range(N):
        md.ctrl[:] = u[k]
        mujoco.mj_step(mm, md)
        qs.append(md.qpos.copy())
    np.testing.assert_allclose(np.asarray(qs), np.asarray(plan.q), rtol=0, atol=1e-10)
    # the reported generalised forces are the actuators' at the knots
    act = ds.actuation(model)
    np.testing.assert_allclose(plan.tau[5], act(plan.ctrl[5], plan.q[5], plan.v[5]), rtol=1e-12)


def test_ctrl_plans_refuse_what_does_not_apply():
    model = ds.load_mjcf(XML)
    kw = dict(horizon=3, dt=DT, running_cost=lambda q, v, u: jnp.sum(u**2), terminal_cost=lambda q, v: jnp.sum(q**2))
    with pytest.raises(ValueError, match="actuation= .driven coordinates"):
        ds.plan.solve(model, jnp.zeros(2), jnp.zeros(2), ctrl=True, actuation=["j1"], **kw)
    with pytest.raises(ValueError, match="initial controls"):
        ds.plan.solve(model, jnp.zeros(2), jnp.zeros(2), ctrl=True, tau_init=jnp.zeros((3, 5)), **kw)
    bare = ds.load_mjcf(XML.split("<actuator>")[0] + "</mujoco>")
    with pytest.raises(ValueError, match="no actuators"):
        ds.plan.solve(bare, jnp.zeros(2), jnp.zeros(2), ctrl=True, **kw)


@pytest.mark.parametrize("limits, match", [((0.3, -0.3), "lo > hi at the actuators' controls"),
                                           ((jnp.nan, 0.3), "NaN"),
                                           ((jnp.zeros(3), 0.3), r"must be a scalar or have shape \(2,\)")])
def test_control_limits_are_checked(limits, match):
    """``tau_limits`` with ``ctrl=True`` (it pinned every control at -0.3 and said converged for
    (0.3, -0.3); a NaN read as a non-finite cost, a wrong shape as a broadcasting error)."""
    model = ds.load_mjcf(XML)
    with pytest.raises(ValueError, match=match):
        ds.plan.solve(model, jnp.zeros(2), jnp.zeros(2), horizon=3, dt=DT, running_cost=lambda q, v, u: jnp.sum(u**2),
                      terminal_cost=lambda q, v: jnp.sum(q**2), ctrl=True, tau_limits=limits)
