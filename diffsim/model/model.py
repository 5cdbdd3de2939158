"""The model: static topology plus differentiable parameters with a leading body axis."""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

from . import joints as jt
from .topology import Topology


class Geom(NamedTuple):
    """A geom read from a file and kept as data (``Model.geoms``); not simulated by the model
    itself (contacts are added with :mod:`diffsim.contact`). ``body`` is ``None`` for the world;
    ``pos``/``quat`` ``[w,x,y,z]`` in the diffsim body frame; ``size`` as MuJoCo's (3 numbers);
    ``mesh`` names the mesh of a mesh geom."""

    name: str | None
    body: str | None
    type: str
    size: tuple
    pos: tuple
    quat: tuple
    mesh: str | None = None


class JointLimit(NamedTuple):
    """A joint range read from a file (``Model.joint_limits``): ``lower``/``upper`` in the joint's
    coordinate (rad or m); ``enforced`` is False while diffsim keeps it as data only."""

    joint: str
    lower: float
    upper: float
    enforced: bool = False


class Actuator(NamedTuple):
    """An actuator read from a file (``Model.actuators``), kept as data: MuJoCo's ``kind``
    (``motor``/``position``/``velocity``/``general``/… or ``effort`` for a URDF effort limit),
    transmission ``trntype`` (``joint``/``tendon``/``site``/…) and its ``target`` name,
    ``gear`` (6), ``ctrlrange``/``forcerange`` (``None`` when unlimited) and MuJoCo's
    ``gainprm``/``biasprm`` (the first 3 entries)."""

    name: str | None
    kind: str
    trntype: str
    target: str | None
    gear: tuple
    ctrlrange: tuple | None
    forcerange: tuple | None
    gainprm: tuple = ()
    biasprm: tuple = ()


class Model(eqx.Module):
    """A rigid multibody tree. Every float is a differentiable leaf.

    Frames: body ``i``'s frame is placed in its parent's frame at ``tree_pos[i]`` with
    orientation ``tree_rot[i]`` (body coords -> parent coords) when its joint is at the neutral
    configuration; the joint acts at the body-frame origin, its axis in body coordinates.
    """

    topology: Topology = eqx.field(static=True)
    mass: jax.Array  # [nb] kg
    com: jax.Array  # [nb, 3] m, centre of mass in the body frame
    inertia: jax.Array  # [nb, 3, 3] kg m², about the COM, body axes
    tree_pos: jax.Array  # [nb, 3] m
    tree_rot: jax.Array  # [nb, 3, 3]
    axis: jax.Array  # [nb, 3] unit joint axis (revolute / prismatic; unused otherwise)
    damping: jax.Array  # [nv_rigid] viscous joint damping, N m s/rad or N s/m
    armature: jax.Array  # [nv_rigid] rotor inertia added to the mass-matrix diagonal, kg m² or kg
    frictionloss: jax.Array  # [nv_rigid] Coulomb joint friction F_s, N m or N (MuJoCo's frictionloss)
    friction_width: jax.Array  # [nv_rigid] smoothing width ε of its sign, rad/s or m/s
    gravity: jax.Array  # [3] m/s², world frame
    site_pos: jax.Array  # [ns, 3] m, in the site's body frame
    site_rot: jax.Array  # [ns, 3, 3] site coords -> body coords
    # flexible links (diffsim.flexible.FlexBody) per body, None for a rigid body; () = all rigid.
    # A flexible body's children attach to its deformed distal end (tree_pos/rot relative to it).
    flex: tuple = ()
    # read from a file and kept as data, not simulated (static: no derivatives): geoms (contact
    # geometry), joint ranges, actuators; see Geom, JointLimit, Actuator
    geoms: tuple = eqx.field(static=True, default=())
    joint_limits: tuple = eqx.field(static=True, default=())
    actuators: tuple = eqx.field(static=True, default=())

    # convenience views of the topology
    @property
    def nb(self) -> int:
        return self.topology.nb

    @property
    def nq(self) -> int:
        return self.topology.nq

    @property
    def nv(self) -> int:
        return self.topology.nv

    @property
    def dtype(self):
        return self.mass.dtype

    def astype(self, dtype) -> "Model":
        """The same model with every float leaf cast to ``dtype`` (float32 / float64)."""
        return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), self)

    def without_gravity(self) -> "Model":
        """The same model with zero gravity (the bias of ``M⁻¹`` products at rest)."""
        return eqx.tree_at(lambda m: m.gravity, self, jnp.zeros_like(self.gravity))


def joint_passive_forces(model: Model, v_rigid):
    """The joints' own dissipative forces [nv_rigid]: viscous damping and smoothed Coulomb
    friction, ``D q̇ + F_s tanh(q̇/ε)`` (seed 003's joint friction ``F_s sgn(q̇) + F_v q̇`` with the
    sign smoothed over ``ε`` = ``friction_width``). Every formulation moves them to the
    right-hand side: ``M v̇ + h = τ − joint_passive_forces``."""
    return model.damping * v_rigid + model.frictionloss * jnp.tanh(v_rigid / model.friction_width)

def body_names(model: Model) -> tuple[str, ...]:
    return model.topology.body_names


def neutral_configuration(model: Model):
    """``q`` with every joint at its zero (identity quaternions)."""
    t = model.topology
    parts = [jt.neutral(j, model.dtype) for j in t.joint_types]
    if t.ne:
        parts.append(jnp.zeros(t.ne, model.dtype))
    return jnp.concatenate(parts) if parts else jnp.zeros(0, model.dtype)
