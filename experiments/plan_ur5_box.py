"""Why does box-DDP on ``ur5-reach`` stop above Crocoddyl's BoxFDDP while it reports "converged"?
(issue 16, the open question of the benchmark; ``benchmarks/results/bench_plan_ddp_box.json``: 339
iterations, 0.0752 against BoxFDDP's 0.0251, with the exact cost Hessians of that time).

Checks, on the scenario's problem with its torque box (``diffsim/scenarios/ur5_reach.py``; the costs
are now least squares, so ``ddp`` takes Gauss–Newton Hessians as BoxFDDP does):

1. ``ds.plan.solve(..., method="ddp", tau_limits=box)`` from the scenario's guess (τ = g(q0)
   held, clipped into the box), 400 iterations: cost, iterations, status.
2. The first-order optimality (KKT) of the box-constrained problem at that plan and at
   BoxFDDP's optimal torques (``--croc`` npz written by ``benchmarks/crocoddyl_reach.py``), on
   diffsim's objective ``J(u)`` (the same discretisation and cost, checked to 1e-15 by
   ``bench_plan``): the projected gradient ``P(u − ∇J) − u`` (``P`` the projection onto the box),
   its largest entry relative to ``‖∇J(u_guess)‖_∞``, and the number of controls on a bound.
3. ``ddp`` warm-started at BoxFDDP's torques: does it stay (a shared stationary point) or move?

Run: ``/work/venv-croc/bin/python benchmarks/crocoddyl_reach.py --problem p.json --out DIR`` then
``python experiments/plan_ur5_box.py --croc DIR/crocoddyl_reach_boxfddp.npz`` →
``results/plan-ur5-box/summary.json``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import diffsim as ds  # noqa: E402
from diffsim.io.results import provenance, write_json  # noqa: E402
from diffsim.scenarios import ur5_reach as ur  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "plan-ur5-box"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--croc", default=None, help="crocoddyl_reach_boxfddp.npz (its optimal torques)")
    ap.add_argument("--max-iter", type=int, default=400)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    p = ur.problem()
    model = ur.load_model(p.urdf, dtype=jnp.float64)
    prob = ur.planning_problem(p, model, limits=True)
    lo, hi = np.asarray(prob.lo), np.asarray(prob.hi)
    kw = dict(horizon=p.horizon, dt=p.dt, running_cost=prob.running_cost, terminal_cost=prob.terminal_cost,
              tau_limits=p.tau_limits, method="ddp", max_iter=args.max_iter)
    q0, v0 = jnp.asarray(p.q0), jnp.asarray(p.v0)
    guess = np.clip(np.tile(np.asarray(p.tau_init), (p.horizon, 1)), lo, hi)
    grad = jax.jit(jax.value_and_grad(prob.objective))
    J_g, g_g = grad(jnp.asarray(guess))
    scale = float(np.max(np.abs(np.asarray(g_g))))

    def kkt(u):
        J, g = grad(jnp.asarray(u))
        u, g = np.asarray(u), np.asarray(g)
        pg = np.clip(u - g, lo, hi) - u
        on = (u <= lo + 1e-9 * (hi - lo)) | (u >= hi - 1e-9 * (hi - lo))
        return {"cost": float(J), "projected_gradient_rel": float(np.max(np.abs(pg)) / scale),
                "gradient_free_rel": float(np.max(np.abs(np.where(on, 0.0, g))) / scale),
                "controls_on_bound": int(on.sum()), "controls": int(on.size)}

    summary = {"provenance": provenance(), "guess": {"cost": float(J_g), "gradient_inf": scale},
               "load_average_start": os.getloadavg()}
    t = time.perf_counter()
    plan = jax.block_until_ready(ds.plan.solve(model, q0, v0, **kw, tau_init=jnp.asarray(guess)))
    summary["ddp_box"] = {"cost": float(plan.cost), "iterations": int(plan.iterations), "status": plan.message,
                          "first_call_s": time.perf_counter() - t, "kkt": kkt(plan.u),
                          "tool_error_m": ur.figures_of_merit(p, model, plan)["tool_error_m"]}
    print("ddp-box", summary["ddp_box"], flush=True)
    write_json(OUT / "summary.json", summary)
    if args.croc:
        z = np.load(args.croc)
        u_c = np.asarray(z["tau"])
        summary["boxfddp"] = {"cost_crocoddyl": float(z["cost"]), "max_violation_of_box": float(
            max(np.max(lo - u_c), np.max(u_c - hi), 0.0)), "kkt": kkt(np.clip(u_c, lo, hi))}
        print("boxfddp", summary["boxfddp"], flush=True)
        t = time.perf_counter()
        warm = jax.block_until_ready(ds.plan.solve(model, q0, v0, **kw, tau_init=jnp.asarray(np.clip(u_c, lo, hi))))
        summary["ddp_box_from_boxfddp"] = {"cost": float(warm.cost), "iterations": int(warm.iterations),
                                           "status": warm.message, "solve_s": time.perf_counter() - t,
                                           "kkt": kkt(warm.u)}
        print("ddp-box from BoxFDDP", summary["ddp_box_from_boxfddp"], flush=True)
    summary["load_average_end"] = os.getloadavg()
    write_json(OUT / "summary.json", summary)


if __name__ == "__main__":
    main()
