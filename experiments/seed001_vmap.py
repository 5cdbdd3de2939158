"""S1 batched: ``vmap`` over drop heights of the falling chain, checked against a loop.

    python experiments/seed001_vmap.py [--n 1024] [--t1 0.42] [--hmin 0.6 --hmax 0.75] [--compare 8]

Heights 0.6–0.75 m of O1/O4 put the first impact at 0.35–0.39 s, so every element of the default
0.42 s window runs through its first impact (burst). Every element runs the full event loop
(located onsets/separations, impact memory); the window is short because on 2 CPU cores the
batched event segments run in lockstep (see benchmarks/README.md). The batched
results must equal the loop's (same solver, element by element; vmap only batches the
arithmetic, each element keeps its own steps and events). Writes
``experiments/results/seed001/vmap.json`` and ``vmap_first_onset.png``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

from diffsim.scenarios import seed001 as s1  # noqa: E402
from diffsim.scenarios.base import write_json  # noqa: E402
from diffsim.simulation.simulate import simulate  # noqa: E402

OUT = Path(__file__).parent / "results" / "seed001"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--t1", type=float, default=0.42)
    ap.add_argument("--compare", type=int, default=8, help="heights also run one by one in a loop")
    ap.add_argument("--hmin", type=float, default=0.6)
    ap.add_argument("--hmax", type=float, default=0.75)
    ap.add_argument("--rtol", type=float, default=1e-7)
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    m = s1.model("ss-ss-ss")
    c = s1.contact_model(m)
    heights = jnp.linspace(args.hmin, args.hmax, args.n)
    n_save = int(round(args.t1 * 200)) + 1

    def one(m, c, h):
        q0, v0 = s1.initial_state(m, h)
        tr = simulate(m, q0, v0, args.t1, contact=c, rtol=args.rtol, atol=args.rtol, saveat=n_save, max_events=48,
                      max_steps=100_000, throw=False)
        return tr.q, tr.status, tr.contact.event_t, tr.contact.impacts

    batched = eqx.filter_jit(jax.vmap(one, in_axes=(None, None, 0)))
    single = eqx.filter_jit(one)
    t = time.perf_counter()
    out = batched(m, c, heights)
    jax.block_until_ready(out)
    t_batch_first = time.perf_counter() - t
    t = time.perf_counter()
    out = batched(m, c, heights)
    jax.block_until_ready(out)
    t_batch = time.perf_counter() - t
    idx = np.unique(np.linspace(0, args.n - 1, args.compare).round().astype(int))
    diffs, t_loop = [], 0.0
    single(m, c, heights[0])
    for i in idx:
        t = time.perf_counter()
        ref = single(m, c, heights[i])
        jax.block_until_ready(ref)
        t_loop += time.perf_counter() - t
        diffs.append(max(float(jnp.max(jnp.abs(out[0][i] - ref[0]))),
                         float(jnp.max(jnp.where(jnp.isfinite(ref[2]), jnp.abs(out[2][i] - ref[2]), 0.0)))))
        assert int(out[1][i]) == int(ref[1]) and np.array_equal(np.asarray(out[3][i]), np.asarray(ref[3]))
    first_onset = np.asarray(out[2][:, 0])
    ok = np.asarray(out[1]) == 0
    summary = {
        "n": args.n, "t1": args.t1, "rtol": args.rtol,
        "all_success": bool(ok.all()), "n_success": int(ok.sum()),
        "batched_wall_s_after_compile": t_batch, "batched_first_call_s": t_batch_first,
        "loop_wall_s_per_run": t_loop / len(idx), "batched_wall_s_per_run": t_batch / args.n,
        "compared_indices": idx.tolist(), "max_abs_diff_vs_loop": max(diffs),
        "first_onset_vs_analytic_max_abs_s": float(np.max(np.abs(first_onset - np.sqrt(2 * np.asarray(heights) / 9.81)))),
        "impacts_total_range": [int(np.asarray(out[3]).sum(1).min()), int(np.asarray(out[3]).sum(1).max())],
    }
    write_json(OUT / "vmap.json", summary)
    from diffsim.viz.plots import plot_series

    plot_series({"first onset (batched)": (np.asarray(heights), first_onset),
                 "√(2h/g)": (np.asarray(heights), np.sqrt(2 * np.asarray(heights) / 9.81))},
                OUT / "vmap_first_onset.png", xlabel="drop height of O1/O4 [m]", ylabel="first impact time [s]",
                title=f"S1 ss-ss-ss, vmap over {args.n} drop heights")
    print(summary)
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
