"""Identify the structural damping K_v, the air damping γ and the bending stiffness EI of one
flexible link from its measured swing (issue 14, S1 acceptance item).

Physics. One uniform elastic link (length L, mass per length μ) on a revolute joint with a
horizontal axis (world y), gravity −z, so the link swings and bends in the x–z plane. Its
transverse deflection is w(x, t) = Σ_k δ_k(t) W_k(x/L) with the first two clamped–free
Euler–Bernoulli shapes W_k (max-normalised, |W_k(1)| = 1). The generalised coordinates are
Z = [q, δ_1, δ_2] (q = joint angle, q = 0 horizontal, q = π/2 hanging). As in S1 (the
falling-chain paper, /work/shared/SPEC.md §S1) the equations are

    M(Z) Z̈ = R(Z, Ż) − ∂V/∂Z − ∂D/∂Ż + U,                                         (1)
    V_e = ½ δᵀ K δ,  K_jk = EI ∫₀ᴸ W_j″ W_k″ dx,                                     (2)
    D   = ½ δ̇ᵀ C δ̇,  C_jk = ∫₀ᴸ (γ W_j W_k + K_v I W_j″ W_k″) dx,                      (3)

(Rayleigh dissipation D, I the second moment of the section: air damping γ [N s/m² =
kg m⁻¹ s⁻¹] acts on the deflection velocity, the Kelvin–Voigt coefficient K_v [Pa s, the same
units; SPEC writes kg m⁻¹ s] on the curvature rate, a bending moment K_v I ẇ″). The inertia coupling in M(Z) makes every vibration of the link
move the hub, so the joint angle carries the modal response; how much of each parameter it
carries is the question this experiment answers.

Why two dampings can be separated at all: (3) makes the modal damping ratio of mode k

    ζ_k ≈ γ/(2 μ ω_k) + K_v I ω_k/(2 EI)                                              (4)

(for a uniform link without hub and tip mass; mass-proportional air damping falls with
frequency, stiffness-proportional Kelvin–Voigt damping rises with it, K_v/E being the material
retardation time). One mode gives one number ζ_1 — only a combination of γ and K_v. Two modes at
different ω give two independent combinations, so (γ, K_v) is identifiable only if the data
resolve the decay of *both* modes. EI sets the frequencies (ω_k ∝ √EI) and is determined by the
phase of the vibration, very precisely.

The link (illustrative, chosen so the effects are measurable): L = 1 m, μ = 1 kg/m (S1's
values), E = 2e11 Pa, EI = 34 N m² (a 32 × 4 mm steel strip, I = EI/E), 0.2 kg tip mass, hub
1 kg with J_yy = 0.05 kg m²; two clamped–free Euler–Bernoulli shapes in the swing plane. True
damping: K_v = 3e7 (K_v/E = 150 µs) and γ = 0.1 kg/(m s), a damping-treated strip. The
linearisation of (1) at the hanging equilibrium (hub free) gives 7.28 Hz with ζ = 0.84 % (60 %
of it air) and 19.29 Hz with ζ = 1.04 % (87 % Kelvin–Voigt); the script recomputes these. S1's
own values (steel, K_v = 125, γ = 0.025, EI = 976.6 N m², I = 4.883e-9 m⁴) give Kelvin–Voigt
damping ratios ~1e-7: nothing a swing of a few seconds can measure (design table).

The measurements. Release from rest at q₀ = −0.2 rad (11° above horizontal), undeformed
(δ = 0, as in S1 eq 30), 2 s sampled at 200 Hz (401 samples):

* ``free``: released with no motor torque;
* ``pulse``: the same release plus a known motor torque pulse τ(t) = A sin²(π t/T_p), t < T_p
  (A = 5 N m, T_p = 40 ms: its spectrum reaches the second mode).

Sensors: the joint encoder, σ_q = 1e-4 rad (≈ a 16-bit encoder), and — the tip/strain-like
channel — a tip deflection sensor on the hub (an optical sensor sighting the tip, reading
w(L) = Σ δ_k W_k(1) in the link frame), σ_w = 1e-4 m. Data: diffsim at rtol = atol = 1e-12
plus Gaussian noise of those σ (seed 14 for ``free``, 15 for ``pulse``); the fits run at
rtol = atol = 1e-9, so integration error is part of the test. The initial state and the torque
are taken as known (measured); q₀, hub, link mass and length are not fitted; the joint is
frictionless in truth and model.

What the script does:

1. Linear modal analysis of (1) at the hanging equilibrium: frequencies and damping ratios,
   with each damping alone.
2. Design analysis at the truth (Fisher information, before any data): the weighted Jacobian
   of each channel with respect to (ln K_v, ln γ, ln EI) for free/pulse × encoder /
   encoder + tip, and for S1's parameter values; relative standard deviations from its SVD
   (Cov = V S⁻² Vᵀ) and the verdict of :func:`diffsim.identify.identifiability`.
3. Three fits, each started at (K_v, γ, EI) = (+40 %, −40 %, −30 %) from the truth:
   A ``free`` swing, encoder only; B ``pulse`` swing, encoder only (joint trajectory alone);
   C ``pulse`` swing, encoder + tip sensor.

Outputs in ``experiments/results/identify-flexible-link/``: ``summary.json``, ``README.md``
(generated, with the numbers), ``data.png`` (the two measured swings), ``design.png``
(predicted relative uncertainty per case), and ``fit_free_encoder/``, ``fit_pulse_encoder/``,
``fit_pulse_encoder_tip/`` (``fit.json``, model vs data and residual figures, correlations,
from :meth:`FitResult.save`).

Starting point. A 30 % error in EI is a 16 % error in every frequency: over 2 s (15–40
vibration periods) the model slips by whole periods, and the cost has side minima in EI.
Levenberg–Marquardt reached the right minimum from this start in all three fits here; in a
development run with polynomial shapes (η², η³) instead of the clamped–free ones, fit B from
the same start stopped in a side minimum (cost 1.2e6 against ≈ 200), while adding the tip
channel (fit C's setting) reached the truth; fitting a short window first would be the other
remedy (not tried here).

    python experiments/identify_flexible_link.py      # ~2.5 min on 2 cores
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")
import jax

jax.config.update("jax_enable_x64", True)
import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np
from scipy import signal

import diffsim as ds
from diffsim import identify as idf
from diffsim.beams import euler_bernoulli_modes
from diffsim.flexible import beam, dissipated_power
from diffsim.io.results import write_json
from diffsim.loads import as_loads
from diffsim.viz import new_figure, save_figure

OUT = Path(__file__).parent / "results" / "identify-flexible-link"

# link and hub
LENGTH, MU, E_MOD = 1.0, 1.0, 2e11
TIP_MASS, HUB_MASS, HUB_INERTIA = 0.2, 1.0, (0.02, 0.05, 0.05)
N_MODES = 2
# truth
KV, GAMMA, EI = 3e7, 0.1, 34.0
I_Y = EI / E_MOD
# S1 Table 3 (for the design comparison only)
S1 = {"K_v": 125.0, "gamma": 0.025, "EI": 2e11 * 4.883e-9, "I": 4.883e-9}

NAMES = ["beam.arm.kelvin_voigt", "beam.arm.air_damping", "beam.arm.EI_y"]
SYMBOL = {"beam.arm.kelvin_voigt": "K_v", "beam.arm.air_damping": "γ", "beam.arm.EI_y": "EI"}
TRUE = dict(zip(NAMES, (KV, GAMMA, EI)))
START = {"beam.arm.kelvin_voigt": 1.4 * KV, "beam.arm.air_damping": 0.6 * GAMMA, "beam.arm.EI_y": 0.7 * EI}

# experiment
Q0 = -0.2  # rad
PULSE_A, PULSE_T = 5.0, 0.04  # N m, s
T_END, N_SAMPLES = 2.0, 401
SIGMA_Q, SIGMA_TIP = 1e-4, 1e-4  # rad, m
SEED = 14
DATA_TOL, FIT_TOL = 1e-12, 1e-9
LM_TOL = 1e-6  # Levenberg–Marquardt rtol/atol: Δcost ≲ 1e-6·cost ≈ 4e-4 ≪ ½ (one unit of χ²)
MAX_STEPS = 80


class Pulse(eqx.Module):
    """Motor torque τ(t) = A sin²(π t/T_p) for 0 ≤ t < T_p on the joint, zero on the modes (a
    differentiable leaf ``A``: the free swing is ``A = 0`` and shares the compiled code)."""

    A: jax.Array
    T: float = eqx.field(static=True)

    def __call__(self, t, q, v):
        u = jnp.where(t < self.T, self.A * jnp.sin(jnp.pi * t / self.T) ** 2, 0.0)
        return jnp.zeros(q.shape[0], q.dtype).at[0].set(u)


def pulse(amplitude):
    return Pulse(jnp.asarray(amplitude, jnp.float64), PULSE_T)


MODES = euler_bernoulli_modes("cf", N_MODES, normalize="max")
W_TIP = MODES.fields(jnp.array([1.0]))["W"][0]  # W_k(1), the tip value of each shape


def build_model(Kv=KV, gamma=GAMMA, EI_=EI, I_=I_Y):
    link = beam(LENGTH, MU, EI_y=EI_, modes_z=MODES, I_y=I_, kelvin_voigt=Kv, air_damping=gamma,
                tip_mass=TIP_MASS, n_quad=8)
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("arm", None, joint="revolute", axis=(0, 1, 0), mass=HUB_MASS, inertia=HUB_INERTIA, flex=link)
    return b.build()


def tip_deflection(traj):
    """The tip sensor: w(L) = Σ δ_k W_k(1) in the link frame [m]."""
    return traj.q[:, 1:1 + N_MODES] @ W_TIP


OBSERVABLES = {"tip.deflection": tip_deflection}


def make_system(model, amplitude, tol):
    q0 = jnp.zeros(model.nq).at[0].set(Q0)
    return ds.System(model, q0, t1=T_END, rtol=tol, atol=tol, tau=pulse(amplitude))


# ----------------------------------------------------------------------------------------
# 1. Linear modal analysis
# ----------------------------------------------------------------------------------------


@eqx.filter_jit
def _linearise(model):
    """M, K = ∂²V/∂Z², C = ½ ∂²P/∂Ż² at the hanging equilibrium (one compile for every model of
    this structure)."""
    V = lambda q: ds.potential_energy(model, q)

    def newton(q, _):  # ∂V/∂Z = 0: the static sag under gravity
        return q - jnp.linalg.solve(jax.hessian(V)(q), jax.grad(V)(q)), None

    q, _ = jax.lax.scan(newton, jnp.zeros(model.nq).at[0].set(np.pi / 2), None, length=12)
    # dissipated power P = Żᵀ C Ż = 2D (eq 3), so C = ½ ∂²P/∂Ż²
    C = 0.5 * jax.hessian(lambda v: dissipated_power(model, q, v))(jnp.zeros(model.nv))
    return ds.mass_matrix(model, q), jax.hessian(V)(q), C


def modal_analysis(model):
    """Frequencies [Hz] and damping ratios of (1) linearised at the hanging equilibrium (hub
    free), sorted by frequency, without the pendulum mode."""
    M, K, C = (np.asarray(x) for x in _linearise(model))
    n = model.nv
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-np.linalg.solve(M, K), -np.linalg.solve(M, C)]])
    lam = np.linalg.eigvals(A)
    lam = lam[lam.imag > 0]
    lam = lam[np.argsort(np.abs(lam))][1:]  # drop the pendulum
    w = np.abs(lam)
    return w / (2 * np.pi), -lam.real / w


# ----------------------------------------------------------------------------------------
# 2. Design analysis (Fisher information at the truth)
# ----------------------------------------------------------------------------------------


def design_analysis(base, T):
    """Weighted Jacobians of [q/σ_q, w_tip/σ_w] with respect to ln p, for the cases in CASES."""
    opts = dataclasses.replace(base.options, throw=False, adjoint=diffrax.ForwardMode())
    base = base.replace(saveat=jnp.asarray(T), t1=float(T[-1]), options=opts, rtol=FIT_TOL, atol=FIT_TOL)

    @jax.jit
    def jac(logp, amplitude, I_):
        def pred(logp):
            s = ds.set_params(base, {**dict(zip(NAMES, jnp.exp(logp))), "beam.arm.I_y": I_})
            tr = ds.simulate(s.replace(loads=as_loads(pulse(amplitude))))
            return jnp.concatenate([tr.q[:, 0] / SIGMA_Q, tip_deflection(tr) / SIGMA_TIP])

        return jax.jacfwd(pred)(logp)

    cases = {}
    n = len(T)
    for label, p, I_, amp in (("this link", (KV, GAMMA, EI), I_Y, 0.0), ("this link", (KV, GAMMA, EI), I_Y, PULSE_A),
                              ("S1 values", (S1["K_v"], S1["gamma"], S1["EI"]), S1["I"], PULSE_A)):
        J = np.asarray(jac(jnp.log(jnp.asarray(p)), amp, I_))
        for sensors, rows in (("encoder", slice(0, n)), ("encoder + tip", slice(0, 2 * n))):
            Jr = J[rows]
            _, sv, Vt = np.linalg.svd(Jr, full_matrices=False)  # Cov = V S⁻² Vᵀ, no direction dropped
            cov = (Vt.T / sv**2) @ Vt
            verdict = idf.identifiability(Jr, NAMES, 1.0)
            key = f"{label}, {'pulse' if amp else 'free'}, {sensors}"
            cases[key] = {"relative_std": dict(zip(NAMES, np.sqrt(np.diag(cov)))),
                          "identifiable": verdict["identifiable"],
                          "directions": [d["combination_text"] for d in verdict["directions"]],
                          "singular_values": verdict["singular_values"],
                          "correlation_Kv_gamma": float(cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1]))}
    return cases


# ----------------------------------------------------------------------------------------
# 3–4. Data and fits
# ----------------------------------------------------------------------------------------


def measure(model, amplitude, T, channels, seed, name):
    """Noisy data from the true model, integrated at DATA_TOL."""
    s = make_system(model, amplitude, DATA_TOL).replace(saveat=jnp.asarray(T), t1=float(T[-1]))
    tr = ds.simulate(s)
    assert tr.status == ds.Status.SUCCESS, tr.status
    rng = np.random.default_rng(seed)
    clean = {"q.arm": np.asarray(tr.q[:, :1]), "tip.deflection": np.asarray(tip_deflection(tr))}
    sigma = {"q.arm": SIGMA_Q, "tip.deflection": SIGMA_TIP}
    data = {ch: clean[ch] + sigma[ch] * rng.standard_normal(clean[ch].shape) for ch in channels}
    exp = idf.Experiment(T, data, sigma={ch: sigma[ch] for ch in channels}, name=name, tau=pulse(amplitude))
    return exp, clean


def run_fit(model, exp, label):
    start = ds.set_params(make_system(model, 0.0, FIT_TOL), START)
    t0 = time.perf_counter()
    res = idf.fit(start, NAMES, exp, observables=OBSERVABLES, max_steps=MAX_STEPS, rtol=LM_TOL, atol=LM_TOL)
    wall = time.perf_counter() - t0
    print(f"--- fit {label} ({wall:.1f} s incl. compile)\n{res.summary()}")
    res.save(OUT / f"fit_{label}")
    params = {}
    for n in NAMES:
        lo, hi = (float(x) for x in res.ci95[n])
        params[n] = {"true": TRUE[n], "initial": START[n], "fitted": float(res.value[n]), "std": float(res.std[n]),
                     "relative_std": float(res.std[n] / res.value[n]), "ci95": [lo, hi],
                     "truth_inside_ci95": bool(lo < TRUE[n] < hi),
                     "error_in_std": float((res.value[n] - TRUE[n]) / res.std[n])}
    dof = res.n_samples - len(NAMES)
    return res, {"experiment": exp.name, "channels": list(exp.data), "params": params, "converged": res.converged,
                 "status": res.status, "iterations": res.iterations, "cost": res.cost, "n_samples": res.n_samples,
                 "chi2_per_dof": 2 * res.cost / dof, "identifiable": res.identifiable["identifiable"],
                 "not_determined": [d["combination_text"] for d in res.identifiable["directions"]],
                 "singular_values": res.identifiable["singular_values"],
                 "correlation": {"names": res.flat_names, "matrix": res.correlation}, "wall_s": wall}


# ----------------------------------------------------------------------------------------
# Figures and README
# ----------------------------------------------------------------------------------------


def _plot_data(T, exps, clean, path):
    fig, axes = new_figure(3, 1, figsize=(9.0, 8.0), sharex=True)
    for (name, exp), style in zip(exps.items(), ("C0", "C3")):
        axes[0].plot(T, clean[name]["q.arm"][:, 0], "-", color=style, lw=1.0, label=f"{name}: true")
        if "q.arm" in exp.data:
            axes[0].plot(T, exp.data["q.arm"][:, 0], ".", color=style, ms=1.5)
        # the vibration in the joint angle: q high-pass filtered above 5 Hz (zero phase), which
        # removes the 0.5 Hz swing and its harmonics and keeps the 7 and 19 Hz modes
        sos = signal.butter(8, 5.0, "highpass", fs=1.0 / (T[1] - T[0]), output="sos")
        hp = signal.sosfiltfilt(sos, clean[name]["q.arm"][:, 0])
        axes[1].plot(T, 1e3 * hp, "-", color=style, lw=0.8, label=f"{name}: q high-passed > 5 Hz")
        axes[2].plot(T, 1e3 * clean[name]["tip.deflection"], "-", color=style, lw=0.8, label=f"{name}: true")
        if "tip.deflection" in exp.data:
            axes[2].plot(T, 1e3 * exp.data["tip.deflection"], ".", color=style, ms=1.5, label=f"{name}: measured")
    axes[1].axhline(1e3 * SIGMA_Q, color="k", ls=":", lw=0.8)
    axes[1].axhline(-1e3 * SIGMA_Q, color="k", ls=":", lw=0.8, label="± σ_q")
    axes[0].set_ylabel("joint angle q [rad]")
    axes[1].set_ylabel("vibration in q [mrad]")
    axes[2].set_ylabel("tip deflection w(L) [mm]")
    axes[2].set_xlabel("t [s]")
    axes[0].set_title("measured swings (dots: data with noise; lines: noise-free truth)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    save_figure(fig, path)


def _plot_design(cases, path):
    keys = list(cases)
    fig, ax = new_figure(figsize=(10.0, 4.4))
    width = 0.8 / len(NAMES)
    x = np.arange(len(keys))
    for k, n in enumerate(NAMES):
        rs = [cases[c]["relative_std"][n] for c in keys]
        ax.bar(x + (k - 1) * width, rs, width, label=SYMBOL[n])
    ax.axhline(1.0, color="k", ls="--", lw=0.8, label="100 % (verdict threshold)")
    ax.set_yscale("log")
    ax.set_xticks(x, [c.replace(", ", "\n", 1) for c in keys], fontsize=7)
    ax.set_ylabel("predicted relative std σ_p / p")
    ax.set_title("design analysis at the truth: what each experiment and sensor set can determine")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    save_figure(fig, path)


def _readme(s) -> str:
    modal = s["modal_analysis"]
    lines = [
        "# Identifying K_v, γ and EI of a flexible link from its swing",
        "",
        "Generated by `python experiments/identify_flexible_link.py` (physics and equations in its docstring).",
        "",
        ("Link: L = 1 m, μ = 1 kg/m, EI = 34 N m², E = 2e11 Pa (I = EI/E), tip mass 0.2 kg, hub 1 kg / 0.05 kg m², "
        f"{N_MODES} clamped–free bending modes in the swing plane. Truth: K_v = {KV:g}, γ = {GAMMA:g} kg/(m s), "
        f"EI = {EI:g} N m². Released at rest from q₀ = {Q0} rad, 2 s at 200 Hz ({N_SAMPLES} samples). "
        f"Data: diffsim at rtol = atol = {DATA_TOL:g} + Gaussian noise (σ_q = {SIGMA_Q:g} rad encoder, "
        f"σ_w = {SIGMA_TIP:g} m tip sensor, seeds {SEED} (free) and {SEED + 1} (pulse)); fits at rtol = atol = {FIT_TOL:g}."),
        "",
        "## Modes (linearised at the hanging equilibrium, hub free)",
        "",
        "| mode | f [Hz] | ζ (both) | ζ (γ only) | ζ (K_v only) |",
        "|---|---|---|---|---|",
    ]
    for k in range(N_MODES):
        lines.append(f"| {k + 1} | {modal['f_hz'][k]:.3f} | {modal['zeta'][k]:.4f} | {modal['zeta_air_only'][k]:.4f} "
                     f"| {modal['zeta_kv_only'][k]:.4f} |")
    lines += ["", (f"With S1's link values (K_v = 125, γ = 0.025, EI = 976.6, I = 4.883e-9; same L, μ, hub and tip): f = "
              f"{', '.join(f'{f:.1f}' for f in modal['s1_f_hz'])} Hz, ζ = "
              f"{', '.join(f'{z:.2e}' for z in modal['s1_zeta'])}."), "",
              "## Design analysis (Fisher information at the truth, before fitting)", "",
              "Predicted relative standard deviation σ_p/p of each parameter (same noise, same 2 s record):", "",
              "| case | σ(K_v)/K_v | σ(γ)/γ | σ(EI)/EI | corr(K_v, γ) | verdict |", "|---|---|---|---|---|---|"]
    for key, c in s["design"].items():
        rs = c["relative_std"]
        verdict = "identifiable" if c["identifiable"] else "NOT: " + "; ".join(c["directions"])
        lines.append(f"| {key} | {rs[NAMES[0]]:.3g} | {rs[NAMES[1]]:.3g} | {rs[NAMES[2]]:.3g} | "
                     f"{c['correlation_Kv_gamma']:+.3f} | {verdict} |")
    for key, f in s["fits"].items():
        lines += ["", f"## Fit {key}: experiment `{f['experiment']}`, channels {', '.join(f['channels'])}", "",
                  f"{f['status']} after {f['iterations']} iterations, {f['wall_s']:.1f} s wall (incl. compile); "
                  f"cost {f['cost']:.2f} for {f['n_samples']} samples (χ²/dof = {f['chi2_per_dof']:.3f}); verdict: "
                  + ("identifiable" if f["identifiable"] else "NOT identifiable — " + "; ".join(f["not_determined"]))
                  + ".", "",
                  "| parameter | true | initial | fitted | std | rel. std | 95 % CI | truth inside | (fit − true)/std |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for n, p in f["params"].items():
            lines.append(f"| {SYMBOL[n]} (`{n}`) | {p['true']:.6g} | {p['initial']:.6g} | {p['fitted']:.6g} | "
                         f"{p['std']:.3g} | {100 * p['relative_std']:.2g} % | [{p['ci95'][0]:.6g}, {p['ci95'][1]:.6g}] | "
                         f"{'yes' if p['truth_inside_ci95'] else '**no**'} | {p['error_in_std']:+.2f} |")
        C = np.asarray(f["correlation"]["matrix"])
        lines += ["", f"Correlations: K_v–γ {C[0, 1]:+.3f}, K_v–EI {C[0, 2]:+.3f}, γ–EI {C[1, 2]:+.3f}."]
    lines += ["", "## Reading", "", s["reading"], "",
              ("Files: `summary.json` (all numbers), `data.png` (the two swings, the vibration riding on the joint "
              "angle, the tip deflection), `design.png` (predicted relative std per case), `fit_free_encoder/`, "
              "`fit_pulse_encoder/`, `fit_pulse_encoder_tip/` (`fit.json`, model vs data with weighted residuals, correlation matrix)."),
              "", f"Total wall time {s['wall_s']:.0f} s on this machine (2 cores, shared).", ""]
    return "\n".join(lines)


def _reading(s) -> str:
    f, d, m = s["fits"], s["design"], s["modal_analysis"]

    def rs(fit, k):
        return f"{100 * f[fit]['params'][NAMES[k]]['relative_std']:.2g} %"

    def verdict(fit):
        v = f[fit]
        inside = all(p["truth_inside_ci95"] for p in v["params"].values())
        return (f"verdict {'identifiable' if v['identifiable'] else 'NOT identifiable'}, "
                f"{'every true value inside its 95 % interval' if inside else 'NOT every true value inside its 95 % CI'}"
                f", {v['status']} after {v['iterations']} iterations")

    air = [a / z for a, z in zip(m["zeta_air_only"], m["zeta"])]
    s1 = d["S1 values, pulse, encoder + tip"]
    corr = [f[k]["correlation"]["matrix"][0][1] for k in ("A", "B", "C")]
    return (
        f"Mode 1 ({m['f_hz'][0]:.2f} Hz, ζ = {m['zeta'][0]:.2%}) is damped {air[0]:.0%} by air, mode 2 "
        f"({m['f_hz'][1]:.2f} Hz, ζ = {m['zeta'][1]:.2%}) {1 - air[1]:.0%} by Kelvin–Voigt (eq. 4): the data separate "
        f"γ from K_v only as far as they resolve both decays. "
        f"A — free swing, encoder only: the gravity release excites mostly mode 1, which the joint angle sees "
        f"through the inertia coupling; EI is determined to {rs('A', 2)}, K_v to {rs('A', 0)}, γ only to "
        f"{rs('A', 1)} ({verdict('A')}). The verdict's threshold is 100 % relative std, so γ passes it although "
        f"its interval spans a factor of several: the free swing essentially measures one damping combination. "
        f"B — the same release with a {PULSE_A:g} N m, {1e3 * PULSE_T:g} ms torque pulse, encoder only: the pulse "
        f"excites mode 2, and the joint trajectory alone gives K_v to {rs('B', 0)}, γ to {rs('B', 1)}, EI to "
        f"{rs('B', 2)} ({verdict('B')}). C — adding the tip-deflection sensor: K_v {rs('C', 0)}, γ {rs('C', 1)}, "
        f"EI {rs('C', 2)} ({verdict('C')}); with this excitation the tip channel adds little, as the design table "
        f"predicted. K_v and γ remain anti-correlated (corr {corr[0]:+.2f}, {corr[1]:+.2f}, {corr[2]:+.2f} in A, B, C): "
        f"both damp mode 1. At S1's published values (steel link, K_v = 125, γ = 0.025) the same pulse experiment "
        f"with both sensors would determine γ only to about {s1['relative_std'][NAMES[1]]:.0%} and K_v not at all (predicted "
        f"relative std {s1['relative_std'][NAMES[0]]:.3g}; the Kelvin–Voigt damping ratio is only "
        f"{max(m['s1_zeta_kv_only']):.1e}): S1's structural damping is far below what a few-second swing can measure."
    )


def main():
    t_start = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    model = build_model()
    T = np.linspace(0.0, T_END, N_SAMPLES)

    # 1. modes
    f, z = modal_analysis(model)
    _, z_air = modal_analysis(build_model(Kv=0.0))
    _, z_kv = modal_analysis(build_model(gamma=0.0))
    f_s1, z_s1 = modal_analysis(build_model(Kv=S1["K_v"], gamma=S1["gamma"], EI_=S1["EI"], I_=S1["I"]))
    _, z_s1_kv = modal_analysis(build_model(Kv=S1["K_v"], gamma=0.0, EI_=S1["EI"], I_=S1["I"]))
    modal = {"f_hz": f, "zeta": z, "zeta_air_only": z_air, "zeta_kv_only": z_kv, "s1_f_hz": f_s1, "s1_zeta": z_s1,
             "s1_zeta_kv_only": z_s1_kv}
    print("modes [Hz]", f, "zeta", z, "(air only", z_air, ", K_v only", z_kv, ")")

    # data (one compiled simulation: the free swing is the pulse with A = 0)
    t0 = time.perf_counter()
    exp_free, clean_free = measure(model, 0.0, T, ["q.arm"], SEED, "free")
    exp_pulse, clean_pulse = measure(model, PULSE_A, T, ["q.arm", "tip.deflection"], SEED + 1, "pulse")
    # the same pulse record, encoder channel only (same noise realisation)
    exp_pulse_q = idf.Experiment(T, {"q.arm": exp_pulse.data["q.arm"]}, sigma={"q.arm": SIGMA_Q}, name="pulse",
                                 tau=exp_pulse.tau)
    wall_data = time.perf_counter() - t0
    _plot_data(T, {"free": exp_free, "pulse": exp_pulse}, {"free": clean_free, "pulse": clean_pulse},
               OUT / "data.png")

    # 2. design
    t0 = time.perf_counter()
    design = design_analysis(make_system(model, 0.0, FIT_TOL), T)
    wall_design = time.perf_counter() - t0
    for k, c in design.items():
        print(f"design {k:40s}", {SYMBOL[n]: f"{v:.3g}" for n, v in c["relative_std"].items()}, c["identifiable"])
    _plot_design(design, OUT / "design.png")

    # 3–4. fits
    fits = {"A": run_fit(model, exp_free, "free_encoder")[1],
            "B": run_fit(model, exp_pulse_q, "pulse_encoder")[1],
            "C": run_fit(model, exp_pulse, "pulse_encoder_tip")[1]}

    summary = {
        "setup": {"L_m": LENGTH, "mu_kg_per_m": MU, "E_Pa": E_MOD, "I_y_m4": I_Y, "tip_mass_kg": TIP_MASS,
                  "hub_mass_kg": HUB_MASS, "hub_inertia_kg_m2": HUB_INERTIA, "modes": f"{N_MODES} clamped-free EB (max)",
                  "q0_rad": Q0, "pulse": {"A_Nm": PULSE_A, "T_p_s": PULSE_T, "shape": "A sin^2(pi t/T_p), t < T_p"},
                  "t_end_s": T_END, "n_samples": N_SAMPLES, "sigma_q_rad": SIGMA_Q, "sigma_tip_m": SIGMA_TIP,
                  "seed": SEED, "data_tol": DATA_TOL, "fit_tol": FIT_TOL, "lm_tol": LM_TOL, "max_steps": MAX_STEPS,
                  "solver": "tsit5 (System default)"},
        "true": TRUE, "initial": START,
        "modal_analysis": modal,
        "design": design,
        "fits": fits,
        "wall_s_data_incl_compile": wall_data, "wall_s_design_incl_compile": wall_design,
    }
    summary["reading"] = _reading(summary)
    summary["wall_s"] = time.perf_counter() - t_start
    write_json(OUT / "summary.json", summary)
    (OUT / "README.md").write_text(_readme(summary))
    print(summary["reading"])
    print(f"wall {summary['wall_s']:.1f} s")
    return summary


if __name__ == "__main__":
    main()
