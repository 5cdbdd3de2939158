"""Stick–slip of a block on a moving belt: Stribeck and LuGre friction against the classical
Coulomb (static/kinetic) solution, a no-static-peak contrast, and the Ambrosio law.

Model (one degree of freedom). A block of mass ``m`` rests on a belt that moves at the constant
speed ``v_b``; a spring ``k`` (and a damper ``c``) ties it to the wall. With the normal force
``F_N = m g`` and the slip velocity ``v_r = ẋ − v_b``,

    m ẍ = −k x − c ẋ + F_T(v_r, F_N),                                              (1)

where ``F_T`` is a :mod:`diffsim.contact.laws` friction law (it opposes ``v_r``, so a belt that
drags a slower block gives ``F_T > 0``). LuGre adds its bristle state ``z``,

    ż = v_r − σ0 |v_r| z / g(v_r),    F_T = −F_N (σ0 z + σ1 ż) − σ2 v_r,             (2)

integrated here as ``w = σ0 z`` (dimensionless, |w| ≤ μ_s) so that one absolute tolerance
fits every state.

Classical solution (Coulomb friction with μ_s > μ_k, c = 0; the textbook stick–slip
oscillator, e.g. Popp & Stelter, Phil. Trans. R. Soc. A 332, 1990; Leine et al., Nonlinear
Dynamics 16, 1998). Write ``x_s = μ_s F_N/k`` (where the spring beats
static friction), ``x_k = μ_k F_N/k`` (the centre of the slip motion), ``Δ = x_s − x_k`` and
``ω = √(k/m)``.

* Stick: the block rides the belt (ẋ = v_b, v_r = 0) while ``|k x| ≤ μ_s F_N``.
* Breakaway at ``x = x_s`` with ``ẋ = v_b``; the spring force there is ``μ_s F_N``.
* Slip: ``m ẍ = −k x + μ_k F_N``, so ``u = x − x_k`` is harmonic, ``u(0) = Δ``,
  ``u̇(0) = v_b``:  ``u = A cos(ωτ − α)`` with

      A = √(Δ² + (v_b/ω)²),     α = atan2(v_b/ω, Δ).                                 (3)

  ``u̇ = −Aω sin(ωτ − α) < v_b`` until ``ωτ − α = π + α``, where ``u̇ = v_b`` again
  and ``u = −Δ``: the block re-sticks at ``x = x_k − Δ`` (admissible: ``|k x| < μ_s F_N``).
* The belt then carries it from ``x_k − Δ`` back to ``x_s``: a distance ``2Δ``.

Hence the limit cycle (reached after the first stick, whatever the start)

    t_stick = 2Δ / v_b,   t_slip = (π + 2α) / ω,   T = t_stick + t_slip,
    x ∈ [x_k − A, x_k + A],   min v_r = −v_b − A ω,   breakaway force = μ_s F_N.     (4)

With the wall damper ``c`` the stick ends at ``k x + c v_b = μ_s F_N`` and the slip arc is a
damped oscillation (eq 5 in :func:`coulomb_cycle`, re-stick found numerically); above a critical
belt speed the arc never climbs back to ``v_b`` and the block slides steadily.

A Stribeck law ``μ(v) = μ_k + (μ_s − μ_k) exp(−(|v|/v_s)²)`` with a tanh sign of width ``ε``
tends to this Coulomb law as ``v_s, ε → 0`` (``ε`` plays the stick phase: there
``v_r = −ε artanh(k x / μ_s F_N)``), so its limit cycle must converge to (4); this script
measures how fast. Without the static peak (μ_s = μ_k) the undamped Coulomb oscillator has no
isolated limit cycle (a neutral family of orbits grazing v_r = 0): any damping makes it settle
to steady sliding ``x* = μ_k F_N/k``, ``ẋ = 0`` — the contrast. With the static peak the same
damping leaves the stick–slip cycle intact until the belt is fast enough.

Measured (:func:`measure_cycle`): sticking is ``|v_r| < V_STICK = 1 mm/s`` (1 % of v_b); a
breakaway is the end of a sticking run, where the spring force ``k x`` is read.

Parameters (textbook, SI): m = 1 kg, k = 2 N/m, g = 9.81 m/s² (F_N = 9.81 N), μ_s = 0.4,
μ_k = 0.3, v_b = 0.1 m/s. Stribeck: v_s from 0.1 m/s (v_s = v_b, the "textbook" smooth curve)
down to 0.3 mm/s, ε = min(v_s/100, 10 µm/s). LuGre (Canudas de Wit et al. 1995, per unit
normal force): σ0 = 1e5 1/m (bristle stiffness σ0 F_N ≈ 1e6 N/m), σ1 = √(σ0 m/F_N) ≈ 101 s/m (Canudas'
σ1 = √(σ0 m) in force units: bristle damping ratio 1/2), σ2 = 0, v_s = 1 mm/s and 10 mm/s.
Contrast: μ_s = μ_k = 0.3 with a wall damper c = 0.2 N s/m (ζ = c/(2√(km)) ≈ 0.07).

    python experiments/friction_belt.py     # -> experiments/results/friction-belt/
"""

from __future__ import annotations

import os
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import diffrax  # noqa: E402
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optimistix as optx  # noqa: E402

from diffsim.contact import Ambrosio, Coulomb, LuGre, friction_law  # noqa: E402

OUT = Path(__file__).parent / "results" / "friction-belt"

MU_S, MU_K = 0.4, 0.3
V_STICK = 1e-3  # |v_r| below this (1 % of v_b) counts as sticking, m/s


class Belt(eqx.Module):
    """The oscillator of eq (1): every constant an array leaf (one compilation for all values)."""

    mass: jax.Array
    stiffness: jax.Array
    damping: jax.Array
    speed: jax.Array
    gravity: jax.Array

    def __init__(self, mass=1.0, stiffness=2.0, damping=0.0, speed=0.1, gravity=9.81):
        self.mass, self.stiffness, self.damping, self.speed, self.gravity = (
            jnp.asarray(v, float) for v in (mass, stiffness, damping, speed, gravity))

    @property
    def normal_force(self):
        """``F_N = m g``."""
        return self.mass * self.gravity

    @property
    def omega(self):
        return jnp.sqrt(self.stiffness / self.mass)


def friction(belt: Belt, law, x_dot, w):
    """``(F_T, ẇ)`` at block velocity ``ẋ`` and scaled bristle state ``w = σ0 z`` (eq 2);
    ``ẇ = 0`` for the memoryless laws."""
    v_r = x_dot - belt.speed
    f_n = belt.normal_force
    if isinstance(law, LuGre):
        z = w / law.sigma0
        return law(v_r, f_n, z), law.sigma0 * law.z_rate(v_r, z)
    return law(v_r, f_n), jnp.zeros_like(w)


def _rhs(t, y, args):
    """Eq (1) (and 2) as a first-order system in ``y = (x, ẋ, w)``."""
    belt, law = args
    x, x_dot, w = y[0], y[1], y[2]
    f_t, w_dot = friction(belt, law, x_dot, w)
    x_ddot = (-belt.stiffness * x - belt.damping * x_dot + f_t) / belt.mass
    return jnp.stack([x_dot, x_ddot, w_dot])


def _law_params(law):
    """A law with its float fields as float64 arrays: one compilation serves every value."""
    return jax.tree_util.tree_map(lambda v: jnp.asarray(v, float) if isinstance(v, (int, float)) else v, law)


@eqx.filter_jit
def _solve(belt, law, ts, y0, rtol, atol, max_steps):
    root = diffrax.VeryChord(rtol=rtol, atol=atol, norm=optx.rms_norm)
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_rhs), diffrax.Kvaerno5(root_finder=root), ts[0], ts[-1], 1e-4, y0,
        args=(belt, law), saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
        max_steps=max_steps, throw=False)
    return sol.ys, sol.stats["num_steps"], sol.result == diffrax.RESULTS.successful


def simulate(belt: Belt, law, ts, y0=None, rtol=1e-8, atol=1e-9, max_steps=400_000):
    """Integrate eq (1) with Kvaerno5 (L-stable ESDIRK: the stick phase and the LuGre bristle
    are stiff) under an adaptive PID controller; by default the block starts at rest at ``x = 0``.

    Returns ``(ys [len(ts), 3] = (x, ẋ, σ0 z), num_steps)``; raises if the solve failed."""
    ts = jnp.asarray(ts, float)
    y0 = jnp.zeros(3) if y0 is None else jnp.asarray(y0, float)
    ys, n, ok = _solve(belt, _law_params(law), ts, y0, rtol, atol, max_steps)
    if not bool(ok):
        raise RuntimeError(f"belt simulation failed after {int(n)} steps")
    return np.asarray(ys), int(n)


def friction_history(belt: Belt, law, ys):
    """``F_T`` along a trajectory (eq 2 with the saved ``w``)."""
    f, _ = jax.vmap(lambda y: friction(belt, _law_params(law), y[1], y[2]))(jnp.asarray(ys))
    return np.asarray(f)


# ----------------------------------------------------------------------------------------
# The classical Coulomb limit cycle (eqs 3–5) and the measurement of a simulated one
# ----------------------------------------------------------------------------------------


def _damped_arc(u0, v0, omega, zeta, tau):
    """Free damped oscillation ``ü + 2ζω u̇ + ω² u = 0`` from ``(u0, v0)``: ``(u, u̇)`` at ``τ``
    (eq 5; ``ζ = 0`` gives eq 3)."""
    wd = omega * np.sqrt(1.0 - zeta**2)
    e = np.exp(-zeta * omega * tau)
    c, s = np.cos(wd * tau), np.sin(wd * tau)
    u = e * (u0 * c + (v0 + zeta * omega * u0) / wd * s)
    u_dot = e * (v0 * c - (omega**2 * u0 + zeta * omega * v0) / wd * s)
    return u, u_dot


def coulomb_cycle(belt: Belt, mu_s=MU_S, mu_k=MU_K) -> dict:
    """The stick–slip limit cycle of Coulomb friction with μ_s > μ_k (eqs 3–4 for ``c = 0``).

    With the wall damper ``c`` (eq 5): the stick ends when ``k x + c v_b = μ_s F_N``, at
    ``x_b = (μ_s F_N − c v_b)/k``; the slip arc about ``x_k`` is the damped oscillation

        u = e^{−ζωτ} [u0 cos ω_d τ + (v_b + ζω u0)/ω_d sin ω_d τ],   u0 = x_b − x_k,      (5)

    ``ζ = c/(2√(km))``, ``ω_d = ω√(1 − ζ²)``, and the block re-sticks at the first ``τ`` after
    the velocity minimum where ``u̇ = v_b`` — found numerically. If ``u̇`` never climbs back to
    ``v_b`` (its first maximum is the largest) there is no cycle: ``{"stick_slip": False}``,
    and the block settles to steady sliding."""
    from scipy.optimize import brentq

    m, k, c, vb = (float(v) for v in (belt.mass, belt.stiffness, belt.damping, belt.speed))
    fn, w = float(belt.normal_force), float(belt.omega)
    zeta = c / (2.0 * np.sqrt(k * m))
    x_s, x_k = mu_s * fn / k, mu_k * fn / k
    x_b = (mu_s * fn - c * vb) / k
    u0 = x_b - x_k
    if c == 0.0:  # eqs (3)–(4) in closed form
        alpha = float(np.arctan2(vb / w, u0))
        t_slip, u1 = (np.pi + 2 * alpha) / w, -u0
    else:
        wd = w * np.sqrt(1.0 - zeta**2)
        tau = np.linspace(0.0, 2.5 * np.pi / wd, 200_001)
        _, ud = _damped_arc(u0, vb, w, zeta, tau)
        i_min = int(np.argmin(ud))
        up = np.flatnonzero(ud[i_min:] >= vb)
        if not up.size:
            return {"stick_slip": False, "x_k": x_k, "x_s": x_s, "zeta": zeta, "omega": w,
                    "max_return_velocity": float(ud[i_min:].max())}
        j = i_min + int(up[0])
        t_slip = brentq(lambda s: _damped_arc(u0, vb, w, zeta, s)[1] - vb, tau[j - 1], tau[j], xtol=1e-14)
        u1 = float(_damped_arc(u0, vb, w, zeta, t_slip)[0])
        alpha = None
    x_r = x_k + u1  # re-stick position; the stick needs |k x_r + c v_b| ≤ μ_s F_N
    t_stick = (x_b - x_r) / vb
    tau = np.linspace(0.0, t_slip, 20_001)
    u, ud = _damped_arc(u0, vb, w, zeta, tau)
    period = t_stick + t_slip
    return {"stick_slip": bool(abs(k * x_r + c * vb) <= mu_s * fn), "x_s": x_s, "x_k": x_k, "x_b": x_b,
            "x_restick": x_r, "delta": x_s - x_k, "omega": w, "zeta": zeta, "alpha": alpha,
            "amplitude": float((u.max() - u.min()) / 2), "t_stick": t_stick, "t_slip": float(t_slip),
            "period": float(period), "stick_fraction": float(t_stick / period),
            "x_min": float(x_k + u.min()), "x_max": float(x_k + u.max()), "v_r_min": float(ud.min() - vb),
            "breakaway_force_spring": k * x_b, "breakaway_friction": mu_s * fn}


def critical_belt_speed(belt: Belt, mu_s=MU_S, mu_k=MU_K, lo=1e-3, hi=10.0) -> float:
    """The belt speed above which the damped Coulomb cycle (eq 5) no longer exists (bisection)."""
    def exists(v):
        return coulomb_cycle(eqx.tree_at(lambda b: b.speed, belt, jnp.asarray(v)), mu_s, mu_k)["stick_slip"]

    if not exists(lo) or exists(hi):
        return float("nan")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if exists(mid) else (lo, mid)
    return 0.5 * (lo + hi)


def coulomb_cycle_x(t, t_break, cyc: dict, vb: float):
    """``x(t)`` of the analytic cycle (eqs 3–5) with a breakaway at ``t_break``; NaN before it."""
    t = np.asarray(t)
    tau = np.mod(t - t_break, cyc["period"])
    u, _ = _damped_arc(cyc["x_b"] - cyc["x_k"], vb, cyc["omega"], cyc["zeta"], tau)
    x = np.where(tau < cyc["t_slip"], cyc["x_k"] + u, cyc["x_restick"] + vb * (tau - cyc["t_slip"]))
    return np.where(t >= t_break, x, np.nan)


def _runs(mask):
    """``[(start, stop)]`` index ranges (stop exclusive) where ``mask`` is True."""
    d = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)))


def measure_cycle(t, ys, belt: Belt, f_t, mu_s=MU_S, v_stick=V_STICK, min_stick=0.05) -> dict:
    """Stick–slip measures of a simulated trajectory on a uniform time grid ``t``.

    Sticking: ``|v_r| < v_stick``. A breakaway is the end of a sticking run that lasted at least
    ``min_stick`` seconds, timed by linear interpolation of ``|v_r| = v_stick``. A cycle runs
    from one breakaway to the next; per cycle: period, stick fraction (share of the grid with
    ``|v_r| < v_stick``), x range, and at its closing breakaway the spring force ``k x`` and the
    peak friction ``max |F_T|`` over the cycle, both over ``μ_s F_N``."""
    t, x = np.asarray(t), np.asarray(ys)[:, 0]
    vb, k, fn = float(belt.speed), float(belt.stiffness), float(belt.normal_force)
    vr = np.asarray(ys)[:, 1] - vb
    stick = np.abs(vr) < v_stick
    dt = t[1] - t[0]
    breaks = []
    for a, b in _runs(stick):
        if (b - a) * dt < min_stick or b >= len(t):
            continue
        i = b - 1  # last sticking sample; |v_r| crosses v_stick between i and i + 1
        s = (v_stick - abs(vr[i])) / (abs(vr[i + 1]) - abs(vr[i]))
        breaks.append((t[i] + s * dt, x[i] + s * (x[i + 1] - x[i])))
    cycles = []
    for (t0, _), (t1, x1) in zip(breaks[:-1], breaks[1:]):
        sel = (t >= t0) & (t < t1)
        cycles.append({"t_start": t0, "period": t1 - t0, "stick_fraction": float(stick[sel].mean()),
                       "x_min": float(x[sel].min()), "x_max": float(x[sel].max()),
                       "v_r_min": float(vr[sel].min()),
                       "breakaway_spring_over_mu_s_fn": k * x1 / (mu_s * fn),
                       "peak_friction_over_mu_s_fn": float(np.abs(f_t[sel]).max() / (mu_s * fn))})
    return {"breakaway_times": [b[0] for b in breaks],
            "first_breakaway_spring_over_mu_s_fn": k * breaks[0][1] / (mu_s * fn) if breaks else None,
            "cycles": cycles, "last": cycles[-1] if cycles else None,
            "stick_fraction_overall": float(stick.mean())}


def compare(meas: dict, cyc: dict) -> dict:
    """Relative differences of the last simulated cycle from the analytic one (eqs 4–5)."""
    last = meas["last"]
    amp = (last["x_max"] - last["x_min"]) / 2
    return {"period_rel_err": last["period"] / cyc["period"] - 1,
            "amplitude_rel_err": amp / cyc["amplitude"] - 1,
            "stick_fraction_abs_err": last["stick_fraction"] - cyc["stick_fraction"],
            "x_max_err_m": last["x_max"] - cyc["x_max"], "x_min_err_m": last["x_min"] - cyc["x_min"],
            "breakaway_rel_err": last["breakaway_spring_over_mu_s_fn"]
            / (cyc["breakaway_force_spring"] / cyc["breakaway_friction"]) - 1}


def stribeck(v_s, width=None, mu_s=MU_S, mu_k=MU_K):
    """Stribeck law (exponent 2, no viscous term); tanh sign width ``ε = min(v_s/100, 10 µm/s)``
    by default, so that the stick creep ``ε artanh(k x/μ_s F_N)`` stays far below ``V_STICK``."""
    width = min(v_s / 100, 1e-5) if width is None else width
    return friction_law("stribeck", mu_k=mu_k, mu_s=mu_s, v_s=v_s, width=width)


def lugre(belt: Belt, v_s, mu_s=MU_S, mu_k=MU_K, sigma0=1e5):
    """LuGre with Canudas de Wit's σ1 = √(σ0 m) carried over per unit normal force."""
    sigma1 = float(np.sqrt(sigma0 * float(belt.mass) / float(belt.normal_force)))
    return friction_law("lugre", mu_k=mu_k, mu_s=mu_s, v_s=v_s, sigma0=sigma0, sigma1=sigma1, sigma2=0.0)


def smooth_coulomb(width=1e-5, mu_k=MU_K):
    """Smoothed Coulomb ``−μ_k F_N tanh(v/ε)`` written as a Stribeck law with μ_s = μ_k (the same
    module, so it shares the Stribeck compilation; equal to ``SmoothCoulomb(μ_k, ε)``)."""
    return friction_law("stribeck", mu_k=mu_k, mu_s=mu_k, v_s=1.0, width=width)


# ----------------------------------------------------------------------------------------
# The experiment
# ----------------------------------------------------------------------------------------


def _plot_case(path, title, t, ys, f_t, belt, cyc, law_curve=None, analytic=None, t_phase=0.0):
    """x(t) (with the analytic cycle), v_r(t), and F_T/F_N against v_r for ``t ≥ t_phase``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vb, fn = float(belt.speed), float(belt.normal_force)
    vr = ys[:, 1] - vb
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.0))
    axs[0].plot(t, ys[:, 0], label="simulation")
    if analytic is not None:
        axs[0].plot(t, analytic(t), "k--", lw=1, label="Coulomb μ_s/μ_k cycle (eqs 3–5)")
    for y, lab in ((cyc["x_s"], "x_s = μ_s F_N/k"), (cyc["x_k"], "x_k = μ_k F_N/k")):
        axs[0].axhline(y, color="gray", lw=0.6, ls=":")
        axs[0].text(t[-1], y, lab, fontsize=7, va="bottom", ha="right", color="gray")
    axs[0].set(xlabel="t [s]", ylabel="x [m]", title="position x(t)")
    axs[0].legend(fontsize=7, loc="lower right")
    axs[1].plot(t, vr)
    axs[1].axhline(0, color="gray", lw=0.6)
    axs[1].set(xlabel="t [s]", ylabel="v_r = ẋ − v_b [m/s]", title="slip velocity (v_r ≈ 0: stick)")
    sel = t >= t_phase
    if law_curve is not None:
        axs[2].plot(*law_curve, "k:", lw=1, label="law, steady sliding")
    axs[2].plot(vr[sel], f_t[sel] / fn, label=f"trajectory, t ≥ {t_phase:.1f} s")
    axs[2].axhline(MU_S, color="gray", lw=0.6, ls=":")
    axs[2].axhline(MU_K, color="gray", lw=0.6, ls=":")
    axs[2].set(xlabel="v_r [m/s]", ylabel="F_T / F_N", title="friction vs slip velocity", ylim=(-0.45, 0.45))
    axs[2].legend(fontsize=7)
    for ax in axs:
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_ambrosio(path, mu_k=MU_K, v0=1e-4, v1=1e-3, f_n=9.81):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    v = np.linspace(-3 * v1, 3 * v1, 2001)
    fig, ax = plt.subplots(figsize=(7, 4))
    amb = np.asarray(Ambrosio(mu_k, v0, v1)(jnp.asarray(v), f_n))
    ax.plot(v * 1e3, amb, lw=2, label=f"Ambrosio (v0 = {v0 * 1e3:g} mm/s, v1 = {v1 * 1e3:g} mm/s)")
    ax.plot(v * 1e3, np.asarray(Coulomb(mu_k)(jnp.asarray(v), f_n)), "k:", lw=1, label="Coulomb")
    ax.axvspan(-v0 * 1e3, v0 * 1e3, color="C1", alpha=0.08)
    for s in (-1, 1):
        ax.axvline(s * v0 * 1e3, color="C1", lw=0.6, ls="--")
        ax.axvline(s * v1 * 1e3, color="C2", lw=0.6, ls="--")
    ax.axhline(mu_k * f_n, color="gray", lw=0.6)
    ax.axhline(-mu_k * f_n, color="gray", lw=0.6)
    ax.annotate("F_T = 0 for |v| ≤ v0", xy=(0.05, 0.0), xytext=(0.6, 1.2), fontsize=8,
                arrowprops={"arrowstyle": "->", "lw": 0.6})
    ax.annotate("|F_T| = μ_k F_N for |v| ≥ v1", xy=(1.5, -mu_k * f_n), xytext=(1.2, -1.8), fontsize=8,
                arrowprops={"arrowstyle": "->", "lw": 0.6})
    ax.set(xlabel="slip velocity v [mm/s]", ylabel="F_T [N]",
           title=f"Ambrosio friction: 0 below v0, linear ramp, ∓μ_k F_N above v1 (F_N = {f_n} N)")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_lines(path, curves, xlabel, ylabel, title, logx=False, logy=False):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, (x, y, style) in curves.items():
        ax.plot(x, y, style, label=label)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def ambrosio_check(mu_k=MU_K, v0=1e-4, v1=1e-3, f_n=9.81) -> dict:
    """Ambrosio on a dense grid (including 0, ±v0, ±v1): the largest deviation from 0 below v0
    and from μ_k F_N above v1, and the ramp's deviation from linear in between."""
    v = np.unique(np.concatenate([np.linspace(-5 * v1, 5 * v1, 20001), [0.0, v0, -v0, v1, -v1]]))
    f = np.asarray(Ambrosio(mu_k, v0, v1)(jnp.asarray(v), f_n))
    a = np.abs(v)
    low, high, mid = a <= v0, a >= v1, (a > v0) & (a < v1)
    ramp = -np.sign(v) * mu_k * f_n * (a - v0) / (v1 - v0)
    return {"grid_points": int(v.size), "max_abs_force_below_v0": float(np.abs(f[low]).max()),
            "max_abs_dev_from_mu_k_fn_above_v1": float(np.abs(np.abs(f[high]) - mu_k * f_n).max()),
            "opposes_slip": bool(np.all(f[a > v0] * v[a > v0] < 0)),
            "max_rel_dev_from_linear_ramp": float(np.abs(f[mid] - ramp[mid]).max() / (mu_k * f_n))}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    belt, damped = Belt(), Belt(damping=0.2)
    cyc, cyc_damped = coulomb_cycle(belt), coulomb_cycle(damped)
    vb, fn = float(belt.speed), float(belt.normal_force)
    t_end, dt = 100.0, 2e-3
    t = np.arange(0.0, t_end + dt / 2, dt)
    summary = {
        "model": "m x'' = -k x - c x' + F_T(x' - v_b, m g); LuGre adds z' = v_r - sigma0 |v_r| z / g(v_r)",
        "parameters": {"m_kg": 1.0, "k_N_per_m": 2.0, "g": 9.81, "F_N_N": fn, "v_b_m_per_s": vb,
                       "mu_s": MU_S, "mu_k": MU_K, "c_Ns_per_m": "0 (0.2 where 'damped')", "t_end_s": t_end,
                       "save_dt_s": dt, "stick_threshold_m_per_s": V_STICK, "x0": "block at rest at x = 0",
                       "solver": "diffrax Kvaerno5 (VeryChord Newton), PID controller rtol 1e-8 atol 1e-9"},
        "analytic_coulomb_cycle": cyc,
        "analytic_coulomb_cycle_damped_c0.2": cyc_damped,
    }
    v_grid = np.linspace(-0.9, 0.3, 2401)

    def run(name, law, belt_=belt, cyc_=cyc, plot=True, title="", analytic=True):
        t0 = time.perf_counter()
        ys, steps = simulate(belt_, law, t)
        wall = time.perf_counter() - t0
        f_t = friction_history(belt_, law, ys)
        meas = measure_cycle(t, ys, belt_, f_t)
        tb = meas["breakaway_times"]
        row = {"law": type(law).__name__, "num_steps": steps, "wall_s_incl_compile": wall,
               "n_breakaways": len(tb), "first_breakaway_t_s": tb[0] if tb else None,
               "first_breakaway_spring_over_mu_s_fn": meas["first_breakaway_spring_over_mu_s_fn"],
               "stick_fraction_overall": meas["stick_fraction_overall"], "last_cycle": meas["last"],
               "all_cycle_periods_s": [c["period"] for c in meas["cycles"]],
               "peak_abs_friction_over_F_N": float(np.abs(f_t).max() / fn),
               "peak_abs_friction_over_F_N_after_1s": float(np.abs(f_t[t >= 1.0]).max() / fn),
               "final_state": {"x": float(ys[-1, 0]), "x_dot": float(ys[-1, 1]),
                               "x_range_last_10s": float(np.ptp(ys[t >= t_end - 10, 0])),
                               "min_abs_v_r_last_10s": float(np.abs(ys[t >= t_end - 10, 1] - float(belt_.speed)).min())}}
        if analytic and meas["last"] is not None and cyc_.get("stick_slip", False):
            row["vs_analytic"] = compare(meas, cyc_)
        if plot:
            if isinstance(law, LuGre):
                curve = (v_grid, np.sign(-v_grid) * np.asarray(law.g(jnp.asarray(v_grid))))
            else:
                curve = (v_grid, np.asarray(law(jnp.asarray(v_grid), fn)) / fn)
            ana = (lambda tt: coulomb_cycle_x(tt, tb[0], cyc_, float(belt_.speed))) if analytic and tb else None
            _plot_case(OUT / f"{name}.png", title, t, ys, f_t, belt_, cyc_, law_curve=curve, analytic=ana,
                       t_phase=tb[0] if tb else 1.0)
        print(f"{name}: {steps} steps, {wall:.2f} s, last cycle {meas['last']}", flush=True)
        return row

    cases = {}
    cases["stribeck_sharp"] = run("stribeck_sharp", stribeck(1e-3),
                                  title="Stribeck, v_s = 1 mm/s, ε = 10 µm/s: stick–slip ≈ the Coulomb μ_s/μ_k cycle")
    cases["stribeck_textbook"] = run("stribeck_textbook", stribeck(0.1),
                                     title="Stribeck, v_s = v_b = 0.1 m/s, ε = 10 µm/s")
    cases["lugre"] = run("lugre", lugre(belt, 1e-3),
                         title="LuGre, v_s = 1 mm/s, σ0 = 1e5 1/m, σ1 = 101 s/m (Canudas de Wit et al. 1995)")
    cases["lugre_vs_10mm"] = run("lugre_vs_10mm", lugre(belt, 1e-2), title="LuGre, v_s = 10 mm/s")
    cases["contrast_coulomb_mu_s_eq_mu_k_damped"] = run(
        "contrast_coulomb", smooth_coulomb(1e-5), belt_=damped, cyc_=cyc_damped, analytic=False,
        title="contrast: μ_s = μ_k = 0.3 (smooth Coulomb, ε = 10 µm/s), damper c = 0.2 N s/m → steady sliding")
    cases["contrast_coulomb_mu_s_eq_mu_k_undamped"] = run(
        "contrast_coulomb_undamped", smooth_coulomb(1e-5), plot=False, analytic=False)
    cases["stribeck_sharp_damped"] = run(
        "stribeck_sharp_damped", stribeck(1e-3), belt_=damped, cyc_=cyc_damped,
        title="Stribeck v_s = 1 mm/s with the same damper c = 0.2 N s/m: stick–slip persists")
    cases["lugre_damped"] = run("lugre_damped", lugre(damped, 1e-3), belt_=damped, cyc_=cyc_damped, plot=False)
    summary["cases"] = cases

    # convergence of Stribeck to the analytic Coulomb cycle as v_s (and ε) → 0
    conv = {}
    for v_s in (0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4):
        law = stribeck(v_s)
        ys, steps = simulate(belt, law, t)
        meas = measure_cycle(t, ys, belt, friction_history(belt, law, ys))
        conv[f"{v_s:g}"] = {"v_s": v_s, "width": float(law.width), "num_steps": steps, **compare(meas, cyc),
                            "stick_fraction": meas["last"]["stick_fraction"], "period_s": meas["last"]["period"]}
        print("v_s", v_s, conv[f"{v_s:g}"], flush=True)
    summary["stribeck_convergence_to_coulomb"] = conv
    vs = np.array([c["v_s"] for c in conv.values()])
    _plot_lines(OUT / "stribeck_convergence.png",
                {"|period error|": (vs, [abs(c["period_rel_err"]) for c in conv.values()], "o-"),
                 "|amplitude error|": (vs, [abs(c["amplitude_rel_err"]) for c in conv.values()], "s-"),
                 "|breakaway force error|": (vs, [abs(c["breakaway_rel_err"]) for c in conv.values()], "^-"),
                 "v_s / v_b": (vs, vs / vb, "k:")},
                "Stribeck velocity v_s [m/s] (ε = min(v_s/100, 10 µm/s))", "relative error vs eq (4)",
                "Stribeck stick–slip → the classical Coulomb μ_s/μ_k cycle", logx=True, logy=True)

    # belt-speed sweep with the damper: stick–slip vanishes above a critical belt speed
    sweep = {}
    for v in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.58, 0.6, 0.62, 0.65, 0.7, 0.8, 1.0, 1.5, 2.0):
        b = Belt(damping=0.2, speed=v)
        ys, _ = simulate(b, stribeck(1e-3), t)
        meas = measure_cycle(t, ys, b, friction_history(b, stribeck(1e-3), ys))
        late = t >= t_end / 2
        ana = coulomb_cycle(b)
        sweep[f"{v:g}"] = {"v_b": v, "n_breakaways": len(meas["breakaway_times"]),
                           "stick_fraction_last_cycle": meas["last"]["stick_fraction"] if meas["last"] else None,
                           "stick_fraction_t_gt_50s": float(np.mean(np.abs(ys[late, 1] - v) < V_STICK)),
                           "x_range_last_10s": float(np.ptp(ys[t >= t_end - 10, 0])),
                           "coulomb_damped_stick_fraction": ana["stick_fraction"] if ana["stick_slip"] else 0.0,
                           "coulomb_undamped_stick_fraction": coulomb_cycle(Belt(speed=v))["stick_fraction"]}
        print("v_b", v, sweep[f"{v:g}"], flush=True)
    v_crit = critical_belt_speed(damped)
    sim_crit = [s["v_b"] for s in sweep.values() if s["stick_fraction_last_cycle"]]
    summary["belt_speed_sweep_stribeck_damped"] = {
        "runs": sweep, "critical_speed_coulomb_damped_eq5_m_per_s": v_crit,
        "simulated_largest_speed_with_stick_slip": max(sim_crit) if sim_crit else None}
    vbs = np.array([s["v_b"] for s in sweep.values()])
    vfine = np.linspace(0.05, 2.0, 196)
    _plot_lines(OUT / "belt_speed_sweep.png",
                {"Stribeck v_s = 1 mm/s, c = 0.2 N s/m (simulated; last cycle, else t > 50 s)":
                     (vbs, [s["stick_fraction_last_cycle"] or s["stick_fraction_t_gt_50s"] for s in sweep.values()], "o"),
                 "Coulomb μ_s/μ_k, c = 0.2 N s/m (eq 5)":
                     (vfine, [(lambda a: a["stick_fraction"] if a["stick_slip"] else 0.0)(coulomb_cycle(Belt(damping=0.2, speed=v)))
                              for v in vfine], "k-"),
                 "Coulomb μ_s/μ_k, c = 0 (eq 4)": (vfine, [coulomb_cycle(Belt(speed=v))["stick_fraction"] for v in vfine], "k:")},
                "belt speed v_b [m/s]", "stick fraction",
                f"stick–slip stops above v_b ≈ {v_crit:.3f} m/s with damping (eq 5)")

    summary["ambrosio"] = ambrosio_check()
    _plot_ambrosio(OUT / "ambrosio_law.png")
    summary["figures"] = sorted(p.name for p in OUT.glob("*.png"))
    from diffsim.scenarios.base import write_json

    write_json(OUT / "summary.json", summary)
    print("written", OUT)


if __name__ == "__main__":
    main()
