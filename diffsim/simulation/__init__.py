"""Time integration: the :class:`System` every run is described by, :func:`simulate` (diffrax;
compliant contact with located events in :mod:`.compliant`; complementarity time stepping in
:mod:`.lcp`), :func:`rollout` (fixed-step RK4 in a scan), the Newmark family, prescribed motion
and the one :class:`Trajectory` result type."""

from .compliant import WORK_NAMES, ContactRecord
from .lcp import AbstractLCPStepper, AccelerationLCP, LCPRecord, VelocityLCP, lcp_step
from .newmark import HHT, GeneralizedAlpha, Newmark
from .prescribed import Prescribed, joint_friction, joint_torques, mixed_dynamics, prescribe
from .rollout import rk4_step, rollout
from .sensitivity import ForwardSensitivity
from .simulate import simulate
from .solvers import RK4, SOLVERS
from .system import Options, System, get_param, param_names, set_params
from .trajectory import Status, Trajectory

__all__ = [
    "HHT",
    "RK4",
    "SOLVERS",
    "WORK_NAMES",
    "AbstractLCPStepper",
    "AccelerationLCP",
    "ContactRecord",
    "ForwardSensitivity",
    "GeneralizedAlpha",
    "LCPRecord",
    "Newmark",
    "Options",
    "Prescribed",
    "Status",
    "System",
    "Trajectory",
    "VelocityLCP",
    "get_param",
    "joint_friction",
    "joint_torques",
    "lcp_step",
    "mixed_dynamics",
    "param_names",
    "prescribe",
    "rk4_step",
    "rollout",
    "set_params",
    "simulate",
]
