"""Crocoddyl peer of diffsim's planner on ``ur5-reach`` (issue 16, scenario 1 and §4).

Runs in its own venv (crocoddyl 3.2.1 needs pin == 4.0.0 with libpinocchio == 4.0.0: beside pin
4.1.0 its dynamics were wrong, values ~1e-310, see issue 16)::

    python3.11 -m venv /work/venv-croc
    /work/venv-croc/bin/pip install crocoddyl==3.2.1 pin==4.0.0 libpinocchio==4.0.0 numpy
    python -c "from diffsim.scenarios.ur5_reach import write_problem; write_problem('p.json')"   # diffsim's venv
    /work/venv-croc/bin/python benchmarks/crocoddyl_reach.py --problem p.json --out benchmarks/results

The problem (robot file, q0, v0, target, dt, horizon, weights, torque box, initial guess) comes
from the JSON that ``diffsim.scenarios.ur5_reach.write_problem`` writes, so it is defined once.
The same discretisation and cost as diffsim's: ``IntegratedActionModelRK`` (``RKType.four``) of
``DifferentialActionModelFreeFwdDynamics`` (Pinocchio's ABA, full actuation) with zero-order-hold
controls (``ControlParametrizationModelPolyZero``); running cost ``w_u ‖u − g(q)‖²``
(``ResidualModelControlGrav``, integrated with the RK4 stage weights — the problem's
``quadrature="rk4"``) or ``w_u ‖u‖²`` (``effort="total"``), terminal cost
``w_p ‖p_tool − p*‖² + w_v ‖v‖²`` (Crocoddyl's quadratic activation is ``½‖r‖²``: weights ``2 w``).

Solved with FDDP (no limits) and BoxFDDP (the problem's ``tau_limits``), from the problem's initial guess (its ``tau_init`` held, and the states it gives). The time
is the median of ``--repeats`` solves after one warm-up solve, each from the same initial guess.
Writes ``crocoddyl_reach.json`` (cost, iterations, times, status, versions, the checks) and
``crocoddyl_reach_<solver>.npz`` (``tau`` [N, 6], ``q`` [N+1, 6], ``v`` [N+1, 6], ``cost``).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np


def build(p: dict, with_limits: bool):
    import crocoddyl
    import pinocchio as pin

    pm = pin.buildModelFromUrdf(p["urdf"])
    if pm.nq != 6 or pm.nv != 6:
        raise ValueError(f"expected the 6-joint UR5, got nq={pm.nq}, nv={pm.nv}")
    state = crocoddyl.StateMultibody(pm)
    actuation = crocoddyl.ActuationModelFull(state)
    nu = actuation.nu
    if p["effort"] == "above-gravity":  # u − g(q) at each RK4 stage state
        if p["quadrature"] != "rk4":
            raise ValueError("Crocoddyl integrates a state-dependent running cost with the RK4 weights only: "
                             "quadrature must be 'rk4'")
        effort = crocoddyl.ResidualModelControlGrav(state, nu)
    elif p["effort"] == "total":
        effort = crocoddyl.ResidualModelControl(state, nu)
    else:
        raise ValueError(f"unknown effort {p['effort']!r}")
    running = crocoddyl.CostModelSum(state, nu)
    running.addCost("effort", crocoddyl.CostModelResidual(state, effort), 2 * p["w_u"])
    terminal = crocoddyl.CostModelSum(state, nu)
    fid = pm.getFrameId(p["tool"])
    if fid >= pm.nframes:
        raise ValueError(f"no frame {p['tool']!r} in {p['urdf']}")
    reach = crocoddyl.ResidualModelFrameTranslation(state, fid, np.asarray(p["target"], float), nu)
    terminal.addCost("reach", crocoddyl.CostModelResidual(state, reach), 2 * p["w_p"])
    v_only = crocoddyl.ActivationModelWeightedQuad(np.r_[np.zeros(state.ndx - state.nv), np.ones(state.nv)])
    stop = crocoddyl.ResidualModelState(state, state.zero(), nu)
    terminal.addCost("stop", crocoddyl.CostModelResidual(state, v_only, stop), 2 * p["w_v"])

    def integrated(costs, dt):
        dam = crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, costs)
        control = crocoddyl.ControlParametrizationModelPolyZero(nu)
        return crocoddyl.IntegratedActionModelRK(dam, control, crocoddyl.RKType.four, dt)

    run_model, term_model = integrated(running, p["dt"]), integrated(terminal, 0.0)
    if with_limits:
        if p.get("tau_limits") is None:
            raise ValueError("the torque-limited solve needs tau_limits in the problem")
        lo, hi = p["tau_limits"]
        run_model.u_lb, run_model.u_ub = np.asarray(lo, float), np.asarray(hi, float)
    x0 = np.r_[np.asarray(p["q0"], float), np.asarray(p["v0"], float)]
    problem = crocoddyl.ShootingProblem(x0, [run_model] * int(p["horizon"]), term_model)
    return pm, state, problem


def solve(p: dict, solver_name: str, repeats: int, max_iter: int, th_stop: float, nthreads: int = 1):
    import crocoddyl

    pm, _, problem = build(p, with_limits=solver_name == "boxfddp")
    problem.nthreads = nthreads
    T = int(p["horizon"])
    us0 = [np.asarray(p["tau_init"], float).copy() for _ in range(T)]
    xs0 = problem.rollout(us0)
    make = {"fddp": crocoddyl.SolverFDDP, "boxfddp": crocoddyl.SolverBoxFDDP}[solver_name]

    def once():
        s = make(problem)
        s.th_stop = th_stop
        t = time.perf_counter()
        converged = s.solve([x.copy() for x in xs0], [u.copy() for u in us0], max_iter, False)
        return s, time.perf_counter() - t, converged

    once()  # warm-up
    runs = [once() for _ in range(repeats)]
    s, _, converged = runs[-1]
    times = [r[1] for r in runs]
    xs, us = np.asarray(s.xs), np.asarray(s.us)
    # the cost of the returned trajectory re-evaluated on a feasible rollout of its controls
    xs_roll = np.asarray(problem.rollout(list(us)))
    cost_roll = problem.calc(list(xs_roll), list(us))
    return {
        "solver": solver_name,
        "cost": float(s.cost),
        "cost_of_rollout": float(cost_roll),
        "iterations": int(s.iter),
        "converged": bool(converged),
        "stop": float(s.stop),
        "defect_max": float(np.abs(xs - xs_roll).max()),
        "time_median_s": float(np.median(times)),
        "time_min_s": float(np.min(times)),
        "times_s": times,
        "tau_max_abs": np.abs(us).max(axis=0).tolist(),
        "nthreads": int(getattr(problem, "nthreads", 1)),
    }, {"tau": us, "q": xs[:, : pm.nq], "v": xs[:, pm.nq :], "cost": float(s.cost)}


def dynamics_samples(p: dict, n: int, seed: int = 0):
    """Crocoddyl's continuous dynamics (the differential model's ``xout`` = ABA), one RK4 step (the
    running model's ``xnext``) and its running cost (``cost``, the RK4-weighted quadrature) at
    random states and controls, for the comparison with diffsim."""
    import crocoddyl

    _, _, problem = build(p, with_limits=False)
    rm = problem.runningModels[0]
    rd = rm.createData()
    dam, dd = rm.differential, rm.differential.createData()
    rng = np.random.default_rng(seed)
    X = np.c_[rng.uniform(-np.pi, np.pi, (n, 6)), rng.normal(0, 2, (n, 6))]
    U = rng.normal(0, 20, (n, 6))
    acc, xnext, cost = [], [], []
    for x, u in zip(X, U):
        dam.calc(dd, x, u)
        acc.append(np.array(dd.xout))
        rm.calc(rd, x, u)
        xnext.append(np.array(rd.xnext))
        cost.append(rd.cost)
    return {"x": X, "u": U, "acc": np.asarray(acc), "xnext": np.asarray(xnext), "step_cost": np.asarray(cost),
            "dt": p["dt"], "crocoddyl": crocoddyl.__version__}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", required=True, help="JSON written by diffsim.scenarios.ur5_reach.write_problem")
    ap.add_argument("--out", default=str(Path(__file__).with_name("results")))
    ap.add_argument("--solvers", default="fddp,boxfddp")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--max-iter", type=int, default=500)
    ap.add_argument("--th-stop", type=float, default=1e-9)
    ap.add_argument("--reference", default=None,
                    help="also write the small reference file of tests/plan/test_ur5_reach.py (.npz) here")
    ap.add_argument("--nthreads", type=int, default=1, help="Crocoddyl's threads over the knots (1: one core, as diffsim's jit)")
    ap.add_argument("--dynamics-samples", type=int, default=8, help="random states for the dynamics check (0: none)")
    a = ap.parse_args(argv)

    import crocoddyl
    import pinocchio as pin

    p = json.loads(Path(a.problem).read_text())
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {"problem": p, "versions": {"crocoddyl": crocoddyl.__version__, "pinocchio": pin.__version__,
                                          "numpy": np.__version__, "python": platform.python_version()},
               "machine": platform.processor() or platform.machine(), "repeats": a.repeats, "solvers": {}}
    for name in a.solvers.split(","):
        summary, arrays = solve(p, name, a.repeats, a.max_iter, a.th_stop, a.nthreads)
        results["solvers"][name] = summary
        np.savez(out / f"crocoddyl_reach_{name}.npz", **arrays)
        print(f"{name:8s} cost {summary['cost']:.10g}  iterations {summary['iterations']:3d}  converged {summary['converged']}"
              f"  median {summary['time_median_s'] * 1e3:.2f} ms  (min {summary['time_min_s'] * 1e3:.2f} ms)")
    samples = dynamics_samples(p, max(a.dynamics_samples, 4)) if (a.dynamics_samples or a.reference) else None
    if a.dynamics_samples:
        np.savez(out / "crocoddyl_reach_dynamics.npz", **samples)
    if a.reference:
        ref = {"problem_json": json.dumps(p), "crocoddyl": crocoddyl.__version__, "pinocchio": pin.__version__}
        for name in results["solvers"]:
            z = np.load(out / f"crocoddyl_reach_{name}.npz")
            ref.update({f"{name}_{k}": z[k] for k in ("tau", "q", "v", "cost")})
            ref[f"{name}_iterations"] = results["solvers"][name]["iterations"]
        ref.update({f"sample_{k}": samples[k][:4] for k in ("x", "u", "acc", "xnext", "step_cost")})
        np.savez_compressed(a.reference, **ref)
    (out / "crocoddyl_reach.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
