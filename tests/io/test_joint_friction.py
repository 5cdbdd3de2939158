"""Coulomb joint friction read from a file (MJCF ``frictionloss``) against MuJoCo's own result
for the same file (issue 18).

A 1 kg slider (no gravity) starts at ``v0 = 1 m/s`` against ``F = 2 N`` of friction. Exact
Coulomb friction stops it at ``t* = m v0 / F = 0.5 s`` after ``x* = m v0² / (2F) = 0.25 m``.
Both simulators replace ``sgn(v)`` by a smooth law of width ``w`` near ``v = 0``, which lengthens
the stop by the distance covered while ``|v| ≲ w``:

* diffsim: ``F tanh(v/ε)`` (``ε = friction_width``): ``x∞ − x* = (m/F) ∫ v (coth(v/ε) − 1) dv
  = (π²/12) m ε² / F``;
* MuJoCo: its frictionloss constraint is a force ``−(b/(1 + R/A)) v`` saturated at ``F``, with
  ``b = 2 / (d_max · timeconst)`` (``solref`` timeconst 0.02 s, ``solimp`` d_max 0.95), ``R/A =
  (1 − d)/d`` (``d = 0.9`` at zero violation) — linear below ``v_c = F (1 + R/A) / b``, which adds
  ``m v_c² / (2F)`` (1.114e-4 m here).

While ``|v| ≫ max(ε, v_c)`` both decelerate at exactly ``F/m``: positions agree with MuJoCo to
RK4 round-off; the final positions differ by the difference of the two explained excesses.
The energy bookkeeping ``T(t) + ∫ F tanh(v/ε) v dt = T(0)`` closes to the integrator's error.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.io import load_mjcf

mujoco = pytest.importorskip("mujoco")

M, F, V0, DT, T_END, EPS = 1.0, 2.0, 1.0, 1e-4, 1.0, 1e-3
XML = f"""<mujoco><option gravity="0 0 0" timestep="{DT}" integrator="RK4"/>
<worldbody><body name="b"><joint name="x" type="slide" axis="1 0 0" frictionloss="{F}"/>
<inertial pos="0 0 0" mass="{M}" diaginertia="0.1 0.1 0.1"/></body></worldbody></mujoco>"""
T_MID = 0.25  # mid-slide, |v| = 0.5 m/s


def _mujoco_positions():
    mm = mujoco.MjModel.from_xml_string(XML)
    md = mujoco.MjData(mm)
    md.qvel[0] = V0
    out = {}
    for k in range(1, int(round(T_END / DT)) + 1):
        mujoco.mj_step(mm, md)
        if k in (int(round(T_MID / DT)), int(round(T_END / DT))):
            out[k] = float(md.qpos[0])
    return mm, out[int(round(T_MID / DT))], out[int(round(T_END / DT))]


@pytest.fixture(scope="module")
def runs():
    model = load_mjcf(XML, friction_width=EPS)

    def f(y):  # (q, v, dissipated work)
        q, v = y[0:1], y[1:2]
        a = ds.forward_dynamics(model, q, v, jnp.zeros(1))
        return jnp.concatenate([v, a, model.frictionloss * jnp.tanh(v / model.friction_width) * v])

    def step(y, _):
        k1 = f(y)
        k2 = f(y + DT / 2 * k1)
        k3 = f(y + DT / 2 * k2)
        k4 = f(y + DT * k3)
        y = y + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y, y

    n = int(round(T_END / DT))
    _, ys = jax.jit(lambda y: jax.lax.scan(step, y, None, length=n))(jnp.array([0.0, V0, 0.0]))
    mm, x_mid_mj, x_end_mj = _mujoco_positions()
    return dict(model=model, ys=np.asarray(ys), mm=mm, x_mid_mj=x_mid_mj, x_end_mj=x_end_mj)


def test_friction_is_read_with_its_width(runs):
    model = runs["model"]
    np.testing.assert_allclose(model.frictionloss, [F])
    np.testing.assert_allclose(model.friction_width, [EPS])
    assert ds.get_param(model, "joint.x.frictionloss") == pytest.approx(F)
    ref = ds.from_mjmodel(runs["mm"], friction_width=EPS)
    np.testing.assert_allclose(ref.frictionloss, [F])


def test_sliding_matches_mujoco_and_the_stop_is_explained(runs):
    ys = runs["ys"]
    k_mid = int(round(T_MID / DT)) - 1
    x_exact_mid = V0 * T_MID - F / M * T_MID**2 / 2
    # while sliding fast, both laws are F sgn(v): the same position as MuJoCo and as Coulomb
    assert abs(ys[k_mid, 0] - runs["x_mid_mj"]) <= 1e-12
    assert abs(ys[k_mid, 0] - x_exact_mid) <= 1e-12
    # the stop: each excess over exact Coulomb is what its smoothing predicts
    x_star = M * V0**2 / (2 * F)
    excess_ds = np.pi**2 / 12 * M * EPS**2 / F
    mm = runs["mm"]
    timeconst, d0, dmax = mm.dof_solref[0][0], mm.dof_solimp[0][0], mm.dof_solimp[0][1]
    assert (timeconst, d0, dmax) == (0.02, 0.9, 0.95)  # MuJoCo's defaults, as the docstring says
    b = 2.0 / (dmax * timeconst)
    v_c = F * (1 + (1 - d0) / d0) / b
    excess_mj = M * v_c**2 / (2 * F)
    assert abs(ys[-1, 1]) < 1e-12 and ys[-1, 0] - x_star == pytest.approx(excess_ds, rel=1e-4)
    assert runs["x_end_mj"] - x_star == pytest.approx(excess_mj, rel=1e-3)
    # so diffsim vs MuJoCo at the end: the difference of the two explained excesses
    assert abs((ys[-1, 0] - runs["x_end_mj"]) - (excess_ds - excess_mj)) <= 1e-3 * excess_mj


def test_energy_bookkeeping_closes(runs):
    ys = runs["ys"]
    kinetic = 0.5 * M * ys[:, 1] ** 2
    closure = kinetic + ys[:, 2] - 0.5 * M * V0**2
    # RK4 (h = 1e-4 s) on the stiff stop (F/(m ε) = 2000 1/s, h λ = 0.2): measured 6e-12 J
    assert np.abs(closure).max() <= 1e-10
    assert ys[-1, 2] == pytest.approx(0.5 * M * V0**2, rel=1e-10)  # all of it dissipated
