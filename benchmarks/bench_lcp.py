#!/usr/bin/env python
"""LCP timing and accuracy: diffsim's Lemke solver (``diffsim.lemke``, JAX) vs ``lemkelcp``
(pure-Python Lemke) and OSQP (C QP solver), side by side in one run.

Problems (fixed seeds, float64): for each size n, ``--batch`` random LCPs ``w = M z + q``,
q ~ N(0, 1), in two families:

  * ``sym``: ``M = A Aᵀ + 0.3 I`` with A ~ N(0, 1) (n × n), symmetric positive definite, so the
    LCP is the optimality condition of the QP ``min ½ zᵀMz + qᵀz  s.t.  z ≥ 0`` and OSQP applies;
  * ``nonsym``: the same plus a skew part ``S − Sᵀ`` (S ~ N(0, 1)); still positive definite
    (``xᵀMx = xᵀ(A Aᵀ + 0.3 I)x > 0``), hence a P-matrix with a unique solution, but not a QP:
    Lemke solvers only (diffsim, lemkelcp).

Per (family, n), in one set of interleaved timing rounds (``harness.interleave``; shuffled order):

  * ``diffsim single``: ``jax.jit(lemke)`` on one problem at a time + ``block_until_ready``,
    cycled over the first ``--problems`` problems, after compile; and a jitted no-op with the
    same arguments (the dispatch floor);
  * ``diffsim batched``: ``jax.jit(jax.vmap(lemke))`` over all ``--batch`` problems, after
    compile (µs per solve and solves/s; the while loop runs in lock-step over the batch, so a
    batch costs about its largest pivot count);
  * ``lemkelcp``: ``lemkelcp(M, q, maxIter)`` with the same pivot bound as diffsim
    (``max(100, 20 n)``), on the same ``--problems`` problems. The released lemkelcp 0.1 keeps
    its column positions in ``range`` objects and fails on its first pivot under Python 3; the
    script then uses a subclass of its tableau with the upstream fix (``np.arange``; the
    algorithm is unchanged) and records that in the JSON;
  * ``osqp setup+solve`` (``sym`` only): ``OSQP().setup(P = triu(M) CSC, q, A = I, l = 0, u = ∞,
    eps_abs = eps_rel = 1e-10, polishing = True) + solve()`` per problem (the CSC matrices are
    built outside the timed loop); and ``osqp solve``: ``solve()`` alone on solvers set up
    beforehand (cold start: ``warm_starting = False``; the KKT factorisation is reused).

Compile time: first call minus the steady median (with JAX's trace/lower/XLA split). Accuracy on
the ``--problems`` problems: max |z_diffsim − z_ref|, and per solver the natural residual
``max |min(z, Mz + q)|`` (both feasibility and complementarity; ``w`` recomputed from ``z`` in
float64), the complementarity ``max |z_i w_i|`` and the infeasibility ``max(0, −min z, −min w)``;
for the batch: status counts, pivot counts and the largest residual over all problems.

Target (the issue's): batched Lemke on 8 × 8 problems (``sym``, batch 1024) ≥ 1e5 solves/s on
this CPU; the verdict is printed and stored under ``targets`` (with ``--quick`` the batch is
smaller, so the verdict is only indicative).

Usage::

    python benchmarks/bench_lcp.py            # n = 2 … 64, batch 1024 -> results/bench_lcp.json
    python benchmarks/bench_lcp.py --quick    # n = 2, 8, batch 128, fewer rounds -> results/bench_lcp_quick.json
    python benchmarks/bench_lcp.py --sizes 8 --batch 8192 --families sym --skip lemkelcp,osqp

The machine may be shared: compare the ratios taken within one run, not absolute times across runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

FAMILIES = ("sym", "nonsym")
SECTIONS = ("lemkelcp", "osqp", "batch", "floor", "s2")
TARGET_N, TARGET_BATCH, TARGET_RATE = 8, 1024, 1e5


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="sizes 2,8, batch 128, 4 problems, 2 rounds (smoke test)")
    p.add_argument("--sizes", default=None, help="comma list of n (default 2,4,8,16,32,64; quick 2,8)")
    p.add_argument("--families", default=",".join(FAMILIES), help=f"comma list of problem families: {','.join(FAMILIES)}")
    p.add_argument("--skip", default="", help=f"comma list of peers/sections to skip: {','.join(SECTIONS)}")
    p.add_argument("--batch", type=int, default=None, help="problems per vmapped call (default 1024; quick 128)")
    p.add_argument("--problems", type=int, default=None,
                   help="problems of the single-solve timings and the accuracy comparison (default 16; quick 4)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved timing rounds (default 5; quick 2)")
    p.add_argument("--min-time", type=float, default=None, help="seconds per timed loop (default 0.2; quick 0.05)")
    p.add_argument("--osqp-eps", type=float, default=1e-10, help="OSQP eps_abs = eps_rel")
    p.add_argument("--osqp-max-iter", type=int, default=100_000, help="OSQP max_iter")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="output JSON path")
    a = p.parse_args(argv)
    a.skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    bad = a.skip - set(SECTIONS)
    if bad:
        p.error(f"unknown entries in --skip: {sorted(bad)}")
    a.families = [s.strip() for s in a.families.split(",") if s.strip()]
    if set(a.families) - set(FAMILIES):
        p.error(f"unknown families: {sorted(set(a.families) - set(FAMILIES))}")
    a.sizes = [int(s) for s in (a.sizes or ("2,8" if a.quick else "2,4,8,16,32,64")).split(",") if s.strip()]
    a.batch = a.batch or (128 if a.quick else 1024)
    a.problems = min(a.problems or (4 if a.quick else 16), a.batch)
    a.rounds = a.rounds or (2 if a.quick else 5)
    a.min_time = a.min_time if a.min_time is not None else (0.05 if a.quick else 0.2)
    return a


ARGS = parse_args()
sys.path.insert(0, str(HERE))  # the shared benchmark helpers (benchmarks/harness.py)
from harness import CompileEvents, interleave, loadavg, machine_info, setup_jax  # noqa: E402

jax = setup_jax()  # CPU, the tests' XLA flags, float64 — before anything imports JAX
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from diffsim import LCPStatus, lemke  # noqa: E402



def max_pivots(n: int) -> int:
    return max(100, 20 * n)  # lemke's default bound; lemkelcp gets the same


# ======================================================================================
# problems and residuals
# ======================================================================================

def problems(family: str, n: int, batch: int, seed: int):
    """``batch`` LCPs of size n: (M [B, n, n], q [B, n]), float64, reproducible per (seed, family, n)."""
    rng = np.random.default_rng([seed, FAMILIES.index(family), n])
    A = rng.standard_normal((batch, n, n))
    M = A @ np.swapaxes(A, 1, 2) + 0.3 * np.eye(n)
    if family == "nonsym":
        S = rng.standard_normal((batch, n, n))
        M = M + S - np.swapaxes(S, 1, 2)
    q = rng.standard_normal((batch, n))
    return M, q


def residuals(M, q, z) -> dict:
    """Worst case over the problems (leading axes) of: the natural residual max|min(z, w)|, the
    complementarity max|z_i w_i| and the infeasibility max(0, −min z, −min w), w = M z + q.
    Problems with no solution (NaN z) are left out and counted."""
    M, q, z = np.asarray(M), np.asarray(q), np.asarray(z, dtype=float)
    ok = np.all(np.isfinite(z), axis=-1)
    if not np.any(ok):
        return {"natural": None, "complementarity": None, "infeasibility": None, "failed": int(np.sum(~ok))}
    M, q, z = M[ok], q[ok], z[ok]
    w = np.einsum("...ij,...j->...i", M, z) + q
    return {"natural": float(np.max(np.abs(np.minimum(z, w)))),
            "complementarity": float(np.max(np.abs(z * w))),
            "infeasibility": float(max(0.0, -np.min(z), -np.min(w))),
            "failed": int(np.sum(~ok))}


def max_abs_diff(za, zb):
    za, zb = np.asarray(za, float), np.asarray(zb, float)
    ok = np.all(np.isfinite(za), axis=-1) & np.all(np.isfinite(zb), axis=-1)
    return float(np.max(np.abs(za[ok] - zb[ok]))) if np.any(ok) else None


# ======================================================================================
# reference solvers
# ======================================================================================

def load_lemkelcp():
    """``(solve(M, q, maxIter) -> (z, exit_code, msg), info)``.

    The package's ``__init__`` does ``from lemkelcp import lemkelcp``, which binds the *submodule*
    ``lemkelcp.lemkelcp`` (the function is ``lemkelcp.lemkelcp.lemkelcp``). Release 0.1 stores
    ``wPos``/``zPos`` as ``range`` objects and assigns into them on the first pivot (TypeError in
    Python 3); upstream's fix is ``np.arange``. If the installed tableau has the bug, solve with a
    subclass that applies exactly that fix."""
    mod = importlib.import_module("lemkelcp.lemkelcp")
    base = mod.lemketableau
    probe = base(np.eye(1), -np.ones(1))
    if not isinstance(probe.wPos, range):
        return mod.lemkelcp, {"patched": False}

    class Tableau(base):
        def __init__(self, M, q, maxIter=100):
            super().__init__(M, q, maxIter)
            self.wPos = np.arange(self.n)
            self.zPos = np.arange(self.n, 2 * self.n)

    def solve(M, q, maxIter=100):
        return Tableau(M, q, maxIter).lemkeAlgorithm()

    return solve, {"patched": True,
                   "patch": "lemketableau.wPos/zPos as np.arange instead of range (upstream fix; released 0.1 "
                            "raises TypeError on its first pivot under Python 3)"}


def osqp_setup(P, q, A, l, u, args):
    import osqp

    s = osqp.OSQP()
    s.setup(P=P, q=q, A=A, l=l, u=u, eps_abs=args.osqp_eps, eps_rel=args.osqp_eps, polishing=True,
            warm_starting=False, max_iter=args.osqp_max_iter, verbose=False)
    return s


def osqp_data(M, q):
    """The QP ``min ½ zᵀMz + qᵀz s.t. 0 ≤ z`` in OSQP's form (upper-triangular CSC P, A = I)."""
    import scipy.sparse as sp

    n = q.shape[0]
    return (sp.csc_matrix(np.triu(M)), np.ascontiguousarray(q), sp.identity(n, format="csc"),
            np.zeros(n), np.full(n, np.inf))


# ======================================================================================
# one (family, n) group
# ======================================================================================

def run_group(family, n, args, ev, lk_solve):
    K, B = args.problems, args.batch
    Mb, qb = problems(family, n, B, args.seed)
    Ms, qs = Mb[:K], qb[:K]
    out = {"n": n, "family": family, "batch": B, "problems": K, "max_pivots": max_pivots(n)}
    entries = {}

    # ---- diffsim single ----
    single = jax.jit(lambda M, q: lemke(M, q))  # a fresh jit per group: the compile is measured every time
    dev = [(jnp.asarray(Ms[k]), jnp.asarray(qs[k])) for k in range(K)]
    t_first, stages, _ = ev.first_call(single, *dev[0])
    zs, sts = [], []
    for M, q in dev:
        z, w, st = single(M, q)
        zs.append(np.asarray(z))
        sts.append(int(st))
    z_ds = np.stack(zs)
    out["diffsim_single"] = {"first_call_s": t_first, "compile_stages_s": stages,
                             "solved": sum(s == LCPStatus.SOLVED for s in sts), "status": sts,
                             "residual": residuals(Ms, qs, z_ds)}
    entries["diffsim single"] = (lambda: [jax.block_until_ready(single(M, q)) for M, q in dev], K)
    if "floor" not in args.skip:
        noop = jax.jit(lambda M, q: q)
        jax.block_until_ready(noop(*dev[0]))
        entries["diffsim dispatch floor"] = (lambda: [jax.block_until_ready(noop(M, q)) for M, q in dev], K)

    # ---- diffsim batched ----
    if "batch" not in args.skip:
        batched = jax.jit(jax.vmap(lambda M, q: lemke(M, q, return_pivots=True)))
        Mj, qj = jnp.asarray(Mb), jnp.asarray(qb)
        t_first_b, stages_b, (zb, wb, stb, pv) = ev.first_call(batched, Mj, qj)
        zb, stb, pv = np.asarray(zb), np.asarray(stb), np.asarray(pv)
        out["diffsim_batched"] = {
            "first_call_s": t_first_b, "compile_stages_s": stages_b,
            "solved": int(np.sum(stb == LCPStatus.SOLVED)),
            "status_counts": {LCPStatus(int(s)).name: int(c) for s, c in zip(*np.unique(stb, return_counts=True))},
            "pivots_mean": float(np.mean(pv)), "pivots_max": int(np.max(pv)),
            "residual": residuals(Mb, qb, zb),
            "max_abs_diff_vs_single": max_abs_diff(zb[:K], z_ds),
        }
        entries["diffsim batched"] = (lambda: jax.block_until_ready(batched(Mj, qj)), B)

    # ---- lemkelcp ----
    if lk_solve is not None:
        mi = max_pivots(n)
        zl, codes = [], []
        for k in range(K):
            z, code, _ = lk_solve(Ms[k], qs[k], mi)
            zl.append(np.full(n, np.nan) if z is None else np.asarray(z, float))
            codes.append(int(code))
        zl = np.stack(zl)
        out["lemkelcp"] = {"maxIter": mi, "solved": codes.count(0), "exit_codes": codes,
                           "residual": residuals(Ms, qs, zl), "max_abs_diff_diffsim": max_abs_diff(z_ds, zl)}
        entries["lemkelcp"] = (lambda: [lk_solve(Ms[k], qs[k], mi) for k in range(K)], K)

    # ---- OSQP (symmetric M only) ----
    if family == "sym" and "osqp" not in args.skip:
        data = [osqp_data(Ms[k], qs[k]) for k in range(K)]
        zo, stat, iters, polish = [], [], [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for d in data:
                r = osqp_setup(*d, args).solve(raise_error=False)
                zo.append(np.asarray(r.x, float))
                stat.append(str(r.info.status))
                iters.append(int(r.info.iter))
                polish.append(int(r.info.status_polish))
            solvers = [osqp_setup(*d, args) for d in data]
        zo = np.stack(zo)
        out["osqp"] = {"eps_abs": args.osqp_eps, "eps_rel": args.osqp_eps, "polishing": True,
                       "solved": sum(s == "solved" for s in stat), "status": stat,
                       "iterations_max": max(iters), "polish_status": polish,
                       "residual": residuals(Ms, qs, zo), "max_abs_diff_diffsim": max_abs_diff(z_ds, zo)}

        def osqp_full():
            for d in data:
                osqp_setup(*d, args).solve(raise_error=False)

        entries["osqp setup+solve"] = (osqp_full, K)
        entries["osqp solve"] = (lambda: [s.solve(raise_error=False) for s in solvers], K)

    # ---- timing ----
    print(f"  [{family} n={n}] timing {', '.join(entries)} ...", flush=True)
    t = interleave(entries, args.rounds, args.min_time, seed=n)
    out["us_per_solve"] = t
    s = t["diffsim single"]["median"]
    out["diffsim_single"]["compile_s"] = t_first - s / 1e6
    if "diffsim batched" in t:
        bt = t["diffsim batched"]["median"]
        out["diffsim_batched"]["solves_per_s"] = 1e6 / bt
        out["diffsim_batched"]["solves_per_s_best"] = 1e6 / t["diffsim batched"]["min"]
        out["diffsim_batched"]["compile_s"] = t_first_b - bt * B / 1e6
    ratios = {}
    for ref in ("lemkelcp", "osqp setup+solve", "osqp solve"):
        if ref in t:
            ratios[f"{ref} / diffsim single"] = t[ref]["median"] / s
            if "diffsim batched" in t:
                ratios[f"{ref} / diffsim batched (per solve)"] = t[ref]["median"] / t["diffsim batched"]["median"]
    if "diffsim batched" in t:
        ratios["diffsim single / diffsim batched (per solve)"] = s / t["diffsim batched"]["median"]
    if "diffsim dispatch floor" in t:
        ratios["diffsim single / dispatch floor"] = s / t["diffsim dispatch floor"]["median"]
    out["ratios"] = ratios
    return out


# ======================================================================================
# report
# ======================================================================================

def _f(x, fmt="{:.3g}"):
    return "-" if x is None else fmt.format(x)


def print_tables(res):
    for fam, groups in res["families"].items():
        print(f"\n== {fam}: {'M = A Aᵀ + 0.3 I' if fam == 'sym' else 'M = A Aᵀ + 0.3 I + S − Sᵀ'}, q ~ N(0, 1), "
              f"batch {res['settings']['batch']}, {res['settings']['problems']} problems for single/refs ==")
        print("µs per solve, median over rounds [min]; ratios = peer / diffsim single")
        cols = ["diffsim single", "diffsim dispatch floor", "diffsim batched", "lemkelcp", "osqp setup+solve", "osqp solve"]
        cols = [c for c in cols if any(c in g["us_per_solve"] for g in groups.values())]
        print(f"{'n':>4s}{'pivots':>12s}" + "".join(f"{c:>26s}" for c in cols) + f"{'batched solves/s':>18s}")
        for n, g in groups.items():
            t = g["us_per_solve"]
            b = g.get("diffsim_batched", {})
            piv = f"{b['pivots_mean']:.1f}/{b['pivots_max']}" if b else "-"
            cells = []
            for c in cols:
                if c not in t:
                    cells.append(f"{'-':>26s}")
                    continue
                r = "" if c == "diffsim single" else f" ({t[c]['median'] / t['diffsim single']['median']:.2g}×)"
                cells.append(f"{t[c]['median']:>11.2f} [{t[c]['min']:.2f}]{r}".rjust(26))
            print(f"{n:>4s}{piv:>12s}" + "".join(cells) + f"{_f(b.get('solves_per_s'), '{:.3g}'):>18s}")
        print("compile [s] (single / batched) and accuracy on the single/ref problems: max|z_diffsim − z_ref|; "
              "natural residual max|min(z, Mz+q)|; solved count")
        print(f"{'n':>4s}{'compile':>16s}{'Δz lemkelcp':>14s}{'Δz osqp':>12s}{'Δz batch':>12s}"
              f"{'res diffsim':>13s}{'res batch':>12s}{'res lemkelcp':>14s}{'res osqp':>12s}{'solved ds/lk/osqp/batch':>26s}")
        for n, g in groups.items():
            ds1, b, lk, oq = g["diffsim_single"], g.get("diffsim_batched", {}), g.get("lemkelcp", {}), g.get("osqp", {})
            comp = f"{ds1['compile_s']:.2f} / {_f(b.get('compile_s'), '{:.2f}')}"
            solved = (f"{ds1['solved']}/{_f(lk.get('solved'), '{}')}/{_f(oq.get('solved'), '{}')}/"
                      f"{_f(b.get('solved'), '{}')}")
            print(f"{n:>4s}{comp:>16s}{_f(lk.get('max_abs_diff_diffsim'), '{:.1e}'):>14s}"
                  f"{_f(oq.get('max_abs_diff_diffsim'), '{:.1e}'):>12s}{_f(b.get('max_abs_diff_vs_single'), '{:.1e}'):>12s}"
                  f"{_f(ds1['residual']['natural'], '{:.1e}'):>13s}{_f(b.get('residual', {}).get('natural'), '{:.1e}'):>12s}"
                  f"{_f(lk.get('residual', {}).get('natural'), '{:.1e}'):>14s}"
                  f"{_f(oq.get('residual', {}).get('natural'), '{:.1e}'):>12s}{solved:>26s}")
    tg = res.get("targets", {}).get("batched_8x8_ge_1e5_solves_per_s")
    if tg:
        print(f"\ntarget: {tg['definition']}: {_f(tg.get('value'), '{:.3g}')} solves/s (best round "
              f"{_f(tg.get('value_best'), '{:.3g}')}) -> {'MET' if tg['met'] else 'MISSED'}"
              + (f"  [{tg['note']}]" if tg.get("note") else ""))


def bench_s2(ev, args) -> dict:
    """S2 (seed 002) 5 s at the paper's step 0.01 s, both LCP time-stepping methods: compile
    (first call) and wall time after compile; real-time factor = 5 s / wall."""
    from diffsim.scenarios import seed002 as s2

    m = s2.model()
    rc = s2.contact_model(m)
    q0, v0 = s2.initial_state(m)
    yP = s2.plane_height(m)
    out = {}
    entries = {}
    for method in ("acceleration", "velocity"):
        fn = lambda method=method: s2._simulate(m, rc, q0, v0, yP, 5.0, 0.01, method).q  # noqa: E731
        first, stages, _ = ev.first_call(fn)
        out[method] = {"first_call_s": first, "compile_stages_s": stages}
        entries[method] = (lambda fn=fn: jax.block_until_ready(fn()), 1)
    t = interleave(entries, rounds=args.rounds, min_time=args.min_time)
    for method in entries:
        wall = t[method]["median"] * 1e-6
        out[method].update(wall_after_compile_s=wall, wall_min_s=t[method]["min"] * 1e-6, steps=500,
                           us_per_step=wall / 500 * 1e6, real_time_factor=5.0 / wall)
    out["target_faster_than_real_time"] = {m_: out[m_]["real_time_factor"] > 1.0 for m_ in entries}
    return out


def main():
    args = ARGS
    res = {"meta": {"load_average_start": loadavg(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "argv": sys.argv[1:], "args": {k: (sorted(v) if isinstance(v, set) else v) for k, v in vars(args).items()}},
           "settings": {"batch": args.batch, "problems": args.problems, "rounds": args.rounds, "min_time_s": args.min_time,
                        "dtype": "float64", "seed": args.seed, "sizes": args.sizes, "families": args.families}}
    res["meta"].update(machine_info(modules=("jaxlib",), distributions=("lemkelcp", "osqp", "scipy")))
    lk_solve = None
    if "lemkelcp" not in args.skip:
        try:
            lk_solve, res["settings"]["lemkelcp"] = load_lemkelcp()
        except ImportError as e:
            print(f"lemkelcp unavailable ({e}); skipped (pip install -e '.[bench]')", flush=True)
            res["settings"]["lemkelcp"] = {"unavailable": repr(e)}
    if "osqp" not in args.skip:
        try:
            import osqp  # noqa: F401
        except ImportError as e:
            print(f"osqp unavailable ({e}); skipped (pip install -e '.[bench]')", flush=True)
            args.skip.add("osqp")
            res["settings"]["osqp"] = {"unavailable": repr(e)}
    ev = CompileEvents()
    t0 = time.perf_counter()
    res["families"] = {}
    for fam in args.families:
        res["families"][fam] = {}
        for n in args.sizes:
            print(f"{fam} n={n} ...", flush=True)
            res["families"][fam][str(n)] = run_group(fam, n, args, ev, lk_solve)
    if "s2" not in args.skip:
        print("S2 seed002-space-contact ...", flush=True)
        res["s2"] = bench_s2(ev, args)
    g = res["families"].get("sym", {}).get(str(TARGET_N), {}).get("diffsim_batched")
    if g is not None:
        res["targets"] = {"batched_8x8_ge_1e5_solves_per_s": {
            "definition": f"jit(vmap(lemke)) on {TARGET_N}x{TARGET_N} sym problems, batch {TARGET_BATCH}, "
                          f">= {TARGET_RATE:g} solves/s",
            "value": g["solves_per_s"], "value_best": g["solves_per_s_best"], "target": TARGET_RATE,
            "met": g["solves_per_s"] >= TARGET_RATE, "batch": args.batch,
            "note": None if args.batch == TARGET_BATCH else f"measured at batch {args.batch}, not {TARGET_BATCH}: indicative only"}}
    res["meta"]["load_average_end"] = loadavg()
    res["meta"]["wall_s"] = time.perf_counter() - t0
    out = Path(args.out) if args.out else HERE / "results" / ("bench_lcp_quick.json" if args.quick else "bench_lcp.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    print_tables(res)
    if "s2" in res:
        print("\nS2 seed002-space-contact, 5 s at dt = 0.01 s (500 steps, one Lemke solve per step; impacts add one)")
        for method in ("acceleration", "velocity"):
            r = res["s2"][method]
            print(f"  {method:12s} first call {r['first_call_s']:.2f} s, after compile {r['wall_after_compile_s'] * 1e3:.1f} ms"
                  f" ({r['us_per_step']:.0f} µs/step), {r['real_time_factor']:.0f}x faster than real time")
    print(f"\nload average {res['meta']['load_average_start']} -> {res['meta']['load_average_end']}")
    print(f"wrote {out}  ({res['meta']['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
