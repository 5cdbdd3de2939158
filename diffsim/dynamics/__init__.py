"""Dynamics of rigid and flexible trees: pure functions of one model instance (users ``vmap``).

Module order (each imports only the ones above it): :mod:`.traversal` (the per-body walks of
the tree), :mod:`.configuration`, :mod:`.sections` (flexible-link sections), :mod:`.kinematics`,
:mod:`.jacobians`, the kernels (:mod:`.rnea`, :mod:`.aba`, :mod:`.crba` for rigid trees and
:mod:`.levels`, their ABA and RNEA batched per depth level; :mod:`.flexible`, :mod:`.composite`
for flexible ones; :mod:`.energy`), :mod:`.derivatives` (the analytical derivatives of RNEA and
ABA), :mod:`.coupled` (mimic joints: the tree's equations projected
onto the independent coordinates) and :mod:`.dispatch`, the public entry points and the dynamics
strategies.
"""

from .configuration import configuration_rate, difference, integrate, normalize, random_configuration
from .coupled import reduced_forward_dynamics, reduced_inverse_dynamics, reduced_mass_matrix
from .derivatives import aba_derivatives, rnea_derivatives
from .dispatch import (
    ABA,
    AbstractDynamics,
    AnalyticTangents,
    Composite,
    Default,
    FunctionDynamics,
    MassMatrix,
    Sweep,
    as_dynamics,
    bias_forces,
    forward_dynamics,
    gravity_forces,
    inverse_dynamics,
    kinetic_energy,
    mass_matrix,
    potential_energy,
    total_energy,
)
from .energy import angular_momentum, centre_of_mass, linear_momentum, spatial_momentum
from .kinematics import (
    Kinematics,
    body_com,
    body_velocities,
    end_position,
    forward_kinematics,
    frames,
    point_jacobian,
    point_velocity,
    sections_world,
    site_poses,
    world_transforms,
)

__all__ = [
    "ABA",
    "AbstractDynamics",
    "AnalyticTangents",
    "Composite",
    "Default",
    "FunctionDynamics",
    "Kinematics",
    "MassMatrix",
    "Sweep",
    "aba_derivatives",
    "angular_momentum",
    "as_dynamics",
    "bias_forces",
    "body_com",
    "body_velocities",
    "centre_of_mass",
    "configuration_rate",
    "difference",
    "end_position",
    "forward_dynamics",
    "forward_kinematics",
    "frames",
    "gravity_forces",
    "integrate",
    "inverse_dynamics",
    "kinetic_energy",
    "linear_momentum",
    "mass_matrix",
    "normalize",
    "point_jacobian",
    "point_velocity",
    "potential_energy",
    "rnea_derivatives",
    "random_configuration",
    "reduced_forward_dynamics",
    "reduced_inverse_dynamics",
    "reduced_mass_matrix",
    "sections_world",
    "site_poses",
    "spatial_momentum",
    "total_energy",
    "world_transforms",
]
