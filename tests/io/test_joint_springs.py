"""Joint springs, armature and ``ref`` read from MJCF / MjModel (issue 18): ``K (q − q_ref)`` on
hinge and slide joints (MuJoCo's ``stiffness``/``springref``, ``springref`` and ``ref`` in degrees
for hinges under ``angle="degree"``; ``ref`` places the body at ``q = 0`` so that ``q`` is
MuJoCo's ``qpos``, in a body with two joints too), checked against MuJoCo's forward dynamics and
body COMs at random states (constraints off), and the spring's potential ``½ K (q − q_ref)²``
against the generalised forces."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.io import from_mjmodel, load_mjcf
from io_peers import assert_same_model, mujoco_forward, random_state, rel_err

mujoco = pytest.importorskip("mujoco")

XML = """<mujoco><option gravity="0.3 -0.2 -9.81"/>
<default><joint stiffness="3" armature="0.05"/><default class="soft"><joint stiffness="0.5" springref="20"/></default></default>
<worldbody><body name="base" pos="0 0 1"><freejoint/><geom type="box" size="0.2 0.1 0.1"/>
  <body name="l1" pos="0.2 0 0" euler="10 0 30"><joint name="h1" axis="0 1 0" pos="0 0 0.05" springref="-30" damping="0.2" ref="15"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
    <body name="l2" pos="0.3 0 0"><joint name="s2" type="slide" axis="1 0 0" class="soft" ref="0.1"/><joint name="h2" axis="0 0 1" pos="0.02 0 0" class="soft" ref="-40"/>
      <geom type="sphere" size="0.05" pos="0.1 0 0"/></body></body>
  <body name="l3" pos="-0.2 0 0"><joint name="b3" type="ball" stiffness="0"/><geom type="ellipsoid" size="0.05 0.08 0.1" pos="0 0 -0.1"/></body>
</body></worldbody></mujoco>"""


@pytest.fixture(scope="module")
def loaded():
    mm = mujoco.MjModel.from_xml_string(XML)
    model = load_mjcf(XML)
    return mm, model


def test_springs_are_read(loaded):
    mm, model = loaded
    assert_same_model(model, from_mjmodel(mm))  # stiffness and springref are leaves: compared too
    t = model.topology
    sl = {j: t.v_slice(t.joint_index(j)) for j in ("h1", "s2", "h2", "b3")}
    np.testing.assert_allclose([model.stiffness[sl[j]][0] for j in ("h1", "s2", "h2")], [3.0, 0.5, 0.5])
    np.testing.assert_allclose([model.springref[sl[j]][0] for j in ("h1", "s2", "h2")],
                               [np.deg2rad(-30), 20.0, np.deg2rad(20)])  # a slide's springref is a length
    np.testing.assert_allclose(model.stiffness[sl["b3"]], 0.0)
    assert ds.get_param(model, "joint.h1.stiffness") == pytest.approx(3.0)
    off = load_mjcf(XML.replace('<option gravity="0.3 -0.2 -9.81"/>', '<option gravity="0.3 -0.2 -9.81"><flag spring="disable"/></option>'))
    np.testing.assert_allclose(off.stiffness, 0.0)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_forward_dynamics_with_springs_matches_mujoco(loaded):
    mm, model = loaded
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(2):
        qpos, qvel = random_state(mm, rng)
        a, a_mj = mujoco_forward(mujoco, mm, md, model, qpos, qvel, rng.normal(size=mm.nv))
        assert np.abs(md.qfrc_spring).max() > 0.1  # the springs act
        worst = max(worst, rel_err(a, a_mj))
        com = np.asarray(ds.body_com(model, jnp.asarray(qpos)))
        t = model.topology
        for b in ("l1", "l2", "l3"):  # body placement with ref: the same world COMs at the same qpos
            np.testing.assert_allclose(com[t.body_names.index(b)], md.xipos[mm.body(b).id], atol=1e-14)
    assert worst <= 1e-12, worst


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_spring_potential_is_the_generalised_force(loaded):
    """``g(q) = ∂V/∂q`` on the hinge and slide coordinates (V: gravity + springs)."""
    _, model = loaded
    t = model.topology
    q = ds.random_configuration(model, jax.random.PRNGKey(0))
    g = np.asarray(ds.gravity_forces(model, q))
    dV = np.asarray(jax.grad(ds.potential_energy, 1)(model, q))
    for j in ("h1", "s2", "h2"):
        i = t.joint_index(j)
        np.testing.assert_allclose(g[t.v_slice(i)], dV[t.q_slice(i)], rtol=1e-12, atol=1e-12)
    spring = ds.model.model.joint_spring_energy(model, q)
    assert float(spring) > 0
    no_spring = ds.set_params(model, {"joint.h1.stiffness": jnp.zeros(1), "joint.s2.stiffness": jnp.zeros(1),
                                      "joint.h2.stiffness": jnp.zeros(1)})
    assert float(ds.potential_energy(model, q) - ds.potential_energy(no_spring, q)) == pytest.approx(float(spring), rel=1e-12)


def test_spring_errors_name_the_joint():
    b = ds.ModelBuilder()
    with pytest.raises(ds.ModelError, match="body 'x': joint springs .* revolute or prismatic joint, not spherical"):
        b.add_body("x", joint="spherical", mass=1, inertia=[1, 1, 1], stiffness=2.0)
    with pytest.raises(ds.ModelError, match="body 'y': joint stiffness must be finite and non-negative"):
        b.add_body("y", joint="revolute", mass=1, inertia=[1, 1, 1], stiffness=-2.0)
