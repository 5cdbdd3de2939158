"""The papers' formulations of the equations of motion, each independent of the default path
(:mod:`diffsim.dynamics`) and tested for agreement with it. Each is also a dynamics strategy
(:class:`diffsim.dynamics.AbstractDynamics`) that :class:`diffsim.System` takes (``dynamics=``)."""

from .boltzmann_hamel import (
    BoltzmannHamel,
    forward_dynamics_bh,
    generalised_momentum_bh,
    kinetic_energy_bh,
    mass_matrix_bh,
)
from .gibbs_appell import GibbsAppell, forward_dynamics_gibbs_appell, mass_matrix_gibbs_appell
from .lagrange_autodiff import LagrangeAutodiff, forward_dynamics_lagrange, mass_matrix_lagrange
from .recursive_lagrange import (
    RecursiveLagrange,
    forward_dynamics_recursive_lagrange,
    mass_matrix_recursive_lagrange,
)

__all__ = [
    "BoltzmannHamel",
    "GibbsAppell",
    "LagrangeAutodiff",
    "RecursiveLagrange",
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
