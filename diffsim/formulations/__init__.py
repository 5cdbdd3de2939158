"""The papers' formulations of the equations of motion, each independent of the default path
(:mod:`diffsim.dynamics`) and tested for agreement with it."""

from .boltzmann_hamel import (
    forward_dynamics_bh,
    generalised_momentum_bh,
    kinetic_energy_bh,
    mass_matrix_bh,
)

__all__ = [
    "forward_dynamics_bh",
    "generalised_momentum_bh",
    "kinetic_energy_bh",
    "mass_matrix_bh",
]
