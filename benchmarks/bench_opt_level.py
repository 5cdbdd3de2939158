#!/usr/bin/env python
"""XLA's LLVM optimisation level (``--xla_backend_optimization_level``) for users' runs: compile
time and speed of the S1 events run and of S0's ``ds.rollout``, one child process per setting,
settings alternating over rounds (issue 20: "XLA options that pay, chosen by measurement").

Each child: S1 ``ss-ss-ss`` events, Tsit5, 1.5 s at rtol = atol = 1e-8 (first call, compile = first
minus the median of 3 steady calls, steps, status) and S0 ``ds.rollout`` (1000 RK4 steps, µs per
evaluation, median of 7), under the harness's XLA flags plus the level asked for.

Usage: ``python benchmarks/bench_opt_level.py [--levels default,0,1] [--rounds 2]`` →
``results/opt_level.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE_FLAGS = "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false"

CHILD = r'''
import json, statistics, time
import jax
jax.config.update("jax_enable_x64", True)
import equinox as eqx, jax.numpy as jnp
import diffsim as ds
from diffsim.scenarios import seed001 as s1, seed000
out = {}
m = s1.model("ss-ss-ss"); q0, v0 = s1.initial_state(m); c = s1.contact_model(m)
tol = jnp.asarray(1e-8)
@eqx.filter_jit
def run(m, c, q0, v0, tol):
    return ds.simulate(m, q0, v0, 1.5, contact=c, solver="tsit5", rtol=tol, atol=tol, saveat=200,
                       max_events=200, max_steps=200_000, throw=False)
t0 = time.perf_counter(); cpu0 = time.process_time()
tr = run(m, c, q0, v0, tol); jax.block_until_ready(tr.q)
first, first_cpu = time.perf_counter() - t0, time.process_time() - cpu0
ws = []
for _ in range(3):
    t0 = time.perf_counter(); jax.block_until_ready(run(m, c, q0, v0, tol).q); ws.append(time.perf_counter() - t0)
out["s1"] = {"first_s": first, "first_cpu_s": first_cpu, "wall_s": statistics.median(ws), "walls": ws,
             "compile_s": first - statistics.median(ws), "steps": int(tr.num_steps), "status": tr.message}
m0 = seed000.model(); loads = seed000.loads(m0)
qa, va = ds.neutral_configuration(m0), jnp.zeros(m0.nv) + 0.1
f = jax.jit(lambda q, v: ds.rollout(m0, q, v, 1e-3, 1000, loads=loads, save_every=1000))
t0 = time.perf_counter(); jax.block_until_ready(f(qa, va)); first = time.perf_counter() - t0
ws = []
for _ in range(7):
    t0 = time.perf_counter(); jax.block_until_ready(f(qa, va)); ws.append(time.perf_counter() - t0)
out["s0_rollout"] = {"first_s": first, "us_per_eval": statistics.median(ws) / 4000 * 1e6}
print(json.dumps(out))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--levels", default="default,0,1", help="comma-separated: default or an integer level")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results" / "opt_level.json"))
    args = ap.parse_args()
    levels = [s.strip() for s in args.levels.split(",") if s.strip()]
    res = {}
    for rnd in range(args.rounds):
        for lv in (levels if rnd % 2 == 0 else levels[::-1]):
            extra = "" if lv == "default" else f" --xla_backend_optimization_level={int(lv)}"
            env = dict(os.environ, XLA_FLAGS=BASE_FLAGS + extra)
            p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(f"level {lv}: child failed\n{p.stderr[-3000:]}")
            line = p.stdout.strip().splitlines()[-1]
            print(lv, line, flush=True)
            res.setdefault(lv, []).append(json.loads(line))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"base_flags": BASE_FLAGS, "runs": res}, indent=1))


if __name__ == "__main__":
    main()
