"""S1 (seed 001): the falling chain of three Timoshenko links — all four mode sets, convergence of
the impact onset times, the work–energy balance, and a study of the mirror symmetry.

    python experiments/seed001_falling_chain.py [--quick]

Writes ``experiments/results/seed001/``: per mode set the paper's figures 5–14
(``<modes>/fig*.png``), ``symmetry.png`` (mirror mismatch against time for several tolerances and
for a deliberately perturbed start), ``onsets.png`` and ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

from diffsim.scenarios import seed001 as s1  # noqa: E402
from diffsim.scenarios.base import write_json  # noqa: E402
from diffsim.viz.plots import plot_series  # noqa: E402

OUT = Path(__file__).parent / "results" / "seed001"


def _run(modes, rtol, t1=1.5, n_save=1501, perturb=0.0, height=0.9):
    m = s1.model(modes)
    c = s1.contact_model(m)
    q0, v0 = s1.initial_state(m, height)
    q0 = q0.at[4].add(perturb)  # an asymmetric start: q3 off by `perturb` rad
    t = time.perf_counter()
    traj = s1._simulate_jit(m, c, q0, v0, t1, n_save, rtol, rtol, "tsit5", 160)
    jax.block_until_ready(traj.q)
    wall = time.perf_counter() - t
    a = {k: np.asarray(v) for k, v in s1.results(m, c, traj).items()}
    return a, wall, traj


def _mirror_error(xy):
    mirror = xy[:, ::-1] * np.array([-1.0, 1.0])
    return np.abs(xy - mirror).max(axis=(1, 2))


def _pairs(onsets, tol=1e-6):
    """Impact onsets of O1…O4 grouped into mirror pairs (O1↔O4, O2↔O3) that coincide within
    ``tol`` s, and the unpaired rest."""
    out = {"pairs": 0, "unpaired": 0}
    for a, b in (("O1", "O4"), ("O2", "O3")):
        ta, tb = list(onsets[a]), list(onsets[b])
        for x in ta:
            j = next((k for k, y in enumerate(tb) if abs(x - y) <= tol), None)
            if j is None:
                out["unpaired"] += 1
            else:
                out["pairs"] += 1
                tb.pop(j)
        out["unpaired"] += len(tb)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="ss-ss-ss only, fewer tolerances")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {"mode_sets": {}}

    # 1. the four mode sets (rtol = 1e-9), figures like the paper's 5–14
    sets = ["ss-ss-ss"] if args.quick else list(s1.MODE_SETS)
    for ms in sets:
        a, wall, traj = _run(ms, 1e-9)
        err = np.abs(a["energy_error_pct"])
        se = _mirror_error(a["joint_xy"])
        imp = s1.impact_summary(a)
        t_break = float(a["t"][np.argmax(se > 1e-3)]) if np.any(se > 1e-3) else None
        summary["mode_sets"][ms] = {
            "status": traj.message,
            "num_steps": int(traj.num_steps),
            "wall_time_s": wall,
            "energy_error_max_pct": float(err.max()),
            "energy_error_mean_pct": float(err.mean()),
            "impacts": imp,
            "impact_pairs": _pairs(imp["onset_times"]),
            "symmetry_error_m": float(se.max()),
            "symmetry_error_m_until_0.5s": float(se[a["t"] <= 0.5].max()),
            "symmetry_lost_1mm_at_s": t_break,
            "modal_weight_max_abs": np.abs(a["modal_weights"]).max(0).tolist(),
            "friction_over_normal_when_sliding": _friction_ratio(a),
        }
        s1._figures(a, ms, OUT / ms.replace("-", "_"), plot_series)
        print(ms, json.dumps({k: v for k, v in summary["mode_sets"][ms].items() if k != "impacts"}, default=str))

    # 2. convergence of the onset times and of the symmetry with the tolerance (ss-ss-ss)
    tols = [1e-8, 1e-10] if args.quick else [1e-8, 1e-9, 1e-10, 1e-11, 1e-12]
    runs = {}
    for tol in tols:
        a, wall, traj = _run("ss-ss-ss", tol, t1=1.0, n_save=1001)
        runs[tol] = a
        print(f"rtol {tol:g}: {int(traj.num_steps)} steps, {wall:.1f} s, events {int(traj.contact.n_events)}")
    finest = runs[tols[-1]]
    conv = {}
    for tol in tols[:-1]:
        conv[f"{tol:g}"] = _onset_diff(runs[tol], finest)
    summary["onset_convergence_vs_rtol_%g" % tols[-1]] = conv
    pert = _run("ss-ss-ss", 1e-10, t1=1.0, n_save=1001, perturb=1e-9)[0]
    curves = {f"rtol {tol:g}": (runs[tol]["t"], np.maximum(_mirror_error(runs[tol]["joint_xy"]), 1e-16)) for tol in tols}
    curves["rtol 1e-10, q3 + 1e-9 rad"] = (pert["t"], np.maximum(_mirror_error(pert["joint_xy"]), 1e-16))
    _log_plot(curves, OUT / "symmetry.png")
    summary["symmetry_vs_time"] = {
        k: {f"{t:.1f}": float(np.interp(t, c[0], c[1])) for t in (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)} for k, c in curves.items()
    }
    write_json(OUT / "summary.json", summary)
    print(json.dumps(summary["onset_convergence_vs_rtol_%g" % tols[-1]], indent=1))
    return summary


def _friction_ratio(a):
    """max |F_T|/F_N over the samples where a joint slides (|v_x| ≥ v1) with F_N > 1 N."""
    fn, ft, vx = a["normal_force"], a["friction_force"], a["joint_vxy"][..., 0]
    mask = (fn > 1.0) & (np.abs(vx) >= s1.DATA["v1"])
    return float(np.abs(ft[mask] / fn[mask]).max()) if mask.any() else None


def _onset_diff(a, b):
    """Largest difference of corresponding onset times (per joint, the common first events)."""
    ia, ib = s1.impact_summary(a)["onset_times"], s1.impact_summary(b)["onset_times"]
    d, n = 0.0, 0
    for j in s1.JOINTS:
        k = min(len(ia[j]), len(ib[j]))
        if k:
            d = max(d, float(np.max(np.abs(np.array(ia[j][:k]) - np.array(ib[j][:k])))))
            n += k
    return {"max_abs_diff_s": d, "n_compared": n}


def _log_plot(curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.2))
    for k, (t, y) in curves.items():
        ax.semilogy(t, y, label=k)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("mirror mismatch max |O1−O4*|, |O2−O3*| [m]")
    ax.set_title("S1 ss-ss-ss: mirror symmetry against time")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main(sys.argv[1:])
