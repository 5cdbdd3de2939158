#!/usr/bin/env python
"""Compile time of the benchmarks' jitted functions, this tree against another revision, side by
side in one run (the refactoring guard of issue 13: within 10 %).

Cases (the functions ``bench_s0.py`` and ``bench_contact.py`` time, through the call style both
revisions accept):

* ``s0_forward_dynamics``: ``jax.jit(ds.forward_dynamics)`` on the S0 dual-arm robot;
* ``s0_rollout``: ``ds.rollout`` of S0, 1000 RK4 steps with the follower forces;
* ``s0_grad``: reverse-mode gradient of a 200-step S0 rollout's final state w.r.t. the masses;
* ``s0_simulate``: ``ds.simulate`` of S0 (contact-free diffrax path, Dopri8, the follower forces);
* ``s1_events``: the S1 falling chain, events formulation, Tsit5 (``bench_contact`` section 1);
* ``ball_events``: the bouncing sphere, Hu–Guo, events formulation (``bench_contact`` section 2).

Each measurement is ``jitted.lower(*args).compile()`` wall time (trace + lowering + XLA compile)
(and its process CPU time, less sensitive to a shared machine's load) in a fresh Python process (no warm compilation caches; one small lowering first, so that JAX's
process-wide first-use costs are not charged to whichever tree happens to trigger them inside
the timing), rounds alternating
between the trees; the table reports the median per case and the ratio this/other.

Usage::

    git worktree add /tmp/base b3d9382      # the revision to compare with
    python benchmarks/bench_compile.py --other /tmp/base --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

CASES = ("s0_forward_dynamics", "s0_rollout", "s0_grad", "s0_simulate", "s1_events", "ball_events")

CHILD = r'''
import os, sys, time, json
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false")
import jax; jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, equinox as eqx
import diffsim as ds
case = sys.argv[1]
t_start = time.perf_counter()
if case.startswith("s0"):
    from diffsim.scenarios import seed000
    m = seed000.model(); loads = seed000.loads(m)
    q0, v0 = ds.neutral_configuration(m), jnp.zeros(m.nv)
if case == "s0_forward_dynamics":
    f, args = jax.jit(ds.forward_dynamics), (m, q0, v0, jnp.zeros(m.nv))
elif case == "s0_rollout":
    f, args = jax.jit(lambda q, v: ds.rollout(m, q, v, 1e-3, 1000, loads=loads)), (q0, v0)
elif case == "s0_grad":
    names = [n for n in ds.param_names(m) if n.endswith(".mass")]
    def loss(ms):
        mm = ds.set_params(m, dict(zip(names, ms)))
        out = ds.rollout(mm, q0, v0 + 0.1, 1e-3, 200, loads=loads)
        q = out.q if hasattr(out, "q") else out[1]
        return jnp.sum(q[-1] ** 2)
    f, args = jax.jit(jax.grad(loss)), (jnp.stack([ds.get_param(m, n) for n in names]),)
elif case == "s0_simulate":
    @eqx.filter_jit
    def run(m, q0, v0, tol):
        return ds.simulate(m, q0, v0, 10.0, loads=loads, solver="dopri8", rtol=tol, atol=tol, saveat=101)
    f, args = run, (m, q0, v0 + 0.1, jnp.asarray(1e-9))
elif case == "s1_events":
    from diffsim.scenarios import seed001 as s1
    m = s1.model("ss-ss-ss"); q0, v0 = s1.initial_state(m); c = s1.contact_model(m)
    @eqx.filter_jit
    def run(m, c, q0, v0, tol):
        return ds.simulate(m, q0, v0, 0.3, contact=c, solver="tsit5", rtol=tol, atol=tol, saveat=301,
                           max_events=160, max_steps=200_000, throw=False)
    f, args = run, (m, c, q0, v0, jnp.asarray(1e-8))
elif case == "ball_events":
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("ball", None, joint="free", mass=1.0, inertia=(0.004,) * 3)
    m = b.build()
    mk = getattr(ds, "compliant_contact", None) or ds.contacts
    c = mk(m, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0.0, 0.0, 1.0), 0.0)],
           normal=ds.normal_law("hu-guo", K=1e6, c_r=0.8), friction=None)
    @eqx.filter_jit
    def run(m, c, q0, v0, tol):
        return ds.simulate(m, q0, v0, 2.0, contact=c, rtol=tol, atol=tol, saveat=201, max_events=64, throw=False)
    f, args = run, (m, c, jnp.array([0, 0, 1.1, 1, 0, 0, 0.0]), jnp.zeros(6), jnp.asarray(1e-8))
t, c = time.perf_counter(), time.process_time()
f.lower(*args).compile()
t_end = time.perf_counter()
print(json.dumps({"compile_s": t_end - t, "first_s": t_end - t_start, "compile_cpu_s": time.process_time() - c}))
'''


def measure(tree: Path, case: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", CHILD, case], env=env, capture_output=True, text=True, cwd="/tmp")
    if out.returncode:
        raise RuntimeError(f"{case} in {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--other", required=True, help="source tree of the revision to compare with")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--out", default=str(HERE / "benchmarks" / "results" / "compile_vs_other.json"))
    a = p.parse_args(argv)
    trees = {"this": HERE, "other": Path(a.other).resolve()}
    cases = a.cases.split(",")
    times = {c: {k: [] for k in trees} for c in cases}
    for r in range(a.rounds):
        for c in cases:
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for k in order:
                times[c][k].append(measure(trees[k], c))
                last = times[c][k][-1]
                print(f"round {r + 1}/{a.rounds} {c:<20} {k:<5} compile {last['compile_s']:7.2f} s"
                      f"  first {last['first_s']:7.2f} s", flush=True)
    rows = {}
    print(f"\n{'case':<20} {'compile this/other [s]':>24} {'ratio':>6} {'first this/other [s]':>22} {'ratio':>6}")
    for c in cases:
        row = {"all": times[c]}
        for key in ("compile_s", "first_s", "compile_cpu_s"):
            t_this = statistics.median(x[key] for x in times[c]["this"])
            t_other = statistics.median(x[key] for x in times[c]["other"])
            row[key] = {"this": t_this, "other": t_other, "ratio": t_this / t_other}
        rows[c] = row
        cs, fs, cc = row["compile_s"], row["first_s"], row["compile_cpu_s"]
        print(f"{c:<20} {cs['this']:11.2f} /{cs['other']:7.2f}   {cs['ratio']:6.3f} {fs['this']:10.2f} /{fs['other']:7.2f}"
              f"   {fs['ratio']:6.3f}   compile CPU {cc['this']:7.2f} /{cc['other']:7.2f}  {cc['ratio']:6.3f}")
    meta = {"other": str(trees["other"]), "rounds": a.rounds, "loadavg": os.getloadavg(),
            "xla_flags": os.environ.get("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false (child default)")}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"meta": meta, "cases": rows}, indent=2) + "\n")
    print(f"written {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
