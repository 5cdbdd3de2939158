"""Build and validate models in Python (no tracing here): every error names the body."""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .flexbody import FlexBody
from .joints import NV, USES_AXIS, JointType
from .model import Model
from .rotations import quat_to_rot
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


def validate_inertia(inertia, mass, owner):
    """Symmetric, positive (semi-)definite for massless bodies, triangle inequality."""
    I = np.asarray(inertia, float)
    if I.shape == (3,):
        I = np.diag(I)
    if I.shape != (3, 3):
        raise ModelError(f"{owner}: inertia must be a 3-vector (diagonal) or 3x3, got shape {I.shape}")
    if not np.all(np.isfinite(I)):
        raise ModelError(f"{owner}: inertia has non-finite entries")
    if not np.allclose(I, I.T, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(I).max())):
        raise ModelError(f"{owner}: inertia is not symmetric: {I.tolist()}")
    ev = np.linalg.eigvalsh(0.5 * (I + I.T))
    tol = 1e-12 * max(1.0, np.abs(ev).max())
    if mass > 0 and ev.min() <= tol:
        raise ModelError(f"{owner}: inertia is not positive definite (eigenvalues {ev.tolist()})")
    if mass == 0 and ev.min() < -tol:
        raise ModelError(f"{owner}: inertia of a massless body has negative eigenvalues {ev.tolist()}")
    a, b, c = ev
    slack = 1e-9 * max(1.0, ev.max())
    if a + b < c - slack:
        raise ModelError(
            f"{owner}: principal moments {ev.tolist()} violate the triangle inequality "
            "(I1 + I2 >= I3): no physical mass distribution has this inertia"
        )
    return 0.5 * (I + I.T)


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

    def __init__(self, gravity: Sequence[float] = (0.0, 0.0, -9.81)):
        self._bodies: list[_Body] = []
        self._sites: list[_Site] = []
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
        """
        owner = f"body {name!r}"
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
        inertia = validate_inertia(inertia, mass, owner)
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
        if flex is not None:
            if not isinstance(flex, FlexBody):
                raise ModelError(f"{owner}: flex must be a diffsim.flexible.FlexBody, got {type(flex).__name__}")
            if flex.ne < 1:
                raise ModelError(f"{owner}: a flexible link needs at least one mode")
        self._bodies.append(
            _Body(name, parent, jtype, joint_name or name, axis, pos, R, mass, com, inertia, per_dof["damping"],
                  per_dof["armature"], per_dof["frictionloss"], per_dof["friction_width"], flex)
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
        for i, b in enumerate(bodies):
            if NV[b.joint] > 0 and sub_mass[i] <= 0:
                raise ModelError(
                    f"body {b.name!r}: its {b.joint.value} joint moves a subtree with zero mass, "
                    "so the mass matrix would be singular"
                )
        for s in self._sites:
            if s.body not in index:
                raise ModelError(f"site {s.name!r}: unknown body {s.body!r}")
        topo = Topology(
            body_names=tuple(order),
            parent=parent,
            joint_types=tuple(b.joint for b in bodies),
            joint_names=tuple(joint_names),
            site_names=tuple(s.name for s in self._sites),
            site_body=tuple(index[s.body] for s in self._sites),
            n_modes=tuple(0 if b.flex is None else b.flex.ne for b in bodies) if any(b.flex is not None for b in bodies) else (),
        )
        f = lambda x: jnp.asarray(np.asarray(x, float), dtype)  # noqa: E731
        ns = len(self._sites)
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
        )

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
