"""Compliant contact: geometry (:mod:`.geometry`), normal-force and friction laws
(:mod:`.laws`), the contact model and its impact memory (:mod:`.model`) and the simulation
loop with located events and work–energy bookkeeping (:mod:`.simulate`)."""

from .geometry import ContactError, ContactGeometry, ContactPoint, Plane, contact_geometry
from .laws import (
    FRICTION_LAWS,
    NORMAL_LAWS,
    Ambrosio,
    BengisuAkay,
    Coulomb,
    CoulombViscous,
    Flores,
    Gonthier,
    Hertz,
    HuGuo,
    HuntCrossley,
    LankaraniNikravesh,
    LinearSpringDamper,
    LuGre,
    SmoothCoulomb,
    Stribeck,
    Threlfall,
    friction_law,
    normal_law,
)
from .model import MODES, Contact, ContactForces, contact
from .simulate import WORK_NAMES, ContactRecord

__all__ = [
    "FRICTION_LAWS",
    "MODES",
    "NORMAL_LAWS",
    "WORK_NAMES",
    "Ambrosio",
    "BengisuAkay",
    "Contact",
    "ContactError",
    "ContactForces",
    "ContactGeometry",
    "ContactPoint",
    "ContactRecord",
    "Coulomb",
    "CoulombViscous",
    "Flores",
    "Gonthier",
    "Hertz",
    "HuGuo",
    "HuntCrossley",
    "LankaraniNikravesh",
    "LinearSpringDamper",
    "LuGre",
    "Plane",
    "SmoothCoulomb",
    "Stribeck",
    "Threlfall",
    "contact",
    "contact_geometry",
    "friction_law",
    "normal_law",
]
