"""Time integration: diffrax glue and results."""

from .rollout import rk4_step, rollout
from .simulate import simulate
from .solvers import RK4, SOLVERS
from .trajectory import Status, Trajectory

__all__ = ["RK4", "SOLVERS", "Status", "Trajectory", "rk4_step", "rollout", "simulate"]
