"""URDF import: a small arm against the same arm built by hand and against Pinocchio, plus
the refusals (each names its element)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.io import load_urdf
from diffsim.io.xml import UnsimulatedWarning
from diffsim.model import ModelBuilder, ModelError
from io_peers import pin_maps

ARM = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base_link">
    <inertial><origin xyz="0.01 0 0.05" rpy="0 0 0"/><mass value="4.0"/>
      <inertia ixx="0.05" ixy="0.001" ixz="0" iyy="0.06" iyz="0.002" izz="0.04"/></inertial>
    <visual><geometry><box size="0.2 0.2 0.1"/></geometry></visual>
    <collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision>
  </link>
  <link name="link1">
    <inertial><origin xyz="0 0.02 0.15" rpy="0.1 -0.2 0.3"/><mass value="2.0"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.025" iyz="0" izz="0.01"/></inertial>
  </link>
  <link name="link2">
    <inertial><origin xyz="0.2 0 0" rpy="0 0.5 0"/><mass value="1.5"/>
      <inertia ixx="0.004" ixy="0.0005" ixz="0.0002" iyy="0.02" iyz="0" izz="0.021"/></inertial>
  </link>
  <link name="link3">
    <inertial><origin xyz="0 0 0.1"/><mass value="0.8"/>
      <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.001"/></inertial>
  </link>
  <link name="tool">
    <inertial><origin xyz="0 0 0.03"/><mass value="0.3"/>
      <inertia ixx="0.0002" ixy="0" ixz="0" iyy="0.0002" iyz="0" izz="0.0001"/></inertial>
  </link>
  <link name="side">
    <inertial><origin xyz="0.05 0 0"/><mass value="0.5"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
  <link name="marker"/>
  <joint name="shoulder" type="revolute">
    <parent link="base_link"/><child link="link1"/>
    <origin xyz="0 0 0.1" rpy="0 0 0.4"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/>
    <dynamics damping="0.1"/>
  </joint>
  <joint name="elbow" type="continuous">
    <parent link="link1"/><child link="link2"/>
    <origin xyz="0 0.05 0.3" rpy="0.3 0.2 -0.1"/><axis xyz="0 2 2"/>
    <dynamics damping="0.05" friction="0"/>
  </joint>
  <joint name="slider" type="prismatic">
    <parent link="link2"/><child link="link3"/>
    <origin xyz="0.4 0 0" rpy="0 1.5707963267948966 0"/><axis xyz="1 0 0.5"/>
    <limit lower="0" upper="0.2" effort="10" velocity="1"/>
  </joint>
  <joint name="flange" type="fixed">
    <parent link="link3"/><child link="tool"/>
    <origin xyz="0 0 0.2" rpy="0 0 1"/>
  </joint>
  <joint name="side_joint" type="revolute">
    <parent link="link1"/><child link="side"/>
    <origin xyz="0.1 0 0.1" rpy="1 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
    <safety_controller soft_lower_limit="-0.9" soft_upper_limit="0.9" k_velocity="1"/>
  </joint>
  <joint name="marker_joint" type="fixed">
    <parent link="tool"/><child link="marker"/><origin xyz="0 0 0.05"/>
  </joint>
  <transmission name="t"><type>transmission_interface/SimpleTransmission</type></transmission>
</robot>
"""


def _R(rpy):
    """URDF rpy built from axis-angle rotations (independent of the loader's formula)."""
    r, p, y = rpy
    rot = lambda axis, a: np.asarray(ds.spatial.rot_axis_angle(jnp.array(axis, float), a))  # noqa: E731
    return rot([0, 0, 1], y) @ rot([0, 1, 0], p) @ rot([1, 0, 0], r)


def _I(ixx, ixy, ixz, iyy, iyz, izz, rpy=(0, 0, 0)):
    R = _R(rpy)
    return R @ np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) @ R.T


def arm_by_hand(floating_base=False):
    b = ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("base_link", joint="free" if floating_base else "fixed",
               joint_name="root_joint" if floating_base else "base_link",
               mass=4.0, com=[0.01, 0, 0.05], inertia=_I(0.05, 0.001, 0, 0.06, 0.002, 0.04))
    b.add_body("link1", "base_link", joint="revolute", joint_name="shoulder", axis=[0, 0, 1], pos=[0, 0, 0.1],
               rot=_R([0, 0, 0.4]), mass=2.0, com=[0, 0.02, 0.15], inertia=_I(0.02, 0, 0, 0.025, 0, 0.01, (0.1, -0.2, 0.3)),
               damping=0.1)
    b.add_body("link2", "link1", joint="revolute", joint_name="elbow", axis=np.array([0, 1, 1]) / np.sqrt(2),
               pos=[0, 0.05, 0.3], rot=_R([0.3, 0.2, -0.1]), mass=1.5, com=[0.2, 0, 0],
               inertia=_I(0.004, 0.0005, 0.0002, 0.02, 0, 0.021, (0, 0.5, 0)), damping=0.05)
    b.add_body("link3", "link2", joint="prismatic", joint_name="slider", axis=np.array([1, 0, 0.5]) / np.sqrt(1.25),
               pos=[0.4, 0, 0], rot=_R([0, np.pi / 2, 0]), mass=0.8, com=[0, 0, 0.1],
               inertia=_I(0.003, 0, 0, 0.003, 0, 0.001))
    b.add_body("tool", "link3", joint="fixed", joint_name="flange", pos=[0, 0, 0.2], rot=_R([0, 0, 1]),
               mass=0.3, com=[0, 0, 0.03], inertia=_I(0.0002, 0, 0, 0.0002, 0, 0.0001))
    b.add_body("side", "link1", joint="revolute", joint_name="side_joint", axis=[1, 0, 0], pos=[0.1, 0, 0.1],
               rot=_R([1, 0, 0]), mass=0.5, com=[0.05, 0, 0], inertia=_I(0.001, 0, 0, 0.001, 0, 0.001))
    b.add_body("marker", "tool", joint="fixed", joint_name="marker_joint", pos=[0, 0, 0.05])
    return b.build()


@pytest.mark.parametrize("floating_base", [False, True])
def test_arm_equals_the_same_arm_built_by_hand(floating_base):
    a, b = load_urdf(ARM, floating_base=floating_base), arm_by_hand(floating_base)
    assert a.topology == b.topology
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=1e-14)


def test_limits_are_ignored_and_paths_load(tmp_path):
    no_limits = ARM
    for line in [l for l in ARM.splitlines() if "<limit" in l or "<safety" in l]:
        no_limits = no_limits.replace(line, "")
    p = tmp_path / "arm.urdf"
    p.write_text(no_limits)
    a, b = load_urdf(ARM), load_urdf(p)
    assert a.topology == b.topology
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# --------------------------------------------------------------------------------------
# against Pinocchio
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("floating_base", [False, True])
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_arm_matches_pinocchio(floating_base):
    pin = pytest.importorskip("pinocchio")
    model = load_urdf(ARM, floating_base=floating_base)
    pm = pin.buildModelFromXML(ARM, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromXML(ARM)
    pd = pm.createData()
    assert pm.nv == model.nv
    np.testing.assert_allclose(np.asarray(pm.gravity.linear), np.asarray(model.gravity))
    q_pin, perm = pin_maps(model, pm)
    rng = np.random.default_rng(1)
    worst = 0.0
    for k in range(3):
        q = ds.random_configuration(model, jax.random.PRNGKey(k))
        v = rng.normal(size=model.nv)
        tau = rng.normal(size=model.nv) * 5
        qp, vp, taup = q_pin(q), v[perm], tau[perm]
        M = np.asarray(ds.mass_matrix(model, q))[np.ix_(perm, perm)]
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        D = np.asarray(model.damping)[perm]
        a = np.asarray(ds.forward_dynamics(model, q, jnp.asarray(v), jnp.asarray(tau)))[perm]
        ap = pin.aba(pm, pd, qp, vp, taup - D * vp)  # pinocchio's ABA has no joint damping
        b = np.asarray(ds.inverse_dynamics(model, q, jnp.asarray(v), jnp.zeros(model.nv)))[perm]
        bp = pin.rnea(pm, pd, qp, vp, np.zeros(pm.nv)) + D * vp
        for mine, theirs in ((M, Mp), (a, ap), (b, bp)):
            worst = max(worst, np.abs(mine - theirs).max() / max(1.0, np.abs(theirs).max()))
    assert worst <= 1e-9, worst


PLANAR = """<robot name="p">
  <link name="a"><inertial><mass value="2"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link>
  <link name="b"><inertial><origin xyz="0.1 0.2 0.3" rpy="0.2 0.1 0"/><mass value="1"/>
    <inertia ixx="0.1" ixy="0.01" ixz="0" iyy="0.12" iyz="0" izz="0.15"/></inertial></link>
  <link name="c"><inertial><origin xyz="0.3 0 0"/><mass value="0.5"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <joint name="pl" type="planar"><parent link="a"/><child link="b"/><origin xyz="0.1 0 0.2" rpy="0.3 0.2 0.1"/><axis xyz="0 0 1"/></joint>
  <joint name="h" type="revolute"><parent link="b"/><child link="c"/><origin xyz="0.2 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_planar_joint_matches_pinocchio():
    """diffsim's planar v = [ẋ, ẏ, θ̇] (parent axes); Pinocchio's = [Rz(θ)ᵀ (ẋ, ẏ), θ̇] (child axes):
    v_pin = T v with T = blockdiag(Rz(θ)ᵀ, 1), so M = Tᵀ M_pin T, v̇_pin = T v̇ + Ṫ v."""
    pin = pytest.importorskip("pinocchio")
    model = load_urdf(PLANAR)
    assert model.topology.joint_types[1] is ds.JointType.PLANAR
    pm = pin.buildModelFromXML(PLANAR)
    pd = pm.createData()
    rng = np.random.default_rng(2)
    S = np.array([[0.0, -1.0], [1.0, 0.0]])
    worst = 0.0
    for _ in range(3):
        q, v, tau = rng.normal(size=4), rng.normal(size=4), rng.normal(size=4)
        th = q[2]
        Rz = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
        T = np.eye(4)
        T[:2, :2] = Rz.T
        Tdv = np.zeros(4)
        Tdv[:2] = -v[2] * S @ Rz.T @ v[:2]
        qp = np.array([q[0], q[1], np.cos(th), np.sin(th), q[3]])
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        M = np.asarray(ds.mass_matrix(model, jnp.asarray(q)))
        a = np.asarray(ds.forward_dynamics(model, jnp.asarray(q), jnp.asarray(v), jnp.asarray(tau)))
        ap = pin.aba(pm, pd, qp, T @ v, np.linalg.solve(T.T, tau))
        b = np.asarray(ds.inverse_dynamics(model, jnp.asarray(q), jnp.asarray(v), jnp.zeros(4)))
        bp = T.T @ pin.rnea(pm, pd, qp, T @ v, Tdv)
        for mine, theirs in ((M, T.T @ Mp @ T), (T @ a + Tdv, ap), (b, bp)):
            worst = max(worst, np.abs(mine - theirs).max() / max(1.0, np.abs(theirs).max()))
    assert worst <= 1e-9, worst


# --------------------------------------------------------------------------------------
# joint types and refusals
# --------------------------------------------------------------------------------------


def _two_links(joint_type="revolute", joint_extra="", link_extra=""):
    return f"""<robot name="r">
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  {link_extra}
  <joint name="j" type="{joint_type}"><parent link="a"/><child link="b"/>{joint_extra}</joint>
</robot>"""


def test_planar_and_floating_joints():
    m = load_urdf(_two_links("planar", '<axis xyz="0 0 2"/>'))
    assert m.topology.joint_types == (ds.JointType.FIXED, ds.JointType.PLANAR)
    m = load_urdf(_two_links("floating"), floating_base=True)
    assert m.topology.joint_types == (ds.JointType.FREE, ds.JointType.FREE)
    assert m.topology.joint_names == ("root_joint", "j")
    m = load_urdf(_two_links())  # default axis 1 0 0
    np.testing.assert_allclose(m.axis[1], [1, 0, 0])


REFUSED = {
    "mimic-unknown-master": (_two_links(joint_extra='<mimic joint="x"/>'),
                             ["<mimic> (line 5) of <joint name='j'>", "unknown master joint 'x'"]),
    "negative-friction": (_two_links(joint_extra='<dynamics damping="1" friction="-0.5"/>'), ["<dynamics>", "(line 5)", "'j'", "friction"]),
    "no-links": ('<robot name="r">\n</robot>', ["<robot name='r'> (line 1)", "no links"]),
    "massless-moving-link": (_two_links().replace('<mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>', "", 2)
                             .replace("<inertial></inertial>", "", 2) + "",
                             ["<link name='b'> (line 3)", "zero mass"]),
    "zero-axis": (_two_links(joint_extra='<axis xyz="0 0 0"/>'), ["<joint name='j'>", "axis is zero"]),
    "planar-normal": (_two_links("planar", '<axis xyz="1 0 0"/>'), ["<joint name='j'>", "normal"]),
    "unknown-type": (_two_links("screw"), ["<joint name='j'>", "unknown joint type"]),
    "unknown-link": (_two_links().replace('<child link="b"/>', '<child link="nope"/>'), ["<joint name='j'>", "'nope'"]),
    "two-parents": (
        _two_links(link_extra='<link name="c"/><joint name="k" type="fixed"><parent link="c"/><child link="b"/></joint>'),
        ["<joint name='j'>", "'k'", "'b'", "tree"],
    ),
    "two-roots": (_two_links(link_extra='<link name="c"/>'), ["one root", "'c'"]),
    "no-mass": (_two_links().replace('<mass value="1"/>', "", 1), ["<inertial>", "'a'", "mass"]),
    "duplicate-link": (_two_links(link_extra='<link name="b"/>'), ["<link name='b'>", "duplicate"]),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_name_the_element(name):
    xml, needles = REFUSED[name]
    with pytest.raises(ModelError) as e:
        load_urdf(xml, massless="error")  # (the default holds a joint that moves no mass: next test)
    for needle in needles:
        assert needle in str(e.value), str(e.value)


GRIPPER = """<robot name="g">
  <link name="base"><inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="1"/><inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="palm"/><link name="f1">{fin}</link><link name="f2">{fin}</link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="5"/></joint>
  <joint name="wrist" type="fixed"><parent link="arm"/><child link="palm"/><origin xyz="0.4 0 0"/></joint>
  <joint name="grip" type="revolute"><parent link="palm"/><child link="f1"/><origin xyz="0.05 0.01 0" rpy="0.1 0 0.2"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="1" effort="2"/></joint>
  <joint name="slide" type="prismatic"><parent link="f1"/><child link="f2"/><origin xyz="0.03 0 0"/>
    <axis xyz="1 1 0"/><mimic joint="grip" multiplier="2" offset="0.3"/></joint>
</robot>"""
FINGER = '<inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>'


def test_joints_that_move_no_mass_are_held_at_their_reference():
    """The gripper's links are massless: ``grip`` and its mimic ``slide`` are held fixed at
    ``q = 0`` and at the mimic's offset (0.3 m), their limits and effort bound dropped; the same
    robot with massive fingers at ``grip = 0`` (so ``slide = 0.3``) places the fingers the same
    way. ``massless='error'`` refuses the file, naming the link and its line."""
    with pytest.warns(UnsimulatedWarning, match=r"2 joints move only massless links .*: grip, slide;"):
        m = load_urdf(GRIPPER.format(fin=""))
    assert m.nv == 1 and m.mimic is None
    assert [lim.joint for lim in m.joint_limits] == ["shoulder"] and [a.target for a in m.actuators] == ["shoulder"]
    full = load_urdf(GRIPPER.format(fin=FINGER))
    assert full.nv == 3 and full.mimic is not None
    for qs in (0.0, 0.7):
        k = ds.forward_kinematics(m, jnp.array([qs]))
        kf = ds.forward_kinematics(full, jnp.array([qs, 0.0, 0.3]))
        for body in ("f1", "f2"):
            i, j = m.topology.body_index(body), full.topology.body_index(body)
            np.testing.assert_allclose(k.p[i], kf.p[j], rtol=0, atol=1e-15)
            np.testing.assert_allclose(k.R[i], kf.R[j], rtol=0, atol=1e-15)
    with pytest.raises(ModelError, match=r"<link name='f1'> \(line 4\)\]: its revolute joint moves a subtree with zero"):
        load_urdf(GRIPPER.format(fin=""), massless="error")
    with pytest.raises(ValueError, match="massless must be"):
        load_urdf(GRIPPER.format(fin=""), massless="lock")
    # a link with inertia but no mass is not held (a revolute joint would have dynamics): the
    # builder judges it, and refuses the zero-mass subtree as before
    spinning = '<inertial><mass value="0"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>'
    with pytest.raises(ModelError, match="zero mass"):
        load_urdf(GRIPPER.format(fin=spinning))


def test_builder_errors_name_the_link():
    bad = _two_links().replace('ixx="0.1" iyy="0.1" izz="0.1"', 'ixx="0.1" iyy="0.1" izz="0.5"', 2)
    with pytest.warns(UserWarning, match="'a'.*line 2.*triangle"):  # Pinocchio accepts it: warned
        load_urdf(bad)
    bad = _two_links().replace('ixx="0.1" iyy="0.1" izz="0.1"', 'ixx="0.1" iyy="-0.1" izz="0.1"', 2)
    with pytest.raises(ModelError, match="'a'.*line 2.*not positive definite"):
        load_urdf(bad)


TIP = """<link name="tip"><inertial><origin xyz="0.3 0 0"/><mass value="{m}"/><inertia {I}/></inertial></link>
  <joint name="tip_joint" type="fixed"><parent link="b"/><child link="tip"/><origin xyz="0 0.2 0"/></joint>"""


@pytest.mark.parametrize("inertia, ok", [
    ('ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"', True),  # a point mass on a fixed child (Talos, quadruped feet)
    ('ixx="-3.5e-8" iyy="3.5e-8" izz="9e-8" ixy="1e-9" ixz="0" iyz="0"', True),  # an indefinite CAD inertia (Tiago's antenna)
    ('ixx="-0.5" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"', False),  # negative beyond what the merged body holds
])
def test_inertia_is_checked_on_the_merged_body(inertia, ok):
    xml = _two_links(link_extra=TIP.format(m=0.5, I=inertia))
    if ok:
        model = load_urdf(xml)
        assert model.topology.body_names[-1] == "tip"
    else:
        with pytest.raises(ModelError, match=r"body 'b' \[URDF <link name='b'> \(line 3\)\] \(merged with its fixed children \['tip'\]\): inertia is not positive definite"):
            load_urdf(xml)


def test_point_mass_link_and_round_off():
    """A moving point mass (iCub's head: 1.3 kg, inertia entries 2.4e-35) and round-off
    eigenvalues (-2.5e-22 beside 3e-6: HyQ's base) load; the tolerance follows the body."""
    xml = _two_links().replace('<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>\n  \n',
                               '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>\n', 1)
    head = xml.replace('<link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>',
                       '<link name="b"><inertial><origin xyz="0.02 -0.11 0"/><mass value="1.33687"/>'
                       '<inertia ixx="0" ixy="0" ixz="2.40741e-35" iyy="0" iyz="0" izz="0"/>')
    assert head != xml
    load_urdf(head)
    tiny = xml.replace('<link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>',
                       '<link name="b"><inertial><mass value="1e-6"/><inertia ixx="1e-15" iyy="1e-15" izz="1.5e-15" ixy="0" ixz="0" iyz="0"/>')
    assert tiny != xml
    load_urdf(tiny)  # a 1 mg body with 1e-15 kg m^2 moments (no absolute floor)


def test_friction_limits_effort_and_collisions_are_read():
    xml = _two_links(joint_extra='<dynamics damping="0.2" friction="0.7"/><limit lower="-1" upper="2" effort="5" velocity="1"/>')
    xml = xml.replace('<link name="b">', '<link name="b"><collision name="c"><origin xyz="0 0 0.1"/>'
                      '<geometry><cylinder radius="0.05" length="0.4"/></geometry></collision>')
    with pytest.warns(UserWarning, match="1 geoms \\(cylinder\\)"):
        m = load_urdf(xml, friction_width=0.02)
    np.testing.assert_allclose(m.frictionloss, [0.7])
    np.testing.assert_allclose(m.friction_width, [0.02])
    np.testing.assert_allclose(m.damping, [0.2])
    assert m.joint_limits == (ds.model.model.JointLimit("j", -1.0, 2.0, True),)  # enforced by a System
    assert m.actuators[0].forcerange == (-5.0, 5.0) and m.actuators[0].target == "j"
    act = ds.actuation(m)  # the effort limit clamps the commanded torque
    np.testing.assert_allclose(act(jnp.array([7.0]), jnp.zeros(1), jnp.zeros(1)), [5.0])
    np.testing.assert_allclose(act(jnp.array([-2.5]), jnp.zeros(1), jnp.zeros(1)), [-2.5])
    g = m.geoms[0]
    assert (g.body, g.type, g.size, g.pos, g.name) == ("b", "cylinder", (0.05, 0.2, 0.0), (0.0, 0.0, 0.1), "c")
