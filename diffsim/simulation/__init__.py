"""Time integration: diffrax glue and results."""

from .newmark import HHT, GeneralizedAlpha, Newmark
from .prescribed import Prescribed, joint_friction, joint_torques, mixed_dynamics, prescribe
from .rollout import rk4_step, rollout
from .simulate import simulate
from .solvers import RK4, SOLVERS
from .trajectory import Status, Trajectory

__all__ = [
    "HHT",
    "GeneralizedAlpha",
    "Newmark",
    "RK4",
    "SOLVERS",
    "Prescribed",
    "Status",
    "Trajectory",
    "joint_friction",
    "joint_torques",
    "mixed_dynamics",
    "prescribe",
    "rk4_step",
    "rollout",
    "simulate",
]
