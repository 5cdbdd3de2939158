"""Batched planning (issue 16, scenario 5): many ``ur5-reach`` targets solved at once under
``jax.vmap``, problems per second on this CPU.

Problem: ``diffsim/scenarios/ur5_reach.py`` (UR5 from its URDF, 100 RK4 steps of 10 ms, the RK4
stage-averaged effort ``w_u ‖τ − g(q)‖²`` and the terminal ``w_p ‖p_tool − p*‖² + w_v ‖v‖²``, both
least squares: Gauss–Newton DDP), one target per problem. Targets are sampled in the workspace
around the scenario's: the tool position at ``q_goal = Q_GOAL + δ``, ``δ`` uniform in
``±spread`` rad per joint (seeded), so every target is reachable by construction. Every problem
starts from the scenario's guess (τ = g(q0) held). ``ddp`` without limits, ``max_iter`` 100.

One compiled program ``jit(vmap(solve))`` per batch size (compiled ahead of time, then timed
on one call); the batched ``lax.while_loop`` runs
until the last problem stops (each problem's state freezes once it has stopped). Reported per
batch size: compile time (first call minus the second), solve time after compile, problems/s,
status counts, iterations (median, max), tool error (median, max) and cost; and, in the same run,
a few targets solved one by one (the unbatched ``ds.plan.solve``: compiled once, then timed per
problem) — same plans to round-off, and the batched speed-up per problem.

Run: ``python experiments/plan_batch_ur5.py --sizes 16 64 --single 3`` (the batch of 1024 would
take hours on the shared 2-core CPU: ``results/plan-batch-ur5/README.md``) → ``results/plan-batch-ur5/``.
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
from diffsim.dynamics.kinematics import forward_kinematics  # noqa: E402
from diffsim.io.results import provenance, write_json  # noqa: E402
from diffsim.plan.costs import LeastSquares  # noqa: E402
from diffsim.scenarios import ur5_reach as ur5  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "plan-batch-ur5"


def sample_targets(model, n: int, spread: float, seed: int = 0):
    """``(q_goal [n, 6], targets [n, 3])``: the tool positions at ``Q_GOAL + δ``, ``δ ~ U(±spread)``."""
    rng = np.random.default_rng(seed)
    q_goal = np.asarray(ur5.Q_GOAL)[None] + rng.uniform(-spread, spread, (n, 6))
    targets = jax.jit(jax.vmap(lambda q: ur5.tool_position(model, q)))(jnp.asarray(q_goal))
    return q_goal, np.asarray(targets)


def make_solver(p: ur5.Ur5Reach, model, max_iter: int):
    """``solve_one(target) -> Plan``: the scenario's problem with the target as an argument (the
    terminal cost's residual ``(p(q) − p*, v)`` closes over the traced target)."""
    i = model.topology.body_index(p.tool)
    costs = ur5.planner_costs(p, model)
    q0, v0 = jnp.asarray(p.q0), jnp.asarray(p.v0)
    tau_init = jnp.tile(jnp.asarray(p.tau_init), (p.horizon, 1))

    def solve_one(target):
        def residual(q, v):
            return jnp.concatenate([forward_kinematics(model, q).p[i] - target, v])

        terminal = LeastSquares(residual, [p.w_p] * 3 + [p.w_v] * model.nv)
        return ds.plan.solve(model, q0, v0, horizon=p.horizon, dt=p.dt, running_cost=costs["running_cost"],
                             terminal_cost=terminal, quadrature=costs["quadrature"], method="ddp", tau_init=tau_init,
                             max_iter=max_iter)

    return solve_one


def stats(plans, model, targets, p):
    tool = np.asarray(jax.jit(jax.vmap(lambda q: ur5.tool_position(model, q, p.tool)))(plans.q[:, -1]))
    err = np.linalg.norm(tool - targets, axis=1)
    status = np.asarray(plans.status)
    it = np.asarray(plans.iterations)
    return {"status_counts": {s.name.lower(): int(np.sum(status == int(s))) for s in ds.plan.PlanStatus},
            "iterations_median": float(np.median(it)), "iterations_max": int(it.max()),
            "tool_error_median_m": float(np.median(err)), "tool_error_max_m": float(err.max()),
            "final_speed_max_rad_s": float(np.linalg.norm(np.asarray(plans.v[:, -1]), axis=1).max()),
            "cost_median": float(np.median(np.asarray(plans.cost)))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--single", type=int, default=3, help="targets solved one by one in the same run")
    ap.add_argument("--spread", type=float, default=0.3, help="half-width of the goal-configuration box [rad]")
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    p = ur5.problem()
    model = ur5.load_model(p.urdf, dtype=jnp.float64)
    solve_one = make_solver(p, model, args.max_iter)
    n_max = max(args.sizes + [args.single])
    _, targets = sample_targets(model, n_max, args.spread)
    dist = np.linalg.norm(targets - np.asarray(ur5.tool_position(model, jnp.asarray(p.q0))), axis=1)
    summary = {"provenance": provenance(), "problem": p.to_dict() | {"target": "sampled"}, "spread_rad": args.spread,
               "max_iter": args.max_iter, "target_distance_m": [float(dist.min()), float(dist.max())],
               "load_average_start": os.getloadavg(), "batches": [], "single": {}}

    # one by one (the unbatched entry point, compiled once)
    if args.single:
        one = jax.jit(solve_one)
        t = time.perf_counter()
        jax.block_until_ready(one(jnp.asarray(targets[0])))
        first = time.perf_counter() - t
        times, singles = [], []
        for k in range(args.single):
            t = time.perf_counter()
            singles.append(jax.block_until_ready(one(jnp.asarray(targets[k]))))
            times.append(time.perf_counter() - t)
        summary["single"] = {"n": args.single, "compile_s": first - times[0], "solve_s": times,
                             "problems_per_s": args.single / sum(times),
                             "iterations": [int(s.iterations) for s in singles],
                             "status": [s.message for s in singles], "cost": [float(s.cost) for s in singles]}
        print("single", summary["single"], flush=True)
        write_json(out / "summary.json", summary)

    batched = jax.jit(jax.vmap(solve_one))
    for n in args.sizes:
        tg = jnp.asarray(targets[:n])
        t = time.perf_counter()
        compiled = batched.lower(tg).compile()  # ahead of time: the compile alone
        compile_s = time.perf_counter() - t
        t = time.perf_counter()
        plans = jax.block_until_ready(compiled(tg))
        solve_s = time.perf_counter() - t
        row = {"n": n, "compile_s": compile_s, "solve_s": solve_s, "problems_per_s": n / solve_s,
               **stats(plans, model, targets[:n], p), "load_average": os.getloadavg()}
        if args.single:
            k = min(args.single, n)
            row["max_rel_cost_diff_vs_single"] = float(max(
                abs(float(plans.cost[j]) - summary["single"]["cost"][j]) / summary["single"]["cost"][j] for j in range(k)))
        summary["batches"].append(row)
        print(row, flush=True)
        write_json(out / "summary.json", summary)
    summary["load_average_end"] = os.getloadavg()
    write_json(out / "summary.json", summary)


if __name__ == "__main__":
    main()
