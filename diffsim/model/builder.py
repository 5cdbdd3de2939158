"""Build and validate models in Python (no tracing here): every error names the body."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .flexbody import FlexBody
from .joints import NV, USES_AXIS, JointType, motion_subspace, neutral
from .mimic import Mimic
from .model import Actuator, ActuatorForceRange, Geom, JointLimit, Model, Tendon, actuator_data_problem
from .rotations import quat_to_rot, rot_to_quat
from .topology import Topology


class ModelError(ValueError):
    """A model description that diffsim refuses, with the offending element named."""


_JOINT_ALIASES = {
    "fixed": JointType.FIXED,
    "weld": JointType.FIXED,
    "revolute": JointType.REVOLUTE,
    "hinge": JointType.REVOLUTE,
    "continuous": JointType.REVOLUTE,
    "prismatic": JointType.PRISMATIC,
    "slide": JointType.PRISMATIC,
    "spherical": JointType.SPHERICAL,
    "ball": JointType.SPHERICAL,
    "free": JointType.FREE,
    "floating": JointType.FREE,
    "planar": JointType.PLANAR,
}


def joint_type(name) -> JointType:
    if isinstance(name, JointType):
        return name
    try:
        return _JOINT_ALIASES[str(name).lower()]
    except KeyError:
        raise ModelError(
            f"unsupported joint type {name!r}; supported: {sorted(set(_JOINT_ALIASES))}"
        ) from None


def _vec(value, shape, what, owner):
    arr = np.asarray(value, dtype=float)
    if arr.shape != shape:
        raise ModelError(f"{owner}: {what} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{owner}: {what} has non-finite entries: {arr.tolist()}")
    return arr


def _rotation(quat, rot, owner):
    """The rotation given by a quaternion or a matrix (identity if neither), checked."""
    if quat is not None and rot is not None:
        raise ModelError(f"{owner}: give quat or rot, not both")
    if quat is not None:
        q = _vec(quat, (4,), "quat", owner)
        if np.linalg.norm(q) < 1e-12:
            raise ModelError(f"{owner}: zero quaternion")
        return quat_to_rot(q)
    if rot is not None:
        R = _vec(rot, (3, 3), "rot", owner)
        if not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
            raise ModelError(f"{owner}: rot is not a rotation matrix")
        return R
    return np.eye(3)


_GYRATION_FLOOR = 1e-7  # m: a radius of gyration below 0.1 µm is a zero moment (round-off in a file)


def inertia_matrix(inertia, owner):
    """The 3x3 inertia of a 3-vector (diagonal) or a 3x3: shape, finite and symmetric checked."""
    I = np.asarray(inertia, float)
    if I.shape == (3,):
        I = np.diag(I)
    if I.shape != (3, 3):
        raise ModelError(f"{owner}: inertia must be a 3-vector (diagonal) or 3x3, got shape {I.shape}")
    if not np.all(np.isfinite(I)):
        raise ModelError(f"{owner}: inertia has non-finite entries")
    if not np.allclose(I, I.T, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(I).max())):
        raise ModelError(f"{owner}: inertia is not symmetric: {I.tolist()}")
    return 0.5 * (I + I.T)


def validate_inertia(inertia, mass, owner, *, physical="error"):
    """Check the rotational inertia ``I`` (about the COM) of a body of mass ``m``.

    Tolerances are relative to the body's own scale: with principal moments
    ``λ1 ≤ λ2 ≤ λ3``, round-off is ``tol = 1e-9 λ3 + m ρ²`` with ``ρ = 0.1 µm`` (a radius of
    gyration below that is a zero moment, e.g. a point mass written with ``1e-35`` entries).
    Refused: ``λ1 < −tol`` (not positive semi-definite). The triangle inequality
    ``λ1 + λ2 ≥ λ3 − tol`` (a physical mass distribution) is refused when ``physical="error"``,
    warned about with ``"warn"`` and not checked with ``"ignore"``. A point mass (``I = 0``,
    ``m > 0``) is accepted. Returns the symmetrised matrix."""
    I = inertia_matrix(inertia, owner)
    ev = np.linalg.eigvalsh(I)
    tol = 1e-9 * abs(ev).max() + mass * _GYRATION_FLOOR**2
    if ev.min() < -tol:
        kind = "a massless body" if mass == 0 else "a body"
        raise ModelError(
            f"{owner}: inertia is not positive definite (eigenvalues {ev.tolist()}): the inertia of {kind} "
            "has a negative principal moment beyond round-off"
        )
    a, b, c = ev
    if physical != "ignore" and a + b < c - tol:
        msg = (f"{owner}: principal moments {ev.tolist()} violate the triangle inequality "
               "(I1 + I2 >= I3): no physical mass distribution has this inertia")
        if physical == "error":
            raise ModelError(msg)
        warnings.warn(msg, stacklevel=3)
    return I


def _check_leaf_motion(b, mass, com, inertia, owner):
    """A body at the end of the moving tree must have kinetic energy in every motion its joint
    allows, or the mass matrix is singular in every configuration. With ``m > 0`` the energy of a
    body velocity (ω, v_o) at its origin vanishes only if its COM stands still, ``v_o + ω × c = 0``,
    and ω lies along a zero principal moment of ``I_c`` (a point mass, a line mass about its line):
    the joint's rates ``u`` with ``(ω, v_o) = S u`` (``S`` at the neutral configuration) must not
    satisfy both. Zero moments use :func:`validate_inertia`'s round-off floor."""
    S = np.asarray(motion_subspace(b.joint, jnp.asarray(b.axis), neutral(b.joint)), float)
    ev, vec = np.linalg.eigh(inertia)
    tol = 1e-9 * abs(ev).max() + mass * _GYRATION_FLOOR**2
    R = vec[:, ev > tol]  # directions with a moment
    cx = np.array([[0.0, -com[2], com[1]], [com[2], 0.0, -com[0]], [-com[1], com[0], 0.0]])
    A = np.vstack([R.T @ S[:3], S[3:] - cx @ S[:3]])  # (ω's part with a moment, COM velocity) per rate
    sv = np.linalg.svd(A, compute_uv=False)
    if sv.size < S.shape[1] or sv.min() <= 1e-9 * max(sv.max(), 1.0):
        raise ModelError(f"{owner}: its {b.joint.value} joint can move the body without moving any of its mass (a point "
                         "mass on a revolute axis or at a spherical joint's centre, a line mass about its own line), so "
                         "the mass matrix would be singular in every configuration: give the body a rotational inertia")


@dataclasses.dataclass
class _Body:
    name: str
    parent: str | None
    joint: JointType
    joint_name: str
    axis: np.ndarray
    pos: np.ndarray
    rot: np.ndarray
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    damping: np.ndarray
    armature: np.ndarray
    frictionloss: np.ndarray
    friction_width: np.ndarray
    flex: object = None
    origin: str | None = None  # where the body comes from (a file element), named in errors
    stiffness: float = 0.0  # joint spring K (revolute / prismatic)
    springref: float = 0.0  # its rest position

    @property
    def owner(self) -> str:
        return f"body {self.name!r}" + (f" [{self.origin}]" if self.origin else "")


def _cast(tree, dtype):
    """Every float leaf of ``tree`` as a JAX array of ``dtype`` (default: JAX's float)."""
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype if dtype is not None else jnp.result_type(float)), tree)


@dataclasses.dataclass
class _Site:
    name: str
    body: str
    pos: np.ndarray
    rot: np.ndarray


class ModelBuilder:
    """Incremental, validating model builder.

    >>> b = ModelBuilder()
    >>> b.add_body("base", joint="free", mass=400.0, inertia=[900, 900, 900])
    >>> b.add_body("link", parent="base", joint="revolute", axis=[0, 0, 1], pos=[0.5, 0, 0],
    ...            mass=1.0, com=[0.5, 0, 0], inertia=[0.01, 0.1, 0.1])
    >>> model = b.build()
    """

    def __init__(self, gravity: Sequence[float] = (0.0, 0.0, -9.81), *, physical_inertia: str = "error"):
        """``physical_inertia``: what :meth:`build` does with an inertia that violates the
        triangle inequality, ``"error"`` (default), ``"warn"`` or ``"ignore"`` (see
        :func:`validate_inertia`)."""
        if physical_inertia not in ("error", "warn", "ignore"):
            raise ModelError(f"physical_inertia must be 'error', 'warn' or 'ignore', got {physical_inertia!r}")
        self.physical_inertia = physical_inertia
        self._bodies: list[_Body] = []
        self._sites: list[_Site] = []
        self._geoms: list[Geom] = []
        self._limits: list[JointLimit] = []
        self._actuators: list[Actuator] = []
        self._tendons: list[Tendon] = []
        self._force_ranges: list[ActuatorForceRange] = []
        self._mimics: list[tuple] = []
        self.gravity = _vec(gravity, (3,), "gravity", "model")

    def set_gravity(self, gravity):
        self.gravity = _vec(gravity, (3,), "gravity", "model")
        return self

    def add_body(
        self,
        name: str,
        parent: str | None = None,
        *,
        joint="fixed",
        joint_name: str | None = None,
        axis=(0.0, 0.0, 1.0),
        pos=(0.0, 0.0, 0.0),
        quat=None,
        rot=None,
        mass: float = 0.0,
        com=(0.0, 0.0, 0.0),
        inertia=(0.0, 0.0, 0.0),
        damping=0.0,
        armature=0.0,
        frictionloss=0.0,
        friction_width=1e-3,
        flex=None,
        origin: str | None = None,
        stiffness: float = 0.0,
        springref: float = 0.0,
    ):
        """Add a body attached to ``parent`` (``None``: the world) by a joint.

        ``pos`` [m] and ``quat``/``rot`` place the body frame in the parent frame at the
        joint's zero; ``com`` [m] and ``inertia`` [kg m²] (about the COM, body axes; a 3-vector
        is a diagonal) describe the mass distribution; ``axis`` is the unit joint axis in the
        body frame (revolute/prismatic); ``damping`` [N m s/rad | N s/m], ``armature`` [kg m² | kg],
        ``frictionloss`` (Coulomb friction ``F_s`` [N m | N]) and ``friction_width`` (the smoothing
        width ``ε`` of its sign [rad/s | m/s], see :func:`diffsim.model.model.joint_passive_forces`)
        are per joint DOF (a scalar is broadcast).

        ``flex``: a :class:`diffsim.flexible.FlexBody` (e.g. from :func:`diffsim.beam`) makes the
        link flexible; ``mass``/``com``/``inertia`` are then its rigid part (hub), and its
        children attach to the deformed distal end (their ``pos``/``quat`` are relative to the
        end frame).

        ``origin`` (e.g. ``"URDF <link name='a'> (line 12)"``) is appended to the errors that
        :meth:`build` raises about this body. ``stiffness`` ``K`` [N m/rad | N/m] and
        ``springref`` ``q_ref`` [rad | m] make a joint spring ``K (q − q_ref)`` on a revolute or
        prismatic joint (MuJoCo's ``stiffness``/``springref``).
        """
        owner = f"body {name!r}" + (f" [{origin}]" if origin else "")
        if not isinstance(name, str) or not name:
            raise ModelError(f"body name must be a non-empty string, got {name!r}")
        if any(b.name == name for b in self._bodies):
            raise ModelError(f"{owner}: a body with this name already exists")
        jtype = joint_type(joint)
        mass = float(mass)
        if not np.isfinite(mass) or mass < 0:
            raise ModelError(f"{owner}: mass must be finite and non-negative, got {mass}")
        axis = _vec(axis, (3,), "joint axis", owner)
        if jtype in USES_AXIS and abs(np.linalg.norm(axis) - 1.0) > 1e-6:
            raise ModelError(f"{owner}: joint axis must be a unit vector, got {axis.tolist()} (norm {np.linalg.norm(axis):.6g})")
        pos = _vec(pos, (3,), "pos", owner)
        R = _rotation(quat, rot, owner)
        com = _vec(com, (3,), "com", owner)
        inertia = inertia_matrix(inertia, owner)  # definiteness: checked in build(), fixed children merged
        nv = NV[jtype]
        per_dof = {}
        for what, value in (("damping", damping), ("armature", armature), ("frictionloss", frictionloss),
                            ("friction_width", friction_width)):
            try:
                arr = np.broadcast_to(np.asarray(value, float), (nv,)).copy() if nv else np.zeros(0)
            except ValueError:
                raise ModelError(f"{owner}: {what} must be a scalar or have one entry per joint DOF ({nv})") from None
            if np.any(arr < 0) or not np.all(np.isfinite(arr)):
                raise ModelError(f"{owner}: joint {what} must be finite and non-negative, got {value}")
            per_dof[what] = arr
        if np.any(per_dof["friction_width"] <= 0):
            raise ModelError(f"{owner}: friction_width must be positive, got {friction_width}")
        stiffness, springref = float(stiffness), float(springref)
        if not (np.isfinite(stiffness) and stiffness >= 0 and np.isfinite(springref)):
            raise ModelError(f"{owner}: joint stiffness must be finite and non-negative and springref finite, "
                             f"got {stiffness}, {springref}")
        if (stiffness or springref) and jtype not in (JointType.REVOLUTE, JointType.PRISMATIC):
            raise ModelError(f"{owner}: joint springs (stiffness, springref) need a revolute or prismatic joint, "
                             f"not {jtype.value}")
        if flex is not None:
            if not isinstance(flex, FlexBody):
                raise ModelError(f"{owner}: flex must be a diffsim.flexible.FlexBody, got {type(flex).__name__}")
            if flex.ne < 1:
                raise ModelError(f"{owner}: a flexible link needs at least one mode")
        self._bodies.append(
            _Body(name, parent, jtype, joint_name or name, axis, pos, R, mass, com, inertia, per_dof["damping"],
                  per_dof["armature"], per_dof["frictionloss"], per_dof["friction_width"], flex, origin, stiffness, springref)
        )
        return self

    def add_site(self, name: str, body: str, pos=(0.0, 0.0, 0.0), quat=None):
        """A named frame on a body (a point where forces act or that is observed)."""
        owner = f"site {name!r}"
        if any(s.name == name for s in self._sites):
            raise ModelError(f"{owner}: a site with this name already exists")
        R = _rotation(quat, None, owner)
        self._sites.append(_Site(name, body, _vec(pos, (3,), "pos", owner), R))
        return self

    def add_geom(self, body: str | None, type: str, size=(0.0, 0.0, 0.0), pos=(0.0, 0.0, 0.0), quat=None,
                 name: str | None = None, mesh: str | None = None):
        """Keep a geom as data on the model (``Model.geoms``; ``body=None``: the world). The
        model does not simulate it: contact geometry is data for :mod:`diffsim.contact`."""
        owner = f"geom {name!r}" if name else f"geom of body {body!r}"
        q = _rotation(quat, None, owner)
        self._geoms.append(Geom(name, body, str(type), tuple(float(x) for x in _vec(size, (3,), "size", owner)),
                                tuple(float(x) for x in _vec(pos, (3,), "pos", owner)),
                                tuple(float(x) for x in rot_to_quat(q)), mesh))
        return self

    def add_joint_limit(self, joint: str, lower: float, upper: float, enforced: bool = True):
        """A joint range ``[lower, upper]`` (``Model.joint_limits``); ``enforced``: a
        :class:`diffsim.System` enforces it by default (:mod:`diffsim.contact.limits`; 1-DoF joints)."""
        lower, upper = float(lower), float(upper)
        if not lower <= upper:
            raise ModelError(f"joint {joint!r}: limit lower {lower} > upper {upper}")
        self._limits.append(JointLimit(joint, lower, upper, bool(enforced)))
        return self

    def add_actuator_force_range(self, joint: str, lower: float, upper: float):
        """Clamp the actuators' total generalised force on a 1-DoF joint to ``[lower, upper]``
        (MuJoCo's joint ``actuatorfrcrange``)."""
        if not lower <= upper:
            raise ModelError(f"actuator force range of joint {joint!r}: lower {lower} > upper {upper}")
        self._force_ranges.append(ActuatorForceRange(joint, float(lower), float(upper)))

    def add_actuator(self, actuator: Actuator):
        """Add an actuator (``Model.actuators``; applied by :func:`diffsim.actuation` when a simulation
        is given ``ctrl=``). Refuses one whose data do not say what it does
        (:func:`~diffsim.model.model.actuator_data_problem`: an empty ``gear``, a ``position`` or
        ``velocity`` actuator without its ``gainprm`` / ``biasprm``)."""
        a = actuator
        problem = actuator_data_problem(a)
        if problem is not None:
            raise ModelError(f"actuator {a.name or '(unnamed)'!r} ({a.kind} on {a.trntype} {a.target!r}): {problem}")
        self._actuators.append(actuator)
        return self

    def add_tendon(self, tendon: Tendon):
        """Keep a tendon as data (``Model.tendons``; it exerts no force)."""
        self._tendons.append(tendon)
        return self

    def add_mimic(self, joint: str, master: str, multiplier: float = 1.0, offset: float = 0.0,
                  origin: str | None = None):
        """Couple the 1-DoF joint ``joint`` to the 1-DoF joint ``master``:
        ``q_joint = multiplier · q_master + offset`` (``offset`` in rad | m; see
        :mod:`diffsim.model.mimic`). ``origin`` (e.g. ``"URDF <joint name='f2'> (line 9)"``) is
        named in the errors that :meth:`build` raises about it (unknown or non-1-DoF joints, a
        joint that mimics itself, two masters, a cycle of mimics). A mimic of a mimic is
        resolved (the chain composes)."""
        owner = f"mimic joint {joint!r}" + (f" [{origin}]" if origin else "")
        multiplier, offset = float(multiplier), float(offset)
        if not (np.isfinite(multiplier) and np.isfinite(offset)):
            raise ModelError(f"{owner}: multiplier and offset must be finite, got {multiplier}, {offset}")
        if joint == master:
            raise ModelError(f"{owner}: a joint cannot mimic itself")
        if any(m[0] == joint for m in self._mimics):
            raise ModelError(f"{owner}: the joint already mimics another joint")
        self._mimics.append((joint, master, multiplier, offset, owner))
        return self

    def _mimic_groups(self) -> dict:
        """Joint name -> a representative of its set of mimic-coupled joints (union-find; only
        joints named in a mimic)."""
        rep: dict = {}

        def find(j):
            rep.setdefault(j, j)
            while rep[j] != j:
                j = rep[j]
            return j

        for joint, master, *_ in self._mimics:
            rep[find(joint)] = find(master)
        return {j: find(j) for j in rep}

    def _mimic(self, topo: Topology, dtype):
        """The :class:`Mimic` of the built tree (``None`` without mimics), validated."""
        if not self._mimics:
            return None
        by_joint = {}
        for joint, master, mult, off, owner in self._mimics:
            for role, name in (("joint", joint), ("master joint", master)):
                if name not in topo.joint_names:
                    raise ModelError(f"{owner}: unknown {role} {name!r}")
                i = topo.joint_index(name)
                if topo.nv_joint[i] != 1 or topo.nq_joint[i] != 1:
                    raise ModelError(f"{owner}: the {role} {name!r} is {topo.joint_types[i].value}; mimic joints "
                                     "couple two 1-DoF joints (revolute or prismatic)")
            by_joint[joint] = (master, mult, off, owner)
        depth = {}

        def resolve(j, path):
            if j not in by_joint:
                return 0
            if j in path:
                cycle = " -> ".join(path[path.index(j):] + (j,))
                raise ModelError(f"{by_joint[j][3]}: the mimic joints form a cycle ({cycle})")
            if j not in depth:
                depth[j] = 1 + resolve(by_joint[j][0], path + (j,))
            return depth[j]

        names = [m[0] for m in self._mimics]
        for j in names:
            resolve(j, ())
        levels = tuple(tuple(k for k, j in enumerate(names) if depth[j] == d) for d in range(1, max(depth.values()) + 1))
        qi = lambda n: topo.q_start[topo.joint_index(n)]
        vi = lambda n: topo.v_start[topo.joint_index(n)]
        masters = tuple(by_joint[j][0] for j in names)
        f = lambda x: jnp.asarray(np.asarray(x, float), dtype)
        return Mimic(joints=tuple(names), masters=masters, q_index=tuple(map(qi, names)),
                     q_master=tuple(map(qi, masters)), v_index=tuple(map(vi, names)), v_master=tuple(map(vi, masters)),
                     levels=levels, multiplier=f([by_joint[j][1] for j in names]),
                     offset=f([by_joint[j][2] for j in names]))

    def build(self, dtype=None) -> Model:
        """Validate the whole tree and return the :class:`Model` (bodies sorted so that
        ``parent[i] < i``, keeping the insertion order otherwise)."""
        if not self._bodies:
            raise ModelError("model has no bodies")
        by_name = {b.name: b for b in self._bodies}
        for b in self._bodies:
            if b.parent is not None and b.parent not in by_name:
                raise ModelError(f"body {b.name!r}: unknown parent {b.parent!r}")
        order: list[str] = []
        placed: set[str] = set()
        for b in self._bodies:  # depth-first from each root, detecting cycles
            self._place(b.name, by_name, order, placed, ())
        joint_names = [by_name[n].joint_name for n in order]
        dup = {j for j in joint_names if joint_names.count(j) > 1}
        if dup:
            raise ModelError(f"duplicate joint names {sorted(dup)}")
        index = {n: i for i, n in enumerate(order)}
        bodies = [by_name[n] for n in order]
        parent = tuple(-1 if b.parent is None else index[b.parent] for b in bodies)
        # a moving joint needs mass beyond it, or the mass matrix is singular
        sub_mass = [b.mass for b in bodies]
        for i in reversed(range(len(bodies))):
            if parent[i] >= 0:
                sub_mass[parent[i]] += sub_mass[i]
        for i, b in enumerate(bodies):
            if b.flex is not None:
                sub_mass[i] += 1.0  # a flexible link carries its own (section) mass
        for i in reversed(range(len(bodies))):
            if parent[i] >= 0 and bodies[i].flex is not None:
                sub_mass[parent[i]] += 1.0
        # a mimic joint and its master move together: their subtrees' mass counts as one
        group = self._mimic_groups()
        group_mass: dict = {}
        for i, b in enumerate(bodies):
            g = group.get(b.joint_name)
            if g is not None:
                group_mass[g] = group_mass.get(g, 0.0) + sub_mass[i]
        for i, b in enumerate(bodies):
            moved = group_mass[group[b.joint_name]] if b.joint_name in group else sub_mass[i]
            if NV[b.joint] > 0 and moved <= 0:
                raise ModelError(
                    f"{b.owner}: its {b.joint.value} joint moves a subtree with zero mass, "
                    "so the mass matrix would be singular"
                    + (" (with the joints coupled to it by <mimic>)" if b.joint_name in group else "")
                )
        self._check_composite_inertias(bodies, parent)
        for s in self._sites:
            if s.body not in index:
                raise ModelError(f"site {s.name!r}: unknown body {s.body!r}")
        for g in self._geoms:
            if g.body is not None and g.body not in index:
                raise ModelError(f"geom {g.name!r}: unknown body {g.body!r}")
        for lim in self._limits:
            if lim.joint not in joint_names:
                raise ModelError(f"joint limit: unknown joint {lim.joint!r}")
        for ten in self._tendons:
            for jn, _ in ten.joints:
                if jn not in joint_names:
                    raise ModelError(f"tendon {ten.name!r}: unknown joint {jn!r}")
        topo = Topology(
            body_names=tuple(order),
            parent=parent,
            joint_types=tuple(b.joint for b in bodies),
            joint_names=tuple(joint_names),
            site_names=tuple(s.name for s in self._sites),
            site_body=tuple(index[s.body] for s in self._sites),
            n_modes=tuple(0 if b.flex is None else b.flex.ne for b in bodies) if any(b.flex is not None for b in bodies) else (),
        )
        mimic = self._mimic(topo, dtype)
        f = lambda x: jnp.asarray(np.asarray(x, float), dtype)  # noqa: E731
        ns = len(self._sites)
        springs = any(b.stiffness or b.springref for b in bodies)  # otherwise Model.stiffness is None
        return Model(
            topology=topo,
            mass=f([b.mass for b in bodies]),
            com=f([b.com for b in bodies]),
            inertia=f([b.inertia for b in bodies]),
            tree_pos=f([b.pos for b in bodies]),
            tree_rot=f([b.rot for b in bodies]),
            axis=f([b.axis for b in bodies]),
            damping=f(np.concatenate([b.damping for b in bodies])),
            armature=f(np.concatenate([b.armature for b in bodies])),
            frictionloss=f(np.concatenate([b.frictionloss for b in bodies])),
            friction_width=f(np.concatenate([b.friction_width for b in bodies])),
            gravity=f(self.gravity),
            site_pos=f([s.pos for s in self._sites] if ns else np.zeros((0, 3))),
            site_rot=f([s.rot for s in self._sites] if ns else np.zeros((0, 3, 3))),
            flex=tuple(None if b.flex is None else _cast(b.flex, dtype) for b in bodies) if topo.n_modes else (),
            stiffness=f(np.concatenate([np.full(NV[b.joint], b.stiffness) for b in bodies])) if springs else None,
            springref=f(np.concatenate([np.full(NV[b.joint], b.springref) for b in bodies])) if springs else None,
            geoms=tuple(self._geoms),
            joint_limits=tuple(self._limits),
            actuators=tuple(self._actuators),
            actuator_force_ranges=tuple(self._force_ranges),
            tendons=tuple(self._tendons),
            mimic=mimic,
        )

    def _check_composite_inertias(self, bodies, parent):
        """:func:`validate_inertia` on each body merged with its fixed-joint descendants (what
        the dynamics sees: a massive point or an indefinite CAD inertia on a fixed child of a
        real body is fine). Children attached to a flexible link are checked on their own."""
        comp = [(b.mass, b.com.copy(), b.inertia.copy()) for b in bodies]
        merged = [[] for _ in bodies]
        for i in reversed(range(len(bodies))):
            b, p = bodies[i], parent[i]
            if b.joint is not JointType.FIXED or p < 0 or bodies[p].flex is not None:
                continue
            m1, c1, I1 = comp[i]
            m0, c0, I0 = comp[p]
            c1 = b.pos + b.rot @ c1  # child COM and inertia in the parent frame
            I1 = b.rot @ I1 @ b.rot.T
            m = m0 + m1
            c = (m0 * c0 + m1 * c1) / m if m > 0 else c0
            I = I0 + I1
            for mk, ck in ((m0, c0), (m1, c1)):  # parallel axes to the common COM
                d = ck - c
                I = I + mk * (d @ d * np.eye(3) - np.outer(d, d))
            comp[p] = (m, c, I)
            merged[p] += [b.name] + merged[i]
            comp[i] = None
        moving_below = [False] * len(bodies)  # a moving joint or a flexible link further down
        for i in reversed(range(len(bodies))):
            if parent[i] >= 0 and (moving_below[i] or NV[bodies[i].joint] > 0 or bodies[i].flex is not None):
                moving_below[parent[i]] = True
        coupled = self._mimic_groups()
        for i, b in enumerate(bodies):
            if comp[i] is not None:
                owner = b.owner + (f" (merged with its fixed children {merged[i]})" if merged[i] else "")
                I = validate_inertia(comp[i][2], comp[i][0], owner, physical=self.physical_inertia)
                if NV[b.joint] > 0 and b.flex is None and not moving_below[i] and b.joint_name not in coupled:
                    _check_leaf_motion(b, comp[i][0], comp[i][1], I, owner)

    def _place(self, name, by_name, order, placed, path):
        if name in placed:
            return
        if name in path:
            cycle = " -> ".join(path[path.index(name):] + (name,))
            raise ModelError(f"body {name!r}: the parent chain forms a cycle ({cycle})")
        parent = by_name[name].parent
        if parent is not None:
            self._place(parent, by_name, order, placed, path + (name,))
        order.append(name)
        placed.add(name)
