"""Energy and momentum of the whole tree."""

from __future__ import annotations

import jax.numpy as jnp

from .. import spatial as sp


from ..model.model import Model
from .kinematics import body_com, body_velocities, world_transforms
from .traversal import JointData, body_spatial_inertias


def kinetic_energy(model: Model, q, v):
    """``T = ½ Σ vᵢᵀ Iᵢ vᵢ + ½ Σ armature q̇²`` (= ½ vᵀ M v)."""
    if model.topology.has_flex:
        from ..flexible.dynamics import kinetic_energy_flexible

        return kinetic_energy_flexible(model, q, v)
    vel = jnp.stack(body_velocities(model, q, v))
    T = 0.5 * jnp.einsum("bi,bij,bj->", vel, body_spatial_inertias(model), vel)
    return T + 0.5 * jnp.sum(model.armature * v * v)


def potential_energy(model: Model, q):
    """Gravity potential ``V = −Σ mᵢ g·cᵢ`` (zero at the world origin); flexible trees add
    their sections' gravity potential and the strain energy."""
    if model.topology.has_flex:
        from ..flexible.dynamics import potential_energy_flexible

        return potential_energy_flexible(model, q)
    return -jnp.sum(model.mass * (body_com(model, q) @ model.gravity))


def total_energy(model: Model, q, v):
    return kinetic_energy(model, q, v) + potential_energy(model, q)


def spatial_momentum(model: Model, q, v):
    """Total spatial momentum ``[L; P]`` in world coordinates; ``L`` about the world origin."""
    from .kinematics import _rigid_only

    _rigid_only(model, "spatial_momentum")
    jd = JointData(model, q, v)
    X0 = world_transforms(model, q, jd)
    h_body = jnp.einsum("bij,bj->bi", body_spatial_inertias(model), jnp.stack(body_velocities(model, q, v, jd)))
    X0 = sp.Transform(jnp.stack([X.E for X in X0]), jnp.stack([X.r for X in X0]))
    return jnp.sum(X0.inv_apply_force(h_body), axis=0)


def linear_momentum(model: Model, q, v):
    return spatial_momentum(model, q, v)[3:]


def angular_momentum(model: Model, q, v):
    """About the world origin, world coordinates."""
    return spatial_momentum(model, q, v)[:3]


def centre_of_mass(model: Model, q):
    """Whole-system centre of mass, world frame."""
    from .kinematics import _rigid_only

    _rigid_only(model, "centre_of_mass")
    return jnp.sum(model.mass[:, None] * body_com(model, q), 0) / jnp.sum(model.mass)


__all__ = [
    "angular_momentum",
    "centre_of_mass",
    "kinetic_energy",
    "linear_momentum",
    "potential_energy",
    "spatial_momentum",
    "total_energy",
]


