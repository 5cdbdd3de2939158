"""URDF import (plain Python, ``xml.etree``; no JAX here).

:func:`load_urdf` maps links to bodies and joints to diffsim joints:

* a link's frame is its parent joint's frame (URDF convention): the body is placed in its
  parent at the joint ``<origin xyz rpy>`` and the joint acts at the body origin, its ``<axis>``
  (normalised; default ``1 0 0``) in the body frame;
* ``revolute``/``continuous`` -> revolute, ``prismatic`` -> prismatic, ``fixed`` -> fixed,
  ``floating`` -> free (position of the child origin in the parent frame + quaternion
  ``[w,x,y,z]``; velocity ``[v, ω]`` in the child frame, as Pinocchio's free flyer), ``planar``
  -> planar (only with the plane normal ``axis = 0 0 1``: diffsim's planar joint moves in the
  parent joint frame's xy-plane);
* ``<inertial>``: ``<origin xyz rpy>`` (COM and inertia axes), ``<mass value>``,
  ``<inertia ixx ixy ixz iyy iyz izz>``; a link without one is massless;
* ``<dynamics damping>`` -> viscous joint damping (every DOF of the joint).

**Joint limits are not enforced**: ``<limit>`` (required by URDF for revolute and prismatic
joints) is read for nothing; effort/velocity limits, ``<safety_controller>`` and
``<calibration>`` are ignored too, as are visual and collision geometry, ``<material>``,
``<transmission>`` and ``<gazebo>``. Refused with a :class:`~diffsim.model.ModelError` naming
the element: ``<mimic>``, ``<dynamics friction>`` ≠ 0, zero axes, unknown joint types, planar
joints whose normal is not ``z``, and malformed trees (several roots, a link with two parents,
unknown links). Gravity is ``(0, 0, −9.81)`` m/s² (URDF has no gravity element).

Names: bodies are the link names, joints the URDF joint names; the root link's joint is
``root_joint`` with ``floating_base=True`` (free) and the root link's name otherwise (fixed),
with ``__root`` appended on a clash.
"""

from __future__ import annotations


import numpy as np

from ..model.builder import ModelBuilder, ModelError
from ..model.model import Model
from ..model.rotations import rpy_to_rot
from .xml import XmlDoc, floats

_TYPES = {
    "revolute": "revolute",
    "continuous": "revolute",
    "prismatic": "prismatic",
    "fixed": "fixed",
    "floating": "free",
    "planar": "planar",
}


def _origin(doc, el):
    o = el.find("origin")
    if o is None:
        return np.zeros(3), np.eye(3)
    w = doc.where(o)
    return floats(o.get("xyz", "0 0 0"), 3, w, "xyz"), rpy_to_rot(floats(o.get("rpy", "0 0 0"), 3, w, "rpy"))


def _link_inertia(doc, link):
    inertial = link.find("inertial")
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    w = doc.where(inertial)
    com, R = _origin(doc, inertial)
    m = inertial.find("mass")
    if m is None or "value" not in m.attrib:
        raise ModelError(f"URDF {w} of link {link.get('name')!r}: <mass value=...> is required")
    mass = float(floats(m.get("value"), 1, doc.where(m), "value")[0])
    ie = inertial.find("inertia")
    if ie is None:
        raise ModelError(f"URDF {w} of link {link.get('name')!r}: <inertia> is required")
    wi = doc.where(ie)
    c = {k: float(floats(ie.get(k, "0"), 1, wi, k)[0]) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    I = np.array(
        [[c["ixx"], c["ixy"], c["ixz"]], [c["ixy"], c["iyy"], c["iyz"]], [c["ixz"], c["iyz"], c["izz"]]]
    )
    return mass, com, R @ I @ R.T


def load_urdf(source, floating_base: bool = False, *, dtype=None) -> Model:
    """Load a URDF robot (file path or XML string) as a :class:`~diffsim.model.Model`.

    ``floating_base=True`` attaches the root link to the world with a free joint (named
    ``root_joint``); otherwise the root link is fixed to the world. Joint limits are ignored
    (not enforced). See this module's docstring for the mapping and the refused features.
    ``dtype`` is passed to :meth:`ModelBuilder.build`.
    """
    doc = XmlDoc(source, "URDF")
    robot = doc.root
    if robot.tag != "robot":
        raise ModelError(f"URDF: the root element must be <robot>, got {doc.where(robot)}")
    links = {}
    for link in robot.findall("link"):
        name = link.get("name")
        if not name:
            raise ModelError(f"URDF {doc.where(link)}: a link needs a name")
        if name in links:
            raise ModelError(f"URDF {doc.where(link)}: duplicate link name {name!r}")
        links[name] = link
    if not links:
        raise ModelError("URDF: the robot has no links")

    joints, parent_of = [], {}
    for joint in robot.findall("joint"):
        w = doc.where(joint)
        if not joint.get("name"):
            raise ModelError(f"URDF {w}: a joint needs a name")
        jtype = joint.get("type")
        if jtype not in _TYPES:
            raise ModelError(f"URDF {w}: unknown joint type {jtype!r} (supported: {sorted(_TYPES)})")
        if joint.find("mimic") is not None:
            raise ModelError(f"URDF {w}: <mimic> joints are not supported (they are constraints)")
        ends = {}
        for tag in ("parent", "child"):
            e = joint.find(tag)
            if e is None or not e.get("link"):
                raise ModelError(f"URDF {w}: <{tag} link=...> is required")
            if e.get("link") not in links:
                raise ModelError(f"URDF {w}: unknown {tag} link {e.get('link')!r}")
            ends[tag] = e.get("link")
        if ends["child"] in parent_of:
            raise ModelError(
                f"URDF {w}: link {ends['child']!r} already has parent joint {parent_of[ends['child']][0]!r} "
                "(a URDF must be a tree)"
            )
        parent_of[ends["child"]] = (joint.get("name"), ends["parent"])
        joints.append((joint, ends["parent"], ends["child"]))

    roots = [n for n in links if n not in parent_of]
    if len(roots) != 1:
        raise ModelError(
            f"URDF: the link tree must have exactly one root, found {len(roots)}: {roots}"
            + (" (the joints form a cycle)" if not roots else "")
        )
    root = roots[0]
    joint_names = {j.get("name") for j, _, _ in joints}
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81))
    mass, com, inertia = _link_inertia(doc, links[root])
    rname = "root_joint" if floating_base else root
    if rname in joint_names:
        rname += "__root"
    b.add_body(root, None, joint="free" if floating_base else "fixed", joint_name=rname,
               mass=mass, com=com, inertia=inertia)

    for joint, parent, child in joints:
        w = doc.where(joint)
        jtype = _TYPES[joint.get("type")]
        pos, R = _origin(doc, joint)
        axis_el = joint.find("axis")
        axis = np.array([1.0, 0.0, 0.0])
        if axis_el is not None:
            axis = floats(axis_el.get("xyz", "1 0 0"), 3, doc.where(axis_el), "xyz")
        n = np.linalg.norm(axis)
        if jtype in ("revolute", "prismatic", "planar"):
            if n < 1e-12:
                raise ModelError(f"URDF {w}: the joint axis is zero")
            axis = axis / n
        if jtype == "planar" and not np.allclose(axis, [0.0, 0.0, 1.0], atol=1e-12):
            raise ModelError(
                f"URDF {w}: planar joints are supported only with the plane normal along z "
                f"(axis 0 0 1), got {axis.tolist()}; rotate the joint origin so that the normal is z"
            )
        damping = 0.0
        dyn = joint.find("dynamics")
        if dyn is not None:
            wd = doc.where(dyn)
            damping = float(floats(dyn.get("damping", "0"), 1, wd, "damping")[0])
            if float(floats(dyn.get("friction", "0"), 1, wd, "friction")[0]) != 0.0:
                raise ModelError(f"URDF {wd} of joint {joint.get('name')!r}: joint friction is not supported")
        mass, com, inertia = _link_inertia(doc, links[child])
        b.add_body(child, parent, joint=jtype, joint_name=joint.get("name"),
                   axis=axis if jtype in ("revolute", "prismatic") else (0.0, 0.0, 1.0),
                   pos=pos, rot=R, mass=mass, com=com, inertia=inertia, damping=damping)
    return b.build(dtype)
