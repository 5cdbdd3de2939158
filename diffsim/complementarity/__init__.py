"""Complementarity (rigid, unilateral) contact: Lemke's algorithm with implicit derivatives
(:mod:`.lemke`), acceleration- and velocity-level contact LCPs (:mod:`.rigid`) and fixed-step
simulation with them (:mod:`.timestepping`)."""

from .lemke import LCPError, LCPStatus, lemke
from .rigid import OPEN, SLIDE, STICK, ContactKinematics, RigidContact, rigid_contacts
from .timestepping import LCPTrajectory, lcp_step, simulate_lcp

__all__ = [
    "LCPError",
    "LCPStatus",
    "lemke",
    "OPEN",
    "SLIDE",
    "STICK",
    "ContactKinematics",
    "RigidContact",
    "rigid_contacts",
    "LCPTrajectory",
    "lcp_step",
    "simulate_lcp",
]
