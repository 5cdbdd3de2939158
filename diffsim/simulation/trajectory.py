"""Simulation results: a pytree of time-major arrays plus derived quantities."""

from __future__ import annotations

import enum

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics import energy as _energy
from ..dynamics.kinematics import body_com, forward_kinematics
from ..model.model import Model


class Status(enum.IntEnum):
    """Result of a simulation (``Trajectory.result``)."""

    SUCCESS = 0
    MAX_STEPS_REACHED = 1
    NONFINITE = 2
    DT_MIN_REACHED = 3
    SOLVER_FAILED = 4
    MAX_EVENTS = 5


STATUS_MESSAGES = {
    Status.SUCCESS: "success",
    Status.MAX_STEPS_REACHED: "max_steps reached before t1: increase max_steps or loosen rtol/atol "
    "(the problem may be stiff: try solver='kvaerno5')",
    Status.NONFINITE: "the state became non-finite (NaN/inf): check the model, loads and initial state, "
    "or tighten the tolerances",
    Status.DT_MIN_REACHED: "the step size fell below its minimum",
    Status.SOLVER_FAILED: "the solver failed (implicit iterations did not converge)",
    Status.MAX_EVENTS: "more contact events (onsets + separations) than max_events before t1: increase max_events",
}


class Trajectory(eqx.Module):
    """``t`` [T], ``q`` [T, nq], ``v`` [T, nv] (time-major) and, when requested, ``integrals``
    [T, k] (time integrals of user quantities, e.g. impulses). ``result`` is a
    :class:`Status` code (an array under ``vmap``); ``num_steps`` the accepted steps.
    Runs with contact carry a :class:`diffsim.contact.ContactRecord` in ``contact`` (impact
    memory, LuGre state, works, events) and :meth:`contact_forces` / :meth:`energy_balance`."""

    t: jax.Array
    q: jax.Array
    v: jax.Array
    integrals: jax.Array | None
    result: jax.Array
    num_steps: jax.Array
    model: Model
    contact: object = None

    # ---- status ----
    @property
    def status(self) -> str:
        """Readable result (``'success'`` or what went wrong); for batched runs, the worst."""
        r = int(np.max(np.asarray(self.result)))
        return STATUS_MESSAGES[Status(r)]

    @property
    def ok(self) -> bool:
        return bool(np.all(np.asarray(self.result) == Status.SUCCESS))

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
        return self._map_qv(lambda q, v: _energy.kinetic_energy(self.model, q, v))

    def potential_energy(self):
        return self._map_q(lambda q: _energy.potential_energy(self.model, q))

    def energy(self):
        """Total mechanical energy [T]."""
        return self.kinetic_energy() + self.potential_energy()

    def linear_momentum(self):
        """[T, 3], world frame."""
        return self._map_qv(lambda q, v: _energy.linear_momentum(self.model, q, v))

    def angular_momentum(self):
        """[T, 3] about the world origin, world frame."""
        return self._map_qv(lambda q, v: _energy.angular_momentum(self.model, q, v))

    # ---- contact ----
    def _need_contact(self):
        if self.contact is None:
            raise ValueError("this trajectory has no contact (simulate(..., contact=...))")

    def contact_forces(self):
        """:class:`diffsim.contact.ContactForces` at every saved time (leading axis T):
        penetration, its rate, normal, slip, ``f_n`` [T, nc], ``f_t`` [T, nc, 3], ``Q``, powers."""
        self._need_contact()
        c = self.contact
        return jax.vmap(lambda q, v, m, z: c.contact.forces(self.model, q, v, m, z))(self.q, self.v, c.memory, c.z)

    def energy_balance(self):
        """Seed 001 eq 31: ``E = T + V − W_D − W_FN − W_FT − W_applied`` [T] (constant for an exact
        solution) and its error in percent of ``|E(t0)|``: ``(E, error_pct)``."""
        self._need_contact()
        E = self.energy() - jnp.sum(self.contact.work, axis=-1)
        return E, 100.0 * (E - E[0]) / jnp.abs(E[0])
