"""Complementarity (rigid, unilateral) contact: Lemke's algorithm with implicit derivatives
(:mod:`.lemke`) and acceleration- and velocity-level contact LCPs (:mod:`.rigid`). Fixed-step
simulation with them is :mod:`diffsim.simulation.lcp`."""

from .lemke import LCPError, LCPStatus, lemke
from .rigid import OPEN, SLIDE, STICK, ContactKinematics, RigidContact, rigid_contact

__all__ = [
    "LCPError",
    "LCPStatus",
    "lemke",
    "OPEN",
    "SLIDE",
    "STICK",
    "ContactKinematics",
    "RigidContact",
    "rigid_contact",
]
