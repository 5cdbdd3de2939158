"""The papers' formulations of the equations of motion, each independent of the default path
(:mod:`diffsim.dynamics`) and tested for agreement with it."""

from .boltzmann_hamel import (
    forward_dynamics_bh,
    generalised_momentum_bh,
    kinetic_energy_bh,
    mass_matrix_bh,
)
from .gibbs_appell import forward_dynamics_gibbs_appell, mass_matrix_gibbs_appell
from .lagrange_autodiff import forward_dynamics_lagrange, mass_matrix_lagrange
from .recursive_lagrange import forward_dynamics_recursive_lagrange, mass_matrix_recursive_lagrange

__all__ = [
    "forward_dynamics_bh",
    "forward_dynamics_gibbs_appell",
    "forward_dynamics_lagrange",
    "forward_dynamics_recursive_lagrange",
    "generalised_momentum_bh",
    "kinetic_energy_bh",
    "mass_matrix_bh",
    "mass_matrix_gibbs_appell",
    "mass_matrix_lagrange",
    "mass_matrix_recursive_lagrange",
]
