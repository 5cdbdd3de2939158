"""S2 (seed 002): the planar space robot sliding its tip on a plane, rigid contact by Lemke.

    python experiments/seed002_space_contact.py [--quick]

1. The scenario at the paper's step (0.01 s, acceleration-level LCP): figures like the paper's
   figs 4–9 and the contact-mode intervals against the paper's account.
2. Step convergence: dt = 0.01, 0.005, 0.0025, 0.001 — mode boundaries, tip travel, forces.
3. The velocity-level (Stewart–Trinkle / Anitescu–Potra) stepper on the same scenario.
4. Compliant contact (the contact issue's linear spring–damper, critically damped, with a
   smoothed Coulomb friction) with growing stiffness K against the LCP solution: the normal
   force and the tip path converge to the rigid solution (figure).

Writes ``experiments/results/seed002/`` (``summary.json``, figures).
"""

from __future__ import annotations

import argparse
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
from diffsim.scenarios import seed002 as s2  # noqa: E402
from diffsim.scenarios.base import write_json  # noqa: E402
from diffsim.viz.plots import plot_series  # noqa: E402

OUT = Path(__file__).parent / "results" / "seed002"


def boundaries(intervals):
    """All interval end points except 0 and t1, sorted (the mode switch times)."""
    pts = sorted({round(x, 6) for v in intervals.values() for iv in v for x in iv})
    return [p for p in pts if 0.0 < p < 5.0]


def compliant_run(K, t1, rtol=1e-8):
    """The same robot, controls and plane with a critically damped linear spring–damper and
    smoothed Coulomb friction (width 1e-3 m/s); returns (t, λ_N, λ_T, tip_xy, wall)."""
    m = s2.model()
    q0, v0 = s2.initial_state(m)
    yP = float(s2.plane_height(m))
    m_eff = 5.0  # kg, the tip's apparent mass along the normal at q0 (order of magnitude)
    c = ds.compliant_contact(m, [ds.ContactPoint(s2.TIP_BODY, (s2.DATA["L"], 0.0, 0.0))], [ds.Plane((0.0, -1.0, 0.0), -yP)],
                    normal=ds.normal_law("linear", K=K, c=2.0 * np.sqrt(K * m_eff)),
                    friction=ds.friction_law("smooth-coulomb", mu_k=s2.DATA["mu"], width=1e-3))
    # the LCP scenario starts pressing with 4 N: start the spring at the matching penetration
    q0c = q0.at[1].add(4.0 / K)
    ts = time.perf_counter()
    tr = ds.simulate(m, q0c, v0, t1, contact=c, tau=s2.controls(m, yP), saveat=int(round(t1 / 0.005)) + 1,
                     rtol=rtol, atol=rtol, max_steps=2_000_000, max_events=64)
    jax.block_until_ready(tr.q)
    wall = time.perf_counter() - ts
    f = tr.contact_forces()
    tip = jax.vmap(lambda q: s2.tip(m, q))(tr.q)
    t_dir = jnp.array([1.0, 0.0, 0.0])
    lam_t = jnp.einsum("tki,i->tk", f.f_t, t_dir)[:, 0] if f.f_t.ndim == 3 else f.f_t[:, 0]
    return np.asarray(tr.t), np.asarray(f.f_n)[:, 0], np.asarray(lam_t), np.asarray(tip), wall, tr.message


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="coarser study (CI-sized)")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {}

    # 1. the scenario at the paper's step
    from diffsim.scenarios import SCENARIOS, run_scenario

    s = run_scenario(SCENARIOS["seed002-space-contact"], OUT, [])
    summary["scenario"] = {k: s[k] for k in ("intervals", "tip_travel_m", "normal_force_max_N", "friction_force_max_abs_N",
                                             "penetration_max_m", "lcp_failures", "status", "sim_wall_time_s")}
    summary["paper"] = s2.PAPER
    print("dt 0.01:", {k: [(round(a, 2), round(b, 2)) for a, b in v] for k, v in s["intervals"].items()})

    # wall time after compile (the same compiled function, a second call)
    m = s2.model()
    rc = s2.contact_model(m)
    q0, v0 = s2.initial_state(m)
    yP = s2.plane_height(m)
    for method in ("acceleration", "velocity"):
        t0 = time.perf_counter()
        jax.block_until_ready(s2._simulate(m, rc, q0, v0, yP, 5.0, 0.01, method).q)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        jax.block_until_ready(s2._simulate(m, rc, q0, v0, yP, 5.0, 0.01, method).q)
        summary[f"wall_{method}_dt0.01"] = dict(first_call_s=t_first, after_compile_s=time.perf_counter() - t0)
        print(method, summary[f"wall_{method}_dt0.01"])

    # 2. step convergence, 3. velocity level
    dts = (0.01, 0.005, 0.0025) if args.quick else (0.01, 0.005, 0.0025, 0.001)
    conv = {}
    runs = {}
    for method in ("acceleration", "velocity"):
        for dt in dts:
            mm, rcc, tr = s2.run(dt=dt, method=method)
            a = s2.results(mm, rcc, tr)
            su = s2.summarize(a)
            runs[method, dt] = a
            conv[f"{method}_{dt}"] = dict(dt=dt, method=method, intervals=su["intervals"], switch_times=boundaries(su["intervals"]),
                                          tip_travel_m=su["tip_travel_m"], normal_force_max_N=su["normal_force_max_N"],
                                          lcp_failures=su["lcp_failures"], status=int(tr.status))
            print(method, dt, "travel", su["tip_travel_m"], "switches", conv[f"{method}_{dt}"]["switch_times"])
    summary["convergence"] = conv
    fine = runs["acceleration", dts[-1]]
    # tip path differences against the finest acceleration-level run, on the coarse grid
    diffs = {}
    for (method, dt), a in runs.items():
        tf = fine["t"]
        xs = np.interp(a["t"], tf, fine["tip_xy"][:, 0])
        diffs[f"{method}_{dt}"] = float(np.abs(a["tip_xy"][:, 0] - xs).max())
    summary["tip_x_max_diff_vs_finest_m"] = diffs
    print("tip x vs finest", diffs)
    plot_series({f"{meth[0]} dt={dt}": (a["t"][:-1], a["lambda_N"]) for (meth, dt), a in runs.items()},
                OUT / "convergence_normal_force.png", ylabel="λ_N [N]",
                title="S2: normal force as the step shrinks (a = acceleration, v = velocity level)")
    plot_series({f"{meth[0]} dt={dt}": (a["t"], a["tip_xy"][:, 0]) for (meth, dt), a in runs.items()},
                OUT / "convergence_tip_x.png", ylabel="tip x [m]", title="S2: tip x as the step shrinks")

    # 4. compliant contact with growing stiffness
    Ks = (1e3, 1e4, 1e5) if args.quick else (1e3, 1e4, 1e5, 1e6)
    comp = {}
    curves = {"LCP (dt 1e-3)" if not args.quick else f"LCP (dt {dts[-1]})": (fine["t"][:-1], fine["lambda_N"])}
    tipc = {"LCP": (fine["t"], fine["tip_xy"][:, 0])}
    for K in Ks:
        t, fn, ft, tip, wall, status = compliant_run(K, 5.0)
        # compare on the LCP grid where both are in steady contact phases (away from switches)
        lam_ref = np.interp(t, fine["t"][:-1], fine["lambda_N"])
        sw = boundaries(s2.contact_intervals(fine))
        away = np.all(np.abs(t[:, None] - np.array(sw)[None, :]) > 0.05, axis=1) & (t < 4.99)
        tip_ref = np.interp(t, fine["t"], fine["tip_xy"][:, 0])
        comp[f"{K:g}"] = dict(K=K, status=status, wall_s=wall,
                              normal_force_mean_abs_diff_N=float(np.mean(np.abs(fn - lam_ref)[away])),
                              normal_force_max_abs_diff_N=float(np.max(np.abs(fn - lam_ref)[away])),
                              tip_x_max_diff_m=float(np.max(np.abs(tip[:, 0] - tip_ref))))
        curves[f"compliant K={K:g}"] = (t, fn)
        tipc[f"K={K:g}"] = (t, tip[:, 0])
        print("compliant", K, comp[f"{K:g}"])
    summary["compliant_vs_lcp"] = comp
    plot_series(curves, OUT / "compliant_vs_lcp_normal_force.png", ylabel="λ_N [N]",
                title="S2: compliant contact (growing K) → the LCP's rigid contact")
    plot_series(tipc, OUT / "compliant_vs_lcp_tip_x.png", ylabel="tip x [m]",
                title="S2: tip x, compliant (growing K) vs LCP")
    write_json(OUT / "summary.json", summary)
    print("wrote", OUT / "summary.json")


if __name__ == "__main__":
    sys.exit(main())
