"""Fixed-step simulation with rigid complementarity contact.

``method='acceleration'`` — seed 002's algorithm (§4.1, steps 1–4): at every step the contact
modes are classified (open / closed; sticking / sliding), the acceleration-level LCP of
:mod:`.rigid` is solved by Lemke for ``λ_N, λ_T``, and the state is advanced with them
(semi-implicit Euler: ``v⁺ = v + h v̇``, ``q⁺ = q ⊕ h v⁺``). Two things the acceleration level
needs that the paper leaves implicit, both documented here:

* **Impacts.** A contact that closes with an approach velocity cannot be handled by finite
  forces; the velocity jump is the impulsive LCP below with ``h → 0`` (Newton restitution
  ``e``, Coulomb friction on the impulses), applied before the acceleration LCP of that step.
* **Constraint drift.** The closed-contact rows ask ``g̈_N ≥ −(ġ_N + g_N/τ)/h`` and sticking
  rows ``g̈_T = −ġ_T/h``: the velocity drift of an acceleration-level constraint is removed
  within one step and a penetration decays at the rate 1/τ, ``τ = max(tau_p, 5h)``
  (``tau_p = 0.05 s`` by default; Baumgarte-type stabilisation whose forces stay bounded as
  h → 0).

A closed contact whose slip is below ``stick_tol``, or whose slip has reversed since the last
step, is solved as sticking (the LCP then decides stick or the direction of slip).

``method='velocity'`` — Stewart–Trinkle / Anitescu–Potra time stepping (Moreau–Jean type): the
unknowns are impulses over the step, every contact with ``g_N ≤ gap_tol`` is in the LCP with the
full Stewart–Trinkle friction structure (the planar formulation uses the two directions ±t; stick
and slip are outcomes, not inputs), and the normal rows ask
``ġ_N⁺ ≥ max(e·max(−ġ_N⁻, 0), max(−g_N, 0)/τ)`` — Newton's restitution on the approach velocity,
and a position correction for contacts that have sunk in. A contact that carried force in the
previous step stays in the problem while its gap is below ``keep_tol`` with ``ġ_N⁺ ≥ −g_N/h``
(it may close the gap, never pull), so that sliding along a curved path does not flicker
between contact and flight. This LCP always has a solution
(Anitescu & Potra 1997), so it is the robust choice with many impacts.

Both run in one ``lax.scan`` (jit / vmap / grad through the LCP solutions).
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from .._util import is_concrete
from ..complementarity.lemke import LCPStatus, lemke
from ..complementarity.rigid import OPEN, SLIDE, STICK, RigidContact
from ..dynamics.configuration import integrate
from ..dynamics.coupled import coupled_inverse_inertia
from ..dynamics.dispatch import forward_dynamics, mass_matrix
from ..model.model import Model
from .trajectory import Status, Trajectory

METHODS = ("acceleration", "velocity")  # the steppers, by name


class LCPRecord(eqx.Module):
    """Complementarity-contact part of a :class:`diffsim.Trajectory`, one entry per saved step, at
    its start (``t[:-1]``; every step unless the run saves every k-th): normal force ``lambda_N`` [T-1, nc] (velocity level: impulse / h), friction force
    ``friction`` [T-1, nc, 3] (world), ``lambda_T`` [T-1, nc] (its component along the first tangent
    direction: the planar λ_T), ``gap`` [T-1, nc], slip velocity along that tangent ``slip``
    [T-1, nc], ``mode`` [T-1, nc] (0 open, 1 sticking, 2 sliding), the LCP status of every step
    ``lcp_status`` [T-1] (0 solved, see :class:`LCPStatus`) and ``first_failure``: 0, or the
    :class:`LCPStatus` code of the first step whose LCP was not solved."""

    contact: RigidContact
    lambda_N: jax.Array
    lambda_T: jax.Array
    friction: jax.Array
    gap: jax.Array
    slip: jax.Array
    mode: jax.Array
    lcp_status: jax.Array
    first_failure: jax.Array


class AbstractLCPStepper(eqx.Module):
    """A fixed-step time stepper with a contact LCP per step (the ``solver`` of a
    :class:`diffsim.System` with rigid contacts; module docstring).

    dt: the step [s] (``t1 − t0`` must be a whole number of steps).
    tau_p: time constant of the penetration correction [s] (the rate is 1/max(tau_p, 5 dt)).
    gap_tol: a contact with gap ≤ gap_tol [m] is closed.
    keep_tol: velocity level: a contact that carried force stays a candidate while its gap is
        below keep_tol [m].
    save_every: keep every this many steps in the trajectory (or give the :class:`diffsim.System`
        ``saveat``: a count ``N`` with ``N − 1`` dividing the number of steps, or the times of that
        grid; the steps in between are not stored).
    """

    dt: float = eqx.field(static=True)
    tau_p: float = eqx.field(static=True, default=0.05)
    gap_tol: float = eqx.field(static=True, default=1e-9)
    keep_tol: float = eqx.field(static=True, default=1e-4)
    save_every: int = eqx.field(static=True, default=1)
    method: ClassVar[str]


class AccelerationLCP(AbstractLCPStepper):
    """Seed 002's acceleration-level stepping (module docstring)."""

    method: ClassVar[str] = "acceleration"


class VelocityLCP(AbstractLCPStepper):
    """Stewart–Trinkle / Anitescu–Potra velocity-level stepping (module docstring)."""

    method: ClassVar[str] = "velocity"


STEPPERS = {"acceleration": AccelerationLCP, "velocity": VelocityLCP}


def _delassus(model, q, W):
    """Delassus operator ``W M⁻¹ Wᵀ`` and ``M⁻¹ Wᵀ``; with mimic joints the coupled response
    ``G (Gᵀ M G)⁻¹ Gᵀ Wᵀ`` (:func:`~diffsim.dynamics.coupled.coupled_inverse_inertia`), so that
    impulses keep the coupling."""
    if model.mimic is not None:
        MinvWT = coupled_inverse_inertia(model, q, W.T)
    else:
        MinvWT = jsl.cho_solve(jsl.cho_factor(mass_matrix(model, q)), W.T)
    return W @ MinvWT, MinvWT


def _impulse_lcp(rc: RigidContact, kin, active, v_next_free, G, target):
    """Velocity-level LCP: impulses ``z`` with ``v⁺ = v_free + M⁻¹Wᵀ P z``; normal rows
    ``ġ_N⁺ − target ≥ 0``, friction rows on ``ġ_T⁺`` (full stick structure for active contacts)."""
    nc = rc.nc
    zeros = jnp.zeros((nc, rc.directions.shape[1]), G.dtype)
    P, S, F, c = rc.blocks(active, active, zeros, structure="stewart-trinkle")
    W, _, g0 = rc.stacked_rows(kin)
    meas = W @ v_next_free + g0
    meas = meas.at[:nc].add(-target)
    A = S @ G @ P + F
    b = S @ meas + c
    z, w, status = lemke(A, b)
    return P @ z, status


def lcp_step(model: Model, rc: RigidContact, q, v, tau, h, *, method="acceleration", tau_p=0.05, gap_tol=1e-9, keep_tol=1e-4,
             prev=None, f_ext=None, dynamics=forward_dynamics):
    """One step ``(q, v) → (q⁺, v⁺)`` under generalised forces ``tau`` and body wrenches ``f_ext``;
    returns ``(q⁺, v⁺, info)`` with ``info`` the contact forces, gaps, slips, modes and the LCP
    status of the step (see :class:`LCPRecord`); ``dynamics`` gives the contact-free
    accelerations.
    ``prev``: ``(mode [nc], slide_dir [nc, ·])`` of the previous step (slip reversal → stick;
    velocity level: contacts that carried force stay candidates while ``g ≤ keep_tol`` [m])."""
    nc = rc.nc
    kin = rc.kinematics(model, q, v, drift=False)  # the acceleration level adds J̇v after any impulse
    W, _, _ = rc.stacked_rows(kin)
    G, MinvWT = _delassus(model, q, W)
    # penetration is corrected at the rate 1/τ, τ = max(tau_p, 5h): bounded forces as h → 0,
    # and never faster than five steps (stability of the explicit update)
    inv_tau = 1.0 / jnp.maximum(tau_p, 5.0 * h)
    e = rc.restitution
    if method == "velocity":
        # Moreau–Jean activation (touching or sunk in) — so that an impact meets Newton's law with
        # its true approach velocity — and, to keep a persistent contact from flickering when the
        # motion along a curved path lifts it by round-off, a contact that carried force in the
        # previous step stays a candidate while g ≤ keep_tol, where it may only close the gap
        active = kin.g <= gap_tol
        if prev is not None:
            active = active | ((prev[0] != OPEN) & (kin.g <= keep_tol))
        target = jnp.where(kin.g > 0, -kin.g / h, jnp.maximum(e * jnp.maximum(-kin.g_dot, 0.0), jnp.maximum(-kin.g, 0.0) * inv_tau))
        a_free = dynamics(model, q, v, tau, f_ext)
        lam, status = _impulse_lcp(rc, kin, active, v + h * a_free, G, target)
        v_new = v + h * a_free + MinvWT @ lam
        lam = lam / h
        # report modes from the outcome
        kin_new_s = jnp.einsum("kmv,v->km", kin.W_T, v_new) + kin.g0_T
        mode = jnp.where(active & (lam[:nc] > 0), jnp.where(jnp.max(jnp.abs(kin_new_s), -1) <= rc.stick_tol, STICK, SLIDE), OPEN)
        slide_dir = rc.slide_direction(kin)
    else:
        v_tol = rc.stick_tol
        # impacts: closed gaps approaching with a velocity get the impulsive LCP (h → 0)
        impacting = (kin.g <= gap_tol) & (kin.g_dot < -v_tol)
        any_impact = jnp.any(impacting)
        target = e * jnp.maximum(-kin.g_dot, 0.0)
        nl = nc * (1 + rc.directions.shape[1])
        lam_i, status_i = jax.lax.cond(
            any_impact,
            lambda: _impulse_lcp(rc, kin, kin.g <= gap_tol, v, G, target),
            lambda: (jnp.zeros(nl, v.dtype), jnp.asarray(0, jnp.int32)),
        )
        v = v + MinvWT @ lam_i
        kin = rc.at_velocity(model, q, v, kin)
        W, drift, _ = rc.stacked_rows(kin)
        a_free = dynamics(model, q, v, tau, f_ext)
        # closed: touching or sunk in; whether it separates is the LCP's outcome (λ_N = 0, g̈_N > bound)
        closed = kin.g <= gap_tol
        slide_dir = rc.slide_direction(kin)
        slip_mag = jnp.max(jnp.abs(kin.s_dot), -1)
        stick = slip_mag <= v_tol
        if prev is not None:
            pmode, pdir = prev
            reversed_ = (pmode == SLIDE) & (jnp.sum(pdir * slide_dir, -1) <= 0)
            stick = stick | reversed_
        stick = closed & stick
        slide_dir = jnp.where(stick[:, None], 0.0, slide_dir)
        P, S, F, c = rc.blocks(closed, stick, slide_dir)
        stab = jnp.concatenate([(kin.g_dot + kin.g * inv_tau) / h, (kin.s_dot / h).reshape(-1)])
        meas = W @ a_free + drift + stab
        A = S @ G @ P + F
        b = S @ meas + c
        z, w, status = lemke(A, b)
        lam = P @ z
        v_new = v + h * (a_free + MinvWT @ lam)
        status = jnp.where(status_i != 0, status_i, status)
        mode = jnp.where(closed & (lam[:nc] > 0), jnp.where(stick, STICK, SLIDE), OPEN)
    q_new = integrate(model, q, v_new, h)
    lam_n, F_t = rc.split(lam)
    info = dict(
        lambda_N=lam_n,
        friction=F_t,
        lambda_T=jnp.einsum("ki,ki->k", F_t, rc.directions[:, 0]),
        gap=kin.g,
        slip=kin.s_dot[:, 0],
        mode=mode.astype(jnp.int32),
        lcp_status=status.astype(jnp.int32),
        slide_dir=slide_dir,
    )
    return q_new, v_new, info


def simulate_lcp_system(system) -> Trajectory:
    """Fixed-step simulation of a :class:`diffsim.System` with rigid contacts (``system.contact``, a
    :class:`~diffsim.complementarity.RigidContact`) by its LCP stepper ``system.solver``; loads
    (``tau`` callables of ``(t, q, v)``, point forces) are applied at the start of every step.

    Saved: every step by default, every ``save_every``-th step of the stepper, or the grid the
    system's ``saveat`` names (:func:`save_stride`); only the saved steps are stored.

    A step whose LCP is not solved (Painlevé, pivot limit) makes the state NaN from there on and
    the trajectory's status is ``LCP_FAILED`` (``contact.first_failure`` says which) — never a
    silent guess."""
    stepper = system.solver
    if not is_concrete(system.t0, system.t1):
        raise ValueError("t0 and t1 of an LCP run must be concrete numbers (they fix the number of steps)")
    dt_f, t0_f, t1_f = float(stepper.dt), float(system.t0), float(system.t1)
    if not dt_f > 0:
        raise ValueError(f"the LCP step dt must be positive, got {stepper.dt}")
    span = t1_f - t0_f
    n_steps = int(round(span / dt_f))
    if n_steps < 1 or abs(n_steps * dt_f - span) > 1e-9 * max(abs(span), 1.0):
        raise ValueError(f"t1 − t0 = {span} is not a whole number of steps dt = {stepper.dt}")
    save_every = save_stride(system.saveat, stepper.save_every, n_steps, dt_f, t0_f)
    # times given as traced values (a caller's jit) are checked against the grid when the run runs
    check_times = system.saveat is not None and not isinstance(system.saveat, (int, np.integer)) \
        and not is_concrete(system.saveat)
    return _lcp_run(system, n_steps, save_every, dt_f, t0_f, check_times)


def save_stride(saveat, save_every: int, n_steps: int, dt: float, t0: float) -> int:
    """Steps between the saved states of an LCP run of ``n_steps`` steps ``dt`` from ``t0``: the
    stepper's ``save_every`` when ``saveat`` is ``None``; else the stride of the grid ``saveat``
    names — a count ``N`` (``N − 1`` must divide ``n_steps``) or the times ``t0 + j k dt``,
    ``j = 0 … n_steps / k`` (a fixed-step run has states at its steps only; traced times give the
    stride by their number, and the run checks their values). A ``save_every`` other than 1 must
    agree with it."""
    if isinstance(save_every, bool) or int(save_every) != save_every or save_every < 1 or n_steps % int(save_every):
        raise ValueError(f"save_every = {save_every} must be a positive integer dividing the number of steps {n_steps}")
    save_every = int(save_every)
    if saveat is None:
        return save_every
    if isinstance(saveat, (int, np.integer)) and not isinstance(saveat, bool):
        n_out, ts = int(saveat), None
        what = f"saveat = {n_out}"
    else:
        ts = np.asarray(saveat, float) if is_concrete(saveat) else None
        n_out = int(np.prod(jnp.shape(saveat)))
        what = f"saveat of {n_out} times"
    if n_out < 2 or n_steps % (n_out - 1):
        raise ValueError(f"rigid-contact stepping has states at its steps only: {what} needs its count minus one to divide "
                         f"the {n_steps} steps of dt = {dt} (saveat = {_nearby_counts(n_steps, n_out)} would), or give "
                         "the stepper's save_every")
    k = n_steps // (n_out - 1)
    if ts is not None:
        grid = t0 + dt * k * np.arange(n_out)
        if not np.allclose(ts, grid, rtol=0.0, atol=1e-9 * max(abs(grid[-1] - t0), dt)):
            j = int(np.argmax(np.abs(ts - grid)))
            raise ValueError(f"saveat times of a rigid-contact run must be its step grid t0 + j·{k}·dt from t0 to t1 "
                             f"(dt = {dt}; or give a count): time {j} is {ts[j]}, the grid has {grid[j]}")
    if save_every not in (1, k):
        raise ValueError(f"the stepper's save_every = {save_every} and saveat (every {k} steps) disagree: give one of them")
    return k


def _nearby_counts(n_steps: int, n_out: int) -> str:
    """Counts ``d + 1`` of output times with ``d`` dividing ``n_steps``, the two nearest ``n_out``."""
    small = [d for d in range(1, int(n_steps**0.5) + 1) if n_steps % d == 0]
    divisors = small + [n_steps // d for d in small]
    near = sorted(divisors, key=lambda d: (abs(d + 1 - n_out), d))[:2]
    return " or ".join(str(d + 1) for d in sorted(near))


@eqx.filter_jit
def _lcp_run(system, n_steps: int, save_every: int, dt_f: float, t0_f: float, check_times: bool) -> Trajectory:
    """The stepping loop of :func:`simulate_lcp_system` (checked arguments), jitted as a whole:
    called eagerly, its ``lax.scan`` was traced from a new closure and compiled again on every
    call; now runs of one system structure and step count share one program. Saving every k-th
    step, the loop is a scan of k-step segments that emit their first step only."""
    model, contact, stepper = system.model, system.contact, system.solver
    dtype = model.dtype
    h = jnp.asarray(dt_f, dtype)
    t0 = jnp.asarray(t0_f, dtype)
    nc = contact.nc
    sd = 1 if contact.formulation == "planar" else 2
    loads, dynamics = system.loads, system.dynamics

    def step(carry, k):
        q, v, pmode, pdir, first = carry
        t = t0 + k * h
        tau, f_ext = loads.evaluate(model, t, q, v)
        q1, v1, info = lcp_step(model, contact, q, v, tau, h, method=stepper.method, tau_p=stepper.tau_p,
                                gap_tol=stepper.gap_tol, keep_tol=stepper.keep_tol, prev=(pmode, pdir),
                                f_ext=f_ext, dynamics=dynamics)
        bad = info["lcp_status"] != int(LCPStatus.SOLVED)
        first = jnp.where((first == 0) & bad, info["lcp_status"], first)
        out = dict(t=t, q=q, v=v, **{k_: info[k_] for k_ in ("lambda_N", "lambda_T", "friction", "gap", "slip", "mode",
                                                              "lcp_status")})
        return (q1, v1, info["mode"], info["slide_dir"], first), out

    def segment(carry, ks):  # k steps, the first one's record kept, nothing stacked for the others
        carry, out = step(carry, ks[0])
        carry = jax.lax.scan(lambda c, k: (step(c, k)[0], None), carry, ks[1:])[0]
        return carry, out

    init = (system.q0, system.v0, jnp.zeros(nc, jnp.int32), jnp.zeros((nc, sd), dtype), jnp.asarray(0, jnp.int32))
    ks = jnp.arange(n_steps)
    if save_every == 1:
        (qT, vT, _, _, first), out = jax.lax.scan(step, init, ks)
    else:
        (qT, vT, _, _, first), out = jax.lax.scan(segment, init, ks.reshape(-1, save_every))
    # the final state, so that t runs over [t0, t1]
    t = jnp.append(out.pop("t"), t0 + n_steps * h)
    if check_times:
        off = jnp.max(jnp.abs(t - jnp.asarray(system.saveat, dtype))) > 1e-9 * jnp.maximum(n_steps * h, h)
        t = eqx.error_if(t, off, "saveat times of a rigid-contact run must be its step grid t0 + j·k·dt from t0 to t1")
    q = jnp.concatenate([out.pop("q"), qT[None]])
    v = jnp.concatenate([out.pop("v"), vT[None]])
    status = jnp.where(first == 0, Status.SUCCESS, Status.LCP_FAILED).astype(jnp.int32)
    record = LCPRecord(contact=contact, first_failure=first, **out)
    return Trajectory(t=t, q=q, v=v, status=status, num_steps=jnp.asarray(n_steps, jnp.int32), model=model,
                      contact=record)
