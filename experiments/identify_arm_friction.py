"""Identification (issue 14, item 4): viscous and Coulomb joint friction of a two-link arm from
joint-angle data.

System. A two-link arm in a vertical plane (revolute joints about the world y axis, gravity
−9.81 m/s² along z): link 1 (1.0 kg, 0.5 m, centre of mass 0.25 m from the shoulder), link 2 (0.8
kg, centre of mass 0.2 m from the elbow). Every joint carries the friction law of
:func:`diffsim.model.model.joint_passive_forces`,

    τ_f,j = − d_j q̇_j − F_j tanh(q̇_j / ε),      ε = 0.01 rad/s,                      (1)

with ``d_j = joint.<j>.damping`` (viscous, N m s/rad) and ``F_j = joint.<j>.frictionloss``
(Coulomb, N m). Truth: d = (0.08, 0.05), F = (0.15, 0.10).

Why the two laws separate. (1) is linear in (d_j, F_j) with regressors ``q̇_j`` and
``tanh(q̇_j/ε) ≈ sgn q̇_j``. They are collinear only if ``|q̇_j|`` were constant; a torque that
makes each joint swing back and forth with a varying speed (here two incommensurate sinusoids
per joint, the arm hanging under gravity) makes the work of viscous friction grow with speed
(``∫ d q̇² dt``) and that of Coulomb friction with distance (``∫ F |q̇| dt``): fast sweeps
weigh d, slow ones and the reversals weigh F. Their estimates are still correlated — the
correlation reported below is the price of that partial collinearity — but not degenerate.

Data. The truth is simulated with tsit5 at rtol = atol = 1e-12; both joint angles are sampled
at 50 Hz for 6 s and Gaussian noise σ = 1e-4 rad is added (seed 7). The fit
(:func:`diffsim.identify.fit`: Levenberg–Marquardt, forward-mode Jacobian through diffrax, the
model integrated at rtol = atol = 1e-9) starts with every friction parameter 30–40 % off and
reports Gauss–Newton standard deviations (σ known, so no rescaling), 95 % intervals (in the
log-parametrisation, hence asymmetric) and the identifiability verdict.

    python experiments/identify_arm_friction.py     # -> experiments/results/identify-arm-friction/
"""

from __future__ import annotations

import os
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np

import diffsim as ds
from diffsim import identify as idf
from diffsim.io.results import provenance, write_json

OUT = Path(__file__).parent / "results" / "identify-arm-friction"
TRUTH = {"joint.shoulder.damping": 0.08, "joint.elbow.damping": 0.05,
         "joint.shoulder.frictionloss": 0.15, "joint.elbow.frictionloss": 0.10}
START_FACTOR = {"joint.shoulder.damping": 1.4, "joint.elbow.damping": 0.65,
                "joint.shoulder.frictionloss": 0.7, "joint.elbow.frictionloss": 1.35}
WIDTH = 0.01  # rad/s, ε of (1)
SIGMA = 1e-4  # rad
SEED = 7
T = np.linspace(0.0, 6.0, 301)
Q0 = (np.pi / 2 - 0.4, 0.3)  # rad: link 1 0.4 rad off hanging straight down, elbow bent 0.3 rad
Q0_RELEASE = (np.pi / 2 - 1.2, 0.8)  # rad: the contrast case, released from rest


def arm(values=TRUTH):
    """The two-link arm of the module docstring with the given friction values."""
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("link1", joint="revolute", joint_name="shoulder", axis=[0, 1, 0], mass=1.0, com=[0.25, 0, 0],
               inertia=(0.001, 0.021, 0.021), damping=values["joint.shoulder.damping"],
               frictionloss=values["joint.shoulder.frictionloss"], friction_width=WIDTH)
    b.add_body("link2", "link1", joint="revolute", joint_name="elbow", axis=[0, 1, 0], pos=[0.5, 0, 0], mass=0.8,
               com=[0.2, 0, 0], inertia=(0.001, 0.011, 0.011), damping=values["joint.elbow.damping"],
               frictionloss=values["joint.elbow.frictionloss"], friction_width=WIDTH)
    return b.build()


def drive(t, q, v):
    """Joint torques [N m]: two incommensurate sinusoids per joint (speeds from 0 to ~6 rad/s)."""
    return jnp.stack([1.2 * jnp.sin(2.1 * t) + 0.6 * jnp.sin(4.7 * t + 0.3),
                      0.5 * jnp.sin(3.3 * t + 1.0) + 0.25 * jnp.sin(6.1 * t)])


def measure(truth: ds.System, seed: int, name: str, tau):
    """Noisy joint angles of the true arm, and its noise-free velocities (for the report)."""
    tr = ds.simulate(truth.replace(saveat=jnp.asarray(T), t1=float(T[-1])))
    assert tr.message == "success", tr.message
    rng = np.random.default_rng(seed)
    q = np.asarray(tr.q) + SIGMA * rng.standard_normal((T.size, 2))
    exp = idf.Experiment(T, {"q.shoulder": q[:, :1], "q.elbow": q[:, 1:]},
                         sigma={"q.shoulder": SIGMA, "q.elbow": SIGMA}, tau=tau, name=name)
    return exp, np.asarray(tr.v)


def run_case(name: str, q0, tau, seed: int, out: Path) -> dict:
    """Simulate the data of one experiment, fit the four friction parameters from the common
    start, save the fit's files to ``out`` and return the numbers."""
    t0 = time.perf_counter()
    truth = ds.System(arm(), jnp.asarray(q0), tau=tau, t1=float(T[-1]), rtol=1e-12, atol=1e-12)
    exp, v_true = measure(truth, seed, name, tau)
    data_wall = time.perf_counter() - t0
    names = list(TRUTH)
    initial = {n: TRUTH[n] * START_FACTOR[n] for n in names}
    t0 = time.perf_counter()
    res = idf.fit(truth.replace(rtol=1e-9, atol=1e-9), names, exp, initial=initial, max_steps=100)
    fit_wall = time.perf_counter() - t0
    print(f"[{name}]", res.summary())
    res.save(out)
    params = {}
    for n in names:
        lo, hi = (float(np.ravel(x)[0]) for x in res.ci95[n])  # joint parameters have shape (nv_j,) = (1,)
        val, sd = float(np.ravel(res.value[n])[0]), float(np.ravel(res.std[n])[0])
        params[n] = {"true": TRUTH[n], "initial": initial[n], "value": val, "std": sd, "ci95": [lo, hi],
                     "inside_ci95": bool(lo < TRUTH[n] < hi), "z": (val - TRUTH[n]) / sd, "rel_std": sd / abs(val)}
    fl = res.flat_names
    corr = {j: float(res.correlation[fl.index(f"joint.{j}.damping[0]"), fl.index(f"joint.{j}.frictionloss[0]")])
            for j in ("shoulder", "elbow")}
    dof = res.n_samples - len(names)
    return {
        "name": name, "q0": list(q0), "driven": tau is not None, "seed": seed,
        "params": params, "correlation_viscous_coulomb": corr, "correlation": {"names": fl, "matrix": res.correlation},
        "status": res.status, "converged": res.converged, "iterations": res.iterations,
        "cost": res.cost, "n_samples": res.n_samples, "expected_cost": dof / 2, "expected_cost_sd": np.sqrt(dof / 2),
        "identifiable": res.identifiable,
        "all_inside_ci95": all(p["inside_ci95"] for p in params.values()),
        "max_rel_std_percent": 100 * max(p["rel_std"] for p in params.values()),
        "max_speed": np.abs(v_true).max(0),
        "reversals": [int(np.sum(np.diff(np.sign(v_true[:, k])) != 0)) for k in range(2)],
        "data_wall_s": data_wall, "fit_wall_s": fit_wall,
    }


def _table(c) -> str:
    rows = ["| parameter | true | initial | fitted | std | 95 % CI | truth inside? | (fit − true)/std |",
            "|---|---|---|---|---|---|---|---|"]
    for n, r in c["params"].items():
        rows.append(f"| `{n}` | {r['true']:.4g} | {r['initial']:.4g} | {r['value']:.6g} | {r['std']:.2g} | "
                    f"[{r['ci95'][0]:.6g}, {r['ci95'][1]:.6g}] | {'yes' if r['inside_ci95'] else '**no**'} | "
                    f"{r['z']:+.2f} |")
    v = c["identifiable"]
    verdict = "identifiable" if v["identifiable"] else "NOT identifiable: " + "; ".join(
        d["combination_text"] for d in v["directions"])
    sv = ", ".join(f"{x:.3g}" for x in v["singular_values"])
    corr = ", ".join(f"{j} **{x:+.3f}**" for j, x in c["correlation_viscous_coulomb"].items())
    return f"""Fit status **{c['status']}** after {c['iterations']} Levenberg–Marquardt iterations (fit wall
{c['fit_wall_s']:.1f} s incl. compilation); cost ½χ² = {c['cost']:.1f} for {c['n_samples']} samples (expected
(N − P)/2 = {c['expected_cost']:.0f} ± {c['expected_cost_sd']:.0f}). Joint speeds reach |q̇| =
{c['max_speed'][0]:.2f} / {c['max_speed'][1]:.2f} rad/s (shoulder / elbow) and reverse
{c['reversals'][0]} / {c['reversals'][1]} times.

{chr(10).join(rows)}

Verdict: **{verdict}** (singular values of the relative-parameter Jacobian: {sv}).
Correlation of viscous and Coulomb friction of the same joint: {corr}."""


def _readme(s) -> str:
    d, r = s["cases"]["driven-swing"], s["cases"]["released"]
    ratio = [r["params"][n]["std"] / d["params"][n]["std"] for n in TRUTH]
    corr_d, corr_r = (", ".join(f"{j} **{x:+.3f}**" for j, x in c["correlation_viscous_coulomb"].items())
                      for c in (d, r))
    return f"""# Joint viscous and Coulomb friction of a two-link arm from joint angles (issue 14, item 4)

`python experiments/identify_arm_friction.py` — wall {s['wall_s']:.0f} s on this machine (2 fits,
compilation included). Physics and method: the script's docstring.

Two-link arm in a vertical plane under gravity, revolute joints with friction
`τ_f = −d q̇ − F tanh(q̇/ε)`, ε = {WIDTH} rad/s; truth d = (0.08, 0.05) N m s/rad, F = (0.15, 0.10)
N m. Data: both joint angles, {T.size} samples over {T[-1]:.0f} s, Gaussian noise σ = {SIGMA:g} rad;
truth simulated at rtol = atol = 1e-12, the model in the fit at 1e-9. Every fit starts from the
same point, each parameter 30–40 % off (column *initial*). A direction is reported as
undetermined when its relative standard deviation exceeds 1 (`diffsim.identify.fit`).

## Main result: driven swing

Torques of two sinusoids per joint (`drive` in the script) from q0 = ({Q0[0]:.4f}, {Q0[1]:.4f}) rad,
noise seed {d['seed']}.

{_table(d)}

All four parameters are recovered to {d['max_rel_std_percent']:.2g} % (largest relative std) with
the truth inside every 95 % interval: **{d['all_inside_ci95']}**.

## Contrast: released from an angle, no torque

The same arm released from rest at q0 = ({r['q0'][0]:.4f}, {r['q0'][1]:.4f}) rad, noise seed
{r['seed']}: only the free decay carries the friction information.

{_table(r)}

Truth inside every 95 % interval: **{r['all_inside_ci95']}**. The standard deviations are
{min(ratio):.1f}–{max(ratio):.1f} times those of the driven swing.

## Reading the correlations

corr(viscous, Coulomb) of the same joint: driven {corr_d}; released {corr_r}. A negative value is
the expected sign: more viscous and less Coulomb friction dissipate about the same energy over a
swing (works `∫ d q̇² dt` and `∫ F |q̇| dt`), so the data trade one against the other. They are
separated because the ratio of those two works changes with the speed — the drive sweeps the
joints over a range of speeds, and in the free release the amplitude decays — so the
correlation stays below 1 in magnitude and every parameter is determined. The elbow shows
stick–slip in the driven swing (the plateaus of `q.elbow` in `driven-swing/fit_driven-swing.png`),
where Coulomb friction holds the joint.

Files: `summary.json` (all numbers), and per experiment (`driven-swing/`, `released/`)
`fit.json` (the `diffsim fit` contract), `fit_<experiment>.png` (model vs data and weighted
residuals), `correlation.png`.
"""


def main():
    t_start = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    cases = {
        "driven-swing": run_case("driven-swing", Q0, drive, SEED, OUT / "driven-swing"),
        "released": run_case("released", Q0_RELEASE, None, SEED + 1, OUT / "released"),
    }
    summary = {
        "experiment": "identify-arm-friction (issue 14, item 4)",
        "truth": TRUTH, "start_factor": START_FACTOR, "friction_width": WIDTH, "sigma_rad": SIGMA,
        "t": {"t1": float(T[-1]), "samples": int(T.size)}, "data_rtol": 1e-12, "fit_rtol": 1e-9,
        "cases": cases,
        "all_inside_ci95": all(c["all_inside_ci95"] for c in cases.values()),
        "wall_s": time.perf_counter() - t_start,
        "code": provenance(),
    }
    write_json(OUT / "summary.json", summary)
    (OUT / "README.md").write_text(_readme(summary))
    for c in cases.values():
        print(f"{c['name']}: inside 95 % CI {c['all_inside_ci95']}, corr {c['correlation_viscous_coulomb']}")
    print(f"wall {summary['wall_s']:.1f} s")
    return summary


if __name__ == "__main__":
    main()
