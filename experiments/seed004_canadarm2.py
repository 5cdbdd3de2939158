"""S4 experiment: Canadarm2 (SSRMS) 5-link arm with flexible booms released under gravity
(seed 004, §3, Figs 2–10).

1. ``diffsim run seed004-canadarm2`` (rigid and flexible booms, 3 bending modes per plane +
   3 torsion modes per boom, tsit5 at rtol 1e-8, 1.5 s): joint rates ω1…ω5 rigid vs flexible
   (Figs 2–6) and bending/torsion deflection and rate at the lower boom's tip (Figs 7–10).
2. Convergence in the number of modes: 1, 2, 3 bending modes per plane (3 torsion modes), and
   1, 2, 3 torsion modes (3 bending modes); differences to the 3 + 3 solution.
3. Cross-check with the paper's own formulation: the recursive Lagrange equations with 4×4
   transforms (``diffsim.formulations.forward_dynamics_recursive_lagrange``) give the same
   accelerations as the O(n) sweep at states along the flexible trajectory.

Writes ``experiments/results/seed004/`` (scenario outputs, ``mode_convergence.png``,
``summary.json``). Run: ``python experiments/seed004_canadarm2.py`` (about 5 min on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim.formulations.recursive_lagrange import forward_dynamics_recursive_lagrange  # noqa: E402
from diffsim.scenarios.base import run_scenario, write_json  # noqa: E402
from diffsim.scenarios import seed004 as s4  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "seed004"))
    ap.add_argument("--t1", type=float, default=1.5)
    args = ap.parse_args()
    out = Path(args.out)
    t_start = time.perf_counter()
    opts = [f"t1={args.t1}"]
    summary = run_scenario(s4.SEED004, out, opts)
    ref = np.load(out / "trajectory.npz")
    t = ref["t"]
    n_save = len(t)
    o = s4.SEED004.options

    # ---- 2. mode convergence ----
    conv = {}
    curves = {}
    for nb, nt in ((1, 3), (2, 3), (3, 1), (3, 2)):
        m, tr, wall = s4.run_arm(True, nb, nt, t1=args.t1, rtol=o["rtol"], atol=o["atol"], n_save=n_save)
        tip = {k: np.asarray(v) for k, v in s4.boom_tip(m, tr.q, tr.v, 1).items()}
        w = np.asarray(tr.v[:, :5])
        key = f"bend{nb}_tors{nt}"
        curves[key] = (w, tip)
        conv[key] = {
            "status": tr.message,
            "num_steps": int(tr.num_steps),
            "sim_wall_time_s": wall,
            "max_joint_rate_diff_to_3+3_rad_s": np.abs(w - ref["joint_rates_flexible"]).max(0).tolist(),
            "max_tip_bending_diff_to_3+3_m": np.abs(tip["bending"] - ref["tip_bending"]).max(0).tolist(),
            "max_tip_torsion_diff_to_3+3_rad": float(np.abs(tip["torsion"] - ref["tip_torsion"]).max()),
            "max_tip_bending_m": np.abs(tip["bending"]).max(0).tolist(),
            "max_tip_torsion_rad": float(np.abs(tip["torsion"]).max()),
        }
    conv["bend3_tors3"] = {
        "num_steps": summary["cases"]["flexible"]["num_steps"],
        "max_tip_bending_m": np.abs(ref["tip_bending"]).max(0).tolist(),
        "max_tip_torsion_rad": float(np.abs(ref["tip_torsion"]).max()),
    }
    curves["bend3_tors3"] = (ref["joint_rates_flexible"], dict(bending=ref["tip_bending"], torsion=ref["tip_torsion"]))
    fig, axs = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for k, (w, tip) in curves.items():
        if k.startswith("bend") and k.endswith("tors3"):
            axs[0].plot(t, tip["bending"][:, 0] * 1e3, label=f"{k[4]} bending mode(s)/plane")
            axs[1].plot(t, w[:, 2], label=f"{k[4]} bending mode(s)/plane")
        if k.startswith("bend3"):
            axs[2].plot(t, np.degrees(tip["torsion"]), label=f"{k[-1]} torsion mode(s)")
    axs[0].set(ylabel="lower boom tip bending y [mm]", title="S4 mode convergence (3 torsion modes)")
    axs[1].set(ylabel="ω3 (wrist pitch) [rad/s]")
    axs[2].set(ylabel="lower boom tip twist [deg]", xlabel="t [s]", title="torsion modes (3 bending modes/plane)")
    for ax in axs:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "mode_convergence.png", dpi=110)
    plt.close(fig)

    # ---- 3. the paper's formulation: same accelerations along the trajectory ----
    m = s4.model(True)
    idx = np.linspace(0, n_save - 1, 6).astype(int)[1:]
    qs, vs = jnp.asarray(ref["q_flexible"][idx]), jnp.asarray(ref["v_flexible"][idx])
    aba = jax.jit(lambda q, v: ds.forward_dynamics(m, q, v, jnp.zeros(m.nv)))
    rl = jax.jit(lambda q, v: forward_dynamics_recursive_lagrange(m, q, v))
    t0 = time.perf_counter()
    errs = []
    for k in range(len(idx)):
        a1 = np.asarray(aba(qs[k], vs[k]))
        a2 = np.asarray(rl(qs[k], vs[k]))
        errs.append(float(np.abs(a1 - a2).max() / np.abs(a1).max()))
    cross = {"times_s": t[idx].tolist(), "max_rel_accel_diff_recursive_lagrange_vs_sweep": max(errs),
             "per_state": errs, "wall_s": time.perf_counter() - t0}

    summary["mode_convergence"] = conv
    summary["crosscheck_recursive_lagrange"] = cross
    summary["experiment_wall_time_s"] = time.perf_counter() - t_start
    summary["figures"] = summary["figures"] + ["mode_convergence.png"]
    write_json(out / "summary.json", summary)
    print(json.dumps({"status": summary["status"], "cases": summary["cases"], "mode_convergence": conv,
                      "crosscheck": cross, "wall_s": summary["experiment_wall_time_s"]}, indent=1, default=str))


if __name__ == "__main__":
    main()
