"""Flexible links: assumed-mode beams in the multibody tree (floating frame of reference).

:mod:`.body` defines the kinematics every formulation follows; :mod:`.beam` builds a link from
beam data and mode shapes; :mod:`.dynamics` has the O(n) sweep, the inverse dynamics and the
mass-matrix form; :mod:`.composite` the mass-matrix form batched over links (the default for
small trees); :mod:`.kinematics` the world poses of frames and sections.
"""

from .beam import BeamError, beam, gauss_legendre
from .body import FlexBody, body_kinetics, end_transform, section_pose
from .composite import COMPOSITE_MAX_NV, forward_dynamics_composite, link_jacobians
from .dynamics import (
    articulated_flexible,
    dissipated_power_flexible,
    elastic_forces,
    forward_dynamics_flexible,
    forward_dynamics_mm,
    inverse_dynamics_flexible,
    kinetic_energy_flexible,
    mass_matrix_flexible,
    potential_energy_flexible,
    reduced_newmark_jacobian,
)
from .kinematics import end_position, frames, sections_world

__all__ = [
    "BeamError",
    "COMPOSITE_MAX_NV",
    "FlexBody",
    "articulated_flexible",
    "beam",
    "body_kinetics",
    "dissipated_power_flexible",
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
    "section_pose",
    "sections_world",
]
