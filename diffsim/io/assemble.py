"""MuJoCo bodies as MuJoCo's compiler sees them (body frames, several joints per body, joint
anchors) and their assembly into a diffsim model (one joint per body), shared by
:func:`diffsim.io.load_mjcf` and :func:`diffsim.io.from_mjmodel`; conventions in
:mod:`diffsim.io.mjcf`."""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..model.builder import ModelBuilder, ModelError
from ..model.fluid import Fluid, principal_axes
from ..model.model import Model, TendonSprings
from ..model.rotations import axis_angle_to_rot, rot_to_quat


@dataclasses.dataclass
class RawJoint:
    kind: str  # "hinge" | "slide" | "ball" | "free"
    name: str | None
    pos: np.ndarray  # anchor in the MuJoCo body frame
    axis: np.ndarray  # unit axis in the MuJoCo body frame (hinge/slide)
    damping: float
    armature: float
    where: str
    range: tuple | None = None  # (lower, upper) when limited (kept as data)
    frictionloss: float = 0.0  # Coulomb friction F_s (every DOF of the joint)
    stiffness: float = 0.0  # joint spring K (hinge / slide)
    springref: float = 0.0  # its rest position (rad / m)
    ref: float = 0.0  # MuJoCo's qpos0: the joint coordinate at which the body has its file placement
    actfrcrange: tuple | None = None  # MuJoCo's actuatorfrcrange when limited
    springdamper: tuple | None = None  # MuJoCo's (timeconst, dampratio): stiffness and damping set at compile


@dataclasses.dataclass
class RawSite:
    name: str | None
    id: int  # MuJoCo site id (world sites included)
    pos: np.ndarray
    rot: np.ndarray


@dataclasses.dataclass
class RawGeom:
    name: str | None
    type: str
    size: np.ndarray  # MuJoCo's 3 sizes
    pos: np.ndarray  # in the MuJoCo body frame
    rot: np.ndarray
    mesh: str | None = None


@dataclasses.dataclass
class RawBody:
    """A MuJoCo body as MuJoCo's compiler sees it (MuJoCo body frame, preorder)."""

    name: str | None
    parent: int  # index in the body list, -1 for the world
    pos: np.ndarray
    rot: np.ndarray
    joints: list
    mass: float
    com: np.ndarray
    inertia: np.ndarray  # 3x3 about the COM, body axes
    sites: list
    where: str
    geoms: list = dataclasses.field(default_factory=list)


KIND_TO_JOINT = {"hinge": "revolute", "slide": "prismatic", "ball": "spherical", "free": "free"}


def _fresh(base: str, used: set, suffix: str = "") -> str:
    name = base if base not in used else base + suffix
    k = 1
    while not name or name in used:
        name = f"{base}{suffix}__{k}"
        k += 1
    used.add(name)
    return name


def equality_coupling(where: str, kind: str, poly, refs: dict, *, joints=(None, None), tendon=None,
                      two_tendons: bool = False):
    """A MuJoCo equality constraint that is a linear coupling of two 1-DoF joints, as a mimic
    ``(joint, master, multiplier, offset, where)`` (:mod:`diffsim.model.mimic`): a hard coupling
    where MuJoCo's is a stiff soft constraint. With ``x₀``/``y₀`` the coordinates at qpos0 (the
    joints' ``ref``, ``refs``) and ``L₀`` the tendon's length there, MuJoCo's constraints are
    ``<joint joint1=y joint2=x polycoef=a>``: ``y − y₀ = a₀ + a₁ (x − x₀)`` (a₂…a₄ = 0), so
    ``y = a₁ x + y₀ + a₀ − a₁ x₀``; and ``<tendon tendon1=T>`` on a fixed tendon
    ``L = c₁ q₁ + c₂ q₂``: ``L − L₀ = a₀``, so ``q₂ = −(c₁/c₂) q₁ + (L₀ + a₀)/c₂``. Raises
    :class:`ModelError` naming ``where`` for anything else: connect, weld and flex equalities,
    a joint fixed by an equality (no joint2), polynomial couplings, a coupling of two tendons or
    of a tendon that is not fixed over exactly two joints."""
    if kind not in ("joint", "tendon"):
        raise ModelError(f"{where}: {kind} equality constraints are not supported (linear joint and fixed-tendon "
                         "couplings only)")
    if np.any(np.asarray(poly[2:]) != 0):
        raise ModelError(f"{where}: a polynomial coupling (polycoef {list(map(float, poly))}) is not supported "
                         "(linear only)")
    a0, a1 = float(poly[0]), float(poly[1])
    if kind == "joint":
        y, x = joints
        if not y or not x:
            raise ModelError(f"{where}: a joint equality without joint2 fixes the joint; not supported (remove the "
                             "joint instead)")
        for j in (y, x):
            if j not in refs:
                raise ModelError(f"{where}: unknown joint {j!r}")
        return y, x, a1, refs[y] + a0 - a1 * refs[x], where
    if two_tendons or tendon is None or tendon.kind != "fixed" or len(tendon.joints) != 2:
        raise ModelError(f"{where}: only a fixed tendon over two joints, held at its length, is supported (a coupling "
                         "of two coordinates)")
    (j1, c1), (j2, c2) = tendon.joints
    if c2 == 0:
        raise ModelError(f"{where}: the tendon's second coefficient is zero")
    L0 = c1 * refs.get(j1, 0.0) + c2 * refs.get(j2, 0.0)
    return j2, j1, -c1 / c2, (L0 + a0) / c2, where


def _with_tendon_springs(model: Model, springs, refs: dict) -> Model:
    """The model with :class:`~diffsim.model.model.TendonSprings` from ``(name, joints, k, b,
    rest length or None)``."""
    t = model.topology
    C = np.zeros((len(springs), t.nv_rigid))
    rest = []
    for r, (name, joints, _, _, length) in enumerate(springs):
        for joint, coef in joints:
            i = t.joint_index(joint)
            if t.nv_joint[i] != 1:
                raise ModelError(f"tendon {name!r}: joint {joint!r} is not a hinge or slide joint")
            C[r, t.v_start[i]] += coef
        rest.append(sum(coef * refs.get(joint, 0.0) for joint, coef in joints) if length is None else length)
    dt = model.dtype
    ts = TendonSprings(tuple(s[0] for s in springs), jnp.asarray(C, dt), jnp.asarray([s[2] for s in springs], dt),
                       jnp.asarray([s[3] for s in springs], dt), jnp.asarray(rest, dt))
    return eqx.tree_at(lambda m: m.tendon_springs, model, ts, is_leaf=lambda x: x is None)


def assemble(bodies: list[RawBody], gravity, dtype=None, *, world_geoms=(), actuators=(), what="MJCF",
             friction_width: float = 1e-3, tendons=(), mimics=(), fluid=None, tendon_springs=()) -> Model:
    """MuJoCo bodies -> diffsim model (one joint per body; see the module docstring). Geoms,
    joint ranges and ``actuators`` (:class:`~diffsim.model.model.Actuator`) are kept as data;
    ``mimics``: ``(joint, master, multiplier, offset, origin)`` couplings (MJCF equalities);
    ``fluid``: ``(density, viscosity)`` of MuJoCo's inertia-box fluid model (:mod:`diffsim.model.fluid`);
    ``tendon_springs``: ``(name, ((joint, coef), …), stiffness, damping, rest length or None)`` of
    fixed tendons (``None``: MuJoCo's default, the length with the joints at their ``springref``)."""
    b = ModelBuilder(gravity=gravity)
    used_bodies = {bd.name for bd in bodies if bd.name}
    names = [bd.name if bd.name else _fresh(f"body{i + 1}", used_bodies) for i, bd in enumerate(bodies)]
    used_joints = {j.name for bd in bodies for j in bd.joints if j.name}
    dup = [j.name for bd in bodies for j in bd.joints if j.name]
    if len(dup) != len(set(dup)):
        raise ModelError(f"duplicate joint names {sorted({n for n in dup if dup.count(n) > 1})}")
    used_sites = {s.name for bd in bodies for s in bd.sites if s.name}
    shift = [np.zeros(3) for _ in bodies]  # MuJoCo body origin -> diffsim body origin (body coords)

    for i, bd in enumerate(bodies):
        name = names[i]
        parent = None if bd.parent < 0 else names[bd.parent]
        pos0 = np.asarray(bd.pos, float) - (shift[bd.parent] if bd.parent >= 0 else 0.0)
        joints = bd.joints
        kinds = [j.kind for j in joints]
        if not joints:
            b.add_body(name, parent, joint="fixed", joint_name=_fresh(name, used_joints, "__fixed"),
                       pos=pos0, rot=bd.rot, mass=bd.mass, com=bd.com, inertia=bd.inertia, origin=f"{what} {bd.where}")
        elif "free" in kinds:
            j = joints[kinds.index("free")]
            if j.stiffness != 0:
                raise ModelError(f"{what} {j.where}: a spring (stiffness) on a free joint is not supported")
            if j.frictionloss != 0:
                raise ModelError(f"{what} {j.where}: frictionloss on a free joint is not supported (MuJoCo applies it to "
                                 "world-frame linear velocities, diffsim's free-joint velocity is in the body frame)")
            if len(joints) > 1:
                raise ModelError(f"{j.where}: a free joint must be the only joint of its body {name!r}")
            if bd.parent >= 0:
                raise ModelError(
                    f"{j.where}: free joints are supported only in children of the world body "
                    f"(body {name!r} has parent {parent!r})"
                )
            b.add_body(name, None, joint="free", joint_name=j.name or _fresh(name, used_joints),
                       mass=bd.mass, com=bd.com, inertia=bd.inertia,
                       damping=j.damping, armature=j.armature, origin=f"{what} {bd.where}")
        else:
            prev = parent
            for j in joints:
                if j.kind == "ball" and j.stiffness != 0:
                    raise ModelError(f"{what} {j.where}: a spring (stiffness) on a ball joint is not supported")
            for k, j in enumerate(joints):
                last = k == len(joints) - 1
                if k == 0:
                    pos, rot = pos0 + bd.rot @ j.pos, bd.rot
                else:
                    pos, rot = j.pos - joints[k - 1].pos, np.eye(3)
                if j.ref and j.kind == "hinge":  # diffsim's q = 0 is MuJoCo's qpos = 0, i.e. ref away
                    rot = rot @ axis_angle_to_rot(j.axis, -j.ref)
                elif j.ref and j.kind == "slide":
                    pos = pos - j.ref * (rot @ j.axis)
                if last:
                    bname = name
                    jname = j.name or _fresh(name, used_joints)
                    mass, com, inertia = bd.mass, bd.com - j.pos, bd.inertia
                else:
                    tag = j.name or f"j{k}"
                    bname = _fresh(f"{name}__{tag}", used_bodies)
                    jname = j.name or _fresh(f"{name}__j{k}", used_joints)
                    mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
                b.add_body(bname, prev, joint=KIND_TO_JOINT[j.kind], joint_name=jname,
                           axis=j.axis if j.kind in ("hinge", "slide") else (0.0, 0.0, 1.0),
                           pos=pos, rot=rot, mass=mass, com=com, inertia=inertia,
                           damping=j.damping, armature=j.armature, frictionloss=j.frictionloss,
                           friction_width=friction_width, stiffness=j.stiffness, springref=j.springref, origin=f"{what} {bd.where if last else j.where}")
                if j.range is not None:
                    b.add_joint_limit(jname, *j.range)
                if j.actfrcrange is not None:
                    b.add_actuator_force_range(jname, *j.actfrcrange)
                prev = bname
            shift[i] = np.asarray(joints[-1].pos, float)
        for s in bd.sites:
            sname = s.name or _fresh(f"site{s.id}", used_sites)
            b.add_site(sname, name, pos=np.asarray(s.pos, float) - shift[i], quat=rot_to_quat(s.rot))
        for g in bd.geoms:
            b.add_geom(name, g.type, g.size, np.asarray(g.pos, float) - shift[i], rot_to_quat(g.rot), g.name, g.mesh)
    for g in world_geoms:
        b.add_geom(None, g.type, g.size, g.pos, rot_to_quat(g.rot), g.name, g.mesh)
    for a in actuators:
        b.add_actuator(a)
    for ten in tendons:
        b.add_tendon(ten)
    for joint, master, multiplier, offset, origin in mimics:
        b.add_mimic(joint, master, multiplier, offset, origin=origin)
    model = b.build(dtype)
    if tendon_springs:
        model = _with_tendon_springs(model, tendon_springs, {j.name: j.springref for bd in bodies for j in bd.joints if j.name})
    if fluid is not None:
        dt = model.dtype
        medium = Fluid(jnp.asarray(fluid[0], dt), jnp.asarray(fluid[1], dt), jnp.asarray(principal_axes(model.inertia), dt))
        model = eqx.tree_at(lambda m: m.fluid, model, medium, is_leaf=lambda x: x is None)
    return model
