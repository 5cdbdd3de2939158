#!/usr/bin/env python
"""Planning benchmark (issue 16 §4): ``diffsim.plan`` (``ddp``, ``shooting``, ``cem``) beside
Crocoddyl (FDDP, BoxFDDP) on ``ur5-reach``, one problem for all (``diffsim.scenarios.ur5_reach``:
the UR5 moves its tool 0.43 m in 1 s = 100 RK4 steps with the torque held, and stops).

1. Writes the problem as JSON and runs ``benchmarks/crocoddyl_reach.py`` on it in the Python that
   has Crocoddyl (``--croc-python``, else ``$DIFFSIM_CROCODDYL_PYTHON``, else
   ``/work/venv-croc/bin/python``, else this interpreter if it imports ``crocoddyl``; skipped with a
   message when none does).
2. Checks the problem definition independently of any planner: Crocoddyl's optimal torques rolled
   out by diffsim must give Crocoddyl's states and cost (the same discretisation and quadrature,
   so to rounding).
3. Solves the same problem with ``ds.plan.solve`` (when ``diffsim.plan`` exists) from the same
   initial guess (the problem's ``tau_init`` held: the torque that holds ``q0``): ``ddp`` and
   ``shooting`` unconstrained against FDDP, ``ddp-box`` with the problem's torque box against
   BoxFDDP, ``cem`` (the sampling baseline) in the box. Each is timed after compilation (its first
   call less the median of the ``--repeats`` later calls is reported as compile time).

The table: final cost, its relative difference from Crocoddyl's optimum of the same problem,
iterations, status, wall time after compile, compile time, and the ratio of the time to
Crocoddyl's (FDDP, or BoxFDDP for the box rows). Target (issue 16): equal optimal cost to ≤ 0.1 %;
solve time after compile ≤ 2× Crocoddyl's FDDP on this CPU.

Usage: ``python benchmarks/bench_plan.py [--repeats 3] [--methods ddp,shooting,cem,ddp-box]
[--quadrature rk4|knot]`` → ``results/bench_plan.json`` (+ the Crocoddyl results beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import loadavg, machine_info, setup_jax  # noqa: E402

jax = setup_jax()
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim.scenarios import ur5_reach as ur  # noqa: E402

DEFAULT_CROC_PYTHON = "/work/venv-croc/bin/python"
#: method row -> (ds.plan.solve method, with the torque box, the Crocoddyl solver it is compared with,
#: the default iteration budget: None = ds.plan's; DDP gets about twice the iterations Crocoddyl needs,
#: 49 (FDDP) and 162 (BoxFDDP))
#: "ddp-exact": ddp on the same costs passed as plain callables (exact PSD-projected cost Hessians
#: instead of the Gauss–Newton ones of the scenario's LeastSquares costs), for the comparison
ROWS = {"ddp": ("ddp", False, "fddp", 200), "ddp-exact": ("ddp", False, "fddp", 200),
        "shooting": ("shooting", False, "fddp", None),
        "ddp-box": ("ddp", True, "boxfddp", 400), "cem": ("cem", True, "boxfddp", None)}


def crocoddyl_python(arg: str | None) -> str | None:
    """The interpreter that runs the Crocoddyl peer (module docstring), or ``None``."""
    for cand in (arg, os.environ.get("DIFFSIM_CROCODDYL_PYTHON"), DEFAULT_CROC_PYTHON):
        if cand:
            path = shutil.which(cand) or (cand if Path(cand).exists() else None)
            if path:
                return path
            if cand is arg:
                raise SystemExit(f"--croc-python {arg!r} does not exist")
    try:
        import crocoddyl  # noqa: F401

        return sys.executable
    except ImportError:
        return None


def run_crocoddyl(python: str, problem_json: Path, out: Path, repeats: int) -> dict | None:
    cmd = [python, str(HERE / "crocoddyl_reach.py"), "--problem", str(problem_json), "--out", str(out),
           "--repeats", str(repeats)]
    print("running", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(r.stdout, end="")
    if r.returncode:
        print(f"Crocoddyl failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
        return None
    return json.loads((out / "crocoddyl_reach.json").read_text())


def check_crocoddyl_optimum(p: ur.Ur5Reach, model, out: Path, solvers) -> dict:
    """Crocoddyl's optimal torques rolled out and costed by diffsim (step 2 of the docstring)."""
    f = jax.jit(lambda tau: ur.total_cost(p, model, tau))
    res = {}
    for name in solvers:
        z = np.load(out / f"crocoddyl_reach_{name}.npz")
        J, q, v = f(jnp.asarray(z["tau"]))
        res[name] = {"cost_crocoddyl": float(z["cost"]), "cost_diffsim": float(J),
                     "cost_rel_diff": abs(float(J) / float(z["cost"]) - 1),
                     "q_max_abs_diff": float(np.abs(np.asarray(q) - z["q"]).max()),
                     "v_max_abs_diff": float(np.abs(np.asarray(v) - z["v"]).max()),
                     **_figures(p, model, np.asarray(q), np.asarray(v))}
    return res


def _figures(p, model, q, v) -> dict:
    """The task's own figures of merit: tool distance from the target and final speed."""
    tool = np.asarray(ur.tool_position(model, jnp.asarray(q[-1]), p.tool))
    return {"tool_error_m": float(np.linalg.norm(tool - np.asarray(p.target))),
            "final_speed_rad_s": float(np.linalg.norm(v[-1]))}


def run_diffsim(p: ur.Ur5Reach, model, rows, repeats: int, max_iter: dict) -> dict:
    costs = ur.planner_costs(p, model)  # defined once: one compile each
    ell, ell_T = costs["running_cost"], costs["terminal_cost"]

    def exact_run(q, v, tau):  # the same numbers as plain callables: DDP takes their exact Hessians
        return ell(q, v, tau)

    def exact_term(q, v):
        return ell_T(q, v)

    q0, v0 = jnp.asarray(p.q0), jnp.asarray(p.v0)
    tau0 = jnp.tile(jnp.asarray(p.tau_init), (p.horizon, 1))
    out = {}
    for row in rows:
        method, boxed, _, budget = ROWS[row]
        run_c, term_c = (exact_run, exact_term) if row.endswith("-exact") else (ell, ell_T)
        kw = dict(horizon=p.horizon, dt=p.dt, running_cost=run_c, terminal_cost=term_c, method=method, tau_init=tau0,
                  quadrature=costs["quadrature"],
                  tau_limits=p.tau_limits if boxed else None)
        if max_iter.get(row, budget) is not None:
            kw["max_iter"] = max_iter.get(row, budget)

        def call():
            plan = ds.plan.solve(model, q0, v0, **kw)
            jax.block_until_ready(plan.cost)
            return plan

        t = time.perf_counter()
        call()
        first = time.perf_counter() - t
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            plan = call()
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        out[row] = {"method": method, "tau_limits": kw["tau_limits"], "cost": float(plan.cost),
                    "iterations": int(plan.iterations), "status": plan.message, "time_median_s": med,
                    "time_min_s": min(times), "times_s": times, "compile_s": max(first - med, 0.0),
                    "first_call_s": first, **_figures(p, model, np.asarray(plan.q), np.asarray(plan.v))}
        print(f"diffsim {row:9s} cost {out[row]['cost']:.10g}  iterations {out[row]['iterations']:4d} "
              f"{out[row]['status']:9s} median {med:.3f} s  compile {out[row]['compile_s']:.1f} s", flush=True)
    return out


def table(diffsim_rows: dict, croc: dict | None) -> str:
    head = (f"{'solver':18s} {'cost':>14s} {'vs croc':>10s} {'iter':>5s} {'status':>9s} {'time [s]':>9s} "
            f"{'compile [s]':>11s} {'x croc':>7s} {'tool err [m]':>12s}")
    lines = [head, "-" * len(head)]
    if croc:
        for name, s in croc["solvers"].items():
            lines.append(f"{'crocoddyl ' + name:18s} {s['cost']:14.10g} {'':>10s} {s['iterations']:5d} "
                         f"{'converged' if s['converged'] else 'no':>9s} {s['time_median_s']:9.4f} {'-':>11s} "
                         f"{'1':>7s} {'':>12s}")
    for row, r in diffsim_rows.items():
        ref = croc["solvers"].get(ROWS[row][2]) if croc else None
        rel = f"{r['cost'] / ref['cost'] - 1:+10.2e}" if ref else f"{'-':>10s}"
        ratio = f"{r['time_median_s'] / ref['time_median_s']:7.1f}" if ref else f"{'-':>7s}"
        lines.append(f"{'diffsim ' + row:18s} {r['cost']:14.10g} {rel} {r['iterations']:5d} {r['status']:>9s} "
                     f"{r['time_median_s']:9.4f} {r['compile_s']:11.1f} {ratio} {r['tool_error_m']:12.2e}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--croc-python", default=None, help="the Python with crocoddyl (see the module docstring)")
    ap.add_argument("--repeats", type=int, default=3, help="timed solves after the first (compile) call")
    ap.add_argument("--croc-repeats", type=int, default=10)
    ap.add_argument("--methods", default="ddp,shooting,ddp-box,cem", help=f"rows among {list(ROWS)}")
    ap.add_argument("--quadrature", default="rk4", choices=ur.QUADRATURES,
                    help="running-cost quadrature ('knot' differs from Crocoddyl's problem: no peer run)")
    ap.add_argument("--max-iter", default="", help="per-row iteration budgets, e.g. ddp=300,cem=100 (defaults: ROWS)")
    a = ap.parse_args(argv)
    rows = [m for m in a.methods.split(",") if m]
    bad = [m for m in rows if m not in ROWS]
    if bad:
        raise SystemExit(f"unknown --methods {bad}; choose among {list(ROWS)}")
    max_iter = {k: int(v) for k, v in (kv.split("=") for kv in a.max_iter.split(",") if kv)}

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    p = ur.problem(quadrature=a.quadrature)
    model = ur.load_model(p.urdf, dtype=jnp.float64)
    problem_json = ur.write_problem(out / "ur5_reach_problem.json", p)
    result = {"meta": {**machine_info(optional_modules=("optax",)), "loadavg_start": loadavg()}, "problem": p.to_dict()}

    croc = None
    python = crocoddyl_python(a.croc_python)
    if a.quadrature != "rk4":
        print("Crocoddyl skipped: it integrates the running cost with the RK4 stage weights only (--quadrature rk4)")
    elif python is None:
        print(f"Crocoddyl skipped: no Python with crocoddyl (tried --croc-python, $DIFFSIM_CROCODDYL_PYTHON, "
              f"{DEFAULT_CROC_PYTHON}, this interpreter); make one as benchmarks/crocoddyl_reach.py says")
    else:
        croc = run_crocoddyl(python, problem_json, out, a.croc_repeats)
    if croc:
        result["crocoddyl"] = croc
        result["crocoddyl_optimum_in_diffsim"] = chk = check_crocoddyl_optimum(p, model, out, croc["solvers"])
        for name, c in chk.items():
            print(f"Crocoddyl's {name} torques in diffsim: cost rel. diff {c['cost_rel_diff']:.1e}, states within "
                  f"{max(c['q_max_abs_diff'], c['v_max_abs_diff']):.1e}; tool {c['tool_error_m'] * 1e3:.3f} mm "
                  f"from the target, final speed {c['final_speed_rad_s']:.4f} rad/s")

    if not hasattr(ds, "plan"):
        print("diffsim.plan is not available in this checkout: the diffsim rows are skipped")
    else:
        result["diffsim"] = run_diffsim(p, model, rows, a.repeats, max_iter)
        print()
        print(table(result["diffsim"], croc))
    result["meta"]["loadavg_end"] = loadavg()
    (out / "bench_plan.json").write_text(json.dumps(result, indent=2) + "\n")
    print("wrote", out / "bench_plan.json")
    return result


if __name__ == "__main__":
    main()
