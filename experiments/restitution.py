"""Single impacts: effective restitution of every normal-force law, and Hertz theory.

A point mass ``m`` reaches a rigid plane with normal speed ``v⁻ > 0``. During contact the
penetration ``Δ ≥ 0`` obeys the 1-DOF equation

    m Δ̈ = −F_N(Δ, Δ̇, Δ̇⁽⁻⁾ = v⁻),     Δ(0) = 0,  Δ̇(0) = v⁻,                       (1)

with ``F_N = K Δⁿ [1 + χ′(c_r) Δ̇/v⁻]`` clipped at ``F_N ≥ 0`` (diffsim.contact.laws). The
contact ends when ``Δ`` returns to 0; the effective coefficient of restitution is

    e_eff = −Δ̇(t_end) / v⁻.                                                       (2)

Exact relation for this family. With ``v = Δ̇`` and ``α = χ′/v⁻``, (1) has the first integral
``m v dv/(1 + α v) = −K Δⁿ dΔ``. Integrated over a whole contact (Δ: 0 → Δmax → 0, v: v⁻ → −e v⁻)
the right side vanishes, and ``∫ v/(1+αv) dv = v/α − ln(1+αv)/α²`` gives

    χ′ (1 + e) = ln[(1 + χ′)/(1 − χ′ e)],                                          (3)

independent of n, K, m and v⁻. Its root ``e ∈ (0, min(1, 1/χ′))`` is found here with brentq (e = 1
for χ′ = 0). Two limits explain the bias of each law: χ′ → 0 gives ``1 − e ≈ (2/3) χ′``, so a law
is unbiased near c_r = 1 iff ``χ′ ≈ (3/2)(1 − c_r)``; χ′ → ∞ gives ``e → 1/χ′``, so it is unbiased
near c_r = 0 iff ``χ′ ≈ 1/c_r``.

No clipping. ``Δ̈ = −F_N/m ≤ 0``, so ``Δ̇`` decreases monotonically from v⁻ to −e v⁻ and the
bracket ``1 + χ′Δ̇/v⁻`` is smallest at exit, where it equals ``1 − χ′ e`` — positive by (3). The
``max(F, 0)`` clip is therefore never active in an exact single impact (the force falls
continuously to 0 at Δ = 0); the margin ``1 − χ′ e_eff`` is reported for every entry.

Hertz (χ′ = 0): energy conservation ``½ m Δ̇² + K Δⁿ⁺¹/(n+1) = ½ m v⁻²`` gives

    Δmax = ((n+1) m v⁻² / (2K))^{1/(n+1)}       (n = 3/2: (5 m v⁻²/(4K))^{2/5}),     (4)
    F_max = K Δmax^n,                                                              (5)
    t_c = C_n Δmax / v⁻,  C_n = 2 ∫₀¹ dx/√(1 − x^{n+1}) = (2/(n+1)) B(1/(n+1), 1/2),  (6)

(C_{3/2} = 0.8 B(2/5, 1/2) = 2.94328…, C_1 = π), and the time to reach Δ ≤ Δmax during
compression, ``t(Δ) = (Δmax/v⁻) (1/(n+1)) B(1/(n+1), 1/2) I_{(Δ/Δmax)^{n+1}}(1/(n+1), 1/2)``
with the regularized incomplete beta function I, which gives the whole Hertz history.

Numerics: (1) is integrated in scaled variables ``x = Δ/L``, ``u = Δ̇/V``, ``τ = t V/L`` (natural
scales ``V = v⁻``, ``L = (m v⁻²/K)^{1/(n+1)}``, so that the state is O(1) and rtol = atol = 1e-12
mean what they say), the law itself being evaluated in physical units. Dopri8, PID step control,
float64. The contact is split at maximum compression: phase 1 ends at the event ``u = 0``, phase
2 at ``x = 0`` (diffrax Event, downward crossing, located on the dense output with an optimistix
Newton solve). Both phases use the same compiled function, vmapped over (law, c_r, K, m, v⁻).

Literature: the χ′(c_r) expressions are those of diffsim.contact.laws (Hunt & Crossley 1975;
Lankarani & Nikravesh 1990; Gonthier et al. 2004; Flores et al. 2011; Hu & Guo 2015, Multibody
Syst. Dyn., doi:10.1007/s11044-015-9453-z). The search tool available while writing this
returned only the opening paragraphs of those papers, so no published bias table was read and
none is quoted; the "published relations" compared against are the χ′(c_r) formulas themselves
(nominal e = c_r) and the exact relation (3), whose two limits above explain every bias found.

    python experiments/restitution.py          # -> experiments/results/restitution/
"""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optimistix as optx  # noqa: E402
from scipy import integrate, optimize, special  # noqa: E402

from diffsim.contact import normal_law  # noqa: E402

OUT = Path(__file__).parent / "results" / "restitution"
LAWS = ("hertz", "hunt-crossley", "lankarani-nikravesh", "gonthier", "flores", "hu-guo")
C_R = tuple(np.round(np.linspace(0.2, 1.0, 9), 10))
RTOL = ATOL = 1e-12


# ----------------------------------------------------------------------------------------
# References
# ----------------------------------------------------------------------------------------


def chi_of(name: str, c_r: float) -> float:
    """χ′(c_r) of a law, taken from the law module itself."""
    return float(normal_law(name, K=1.0, c_r=c_r).chi())


def exact_restitution(chi: float) -> float:
    """Root ``e`` of (3), ``χ′(1+e) = ln((1+χ′)/(1−χ′e))`` on ``(0, min(1, 1/χ′))``; 1 for χ′ = 0.

    Written as ``g(e) = χ′(1+e) − log1p(χ′) + log1p(−χ′e)``: ``g(0) > 0``, ``g → −∞`` at 1/χ′ and
    ``g(1) = 2χ′ − 2 artanh χ′ < 0`` for χ′ < 1, so the bracket holds one sign change (the other
    root, e = −1, lies outside)."""
    chi = float(chi)
    if chi == 0.0:
        return 1.0
    g = lambda e: chi * (1.0 + e) - np.log1p(chi) + np.log1p(-chi * e)  # noqa: E731
    hi = min(1.0, 1.0 / chi) * (1.0 - 1e-15)
    return optimize.brentq(g, 0.0, hi, xtol=1e-17, rtol=1e-15, maxiter=500)


def chi_for_exact_restitution(c_r: float) -> float:
    """The χ′ that makes (3) return e = c_r exactly (the law every model approximates)."""
    if c_r == 1.0:
        return 0.0
    g = lambda x: x * (1.0 + c_r) - np.log1p(x) + np.log1p(-x * c_r)  # noqa: E731
    return optimize.brentq(g, 1e-9, (1.0 / c_r) * (1.0 - 1e-15), xtol=1e-16, rtol=1e-15, maxiter=500)


def hertz_constant(n: float = 1.5) -> dict:
    """``C_n = 2∫₀¹ dx/√(1−x^{n+1})`` of (6): Beta function and, independently, a quadrature
    after ``x = 1 − w²`` (which removes the endpoint singularity)."""
    beta = 2.0 / (n + 1.0) * special.beta(1.0 / (n + 1.0), 0.5)
    def f(w):  # 2w/√(1 − (1−w²)^{n+1}), written without cancellation; → 2/√(n+1) at w = 0
        return 2.0 * w / np.sqrt(-np.expm1((n + 1.0) * np.log1p(-w * w))) if w > 0 else 2.0 / np.sqrt(n + 1.0)

    quad, _ = integrate.quad(f, 0.0, 1.0, epsabs=0.0, epsrel=1e-13, limit=200)
    return {"beta": float(beta), "quadrature": float(2.0 * quad)}


def hertz_theory(m: float, v: float, K: float, n: float = 1.5) -> dict:
    """Δmax (4), F_max (5), t_c (6) and compression time t_c/2 of an elastic impact."""
    dmax = ((n + 1.0) * m * v * v / (2.0 * K)) ** (1.0 / (n + 1.0))
    c = hertz_constant(n)["beta"]
    return {"delta_max": dmax, "f_max": K * dmax**n, "t_c": c * dmax / v, "t_comp": 0.5 * c * dmax / v}


def hertz_time_at(delta, dmax, v, n: float = 1.5):
    """Compression-phase time at which the Hertz penetration reaches ``delta`` (below (6))."""
    a = 1.0 / (n + 1.0)
    s = np.clip(np.asarray(delta) / dmax, 0.0, 1.0) ** (n + 1.0)
    return dmax / v * a * special.beta(a, 0.5) * special.betainc(a, 0.5, s)


# ----------------------------------------------------------------------------------------
# Simulation
# ----------------------------------------------------------------------------------------


def _force(law_index, c_r, K, delta, delta_dot, v_imp, n):
    """``F_N`` of law ``LAWS[law_index]`` (a traced index: one compiled function for all laws)."""
    branches = [
        (lambda d, dd, vi, name=name: normal_law(name, K=K, c_r=c_r, n=n)(d, dd, vi)) for name in LAWS
    ]
    return jax.lax.switch(law_index, branches, delta, delta_dot, v_imp)


def _vector_field(t, y, args):
    """Scaled (1): ``x′ = u``, ``u′ = −F_N(L x, V u, v⁻) L/(m V²)``."""
    law_index, c_r, K, m, v_imp, L, V, _, n = args
    x, u = y
    f = _force(law_index, c_r, K, L * x, V * u, v_imp, n)
    return u, -f * L / (m * V * V)


def _phase_one(law_index, c_r, K, m, v_imp, L, V, x0, u0, phase, n):
    """Integrate (1) from ``(x0, u0)`` until ``u = 0`` (phase 0) or ``x = 0`` (phase 1)."""

    def cond(t, y, args, **kwargs):
        return jnp.where(args[7] == 0, y[1], y[0])

    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_vector_field),
        diffrax.Dopri8(),
        0.0,
        1e3,  # never reached: the event ends the solve (phase times are O(1)-O(10))
        None,
        (x0, u0),
        args=(law_index, c_r, K, m, v_imp, L, V, phase, n),
        stepsize_controller=diffrax.PIDController(rtol=RTOL, atol=ATOL),
        event=diffrax.Event(cond, root_finder=optx.Newton(rtol=1e-14, atol=1e-14), direction=False),
        max_steps=20_000,
        throw=False,
    )
    ok = sol.result == diffrax.RESULTS.event_occurred
    return sol.ts[-1], sol.ys[0][-1], sol.ys[1][-1], ok, sol.stats["num_accepted_steps"]


@partial(jax.jit, static_argnames=("n",))
def _phase(law_index, c_r, K, m, v_imp, L, V, x0, u0, phase, n=1.5):
    """:func:`_phase_one` vmapped over every argument but ``phase`` and ``n``."""
    f = partial(_phase_one, n=n)
    return jax.vmap(f, in_axes=(0,) * 9 + (None,))(law_index, c_r, K, m, v_imp, L, V, x0, u0, phase)


def drop(laws, c_r, K=1e7, m=1.0, v=1.0, n=1.5, scale=None) -> dict:
    """Single impacts for arrays (broadcast together) of laws, c_r, K, m, v⁻.

    ``scale = (L, V)`` overrides the natural scales (used to show that the result does not
    depend on them). Returns numpy arrays: e_eff (2), Δmax, force at maximum compression,
    compression time, contact duration, accepted steps and a success flag."""
    laws = np.asarray(laws)
    idx = np.vectorize(LAWS.index)(laws) if laws.dtype.kind in "US" else laws.astype(int)
    idx, c_r, K, m, v = np.broadcast_arrays(idx, *(np.asarray(a, float) for a in (c_r, K, m, v)))
    idx, c_r, K, m, v = (np.ravel(a) for a in (idx, c_r, K, m, v))
    if scale is None:
        L, V = (m * v * v / K) ** (1.0 / (n + 1.0)), v
    else:
        L, V = (np.broadcast_to(np.asarray(s, float), idx.shape) for s in scale)
    x0, u0 = np.zeros_like(c_r), v / V
    args = [jnp.asarray(a) for a in (idx.astype(np.int32), c_r, K, m, v, L, V)]
    t1, x1, u1, ok1, s1 = _phase(*args, jnp.asarray(x0), jnp.asarray(u0), jnp.asarray(0), n=n)
    t2, x2, u2, ok2, s2 = _phase(*args, x1, u1, jnp.asarray(1), n=n)
    T = L / V
    t1, x1, u1, t2, x2, u2 = (np.asarray(a) for a in (t1, x1, u1, t2, x2, u2))
    dmax = L * x1
    f_at_max = np.empty_like(dmax)  # F_N at the end of phase 1 (Hertz: the peak force)
    for i, name in enumerate(LAWS):
        sel = idx == i
        if sel.any():
            law = normal_law(name, K=K[sel], c_r=c_r[sel], n=n)
            f_at_max[sel] = np.asarray(law(dmax[sel], V[sel] * u1[sel], v[sel]))
    return {
        "e_eff": -u2 * V / v,
        "delta_max": dmax,
        "force_at_max_compression": f_at_max,
        "t_comp": t1 * T,
        "t_c": (t1 + t2) * T,
        "exit_penetration": L * x2,
        "steps": np.asarray(s1) + np.asarray(s2),
        "ok": np.asarray(ok1) & np.asarray(ok2),
    }


@partial(jax.jit, static_argnames=("n",))
def _history(law_index, c_r, K, m, v_imp, ts, n=1.5):
    """Δ, Δ̇ at physical times ``ts`` (natural scales), for the figures."""
    L = (m * v_imp**2 / K) ** (1.0 / (n + 1.0))
    T = L / v_imp
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_vector_field),
        diffrax.Dopri8(),
        0.0,
        ts[-1] / T,
        None,
        (jnp.zeros(()), jnp.ones(())),
        args=(law_index, c_r, K, m, v_imp, L, v_imp, 0, n),
        saveat=diffrax.SaveAt(ts=ts / T),
        stepsize_controller=diffrax.PIDController(rtol=RTOL, atol=ATOL),
        max_steps=20_000,
    )
    return L * sol.ys[0], v_imp * sol.ys[1]


# ----------------------------------------------------------------------------------------
# Experiment
# ----------------------------------------------------------------------------------------


def _plot_restitution(table, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, 2, figsize=(11.0, 4.4))
    c = np.array(C_R)
    cc = np.linspace(0.05, 1.0, 200)
    for name in LAWS[1:]:
        line, = axs[0].plot(c, table[name]["e_eff"], "o", ms=4, label=name)
        ref = [exact_restitution(chi_of(name, x)) for x in cc]
        axs[0].plot(cc, ref, "-", lw=1.0, color=line.get_color())
        axs[1].plot(c, np.array(table[name]["e_eff"]) - c, "o-", ms=4, lw=1.0, color=line.get_color(), label=name)
    axs[0].plot([0, 1], [0, 1], "k--", lw=1.0, label="e = c_r (nominal)")
    axs[0].set_xlabel("nominal c_r")
    axs[0].set_ylabel("effective restitution e_eff")
    axs[0].set_title("markers: simulated; lines: exact relation (3)")
    axs[0].set_xlim(0, 1.02)
    axs[0].set_ylim(0, 1.02)
    axs[1].axhline(0.0, color="k", lw=0.8)
    axs[1].set_xlabel("nominal c_r")
    axs[1].set_ylabel("bias e_eff − c_r")
    axs[1].set_title("bias of each law")
    for ax in axs:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_hertz(hist, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, 2, figsize=(11.0, 4.2))
    for label, (t, d, f, style) in hist["curves"].items():
        axs[0].plot(1e3 * t, f, label=label, **style)
        axs[1].plot(1e3 * d, f, label=label, **style)
    th = hist["theory"]
    axs[0].plot(1e3 * hist["t_theory"], hist["f_theory"], "k.", ms=4, label="Hertz theory, t(Δ) from (6)")
    axs[0].axvline(1e3 * th["t_c"], color="k", ls=":", lw=1.0)
    axs[0].axhline(th["f_max"], color="k", ls=":", lw=1.0)
    axs[0].set_xlabel("t [ms]")
    axs[0].set_ylabel("F_N [N]")
    axs[0].set_title(f"m = 1 kg, v⁻ = 1 m/s, K = {hist['K']:.0e} N/m^1.5 (dotted: t_c, F_max)")
    axs[1].set_xlabel("Δ [mm]")
    axs[1].set_ylabel("F_N [N]")
    axs[1].set_title("force–penetration (hysteresis loops)")
    for ax in axs:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _readme(summary) -> str:
    rows = ["| law | χ′(c_r) | " + " | ".join(f"{c:.1f}" for c in C_R) + " |",
            "|---|---|" + "---|" * len(C_R)]
    formulas = {"hertz": "0", "hunt-crossley": "3(1−c_r)/2", "lankarani-nikravesh": "3(1−c_r²)/4",
                "gonthier": "(1−c_r²)/c_r", "flores": "8(1−c_r)/(5c_r)", "hu-guo": "3(1−c_r)/(2c_r)"}
    for name in LAWS:
        cells = " | ".join(f"{e:.4f}" for e in summary["table"][name]["e_eff"])
        rows.append(f"| {name} | {formulas[name]} | {cells} |")
    cells = " | ".join(f"{x:.4f}" for x in summary["chi_for_exact_restitution"])
    rows.append(f"| *χ′ for e = c_r exactly* | (3) | {cells} |")
    bias = ["| law | max \\|e_eff − c_r\\| on 0.2…1.0 (at c_r) | e_eff − c_r at 0.9 | 0.95 | 0.99 "
            "| c_r → 0 limit of e_eff |",
            "|---|---|---|---|---|---|"]
    for name in LAWS[1:]:
        b = summary["bias"][name]
        bias.append(f"| {name} | {b['max_abs']:.4f} ({b['at_c_r']:.1f}) | {b['near_1']['0.9']:+.2e} | "
                    f"{b['near_1']['0.95']:+.2e} | {b['near_1']['0.99']:+.2e} | {b['limit_c_r_to_0']} |")
    h = summary["hertz"]
    hc, ln, go, fl, hg = (summary["bias"][k] for k in LAWS[1:])
    return f"""# Single impacts: effective restitution of the normal-force laws

`python experiments/restitution.py` (wall {summary['wall_s']:.0f} s incl. compilation). A point mass
(m = 1 kg, v⁻ = 1 m/s, K = 1e7 N/m^1.5, n = 3/2) hits a plane; `m Δ̈ = −F_N(Δ, Δ̇, v⁻)` is integrated
with diffrax Dopri8 (rtol = atol = 1e-12, float64, scaled variables) until Δ returns to 0 (diffrax
Event + optimistix Newton); `e_eff = −Δ̇(t_end)/v⁻`. Equations are numbered as in the script's
docstring.

## Effective restitution e_eff (rows: law, columns: nominal c_r)

{chr(10).join(rows)}

Every entry agrees with the exact relation for this family,

    χ′ (1 + e) = ln[(1 + χ′)/(1 − χ′ e)]                 (3)

(first integral `m v dv/(1+χ′v/v⁻) = −KΔⁿ dΔ` over a whole contact; independent of n, K, m, v⁻),
to **max |e_eff − e_exact| = {summary['max_abs_error_vs_exact']:.1e}** over all laws and c_r
(n = 3/2). The same holds for n = 1 (max error {summary['n_independence']['max_abs_error_vs_exact']:.1e}),
and across (m, v⁻, K) spanning 0.01–1 kg, 0.1–5 m/s and 1e5–1e9 N/m^1.5 integrated on fixed
(non-natural) scales (max spread of e_eff {summary['parameter_independence']['max_spread']:.1e}).
The `max(F, 0)` clip never acts: Δ̇ falls monotonically, so the smallest bracket `1 + χ′Δ̇/v⁻`
is at exit, `1 − χ′e`, and its smallest value over the table is
{summary['min_clip_margin']:.2e} > 0 (Flores at c_r = 0.2, where e is within 0.5 % of its
ceiling 1/χ′).

## Bias of each law

{chr(10).join(bias)}

Why. Relation (3) has two limits: for small damping `1 − e ≈ (2/3) χ′`, and for large damping
`e → 1/χ′` (the exit speed can never exceed `v⁻/χ′`, where the bracket would reach zero). A
law is accurate near c_r = 1 if `χ′ ≈ (3/2)(1 − c_r)` there, and near c_r = 0 if `χ′ ≈ 1/c_r`.

* **Hunt–Crossley** and **Lankarani–Nikravesh** have exactly the small-damping slope
  (`χ′ ≈ (3/2)(1 − c_r)` as c_r → 1): their bias is second order in 1 − c_r and positive
  (Hunt–Crossley {hc['near_1']['0.95']:+.1e} at c_r = 0.95 and {hc['near_1']['0.99']:+.1e} at 0.99 — so
  *not* within 1e-3 of c_r at 0.95; Lankarani–Nikravesh about 1.5× that). But their χ′ stays
  bounded (→ 1.5 and → 0.75) as c_r → 0, so they can never dissipate most of the energy: e_eff
  stays above {hc['limit_c_r_to_0']} and {ln['limit_c_r_to_0']} whatever c_r is asked for. They are
  usable for hard impacts (c_r ≳ 0.9) only.
* **Gonthier et al.** `χ′ = (1−c_r²)/c_r ≈ 1/c_r` has the right large-damping limit, so it is
  the most accurate law for soft impacts (c_r ≤ 0.4: |bias| ≤ 5e-3), but its small-damping slope
  is `χ′ ≈ 2(1 − c_r)`, 4/3 of the right one, so it dissipates too much at medium and high c_r
  (bias −0.02 … −0.03 for c_r = 0.6…0.9, still {go['near_1']['0.95']:+.1e} at 0.95 and
  {go['near_1']['0.99']:+.1e} at 0.99: first order, 1 − e ≈ (4/3)(1 − c_r)).
* **Hu–Guo** `χ′ = 3(1−c_r)/(2c_r)` = Hunt–Crossley's χ′ divided by c_r, which cancels the
  second-order term as well: its bias near c_r = 1 is third order ({hg['near_1']['0.9']:+.1e} at 0.9,
  {hg['near_1']['0.99']:+.1e} at 0.99), the best of all laws for c_r ≥ 0.7. But `e → 1/χ′ ≈ (2/3) c_r`
  as c_r → 0: a growing under-prediction for soft impacts (−{hg['max_abs']:.3f} at c_r = {hg['at_c_r']},
  {100 * hg['max_abs'] / hg['at_c_r']:.0f} % of c_r).
* **Flores et al.** `χ′ = 8(1−c_r)/(5c_r)` sits between the two limits: 6.7 % too steep near
  c_r = 1 (1 − e ≈ (16/15)(1 − c_r)) and `e → (5/8) c_r` as c_r → 0; it under-predicts over the
  whole range (largest |bias| {fl['max_abs']:.3f} at c_r = {fl['at_c_r']}, {100 * fl['max_abs'] / fl['at_c_r']:.0f} % of c_r;
  {fl['near_1']['0.95']:+.1e} at 0.95).

Flores, Gonthier and Hu–Guo therefore give e_eff within ≈0.045 of c_r over the whole range 0.2…1,
while Hunt–Crossley/Lankarani–Nikravesh are off by up to 0.35/0.47. None is exact: the last row
of the table is the χ′ that relation (3) requires for e = c_r; a law using it would have no bias.

## Hertz theory (elastic case, χ′ = 0)

With Δmax = (5mv²/(4K))^(2/5) = {h['theory']['delta_max']:.9e} m, F_max = KΔmax^(3/2) =
{h['theory']['f_max']:.9e} N and t_c = C Δmax/v = {h['theory']['t_c']:.9e} s, where
C = 2∫₀¹dx/√(1−x^(5/2)) = 0.8·B(2/5, 1/2) = {h['constant']['beta']:.12f} (quadrature:
{h['constant']['quadrature']:.12f}), the simulation gives relative errors

* contact duration {h['rel_err']['t_c']:.1e}, compression time (t_c/2) {h['rel_err']['t_comp']:.1e},
* peak force {h['rel_err']['f_max']:.1e}, maximum penetration {h['rel_err']['delta_max']:.1e},
* restitution |1 − e| = {h['abs_err_e']:.1e},
* whole history: max |Δ_sim(t(Δ)) − Δ|/Δmax = {h['history_max_rel_err']:.1e} on 81 points of the
  exact parametric curve t(Δ) (incomplete Beta function),

and the worst of these over all laws at c_r = 1 (all reduce to Hertz) and Hertz at every c_r is
{h['worst_rel_err_all_elastic']:.1e}. `hertz_force_history.png` shows F_N(t) and F_N(Δ) for Hertz
(with the theory points) and, for contrast, the damped laws at c_r = 0.4.

Files: `summary.json` (all numbers), `restitution.png` (e_eff and bias vs c_r, with the exact
relation and the diagonal), `hertz_force_history.png`.

Literature: the χ′(c_r) expressions are those implemented in `diffsim.contact.laws` (Hunt &
Crossley 1975; Lankarani & Nikravesh 1990; Gonthier et al. 2004; Flores et al. 2011; Hu & Guo
2015, doi:10.1007/s11044-015-9453-z). The literature search available here returned only the
papers' opening paragraphs, so no published bias table was read or is quoted; the qualitative
statement usually made (Hunt–Crossley/Lankarani–Nikravesh for c_r near 1, Flores/Gonthier/Hu–Guo
over the whole range) is checked above against the exact relation rather than against a source.
"""


def main():
    t_start = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    K0, m0, v0 = 1e7, 1.0, 1.0

    # one batch (one compilation) for n = 3/2: the (law, c_r) table + the parameter sweep
    L_, C_ = np.meshgrid(np.arange(len(LAWS)), np.array(C_R), indexing="ij")
    sweep_p = [(1.0, 1.0, 1e7), (1.0, 0.1, 1e7), (1.0, 5.0, 1e7), (1.0, 1.0, 1e5), (1.0, 1.0, 1e9), (0.01, 1.0, 1e7)]
    sweep_c = (0.2, 0.5, 0.8)
    sl, sc, sm, sv, sk = [], [], [], [], []
    for i in range(len(LAWS)):
        for c in sweep_c:
            for (m, v, k) in sweep_p:
                sl.append(i), sc.append(c), sm.append(m), sv.append(v), sk.append(k)
    n_tab = L_.size
    laws = np.concatenate([L_.ravel(), sl])
    crs = np.concatenate([C_.ravel(), sc])
    Ks = np.concatenate([np.full(n_tab, K0), sk])
    ms = np.concatenate([np.full(n_tab, m0), sm])
    vs = np.concatenate([np.full(n_tab, v0), sv])
    # the table on natural scales; the sweep on the fixed scales of the nominal case
    L0 = (m0 * v0 * v0 / K0) ** 0.4
    Ls = np.concatenate([(ms[:n_tab] * vs[:n_tab] ** 2 / Ks[:n_tab]) ** 0.4, np.full(len(sl), L0)])
    Vs = np.concatenate([vs[:n_tab], np.full(len(sl), v0)])
    t0 = time.perf_counter()
    res = drop(laws, crs, Ks, ms, vs, scale=(Ls, Vs))
    wall_batch = time.perf_counter() - t0
    assert res["ok"].all(), "an event was not found"

    tab = {k: v[:n_tab].reshape(L_.shape) for k, v in res.items()}
    e_ref = np.array([[exact_restitution(chi_of(name, c)) for c in C_R] for name in LAWS])
    chi = np.array([[chi_of(name, c) for c in C_R] for name in LAWS])
    err = tab["e_eff"] - e_ref
    margin = 1.0 - chi * tab["e_eff"]
    table = {name: {"chi": chi[i], "e_eff": tab["e_eff"][i], "e_exact": e_ref[i], "error_vs_exact": err[i],
                    "bias_vs_c_r": tab["e_eff"][i] - np.array(C_R), "clip_margin_1_minus_chi_e": margin[i],
                    "t_c_s": tab["t_c"][i], "t_comp_s": tab["t_comp"][i], "delta_max_m": tab["delta_max"][i],
                    "steps": tab["steps"][i]} for i, name in enumerate(LAWS)}

    sweep_e = res["e_eff"][n_tab:].reshape(len(LAWS), len(sweep_c), len(sweep_p))
    sweep_ref = np.array([[exact_restitution(chi_of(name, c)) for c in sweep_c] for name in LAWS])
    param = {"cases_m_v_K": sweep_p, "c_r": sweep_c,
             "scales": "fixed L = (m0 v0²/K0)^(2/5), V = v0 of the nominal case (x ranges over ~0.16…6)",
             "max_spread": float(np.max(sweep_e.max(-1) - sweep_e.min(-1))),
             "max_abs_error_vs_exact": float(np.max(np.abs(sweep_e - sweep_ref[..., None])))}

    # n = 1 (a second compilation): e_eff is independent of the exponent
    res1 = drop(L_.ravel(), C_.ravel(), K0, m0, v0, n=1.0)
    e1 = res1["e_eff"].reshape(L_.shape)
    n_ind = {"n": 1.0, "e_eff": e1, "max_abs_error_vs_exact": float(np.max(np.abs(e1 - e_ref))),
             "max_abs_diff_vs_n_1.5": float(np.max(np.abs(e1 - tab["e_eff"])))}
    th1 = hertz_theory(m0, v0, K0, n=1.0)
    n_ind["hertz_rel_err_t_c"] = float(abs(res1["t_c"][0] / th1["t_c"] - 1))  # law 0 = Hertz, t_c = π√(m/K)

    # Hertz theory: law Hertz at every c_r and every law at c_r = 1
    th = hertz_theory(m0, v0, K0)
    elastic = (L_ == 0) | (C_ == 1.0)
    rel = {k: np.abs(tab[key][elastic] / th[k] - 1) for k, key in
           (("t_c", "t_c"), ("t_comp", "t_comp"), ("delta_max", "delta_max"), ("f_max", "force_at_max_compression"))}
    hz = {"theory": th, "constant": hertz_constant(1.5),
          "simulated": {"t_c": tab["t_c"][0, -1], "t_comp": tab["t_comp"][0, -1], "delta_max": tab["delta_max"][0, -1],
                        "f_max": tab["force_at_max_compression"][0, -1], "e_eff": tab["e_eff"][0, -1]},
          "rel_err": {k: float(v_[-1]) for k, v_ in rel.items()},
          "abs_err_e": float(abs(1 - tab["e_eff"][0, -1])),
          "worst_rel_err_all_elastic": float(max(np.max(v_) for v_ in rel.values())),
          "n_1_rel_err_t_c_vs_pi_sqrt_m_over_K": n_ind["hertz_rel_err_t_c"]}

    # force histories (figure) + the whole Hertz history against t(Δ)
    d_grid = np.linspace(0.0, th["delta_max"], 41)
    t_up = hertz_time_at(d_grid, th["delta_max"], v0)
    t_theory = np.concatenate([t_up, th["t_c"] - t_up[::-1][1:]])
    d_theory = np.concatenate([d_grid, d_grid[::-1][1:]])
    dh, _ = _history(0, 1.0, K0, m0, v0, jnp.asarray(t_theory))
    hz["history_max_rel_err"] = float(np.max(np.abs(np.asarray(dh) - d_theory)) / th["delta_max"])
    curves = {}
    for name, c, style in (("hertz", 1.0, {"color": "k", "lw": 1.6}),) + tuple(
            (nm, 0.4, {"lw": 1.0}) for nm in LAWS[1:]):
        i = LAWS.index(name)
        tc = tab["t_c"][i, list(C_R).index(c)]
        ts = np.linspace(0.0, tc, 400)
        d, dd = (np.asarray(a) for a in _history(i, c, K0, m0, v0, jnp.asarray(ts)))
        f = np.array([float(normal_law(name, K=K0, c_r=c)(a, b, v0)) for a, b in zip(d, dd)])
        label = "Hertz (elastic)" if name == "hertz" else f"{name}, c_r = {c}"
        curves[label] = (ts, d, f, style)
    hz["history_peak_force_sampled_rel_err"] = float(abs(curves["Hertz (elastic)"][2].max() / th["f_max"] - 1))
    _plot_hertz({"curves": curves, "theory": th, "t_theory": t_theory, "f_theory": K0 * d_theory**1.5, "K": K0},
                OUT / "hertz_force_history.png")

    bias = {}
    for i, name in enumerate(LAWS[1:], start=1):
        b = tab["e_eff"][i] - np.array(C_R)
        j = int(np.argmax(np.abs(b)))
        near = {f"{c}": exact_restitution(chi_of(name, c)) - c for c in (0.9, 0.95, 0.99)}
        lim = {"hunt-crossley": f"{exact_restitution(1.5):.4f}",  # χ′ → 3/2
               "lankarani-nikravesh": f"{exact_restitution(0.75):.4f}",  # χ′ → 3/4
               "gonthier": "c_r", "flores": "(5/8) c_r", "hu-guo": "(2/3) c_r"}[name]  # e → 1/χ′
        bias[name] = {"max_abs": float(abs(b[j])), "at_c_r": float(C_R[j]), "near_1": near, "limit_c_r_to_0": lim}

    summary = {
        "setup": {"m_kg": m0, "v_impact_m_s": v0, "K_N_per_m_n": K0, "n": 1.5, "solver": "diffrax Dopri8",
                  "rtol": RTOL, "atol": ATOL, "event": "diffrax.Event + optimistix.Newton(1e-14)",
                  "scaled_variables": "x = Δ/L, u = Δ̇/V, τ = tV/L"},
        "exact_relation": "chi (1 + e) = ln((1 + chi)/(1 - chi e))",
        "c_r": C_R,
        "table": table,
        "max_abs_error_vs_exact": float(np.max(np.abs(err))),
        "min_clip_margin": float(np.min(margin)),
        "chi_for_exact_restitution": [chi_for_exact_restitution(c) for c in C_R],
        "bias": bias,
        "hertz": hz,
        "parameter_independence": param,
        "n_independence": n_ind,
        "wall_s_main_batch_incl_compile": wall_batch,
    }
    summary["wall_s"] = time.perf_counter() - t_start
    _plot_restitution(table, OUT / "restitution.png")
    (OUT / "README.md").write_text(_readme(summary))
    from diffsim.scenarios.base import write_json

    write_json(OUT / "summary.json", summary)

    print(f"{'law':20s}" + "".join(f"{c:>8.1f}" for c in C_R))
    for name in LAWS:
        print(f"{name:20s}" + "".join(f"{e:8.4f}" for e in table[name]["e_eff"]))
    print(f"max |e_eff - e_exact| = {summary['max_abs_error_vs_exact']:.2e}; min clip margin {summary['min_clip_margin']:.2e}")
    print(f"Hertz rel. errors: {hz['rel_err']}, |1-e| = {hz['abs_err_e']:.1e}, history {hz['history_max_rel_err']:.1e}, "
          f"worst elastic {hz['worst_rel_err_all_elastic']:.1e}")
    print(f"parameter sweep: {param['max_spread']:.1e} spread, {param['max_abs_error_vs_exact']:.1e} vs exact; "
          f"n = 1: {n_ind['max_abs_error_vs_exact']:.1e} vs exact")
    print(f"wall {summary['wall_s']:.1f} s (main batch incl. compile {wall_batch:.1f} s)")
    return summary


if __name__ == "__main__":
    main()
