"""The three planners of ``diffsim.plan`` side by side on small problems (issue 16): final cost,
iterations, status, compile time and solve time after compile, and the figures of merit of each
task. Also: a batch of pendulum swing-ups under ``vmap`` (problems per second).

Problems (models of ``tests/plan/plan_models.py``, all with a torque box so that CEM's initial
spread, half the box, is defined by the problem):

* ``pendulum-swing-up``: 1-DOF pendulum from hanging to upright in 1.2 s (60 RK4 steps of 20 ms),
  ``ℓ = 1e-2 τ² + 0.1 (q − q*)²``, ``ℓ_f = 100 ((q − q*)² + 0.1 v²)``, |τ| ≤ 5 N m (active).
* ``two-link-reach``: planar 2-link arm under gravity, from near hanging, tip to a point up and
  to the side in 1 s (40 steps of 25 ms), ``ℓ = 1e-2 (|τ|² + |v|²)``,
  ``ℓ_f = 1e3 |p_tip − p*|² + 100 |v|²``, |τ| ≤ 15 N m.
* ``floating-arm-reach``: a free-floating base (unactuated) with a 2-joint arm, no gravity, tip to
  a point in 1.5 s (30 steps of 50 ms), same cost form, |τ| ≤ 5 N m.

Timing: each solve is compiled once (first call), then the minimum wall time of 3 calls is the
solve time (2 CPU cores shared with other work: minima, not means).

Run: ``python experiments/plan_methods.py`` (a few minutes). Writes
``experiments/results/plan-methods/summary.json``, ``README.md`` and ``cost_history.png``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import diffsim as ds  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "plan"))
from plan_models import (  # noqa: E402
    UP,
    floating_arm,
    pendulum,
    swing_running,
    swing_terminal,
    two_link,
)

OUT = ROOT / "experiments" / "results" / "plan-methods"


def problems():
    pend = pendulum()
    arm = two_link()
    fl = floating_arm()
    t2 = jnp.array([0.6, 0.0, -0.5])
    tf = jnp.array([0.8, 0.45, 0.2])

    def run2(q, v, tau):
        return 1e-2 * (jnp.sum(tau**2) + jnp.sum(v**2))

    def term2(q, v):
        return 1e3 * ds.plan.costs.site_position_error(arm, q, "tip", t2) + 1e2 * jnp.sum(v**2)

    def termf(q, v):
        return 1e3 * ds.plan.costs.site_position_error(fl, q, "tip", tf) + jnp.sum(v**2)

    def goal_pend(p):
        return {"final_angle_error_rad": abs(float(p.q[-1, 0]) - UP), "final_speed_rad_s": abs(float(p.v[-1, 0]))}

    def goal_tip(m, target):
        def f(p):
            e = float(jnp.sqrt(ds.plan.costs.site_position_error(m, p.q[-1], "tip", target)))
            return {"final_tip_error_m": e, "final_speed_max": float(jnp.max(jnp.abs(p.v[-1])))}
        return f

    return {
        "pendulum-swing-up": (pend, jnp.array([math.pi / 2]), jnp.zeros(1),
                              dict(horizon=60, dt=0.02, running_cost=swing_running, terminal_cost=swing_terminal,
                                   tau_limits=(-5.0, 5.0)), goal_pend),
        "two-link-reach": (arm, jnp.array([math.pi / 2 - 0.1, 0.2]), jnp.zeros(2),
                           dict(horizon=40, dt=0.025, running_cost=run2, terminal_cost=term2,
                                tau_limits=(-15.0, 15.0)), goal_tip(arm, t2)),
        "floating-arm-reach": (fl, ds.neutral_configuration(fl), jnp.zeros(fl.nv),
                               dict(horizon=30, dt=0.05, running_cost=run2, terminal_cost=termf,
                                    tau_limits=(-5.0, 5.0), actuation=["a1", "a2"]), goal_tip(fl, tf)),
    }


def timed(fn, repeats=3):
    t = time.perf_counter()
    out = jax.block_until_ready(fn())
    first = time.perf_counter() - t
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        out = jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t)
    return out, first - best, best


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {"device": str(jax.devices()[0]), "problems": {}}
    histories = {}
    for name, (m, q0, v0, kw, goal) in problems().items():
        rows = {}
        for method in ("ddp", "shooting", "cem"):
            fn = lambda m=m, q0=q0, v0=v0, kw=kw, method=method: ds.plan.solve(m, q0, v0, **kw, method=method)  # noqa: E731
            p, compile_s, solve_s = timed(fn)
            rows[method] = {"cost": float(p.cost), "iterations": int(p.iterations), "status": p.message,
                            "compile_s": round(compile_s, 3), "solve_s": round(solve_s, 5),
                            "max_abs_tau": float(jnp.max(jnp.abs(p.tau))), **goal(p)}
            histories[(name, method)] = np.asarray(p.cost_history)[: int(p.iterations) + 1]
            print(name, method, rows[method], flush=True)
        summary["problems"][name] = rows

    # a batch of swing-ups under vmap: 64 initial angles around hanging
    m, _, v0, kw, _ = problems()["pendulum-swing-up"]
    q0s = (math.pi / 2 + jnp.linspace(-0.5, 0.5, 64))[:, None]
    batch = jax.jit(jax.vmap(lambda q0: ds.plan.solve(m, q0, v0, **kw).cost))
    costs, compile_s, solve_s = timed(lambda: batch(q0s))
    single = ds.plan.solve(m, q0s[7], v0, **kw)
    summary["vmap_pendulum_swing_up"] = {
        "batch": 64, "compile_s": round(compile_s, 3), "solve_s": round(solve_s, 4),
        "problems_per_s": round(64 / solve_s, 1), "all_finite": bool(jnp.all(jnp.isfinite(costs))),
        "batched_equals_single_rel": float(abs(costs[7] - single.cost) / single.cost)}
    print(summary["vmap_pendulum_swing_up"])
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, name in zip(axes, summary["problems"]):
        for method in ("ddp", "shooting", "cem"):
            h = histories[(name, method)]
            ax.semilogy(np.arange(len(h)), h, label=method)
        ax.set_xscale("symlog")
        ax.set_title(name)
        ax.set_xlabel("iteration")
        ax.set_ylabel("J")
        ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "cost_history.png", dpi=120)

    lines = ["# plan-methods: DDP vs single shooting vs CEM", "",
             "`python experiments/plan_methods.py` (2 shared CPU cores, float64; solve = min of 3 after compile).", "",
             "| problem | method | cost | iterations | status | solve [s] | compile [s] | goal |",
             "|---|---|---|---|---|---|---|---|"]
    for name, rows in summary["problems"].items():
        for method, r in rows.items():
            g = {k: f"{v:.2e}" for k, v in r.items() if k.startswith("final")}
            lines.append(f"| {name} | {method} | {r['cost']:.6g} | {r['iterations']} | {r['status']} | "
                         f"{r['solve_s']:.4f} | {r['compile_s']:.1f} | {g} |")
    vm = summary["vmap_pendulum_swing_up"]
    lines += ["", f"vmap: 64 pendulum swing-ups (DDP, box-limited) in {vm['solve_s']} s after a {vm['compile_s']} s "
              f"compile: {vm['problems_per_s']} problems/s on this CPU."]
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
