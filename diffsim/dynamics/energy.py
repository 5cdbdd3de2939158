"""Energy and momentum of rigid trees (:mod:`.dispatch` chooses these or the flexible ones)."""

from __future__ import annotations

import jax.numpy as jnp

from ..compiled import compiled
from ..model.model import Model
from ..precision import full_precision
from .kinematics import body_com, body_velocities, rigid_only, world_transforms
from .traversal import JointData, body_spatial_inertias


def kinetic_energy_rigid(model: Model, q, v):
    """``T = ½ Σ vᵢᵀ Iᵢ vᵢ + ½ Σ armature q̇²`` (= ½ vᵀ M v)."""
    vel = body_velocities(model, q, v)
    T = 0.5 * jnp.einsum("bi,bij,bj->", vel, body_spatial_inertias(model), vel)
    return T + 0.5 * jnp.sum(model.armature * v * v)


def potential_energy_rigid(model: Model, q):
    """Gravity potential ``V = −Σ mᵢ g·cᵢ`` (zero at the world origin)."""
    return -jnp.sum(model.mass * (body_com(model, q) @ model.gravity))


@full_precision
@compiled
def spatial_momentum(model: Model, q, v):
    """Total spatial momentum ``[L; P]`` in world coordinates; ``L`` about the world origin."""
    rigid_only(model, "spatial_momentum")
    jd = JointData(model, q, v)
    h_body = jnp.einsum("bij,bj->bi", body_spatial_inertias(model), body_velocities(model, q, v, jd))
    return jnp.sum(world_transforms(model, q).inv_apply_force(h_body), axis=0)


@full_precision
@compiled
def linear_momentum(model: Model, q, v):
    """``P`` [3], world frame."""
    return spatial_momentum(model, q, v)[3:]


@full_precision
@compiled
def angular_momentum(model: Model, q, v):
    """About the world origin, world coordinates [3]."""
    return spatial_momentum(model, q, v)[:3]


@full_precision
@compiled
def centre_of_mass(model: Model, q):
    """Whole-system centre of mass, world frame."""
    rigid_only(model, "centre_of_mass")
    return jnp.sum(model.mass[:, None] * body_com(model, q), 0) / jnp.sum(model.mass)
