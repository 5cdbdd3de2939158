"""ModelBuilder additions for files as they ship (issue 18): inertia checked on each body merged
with its fixed children, relative tolerances, and what a model keeps as data (geoms, joint
ranges, actuators), each bad input refused with the body/joint named."""

import numpy as np
import pytest

import diffsim as ds
from diffsim.model.builder import validate_inertia
from diffsim.model.model import Actuator, JointLimit


def arm(tip_inertia, tip_mass=0.5, physical="error"):
    b = ds.ModelBuilder(physical_inertia=physical)
    b.add_body("link", joint="revolute", axis=[0, 0, 1], mass=1.0, com=[0.2, 0, 0], inertia=[0.01, 0.02, 0.02])
    b.add_body("tip", parent="link", joint="fixed", pos=[0.4, 0, 0], mass=tip_mass, inertia=tip_inertia)
    return b


def test_fixed_children_are_merged_before_the_check():
    arm([0.0, 0.0, 0.0]).build()  # a point mass on a fixed child
    arm([-1e-3, 1e-3, 2e-3]).build()  # indefinite alone; the merged body is positive definite
    with pytest.raises(ds.ModelError, match=r"body 'link' \(merged with its fixed children \['tip'\]\): inertia is not positive"):
        arm([-1.0, 0.1, 0.1]).build()


def test_tolerances_are_relative_to_the_body():
    validate_inertia(np.diag([1e-18, 1e-18, 1.5e-18]), 1e-9, "tiny")  # a 1 ug body: no absolute floor
    validate_inertia(np.diag([-2.5e-22, 3e-23, 3e-6]), 5.0, "round-off", physical="ignore")  # HyQ's base link alone
    with pytest.raises(ds.ModelError, match="'neg'.*not positive definite"):
        validate_inertia(np.diag([-1e-8, 3e-6, 3e-6]), 5.0, "body 'neg'")


def test_triangle_inequality_error_warn_ignore():
    bad = [0.01, 0.01, 0.5]
    with pytest.raises(ds.ModelError, match="triangle"):
        arm(bad, tip_mass=0.0).build()  # the merged link + tip: moments 0.02, 0.03, 0.52
    with pytest.warns(UserWarning, match="'link'.*triangle"):
        arm(bad, tip_mass=0.0, physical="warn").build()
    arm(bad, tip_mass=0.0, physical="ignore").build()
    with pytest.raises(ds.ModelError, match="physical_inertia must be"):
        ds.ModelBuilder(physical_inertia="maybe")


def test_data_records_and_their_errors():
    b = arm([1e-3, 1e-3, 1e-3])
    b.add_geom("tip", "sphere", size=[0.05, 0, 0], pos=[0, 0, 0.1], name="ball")
    b.add_geom(None, "plane", size=[1, 1, 0.1], name="floor")
    b.add_joint_limit("link", -1.0, 2.0)
    b.add_actuator(Actuator("m", "motor", "joint", "link", (1.0,) + (0.0,) * 5, (-1.0, 1.0), None))
    m = b.build()
    assert m.joint_limits == (JointLimit("link", -1.0, 2.0, True),)
    assert [(g.name, g.body, g.type, g.size, g.pos, g.quat) for g in m.geoms] == [
        ("ball", "tip", "sphere", (0.05, 0.0, 0.0), (0.0, 0.0, 0.1), (1.0, 0.0, 0.0, 0.0)),
        ("floor", None, "plane", (1.0, 1.0, 0.1), (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))]
    assert m.actuators[0].target == "link"
    with pytest.raises(ds.ModelError, match="joint 'link': limit lower 2.0 > upper 1.0"):
        b.add_joint_limit("link", 2.0, 1.0)
    with pytest.raises(ds.ModelError, match="geom 'g': size must have shape"):
        b.add_geom("tip", "box", size=[1, 2], name="g")
    b.add_geom("nope", "box", name="ghost")
    with pytest.raises(ds.ModelError, match="geom 'ghost': unknown body 'nope'"):
        b.build()
    b = arm([1e-3, 1e-3, 1e-3]).add_joint_limit("elbow", 0.0, 1.0)
    with pytest.raises(ds.ModelError, match="joint limit: unknown joint 'elbow'"):
        b.build()
    b = arm([1e-3, 1e-3, 1e-3])
    b.add_body("x", parent="link", joint="revolute", mass=0.0, origin="URDF <link name='x'> (line 7)")
    with pytest.raises(ds.ModelError, match=r"body 'x' \[URDF <link name='x'> \(line 7\)\]: its revolute joint moves"):
        b.build()
