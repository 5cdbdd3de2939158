"""MJCF import: refusals (each names its element), conventions, MuJoCo-compiler semantics
(checked against ``from_mjmodel`` of MuJoCo's own compiled model) and state conversions."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.io import from_mjmodel, from_mujoco, load_mjcf, to_mujoco
from diffsim.model import ModelError
from io_peers import assert_same_model

try:
    import mujoco
except ImportError:  # the refusal and convention tests do not need MuJoCo
    mujoco = None
needs_mujoco = pytest.mark.skipif(mujoco is None, reason="mujoco is not installed")

ROOT = Path(__file__).resolve().parents[2]
DUAL_ARM = ROOT / "diffsim" / "scenarios" / "data" / "seed000_dual_arm.xml"
INERTIAL = '<inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 0.1"/>'


@pytest.fixture(autouse=True)
def _mujoco_log_in_tmp(tmp_path, monkeypatch):
    """MuJoCo writes compiler warnings (e.g. 'settotalmass is deprecated') to MUJOCO_LOG.TXT
    in the working directory: keep it out of the repository."""
    monkeypatch.chdir(tmp_path)


def mjcf(joint='type="hinge"', body="", inner="", top="", after=""):
    """A one-body model with joint ``j`` in body ``b``, optionally spoilt by the arguments."""
    return (
        f"<mujoco>{top}\n<worldbody>\n"
        f'<body name="b" {body}>\n<joint name="j" {joint}/>\n{INERTIAL}\n{inner}\n</body>\n'
        f"</worldbody>\n{after}</mujoco>"
    )


def check_against_mujoco(xml):
    """load_mjcf(xml) equals the conversion of MuJoCo's compiled model."""
    model = load_mjcf(xml)
    assert_same_model(model, from_mjmodel(mujoco.MjModel.from_xml_string(xml)))
    return model


# --------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------

REFUSED = {
    "tendon-frictionloss": (mjcf(after='<tendon><fixed name="t1" frictionloss="2"><joint joint="j" coef="1"/></fixed></tendon>'),
                            ["<fixed name='t1'>", "tendon frictionloss"]),
    "tendon-limits": (mjcf(after='<tendon><fixed name="t1" range="0 1"><joint joint="j" coef="1"/></fixed></tendon>'),
                      ["<fixed name='t1'>", "length limits"]),
    "equality": (mjcf(after='<equality><joint name="e1" joint1="j"/></equality>'),
                 ["<joint name='e1'>", "equality"]),
    "stiffness-polynomial": (mjcf('type="hinge" stiffness="10 1"'), ["<joint name='j'>", "polynomial stiffness"]),
    "stiffness-ball": (mjcf('type="ball" stiffness="10"'), ["<joint name='j'>", "ball joint"]),
    "frictionloss-negative": (mjcf('type="slide" frictionloss="-0.1"'), ["<joint name='j'>", "frictionloss"]),
    "frictionloss-free": (mjcf('type="free" frictionloss="0.1"'), ["<joint name='j'>", "free joint"]),
    "springdamper": (mjcf('type="ball" springdamper="0.1 1"'), ["<joint name='j'>", "springdamper"]),
    "damping-polynomial": (mjcf('damping="1 2"'), ["<joint name='j'>", "polynomial"]),
    "joint-type": (mjcf('type="universal"'), ["<joint name='j'>", "unknown joint type"]),
    "composite": (mjcf(inner='<composite type="particle" count="2 2 1" spacing="0.1"/>'), ["<composite>", "composite"]),
    "flexcomp": (mjcf(inner='<flexcomp name="cloth" type="grid" count="3 3 1" dim="2"/>'), ["<flexcomp name='cloth'>"]),
    "include": (mjcf(top='<include file="other.xml"/>'), ["<include>", "cannot read included file"]),
    "replicate": (mjcf(inner='<replicate count="2" offset="1 0 0"><geom size="0.1"/></replicate>'), ["<replicate>"]),
    "plugin": (mjcf(inner='<plugin plugin="mujoco.elasticity.cable"/>'), ["<plugin>"]),
    "gravcomp": (mjcf(body='gravcomp="1"'), ["<body name='b'>", "gravcomp"]),
    "wind": (mjcf(top='<option density="1.2" wind="1 0 0"/>'), ["<option>", "wind"]),
    "mesh-inertia": (
        "<mujoco><asset><mesh name='m' vertex='0 0 0 1 0 0 0 1 0 0 0 1'/></asset><worldbody>"
        "<body name='b'><joint/><geom name='g' type='mesh' mesh='m'/></body></worldbody></mujoco>",
        ["<geom name='g'>", "mesh"],
    ),
    "free-not-root": (
        f"<mujoco><worldbody><body name='a'><joint/>{INERTIAL}<body name='c'><freejoint name='f'/>{INERTIAL}"
        "</body></body></worldbody></mujoco>",
        ["<freejoint name='f'>", "free joints"],
    ),
    "unknown-element": (mjcf(inner='<weld body1="b"/>'), ["<weld>"]),
    "two-orientations": (mjcf(body='euler="0 0 0" zaxis="0 0 1"'), ["<body name='b'>", "only one orientation"]),
    "fullinertia-and-quat": (
        "<mujoco><worldbody><body name='b'><joint/><inertial pos='0 0 0' mass='1' quat='1 0 0 0' "
        "fullinertia='1 1 1 0 0 0'/></body></worldbody></mujoco>",
        ["<inertial>", "fullinertia"],
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_name_the_element(name):
    xml, needles = REFUSED[name]
    with pytest.raises(ModelError) as e:
        load_mjcf(xml)
    msg = str(e.value)
    for needle in needles:
        assert needle in msg, msg
    assert "line " in msg, msg


@needs_mujoco
def test_refusal_template_itself_loads():
    """The refusal cases differ from a valid model only in the offending element."""
    model = check_against_mujoco(mjcf())
    assert model.topology.body_names == ("b",)
    # an unlimited joint may keep its range; a geom-free body with an <inertial> is fine
    check_against_mujoco(mjcf('limited="false" range="-1 1"'))
    check_against_mujoco(mjcf('range="-1 1" limited="false"', top='<compiler autolimits="false"/>'))


def test_builder_errors_name_the_body():
    xml = "<mujoco><worldbody><body name='bad'><joint/><inertial pos='0 0 0' mass='1' diaginertia='1 1 5'/></body></worldbody></mujoco>"
    with pytest.raises(ModelError, match="'bad'.*triangle"):
        load_mjcf(xml)
    xml = "<mujoco><worldbody><body name='empty'><joint/></body></worldbody></mujoco>"
    with pytest.raises(ModelError, match="'empty'.*zero mass"):
        load_mjcf(xml)


def test_malformed_xml_and_missing_file(tmp_path):
    with pytest.raises(ModelError, match="malformed XML.*line 2"):
        load_mjcf("<mujoco>\n<worldbody></mujoco>")
    with pytest.raises(ModelError, match="cannot read"):
        load_mjcf(tmp_path / "missing.xml")
    with pytest.raises(ModelError, match="<mujoco>"):
        load_mjcf("<robot/>")


@needs_mujoco
@pytest.mark.parametrize(
    "xml, needle",
    [
        (mjcf(after='<tendon><fixed name="t1" frictionloss="1"><joint joint="j" coef="1"/></fixed></tendon>'), "tendon 't1' (id 0): tendons with"),
        (mjcf(after='<equality><joint name="e1" joint1="j"/></equality>'), "equality"),
        (mjcf('type="ball" stiffness="10"'), "joint 'j' (id 0): a spring (stiffness) on a ball joint"),
        (mjcf(body='gravcomp="1"'), "body 'b' (id 1): gravity compensation"),
    ],
)
def test_from_mjmodel_refusals(xml, needle):
    with pytest.raises(ModelError, match="MjModel") as e:
        from_mjmodel(mujoco.MjModel.from_xml_string(xml))
    assert needle in str(e.value)


# --------------------------------------------------------------------------------------
# conventions
# --------------------------------------------------------------------------------------


@needs_mujoco
def test_several_joints_insert_massless_bodies_before_the_real_one():
    xml = (
        "<mujoco><option gravity='0 0 -3'/><worldbody>"
        "<body name='arm' pos='1 0 0' euler='0 0 90'>"
        "  <joint name='a' pos='0.1 0 0' axis='0 0 2'/><joint name='b' type='slide' pos='0 0.2 0' axis='1 0 0'/>"
        "  <joint pos='0 0 0.3' axis='0 1 0'/>"
        "  <inertial pos='0.5 0.5 0.5' mass='2' diaginertia='0.1 0.2 0.25'/><site name='tip' pos='1 0 0'/>"
        "  <body pos='0 0 1'><inertial pos='0 0 0' mass='1' diaginertia='0.1 0.1 0.1'/><site/></body>"
        "</body></worldbody></mujoco>"
    )
    model = check_against_mujoco(xml)
    t = model.topology
    assert t.body_names == ("arm__a", "arm__b", "arm", "body2")
    assert t.joint_names == ("a", "b", "arm", "body2")
    J = ds.JointType
    assert t.joint_types == (J.REVOLUTE, J.PRISMATIC, J.REVOLUTE, J.FIXED)
    assert t.parent == (-1, 0, 1, 2)
    assert t.site_names == ("tip", "site1")
    np.testing.assert_allclose(model.mass, [0, 0, 2, 1])
    Rz = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
    np.testing.assert_allclose(model.tree_pos[0], [1, 0, 0] + Rz @ [0.1, 0, 0], atol=1e-15)  # at joint a's anchor
    np.testing.assert_allclose(model.tree_pos[1], [-0.1, 0.2, 0], atol=1e-15)
    np.testing.assert_allclose(model.tree_pos[2], [0, -0.2, 0.3], atol=1e-15)
    np.testing.assert_allclose(model.tree_pos[3], [0, 0, 0.7], atol=1e-15)  # child placement shifted by -p
    np.testing.assert_allclose(model.com[2], [0.5, 0.5, 0.2], atol=1e-15)
    np.testing.assert_allclose(model.site_pos[0], [1, 0, -0.3], atol=1e-15)
    np.testing.assert_allclose(model.axis[0], [0, 0, 1])
    np.testing.assert_allclose(model.gravity, [0, 0, -3])


@needs_mujoco
def test_free_joint_gets_identity_placement_and_unique_names():
    xml = (
        "<mujoco><worldbody><body name='x' pos='1 2 3' euler='10 20 30'><freejoint/>" + INERTIAL +
        "<body name='x__j1'><joint name='x' axis='1 0 0'/><joint/>" + INERTIAL + "</body></body></worldbody></mujoco>"
    )
    model = check_against_mujoco(xml)
    t = model.topology
    assert t.joint_types[0] is ds.JointType.FREE
    np.testing.assert_allclose(model.tree_pos[0], 0)
    np.testing.assert_allclose(model.tree_rot[0], np.eye(3))
    assert len(set(t.body_names)) == len(t.body_names) and len(set(t.joint_names)) == len(t.joint_names)
    assert t.body_names[-1] == "x__j1" and t.joint_names[-2] == "x"


MJCF_SEMANTICS = {
    "defaults-childclass": """
<mujoco>
  <default>
    <joint damping="0.5" armature="0.1" axis="1 0 0"/>
    <geom density="500"/>
    <default class="a"><joint damping="2" type="slide"/><geom type="box" size="0.1 0.2 0.3"/>
      <default class="aa"><joint armature="3"/><site pos="0.1 0.2 0.3"/></default>
    </default>
  </default>
  <worldbody>
    <body name="r" childclass="a"><freejoint/><geom/>
      <body name="c1" pos="0 0 1"><joint/><joint class="main" pos="0 0.1 0"/><geom class="main" size="0.1"/></body>
      <body name="c2" pos="1 0 0" childclass="aa"><joint damping="7"/><geom mass="3"/><site name="s"/></body>
    </body>
  </worldbody>
</mujoco>""",
    "orientations-degree": """
<mujoco>
  <worldbody>
    <body name="a" quat="1 2 3 4"><joint axis="1 1 0"/><inertial pos="0.1 0 0" mass="1" diaginertia="0.1 0.2 0.25" euler="10 20 30"/>
      <body name="b" axisangle="1 1 1 120" pos="0 1 0"><joint type="ball" pos="0.1 0.1 0"/>
        <inertial pos="0 0 0.1" mass="1" diaginertia="0.1 0.2 0.25" xyaxes="1 1 0 -1 1 1"/>
        <body name="c" xyaxes="0 1 0 -1 0 0.2"><joint type="slide" axis="0 1 1"/>
          <inertial pos="0 0 0.1" mass="1" diaginertia="0.1 0.2 0.25" zaxis="1 2 3"/>
          <body name="d" zaxis="0 0 -1"><joint/><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.2 0.25" axisangle="0 1 0 45"/></body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>""",
    "euler-radian-extrinsic": """
<mujoco>
  <compiler angle="radian" eulerseq="ZYX"/>
  <worldbody>
    <body name="a" euler="0.3 -1.2 2.0"><joint axis="1 0 0"/><inertial pos="0 0 0" mass="1" diaginertia="0.1 0.2 0.25" euler="1 2 3"/>
      <body name="b" axisangle="0 1 1 2.5" pos="1 0 0"><joint/><geom type="capsule" size="0.1 0.3" euler="0.5 0 1"/></body>
    </body>
  </worldbody>
</mujoco>""",
    "euler-intrinsic-zxz": """
<mujoco>
  <compiler eulerseq="zxz"/>
  <worldbody><body name="a" euler="30 60 -45"><joint axis="0 1 0"/><geom type="ellipsoid" size="0.1 0.2 0.3" euler="10 80 10"/></body></worldbody>
</mujoco>""",
    "geoms": """
<mujoco>
  <worldbody>
    <body name="g1"><joint/>
      <geom type="sphere" size="0.1" pos="0.1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0.2 0.1" size="0.05" density="300"/>
      <geom type="cylinder" size="0.05 0.2" pos="0 0.2 0" quat="1 1 0 0" mass="0.7"/>
      <geom type="box" fromto="0 0 0 0 0 0.4" size="0.03"/>
      <geom type="ellipsoid" size="0.1 0.05 0.02" pos="0 0 -0.2" euler="10 20 30"/>
      <geom type="cylinder" fromto="0 0 0 -0.2 0 0" size="0.04"/>
      <geom type="ellipsoid" fromto="0 0 0 0 0.3 0" size="0.05"/>
      <geom type="sphere" size="0.3" group="4" mass="0"/>
      <body name="g2" pos="0 0 -1"><joint type="slide"/><geom type="capsule" size="0.1 0.2" pos="0.1 0.2 0.3" euler="40 50 60"/></body>
      <body name="g3" pos="0 1 0"><joint type="ball"/><inertial pos="0 0 0" mass="5" diaginertia="1 1 1"/><geom type="box" size="1 1 1"/></body>
    </body>
  </worldbody>
</mujoco>""",
    "partial-size-defaults": """
<mujoco>
  <default><geom type="capsule" size="0.1 0.3 0.2"/><default class="b"><geom type="box"/></default></default>
  <worldbody><body name="a"><joint/><geom size="0.05"/><geom class="b" size="0.2"/><geom type="cylinder"/></body></worldbody>
</mujoco>""",
    "inertiafromgeom-true": """
<mujoco>
  <compiler inertiafromgeom="true" inertiagrouprange="0 2"/>
  <worldbody>
    <body name="a"><joint/><inertial pos="0 0 0" mass="5" diaginertia="1 1 1"/><geom type="box" size="0.1 0.2 0.3"/>
      <geom type="sphere" size="0.5" group="3"/></body>
  </worldbody>
</mujoco>""",
    "inertiafromgeom-false": """
<mujoco>
  <compiler inertiafromgeom="false"/>
  <worldbody>
    <body name="a"><joint/><inertial pos="0 0 0" mass="5" diaginertia="1 1 1"/>
      <body name="nomass" pos="1 0 0"><geom type="box" size="0.1 0.2 0.3"/></body></body>
  </worldbody>
</mujoco>""",
    "bounds-balance-totalmass": """
<mujoco>
  <compiler boundmass="0.5" boundinertia="0.01" balanceinertia="true" settotalmass="10"/>
  <worldbody>
    <body name="a"><joint/><inertial pos="0 0 0" mass="0.1" diaginertia="0.001 0.2 0.3"/>
      <body name="b" pos="1 0 0"><joint type="ball"/><inertial pos="0 0.1 0" mass="2" fullinertia="0.1 0.1 0.5 0 0 0"/></body></body>
  </worldbody>
</mujoco>""",
    "frames": """
<mujoco>
  <default><default class="f"><joint damping="3"/><site pos="0 0 0.5"/></default></default>
  <worldbody>
    <frame pos="1 0 0" euler="0 0 90">
      <body name="a" pos="0 1 0"><joint/><geom type="box" size="0.1 0.2 0.3"/>
        <frame pos="0 0 1" axisangle="1 0 0 30" childclass="f">
          <joint type="slide" pos="0.1 0 0" axis="0 1 0"/>
          <site name="fs"/>
          <geom type="sphere" size="0.1" pos="0.2 0 0"/>
          <frame pos="0.5 0 0"><body name="b" euler="0 30 0"><joint/><geom type="capsule" size="0.1 0.2"/></body></frame>
        </frame>
      </body>
    </frame>
  </worldbody>
</mujoco>""",
    "options-flags-mocap": """
<mujoco>
  <option gravity="1 2 -3"><flag damper="disable" contact="disable"/></option>
  <worldbody>
    <body name="m" mocap="true" pos="0 0 1"><geom size="0.1"/></body>
    <body name="a"><joint damping="3" armature="0.2"/><geom size="0.1"/><site name="s" fromto="0 0 0 1 1 0" type="capsule" size="0.01"/></body>
  </worldbody>
</mujoco>""",
}


@needs_mujoco
@pytest.mark.parametrize("name", sorted(MJCF_SEMANTICS))
def test_load_mjcf_matches_mujoco_compiler(name):
    model = check_against_mujoco(MJCF_SEMANTICS[name])
    assert np.all(np.asarray(model.mass) >= 0)


def test_semantics_cases_really_exercise_their_feature():
    """Guards that the comparison above compares something non-trivial."""
    m = load_mjcf(MJCF_SEMANTICS["defaults-childclass"])
    t = m.topology
    assert t.body_names == ("r", "c1__j0", "c1", "c2")
    assert t.joint_names == ("r", "c1__j0", "c1", "c2")
    assert t.joint_types[1:3] == (ds.JointType.PRISMATIC, ds.JointType.REVOLUTE)  # class "a", then "main"
    assert t.joint_types[t.body_index("c2")] is ds.JointType.PRISMATIC  # type from class "a"
    np.testing.assert_allclose(m.damping[t.v_slice(t.body_index("c2"))], 7.0)
    np.testing.assert_allclose(m.armature[t.v_slice(t.body_index("c2"))], 3.0)
    np.testing.assert_allclose(m.mass[t.body_index("c2")], 3.0)
    assert float(load_mjcf(MJCF_SEMANTICS["options-flags-mocap"]).damping.max()) == 0.0
    g = load_mjcf(MJCF_SEMANTICS["options-flags-mocap"]).gravity
    np.testing.assert_allclose(g, [1, 2, -3])
    off = load_mjcf(mjcf(top='<option gravity="0 0 -5"><flag gravity="disable"/></option>'))
    np.testing.assert_allclose(off.gravity, 0)
    assert float(load_mjcf(MJCF_SEMANTICS["bounds-balance-totalmass"]).mass.sum()) == pytest.approx(10.0)
    nomass = load_mjcf(MJCF_SEMANTICS["inertiafromgeom-false"])
    assert float(nomass.mass[nomass.topology.body_index("nomass")]) == 0.0


def test_path_and_string_give_the_same_model(tmp_path):
    xml = MJCF_SEMANTICS["geoms"]
    p = tmp_path / "m.xml"
    p.write_text(xml)
    assert_same_model(load_mjcf(p), load_mjcf(str(p)), atol=0)
    assert_same_model(load_mjcf(p), load_mjcf(xml), atol=0)


# --------------------------------------------------------------------------------------
# state conversions
# --------------------------------------------------------------------------------------


def test_to_from_mujoco_round_trip_under_jit():
    model = load_mjcf(DUAL_ARM)
    key = jax.random.PRNGKey(3)
    q = ds.random_configuration(model, key)
    v = jax.random.normal(jax.random.PRNGKey(4), (model.nv,))
    to_j = jax.jit(lambda q, v: to_mujoco(model, q, v))
    from_j = jax.jit(lambda q, v: from_mujoco(model, q, v))
    qpos, qvel = to_j(q, v)
    q2, v2 = from_j(qpos, qvel)
    np.testing.assert_array_equal(qpos, q)
    np.testing.assert_allclose(q2, q, atol=0)
    np.testing.assert_allclose(v2, v, atol=1e-15)
    assert float(jnp.abs(qvel[:3] - v[:3]).max()) > 1e-3  # the free linear velocity was rotated
    np.testing.assert_array_equal(qvel[3:], v[3:])


@needs_mujoco
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_to_mujoco_velocities_mean_what_mujoco_means():
    """World velocities of sites from MuJoCo (``mj_objectVelocity``) at ``to_mujoco``'s qvel equal
    diffsim's ``point_velocity`` at ``v``."""
    model = load_mjcf(DUAL_ARM)
    mm = mujoco.MjModel.from_xml_path(str(DUAL_ARM))
    md = mujoco.MjData(mm)
    q = ds.random_configuration(model, jax.random.PRNGKey(7))
    v = jax.random.normal(jax.random.PRNGKey(8), (model.nv,))
    qpos, qvel = to_mujoco(model, q, v)
    md.qpos[:], md.qvel[:] = np.asarray(qpos), np.asarray(qvel)
    mujoco.mj_forward(mm, md)
    t = model.topology
    for s, name in enumerate(t.site_names):
        res = np.zeros(6)
        mujoco.mj_objectVelocity(mm, md, mujoco.mjtObj.mjOBJ_SITE, mm.site(name).id, res, 0)
        mine = ds.point_velocity(model, q, v, t.site_body[s], model.site_pos[s])
        np.testing.assert_allclose(np.asarray(mine), res[3:], atol=1e-12)


# --------------------------------------------------------------------------------------
# files as they ship (issue 18): includes, repeated defaults, free-joint limits, skins, data
# --------------------------------------------------------------------------------------


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@needs_mujoco
def test_include_is_relative_to_the_including_file(tmp_path):
    """main.xml includes parts/a.xml, which includes b.xml next to itself (MuJoCo resolves the
    nested path from the main file's directory, so b.xml is written in both places)."""
    body_b = '<mujoco><worldbody><body name="c" pos="0 0 0.3"><joint name="k" axis="1 0 0"/><geom size="0.1"/></body></worldbody></mujoco>'
    _write(tmp_path / "parts" / "b.xml", body_b)
    _write(tmp_path / "b.xml", body_b)
    _write(tmp_path / "parts" / "a.xml", '<mujoco><default><joint damping="0.3"/></default><include file="b.xml"/></mujoco>')
    main = _write(tmp_path / "main.xml", mjcf(top='<include file="parts/a.xml"/>'))
    model = load_mjcf(main)
    assert model.topology.body_names == ("c", "b")  # the included worldbody comes first
    np.testing.assert_allclose(model.damping, [0.3, 0.3])
    assert_same_model(model, from_mjmodel(mujoco.MjModel.from_xml_path(str(main))))


@needs_mujoco
def test_an_included_file_may_have_any_root_element(tmp_path):
    """MuJoCo drops the included file's root whatever its tag; older robot files wrap their
    fragments in ``<mujocoinclude>`` (they were refused: "must be <mujoco>")."""
    _write(tmp_path / "arm.xml", '<mujocoinclude><body name="c" pos="0 0 -0.3"><joint name="k" damping="0.2"/>'
           f'{INERTIAL}</body></mujocoinclude>')
    main = _write(tmp_path / "main.xml", mjcf(inner='<include file="arm.xml"/>'))
    model = load_mjcf(main)
    assert model.topology.body_names == ("b", "c")
    assert_same_model(model, from_mjmodel(mujoco.MjModel.from_xml_path(str(main))))


def test_include_errors_name_the_file_and_line(tmp_path):
    _write(tmp_path / "loop.xml", '<mujoco>\n<include file="loop.xml"/></mujoco>')
    with pytest.raises(ModelError, match=r"<include> \(loop.xml line 2\).*include cycle"):
        load_mjcf(_write(tmp_path / "m.xml", mjcf(top='<include file="loop.xml"/>')))
    _write(tmp_path / "robot.xml", "<robot/>")  # MuJoCo: "Empty include file"
    with pytest.raises(ModelError, match=r"<include> \(line 1\).*robot.xml' is empty \(no elements inside <robot>"):
        load_mjcf(_write(tmp_path / "m2.xml", mjcf(top='<include file="robot.xml"/>')))
    _write(tmp_path / "urdf.xml", '<robot>\n<link name="l"/></robot>')  # its elements are not MJCF's
    with pytest.raises(ModelError, match=r"<link name='l'> \(urdf.xml line 2\).*unrecognized element <link>"):
        load_mjcf(_write(tmp_path / "m4.xml", mjcf(top='<include file="urdf.xml"/>')))
    _write(tmp_path / "bad.xml", '<mujoco>\n<worldbody>\n<body name="x"><joint type="universal"/></body></worldbody></mujoco>')
    with pytest.raises(ModelError, match=r"<joint> \(bad.xml line 3\).*unknown joint type"):
        load_mjcf(_write(tmp_path / "m3.xml", mjcf(after='<include file="bad.xml"/>')))
    with pytest.raises(ModelError, match=r"<include> \(line 1\).*needs a file"):
        load_mjcf(mjcf(top="<include/>"))


@needs_mujoco
def test_repeated_default_blocks_are_merged():
    xml = mjcf('class="arm"', top='<default><joint damping="0.5"/><default class="arm"><joint armature="0.1"/></default></default>'
               '<default><joint armature="0.2"/><default class="hand"><joint damping="2"/></default></default>',
               inner='<body name="h" childclass="hand"><joint name="f"/><geom size="0.1"/></body>')
    model = check_against_mujoco(xml)
    np.testing.assert_allclose(model.damping, [0.5, 2.0])
    np.testing.assert_allclose(model.armature, [0.1, 0.2])
    with pytest.raises(ModelError, match=r"<default> \(line 1\): repeated default class 'arm'"):
        load_mjcf(mjcf(top='<default class="arm"/><default><default class="arm"/></default>'))


@needs_mujoco
def test_free_joint_limits_skin_and_data(recwarn):
    """What MjSpec.to_xml() writes for humanoid/quadruped: a free joint under a default with
    limited="true"; a <skin> (drawn only); limits, actuators and geoms kept as data."""
    xml = (
        '<mujoco><compiler angle="radian"/><default><joint limited="true" range="-1 2"/></default>'
        '<asset><mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>'
        '<worldbody><geom name="floor" type="plane" size="1 1 0.1"/>'
        '<body name="torso"><joint name="root" type="free"/><geom name="t" type="box" size="0.1 0.2 0.3" pos="0 0 0.1"/>'
        '<body name="arm" pos="0.2 0 0"><joint name="sh" axis="0 1 0" pos="0 0 0.05"/><site name="s1"/><site name="s2" pos="0.3 0 0"/>'
        '<geom name="a" type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>'
        '<geom name="skinmesh" type="mesh" mesh="m" mass="0" contype="0" conaffinity="0" group="6"/></body></body></worldbody>'
        '<deformable><skin name="s" vertex="0 0 0 1 0 0 0 1 0" face="0 1 2"><bone body="arm" bindpos="0 0 0" '
        'bindquat="1 0 0 0" vertid="0 1 2" vertweight="1 1 1"/></skin></deformable>'
        '<tendon><fixed name="tf"><joint joint="sh" coef="0.5"/></fixed><spatial name="ts"><site site="s1"/><site site="s2"/></spatial></tendon>'
        '<actuator><position name="p" joint="sh" kp="30" ctrlrange="-1 1"/><motor name="m" joint="sh" gear="2"/></actuator>'
        '</mujoco>'
    )
    model = check_against_mujoco(xml)
    assert any("kept as data" in str(w.message) for w in recwarn)
    mm = mujoco.MjModel.from_xml_string(xml)
    ref = from_mjmodel(mm)
    assert model.joint_limits == ref.joint_limits == (ds.model.model.JointLimit("sh", -1.0, 2.0, True),)
    by_name = {g.name: g for g in model.geoms}
    for g in ref.geoms:  # MuJoCo's compiled geoms (sizes, frames) = the parser's
        mine = by_name[g.name]
        assert (mine.body, mine.type) == (g.body, g.type)
        if g.type == "mesh":  # MuJoCo re-centres a mesh geom on the mesh's inertial frame; the file's frame is kept
            continue
        np.testing.assert_allclose(mine.pos, g.pos, atol=1e-12)
        np.testing.assert_allclose(np.abs(np.dot(mine.quat, g.quat)), 1.0, atol=1e-12)
        if g.type != "mesh":
            np.testing.assert_allclose(mine.size, g.size, atol=1e-12)
    assert by_name["floor"].body is None and by_name["skinmesh"].mesh == "m"
    assert model.tendons == ref.tendons == (ds.model.model.Tendon("tf", "fixed", (("sh", 0.5),)),
                                            ds.model.model.Tendon("ts", "spatial", (), ("s1", "s2")))
    np.testing.assert_allclose(by_name["a"].pos, [0.15, 0, -0.05], atol=1e-12)  # joint anchor shift applied
    p, m = model.actuators
    assert (p.kind, p.target, p.ctrlrange, p.gainprm, p.biasprm) == ("position", "sh", (-1.0, 1.0), (30.0, 0, 0), (0, -30.0, -0.0))
    assert (m.kind, m.gear[0], m.ctrlrange) == ("motor", 2.0, None)
    for mine, theirs in zip(model.actuators, ref.actuators):  # the same numbers as MuJoCo compiled
        assert (mine.name, mine.trntype, mine.target, mine.gear, mine.ctrlrange) == (theirs.name, theirs.trntype, theirs.target, theirs.gear, theirs.ctrlrange)
        np.testing.assert_allclose(mine.gainprm, theirs.gainprm)
        np.testing.assert_allclose(mine.biasprm, theirs.biasprm)
