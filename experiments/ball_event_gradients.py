"""Sensitivities of the bouncing ball through its impacts: diffsim's forward-mode AD (the
sensitivity equations under the step controller, ``ds.ForwardSensitivity``, which fits use; and
diffrax's ``ForwardMode``, which differentiates the steps the state chose) and central
differences of diffsim against central differences of the independent SciPy model.

The quantities are the whole sensitivity history ``∂z(t_k)/∂p`` (241 samples over 1.2 s, 4 impacts)
for ``p = K`` and ``p = c_r`` at ``K = 8e5, c_r = 0.75`` (Hu–Guo law), the same history at the
samples in flight only (the ball off the plane, and not next to a contact sample), and the gradient
of a least-squares loss ``½ Σ_k (z_k − d_k)²`` against noisy data ``d`` (σ = 2e-5 m, as in the
identification experiment), the quantity a fit uses. AD is taken in log-parameters (tangents of
the state's size, which ``ForwardSensitivity`` holds to the state's tolerances) and divided by
``p``; the relative errors below do not depend on that scaling. The reference is central differences of
``tests/ball_reference.py`` at rtol 1e-13 with the relative step 1e-6; steps 1e-5 and 1e-6 agree to
the reported ``reference_step_agreement``: central differences converge as h² except right after an
onset, where the contact force grows as δ^1.5 and z(t; p) is only C² in p at a sample that changes
phase (the 1e-5 step is off by ~2e-5 of the largest c_r entry there, the 1e-6 step ~100× less).
Errors are ``max_k |x_k − ref_k| / max_k |ref_k|`` per parameter (loss gradient: relative error per
component), at diffsim tolerances rtol = atol = 1e-6 … 1e-12 (diffsim FD relative step 1e-5).

Run: ``python experiments/ball_event_gradients.py`` (~5 min) → ``results/ball-event-gradients/``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import diffsim as ds  # noqa: E402
from diffsim.io.results import provenance, write_json  # noqa: E402
from diffsim.scenarios.ball_drop import height, system  # noqa: E402
from diffsim.viz import new_figure, save_figure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from ball_reference import heights  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "ball-event-gradients"
P0 = {"K": 8e5, "c_r": 0.75}
TOLS = (1e-6, 1e-8, 1e-10, 1e-12)
ADJOINTS = {"ad": ds.ForwardSensitivity(), "ad_forwardmode": diffrax.ForwardMode()}


def jacobian(adjoint, tol, **overrides):
    """``z(p)`` (jitted) and ``∂z/∂p`` at ``P0`` with the given adjoint, AD in log-parameters."""
    s = system({"rtol": tol, "atol": tol, **overrides.pop("options", {})})
    s = s.replace(options=dataclasses.replace(s.options, adjoint=adjoint), **overrides)
    z = jax.jit(lambda p, s=s: height(ds.simulate(ds.set_params(s, {"contact.K": p[0], "contact.c_r": p[1]}))))
    p0 = jnp.array([P0["K"], P0["c_r"]])
    J = np.asarray(jax.jacfwd(lambda u: z(p0 * jnp.exp(u)))(jnp.zeros(2))) / np.asarray(p0)
    return z, J


def one_impact(tols=(1e-8, 1e-10, 1e-12), t1=0.35, n=61):
    """AD errors over the first impact and the flight after it (t ≤ t1): isolates one contact
    phase (the flight before it does not depend on K or c_r)."""
    t = np.linspace(0.0, t1, n)
    ref = {}
    for name in P0:
        h = P0[name] * 1e-6
        up, dn = dict(P0), dict(P0)
        up[name] += h
        dn[name] -= h
        ref[name] = (heights(t, rtol=1e-13, atol=1e-16, **up) - heights(t, rtol=1e-13, atol=1e-16, **dn)) / (2 * h)
    rows = []
    for tol in tols:
        row = {"rtol": tol}
        for key, adjoint in ADJOINTS.items():
            _, J = jacobian(adjoint, tol, saveat=jnp.asarray(t), options={"t1": t1})
            row.update({f"{key}_{nm}": float(np.max(np.abs(J[:, k] - ref[nm])) / np.max(np.abs(ref[nm])))
                        for k, nm in enumerate(P0)})
        rows.append(row)
        print("one impact", rows[-1])
    return rows


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    t = np.asarray(ds.simulate(system({})).t)
    ref = {}
    for name in P0:
        cols = []
        for hr in (1e-5, 1e-6):
            h = P0[name] * hr
            up, dn = dict(P0), dict(P0)
            up[name] += h
            dn[name] -= h
            cols.append((heights(t, rtol=1e-13, atol=1e-16, **up) - heights(t, rtol=1e-13, atol=1e-16, **dn)) / (2 * h))
        ref[name] = cols[1]
        ref[f"{name}_step_agreement"] = float(np.max(np.abs(cols[0] - cols[1])) / np.max(np.abs(cols[1])))
    z_ref = heights(t, rtol=1e-13, atol=1e-16, **P0)
    radius = 0.02
    in_contact = z_ref < radius
    flight = ~(in_contact | np.roll(in_contact, 1) | np.roll(in_contact, -1))
    data = z_ref + 2e-5 * np.random.default_rng(0).standard_normal(t.shape)
    ref_grad = {n: float(np.sum((z_ref - data) * ref[n])) for n in P0}
    rows = []
    for tol in TOLS:
        z, J = jacobian(ADJOINTS["ad"], tol)
        _, J_fm = jacobian(ADJOINTS["ad_forwardmode"], tol)
        p0 = jnp.array([P0["K"], P0["c_r"]])
        row = {"rtol": tol, "primal_max_abs_m": float(np.max(np.abs(np.asarray(z(p0)) - z_ref)))}
        for k, name in enumerate(P0):
            e = np.zeros(2)
            e[k] = 1e-5 * float(p0[k])
            fd = (np.asarray(z(p0 + e)) - np.asarray(z(p0 - e))) / (2 * e[k])
            scale = np.max(np.abs(ref[name]))
            row[f"ad_{name}"] = float(np.max(np.abs(J[:, k] - ref[name])) / scale)
            row[f"ad_forwardmode_{name}"] = float(np.max(np.abs(J_fm[:, k] - ref[name])) / scale)
            row[f"fd_{name}"] = float(np.max(np.abs(fd - ref[name])) / scale)
            row[f"ad_flight_{name}"] = float(np.max(np.abs(J[flight, k] - ref[name][flight])) / scale)
            row[f"ad_loss_grad_{name}"] = float(abs(np.sum((np.asarray(z(p0)) - data) * J[:, k]) - ref_grad[name])
                                                / abs(ref_grad[name]))
            if tol == TOLS[-1]:
                ref[f"ad_history_{name}"], ref[f"fd_history_{name}"] = J[:, k], fd
        rows.append(row)
        print(row)
    fig, axes = new_figure(2, 1, figsize=(8, 6), sharex=True)
    for ax, name in zip(axes, P0):
        ax.plot(t, ref[name], "k-", lw=1, label="SciPy model, central FD (reference)")
        ax.plot(t, ref[f"ad_history_{name}"], "C0--", lw=1, label=f"diffsim ForwardSensitivity, rtol {TOLS[-1]:g}")
        ax.set_ylabel(f"∂z/∂{name}")
        ax.legend(fontsize=8)
    axes[-1].set_xlabel("t [s]")
    save_figure(fig, OUT / "sensitivities.png")
    single = one_impact()
    summary = {"provenance": provenance(), "point": P0, "reference": "SciPy model, central FD, rtol 1e-13",
               "one_impact": single,
               "reference_step_agreement": {n: ref[f"{n}_step_agreement"] for n in P0}, "rows": rows,
               "wall_s": time.perf_counter() - t_start}
    write_json(OUT / "summary.json", summary)
    lines = ["# Ball sensitivities through impacts: diffsim AD and FD vs the independent model", "",
             "Generated by `python experiments/ball_event_gradients.py` (setup in its docstring).", "",
             "Max error of the sensitivity history relative to its largest entry:", "",
             "AD = `ds.ForwardSensitivity` (sensitivity equations under the step controller, what fits use); "
             "ForwardMode = diffrax's `ForwardMode` (the tangent of the steps the state chose); FD = central "
             "differences of diffsim (relative step 1e-5).", "",
             "| rtol = atol | AD ∂z/∂K | ForwardMode ∂z/∂K | FD ∂z/∂K | AD ∂z/∂c_r | ForwardMode ∂z/∂c_r | FD ∂z/∂c_r "
             "| AD ∂z/∂K, flight | AD ∂z/∂c_r, flight | AD ∂loss/∂K | AD ∂loss/∂c_r |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['rtol']:.0e} | {r['ad_K']:.1e} | {r['ad_forwardmode_K']:.1e} | {r['fd_K']:.1e} "
                     f"| {r['ad_c_r']:.1e} | {r['ad_forwardmode_c_r']:.1e} | {r['fd_c_r']:.1e} "
                     f"| {r['ad_flight_K']:.1e} | {r['ad_flight_c_r']:.1e} | {r['ad_loss_grad_K']:.1e} "
                     f"| {r['ad_loss_grad_c_r']:.1e} |")
    lines += ["", f"Reference step agreement (1e-5 vs 1e-6): K {ref['K_step_agreement']:.1e}, c_r "
              f"{ref['c_r_step_agreement']:.1e} (of the largest entry; {int(flight.sum())} of {t.size} samples in "
              "flight).", "",
              "One impact (t ≤ 0.35 s: the first contact phase and the flight after it), AD vs the reference:", "",
              "| rtol = atol | AD ∂z/∂K | ForwardMode ∂z/∂K | AD ∂z/∂c_r | ForwardMode ∂z/∂c_r |", "|---|---|---|---|---|"]
    lines += [f"| {r['rtol']:.0e} | {r['ad_K']:.1e} | {r['ad_forwardmode_K']:.1e} | {r['ad_c_r']:.1e} "
              f"| {r['ad_forwardmode_c_r']:.1e} |" for r in single]
    last = rows[-1]
    verdict = lambda e: "meets" if e <= 1e-5 else "misses"
    lines += ["",
              "Reading: diffrax's ForwardMode gives the exact derivatives of the discrete solution, whose *primal* "
              "error the step controller bounds (max |z − z_ref| over 1.2 s: "
              + ", ".join(f"{r['primal_max_abs_m']:.0e} m at rtol {r['rtol']:.0e}" for r in rows)
              + ") but whose tangent it does not see: the tangent equation's coefficient ∂F/∂δ ∝ K δ^0.5 is not "
              "smooth at the onset, so the tangent's local error there is of low order and uncontrolled "
              f"(∂z/∂K off by {single[-1]['ad_forwardmode_K']:.0e} after one impact at rtol {single[-1]['rtol']:.0e}, "
              f"{last['ad_forwardmode_K']:.0e} after four). `ds.ForwardSensitivity` integrates the sensitivity "
              "equations with the state under the same controller (error norm: the larger of the state's and "
              "each direction's, CVODES's errconS) and moves each segment's end with its located event "
              "(implicit function theorem, so the next segment starts with S⁺ = S⁻ + (f⁻ − f⁺) ṫ_e): over the "
              f"four impacts at rtol {last['rtol']:.0e} ∂z/∂K is off by {last['ad_K']:.0e} "
              f"({verdict(last['ad_K'])} the 1e-5 aim) and ∂z/∂c_r by {last['ad_c_r']:.0e} "
              f"({verdict(last['ad_c_r'])} it); at rtol {rows[-2]['rtol']:.0e}: {rows[-2]['ad_K']:.0e} and "
              f"{rows[-2]['ad_c_r']:.0e}. What remains at the tightest tolerance is of the reference's own size "
              "(its step agreement above).", "",
              "![sensitivities](sensitivities.png)", ""]
    (OUT / "README.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
