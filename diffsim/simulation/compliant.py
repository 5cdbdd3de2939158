"""Simulation with compliant contact: flight/contact phases, located events, impact memory and
the work–energy bookkeeping (seed 001 §3, eq 31).

State ``y = (q, v, w, c)``: configuration, velocity, user integrals ``w`` and the contact state
``c = (m, z, W)`` — the smooth-mode impact memory ``m`` [nc], LuGre bristles ``z`` [nc, 3] and
the works ``W = (W_D, W_FN, W_FT, W_applied)`` done on the system by damping (structural, air,
joint), normal contact forces, friction and the applied loads. ``T + V − ΣW`` is constant
(seed 001 eq 31), which every run reports as a percentage error.

``mode='events'``: the solve is a bounded loop (a ``lax.scan`` of ``max_events + 1`` segments,
so it works under ``jit``, ``vmap`` and reverse-mode ``grad``). Each segment integrates until
some pair's phase flips — onset (``Δ`` rises through 0 in flight) or separation (``Δ`` falls
through 0 in contact) — located by one diffrax event for all pairs, the earliest crossing found by
bracketed Newton on the dense output (:mod:`.event_root`, to ``event_time_tol``). There the phase is switched and, at onset, the impact memory
``Δ̇⁽⁻⁾ = Δ̇(t_impact)`` stored; pairs whose crossing is due within ``event_time_tol`` (e.g. the
mirror contact of a symmetric system) switch at the same event. The event time depends
differentiably on the parameters (implicit function theorem in the root find), so gradients
flow through impact times.
"""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from .._util import tied
from ..contact.model import Contact, ContactSet
from ..dynamics.configuration import configuration_rate, normalize
from ..dynamics.flexible import dissipated_power
from .event_root import EarliestRoot
from .outputs import nonfinite, save_times
from .sensitivity import ForwardSensitivity, SegmentProblem
from .trajectory import Status, Trajectory

WORK_NAMES = ("damping", "normal", "friction", "applied")


class ContactRecord(eqx.Module):
    """Compliant-contact part of a :class:`diffsim.Trajectory` (time-major like it)."""

    contact: Contact | ContactSet  # with enforced joint limits: the set (contact pairs, then limits)
    memory: jax.Array  # [T, nc] impact memory Δ̇⁽⁻⁾ in use
    z: jax.Array  # [T, nc, 3] LuGre bristle state
    work: jax.Array  # [T, 4] works on the system (WORK_NAMES)
    event_t: jax.Array  # [E] event times (inf where unused)
    event_flip: jax.Array  # [E, nc] +1 onset, −1 separation, 0 none
    impacts: jax.Array  # [nc] number of onsets per pair
    n_events: jax.Array  # []


@eqx.filter_jit  # traced once: diffrax calls it per stage, in the dense output and the root find
def _vector_field(t, y, args):
    model, loads, integrand, dynamics, contact, memory = args
    q, v, w, c = y
    m, z, _ = c
    qn = normalize(model, q)
    tau, f_ext = loads.evaluate(model, t, qn, v)
    mem, phase = (m, None) if contact.mode == "smooth" else memory[:2]
    cf = contact.forces(model, qn, v, mem, z, phase)
    vdot = dynamics(model, qn, v, tau + cf.Q, f_ext)
    P_applied = loads.power(model, t, qn, v) if loads.active else jnp.zeros((), v.dtype)
    Wdot = jnp.stack([-dissipated_power(model, qn, v), cf.power_n, cf.power_t, P_applied])
    mdot = contact.memory_rate(cf.delta, cf.delta_dot, m) if contact.mode == "smooth" else jnp.zeros_like(m)
    wdot = None if integrand is None else jnp.asarray(integrand(t, qn, v))
    out = (configuration_rate(model, q, v), vdot, wdot, (mdot, cf.z_rate, Wdot))
    return jax.tree_util.tree_map(lambda d, s: d.astype(s.dtype), out, y)  # float32 models stay float32


@eqx.filter_jit
def _penetration(model, contact, q):
    """Δ of every pair at ``q``, for the event condition. Jitted so that it is traced once and
    reused as one jaxpr by every step's event check, the root find and its
    linearisation (XLA inlines the calls; the S1 run below is bit-identical). Measured on S1 events,
    1.5 s: trace + lowering 12–14 s → 6 s (with the jitted vector field), compile 26–30 → 19–21 s
    (README, core speed)."""
    return contact.penetration(model, normalize(model, q))


def _event_root_finder(time_tol: float, tdt):
    """The earliest crossing of the step's triggered conditions on its dense output, bracketed
    Newton (:mod:`.event_root`), to ``time_tol`` [s], but never below the time dtype's resolution."""
    return EarliestRoot(rtol=float(8 * jnp.finfo(tdt).eps), atol=max(time_tol, float(10 * jnp.finfo(tdt).eps)))


@eqx.filter_jit
def simulate_compliant(system) -> Trajectory:
    """The contact loop behind :func:`diffsim.simulate` for a system with compliant contact
    (module docstring). Jitted as a whole: called eagerly, its ``lax.scan`` of segments was
    traced from a new closure and compiled again on every call (seven identical compiles of
    ~10 000 lines in one test of ``tests/simulation/test_system.py``); now systems of one
    structure share one program."""
    model, contact, opts = system.model, system.compliant_contacts(), system.options
    loads, integrals, dynamics = system.loads, system.integrals, system.dynamics
    solver_obj, controller = system.solver, system.step_controller()
    dt0, max_steps, max_events, throw, adjoint = opts.dt0, opts.max_steps, opts.max_events, opts.throw, opts.adjoint
    dtype = model.dtype
    # time in the default float dtype (float64 under x64, also for a float32 model): diffrax's
    # event root find mixes the times with Python floats
    tdt = jnp.result_type(float)
    t0, t1 = jnp.asarray(system.t0, dtype), jnp.asarray(system.t1, dtype)
    ts = jnp.asarray(save_times(system.saveat, t0, t1, dtype), tdt)
    t0, t1 = jnp.asarray(t0, tdt), jnp.asarray(t1, tdt)
    q0, v0 = system.q0, system.v0
    nc = contact.n_pairs
    events = contact.mode == "events"
    w0 = None if integrals is None else jnp.zeros_like(jnp.asarray(integrals(t0, q0, v0), dtype))
    # initial phases: pairs already penetrating start in contact with memory max(Δ̇, floor)
    cf0 = contact.forces(model, normalize(model, q0), v0, jnp.ones(nc, dtype), jnp.zeros((nc, 3), dtype))
    phase0 = cf0.delta > 0
    mem0 = jnp.where(phase0, jnp.maximum(cf0.delta_dot, contact.v_impact_min), contact.v_impact_min).astype(jnp.result_type(dtype, tdt))
    m0 = jnp.where(phase0, mem0, cf0.delta_dot)  # smooth mode: the memory state starts at Δ̇
    c0 = (m0, jnp.zeros((nc, 3), dtype), jnp.zeros(4, dtype))
    # diffrax keeps the state in (at least) the time dtype: a float32 model under x64 is
    # integrated in float64 and its outputs are returned in float32 (with x64 off, all float32)
    sdt = jnp.result_type(dtype, tdt)
    y0 = jax.tree_util.tree_map(lambda a: jnp.asarray(a, sdt), (q0, v0, w0, c0))
    sensitivities = isinstance(adjoint, ForwardSensitivity)
    T = ts.shape[0]

    def switch(t, y, args, **kw):
        """The first pair to cross: ``max_k s_k`` with ``s_k = Δ_k`` for a free pair, ``−Δ_k`` for
        one in contact (``> 0`` once it has crossed). One condition for all pairs, not one per
        pair: diffrax keeps only the first triggered condition of a list, in list order, so with
        two pairs crossing in one step the later-listed but earlier crossing was found late (at
        the other's time: 7e-5 s late for two points 1e-4 m apart in height)."""
        q = y[0]
        model, contact = args[0], args[4]  # from args: the event depends differentiably on them
        d = _penetration(model, contact, q)  # all pairs' Δ, one jitted kinematics pass
        # args[-1] = (memory, phase, offset); in the default float dtype, which diffrax's event
        # root find mixes with Python floats (a float32 model under x64 would not match)
        _, phase, offset = args[-1]
        return jnp.max(jnp.where(phase, -d, d) - offset).astype(jnp.result_type(float))

    if events:
        event = diffrax.Event([switch, nonfinite], root_finder=_event_root_finder(contact.event_time_tol, tdt),
                              direction=[True, None])
    else:
        event = diffrax.Event(nonfinite)

    problem = SegmentProblem(_vector_field, solver_obj, controller, event, max_steps, adjoint)
    empty = jax.tree_util.tree_map(lambda a: jnp.full((T,) + a.shape, jnp.inf, a.dtype), y0)

    def segment(carry, _):
        t_s, y_s, phase, mem, done, out, out_mem, ev_t, ev_flip, impacts, n_ev, result, steps = carry
        t_start = jnp.where(done, t1, t_s)
        ts_seg = jnp.clip(ts, t_start, t1)
        # the switch starts < 0: a pair flipped at this segment's start sits at its switch (± round-
        # off), which would hide another pair's crossing in the first steps (the event needs a sign
        # change from ≤ 0, and the bracket a negative start): such a pair's switch is moved to
        # ``margin`` (16 ulp of a unit length) above where it starts, held without a tangent
        offset = jnp.zeros(nc, tdt)  # smooth mode: no switch condition
        if events:
            d_s = _penetration(model, contact, y_s[0])
            s_s = jnp.where(phase, -d_s, d_s).astype(tdt)
            margin = 16 * jnp.finfo(tdt).eps
            offset = jax.lax.stop_gradient(jnp.where(s_s > -margin, s_s + margin, 0.0))
        sol = problem.solve(t_start, t1, None if dt0 is None else jnp.asarray(dt0, tdt), y_s,
                            (model, loads, integrals, dynamics, contact, (mem, phase, offset)), ts_seg,
                            sensitivities=sensitivities)
        ys_seg, y_end, t_end = sol.ys, sol.y_end, sol.t_end
        hit = sol.hit
        final = ~hit | (t_end >= t1)
        # keep the saves of this segment: t_start ≤ ts < t_end (and ts = t1 on the last one)
        keep = (~done) & (ts >= t_start) & ((ts < t_end) | (final & (ts >= t1)))
        pick = lambda new, old: jnp.where(keep.reshape((T,) + (1,) * (new.ndim - 1)), new, old)
        out = jax.tree_util.tree_map(pick, ys_seg, out)
        out_mem = jnp.where(keep[:, None], mem, out_mem)
        # what happened at the end of the segment
        bad = nonfinite(None, y_end, None)
        flip = jnp.zeros(nc, bool)
        if events:
            switched = sol.event_mask[0]
            q_e = normalize(model, y_end[0])
            cf = contact.forces(model, q_e, y_end[1], mem, y_end[3][1])
            # the pair whose crossing the root find located: the switch's maximiser (its Δ is 0
            # only to the time dtype's resolution × Δ̇: 3e-6 m at 2.3 m/s in float32)
            first = jnp.arange(nc) == jnp.argmax(jnp.where(phase, -cf.delta, cf.delta).astype(tdt) - offset)
            # simultaneous crossings: within 1e3 event_time_tol [s] (or 16 of the time dtype's
            # resolutions at t_end, the larger) of it, and 45 ulp of a unit length (1e-14 m in float64)
            eps_t = float(jnp.finfo(tdt).eps)
            window = jnp.maximum(1e3 * contact.event_time_tol, 16 * (10 * eps_t + 8 * eps_t * jnp.abs(t_end)))
            tol = jnp.abs(cf.delta_dot) * window + 45 * float(jnp.finfo(sdt).eps)
            onset_near = (~phase) & (cf.delta > -tol) & (cf.delta_dot > 0)
            sep_near = phase & (cf.delta < tol) & (cf.delta_dot < 0)
            # the pairs at their switch when the first one crossed (within tol: simultaneous ones too)
            crossed = jnp.where(phase, cf.delta < tol, cf.delta > -tol)
            flip = ((switched & (crossed | first)) | onset_near | sep_near) & hit & ~done & ~bad
            onset = flip & ~phase
            mem = jnp.where(onset, jnp.maximum(cf.delta_dot, contact.v_impact_min), mem)
            phase = phase ^ flip
            impacts = impacts + onset.astype(impacts.dtype)
            slot = jnp.minimum(n_ev, ev_t.shape[0] - 1)
            record = jnp.any(flip)
            ev_t = jnp.where(record, ev_t.at[slot].set(t_end), ev_t)
            ev_flip = jnp.where(record, ev_flip.at[slot].set(jnp.where(onset, 1, jnp.where(flip, -1, 0))), ev_flip)
            n_ev = n_ev + record.astype(n_ev.dtype)
        code = jnp.where(bad | (hit & ~jnp.any(flip) & ~final), Status.NONFINITE, sol.status)
        result = jnp.where(done, result, code)
        failed = code != Status.SUCCESS
        steps = steps + jnp.where(done, 0, sol.num_accepted_steps)
        new_done = done | final | failed
        t_s = jnp.where(done, t_s, t_end)
        y_s = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), y_s, y_end)
        return (t_s, y_s, phase, mem, new_done, out, out_mem, ev_t, ev_flip, impacts, n_ev, result, steps), None

    E = max(int(max_events), 1)
    carry0 = (
        t0,
        y0,
        phase0,
        mem0,
        jnp.asarray(False),
        empty,
        jnp.full((T, nc), jnp.inf, sdt),
        jnp.full((E,), jnp.inf, tdt),
        jnp.zeros((E, nc), jnp.int32),
        jnp.zeros(nc, jnp.int32),
        jnp.asarray(0, jnp.int32),
        jnp.asarray(Status.SUCCESS, jnp.int32),
        jnp.asarray(0, jnp.int32),
    )
    n_seg = int(max_events) + 1 if events else 1
    # every carry perturbed (batched) from the start: the scan's JVP / batching fixed point then
    # traces the segment (a whole diffrax solve) once instead of two or three times
    carry, _ = jax.lax.scan(segment, tied(carry0, system), None, length=n_seg)
    _, _, _, _, done, out, out_mem, ev_t, ev_flip, impacts, n_ev, result, steps = carry
    result = jnp.where(done, result, Status.MAX_EVENTS).astype(jnp.int32)
    out = jax.tree_util.tree_map(lambda a: a.astype(dtype), out)
    out_mem = out_mem.astype(dtype)
    qs, vs, ws, cs = out
    if throw:
        qs = eqx.error_if(qs, result != Status.SUCCESS, "simulate (contact): the solve did not reach t1 — "
                          "see Trajectory.status (throw=False returns it; max_events / max_steps may be too small)")
    ms, zs, Ws = cs
    memory = ms if contact.mode == "smooth" else out_mem
    qs = jax.vmap(lambda q: normalize(model, q))(qs)
    rec = ContactRecord(contact, memory, zs, Ws, ev_t, ev_flip, impacts, n_ev)
    return Trajectory(t=ts, q=qs, v=vs, status=result, num_steps=steps, model=model, integrals=ws, contact=rec)
