"""Planning through contact (issue 16, scenario 4): throw the ball of ``ball-drop`` so that it lands,
after exactly one bounce, on a target point at a target time — optimised through the event-driven
simulation with :func:`diffsim.plan.solve_system`.

Setup: ``diffsim.scenarios.ball_drop.system`` (5 cm sphere, 50 g, released with its lowest point
0.25 m above the plane, Hu–Guo law K = 1e6 N/m^1.5, c_r = 0.8, frictionless plane, event mode:
located onsets and separations), ``t1`` = 1.2 s. Decision: the throw, the initial velocity
``(v_x, v_z)`` (``v0.ball[0]``, ``v0.ball[2]``; the body-frame linear velocity, the world's at the
identity attitude). The landing is the second impact: its time ``t_L`` =
:func:`diffsim.plan.simulated.onset_time` ``(traj, 2)`` (an event time, differentiable by the
implicit function theorem on the located root) and its point ``x_L = x_0 + v_x t_L`` (the plane is
frictionless and gravity vertical, so ``ẍ = 0`` exactly; checked against the simulated ``x(t)``).
Cost ``J = ½ [(x_L − x*)²/m² + (t_L − t*)²/s²]`` with ``(x*, t*) = (1.0 m, 0.85 s)``: two conditions,
two unknowns, optimum ``J = 0`` — reachable only through the bounce (the ball's first flight ends
near 0.42 s; the landing time and point depend on the rebound, i.e. the contact law).
Start: ``(0.3, 0.0)`` m/s, which lands at (0.18 m, 0.59 s), 0.82 m and 0.26 s off.

Gradients: forward mode through the solve (``diffrax.ForwardMode``) of the landing ``(x_L, t_L)``
with respect to ``(v_x, v_z)``, against central differences of diffsim at steps h = 1e-3 … 1e-5
m/s, at tolerances rtol = atol = 1e-8 … 1e-12 and two points (the start and the optimum). Expected
agreement (``experiments/ball_event_gradients.py``): the tangent through an impact is the exact
derivative of the discrete solution, whose primal error the step controller bounds but whose
tangent error it does not; central differences carry ``O(h²)`` truncation plus ``O(tol/h)`` noise.

Run: ``python experiments/plan_ball_throw.py`` (several minutes of compilation on 2 shared CPU
cores) → ``results/plan-ball-throw/`` (``summary.json``, ``README.md``, ``throw.png``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

import diffrax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import diffsim as ds  # noqa: E402
from diffsim.io.results import provenance, write_json  # noqa: E402
from diffsim.plan.simulated import onset_time  # noqa: E402
from diffsim.scenarios.ball_drop import system as ball_system  # noqa: E402
from diffsim.viz import new_figure, save_figure  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "plan-ball-throw"
NAMES = ("v0.ball[0]", "v0.ball[2]")
TARGET = (1.0, 0.85)  # x* [m], t* [s]
START = (0.3, 0.0)  # v_x, v_z [m/s]


def throw_system(tol: float = 1e-10, t1: float = 1.2, n_save: int = 241):
    """The ball-drop system for the throw (forward-mode tangents, failures as a status)."""
    s = ball_system({"t1": t1, "rtol": tol, "atol": tol, "n_save": n_save, "max_events": 8})
    return s.replace(options=dataclasses.replace(s.options, adjoint=diffrax.ForwardMode(), throw=False))


def landing(traj, s):
    """``(x_L, t_L)``: where and when the ball lands after one bounce (the second impact)."""
    t_land = onset_time(traj, 2)
    return jnp.stack([s.q0[0] + s.v0[0] * t_land, t_land])


def make_objective(target):
    target = jnp.asarray(target)

    def objective(traj, s):
        r = landing(traj, s) - target.astype(s.q0.dtype)
        return 0.5 * jnp.sum(r * r)

    return objective


def landing_of(s):
    """``θ = (v_x, v_z) -> (x_L, t_L)`` for the system ``s`` (compiled)."""
    return jax.jit(lambda th: landing(ds.simulate(ds.set_params(s, dict(zip(NAMES, th)))),
                                      ds.set_params(s, dict(zip(NAMES, th)))))


def gradient_table(points, tols, steps):
    rows = []
    for tol in tols:
        s = throw_system(tol)
        f = landing_of(s)
        jac = jax.jit(jax.jacfwd(f))
        for name, th in points.items():
            th = jnp.asarray(th)
            J_ad = np.asarray(jac(th))
            row = {"rtol": tol, "point": name, "theta": np.asarray(th).tolist(), "jacobian_ad": J_ad.tolist()}
            for h in steps:
                J_fd = np.stack([(np.asarray(f(th.at[k].add(h))) - np.asarray(f(th.at[k].add(-h)))) / (2 * h)
                                 for k in range(2)], axis=1)
                row[f"rel_err_h{h:g}"] = float(np.max(np.abs(J_ad - J_fd)) / np.max(np.abs(J_fd)))
                row[f"jacobian_fd_h{h:g}"] = J_fd.tolist()
            rows.append(row)
            print({k: v for k, v in row.items() if not k.startswith("jacobian")}, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tols", type=float, nargs="+", default=[1e-8, 1e-10, 1e-12])
    ap.add_argument("--steps", type=float, nargs="+", default=[1e-3, 1e-4, 1e-5])
    ap.add_argument("--max-iter", type=int, default=50)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {"provenance": provenance(), "target": {"x_m": TARGET[0], "t_s": TARGET[1]},
               "start": {"v_x": START[0], "v_z": START[1]}, "decision": list(NAMES), "load_average_start": os.getloadavg()}

    s = throw_system(1e-10)
    t = time.perf_counter()
    plan = ds.plan.solve_system(s, list(NAMES), make_objective(TARGET), init=dict(zip(NAMES, START)),
                                max_iter=args.max_iter, tol=1e-10, cost_tol=1e-20)
    jax.block_until_ready(plan.cost)
    wall = time.perf_counter() - t
    th = np.asarray(plan.theta)
    f = landing_of(s)
    land0, land = np.asarray(f(jnp.asarray(START))), np.asarray(f(jnp.asarray(th)))
    traj = plan.trajectory
    ev_t, ev_f = np.asarray(traj.contact.event_t), np.asarray(traj.contact.event_flip[:, 0])
    bounces = int(np.sum((ev_f == 1) & (ev_t < land[1])))
    x_sim = np.asarray(traj.q[:, 0])
    summary["solve"] = {"theta_opt": th.tolist(), "cost": float(plan.cost), "iterations": int(plan.iterations),
                        "status": plan.message, "first_call_s_incl_compile": wall,
                        "cost_history": np.asarray(plan.cost_history)[:int(plan.iterations) + 1].tolist(),
                        "landing_start": land0.tolist(), "landing_opt": land.tolist(),
                        "miss_start_m": float(abs(land0[0] - TARGET[0])), "late_start_s": float(land0[1] - TARGET[1]),
                        "landing_error_m": float(abs(land[0] - TARGET[0])),
                        "landing_time_error_s": float(abs(land[1] - TARGET[1])),
                        "bounces_before_landing": bounces, "impacts_within_t1": int(traj.contact.impacts[0]),
                        "event_times_s": [float(x) for x in ev_t[np.isfinite(ev_t)]],
                        "x_sim_vs_vx_t_max_abs_m": float(np.max(np.abs(x_sim - th[0] * np.asarray(traj.t)))),
                        "trajectory_status": int(traj.status)}
    print(summary["solve"], flush=True)
    write_json(OUT / "summary.json", summary)

    summary["gradients"] = gradient_table({"start": START, "optimum": tuple(th)}, args.tols, args.steps)
    summary["load_average_end"] = os.getloadavg()
    write_json(OUT / "summary.json", summary)

    # figures: the two throws in the x–z plane, the cost history
    t0 = ds.simulate(ds.set_params(s, dict(zip(NAMES, START))))
    fig, (ax, bx) = new_figure(1, 2, figsize=(11, 4))
    for tr, lab, c in ((t0, f"start v = ({START[0]}, {START[1]}) m/s", "C1"),
                       (traj, f"optimum v = ({th[0]:.4f}, {th[1]:.4f}) m/s", "C0")):
        ax.plot(np.asarray(tr.q[:, 0]), np.asarray(tr.q[:, 2]), color=c, lw=1.2, label=lab)
    ax.axhline(0.02, color="k", lw=0.5, ls=":")
    ax.plot([TARGET[0]], [0.02], "kx", ms=10, label=f"target x* = {TARGET[0]} m at t* = {TARGET[1]} s")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("height of the centre z [m]")
    ax.legend(fontsize=8)
    hist = np.asarray(summary["solve"]["cost_history"])
    bx.semilogy(np.arange(hist.size), np.maximum(hist, 1e-30), "o-")
    bx.set_xlabel("L-BFGS iteration")
    bx.set_ylabel("J")
    save_figure(fig, OUT / "throw.png")

    so = summary["solve"]
    lines = ["# Throw the ball to land after one bounce on a target (planning through contact)", "",
             "Generated by `python experiments/plan_ball_throw.py` (setup in its docstring).", "",
             f"Start (v_x, v_z) = {START} m/s lands at x = {so['landing_start'][0]:.4f} m, t = "
             f"{so['landing_start'][1]:.4f} s ({so['miss_start_m']:.3f} m short of the target x* = {TARGET[0]} m).",
             f"`ds.plan.solve_system` (L-BFGS, forward-mode gradients through the event-driven simulation, "
             f"rtol = atol = 1e-10): {so['status']} in {so['iterations']} iterations, J = {so['cost']:.2e}; "
             f"v = ({th[0]:.6f}, {th[1]:.6f}) m/s lands at x = {land[0]:.9f} m, t = {land[1]:.9f} s after "
             f"{bounces} bounce (landing error {so['landing_error_m']:.1e} m, {so['landing_time_error_s']:.1e} s). "
             f"Simulated x(t) vs v_x t: {so['x_sim_vs_vx_t_max_abs_m']:.1e} m.", "",
             "Jacobian of the landing (x_L, t_L) w.r.t. (v_x, v_z): forward-mode AD vs central differences "
             "(max abs difference / max abs entry):", "",
             "| rtol = atol | point | " + " | ".join(f"h = {h:g} m/s" for h in args.steps) + " |",
             "|---|---|" + "---|" * len(args.steps)]
    for r in summary["gradients"]:
        lines.append(f"| {r['rtol']:.0e} | {r['point']} | " + " | ".join(f"{r[f'rel_err_h{h:g}']:.1e}" for h in args.steps)
                     + " |")
    lines += ["", "![throw](throw.png)", ""]
    (OUT / "README.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
