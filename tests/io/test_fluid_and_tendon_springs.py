"""MuJoCo's inertia-box fluid forces and springs/dampers on fixed tendons (read from MJCF and
from an MjModel): the generalised forces equal MuJoCo's ``qfrc_fluid`` / ``qfrc_passive`` on a
floating model with asymmetric bodies, the energy bookkeeping closes in a simulation, gradients
with respect to the new parameters equal central differences, and the refusals."""

import sys
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.dynamics.fluid import fluid_power
from diffsim.model import ModelError

mujoco = pytest.importorskip("mujoco")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from io_peers import assert_same_model, free_velocity_map, random_state  # noqa: E402

# a floating body with a two-joint fin; bodies off their principal axes (tilted boxes), so the
# equivalent inertia boxes are rotated; a fixed tendon with a spring and a damper on the fin
XML = """<mujoco><option density="{rho}" viscosity="{beta}" gravity="0 0 -9.81"/>
<worldbody><body name="hull" pos="0 0 1"><freejoint/>
  <geom type="box" size=".3 .1 .06" euler="10 20 30" mass="4"/>
  <geom type="sphere" size=".05" pos=".2 .1 0" mass=".5"/>
  <body name="fin1" pos=".3 0 0"><joint name="a" axis="0 1 0" ref="10"/>
    <geom type="box" size=".1 .02 .05" pos=".1 0 0" euler="0 15 0" mass=".3"/>
    <body name="fin2" pos=".2 0 0"><joint name="b" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 .15 0 0" size=".02" mass=".2"/></body></body></body></worldbody>
<tendon><fixed name="T" stiffness="{k}" damping="{c}"><joint joint="a" coef=".6"/><joint joint="b" coef="-.4"/></fixed></tendon>
</mujoco>"""
SPEC = dict(rho=1000.0, beta=0.02, k=3.0, c=0.2)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    path = tmp_path_factory.mktemp("fluid") / "hull.xml"
    path.write_text(XML.format(**SPEC))
    return path, ds.load_mjcf(path), mujoco.MjModel.from_xml_path(str(path))


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_fluid_and_tendon_forces_equal_mujocos(files):
    """At random states (the joints off the tendon's rest length): ``J^T`` of our fluid wrenches
    equals ``qfrc_fluid`` and the tendon's passive force ``qfrc_spring + qfrc_damper`` minus the
    joints' own, both read in MuJoCo's velocity frame; and the two readers agree."""
    path, model, mm = files
    assert_same_model(model, ds.from_mjmodel(mm))
    assert model.fluid is not None and model.tendon_springs.names == ("T",)
    assert {"fluid.density", "fluid.viscosity", "tendon.T.stiffness", "tendon.T.length_ref"} <= set(ds.param_names(model))
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(2)
    bare = eqx.tree_at(lambda m: (m.fluid, m.tendon_springs), model, (None, None))
    zero = jnp.zeros(model.nv)
    for _ in range(4):
        qpos, qvel = random_state(mm, rng)
        qvel *= 3.0
        md.qpos[:], md.qvel[:] = qpos, qvel
        mujoco.mj_forward(mm, md)
        q, v = (jnp.asarray(x) for x in ds.from_mujoco(model, qpos, qvel))
        T, _ = free_velocity_map(model, np.asarray(q), np.asarray(v))
        Q = np.asarray(ds.inverse_dynamics(bare, q, v, zero) - ds.inverse_dynamics(model, q, v, zero))
        ref = md.qfrc_fluid + md.qfrc_spring + md.qfrc_damper  # MuJoCo's frame: Q = Tᵀ Q_mj
        np.testing.assert_allclose(np.linalg.solve(T.T, Q), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
        assert float(fluid_power(model, q, v)) < 0


@pytest.mark.slow  # 7-12 s of compile: the full suite runs it, the fast subset (<= 3 min) does not
def test_energy_bookkeeping_closes_with_fluid_and_tendon_damping(files):
    """``T + V + ∫ P_dissipated dt`` stays constant along a tumbling, flapping run (the tendon
    spring's energy in ``V``, the fluid's and the dampers' power in the dissipation)."""
    _, model, _ = files
    from diffsim.dynamics.flexible import dissipated_power

    q0 = ds.neutral_configuration(model).at[7].set(0.6)
    v0 = jnp.asarray([1.0, -2.0, 0.5, 0.3, 0.2, -0.4, 4.0, -3.0])
    tr = ds.simulate(ds.System(model, q0, v0, t1=1.0, rtol=1e-10, atol=1e-10, saveat=51,
                               integrals=lambda t, q, v: jnp.atleast_1d(dissipated_power(model, q, v))))
    E = np.asarray(tr.energy() + tr.integrals[:, 0])
    assert float(tr.integrals[-1, 0]) > 0.1 * abs(float(E[0]))  # the fluid took a good part of it
    np.testing.assert_allclose(E, E[0], rtol=0, atol=1e-7 * abs(float(E[0])))


@pytest.mark.slow  # 7-12 s of compile: the full suite runs it, the fast subset (<= 3 min) does not
def test_gradients_with_respect_to_fluid_and_tendon_parameters(files):
    _, model, _ = files
    names = ["fluid.density", "fluid.viscosity", "tendon.T.stiffness", "tendon.T.damping"]
    x0 = jnp.asarray([SPEC["rho"], SPEC["beta"], SPEC["k"], SPEC["c"]])
    q = ds.neutral_configuration(model).at[7].set(0.3)
    v = jnp.asarray([0.5, -1.0, 0.3, 1.0, 0.4, -0.2, 2.0, -1.5])

    def f(x):
        m = ds.set_params(model, dict(zip(names, x)))
        return ds.forward_dynamics(m, q, v, jnp.zeros(m.nv))

    J = np.asarray(jax.jacfwd(f)(x0))
    for i in range(4):  # v̇ is linear in each of them: a large step has no truncation error
        h = 1e-2 * float(x0[i])
        e = jnp.zeros(4).at[i].set(h)
        fd = (np.asarray(f(x0 + e)) - np.asarray(f(x0 - e))) / (2 * h)
        np.testing.assert_allclose(J[:, i], fd, rtol=1e-9, atol=1e-12 * np.abs(fd).max())


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_forward_dynamics_derivatives_with_springs_away_from_rest():
    """``∂v̇/∂τ = M⁻¹`` with joint springs stretched: the implicit-function derivatives apply
    ``M⁻¹`` by a forward pass at rest, which must not feel the springs (it did: off by 50×)."""
    xml = """<mujoco><worldbody><body><joint name="a" axis="0 1 0" stiffness="50"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" mass="1"/><body pos=".3 0 0">
    <joint name="b" axis="0 1 0" stiffness="20" springref="0.2"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" mass="1"/></body></body></worldbody></mujoco>"""
    m = ds.load_mjcf(xml)
    q, v = jnp.asarray([0.7, -0.4]), jnp.asarray([0.3, 0.1])
    J = jax.jacfwd(lambda tau: ds.forward_dynamics(m, q, v, tau))(jnp.zeros(2))
    np.testing.assert_allclose(J, np.linalg.inv(np.asarray(ds.mass_matrix(m, q))), rtol=1e-12)


def test_refusals():
    base = XML.format(**SPEC)
    for old, new, msg in (
        ('viscosity="0.02"', 'viscosity="0.02" wind="1 0 0"', "wind"),
        ('size=".02" mass=".2"/>', 'size=".02" mass=".2" fluidshape="ellipsoid"/>', "ellipsoid fluid model"),
        ('damping="0.2">', 'damping="0.2" springlength="0.1 0.3">', "deadband"),
        ('damping="0.2">', 'damping="0.2" frictionloss="1">', "frictionloss"),
    ):
        assert old in base, old
        with pytest.raises(ModelError, match=msg):
            ds.load_mjcf(base.replace(old, new))
    model = ds.load_mjcf(base)
    with pytest.raises(ValueError, match="default dynamics only"):
        ds.System(model, dynamics=ds.dynamics.ABA())
