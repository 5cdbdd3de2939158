"""Spin-up beam (Kane, Ryan & Banerjee 1987): convergence in the number of modes, agreement
with a geometrically nonlinear reference, and the divergence of the linear model.

Reference: Exudyn's geometrically exact (Simo–Reissner) planar beam, 32 elements, generalized-α
h = 2.5e-4 s (benchmarks/exudyn_models.py; its own discretisation error ≈ 7e-5 m). It includes
axial stretch and shear (GA = EA), which diffsim's inextensible Euler–Bernoulli model does not.

    python experiments/spinup_beam.py     # -> experiments/results/spin-up-beam/
"""

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

from diffsim.scenarios.base import write_json  # noqa: E402
from diffsim.scenarios.spinup import reached, run_spinup  # noqa: E402
from diffsim.viz.plots import plot_series  # noqa: E402

ROOT = Path(__file__).parent
OUT = ROOT / "results" / "spin-up-beam"
REF = ROOT / "results" / "exudyn_reference"
MODES = (1, 2, 3, 4, 5)


def main(quick=False):
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {"reference": "Exudyn ObjectBeamGeometricallyExact2D, 32 elements, h = 2.5e-4 s", "omega_s": {}}
    modes = (1, 2) if quick else MODES
    for ws in (6.0, 4.0):
        ref = np.load(REF / f"spinup_ws{int(ws)}.npz")
        curves, rows = {}, {}
        tips = {}
        for n in modes:
            t0 = time.perf_counter()
            traj, tip, _, torque = run_spinup(n, True, ws, n_save=601)
            tip = np.asarray(tip)
            wall = time.perf_counter() - t0
            t = np.asarray(traj.t)
            tips[n] = tip
            r = np.interp(t, ref["t"], ref["tip_deflection"])
            rows[n] = {"status": traj.message, "num_steps": int(traj.num_steps), "wall_s_incl_compile": wall,
                       "tip_min_m": float(tip.min()), "tip_final_m": float(tip[-1]),
                       "max_abs_diff_vs_reference_m": float(np.max(np.abs(tip - r)))}
            curves[f"diffsim, {n} mode{'s' if n > 1 else ''}"] = (t, tip)
            print(f"ωs={ws} n={n}: {rows[n]}", flush=True)
        nmax = max(modes)
        for n in modes:
            rows[n]["max_abs_diff_vs_{}_modes_m".format(nmax)] = float(np.max(np.abs(tips[n] - tips[nmax])))
        curves["Exudyn geometrically exact beam"] = (ref["t"], ref["tip_deflection"])
        plot_series(curves, OUT / f"tip_deflection_ws{int(ws)}.png", ylabel="tip deflection in hub frame [m]",
                    title=f"spin-up beam with geometric stiffening, ωs = {ws:g} rad/s",
                    styles={"Exudyn geometrically exact beam": {"color": "k", "ls": "--", "lw": 1.0}})
        # the linear model without stiffening
        traj, tip, _, _ = run_spinup(4, False, ws, n_save=601)
        t, tip = np.asarray(traj.t), np.asarray(tip)
        ok = reached(t, tip)
        plot_series({"4 modes, no stiffening (linear model)": (t[ok], tip[ok]),
                     "4 modes, with stiffening": (t, tips[nmax] if nmax == 4 else tips[max(modes)])},
                    OUT / f"no_stiffening_ws{int(ws)}.png", ylabel="tip deflection [m]", ylim=(-5, 5),
                    title=f"spin-up beam, ωs = {ws:g} rad/s: the linear model diverges")
        summary["omega_s"][f"{ws:g}"] = {
            "with_stiffening": rows,
            "without_stiffening_4_modes": {"status": traj.message, "reached_t_s": float(t[ok][-1]),
                                           "max_abs_tip_m": float(np.max(np.abs(tip[ok])))},
            "reference_tip_min_m": float(ref["tip_deflection"].min()),
        }
    summary["figures"] = sorted(p.name for p in OUT.glob("*.png"))
    write_json(OUT / "summary.json", summary)
    print("written", OUT)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
