"""Trajectory optimisation through the simulator (issue 16).

* :func:`solve` plans torques over ``horizon`` RK4 steps at minimum
  ``Σ dt·ℓ(q, v, τ) + ℓ_f(q_N, v_N)``: ``"ddp"`` (box-constrained iLQR, :mod:`.ddp`),
  ``"shooting"`` (L-BFGS single shooting, :mod:`.shooting`), ``"cem"`` (cross-entropy sampling,
  :mod:`.cem`); returns a :class:`Plan`.
* :mod:`.costs`: the usual cost terms (site position / orientation error, base attitude change,
  joint-limit and torque barriers, residual elastic energy), and the structured costs
  :class:`~.costs.LeastSquares` (``Σ w_i r_i²``: DDP takes its Gauss–Newton Hessian ``2 JᵀWJ``, as
  Crocoddyl does for residual costs) and :class:`~.costs.Sum` (mixing residual and general terms).
* :func:`solve_system` (:mod:`.simulated`): planning through contact — named parameters of a
  :class:`diffsim.System` (a throw: its initial velocity) at minimum cost of its event-driven
  simulation (impact times included), by L-BFGS with exact derivatives of the solve.
* :func:`sensitivity`: derivatives of the optimal cost and torques with respect to model
  parameters (implicit differentiation of the optimality condition).
"""

from . import costs
from .problem import Problem, actuated_indices
from .result import Plan, PlanStatus
from .sensitivity import Sensitivity, sensitivity
from .simulated import SystemPlan, onset_time, solve_system
from .solve import DEFAULT_SETTINGS, METHODS, make_problem, solve

__all__ = [
    "DEFAULT_SETTINGS",
    "METHODS",
    "Plan",
    "PlanStatus",
    "Problem",
    "Sensitivity",
    "SystemPlan",
    "actuated_indices",
    "costs",
    "make_problem",
    "onset_time",
    "sensitivity",
    "solve",
    "solve_system",
]
