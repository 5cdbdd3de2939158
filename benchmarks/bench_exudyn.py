#!/usr/bin/env python
"""Flexible-link runs, diffsim vs Exudyn at equal accuracy, side by side in one run.

Both programs solve the same problems — the spin-up beam (Kane, Ryan & Banerjee 1987,
ωs = 6 rad/s, 30 s) and S3's two-link arm (rigid-elastic, one revolution) — with their own
discretisations: diffsim an assumed-mode Euler–Bernoulli beam (n modes, adaptive Tsit5 at
tolerance rtol), Exudyn a geometrically exact Simo–Reissner beam (n elements, implicit
generalized-α at step h). The two converge to slightly different models (diffsim's is
inextensible with second-order foreshortening; Exudyn's stretches and shears), so the
*accuracy* of each setting is its distance from its own converged solution (max over time of
the tip-deflection difference), and for a target accuracy we time the fastest setting of each
that reaches it. diffsim is timed after compile (second call); the compile time is reported
separately. Exudyn's time is its ``SolveDynamic`` only.

Also: generalized-α on S3 elastic-elastic with polynomial shapes (stiff: Tsit5 needs ~27 000
steps), exact Jacobian vs seed 003's reduced Jacobian — cost per step and Newton iterations.

    python benchmarks/bench_exudyn.py [--quick]   # -> benchmarks/results/flexible_vs_exudyn.json
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import diffrax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import exudyn_models as em  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim.flexible import reduced_newmark_jacobian  # noqa: E402
from diffsim.scenarios import seed003, spinup  # noqa: E402

OUT = Path(__file__).parent / "results"


def _time_diffsim(make, repeats=2):
    """(result, compile+first run [s], best run after compile [s])."""
    t0 = time.perf_counter()
    r = make()
    jax.block_until_ready(r)
    first = time.perf_counter() - t0
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = make()
        jax.block_until_ready(r)
        best = min(best, time.perf_counter() - t0)
    return r, first, best


def _spinup_diffsim(n, rtol, t_grid):
    m = spinup.model(n, True)
    pres = ds.prescribe(m, ["hub"], lambda t: spinup.hub_angle(t)[None])
    ctrl = diffrax.PIDController(rtol=rtol, atol=rtol, jump_ts=jnp.asarray([15.0]))

    def make():
        tr = ds.simulate(m, jnp.zeros(m.nq), jnp.zeros(m.nv), 30.0, saveat=jnp.asarray(t_grid), prescribed=pres,
                         controller=ctrl, max_steps=500_000)
        return tr.q[:, 1:] @ m.flex[0].end_phi_d[1]

    return _time_diffsim(make)


def _two_link_diffsim(n, rtol, t_grid, case="rigid-elastic"):
    m = seed003.model(case, n)
    w = seed003.DATA["omega"]
    pres = ds.prescribe(m, ["joint1", "joint2"], lambda t: jnp.stack([w * t, -w * t]))
    v0 = jnp.zeros(m.nv).at[0].set(w).at[1].set(-w)
    i2 = m.topology.body_index("link2")

    def make():
        tr = ds.simulate(m, jnp.zeros(m.nq), v0, float(t_grid[-1]), saveat=jnp.asarray(t_grid), prescribed=pres,
                         rtol=rtol, atol=rtol * 1e-2, max_steps=1_000_000)
        return tr.q[:, m.topology.e_q_slice(i2)] @ m.flex[i2].end_phi_d[1]

    return _time_diffsim(make)


def _study(name, diffsim_settings, exudyn_settings, run_d, run_e, targets):
    t_grid = None
    rows_d, rows_e = [], []
    for s in exudyn_settings:
        r = run_e(*s)
        t_grid = r["t"] if t_grid is None else t_grid
        rows_e.append(dict(setting=s, y=np.interp(t_grid, r["t"], r["tip_deflection"]), wall_s=r["wall_time"]))
        print(f"  exudyn {name} {s}: {r['wall_time']:.2f} s", flush=True)
    for s in diffsim_settings:
        y, first, best = run_d(*s, t_grid)
        rows_d.append(dict(setting=s, y=np.asarray(y), wall_s=best, compile_s=first - best))
        print(f"  diffsim {name} {s}: {best:.3f} s (+{first - best:.1f} s compile)", flush=True)
    ref_d, ref_e = rows_d[-1]["y"], rows_e[-1]["y"]  # the finest setting of each = its converged solution
    for r in rows_d:
        r["error_m"] = float(np.max(np.abs(r["y"] - ref_d)))
    for r in rows_e:
        r["error_m"] = float(np.max(np.abs(r["y"] - ref_e)))
    out = {"models_differ_by_m": float(np.max(np.abs(ref_d - ref_e))),
           "diffsim": [{k: v for k, v in r.items() if k != "y"} for r in rows_d[:-1]],
           "exudyn": [{k: v for k, v in r.items() if k != "y"} for r in rows_e[:-1]],
           "equal_accuracy": []}
    for tol in targets:
        d = [r for r in rows_d[:-1] if r["error_m"] <= tol]
        e = [r for r in rows_e[:-1] if r["error_m"] <= tol]
        if d and e:
            bd = min(d, key=lambda r: r["wall_s"])
            be = min(e, key=lambda r: r["wall_s"])
            out["equal_accuracy"].append({"target_m": tol, "diffsim_s": bd["wall_s"], "diffsim_setting": bd["setting"],
                                          "exudyn_s": be["wall_s"], "exudyn_setting": be["setting"],
                                          "exudyn_over_diffsim": be["wall_s"] / bd["wall_s"]})
        else:
            out["equal_accuracy"].append({"target_m": tol, "note": "not reached by both in the grid"})
    return out


def _newmark_cost(quick):
    m = seed003.model("elastic-elastic", 2 if quick else 3, shapes="poly")
    w = seed003.DATA["omega"]
    pres = ds.prescribe(m, ["joint1", "joint2"], lambda t: jnp.stack([w * t, -w * t]))
    v0 = jnp.zeros(m.nv).at[0].set(w).at[1].set(-w)
    t1 = 2 * np.pi / w
    h = 2e-4  # newton_tol 1e-8: at 1e-10 the simplified (reduced) Newton stalls on round-off at t ≈ 0.51 s
    res = {}
    for name, jac in (("exact", "exact"), ("reduced", reduced_newmark_jacobian(m, pres))):
        solver = ds.GeneralizedAlpha(rho_inf=0.9, jacobian=jac, newton_tol=1e-8)

        def make():
            return ds.simulate(m, jnp.zeros(m.nq), v0, t1, solver=solver, dt0=h, prescribed=pres, saveat=2,
                               controller=diffrax.ConstantStepSize(), max_steps=100_000).q[-1]

        q, first, best = _time_diffsim(make, repeats=1)
        n_steps = int(round(t1 / h))
        res[name] = {"wall_s": best, "compile_s": first - best, "steps": n_steps, "us_per_step": 1e6 * best / n_steps,
                     "q_final": np.asarray(q).tolist()}
        print(f"  generalized-α {name}: {1e6 * best / n_steps:.0f} µs/step", flush=True)
    res["max_abs_difference_final_q"] = float(np.max(np.abs(np.array(res["exact"]["q_final"]) - np.array(res["reduced"]["q_final"]))))
    res["reduced_speedup"] = res["exact"]["wall_s"] / res["reduced"]["wall_s"]
    return res


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    result = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "jax": jax.__version__,
                          "exudyn": em.exu.__version__}}
    print("spin-up beam (ωs = 6 rad/s, 30 s)")
    d_set = [(2, 1e-5), (2, 1e-6), (3, 1e-6), (3, 1e-7), (4, 1e-8), (5, 1e-11)]
    e_set = [(4, 2e-3), (8, 2e-3), (8, 1e-3), (16, 1e-3), (32, 5e-4)]
    if quick:
        d_set, e_set = [(2, 1e-6), (3, 1e-9)], [(4, 2e-3), (8, 1e-3)]
    result["spinup"] = _study(
        "spinup", d_set, e_set, _spinup_diffsim,
        lambda n, h: em.spinup(6.0, n_elements=n, h=h, dt_out=0.05), targets=(1e-2, 3e-3, 1e-3))
    print("S3 rigid-elastic (one revolution)")
    d_set = [(1, 1e-6), (2, 1e-6), (2, 1e-8), (3, 1e-8), (4, 1e-11)]
    e_set = [(4, 1e-4), (8, 1e-4), (16, 5e-5), (32, 2.5e-5), (64, 1.25e-5)]
    if quick:
        d_set, e_set = [(1, 1e-6), (2, 1e-9)], [(4, 1e-4), (8, 5e-5)]
    result["two_link_rigid_elastic"] = _study(
        "two-link", d_set, e_set, _two_link_diffsim,
        lambda n, h: em.two_link("rigid-elastic", n_elements=n, h=h, dt_out=1e-3), targets=(1e-3, 3e-4, 1e-4))
    print("generalized-α, exact vs reduced Jacobian (S3 elastic-elastic, polynomial shapes)")
    result["newmark_jacobians"] = _newmark_cost(quick)
    OUT.mkdir(exist_ok=True)
    path = OUT / ("flexible_vs_exudyn_quick.json" if quick else "flexible_vs_exudyn.json")
    path.write_text(json.dumps(result, indent=2, default=float) + "\n")
    for k in ("spinup", "two_link_rigid_elastic"):
        print(k, "models differ by", f"{result[k]['models_differ_by_m']:.2e} m")
        for row in result[k]["equal_accuracy"]:
            print("  ", row)
    print("written", path)


if __name__ == "__main__":
    main()
