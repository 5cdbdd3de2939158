"""Flexible links in one namespace: building them (:func:`beam`, :class:`FlexBody`,
:class:`Beam`) and the flexible-specific dynamics (the O(n) sweep, the mass-matrix forms, link
Jacobians, section kinematics). The algorithms live in :mod:`diffsim.dynamics`; this module only
gathers them for users."""

from .dynamics.composite import COMPOSITE_MAX_NV, forward_dynamics_composite
from .dynamics.flexible import (
    articulated_flexible,
    dissipated_power,
    elastic_forces,
    forward_dynamics_flexible,
    forward_dynamics_mm,
    inverse_dynamics_flexible,
    kinetic_energy_flexible,
    mass_matrix_flexible,
    potential_energy_flexible,
    reduced_newmark_jacobian,
)
from .dynamics.jacobians import link_jacobians
from .dynamics.kinematics import end_position, frames, sections_world
from .dynamics.sections import body_kinetics, end_transform, section_motion, section_pose
from .model.beam import Beam, BeamError, beam, gauss_legendre
from .model.flexbody import FlexBody

__all__ = [
    "Beam",
    "BeamError",
    "COMPOSITE_MAX_NV",
    "FlexBody",
    "articulated_flexible",
    "beam",
    "body_kinetics",
    "dissipated_power",
    "elastic_forces",
    "end_position",
    "end_transform",
    "forward_dynamics_composite",
    "forward_dynamics_flexible",
    "forward_dynamics_mm",
    "frames",
    "gauss_legendre",
    "inverse_dynamics_flexible",
    "kinetic_energy_flexible",
    "link_jacobians",
    "mass_matrix_flexible",
    "potential_energy_flexible",
    "reduced_newmark_jacobian",
    "section_motion",
    "section_pose",
    "sections_world",
]
