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

from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from ..dynamics.aba import forward_dynamics
from ..dynamics.configuration import integrate
from ..dynamics.crba import mass_matrix
from ..model.model import Model
from .lemke import LCPStatus, lemke
from .rigid import OPEN, SLIDE, STICK, RigidContact

METHODS = ("acceleration", "velocity")


class LCPTrajectory(eqx.Module):
    """Per saved step: ``t`` [T], ``q`` [T, nq], ``v`` [T, nv]; per contact the normal force
    ``lambda_N`` [T, nc] (velocity level: impulse / h), friction force ``friction`` [T, nc, 3]
    (world), ``lambda_T`` [T, nc] (its component along the first tangent direction: the planar
    λ_T), gap [T, nc], slip velocity along that tangent ``slip`` [T, nc], ``mode`` [T, nc]
    (0 open, 1 sticking, 2 sliding), the LCP ``lcp_status`` [T] of the step (0 solved, see
    :class:`LCPStatus`) and ``status``: 0 if every step solved, else the first failure's code."""

    t: jax.Array
    q: jax.Array
    v: jax.Array
    lambda_N: jax.Array
    lambda_T: jax.Array
    friction: jax.Array
    gap: jax.Array
    slip: jax.Array
    mode: jax.Array
    lcp_status: jax.Array
    status: jax.Array


def _delassus(model, q, W):
    M = mass_matrix(model, q)
    cf = jsl.cho_factor(M)
    MinvWT = jsl.cho_solve(cf, W.T)
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
             prev=None):
    """One step ``(q, v) → (q⁺, v⁺)``; returns ``(q⁺, v⁺, info)`` with ``info`` the contact
    forces, gaps, slips, modes and the LCP status of the step (see :class:`LCPTrajectory`).
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
        a_free = forward_dynamics(model, q, v, tau)
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
        a_free = forward_dynamics(model, q, v, tau)
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


def simulate_lcp(
    model: Model,
    q0,
    v0,
    contact: RigidContact,
    *,
    t1: float,
    dt: float,
    controls: Callable | None = None,
    method: str = "acceleration",
    tau_p: float = 0.05,
    gap_tol: float = 1e-9,
    keep_tol: float = 1e-4,
    save_every: int = 1,
) -> LCPTrajectory:
    """Simulate ``[0, t1]`` with fixed steps ``dt`` and rigid contacts ``contact``
    (:func:`diffsim.rigid_contacts`). ``controls(t, q, v) -> τ [nv]`` gives the generalised
    control forces (base forces and joint torques; default none). ``method``: ``'acceleration'``
    (seed 002) or ``'velocity'`` (Stewart–Trinkle / Anitescu–Potra); see the module doc.

    A step whose LCP is not solved (Painlevé, pivot limit) makes the state NaN from there on and
    ``status`` reports the first failure's :class:`LCPStatus` code — never a silent guess."""
    if method not in METHODS:
        raise ValueError(f"unknown LCP time-stepping method {method!r}; choose one of {METHODS}")
    if not isinstance(contact, RigidContact):
        raise TypeError(f"contact must be a RigidContact (diffsim.rigid_contacts), got {type(contact).__name__}")
    try:
        dt_f, t1_f = float(dt), float(t1)
    except (TypeError, jax.errors.ConcretizationTypeError):
        raise ValueError("dt and t1 must be concrete numbers (they fix the number of steps)") from None
    if not dt_f > 0 or not t1_f > 0:
        raise ValueError(f"dt and t1 must be positive, got dt={dt}, t1={t1}")
    n_steps = int(round(t1_f / dt_f))
    if abs(n_steps * dt_f - t1_f) > 1e-9 * t1_f:
        raise ValueError(f"t1 = {t1} is not a whole number of steps dt = {dt}")
    if n_steps % save_every:
        raise ValueError(f"save_every = {save_every} must divide the number of steps {n_steps}")
    dtype = model.dtype
    q0 = jnp.asarray(q0, dtype)
    v0 = jnp.asarray(v0, dtype)
    if q0.shape != (model.nq,) or v0.shape != (model.nv,):
        raise ValueError(f"q0 must have shape ({model.nq},) and v0 ({model.nv},) for this model, got {q0.shape} and {v0.shape}")
    h = jnp.asarray(dt_f, dtype)
    ctrl = controls if controls is not None else (lambda t, q, v: jnp.zeros(model.nv, dtype))
    nc = contact.nc
    sd = 1 if contact.formulation == "planar" else 2

    def step(carry, k):
        q, v, pmode, pdir, status = carry
        t = k * h
        tau = jnp.asarray(ctrl(t, q, v), dtype)
        q1, v1, info = lcp_step(model, contact, q, v, tau, h, method=method, tau_p=tau_p, gap_tol=gap_tol, keep_tol=keep_tol,
                                prev=(pmode, pdir))
        bad = info["lcp_status"] != int(LCPStatus.SOLVED)
        status = jnp.where((status == 0) & bad, info["lcp_status"], status)
        out = dict(t=t, q=q, v=v, **{k_: info[k_] for k_ in ("lambda_N", "lambda_T", "friction", "gap", "slip", "mode", "lcp_status")})
        return (q1, v1, info["mode"], info["slide_dir"], status), out

    init = (q0, v0, jnp.zeros(nc, jnp.int32), jnp.zeros((nc, sd), dtype), jnp.asarray(0, jnp.int32))
    (qT, vT, _, _, status), out = jax.lax.scan(step, init, jnp.arange(n_steps))
    sl = slice(None, None, save_every)
    out = {k: v[sl] for k, v in out.items()}
    # the final state, so that t runs over [0, t1]
    out["t"] = jnp.append(out["t"], n_steps * h)
    out["q"] = jnp.concatenate([out["q"], qT[None]])
    out["v"] = jnp.concatenate([out["v"], vT[None]])
    return LCPTrajectory(status=status, **out)
