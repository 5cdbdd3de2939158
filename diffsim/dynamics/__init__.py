"""Rigid-body dynamics algorithms (pure functions of one model instance; users vmap)."""

from .aba import forward_dynamics
from .configuration import configuration_rate, difference, integrate, normalize, random_configuration
from .crba import mass_matrix
from .energy import (
    angular_momentum,
    centre_of_mass,
    kinetic_energy,
    linear_momentum,
    potential_energy,
    spatial_momentum,
    total_energy,
)
from .kinematics import (
    Kinematics,
    body_com,
    body_velocities,
    forward_kinematics,
    point_jacobian,
    point_velocity,
    site_poses,
    world_transforms,
)
from .rnea import bias_forces, gravity_forces, inverse_dynamics
