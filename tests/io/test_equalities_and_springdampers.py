"""MJCF equality constraints that couple two joints linearly (as mimic joints) and
``springdamper`` joints, checked against MuJoCo on small files written here: the coupled
accelerations against MuJoCo's own mass matrix and forces projected onto the coupling (Gauss's
principle), the compiled stiffness and damping against MuJoCo's compiler, and the refusals."""

import sys
from pathlib import Path

import numpy as np
import pytest

import diffsim as ds
from diffsim.model import ModelError

mujoco = pytest.importorskip("mujoco")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from io_peers import assert_same_model, mujoco_coupled_forward, random_state, rel_err  # noqa: E402


def arm(equality: str, extra_joint: str = "", tendon: str = "") -> str:
    """A floating torso with a 3-joint arm (one joint with a ref) and the given equality."""
    return f"""<mujoco><option gravity="0 0 -9.81"/>
<worldbody><body name="torso" pos="0 0 1"><freejoint/><geom type="box" size=".2 .1 .05" mass="3"/>
  <body name="a" pos=".2 0 0"><joint name="j1" axis="0 1 0" damping="0.3" armature="0.02"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" mass="1"/>
    <body name="b" pos=".3 0 0"><joint name="j2" axis="0 0 1" ref="20" stiffness="2" springref="10"/>
      <geom type="capsule" fromto="0 0 0 .25 0 0" size=".03" mass=".7"/>
      <body name="c" pos=".25 0 0"><joint name="j3" axis="1 0 0" {extra_joint}/>
        <geom type="box" size=".05 .04 .03" pos=".05 0 0" mass=".4"/></body></body></body></body></worldbody>
{tendon}<equality>{equality}</equality></mujoco>"""


CASES = {
    "joint": arm('<joint joint1="j3" joint2="j1" polycoef="0.1 -0.7 0 0 0"/>'),
    "joint, refs": arm('<joint joint1="j2" joint2="j3" polycoef="0.05 1.5 0 0 0"/>', 'ref="-15"'),
    "tendon": arm('<tendon tendon1="T" polycoef="0.02 0 0 0 0"/>',
                  tendon='<tendon><fixed name="T"><joint joint="j1" coef="-.4"/><joint joint="j3" coef=".8"/></fixed></tendon>'),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_linear_couplings_load_as_mimics_and_match_mujoco_projected(case, tmp_path):
    """Both readers give the same model; at random coupled states the accelerations equal
    MuJoCo's unconstrained ``qacc`` projected onto the coupling with MuJoCo's own ``M`` (the
    hard constraint its soft equality approximates) to round-off; the coupling's offset uses
    the joints' values at qpos0 as MuJoCo's equality does (checked: MuJoCo's constraint residual
    ``efc_pos`` is zero at the coupled state)."""
    path = tmp_path / "arm.xml"
    path.write_text(CASES[case])
    model = ds.load_mjcf(path)
    mm = mujoco.MjModel.from_xml_path(str(path))
    assert_same_model(model, ds.from_mjmodel(mm))
    assert model.mimic is not None and len(model.mimic) == 1
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(3)
    off = int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    for _ in range(3):
        qpos, qvel = random_state(mm, rng)
        mm.opt.disableflags |= off
        a, a_mj = mujoco_coupled_forward(mujoco, mm, md, model, qpos, qvel, rng.normal(size=mm.nv))
        assert rel_err(a, a_mj) < 1e-12
        mm.opt.disableflags &= ~off
        mujoco.mj_forward(mm, md)
        assert md.nefc >= 1 and abs(md.efc_pos[0]) < 1e-12  # MuJoCo's equality holds at the coupled state


def test_unsupported_equalities_are_refused_with_the_element_and_line(tmp_path):
    cases = {
        '<connect body1="a" body2="c" anchor="0 0 0"/>': "connect equality constraints are not supported",
        '<joint joint1="j3"/>': "without joint2 fixes the joint",
        '<joint joint1="j3" joint2="j1" polycoef="0 1 0.5 0 0"/>': "polynomial coupling",
    }
    for eq, msg in cases.items():
        with pytest.raises(ModelError, match=msg) as e:
            ds.load_mjcf(arm(eq))
        assert "line " in str(e.value)
    three = '<tendon><fixed name="T"><joint joint="j1" coef="1"/><joint joint="j2" coef="1"/><joint joint="j3" coef="1"/></fixed></tendon>'
    with pytest.raises(ModelError, match="fixed tendon over two joints"):
        ds.load_mjcf(arm('<tendon tendon1="T"/>', tendon=three))
    assert ds.load_mjcf(arm('<connect body1="a" body2="c" anchor="0 0 0" active="false"/>')).mimic is None


def test_springdamper_sets_stiffness_and_damping_as_mujocos_compiler_does(tmp_path):
    """``springdamper = (τ, ζ)``: stiffness ``1/(τ² ζ² w)`` and damping ``2/(τ w)`` with
    ``w = (M⁻¹)_jj`` at qpos0 (joints at their ref, armature included) — equal to MuJoCo's
    compiled ``jnt_stiffness`` / ``dof_damping`` to round-off, on two joints of a floating arm
    (their inverse inertias coupled through the base and the other links)."""
    xml = arm("", 'springdamper="0.15 0.7"').replace('<equality></equality>', "").replace(
        'ref="20" stiffness="2" springref="10"', 'ref="20" springdamper="0.3 1.2" armature="0.05"')
    path = tmp_path / "sd.xml"
    path.write_text(xml)
    model = ds.load_mjcf(path)
    mm = mujoco.MjModel.from_xml_path(str(path))
    assert_same_model(model, ds.from_mjmodel(mm), atol=1e-9)
    np.testing.assert_allclose(np.asarray(model.stiffness)[6:], mm.jnt_stiffness[1:], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(model.damping)[6:], mm.dof_damping[6:], rtol=1e-12)
    assert mm.jnt_stiffness[2] > 0 and mm.dof_damping[8] > 0
    with pytest.raises(ModelError, match="two positive numbers"):
        ds.load_mjcf(arm("", 'springdamper="0.15 -1"').replace('<equality></equality>', ""))
