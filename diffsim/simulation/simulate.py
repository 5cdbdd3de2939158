"""``simulate``: a :class:`~.system.System`'s equations of motion integrated with diffrax (or,
with complementarity contact, stepped by an LCP time stepper).

State ``y = (q, v, w)``: configuration, velocity and (optionally) running integrals ``w`` of a
user quantity. Quaternions stay on the manifold (:mod:`.vector_field`); saved configurations are
projected back onto it. Runs with compliant contact go through the event loop of
:mod:`.compliant`, runs with rigid contact through :mod:`.lcp`.
"""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from ..complementarity.rigid import RigidContact
from ..contact.model import Contact
from ..dynamics.configuration import normalize
from ..model.model import Model
from ..precision import full_precision
from .compliant import simulate_compliant
from .lcp import simulate_lcp_system
from .sensitivity import ForwardSensitivity, SegmentProblem
from .system import Options, System
from .trajectory import Status, Trajectory, status_from_diffrax
from .outputs import nonfinite, save_times
from .vector_field import vector_field


_OPTION_KEYS = ("dt0", "dtmax", "max_steps", "max_events", "throw", "progress", "adjoint")


def system_from_call(model: Model, q0, v0, t1, **kwargs) -> System:
    """The :class:`System` of the call ``simulate(model, q0, v0, t1, **kwargs)`` (the keywords of
    :func:`simulate`)."""
    opts = {k: kwargs.pop(k) for k in _OPTION_KEYS if k in kwargs}
    return System(model, q0, v0, t1=t1, options=Options(**opts), **kwargs)


@full_precision
def simulate(system, q0=None, v0=None, t1=None, **kwargs) -> Trajectory:
    """Integrate ``M(q) v̇ + C v + g + D(v) = τ + Σ Jᵀ f`` over a system's time span.

    ``simulate(system)`` runs a :class:`System` (everything the run needs). The call
    ``simulate(model, q0, v0, t1, **kwargs)`` builds the system from its arguments and gives the
    identical result; its keywords are the :class:`System` constructor's (``t0``, ``tau``,
    ``forces``, ``ctrl``, ``loads``, ``contact``, ``limits``, ``prescribed``, ``dynamics``,
    ``solver``, ``controller``, ``rtol``, ``atol``, ``saveat``, ``integrals``, ``options``) and the
    :class:`Options` fields (``dt0``, ``dtmax``, ``max_steps``, ``max_events``, ``throw``,
    ``progress``, ``adjoint``).

    Returns:
        :class:`Trajectory` with ``t``, ``q``, ``v`` (time-major), ``integrals``, ``status``,
        ``num_steps``, and ``contact`` for runs with contact. A non-finite state or a solver
        failure is reported in ``status`` (and raised when ``throw=True``), never returned silently.
    """
    if isinstance(system, Model):
        if t1 is None:
            raise TypeError("simulate(model, q0, v0, t1, ...) needs the final time t1")
        system = system_from_call(system, q0, v0, t1, **kwargs)
    elif not isinstance(system, System):
        raise TypeError(f"simulate expects a diffsim System (or a Model with q0, v0, t1), got {type(system).__name__}")
    elif q0 is not None or v0 is not None or t1 is not None or kwargs:
        raise TypeError("simulate(system) takes no further arguments: change the system (system.replace(...))")
    if isinstance(system.contact, RigidContact):
        return simulate_lcp_system(system)
    if isinstance(system.contact, Contact) or system.limits is not None:
        return simulate_compliant(system)
    return _simulate_free(system)


# Traced once: diffrax calls the vector field for the initial step size, the first stage, the
# stages' scan, the FSAL and the dense output (S0: its dynamics traced 5 times per solve); one
# jitted function is one jaxpr, which XLA inlines (README, core speed).
_vector_field_once = eqx.filter_jit(vector_field)


def _simulate_free(system: System) -> Trajectory:
    model, opts = system.model, system.options
    dtype = model.dtype
    t0 = jnp.asarray(system.t0, dtype)
    t1 = jnp.asarray(system.t1, dtype)
    ts = save_times(system.saveat, t0, t1, dtype)
    q0, v0 = system.q0, system.v0
    w0 = None
    if system.integrals is not None:
        w0 = jnp.zeros_like(jnp.asarray(system.integrals(t0, q0, v0), dtype))
    y0 = (q0, v0, w0)
    if opts.throw:
        y0 = eqx.error_if(y0, ~(jnp.all(jnp.isfinite(q0)) & jnp.all(jnp.isfinite(v0))), "q0/v0 are not finite")
    args = (model, system.loads, system.integrals, system.dynamics, system.prescribed)
    dt0 = None if opts.dt0 is None else jnp.asarray(opts.dt0, dtype)
    if isinstance(opts.adjoint, ForwardSensitivity):  # tangents under the step controller
        problem = SegmentProblem(_vector_field_once, system.solver, system.step_controller(), diffrax.Event(nonfinite), opts.max_steps)
        seg = problem.solve(t0, t1, dt0, y0, args, ts, sensitivities=True)
        ys, t_saved, n_steps = seg.ys, ts, seg.num_accepted_steps
        status = jnp.where(seg.hit, Status.NONFINITE, seg.status)
        if opts.throw:
            ys = eqx.error_if(ys, (status != Status.SUCCESS) & (status != Status.NONFINITE),
                              "simulate: the solve did not reach t1 (see Trajectory.status; throw=False returns it)")
    else:
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(_vector_field_once),
            system.solver,
            t0,
            t1,
            dt0,
            y0,
            args=args,
            saveat=diffrax.SaveAt(ts=ts),
            stepsize_controller=system.step_controller(),
            max_steps=opts.max_steps,
            throw=opts.throw,
            adjoint=opts.adjoint if opts.adjoint is not None else diffrax.RecursiveCheckpointAdjoint(),
            progress_meter=diffrax.TqdmProgressMeter() if opts.progress else diffrax.NoProgressMeter(),
            event=diffrax.Event(nonfinite),
        )
        ys, t_saved, n_steps = sol.ys, sol.ts, sol.stats["num_accepted_steps"]
        status = status_from_diffrax(sol.result, event=Status.NONFINITE)
    qs, vs, ws = ys
    status = jnp.where((status == Status.SUCCESS) & nonfinite(None, ys, None), Status.NONFINITE, status)
    if opts.throw:
        qs = eqx.error_if(qs, status == Status.NONFINITE, "simulate: the state became non-finite (NaN/inf) during the solve")
    if system.prescribed is not None:  # the imposed motion, exactly
        qs, vs, _ = jax.vmap(lambda t, q, v: system.prescribed.impose(t, q, v))(t_saved, qs, vs)
    qs = jax.vmap(lambda q: normalize(model, q))(qs)
    return Trajectory(t=t_saved, q=qs, v=vs, status=status.astype(jnp.int32),
                      num_steps=n_steps, model=model, integrals=ws)
