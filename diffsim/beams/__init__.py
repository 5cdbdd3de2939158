"""Beam mode shapes (Euler–Bernoulli, Timoshenko) for flexible links. See :mod:`.modes`."""

from .modes import (
    VALID_BCS,
    CallableModes,
    ModeShapes,
    PolynomialModes,
    TabulatedModes,
    TrigHyperbolicModes,
    check_boundary_conditions,
    euler_bernoulli_modes,
    euler_bernoulli_roots,
    timoshenko_frequencies,
    timoshenko_modes,
)

__all__ = [
    "VALID_BCS",
    "CallableModes",
    "ModeShapes",
    "PolynomialModes",
    "TabulatedModes",
    "TrigHyperbolicModes",
    "check_boundary_conditions",
    "euler_bernoulli_modes",
    "euler_bernoulli_roots",
    "timoshenko_frequencies",
    "timoshenko_modes",
]
