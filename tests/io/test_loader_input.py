"""Robot-file input that the loaders read wrongly or let through (a reviewer's findings): each
test reads a tiny file as MuJoCo (or urdfdom) does, or refuses it as they refuse it. Where a fix
changes physics the model is compared with MuJoCo's own (``mj_fullM``, ``qfrc_damper``, the
compiled masses, sizes and actuators) or with :func:`diffsim.io.from_mjmodel` of MuJoCo's compiled
model; the rest are refusals, checked against MuJoCo's refusal of the same file."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.io import from_mjmodel, load_mjcf, load_urdf
from diffsim.io.xml import UnsimulatedWarning
from diffsim.model import ModelError, joint_passive_forces
from diffsim.model.rotations import quat_to_rot
from io_peers import assert_same_model

try:
    import mujoco
except ImportError:  # the refusals do not need MuJoCo
    mujoco = None
needs_mujoco = pytest.mark.skipif(mujoco is None, reason="mujoco is not installed")

GEOM = '<geom size="0.1" pos="0.2 0 0"/>'


@pytest.fixture(autouse=True)
def _quiet(tmp_path, monkeypatch):
    """MuJoCo's log and the 'kept as data' warnings stay out of the way."""
    monkeypatch.chdir(tmp_path)
    warnings.simplefilter("ignore", UnsimulatedWarning)


def W(body, head="", tail=""):
    return f"<mujoco>{head}<worldbody>{body}</worldbody>{tail}</mujoco>"


def mj(xml):
    return mujoco.MjModel.from_xml_string(xml)


def mj_refuses(xml, match):
    """MuJoCo refuses the file too (with its own message)."""
    if mujoco is not None:
        with pytest.raises(ValueError, match=match):
            mj(xml)


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


# ---- 1. actuator-side armature and damping (MuJoCo 4) ------------------------------------------

ARM_XML = W('<body><joint name="a" axis="0 1 0" armature="0.05" damping="0.1"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>'
            '<body pos="0.3 0 0"><joint name="b" type="slide" axis="1 0 0"/><geom size="0.06" pos="0.1 0 0"/>'
            '<body pos="0.2 0 0"><joint name="c" type="ball"/><geom type="box" size="0.05 0.1 0.02" pos="0.1 0 0"/>'
            '</body></body></body>', '<default><default class="X"><motor armature="0.3"/></default></default>',
            tail='<actuator><motor name="m1" joint="a" gear="2" armature="0.5"/>'
                 '<position name="p1" joint="a" kp="3" gear="-3" armature="0.1" damping="0.3"/>'
                 '<general name="g1" jointinparent="b" damping="0.7" armature="0.2" gear="0.5"/>'
                 '<motor name="m2" joint="c" gear="1.5 0 0" armature="0.4" damping="0.2"/>'
                 '<position name="p2" class="X" joint="b" kp="1" gear="2"/></actuator>')  # armature from a <motor> default


@needs_mujoco
def test_actuator_armature_and_damping_on_joints_are_mujocos():
    """MuJoCo adds armature·gear[0]² to M and damping·gear[0]² to the joint damping, summed over
    the actuators of the joint (ball joint: on each DOF); the loader dropped both."""
    model = load_mjcf(ARM_XML)
    mm = mj(ARM_XML)
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(0)
    q = rng.normal(size=mm.nq)
    q[2:6] /= np.linalg.norm(q[2:6])
    md.qpos[:], md.qvel[:] = q, rng.normal(size=mm.nv)
    mujoco.mj_forward(mm, md)
    M = np.zeros((mm.nv, mm.nv))
    mujoco.mj_fullM(mm, md, M)
    assert rel(ds.mass_matrix(model, jnp.asarray(q)), M) < 1e-12
    np.testing.assert_allclose(model.armature, [0.05 + 0.5 * 4 + 0.1 * 9, 0.2 * 0.25 + 0.3 * 4] + [0.4 * 2.25] * 3, rtol=1e-15)
    assert rel(-np.asarray(model.damping) * md.qvel, md.qfrc_damper) < 1e-12  # 0.1 + 0.3·9, 0.7·0.25, 0.2·2.25
    assert_same_model(model, from_mjmodel(mm))  # the bridge folds them the same way


@needs_mujoco
def test_actuator_terms_with_springdamper_are_mujocos():
    """springdamper's stiffness and damping are computed with the actuator armature in M, and the
    actuator damping adds to the damping it sets (MuJoCo's compiled values and qfrc_damper)."""
    xml = W('<body><joint name="a" springdamper="0.2 0.7" damping="5"/><geom type="capsule" fromto="0 0 0 0.3 0 0" '
            'size="0.04"/><body pos="0.3 0 0"><joint name="b" axis="1 0 0" springdamper="0.1 1"/>'
            '<geom size="0.06" pos="0.1 0 0"/></body></body>',
            tail='<actuator><motor joint="a" armature="0.3" damping="0.4" gear="2"/><motor joint="b" armature="0.1" '
                 'gear="3"/></actuator>')
    model, mm = load_mjcf(xml), mj(xml)
    md = mujoco.MjData(mm)
    md.qvel[:] = [0.7, -1.3]
    mujoco.mj_forward(mm, md)
    assert rel(model.stiffness, mm.jnt_stiffness) < 1e-12
    assert rel(-np.asarray(model.damping) * md.qvel, md.qfrc_damper) < 1e-12


@pytest.mark.parametrize("act, what", [
    ('<motor tendon="t" armature="0.1"/>', "armature=0.1 on a tendon transmission"),
    ('<motor tendon="t" damping="0.2"/>', "damping=0.2 on a tendon transmission"),
    ('<motor joint="a" delay="0.01" nsample="3"/>', "delay=0.01"),
    ('<motor joint="a" damping="0.1 0.2"/>', "polynomial actuator damping"),
])
def test_actuator_terms_elsewhere_are_refused(act, what):
    xml = W(f'<body><joint name="a"/>{GEOM}<body><joint name="b"/>{GEOM}</body></body>',
            tail='<tendon><fixed name="t"><joint joint="a" coef="1"/><joint joint="b" coef="1"/></fixed></tendon>'
                 f"<actuator>{act}</actuator>")
    with pytest.raises(ModelError, match=what):
        load_mjcf(xml)
    if mujoco is not None:  # MuJoCo compiles these; its compiled model is refused the same way
        with pytest.raises(ModelError, match="delay|tendon transmission|polynomial actuator damping"):
            from_mjmodel(mj(xml))


# ---- 2. partial multi-value attributes in nested default classes --------------------------------

@needs_mujoco
def test_nested_default_partial_values_keep_the_rest():
    """A child class's size="0.08" overrides the radius only (the half-length stays the parent's);
    gear and gainprm alike; the loader replaced the whole attribute (a capsule of zero length)."""
    xml = W('<body><joint name="a" axis="0 1 0"/><geom class="A" pos="0.2 0 0"/></body>',
            '<default><geom type="capsule" size="0.05 0.2"/><general gear="5 1" gainprm="5 1 2"/>'
            '<default class="A"><geom size="0.08"/><general gear="2" gainprm="3"/></default></default>',
            '<actuator><general class="A" joint="a"/><motor class="A" joint="a"/></actuator>')
    model, mm = load_mjcf(xml), mj(xml)
    np.testing.assert_allclose(model.geoms[0].size, mm.geom_size[0], rtol=1e-15)
    np.testing.assert_allclose(model.mass, mm.body_mass[1:], rtol=1e-14)
    assert model.actuators[0].gainprm == tuple(mm.actuator_gainprm[0][:3]) == (3.0, 1.0, 2.0)
    assert model.actuators[1].gear == tuple(mm.actuator_gear[1]) == (2.0, 1.0, 0.0, 0.0, 0.0, 0.0)
    assert_same_model(model, from_mjmodel(mm))


# ---- 3. one actuator default per class, shared by all actuator types ----------------------------

_TYPES = {0: "fixed", 1: "affine", 2: "muscle"}
_DYN = {0: "none", 1: "integrator", 2: "filter", 3: "filterexact"}
# (defaults, actuators): MuJoCo 4's documented rules ("Actuator shortcuts"), each checked below
ACTUATOR_DEFAULTS = [
    # mechanical attributes from any default, shortcut gains from the same shortcut or <general>
    ('<motor gear="5" ctrlrange="-1 1" forcerange="-3 3"/><general gainprm="7"/>',
     '<position joint="a" kp="10"/><motor joint="a"/><general joint="a"/><velocity joint="a" kv="2"/>'),
    ('<position kp="10" ctrlrange="-1 1" gear="3"/>', '<motor joint="a"/><general joint="a"/>'),  # a motor, a servo
    ('<position kp="10"/><default class="C"><velocity kv="3"/></default>', '<position class="C" joint="a"/>'),
    ('<position kp="10" kv="2"/><default class="C"><position kp="5"/></default>', '<position class="C" joint="a"/>'),
    ('<position kp="10" timeconst="0.1"/><velocity kv="3"/>', '<position joint="a"/><velocity joint="a"/>'),
    ('<position kp="10" kv="2"/><general gainprm="7"/>', '<position joint="a"/><general joint="a"/>'),
    ('<velocity kv="3"/><default class="C"><general gainprm="5"/></default>', '<velocity class="C" joint="a"/>'),
    ('<position kp="10" ctrlrange="-1 1"/><default class="C"><motor gear="4"/></default>', '<position class="C" joint="a"/>'),
    ('<general gaintype="affine" gainprm="7"/>', '<position joint="a"/>'),
    ('<general gainprm="5 1 2" biasprm="1 2 3" dynprm="3 4" dyntype="filter"/><cylinder area="2"/>', '<general joint="a"/>'),
    ('<damper kv="2" ctrlrange="0 1"/>', '<damper joint="a"/>'),
    ('<position kp="10" dampratio="0.5"/>', '<position joint="a" kp="3"/>'),
    ('<default class="P"><position kp="7" kv="1" inheritrange="0.5"/></default>',
     '<position class="P" joint="a"/><general class="P" joint="a"/><motor class="P" joint="a"/>'),
]


@needs_mujoco
@pytest.mark.parametrize("defaults, acts", ACTUATOR_DEFAULTS)
def test_actuator_defaults_are_shared_by_all_types(defaults, acts):
    """<motor gear ctrlrange> in a default applies to <position>, <velocity>, <general>; the shortcut
    gains pass on as MuJoCo 4 passes them on (the loader kept one default per actuator type)."""
    xml = W(f'<body><joint name="a" range="-1 1"/>{GEOM}</body>', f"<default>{defaults}</default>",
            f"<actuator>{acts}</actuator>")
    model, mm = load_mjcf(xml), mj(xml)
    assert len(model.actuators) == mm.nu
    for k, a in enumerate(model.actuators):
        assert a.gear == tuple(mm.actuator_gear[k]) and a.gainprm == tuple(mm.actuator_gainprm[k][:3]), a
        assert a.ctrlrange == (tuple(mm.actuator_ctrlrange[k]) if mm.actuator_ctrllimited[k] else None), a
        assert a.forcerange == (tuple(mm.actuator_forcerange[k]) if mm.actuator_forcelimited[k] else None), a
        assert a.gaintype == _TYPES[mm.actuator_gaintype[k]] and a.dyntype == _DYN[mm.actuator_dyntype[k]], a
        if a.biastype.startswith("dampratio"):  # MuJoCo has turned it into kv at compile time
            assert a.biasprm[:2] == tuple(mm.actuator_biasprm[k][:2]) and a.biasprm[2] > 0 > mm.actuator_biasprm[k][2]
        else:
            assert a.biasprm == tuple(mm.actuator_biasprm[k][:3]), a
            assert a.biastype == _TYPES[mm.actuator_biastype[k]].replace("fixed", "none"), a


# ---- 4. <flag limit/equality/constraint/clampctrl="disable"/> ----------------------------------

@needs_mujoco
@pytest.mark.parametrize("flag", ["limit", "equality", "constraint", "clampctrl"])
def test_disable_flags_are_honoured(flag):
    body = (f'<body name="A"><joint name="a"/>{GEOM}<body pos="0.3 0 0"><joint name="b" range="-20 20"/>{GEOM}'
            '</body></body>')
    weld = '<weld body1="A"/>' if flag in ("equality", "constraint") else ""  # refused unless equalities are off
    xml = W(body, f'<option><flag {flag}="disable"/></option>',
            f'<equality><joint joint1="b" joint2="a" polycoef="0 2"/>{weld}</equality>'
            '<actuator><motor joint="a" ctrlrange="-1 1"/></actuator>')
    for model in (load_mjcf(xml), from_mjmodel(mj(xml))):
        assert (not model.joint_limits) == (flag in ("limit", "constraint"))
        assert (model.mimic is None) == (flag in ("equality", "constraint"))
        assert (model.actuators[0].ctrlrange is None) == (flag == "clampctrl")


TENDON_BODY = (f'<body><joint name="a" damping="0.5" stiffness="2"/>{GEOM}<body pos="0.3 0 0"><joint name="b"/>{GEOM}'
               '</body></body>')
TENDON_TAIL = ('<tendon><fixed name="t" stiffness="3" damping="0.7" springlength="0"><joint joint="a" coef="1"/>'
               '<joint joint="b" coef="2"/></fixed></tendon><actuator><motor joint="b" damping="0.4" gear="2"/></actuator>')


@needs_mujoco
@pytest.mark.parametrize("flags", ["", '<flag spring="disable"/>', '<flag damper="disable"/>',
                                   '<flag spring="disable" damper="disable"/>'])
def test_spring_and_damper_flags_switch_off_tendon_springs_too(flags):
    """The flags zeroed the joints' springs and dampers and kept the fixed tendon's (MuJoCo drops both)."""
    xml = W(TENDON_BODY, f"<option>{flags}</option>", TENDON_TAIL)
    m = mj(xml)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = [0.3, -0.2], [1.0, 0.2]
    mujoco.mj_forward(m, d)
    model = load_mjcf(xml)
    ours = joint_passive_forces(model, jnp.asarray(d.qvel), jnp.asarray(d.qpos))
    np.testing.assert_allclose(-np.asarray(ours), d.qfrc_passive, rtol=1e-12, atol=1e-14)


@needs_mujoco
def test_a_gravity_flag_holds_over_a_later_option():
    """``<option><flag gravity="disable"/></option><option gravity="0 0 -5"/>``: MuJoCo has no
    gravity; the second option brought it back."""
    xml = W(B, '<option><flag gravity="disable"/></option><option gravity="0 0 -5"/>')
    assert mj(xml).opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY
    np.testing.assert_array_equal(np.asarray(load_mjcf(xml).gravity), 0.0)
    xml = W(B, '<option><flag gravity="disable"/></option><option><flag gravity="enable"/></option>')
    np.testing.assert_array_equal(np.asarray(load_mjcf(xml).gravity), [0.0, 0.0, -9.81])


def test_switched_off_actuators_are_refused():
    """``actuation="disable"`` and ``actuatorgroupdisable``: MuJoCo applies no force from those
    actuators; diffsim applied it. Refused (an actuator outside the disabled groups loads)."""
    tail = '<actuator><motor joint="a" gear="2" group="1"/></actuator>'
    with pytest.raises(ModelError, match="actuation='disable'"):
        load_mjcf(W(B, '<option><flag actuation="disable"/></option>', tail))
    with pytest.raises(ModelError, match="group 1, which actuatorgroupdisable switches off"):
        load_mjcf(W(B, '<option actuatorgroupdisable="1 3"/>', tail))
    with pytest.raises(ModelError, match="group 3"):  # the group from the default class
        load_mjcf(W(B, '<option actuatorgroupdisable="3"/><default><motor group="3"/></default>',
                    '<actuator><motor joint="a"/></actuator>'))
    assert len(load_mjcf(W(B, '<option actuatorgroupdisable="2"/>', tail)).actuators) == 1


# ---- 5. negative masses and inertias -------------------------------------------------------------

@pytest.mark.parametrize("inertial, what", [
    ('mass="-1" diaginertia="1 1 1"', "negative mass"),
    ('mass="1" diaginertia="1 1 -1"', "diaginertia.*negative"),
    ('mass="1" fullinertia="-1 1 1 0 0 0"', "fullinertia.*negative"),
])
def test_negative_mass_or_inertia_is_refused(inertial, what):
    """MuJoCo clamps a negative mass to boundmass (0) silently; the loader did the same."""
    xml = W(f'<body><joint name="a"/><inertial pos="0 0 0" {inertial}/><body pos="1 0 0"><joint name="b"/>{GEOM}'
            '</body></body>')
    with pytest.raises(ModelError, match=f"<inertial> \\(line 1\\).*{what}"):
        load_mjcf(xml)


# ---- 6. attributes and elements outside MuJoCo's schema ------------------------------------------

@pytest.mark.parametrize("body, bad, hint", [
    (f'<body><joint name="a" dampng="3"/>{GEOM}</body>', "attribute 'dampng' of <joint>", "'damping'"),
    (f'<body posx="1 0 0"><joint name="a"/>{GEOM}</body>', "attribute 'posx' of <body>", "'pos'"),
    (f'<body><joint name="a"/><goem size="0.1"/>{GEOM}</body>', "element <goem> inside <body>", "'geom'"),
    (f'<body><freejoint class="main"/>{GEOM}</body>', "attribute 'class' of <freejoint>", ""),
])
def test_unknown_attributes_and_elements_are_refused(tmp_path, body, bad, hint):
    path = tmp_path / "robot.xml"
    path.write_text(W(body))
    with pytest.raises(ModelError, match=f"robot.xml: unrecognized {bad}.*{hint}"):
        load_mjcf(path)
    mj_refuses(W(body), "unrecognized")


def test_schema_attributes_diffsim_ignores_are_accepted():
    """Everything in MuJoCo's schema still loads (rendering, contact and solver settings)."""
    xml = W('<body name="b" gravcomp="0" user="1"><joint name="a" solreflimit="0.02 1" margin="0.1" group="2"/>'
            '<geom size="0.1" pos="0.2 0 0" rgba="1 0 0 1" condim="4" friction="1 0.1" priority="1" group=" 3"/>'
            '<site name="s" rgba="0 1 0 1"/><camera name="c" fovy="40"/></body><light pos="0 0 3"/>',
            '<visual><global offwidth="800"/><quality shadowsize="1024"/></visual><option timestep="0.001" '
            'integrator="RK4"><flag contact="disable"/></option><size memory="1M"/>'
            '<asset><material name="mat" rgba="1 1 1 1"/></asset>',
            '<contact><exclude body1="world" body2="b"/></contact><sensor><jointpos joint="a" noise="0.1"/></sensor>')
    assert load_mjcf(xml).topology.joint_names == ("a",)


# ---- 7. geom sizes -----------------------------------------------------------------------------

@pytest.mark.parametrize("geom, what", [
    ('type="capsule" size="0.1"', "capsule geom needs its .* positive"),
    ('type="cylinder"', "cylinder geom needs its .* positive"),
    ('type="box" size="0.1 0.1"', "box geom needs its .* positive"),
    ('type="ellipsoid" size="0.1 0.2"', "ellipsoid geom needs its .* positive"),
    ('size="-0.1"', "sphere geom needs its .* positive"),
])
def test_geoms_without_their_sizes_are_refused(geom, what):
    xml = W(f'<body name="B"><joint name="a"/><geom name="g" {geom} pos="0.1 0 0"/></body>')
    with pytest.raises(ModelError, match=f"<geom name='g'> \\(line 1\\) in body 'B': a {what}"):
        load_mjcf(xml)
    mj_refuses(xml, "must be positive")


@needs_mujoco
def test_geom_sizes_from_fromto_and_planes():
    ok = W('<body><joint name="a"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>'
           '<geom type="box" fromto="0 0 0 0 0.2 0" size="0.05 0.04"/></body><geom type="plane" size="0 0 1"/>')
    np.testing.assert_allclose(load_mjcf(ok).mass, mj(ok).body_mass[1:], rtol=1e-14)
    flat = W(f'<body><joint name="a"/>{GEOM}</body><geom name="floor" type="plane" size="1 1"/>')
    with pytest.raises(ModelError, match="<geom name='floor'> .*the world body: a plane geom"):
        load_mjcf(flat)
    mj_refuses(flat, "plane size")


# ---- 8. <position inheritrange> ------------------------------------------------------------------

@needs_mujoco
def test_inheritrange_takes_the_joint_range():
    xml = W(f'<body><joint name="a" range="-30 60"/>{GEOM}<body><joint name="s" type="slide" range="0.1 0.5"/>'
            f'{GEOM}</body></body>',
            tail='<actuator><position joint="a" kp="5" inheritrange="1"/><position joint="a" kp="5" inheritrange="0.5"/>'
                 '<position joint="s" kp="5" inheritrange="2"/></actuator>')
    model, mm = load_mjcf(xml), mj(xml)
    got = np.array([a.ctrlrange for a in model.actuators])
    assert rel(got, mm.actuator_ctrlrange) < 1e-15
    np.testing.assert_allclose(got[1], np.deg2rad([-7.5, 37.5]), rtol=1e-15)  # midpoint 15°, ± 0.5 · 45°
    with pytest.raises(ModelError, match="ctrlrange and inheritrange"):
        load_mjcf(xml.replace('inheritrange="2"', 'inheritrange="2" ctrlrange="0 1"'))
    with pytest.raises(ModelError, match="has no range"):
        load_mjcf(xml.replace('range="-30 60"', ""))
    # an intvelocity's inheritrange sets its activation range: its own ctrlrange stays (was refused)
    iv = xml.replace('<position joint="a" kp="5" inheritrange="1"/>',
                     '<intvelocity joint="a" kp="5" ctrlrange="0 2" inheritrange="1"/>')
    assert load_mjcf(iv).actuators[0].ctrlrange == tuple(mj(iv).actuator_ctrlrange[0]) == (0.0, 2.0)
    with pytest.raises(ModelError, match="actrange and inheritrange"):
        load_mjcf(iv.replace('ctrlrange="0 2"', 'actrange="0 1"'))
    mj_refuses(iv.replace('ctrlrange="0 2"', 'actrange="0 1"'), "actrange and inheritrange")


# ---- 9. limited joints need a range ----------------------------------------------------------------

@pytest.mark.parametrize("joint, what", [
    ('limited="true"', "needs range lower < upper.*no range"),
    ('limited="true" range="10 10"', "needs range lower < upper"),
    ('limited="true" type="slide" range="1 -1"', "needs range lower < upper"),
])
def test_limited_joint_without_a_range_is_refused(joint, what):
    xml = W(f'<body><joint name="a" {joint}/>{GEOM}</body>')
    with pytest.raises(ModelError, match=what):
        load_mjcf(xml)
    mj_refuses(xml, "range\\[0\\] should be smaller")


@needs_mujoco
def test_auto_limits_follow_mujoco():
    """limited="auto" limits only where lower < upper; a range without limited under
    autolimits="false" is refused (both as MuJoCo)."""
    xml = W(f'<body><joint name="a" type="slide" range="1 -1"/>{GEOM}<body><joint name="b" range="0 0"/>{GEOM}</body>'
            '</body>')
    assert not load_mjcf(xml).joint_limits and not any(mj(xml).jnt_limited)
    strict = W(f'<body><joint name="a" range="-1 1"/>{GEOM}</body>', '<compiler autolimits="false"/>')
    with pytest.raises(ModelError, match="no limited"):
        load_mjcf(strict)
    mj_refuses(strict, "autolimits")


# ---- 10, 13. URDF: unreachable links, missing inertia values, negative effort ---------------------

def _link(name, inertia='ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"'):
    return f'<link name="{name}"><inertial><mass value="1"/><inertia {inertia}/></inertial></link>'


def _joint(name, parent, child, extra=""):
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'<limit lower="-1" upper="1" effort="1" velocity="1"/>{extra}</joint>')


@pytest.mark.parametrize("massless", ["fix", "error"])
def test_urdf_links_off_the_tree_are_named(massless):
    urdf = ('<robot name="r">' + "".join(_link(n) for n in "abcd") + _joint("j1", "a", "b") + _joint("j2", "c", "d")
            + _joint("j3", "d", "c") + "</robot>")
    with pytest.raises(ModelError, match=r"links \['c', 'd'\] are not reachable from the root link 'a'"):
        load_urdf(urdf, massless=massless)


def test_urdf_missing_inertia_value_and_negative_effort_are_refused():
    urdf = '<robot name="r">' + _link("a") + _link("b", 'ixx="1" ixy="0" ixz="0" iyy="1" iyz="0"') + _joint("j", "a", "b")
    with pytest.raises(ModelError, match="<inertia> \\(line 1\\) of link 'b'.*missing izz"):
        load_urdf(urdf + "</robot>")
    # a product of inertia left out was read as 0; urdfdom ("inertia element missing ixy attribute")
    # and MuJoCo ("required attribute missing: 'ixy'") refuse it
    urdf = '<robot name="r">' + _link("a") + _link("b", 'ixx="1" iyy="1" izz="1"') + _joint("j", "a", "b")
    with pytest.raises(ModelError, match="of link 'b': <inertia> needs all six.*missing ixy, ixz, iyz"):
        load_urdf(urdf + "</robot>")
    if mujoco is not None:
        with pytest.raises(ValueError, match="required attribute missing: 'ixy'"):
            mujoco.MjModel.from_xml_string(urdf + "</robot>")
    urdf = '<robot name="r">' + _link("a") + _link("b") + _joint("j", "a", "b").replace('effort="1"', 'effort="-5"')
    with pytest.raises(ModelError, match="joint 'j'.*effort -5.0 must be non-negative"):
        load_urdf(urdf + "</robot>")


# ---- 11. a child class's orientation replaces its parent's ------------------------------------------

@needs_mujoco
def test_default_orientation_is_replaced_by_a_child_class():
    xml = W('<body><joint name="a" axis="0 1 0"/><geom class="A" pos="0.2 0 0"/><geom class="B" pos="0 0.2 0"/></body>',
            '<default><geom type="box" size="0.1 0.2 0.3" euler="30 0 0"/><default class="A"><geom quat="0.9 0.1 0.2 0.3"/>'
            '</default><default class="B"><geom zaxis="1 1 0"/></default></default>')
    model, mm = load_mjcf(xml), mj(xml)
    assert_same_model(model, from_mjmodel(mm))  # inertias of the two rotated boxes: MuJoCo's
    for g, quat in zip(model.geoms, mm.geom_quat):
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, quat)
        np.testing.assert_allclose(quat_to_rot(np.asarray(g.quat)), R.reshape(3, 3), atol=1e-15)
    with pytest.raises(ModelError, match="only one orientation"):
        load_mjcf(xml.replace('<geom quat="0.9 0.1 0.2 0.3"/>', '<geom quat="1 0 0 0" euler="0 0 0"/>'))
    # fromto (here from the class) wins over an orientation, and excludes a pos (MuJoCo)
    ft = W('<body><joint name="a"/><geom euler="30 0 0"/></body>',
           '<default><geom type="capsule" size="0.1" fromto="0 0 0 1 0 0"/></default>')
    np.testing.assert_allclose(load_mjcf(ft).geoms[0].quat, mj(ft).geom_quat[0], atol=1e-15)
    with pytest.raises(ModelError, match="both pos and fromto"):
        load_mjcf(ft.replace('euler="30 0 0"', 'pos="0 1 0"'))
    mj_refuses(ft.replace('euler="30 0 0"', 'pos="0 1 0"'), "both pos and fromto")


# ---- 12. <include> paths --------------------------------------------------------------------------

@needs_mujoco
def test_include_paths_resolve_from_the_main_file_first(tmp_path):
    """sub/x.xml includes "y.xml": MuJoCo takes y.xml next to the main file when there is one, else
    the one next to sub/x.xml; a file included twice is refused."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.xml").write_text('<mujoco><include file="y.xml"/></mujoco>')
    (tmp_path / "sub" / "y.xml").write_text('<mujoco><default><joint damping="2"/></default></mujoco>')
    main = tmp_path / "main.xml"
    main.write_text(W(f'<body><joint name="a"/>{GEOM}</body>', '<include file="sub/x.xml"/>'))
    assert load_mjcf(main).damping.tolist() == mujoco.MjModel.from_xml_path(str(main)).dof_damping.tolist() == [2.0]
    (tmp_path / "y.xml").write_text('<mujoco><default><joint damping="1"/></default></mujoco>')
    assert load_mjcf(main).damping.tolist() == mujoco.MjModel.from_xml_path(str(main)).dof_damping.tolist() == [1.0]
    main.write_text(W(f'<body><joint name="a"/>{GEOM}</body>', '<include file="y.xml"/><include file="y.xml"/>'))
    with pytest.raises(ModelError, match="already included"):
        load_mjcf(main)
    with pytest.raises(ValueError, match="already included"):
        mujoco.MjModel.from_xml_path(str(main))
    (tmp_path / "empty.xml").write_text("<mujoco/>")  # was read as nothing
    main.write_text(W(f'<body><joint name="a"/>{GEOM}</body>', '<include file="empty.xml"/>'))
    with pytest.raises(ModelError, match="is empty"):
        load_mjcf(main)
    with pytest.raises(ValueError, match="Empty include"):
        mujoco.MjModel.from_xml_path(str(main))


# ---- 14. other refusals MuJoCo makes ---------------------------------------------------------------

B = f'<body name="B"><joint name="a"/>{GEOM}</body>'
REFUSED = {
    "top-level default class": (W(B, '<default class="foo"><joint damping="1"/></default>'), "cannot be renamed",
                                "cannot be renamed"),
    "worldbody childclass": ('<mujoco><default><default class="X"/></default><worldbody childclass="X">' + B
                             + "</worldbody></mujoco>", "<worldbody> takes no attributes", "World body"),
    "non-integer group": (W('<body><joint name="a"/><geom size="0.1" group="1.5"/></body>'), "group='1.5'",
                          "bad format"),
    "plane in a moving body": (W('<body name="B"><joint name="a"/><geom name="p" type="plane" size="1 1 1"/>'
                                 f'{GEOM}</body>'), "<geom name='p'> .*body 'B': a plane geom", "plane only"),
    "actuator on an unknown joint": (W(B, tail='<actuator><motor joint="aa"/></actuator>'),
                                     "actuator '\\(unnamed\\)': joint='aa': no joint named 'aa'.*did you mean 'a'", "unknown transmission target"),
    "actuator on an unknown site": (W(B, tail='<actuator><motor site="zz"/></actuator>'), "site='zz': no site named",
                                    "not found"),
    "actuator on an unknown tendon": (W(B, tail='<actuator><motor tendon="t"/></actuator>'), "tendon='t': no tendon named",
                                      "not found"),
    "adhesion with a negative control range": (W(B, tail='<actuator><adhesion body="B" ctrlrange="-1 1"/></actuator>'),
                                               "adhesion actuator's gain and control range", "cannot be negative"),
    "adhesion after a default's negative range": (
        W(B, '<default><motor ctrlrange="-1 1"/></default>', '<actuator><adhesion body="B" gain="2"/></actuator>'),
        "adhesion actuator's gain and control range", "cannot be negative"),
    "a boolean written 1": (W(B, '<compiler autolimits="1"/>'), "autolimits='1' must be 'true' or 'false'",
                            "invalid keyword"),
    "a boolean written True": (W(B, '<compiler balanceinertia="True"/>'), "must be 'true' or 'false'",
                               "invalid keyword"),
    "adhesion with a negative gain": (W(B, tail='<actuator><adhesion body="B" gain="-2" ctrlrange="0 1"/></actuator>'),
                                      "adhesion actuator's gain", "gain cannot be negative"),
    # the two joint rules of a body (both loaded before: a 7-DOF body, a ball then a hinge)
    "seven DOFs in one body": (W('<body>' + ''.join(f'<joint name="h{i}" axis="1 0 0"/>' for i in range(7))
                                 + f'{GEOM}</body>'), "more than 6 DOFs in one body", "more than 6 dofs"),
    "a free joint and a hinge in one body": (W(f'<body><freejoint/><joint name="h"/>{GEOM}</body>'),
                                             "more than 6 DOFs in one body", "more than 6 dofs"),
    "a ball then a hinge": (W(f'<body><joint type="ball"/><joint name="h"/>{GEOM}</body>'),
                            "a ball joint followed by a rotation \\(hinge\\)", "ball followed by rotation"),
    "two balls": (W(f'<body><joint type="ball"/><joint type="ball"/>{GEOM}</body>'),
                  "a ball joint followed by a rotation \\(ball\\)", "ball followed by rotation"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_other_mujoco_refusals(case):
    xml, ours, theirs = REFUSED[case]
    with pytest.raises(ModelError, match=ours):
        load_mjcf(xml)
    mj_refuses(xml, theirs)
