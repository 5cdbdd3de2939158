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
* ``<dynamics damping friction>`` -> viscous joint damping and Coulomb joint friction
  ``frictionloss`` (every DOF of the joint), the friction's sign smoothed over
  ``friction_width`` (argument of :func:`load_urdf`, default ``1e-3`` rad/s | m/s; per joint
  afterwards as the named parameter ``joint.<j>.friction_width``), see
  :func:`diffsim.model.joint_passive_forces`.

``<limit lower upper>`` of revolute/prismatic joints go to ``model.joint_limits``, enforced by
default by a :class:`diffsim.System` (:mod:`diffsim.contact.limits`; as MuJoCo's URDF import does),
and ``effort`` to ``model.actuators`` (kind ``"effort"``, a torque bound). Kept as data, not simulated:
``<collision>`` geometry (sphere, box, cylinder, capsule, mesh) in ``model.geoms`` (one warning
per load: contacts are not made from file geometry). Ignored: velocity limits,
``<safety_controller>``, ``<calibration>``, visual geometry, ``<material>``, ``<transmission>``
and ``<gazebo>``. Inertias are checked on each link merged with its fixed-joint children, with
tolerances relative to the link (see :func:`diffsim.model.builder.validate_inertia`); an inertia
that violates the triangle inequality is warned about (Pinocchio accepts it), not refused.
``<mimic joint multiplier offset>`` couples a revolute/prismatic joint to another 1-DoF joint,
``q = multiplier · q_joint + offset`` (:mod:`diffsim.model.mimic`; chains resolved); a
``<mimic>`` on a fixed joint is ignored (no coordinate to couple; Pinocchio does the same).
Refused with a :class:`~diffsim.model.ModelError` naming the element and its line: a ``<mimic>``
whose master is unknown or not 1-DoF, a cycle of mimics, a ``<mimic>`` on a planar or floating
joint, negative damping/friction, zero axes, unknown joint types, planar joints whose normal is not
``z``, malformed trees (several roots, a link with two parents, unknown links). A joint that moves
only massless links (with the joints that ``<mimic>`` it: their subtrees have neither mass nor
inertia, so the mass matrix is singular and the coordinate has no dynamics; Romeo's hands, the
small Romeo's grippers) is held fixed at its reference position (``q = 0``, a mimic at its ``offset``) with
one :class:`~diffsim.io.xml.UnsimulatedWarning` naming the joints (``massless='error'`` refuses
the file instead, naming the ``<link>`` and its line). Gravity is ``(0, 0, −9.81)`` m/s²
(URDF has no gravity element).

Names: bodies are the link names, joints the URDF joint names; the root link's joint is
``root_joint`` with ``floating_base=True`` (free) and the root link's name otherwise (fixed),
with ``__root`` appended on a clash.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..model.builder import ModelBuilder, ModelError
from ..model.model import Actuator, Model
from ..model.rotations import axis_angle_to_rot, rot_to_quat, rpy_to_rot
from .xml import UnsimulatedWarning, XmlDoc, floats, warn_unsimulated

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
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    missing = [k for k in keys if k not in ie.attrib]
    if missing:  # urdfdom ("inertia element missing ixy attribute") and MuJoCo refuse it: no default of 0
        raise ModelError(f"URDF {wi} of link {link.get('name')!r}: <inertia> needs all six of ixx, ixy, ixz, iyy, "
                         f"iyz and izz (write 0 for a zero product of inertia); missing {', '.join(missing)}")
    c = {k: float(floats(ie.get(k), 1, wi, k)[0]) for k in keys}
    I = np.array(
        [[c["ixx"], c["ixy"], c["ixz"]], [c["ixy"], c["iyy"], c["iyz"]], [c["ixz"], c["iyz"], c["izz"]]]
    )
    return mass, com, R @ I @ R.T


def _collisions(doc, b, link):
    """The link's ``<collision>`` shapes as data (MuJoCo's size convention: half sizes)."""
    for col in link.findall("collision"):
        geo = col.find("geometry")
        if geo is None or not len(geo):
            continue
        shape = geo[0]
        w = doc.where(shape)
        size, mesh = np.zeros(3), None
        if shape.tag == "sphere":
            size[0] = floats(shape.get("radius", "0"), 1, w, "radius")[0]
        elif shape.tag == "box":
            size = 0.5 * floats(shape.get("size", "0 0 0"), 3, w, "size")
        elif shape.tag in ("cylinder", "capsule"):
            size[0] = floats(shape.get("radius", "0"), 1, w, "radius")[0]
            size[1] = 0.5 * floats(shape.get("length", "0"), 1, w, "length")[0]
        elif shape.tag == "mesh":
            mesh = shape.get("filename")
        pos, R = _origin(doc, col)
        b.add_geom(link.get("name"), shape.tag, size, pos, rot_to_quat(R), col.get("name"), mesh)


def _massless_joints(doc, links, joints, root) -> dict:
    """``{joint: held position}`` of the 1-DoF joints whose subtree, together with the subtrees of
    the joints coupled to it by ``<mimic>``, has neither mass nor inertia (module docstring)."""
    # a link counts as inert only with zero mass and zero rotational inertia (a massless link
    # with inertia still gives a revolute joint dynamics; the builder judges that case)
    inert = {n: _link_inertia(doc, link) for n, link in links.items()}
    mass = {n: m + float(np.abs(I).sum()) for n, (m, _, I) in inert.items()}
    children: dict = {}
    for _, parent, child in joints:
        children.setdefault(parent, []).append(child)
    order, stack = [], [root]
    while stack:  # depth-first: parents before children
        order.append(stack.pop())
        stack.extend(children.get(order[-1], ()))
    sub: dict = {}
    for name in reversed(order):
        sub[name] = mass[name] + sum(sub[c] for c in children.get(name, ()))
    moving = {j.get("name"): child for j, _, child in joints if _TYPES[j.get("type")] in ("revolute", "prismatic")}
    mimic = {}
    for j, _, _ in joints:
        m = j.find("mimic")
        if m is not None and j.get("name") in moving and m.get("joint") in moving:
            wm = doc.where(m)
            mimic[j.get("name")] = (m.get("joint"), float(floats(m.get("multiplier", "1"), 1, wm, "multiplier")[0]),
                                    float(floats(m.get("offset", "0"), 1, wm, "offset")[0]))

    def root_and_hold(name, seen=()):  # the group's master and the joint's position when it is at 0
        if name not in mimic or name in seen:  # (a cycle is refused by the builder)
            return name, 0.0
        master, k, off = mimic[name]
        r, h = root_and_hold(master, seen + (name,))
        return r, k * h + off

    group_mass: dict = {}
    for name, child in moving.items():
        r = root_and_hold(name)[0]
        group_mass[r] = group_mass.get(r, 0.0) + sub[child]
    return {n: root_and_hold(n)[1] for n in moving if group_mass[root_and_hold(n)[0]] <= 0}


def load_urdf(source, floating_base: bool = False, *, friction_width: float = 1e-3, massless: str = "fix",
              dtype=None) -> Model:
    """Load a URDF robot (file path or XML string) as a :class:`~diffsim.model.Model`.

    ``floating_base=True`` attaches the root link to the world with a free joint (named
    ``root_joint``); otherwise the root link is fixed to the world. Joint limits go to
    ``model.joint_limits`` (a :class:`diffsim.System` enforces them; ``limits=False`` does not).
    ``friction_width`` [rad/s | m/s] smooths the sign of the Coulomb joint friction
    ``<dynamics friction>``. ``massless``: ``'fix'`` holds joints that move only massless links
    at their reference position (warning once, naming them), ``'error'`` refuses the file. See
    this module's docstring for the mapping and the refused features. ``dtype`` is passed to
    :meth:`ModelBuilder.build`.
    """
    if massless not in ("fix", "error"):
        raise ValueError(f"massless must be 'fix' or 'error', got {massless!r}")
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
        raise ModelError(f"URDF {doc.where(robot)}: the robot has no links")

    joints, parent_of = [], {}
    for joint in robot.findall("joint"):
        w = doc.where(joint)
        if not joint.get("name"):
            raise ModelError(f"URDF {w}: a joint needs a name")
        jtype = joint.get("type")
        if jtype not in _TYPES:
            raise ModelError(f"URDF {w}: unknown joint type {jtype!r} (supported: {sorted(_TYPES)})")
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
    children: dict = {}
    for _, parent, child in joints:
        children.setdefault(parent, []).append(child)
    reached, stack = {root}, [root]
    while stack:
        for c in children.get(stack.pop(), ()):
            if c not in reached:
                reached.add(c)
                stack.append(c)
    if len(reached) != len(links):
        lost = [n for n in links if n not in reached]
        raise ModelError(f"URDF: links {lost} are not reachable from the root link {root!r} (their joints form a cycle "
                         "detached from the tree)")
    joint_names = {j.get("name") for j, _, _ in joints}
    held = _massless_joints(doc, links, joints, root) if massless == "fix" else {}
    b = ModelBuilder(gravity=(0.0, 0.0, -9.81), physical_inertia="warn")
    mass, com, inertia = _link_inertia(doc, links[root])
    rname = "root_joint" if floating_base else root
    if rname in joint_names:
        rname += "__root"
    b.add_body(root, None, joint="free" if floating_base else "fixed", joint_name=rname,
               mass=mass, com=com, inertia=inertia, origin=f"URDF {doc.where(links[root])}")

    for joint, parent, child in joints:
        w = doc.where(joint)
        jtype = _TYPES[joint.get("type")]
        pos, R = _origin(doc, joint)
        name = joint.get("name")
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
        if name in held:  # moves no mass: held at its reference position (module docstring)
            if jtype == "revolute":
                R = R @ axis_angle_to_rot(axis, held[name])
            else:
                pos = pos + R @ axis * held[name]
            jtype = "fixed"
        damping = friction = 0.0
        dyn = joint.find("dynamics")
        if dyn is not None:
            wd = doc.where(dyn)
            damping = float(floats(dyn.get("damping", "0"), 1, wd, "damping")[0])
            friction = float(floats(dyn.get("friction", "0"), 1, wd, "friction")[0])
            if damping < 0 or friction < 0:
                raise ModelError(f"URDF {wd} of joint {joint.get('name')!r}: damping and friction must be non-negative")
        mim = joint.find("mimic")
        if mim is not None and jtype != "fixed":  # a fixed joint has no coordinate to couple
            wm = doc.where(mim)
            if jtype not in ("revolute", "prismatic"):
                raise ModelError(f"URDF {w}: a <mimic> joint must be revolute, continuous or prismatic, not {jtype}")
            if not mim.get("joint"):
                raise ModelError(f"URDF {wm} of joint {joint.get('name')!r}: <mimic joint=...> is required")
            b.add_mimic(joint.get("name"), mim.get("joint"),
                        float(floats(mim.get("multiplier", "1"), 1, wm, "multiplier")[0]),
                        float(floats(mim.get("offset", "0"), 1, wm, "offset")[0]), origin=f"URDF {wm} of {w}")
        mass, com, inertia = _link_inertia(doc, links[child])
        b.add_body(child, parent, joint=jtype, joint_name=joint.get("name"),
                   axis=axis if jtype in ("revolute", "prismatic") else (0.0, 0.0, 1.0),
                   pos=pos, rot=R, mass=mass, com=com, inertia=inertia, damping=damping,
                   frictionloss=friction, friction_width=friction_width, origin=f"URDF {doc.where(links[child])}")
        lim = joint.find("limit")
        if lim is not None and jtype in ("revolute", "prismatic"):
            wl = doc.where(lim)
            val = {k: float(floats(lim.get(k), 1, wl, k)[0]) for k in ("lower", "upper", "effort") if k in lim.attrib}
            if joint.get("type") != "continuous" and ("lower" in val or "upper" in val):
                lo, hi = val.get("lower", 0.0), val.get("upper", 0.0)
                if lo > hi:
                    raise ModelError(f"URDF {wl} of joint {joint.get('name')!r}: lower {lo} > upper {hi}")
                b.add_joint_limit(joint.get("name"), lo, hi)
            if val.get("effort", 0.0) < 0:
                raise ModelError(f"URDF {wl} of joint {joint.get('name')!r}: effort {val['effort']} must be non-negative")
            if val.get("effort", 0.0) > 0:
                e = val["effort"]
                b.add_actuator(Actuator(joint.get("name"), "effort", "joint", joint.get("name"),
                                        (1.0, 0.0, 0.0, 0.0, 0.0, 0.0), None, (-e, e)))
    for link in links.values():
        _collisions(doc, b, link)
    model = b.build(dtype)
    if held:
        names = sorted(held)
        warnings.warn(f"URDF: {len(names)} joints move only massless links (their mass matrix rows would be zero) and "
                      f"are held fixed at their reference position: {', '.join(names[:6])}"
                      + (", …" if len(names) > 6 else "") + "; load_urdf(..., massless='error') refuses the file instead",
                      UnsimulatedWarning, stacklevel=2)
    warn_unsimulated(model, "URDF")
    return model
