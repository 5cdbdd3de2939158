"""Space reorientation on S0 (issue 16, scenario 2): the free-floating dual-arm robot of seed 000
moves arm 1's tip to a target while the base attitude ends where it began — non-holonomic
planning: only the arm joints are driven, the base (free joint) is not.

Setup: ``diffsim.scenarios.seed000.model()`` (free base + two arms of two spherical joints each:
nq = 23, nv = 18, 12 driven coordinates), no gravity, no follower forces; from rest with arm 1
bent (shoulder 0.5 rad, elbow −1.0 rad about the joints' y axes: the straight arm of the neutral
configuration is singular for a move along it). Horizon N steps of dt (default 60 × 50 ms = 3 s). Cost

    ℓ   = w_τ |τ|² + w_v |v|²
    ℓ_f = w_p |p_tip − p*|² + w_b · 4 sin²(θ_base/2) + w_vf |v|²

with ``p*`` the tip's initial position moved by ``--offset`` (default (−0.2, 0.3, 0.1) m, world),
``θ_base`` the base's rotation angle from its initial attitude. DDP (box-limited torques,
``--tau-max``), and the sampling baseline (CEM) at about equal wall time. Figures of merit: tip
error, final base rotation, final speeds, cost, iterations, solve time after compile.

Run: ``python experiments/plan_space_reorient.py`` (minutes on 2 shared CPU cores). Writes
``experiments/results/plan-space-reorient/summary.json``, ``README.md``, ``motion.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import diffsim as ds  # noqa: E402
from diffsim.plan import costs  # noqa: E402
from diffsim.scenarios import seed000  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "experiments" / "results" / "plan-space-reorient"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--horizon", type=int, default=60)
    ap.add_argument("--dt", type=float, default=0.05)
    ap.add_argument("--tau-max", type=float, default=100.0)
    ap.add_argument("--offset", type=float, nargs=3, default=(-0.2, 0.3, 0.1))
    ap.add_argument("--cem-iters", type=int, default=None, help="default: as many as fit DDP's wall time")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)

    m = seed000.model()
    m = ds.set_params(m, {"gravity": jnp.zeros(3)})
    bend = jnp.zeros(m.nv).at[7].set(0.5).at[10].set(-1.0)  # a1j1, a1j2 about their y axes
    q0, v0 = ds.integrate(m, ds.neutral_configuration(m), bend), jnp.zeros(m.nv)
    arm_joints = [j for j in m.topology.joint_names if j != m.topology.joint_names[0]]
    p0 = ds.site_poses(m, q0)[1][m.topology.site_index("a1tip")]
    target = p0 + jnp.asarray(args.offset)

    def running(q, v, tau):
        return 1e-4 * jnp.sum(tau**2) + 1e-1 * jnp.sum(v**2)

    def terminal(q, v):
        return (1e4 * costs.site_position_error(m, q, "a1tip", target) + 1e4 * costs.base_attitude_change(m, q, q0)
                + 1e2 * jnp.sum(v**2))

    kw = dict(horizon=args.horizon, dt=args.dt, running_cost=running, terminal_cost=terminal,
              tau_limits=(-args.tau_max, args.tau_max), actuation=arm_joints)

    def merit(p):
        return {"cost": float(p.cost), "iterations": int(p.iterations), "status": p.message,
                "tip_error_m": float(jnp.sqrt(costs.site_position_error(m, p.q[-1], "a1tip", target))),
                "base_rotation_deg": math.degrees(2 * math.asin(min(1.0, math.sqrt(float(
                    costs.base_attitude_change(m, p.q[-1], q0)) / 4)))),
                "max_base_rotation_deg_during": max(math.degrees(2 * math.asin(min(1.0, math.sqrt(float(
                    costs.base_attitude_change(m, q, q0)) / 4)))) for q in p.q),
                "final_speed_max": float(jnp.max(jnp.abs(p.v[-1]))),
                "max_abs_tau": float(jnp.max(jnp.abs(p.tau))),
                "base_tau_max": float(jnp.max(jnp.abs(p.tau[:, :6])))}

    t = time.perf_counter()
    p = jax.block_until_ready(ds.plan.solve(m, q0, v0, **kw, max_iter=200))
    first = time.perf_counter() - t
    t = time.perf_counter()
    p = jax.block_until_ready(ds.plan.solve(m, q0, v0, **kw, max_iter=200))
    ddp_s = time.perf_counter() - t
    res = {"ddp": {**merit(p), "solve_s": round(ddp_s, 3), "compile_s": round(first - ddp_s, 1)}}
    print("ddp", res["ddp"], flush=True)

    # CEM at about DDP's wall time: time one iteration, then run as many as fit
    one = dict(kw, method="cem", key=jax.random.PRNGKey(0))
    jax.block_until_ready(ds.plan.solve(m, q0, v0, **one, max_iter=2))
    t = time.perf_counter()
    jax.block_until_ready(ds.plan.solve(m, q0, v0, **one, max_iter=2))
    per_iter = (time.perf_counter() - t) / 2
    n_cem = args.cem_iters or max(1, int(ddp_s / per_iter))
    t = time.perf_counter()
    c = jax.block_until_ready(ds.plan.solve(m, q0, v0, **one, max_iter=n_cem))
    res["cem_equal_time"] = {**merit(c), "solve_s": round(time.perf_counter() - t, 3)}
    print("cem", res["cem_equal_time"], flush=True)
    res["setup"] = {"horizon": args.horizon, "dt": args.dt, "tau_max": args.tau_max, "offset_m": list(args.offset),
                    "nq": m.nq, "nv": m.nv, "nu": len(p.problem.actuated), "device": str(jax.devices()[0])}
    (OUT / "summary.json").write_text(json.dumps(res, indent=2))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
    tip = jax.vmap(lambda q: ds.site_poses(m, q)[1][m.topology.site_index("a1tip")])(p.q)
    rot = jax.vmap(lambda q: costs.base_attitude_change(m, q, q0))(p.q)
    ax[0].plot(p.t, tip - target)
    ax[0].set(xlabel="t [s]", ylabel="tip − target [m]", title="arm 1 tip")
    ax[1].plot(p.t, np.degrees(2 * np.arcsin(np.sqrt(np.clip(np.asarray(rot) / 4, 0, 1)))))
    ax[1].set(xlabel="t [s]", ylabel="base rotation [deg]", title="base attitude (unactuated)")
    ax[2].step(p.t[:-1], p.tau[:, 6:], where="post")
    ax[2].set(xlabel="t [s]", ylabel="τ [N m]", title="arm torques (DDP)")
    fig.tight_layout()
    fig.savefig(OUT / "motion.png", dpi=120)
    d, ce = res["ddp"], res["cem_equal_time"]
    (OUT / "README.md").write_text(
        "# plan-space-reorient (S0, only the arms driven)\n\n"
        f"`python experiments/plan_space_reorient.py`: {args.horizon} × {args.dt} s, |τ| ≤ {args.tau_max} N m, "
        f"tip offset {list(args.offset)} m.\n\n"
        "| method | cost | iterations | status | tip error [m] | final base rotation [deg] | max base rotation "
        "during [deg] | solve [s] |\n|---|---|---|---|---|---|---|---|\n"
        f"| DDP | {d['cost']:.5g} | {d['iterations']} | {d['status']} | {d['tip_error_m']:.2e} | "
        f"{d['base_rotation_deg']:.3f} | {d['max_base_rotation_deg_during']:.2f} | {d['solve_s']} (compile {d['compile_s']}) |\n"
        f"| CEM, equal time | {ce['cost']:.5g} | {ce['iterations']} | {ce['status']} | {ce['tip_error_m']:.2e} | "
        f"{ce['base_rotation_deg']:.3f} | {ce['max_base_rotation_deg_during']:.2f} | {ce['solve_s']} |\n\n"
        "The base torques of both plans are exactly zero (unactuated); the base turns during the move "
        "(non-holonomic) and the plan brings it back.\n")


if __name__ == "__main__":
    main()
