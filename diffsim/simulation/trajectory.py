"""Simulation results: one :class:`Trajectory` type for every simulator (adaptive with or without
contact, fixed-step rollouts, complementarity time stepping) and the :class:`Status` codes."""

from __future__ import annotations

import enum
import functools
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


def _per_run(method):
    """A derived quantity of one run, mapped over the batch axes of a batched :class:`Trajectory`
    (``jax.vmap(simulate)``, nested ``vmap`` or any leading axes on ``t``): ``t.ndim − 1`` vmaps
    over every array of the trajectory — its model and contact record included, which ``vmap``
    batches along with the states (a batch over a mass or a contact stiffness is a batch of
    models) — so each member gives what the method gives on that member alone."""

    @functools.wraps(method)
    def per_run(self):
        rank = jnp.ndim(self.t) - 1
        return method(self) if rank <= 0 else _batched(method.__name__, self, rank)

    return per_run


class Trajectory(eqx.Module):
    """A simulated motion, time-major: ``t`` [T], ``q`` [T, nq], ``v`` [T, nv]; ``status`` a
    :class:`Status` code (an array under ``vmap``; ``message`` reads it); ``num_steps`` the
    accepted steps; ``integrals`` [T, k] the running integrals asked for (or ``None``);
    ``contact`` the contact record of runs with contact (:class:`diffsim.simulation.ContactRecord`
    for compliant contact: impact memory, works, events; :class:`diffsim.simulation.LCPRecord` for
    complementarity contact: multipliers, modes, per-step LCP status).

    Every simulator returns this type: :func:`diffsim.simulate` (with or without contact),
    :func:`diffsim.rollout` and complementarity time stepping. Under ``jax.vmap`` every array gains
    the batch axes in front (``t`` [B, T], ``q`` [B, T, nq], the model's and contact record's
    arrays [B, …]); the derived quantities (:meth:`energy`, :meth:`contact_forces`,
    :meth:`energy_balance` …) then have them in front too, each member's what that run alone gives."""

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

    # ---- derived quantities (vectorised over time; over the batch axes of a batched run) ----
    @property
    def batch_shape(self) -> tuple:
        """The leading batch axes: ``()`` for one run, ``(B,)`` for ``jax.vmap(simulate)`` over B
        inputs (``t`` [B, T], ``q`` [B, T, nq], every array of ``model`` and ``contact`` [B, …])."""
        return tuple(jnp.shape(self.t)[:-1])

    def _map_q(self, fn):
        return jax.vmap(fn)(self.q)

    def _map_qv(self, fn):
        return jax.vmap(fn)(self.q, self.v)

    @_per_run
    def body_com(self):
        """World-frame centres of mass [T, nb, 3]."""
        return self._map_q(lambda q: body_com(self.model, q))

    @_per_run
    def body_poses(self):
        """World rotations [T, nb, 3, 3] and origins [T, nb, 3] of the body frames."""
        k = self._map_q(lambda q: forward_kinematics(self.model, q))
        return k.R, k.p

    @_per_run
    def kinetic_energy(self):
        """[T] J."""
        return self._map_qv(lambda q, v: kinetic_energy(self.model, q, v))

    @_per_run
    def potential_energy(self):
        """[T] J (gravity and, for flexible links, strain)."""
        return self._map_q(lambda q: potential_energy(self.model, q))

    @_per_run
    def energy(self):
        """Total mechanical energy [T] J."""
        return self.kinetic_energy() + self.potential_energy()

    @_per_run
    def linear_momentum(self):
        """[T, 3] N s, world frame."""
        return self._map_qv(lambda q, v: linear_momentum(self.model, q, v))

    @_per_run
    def angular_momentum(self):
        """[T, 3] N m s, about the world origin, world frame."""
        return self._map_qv(lambda q, v: angular_momentum(self.model, q, v))

    # ---- compliant contact ----
    def _need_compliant_contact(self):
        if self.contact is None or not hasattr(self.contact, "memory"):
            raise ValueError("this trajectory has no compliant contact (System(..., contact=compliant_contact(...)))")

    @_per_run
    def contact_forces(self):
        """:class:`diffsim.contact.ContactForces` at every saved time (leading axis T):
        penetration, its rate, normal, slip, ``f_n`` [T, nc], ``f_t`` [T, nc, 3], ``Q``, powers."""
        self._need_compliant_contact()
        c = self.contact
        return _contact_forces(self.model, c.contact, self.q, self.v, c.memory, c.z)

    @_per_run
    def energy_drift(self):
        """The absolute error of the work–energy balance and its scale, ``(E − E(t0) [T], S)`` in J:
        ``E`` the balance of :meth:`energy_balance`, ``S = max_t (T + |V| + Σ_i |W_i|)`` (``T``
        kinetic, ``V`` potential energy, ``W_i`` the contact works, all at the saved times).

        ``S`` is the size of the largest sum the balance forms, so ``(E − E(t0)) / S`` reads as
        the digits lost against the solver's relative tolerance. It is positive whenever anything
        in the run has energy, whatever the zero of the potential: ``E(t0)`` is not (a body
        released at rest from the height where ``V = 0`` has ``E(t0) = 0``, and the percentage
        of it was NaN or inf for a drift of 1e-10 J). ``S ≥ |E(t0)|`` (the terms at ``t0`` are
        among those maximised), so the percentage of ``S`` is never larger than the former
        percentage of ``|E(t0)|``. ``S`` grows with ``|V|``: a potential whose zero lies far from
        the motion makes the relative error smaller — read ``E − E(t0)`` there."""
        E, S = self._balance()
        return E - E[0], S

    @_per_run
    def energy_balance(self):
        """Seed 001 eq 31: ``E = T + V − W_D − W_FN − W_FT − W_applied`` [T] (constant for an exact
        solution) and its error in percent of the balance's energy scale ``S`` (:meth:`energy_drift`,
        ``max_t (T + |V| + Σ|W_i|)``): ``(E, error_pct)``, ``error_pct = 100 (E − E(t0)) / S``
        (0 where ``S = 0``: nothing moved and nothing has energy). The absolute error in J is
        ``E − E[0]`` (:meth:`energy_drift` returns it with ``S``)."""
        E, S = self._balance()
        return E, jnp.where(S > 0, 100.0 * (E - E[0]) / jnp.where(S > 0, S, 1.0), 0.0)

    def _balance(self):
        """``(E [T], S)`` of one run (:meth:`energy_drift`)."""
        self._need_compliant_contact()
        Tk, V, W = self.kinetic_energy(), self.potential_energy(), self.contact.work
        return Tk + V - jnp.sum(W, axis=-1), jnp.max(Tk + jnp.abs(V) + jnp.sum(jnp.abs(W), axis=-1))


@eqx.filter_jit  # one program (op by op, an eager vmap of the contact law compiled each primitive on its own)
def _contact_forces(model, contact, q, v, memory, z):
    return jax.vmap(lambda q, v, m, z: contact.forces(model, q, v, m, z))(q, v, memory, z)


def _check_batched(traj, rank):
    batch = tuple(jnp.shape(traj.t)[:rank])
    bad = [jax.tree_util.keystr(path) for path, x in jax.tree_util.tree_leaves_with_path(traj)
           if eqx.is_array(x) and tuple(x.shape[:rank]) != batch]
    if bad:
        raise ValueError(f"a batched Trajectory (batch shape {batch}) needs every array batched, as jax.vmap returns "
                         f"them; {', '.join(bad[:4])}{' …' if len(bad) > 4 else ''} "
                         f"{'is' if len(bad) == 1 else 'are'} not: call the method inside the vmap instead")


@eqx.filter_jit  # one program per method and model structure (an eager vmap compiles each primitive on its own)
def _batched_jit(name, traj, rank):
    fn = getattr(Trajectory, name)
    for _ in range(rank):
        fn = eqx.filter_vmap(fn)
    return fn(traj)


def _batched(name, traj, rank):
    _check_batched(traj, rank)
    return _batched_jit(name, traj, rank)
