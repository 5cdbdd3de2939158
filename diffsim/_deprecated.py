"""Names of the previous release, kept for one release with a ``DeprecationWarning``
(``diffsim.__getattr__`` serves them)."""

from __future__ import annotations

import warnings

from .complementarity.rigid import rigid_contact
from .contact.model import compliant_contact
from .simulation.lcp import STEPPERS
from .simulation.simulate import simulate
from .simulation.system import System
from .simulation.trajectory import Trajectory


def simulate_lcp(model, q0, v0, contact, *, t1, dt, controls=None, method="acceleration", tau_p=0.05, gap_tol=1e-9,
                 keep_tol=1e-4, save_every=1) -> Trajectory:
    """Deprecated: ``simulate(System(model, q0, v0, contact=contact, tau=controls, t1=t1,
    solver=AccelerationLCP(dt) | VelocityLCP(dt)))``; the forces are in ``traj.contact``."""
    warnings.warn("diffsim.simulate_lcp is deprecated: use diffsim.simulate(diffsim.System(model, q0, v0, "
                  "contact=rigid, tau=controls, t1=t1, solver=diffsim.AccelerationLCP(dt))); the contact forces "
                  "are in traj.contact", DeprecationWarning, stacklevel=2)
    if method not in STEPPERS:
        raise ValueError(f"unknown LCP time-stepping method {method!r}; choose one of {tuple(STEPPERS)}")
    stepper = STEPPERS[method](float(dt), tau_p=tau_p, gap_tol=gap_tol, keep_tol=keep_tol, save_every=save_every)
    return simulate(System(model, q0, v0, contact=contact, tau=controls, t1=t1, solver=stepper))


RENAMED = {
    "contacts": ("compliant_contact", compliant_contact),
    "rigid_contacts": ("rigid_contact", rigid_contact),
    "LCPTrajectory": ("Trajectory", Trajectory),
    "simulate_lcp": ("simulate(System(..., contact=rigid_contact(...)))", simulate_lcp),
}


def lookup(name: str):
    """The deprecated object ``name`` (with its warning), or ``AttributeError``."""
    if name not in RENAMED:
        raise AttributeError(f"module 'diffsim' has no attribute {name!r}")
    new, obj = RENAMED[name]
    if name != "simulate_lcp":  # warns when called
        warnings.warn(f"diffsim.{name} is deprecated; use diffsim.{new}", DeprecationWarning, stacklevel=3)
    return obj
