"""``simulate``: the model's equations of motion integrated with diffrax.

State ``y = (q, v, w)``: configuration, velocity and (optionally) running integrals ``w`` of a
user quantity. Quaternions stay on the manifold: the vector field evaluates the dynamics at the
normalised configuration and moves quaternions with ``q̇ = ½ q ⊗ ω``, whose exact flow keeps
``|q|`` constant, so only the integrator's truncation error (≈ rtol) can change the norm; saved
configurations are projected back onto the manifold.
"""

from __future__ import annotations

from typing import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from ..dynamics.aba import forward_dynamics
from ..dynamics.configuration import configuration_rate, normalize
from ..loads import Loads, as_loads
from ..model.model import Model
from .prescribed import Prescribed, mixed_dynamics
from .solvers import make_solver
from .trajectory import Status, Trajectory


def _vector_field(t, y, args):
    model, loads, integrand, dynamics, prescribed = args
    q, v, _ = y
    qn = normalize(model, q)
    tau, f_ext = loads.evaluate(model, t, qn, v)
    if prescribed is None:
        vdot = dynamics(model, qn, v, tau, f_ext)
    else:
        q, v, vdot, _ = mixed_dynamics(model, prescribed, t, q, v, tau, f_ext)
        qn = normalize(model, q)
    wdot = None if integrand is None else jnp.asarray(integrand(t, qn, v))
    return configuration_rate(model, q, v), vdot, wdot


def _rms_norm_fail_fast(x):
    """RMS error norm that lets a non-finite step through (as error 0), so that the non-finite
    state ends the solve through the :func:`_nonfinite` event instead of an endless cascade of
    rejected steps. Explicit solvers only: an implicit solver signals a diverged Newton
    iteration with an infinite error, which a smaller step cures, so it keeps the plain norm
    (a NaN vector field then ends as ``max_steps`` / ``dt_min`` instead of ``nonfinite``)."""
    n = optx.rms_norm(x)
    return jnp.where(jnp.isfinite(n), n, 0.0)


def _nonfinite(t, y, args, **kwargs):
    q, v, w = y
    bad = ~(jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(v)))
    if w is not None:
        bad = bad | ~jnp.all(jnp.isfinite(w))
    return bad


def _save_times(saveat, t0, t1, dtype):
    if saveat is None:
        saveat = 101
    if isinstance(saveat, (int, np.integer)) and not isinstance(saveat, bool):
        if saveat < 2:
            raise ValueError("saveat as a count needs at least 2 points (t0 and t1)")
        return jnp.linspace(t0, t1, int(saveat), dtype=dtype)
    ts = jnp.asarray(saveat, dtype)
    if ts.ndim != 1 or ts.shape[0] < 1:
        raise ValueError(f"saveat must be a count or a 1-D array of times, got shape {ts.shape}")
    return ts


def _status(sol, ys_ok):
    R = diffrax.RESULTS
    code = jnp.where(
        sol.result == R.successful,
        Status.SUCCESS,
        jnp.where(
            sol.result == R.max_steps_reached,
            Status.MAX_STEPS_REACHED,
            jnp.where(
                sol.result == R.dt_min_reached,
                Status.DT_MIN_REACHED,
                jnp.where(sol.result == R.event_occurred, Status.NONFINITE, Status.SOLVER_FAILED),
            ),
        ),
    )
    return jnp.where((code == Status.SUCCESS) & ~ys_ok, Status.NONFINITE, code).astype(jnp.int32)


def simulate(
    model: Model,
    q0,
    v0,
    t1,
    *,
    t0=0.0,
    tau=None,
    forces=(),
    loads: Loads | None = None,
    solver="tsit5",
    rtol: float = 1e-8,
    atol: float = 1e-8,
    dt0=None,
    dtmax=None,
    saveat=None,
    max_steps: int = 100_000,
    throw: bool = True,
    progress: bool = False,
    integrals: Callable | None = None,
    adjoint: diffrax.AbstractAdjoint | None = None,
    dynamics: Callable = forward_dynamics,
    prescribed: Prescribed | None = None,
    controller: diffrax.AbstractStepSizeController | None = None,
    contact=None,
    max_events: int = 64,
) -> Trajectory:
    """Integrate ``M(q) v̇ + C v + g + D v = τ + Σ Jᵀ f`` from ``t0`` to ``t1``.

    Args:
        model: the multibody model (its floats are differentiable leaves).
        q0, v0: initial configuration [nq] and velocity [nv].
        t1, t0: final and initial time [s].
        tau: generalised forces [nv] — an array, a callable ``f(t, q, v)`` or a
            :class:`diffsim.TimeSeries` (joint torques; base wrench in the base frame).
        forces: point forces (:func:`diffsim.point_force`, :func:`diffsim.site_force`).
        loads: a :class:`diffsim.Loads` instead of ``tau``/``forces``.
        solver: ``'tsit5'`` (default), ``'dopri5'``, ``'dopri8'`` (adaptive explicit),
            ``'kvaerno5'`` (implicit, for stiff problems), ``'rk4'`` (fixed step ``dt0``),
            ``'newmark'``, ``'hht'``, ``'generalized-alpha'`` (implicit second-order schemes of
            structural dynamics, :mod:`diffsim.simulation.newmark`; need ``q̇ = v``), or any
            diffrax solver instance.
        rtol, atol: tolerances of the adaptive step-size controller.
        dt0: initial (adaptive) or fixed (rk4) step [s]; ``dtmax`` caps adaptive steps.
        saveat: number of evenly spaced output times (default 101) or an array of times.
        max_steps: step budget; ``throw=False`` returns the status instead of raising.
        progress: show a progress bar (works under jit).
        integrals: optional ``f(t, q, v) -> [k]`` whose running time integral is returned in
            ``Trajectory.integrals`` (e.g. impulses, dissipated work).
        adjoint: diffrax adjoint (default: recursive checkpointing, reverse-mode exact).
        dynamics: ``f(model, q, v, tau, f_ext) -> v̇``; the default is the O(n) ABA
            (:func:`diffsim.forward_dynamics`); the papers' formulations (e.g.
            :func:`diffsim.formulations.forward_dynamics_bh`) plug in here for cross-checks.
        prescribed: joints with imposed motion (:func:`diffsim.prescribe`); the mixed problem
            is solved by the O(n) sweep and :func:`diffsim.joint_torques` returns the driving
            torques. The trajectory holds the imposed motion exactly on those joints.
        controller: a diffrax step-size controller replacing the default one (e.g. a
            ``PIDController`` with ``dtmin``/``jump_ts``, or ``ConstantStepSize`` to run an
            adaptive-capable solver such as ``'newmark'`` at the fixed step ``dt0``).
        contact: a :class:`diffsim.contact.Contact` (:func:`diffsim.contact.contact`): compliant
            contact with impact memory, friction and the work–energy bookkeeping; the result's
            ``contact`` holds the memory, works and events (:mod:`diffsim.contact.simulate`).
        max_events: bound on the contact events (onsets + separations) of an ``'events'``-mode
            contact run; exceeding it ends the run with status ``MAX_EVENTS``.

    Returns:
        :class:`Trajectory` with ``t``, ``q``, ``v`` (time-major), ``integrals``, ``result``.
        A non-finite state or a solver failure is reported in ``result``/``status`` (and
        raised when ``throw=True``), never returned silently.
    """
    if not isinstance(model, Model):
        raise TypeError(f"simulate expects a diffsim Model, got {type(model).__name__}")
    dtype = model.dtype
    q0 = jnp.asarray(q0, dtype)
    v0 = jnp.asarray(v0, dtype)
    if q0.shape != (model.nq,):
        raise ValueError(f"q0 must have shape ({model.nq},) for this model, got {q0.shape}")
    if v0.shape != (model.nv,):
        raise ValueError(f"v0 must have shape ({model.nv},) for this model, got {v0.shape}")
    loads = as_loads(tau, forces, loads)
    solver_obj, adaptive = make_solver(solver, rtol, atol)
    if not adaptive and dt0 is None:
        raise ValueError(f"the fixed-step solver {solver!r} needs dt0")
    t0 = jnp.asarray(t0, dtype)
    t1 = jnp.asarray(t1, dtype)
    ts = _save_times(saveat, t0, t1, dtype)
    user_controller = controller  # the contact loop chooses its own default
    if controller is not None:
        pass
    elif adaptive:
        from .newmark import AbstractNewmarkFamily

        # implicit solvers signal a failed Newton iteration with an infinite error: keep it
        implicit = isinstance(solver_obj, (diffrax.AbstractImplicitSolver, AbstractNewmarkFamily))
        norm = optx.rms_norm if implicit else _rms_norm_fail_fast
        controller = diffrax.PIDController(rtol=rtol, atol=atol, dtmax=dtmax, norm=norm)
    else:
        controller = diffrax.ConstantStepSize()
    if contact is not None:
        from ..contact.model import Contact
        from ..contact.simulate import simulate_contact

        if not isinstance(contact, Contact):
            raise TypeError(f"contact must be a diffsim.contact.Contact (diffsim.contact.contact(...)), got {type(contact).__name__}")
        if prescribed is not None:
            raise ValueError("prescribed motion together with contact is not supported yet")
        if int(max_events) < 1:
            raise ValueError(f"max_events must be >= 1, got {max_events}")
        return simulate_contact(
            model, q0, v0, t1, contact, t0=t0, loads=loads, solver_obj=solver_obj, adaptive=adaptive, rtol=rtol,
            atol=atol, dt0=dt0, dtmax=dtmax, ts=ts, max_steps=max_steps, max_events=max_events, throw=throw,
            integrals=integrals, adjoint=adjoint, dynamics=dynamics, controller=user_controller,
        )
    w0 = None
    if integrals is not None:
        w0 = jnp.zeros_like(jnp.asarray(integrals(t0, q0, v0), dtype))
    y0 = (q0, v0, w0)
    y0 = eqx.error_if(y0, ~(jnp.all(jnp.isfinite(q0)) & jnp.all(jnp.isfinite(v0))), "q0/v0 are not finite") if throw else y0
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_vector_field),
        solver_obj,
        t0,
        t1,
        None if dt0 is None else jnp.asarray(dt0, dtype),
        y0,
        args=(model, loads, integrals, dynamics, prescribed),
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=controller,
        max_steps=max_steps,
        throw=throw,
        adjoint=adjoint if adjoint is not None else diffrax.RecursiveCheckpointAdjoint(),
        progress_meter=diffrax.TqdmProgressMeter() if progress else diffrax.NoProgressMeter(),
        event=diffrax.Event(_nonfinite),
    )
    qs, vs, ws = sol.ys
    result = _status(sol, ~_nonfinite(None, sol.ys, None))
    if throw:
        qs = eqx.error_if(
            qs, result == Status.NONFINITE, "simulate: the state became non-finite (NaN/inf) during the solve"
        )
    if prescribed is not None:  # the imposed motion, exactly
        qs, vs, _ = jax.vmap(lambda t, q, v: prescribed.impose(t, q, v))(sol.ts, qs, vs)
    qs = jax.vmap(lambda q: normalize(model, q))(qs)
    return Trajectory(
        t=sol.ts, q=qs, v=vs, integrals=ws, result=result, num_steps=sol.stats["num_accepted_steps"], model=model
    )
