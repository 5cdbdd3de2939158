"""Beam mode shapes (Euler–Bernoulli, Timoshenko) for flexible links. See :mod:`.modes` and, for
elastic boundaries with a tip mass, :mod:`.elastic`."""

from .elastic import ElasticModes, ElasticSnapshotModes, SolvedElasticModes, elastic_frequencies, elastic_modes
from .modes import (
    VALID_BCS,
    CallableModes,
    ModeShapes,
    PolynomialModes,
    SupportedModes,
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
    "ElasticModes",
    "ElasticSnapshotModes",
    "ModeShapes",
    "PolynomialModes",
    "SolvedElasticModes",
    "SupportedModes",
    "TabulatedModes",
    "TrigHyperbolicModes",
    "check_boundary_conditions",
    "elastic_frequencies",
    "elastic_modes",
    "euler_bernoulli_modes",
    "euler_bernoulli_roots",
    "timoshenko_frequencies",
    "timoshenko_modes",
]
