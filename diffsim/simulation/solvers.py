"""Solver choice by name, and the classical RK4 as a diffrax solver."""

from __future__ import annotations

from typing import Callable, ClassVar

import diffrax
import numpy as np
import optimistix as optx
from diffrax import AbstractERK, ButcherTableau, ThirdOrderHermitePolynomialInterpolation

from .newmark import HHT, GeneralizedAlpha, Newmark

_rk4_tableau = ButcherTableau(
    a_lower=(np.array([0.5]), np.array([0.0, 0.5]), np.array([0.0, 0.0, 1.0])),
    b_sol=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
    b_error=np.zeros(4),  # no embedded method: fixed step only
    c=np.array([0.5, 0.5, 1.0]),
)


class RK4(AbstractERK):
    """The classical 4th-order Runge–Kutta method (fixed step; no error estimate)."""

    tableau: ClassVar[ButcherTableau] = _rk4_tableau
    interpolation_cls: ClassVar[Callable[..., ThirdOrderHermitePolynomialInterpolation]] = (
        ThirdOrderHermitePolynomialInterpolation.from_k
    )

    def order(self, terms):
        return 4


ADAPTIVE = {
    "tsit5": diffrax.Tsit5,
    "dopri5": diffrax.Dopri5,
    "dopri8": diffrax.Dopri8,
    "kvaerno5": diffrax.Kvaerno5,
}
FIXED = {"rk4": RK4}


# Implicit second-order (q̇ = v, nq == nv) solvers with an error estimate: adaptive with a
# PIDController, fixed-step with ConstantStepSize (see diffsim.simulation.newmark).
SECOND_ORDER = {"newmark": Newmark, "hht": HHT, "generalized-alpha": GeneralizedAlpha}
SOLVERS = tuple(ADAPTIVE) + tuple(FIXED) + tuple(SECOND_ORDER)


def make_solver(solver, rtol=None, atol=None):
    """``(solver, is_adaptive)`` from a name or a diffrax solver instance.

    The implicit solver's Newton (chord) iterations get their own plain RMS norm and the
    controller's tolerances, so that they never see the controller's fail-fast norm."""
    if isinstance(solver, diffrax.AbstractSolver):
        return solver, isinstance(solver, diffrax.AbstractAdaptiveSolver)
    name = str(solver).lower()
    if name == "kvaerno5":
        root = diffrax.VeryChord(rtol=rtol, atol=atol, norm=optx.rms_norm)
        return diffrax.Kvaerno5(root_finder=root), True
    if name in SECOND_ORDER:
        return SECOND_ORDER[name](), True
    if name in ADAPTIVE:
        return ADAPTIVE[name](), True
    if name in FIXED:
        return FIXED[name](), False
    raise ValueError(f"unknown solver {solver!r}; choose one of {list(SOLVERS)} or pass a diffrax solver")
