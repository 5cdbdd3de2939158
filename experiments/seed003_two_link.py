"""S3 two-link flexible arm (seed 003): convergence in the number and kind of modes, and
agreement with a geometrically exact reference (Exudyn, 64 beam elements per link).

Both cases, clamped–free eigenfunctions (1, 2, 3 per link; the paper uses 1) and polynomial
shapes η², η³, … (2, 3 per link). Writes experiments/results/seed003/.

    python experiments/seed003_two_link.py
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
from diffsim.scenarios.seed003 import CASES, run_two_link  # noqa: E402
from diffsim.viz.plots import plot_series  # noqa: E402

ROOT = Path(__file__).parent
OUT = ROOT / "results" / "seed003"
REF = ROOT / "results" / "exudyn_reference"
SETS = (("cf", 1), ("cf", 2), ("cf", 3), ("poly", 2), ("poly", 3))


def main(quick=False):
    OUT.mkdir(parents=True, exist_ok=True)
    sets = SETS[:2] if quick else SETS
    summary = {"reference": "Exudyn ObjectBeamGeometricallyExact2D, 64 elements per link, h = 1.25e-5 s",
               "cases": {}}
    for case in CASES:
        ref = np.load(REF / f"two_link_{case}.npz")
        curves, torques, rows = {}, {}, {}
        for shapes, n in sets:
            t0 = time.perf_counter()
            traj, tip, tq = run_two_link(case, n, shapes=shapes)
            t, tip, tq = np.asarray(traj.t), np.asarray(tip), np.asarray(tq)
            r = np.interp(t, ref["t"], ref["tip_deflection"])
            key = f"{shapes} x{n}"
            rows[key] = {"status": traj.message, "num_steps": int(traj.num_steps),
                         "wall_s_incl_compile": time.perf_counter() - t0,
                         "tip_min_mm": 1e3 * float(tip.min()), "tip_max_mm": 1e3 * float(tip.max()),
                         "max_abs_diff_vs_reference_mm": 1e3 * float(np.max(np.abs(tip - r))),
                         "joint_torque_max_abs_Nm": np.abs(tq).max(0).tolist()}
            print(case, key, rows[key], flush=True)
            label = f"{'clamped–free eigenfunctions' if shapes == 'cf' else 'polynomials'}, {n} per link"
            curves[label] = (t, 1e3 * tip)
            torques[label] = (t, tq)
        curves["Exudyn geometrically exact beam"] = (ref["t"], 1e3 * ref["tip_deflection"])
        ref_style = {"Exudyn geometrically exact beam": {"color": "k", "ls": "--", "lw": 1.0}}
        plot_series(curves, OUT / f"tip_deflection_{case}.png", ylabel="link-2 tip deflection [mm]",
                    title=f"S3 {case}: one revolution", styles=ref_style)
        for k in (0, 1):
            plot_series({lab: (t, tq[:, k]) for lab, (t, tq) in torques.items()}, OUT / f"joint{k + 1}_torque_{case}.png",
                        ylabel=f"joint {k + 1} torque [N m]", title=f"S3 {case}: driving torque of joint {k + 1}")
        summary["cases"][case] = rows
    summary["figures"] = sorted(p.name for p in OUT.glob("*.png"))
    write_json(OUT / "summary.json", summary)
    print("written", OUT)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
