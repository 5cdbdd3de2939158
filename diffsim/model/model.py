"""The model: static topology plus differentiable parameters with a leading body axis."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from . import joints as jt
from .topology import Topology


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
    damping: jax.Array  # [nv] viscous joint damping, N m s/rad or N s/m
    armature: jax.Array  # [nv] rotor inertia added to the mass-matrix diagonal
    gravity: jax.Array  # [3] m/s², world frame
    site_pos: jax.Array  # [ns, 3] m, in the site's body frame
    site_rot: jax.Array  # [ns, 3, 3] site coords -> body coords
    # flexible links (diffsim.flexible.FlexBody) per body, None for a rigid body; () = all rigid.
    # A flexible body's children attach to its deformed distal end (tree_pos/rot relative to it).
    flex: tuple = ()

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


def body_names(model: Model) -> tuple[str, ...]:
    return model.topology.body_names


def neutral_configuration(model: Model):
    """``q`` with every joint at its zero (identity quaternions)."""
    t = model.topology
    parts = [jt.neutral(j, model.dtype) for j in t.joint_types]
    if t.ne:
        parts.append(jnp.zeros(t.ne, model.dtype))
    return jnp.concatenate(parts) if parts else jnp.zeros(0, model.dtype)
