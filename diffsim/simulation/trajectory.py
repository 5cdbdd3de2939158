"""Simulation results: one :class:`Trajectory` type for every simulator (adaptive with or without
contact, fixed-step rollouts, complementarity time stepping) and the :class:`Status` codes."""

from __future__ import annotations

import enum
import warnings

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ..dynamics.dispatch import kinetic_energy, potential_energy
from ..dynamics.energy import angular_momentum, linear_momentum
from ..dynamics.kinematics import body_com, forward_kinematics
from ..model.model import Model


class Status(enum.IntEnum):
    """Result of a simulation (``Trajectory.status``; an array under ``vmap``)."""

    SUCCESS = 0
    MAX_STEPS_REACHED = 1
    NONFINITE = 2
    DT_MIN_REACHED = 3
    SOLVER_FAILED = 4
    MAX_EVENTS = 5
    LCP_FAILED = 6
    EVENT_NOT_LOCATED = 7
    INVALID_PARAMETER = 8  # a Monte Carlo draw outside its quantity's physical domain


STATUS_MESSAGES = {
    Status.SUCCESS: "success",
    Status.MAX_STEPS_REACHED: "max_steps reached before t1: increase max_steps or loosen rtol/atol "
    "(the problem may be stiff: try solver='kvaerno5')",
    Status.NONFINITE: "the state became non-finite (NaN/inf): check the model, loads and initial state, "
    "or tighten the tolerances",
    Status.DT_MIN_REACHED: "the step size fell below its minimum",
    Status.SOLVER_FAILED: "the solver failed (implicit iterations did not converge)",
    Status.MAX_EVENTS: "more contact events (onsets + separations) than max_events before t1: increase max_events",
    Status.LCP_FAILED: "a contact LCP had no solution (see trajectory.contact.lcp_status; at the acceleration "
    "level this is Painlevé's paradox: try the velocity level)",
    Status.EVENT_NOT_LOCATED: "a contact event was detected in a step but not located: the root find on the step's "
    "dense output reached its iteration limit without meeting the contact's event_time_tol (try other rtol/atol "
    "or a larger Contact(event_time_tol=...))",
    Status.INVALID_PARAMETER: "a drawn parameter lies outside its physical domain (a negative mass, stiffness or "
    "damping, a restitution outside (0, 1]): draw it from a distribution with that support (LogNormal, "
    "TruncatedNormal)",
}


def status_from_diffrax(result, event: Status = Status.SUCCESS, root_find: bool = False):
    """The :class:`Status` of a diffrax solve's ``result``; ``event`` says what a terminating
    event means for the caller (a located contact event, or the non-finite-state event);
    ``root_find``: the solve locates events with a root finder, whose iteration limit (optimistix's
    ``nonlinear_max_steps_reached``, promoted by diffrax) then means an event not located."""
    R = diffrax.RESULTS
    code = jnp.select(
        [result == R.successful, result == R.event_occurred, result == R.max_steps_reached, result == R.dt_min_reached,
         (result == R.nonlinear_max_steps_reached) & root_find],
        [Status.SUCCESS, event, Status.MAX_STEPS_REACHED, Status.DT_MIN_REACHED, Status.EVENT_NOT_LOCATED],
        Status.SOLVER_FAILED,
    )
    return code.astype(jnp.int32)


_LCP_FIELDS = ("lambda_N", "lambda_T", "friction", "gap", "slip", "mode", "lcp_status")


class Trajectory(eqx.Module):
    """A simulated motion, time-major: ``t`` [T], ``q`` [T, nq], ``v`` [T, nv]; ``status`` a
    :class:`Status` code (an array under ``vmap``; ``message`` reads it); ``num_steps`` the
    accepted steps; ``integrals`` [T, k] the running integrals asked for (or ``None``);
    ``contact`` the contact record of runs with contact (:class:`diffsim.simulation.ContactRecord`
    for compliant contact: impact memory, works, events; :class:`diffsim.simulation.LCPRecord` for
    complementarity contact: multipliers, modes, per-step LCP status).

    Every simulator returns this type: :func:`diffsim.simulate` (with or without contact),
    :func:`diffsim.rollout` and complementarity time stepping."""

    t: Float[Array, " T"]
    q: Float[Array, "T nq"]
    v: Float[Array, "T nv"]
    status: Int[Array, ""]
    num_steps: Int[Array, ""]
    model: Model
    integrals: Float[Array, "T k"] | None = None
    contact: eqx.Module | None = None

    # ---- status ----
    @property
    def message(self) -> str:
        """Readable status (``'success'`` or what went wrong); for batched runs, the worst."""
        return STATUS_MESSAGES[Status(int(np.max(np.asarray(self.status))))]

    @property
    def ok(self) -> bool:
        """Every run reached ``t1`` with a finite state."""
        return bool(np.all(np.asarray(self.status) == Status.SUCCESS))

    @property
    def result(self):
        """Deprecated name of :attr:`status`."""
        warnings.warn("Trajectory.result is deprecated; use Trajectory.status (and .message for the text)",
                      DeprecationWarning, stacklevel=2)
        return self.status

    def __iter__(self):
        """Deprecated: ``t, q, v = rollout(...)`` (the former tuple result of :func:`diffsim.rollout`)."""
        warnings.warn("unpacking a Trajectory is deprecated; use traj.t, traj.q, traj.v", DeprecationWarning,
                      stacklevel=2)
        return iter((self.t, self.q, self.v))

    def __getattr__(self, name):
        """Deprecated: the former ``LCPTrajectory``'s arrays (``lambda_N`` …) are in ``contact``."""
        contact = self.__dict__.get("contact")
        if name in _LCP_FIELDS and contact is not None and hasattr(contact, "lcp_status"):
            warnings.warn(f"Trajectory.{name} is deprecated; use Trajectory.contact.{name}", DeprecationWarning,
                          stacklevel=2)
            return getattr(contact, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ---- derived quantities (vectorised over time) ----
    def _map_q(self, fn):
        return jax.vmap(fn)(self.q)

    def _map_qv(self, fn):
        return jax.vmap(fn)(self.q, self.v)

    def body_com(self):
        """World-frame centres of mass [T, nb, 3]."""
        return self._map_q(lambda q: body_com(self.model, q))

    def body_poses(self):
        """World rotations [T, nb, 3, 3] and origins [T, nb, 3] of the body frames."""
        k = self._map_q(lambda q: forward_kinematics(self.model, q))
        return k.R, k.p

    def kinetic_energy(self):
        """[T] J."""
        return self._map_qv(lambda q, v: kinetic_energy(self.model, q, v))

    def potential_energy(self):
        """[T] J (gravity and, for flexible links, strain)."""
        return self._map_q(lambda q: potential_energy(self.model, q))

    def energy(self):
        """Total mechanical energy [T] J."""
        return self.kinetic_energy() + self.potential_energy()

    def linear_momentum(self):
        """[T, 3] N s, world frame."""
        return self._map_qv(lambda q, v: linear_momentum(self.model, q, v))

    def angular_momentum(self):
        """[T, 3] N m s, about the world origin, world frame."""
        return self._map_qv(lambda q, v: angular_momentum(self.model, q, v))

    # ---- compliant contact ----
    def _need_compliant_contact(self):
        if self.contact is None or not hasattr(self.contact, "memory"):
            raise ValueError("this trajectory has no compliant contact (System(..., contact=compliant_contact(...)))")

    def contact_forces(self):
        """:class:`diffsim.contact.ContactForces` at every saved time (leading axis T):
        penetration, its rate, normal, slip, ``f_n`` [T, nc], ``f_t`` [T, nc, 3], ``Q``, powers."""
        self._need_compliant_contact()
        c = self.contact
        return _contact_forces(self.model, c.contact, self.q, self.v, c.memory, c.z)

    def energy_balance(self):
        """Seed 001 eq 31: ``E = T + V − W_D − W_FN − W_FT − W_applied`` [T] (constant for an exact
        solution) and its error in percent of ``|E(t0)|``: ``(E, error_pct)``."""
        self._need_compliant_contact()
        E = self.energy() - jnp.sum(self.contact.work, axis=-1)
        return E, 100.0 * (E - E[0]) / jnp.abs(E[0])


@eqx.filter_jit  # one program (op by op, an eager vmap of the contact law compiled each primitive on its own)
def _contact_forces(model, contact, q, v, memory, z):
    return jax.vmap(lambda q, v, m, z: contact.forces(model, q, v, m, z))(q, v, memory, z)
