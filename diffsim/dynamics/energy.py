"""Energy and momentum of the whole tree."""

from __future__ import annotations

import jax.numpy as jnp


from ..model.model import Model
from .kinematics import body_com, body_velocities, world_transforms
from .traversal import JointData, body_spatial_inertias


def kinetic_energy(model: Model, q, v):
    """``T = ½ Σ vᵢᵀ Iᵢ vᵢ + ½ Σ armature q̇²`` (= ½ vᵀ M v)."""
    vel = body_velocities(model, q, v)
    Ib = body_spatial_inertias(model)
    T = sum(0.5 * vel[i] @ Ib[i] @ vel[i] for i in range(model.nb))
    return T + 0.5 * jnp.sum(model.armature * v * v)


def potential_energy(model: Model, q):
    """Gravity potential ``V = −Σ mᵢ g·cᵢ`` (zero at the world origin)."""
    return -jnp.sum(model.mass * (body_com(model, q) @ model.gravity))


def total_energy(model: Model, q, v):
    return kinetic_energy(model, q, v) + potential_energy(model, q)


def spatial_momentum(model: Model, q, v):
    """Total spatial momentum ``[L; P]`` in world coordinates; ``L`` about the world origin."""
    jd = JointData(model, q, v)
    X0 = world_transforms(model, q, jd)
    vel = body_velocities(model, q, v, jd)
    Ib = body_spatial_inertias(model)
    return sum(X0[i].inv_apply_force(Ib[i] @ vel[i]) for i in range(model.nb))


def linear_momentum(model: Model, q, v):
    return spatial_momentum(model, q, v)[3:]


def angular_momentum(model: Model, q, v):
    """About the world origin, world coordinates."""
    return spatial_momentum(model, q, v)[:3]


def centre_of_mass(model: Model, q):
    """Whole-system centre of mass, world frame."""
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


