#!/usr/bin/env python
"""Flexible chains: the O(n) sweep vs the mass-matrix path, side by side in one run.

Serial chains of ``N`` flexible links (``diffsim.beam``, ``m`` clamped-free Euler–Bernoulli
bending modes per link in the link's x–y plane, L = 1 m, mu = 1 kg/m, EI_z = 100 N m², 8
Gauss points), revolute joints alternating about z and y, children at the parent's deformed
end, gravity (0, -9.81, 0). Two forward-dynamics paths, each ``jax.jit``-ed:

  sweep : ``diffsim.flexible.forward_dynamics_flexible`` (articulated-body sweep; never forms M)
  mm    : ``diffsim.flexible.forward_dynamics_mm`` (M from columns of the inverse dynamics by
          ``jacfwd``, bias from one inverse dynamics, dense ``solve``)

For every (N, m): compile time (first call, incl. tracing and lowering, with JAX's stage split),
run time per evaluation at a random state (16 dependent evaluations in one jitted fori_loop, so
that dispatch is excluded; interleaved rounds, each round a loop of >= 0.2 s;
median over rounds), and the max relative difference of the accelerations. Plus ``jit(vmap)``
over a batch of 256 states at N = 8, m = 2 (time per sample).

Usage::

    python benchmarks/bench_flexible.py            # full grid -> results/flexible_cpu.json
    python benchmarks/bench_flexible.py --quick    # N <= 8, m = 1 -> results/flexible_cpu_quick.json

If one compile of a path exceeds ``--compile-limit`` seconds (default 120), larger N are skipped
for that path (and that m); the skip is recorded in the JSON. Compile time grows about linearly
in N (the passes are unrolled in Python, ~1.5 s per link and path on 2 cores), so by default
N = 64 runs only for m = 2 (``--big-modes 2``; ``--big-modes all`` for the whole grid, ~25 min).
Each row also times a jitted no-op with the same arguments (the dispatch floor).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="N <= 8, m = 1, fewer rounds")
    p.add_argument("--sizes", default=None, help="comma list of N (default 2,4,8,16,32,64; quick 2,4,8)")
    p.add_argument("--modes", default=None, help="comma list of m (default 1,2,3; quick 1)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved timing rounds (default 5; quick 3)")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per timed loop (default 0.2)")
    p.add_argument("--compile-limit", type=float, default=120.0,
                   help="skip larger N for a path once one of its compiles exceeds this [s]")
    p.add_argument("--big-modes", default="2",
                   help="N > 32 only for these m (comma list, 'all' for every m); default 2, which keeps "
                        "the full run near 15 min on 2 cores (compile time grows ~linearly in N)")
    p.add_argument("--batch", type=int, default=256, help="vmap batch (N = 8, m = 2); 0 to skip")
    p.add_argument("--paths", default="sweep,mm", help="comma list of paths: sweep,mm")
    p.add_argument("--out", default=None, help="output JSON path")
    a = p.parse_args(argv)
    a.sizes = [int(s) for s in (a.sizes or ("2,4,8" if a.quick else "2,4,8,16,32,64")).split(",")]
    a.modes = [int(s) for s in (a.modes or ("1" if a.quick else "1,2,3")).split(",")]
    a.rounds = a.rounds or (3 if a.quick else 5)
    a.big_modes = None if a.big_modes == "all" else {int(s) for s in a.big_modes.split(",") if s.strip()}
    a.paths = [s.strip() for s in a.paths.split(",") if s.strip()]
    return a


ARGS = parse_args()
sys.path.insert(0, str(HERE))  # the shared benchmark helpers (benchmarks/harness.py)
from harness import CompileEvents, interleave, loadavg, machine_info, setup_jax  # noqa: E402

jax = setup_jax()  # CPU, the tests' XLA flags, float64 — before anything imports JAX
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim.beams import euler_bernoulli_modes  # noqa: E402
from diffsim.flexible import forward_dynamics_flexible, forward_dynamics_mm  # noqa: E402


PATHS = {"sweep": forward_dynamics_flexible, "mm": forward_dynamics_mm}
BEAM = dict(L=1.0, mu=1.0, EI_z=100.0, n_quad=8)
GRAVITY = (0.0, -9.81, 0.0)


# ======================================================================================
# model and state
# ======================================================================================

def chain(N: int, m: int):
    """``N`` flexible links, ``m`` bending modes each, revolute joints alternating z / y."""
    b = ds.ModelBuilder(gravity=GRAVITY)
    fb = ds.beam(BEAM["L"], BEAM["mu"], EI_z=BEAM["EI_z"], modes_y=euler_bernoulli_modes("cf", m),
                 n_quad=BEAM["n_quad"])
    parent = None
    for i in range(N):
        axis = (0.0, 0.0, 1.0) if i % 2 == 0 else (0.0, 1.0, 0.0)
        b.add_body(f"l{i}", parent, joint="revolute", axis=axis, pos=(0.0, 0.0, 0.0), flex=fb)
        parent = f"l{i}"
    return b.build()


def random_state(model, key, modal_scale=0.02):
    """Joint angles U(-π, π), modal amplitudes ``modal_scale``·N(0, 1) (mass-normalised shapes:
    tip deflections of a few cm), v ~ 0.5·N(0, 1), τ ~ N(0, 1) (joints and modes)."""
    t = model.topology
    k = jax.random.split(key, 4)
    qr = jax.random.uniform(k[0], (t.nq_rigid,), model.dtype, -jnp.pi, jnp.pi)
    qe = modal_scale * jax.random.normal(k[1], (model.nq - t.nq_rigid,), model.dtype)
    q = jnp.concatenate([qr, qe])
    v = 0.5 * jax.random.normal(k[2], (model.nv,), model.dtype)
    tau = jax.random.normal(k[3], (model.nv,), model.dtype)
    return q, v, tau


def rel_diff(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# ======================================================================================
# the benchmark
# ======================================================================================

K_LOOP = 16


def _looped(f, K):
    """``K`` dependent evaluations of ``f`` inside one jitted ``fori_loop``: per-evaluation time
    without Python dispatch and argument flattening (a jitted call with the model as argument
    costs 40–470 µs here before any arithmetic — the 'dispatch floor')."""

    def run(model, q, v, tau):
        def body(i, vv):
            return vv + 1e-12 * f(model, q, vv, tau)  # each evaluation depends on the previous one

        return jax.lax.fori_loop(0, K, body, v)

    return run


def bench(args) -> dict:
    res = {"meta": {"load_average_start": loadavg(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "dtype": "float64", "quick": args.quick, "sizes": args.sizes, "modes": args.modes,
                    "rounds": args.rounds, "min_time_per_loop_s": args.min_time,
                    "compile_limit_s": args.compile_limit,
                    "big_modes": "all" if args.big_modes is None else sorted(args.big_modes), "beam": BEAM, "gravity": GRAVITY,
                    "chain": "serial, revolute joints alternating about z and y, children at the parent's "
                             "deformed end; modes_y = euler_bernoulli_modes('cf', m)",
                    "state": "q_joint ~ U(-pi, pi), q_modal ~ 0.02 N(0,1), v ~ 0.5 N(0,1), tau ~ N(0,1)"}}
    res["meta"].update(machine_info(optional_modules=("jaxlib", "equinox")))
    ev = CompileEvents()
    t_start = time.perf_counter()
    rows = []
    skipped = {}
    for m in args.modes:
        blocked = {p: None for p in args.paths}  # path -> N whose compile exceeded the limit
        for N in args.sizes:
            if N > 32 and args.big_modes is not None and m not in args.big_modes:
                skipped.setdefault("grid", []).append({"N": N, "m": m, "why": "--big-modes (run time budget)"})
                continue
            model = chain(N, m)
            q, v, tau = random_state(model, jax.random.PRNGKey(1000 * m + N))
            row = {"N": N, "m": m, "nv": int(model.nv), "compile_s": {}, "compile_stages": {}, "us_per_eval": {}}
            outs, entries = {}, {}
            for p in args.paths:
                if blocked[p] is not None:
                    row.setdefault("skipped", {})[p] = f"compile at N = {blocked[p]} exceeded {args.compile_limit:g} s"
                    skipped.setdefault(p, []).append({"N": N, "m": m})
                    continue
                fn = jax.jit(PATHS[p])
                t_c, stages, out = ev.first_call(fn, model, q, v, tau)
                row["compile_s"][p] = t_c
                row["compile_stages"][p] = stages
                outs[p] = out
                loop = jax.jit(_looped(PATHS[p], K_LOOP))
                loop(model, q, v, tau).block_until_ready()
                entries[p] = ((lambda loop=loop: loop(model, q, v, tau).block_until_ready()), K_LOOP)
                print(f"  N={N:3d} m={m} nv={model.nv:4d} {p:5s} compile {t_c:7.2f} s", flush=True)
                if t_c > args.compile_limit:
                    blocked[p] = N
            for p, o in outs.items():
                row.setdefault("finite", {})[p] = bool(np.all(np.isfinite(np.asarray(o))))
            if "sweep" in outs and "mm" in outs:
                row["max_rel_diff"] = rel_diff(outs["sweep"], outs["mm"])
            if entries:
                noop = jax.jit(lambda model, q, v, tau: q)
                noop(model, q, v, tau).block_until_ready()
                entries["dispatch floor (jitted no-op, same args)"] = ((lambda: noop(model, q, v, tau).block_until_ready()), 1)
                r = interleave(entries, args.rounds, args.min_time, seed=N + 100 * m)
                row["us_per_eval"] = r
                if "sweep" in r and "mm" in r:
                    row["speedup_mm_over_sweep"] = r["mm"]["median"] / r["sweep"]["median"]
                print("           " + "  ".join(f"{p.split(' ')[0]} {v['median']:10.1f} us" for p, v in r.items())
                      + (f"  ratio {row['speedup_mm_over_sweep']:.2f}" if "speedup_mm_over_sweep" in row else "")
                      + (f"  rel diff {row['max_rel_diff']:.1e}" if "max_rel_diff" in row else ""), flush=True)
            rows.append(row)
            jax.clear_caches()
    res["grid"] = rows
    res["skipped"] = skipped

    # crossover and the N = 32 target, per m
    summ = {}
    for m in args.modes:
        rr = [r for r in rows if r["m"] == m and "speedup_mm_over_sweep" in r]
        faster = [r["N"] for r in rr if r["speedup_mm_over_sweep"] > 1.0]
        # smallest N from which the sweep stays faster for every larger measured N
        cross = None
        for r in sorted(rr, key=lambda r: r["N"]):
            if all(x["speedup_mm_over_sweep"] > 1.0 for x in rr if x["N"] >= r["N"]):
                cross = r["N"]
                break
        s = {"crossover_N": cross, "sweep_faster_at_N": faster}
        r32 = [r for r in rr if r["N"] == 32]
        if r32:
            s["ratio_N32"] = r32[0]["speedup_mm_over_sweep"]
            s["target_ratio_N32_ge_3"] = {"ratio": s["ratio_N32"], "target": 3.0, "met": s["ratio_N32"] >= 3.0}
        summ[f"m={m}"] = s
    res["summary"] = summ

    # vmap over a batch of states, N = 8, m = 2
    if args.batch and not args.quick:
        N, m, B = 8, 2, args.batch
        model = chain(N, m)
        Q, V, T = jax.vmap(lambda k: random_state(model, k))(jax.random.split(jax.random.PRNGKey(7), B))
        ent, vb = {}, {"N": N, "m": m, "batch": B, "compile_s": {}}
        outs = {}
        for p in args.paths:
            fn = jax.jit(jax.vmap(PATHS[p], in_axes=(None, 0, 0, 0)))
            t_c, _, out = ev.first_call(fn, model, Q, V, T)
            vb["compile_s"][p] = t_c
            outs[p] = out
            ent[p] = ((lambda fn=fn: fn(model, Q, V, T).block_until_ready()), B)
        if "sweep" in outs and "mm" in outs:
            vb["max_rel_diff"] = rel_diff(outs["sweep"], outs["mm"])
        vb["us_per_sample"] = interleave(ent, args.rounds, args.min_time, seed=99)
        if "sweep" in ent and "mm" in ent:
            vb["speedup_mm_over_sweep"] = vb["us_per_sample"]["mm"]["median"] / vb["us_per_sample"]["sweep"]["median"]
        res["vmap"] = vb
    res["meta"]["load_average_end"] = loadavg()
    res["meta"]["wall_s"] = time.perf_counter() - t_start
    return res


def print_table(res):
    meta = res["meta"]
    print(f"\nflexible chains, float64, CPU ({meta['nproc']} cores), jax {meta['versions']['jax']}, "
          f"load average start {meta['load_average_start']} end {meta['load_average_end']}")
    print("compile = first call [s]; run = median us per evaluation; ratio = mm / sweep (> 1: sweep faster)")
    print(f"{'N':>4s} {'m':>2s} {'nv':>4s} | {'sweep comp':>10s} {'mm comp':>9s} | {'sweep us':>10s} {'mm us':>10s}"
          f" | {'ratio':>6s} | {'rel diff':>8s} | {'floor us':>8s}")

    def f(x, fmt):
        return ("{:" + fmt + "}").format(x) if x is not None else "skipped"

    for r in res["grid"]:
        c, u = r["compile_s"], r["us_per_eval"]
        print(f"{r['N']:4d} {r['m']:2d} {r['nv']:4d} | {f(c.get('sweep'), '10.2f'):>10s} {f(c.get('mm'), '9.2f'):>9s} | "
              f"{f(u.get('sweep', {}).get('median'), '10.1f'):>10s} {f(u.get('mm', {}).get('median'), '10.1f'):>10s} | "
              f"{f(r.get('speedup_mm_over_sweep'), '6.2f'):>6s} | {f(r.get('max_rel_diff'), '8.1e'):>8s} | "
              f"{f(u.get('dispatch floor (jitted no-op, same args)', {}).get('median'), '8.1f'):>8s}")
    for k, s in res["summary"].items():
        line = f"{k}: crossover N = {s['crossover_N']}"
        if "ratio_N32" in s:
            t = s["target_ratio_N32_ge_3"]
            line += f", ratio at N = 32: {s['ratio_N32']:.2f} (target >= 3: {'MET' if t['met'] else 'missed'})"
        print(line)
    if res["skipped"]:
        print("skipped:", res["skipped"])
    if "vmap" in res:
        vb = res["vmap"]
        print(f"vmap, N = {vb['N']}, m = {vb['m']}, batch {vb['batch']}: us per sample "
              + ", ".join(f"{p} {v['median']:.2f}" for p, v in vb["us_per_sample"].items())
              + (f", ratio {vb['speedup_mm_over_sweep']:.2f}" if "speedup_mm_over_sweep" in vb else "")
              + f"; compile [s] {({p: round(t, 2) for p, t in vb['compile_s'].items()})}"
              + (f"; rel diff {vb['max_rel_diff']:.1e}" if "max_rel_diff" in vb else ""))
    print(f"wall {meta['wall_s']:.0f} s")


def main():
    args = ARGS
    res = bench(args)
    out = Path(args.out) if args.out else HERE / "results" / ("flexible_cpu_quick.json" if args.quick else "flexible_cpu.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    print_table(res)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
