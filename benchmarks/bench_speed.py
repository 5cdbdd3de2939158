#!/usr/bin/env python
"""Issue 20's CPU rows (core speed), the rigid-tree schedules side by side, each XLA-flag
variant in its own process, every diffsim time divided by MuJoCo's measured in the same process.

Rows (S0 dual-arm robot, float64, the same definitions as ``bench_s0.py``):

* ``rk4_per_eval / mj``: per forward-dynamics evaluation inside a jitted RK4 ``lax.scan``
  (``bench_s0``'s unrolled-stage RK4 and the library's ``ds.rollout``) / MuJoCo per evaluation
  in ``mjINT_RK4`` (the min of its C rollout and an ``mj_step`` loop from Python, step / 4);
* ``vmap_per_sample / mj``: ``jit(vmap(fd))`` at batch ``--batch`` per sample / the min of
  ``mj_forward`` from Python and an Euler ``mj_step`` in a C rollout;
* ``grad / forward``: ``jit(grad(loss))`` / ``jit(loss)`` of ``bench_s0``'s rollout loss (RK4,
  stages in a scan, w.r.t. the masses and ``v0``), ``--grad-steps`` steps;
* compile: first call minus steady state of the jitted RK4 rollout, per schedule.

Schedules (``ds.ABA(schedule=...)`` / :data:`diffsim.dynamics.dispatch.RIGID_SCHEDULE`) are
compared inside one process (interleaved rounds, shuffled order). XLA flags are process-wide, so
each variant of ``--variants`` runs as a child process, the variants alternating ``--repeats``
times; the ratios to MuJoCo from the same child are what compares across processes.

Usage::

    python benchmarks/bench_speed.py                 # -> results/speed_cpu.json
    python benchmarks/bench_speed.py --repeats 1 --rounds 5 --steps 100
    python benchmarks/bench_speed.py --executed --schedules per_body,levels --grad-steps 100
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE_FLAGS = "--xla_cpu_use_fusion_emitters=false"
VARIANTS = {"default": BASE_FLAGS, "eigen_single_thread": BASE_FLAGS + " --xla_cpu_multi_thread_eigen=false"}


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--schedules", default="per_body,levels,levels_reduce,levels_unrolled")
    p.add_argument("--repeats", type=int, default=2, help="child processes per variant (alternating)")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--steps", type=int, default=200, help="RK4 steps of the timed rollouts")
    p.add_argument("--grad-steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--block", type=int, default=128, help="block size of the blocked batch row (mc.run's CPU default)")
    p.add_argument("--out", default=str(HERE / "results" / "speed_cpu.json"))
    p.add_argument("--thunks", action="store_true",
                   help="only count the XLA CPU kernels (thunks) of one S0 evaluation per schedule -> results/speed_thunks.json")
    p.add_argument("--executed", action="store_true",
                   help="only count the XLA CPU kernels executed per call (loop bodies times their trip counts) "
                        "of the rollout loss and its gradient per schedule -> results/speed_executed_kernels.json")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def child(a) -> dict:
    sys.argv = [sys.argv[0], "--quick"]  # bench_s0 parses its own arguments on import
    sys.path.insert(0, str(HERE))
    import bench_s0 as b0  # noqa: E402  (sets JAX up: CPU, float64, XLA_FLAGS from the environment)
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import mujoco
    import numpy as np
    from harness import CompileEvents, interleave, loadavg, mj_set, mj_state
    from mujoco import rollout as mj_rollout

    import diffsim as ds

    ev = CompileEvents()
    m, ld = b0.ds_model()
    q0 = ds.neutral_configuration(m)
    v0 = jnp.zeros(m.nv, m.dtype)
    Q, V = b0.random_states(m, a.batch, seed=0)
    res = {"xla_flags": os.environ.get("XLA_FLAGS", ""), "load_average_start": loadavg(), "compile_s": {},
           "correctness": {}}
    ent_b, ent_c, ent_g = {}, {}, {}
    schedules = a.schedules.split(",")
    ref = None
    for s in schedules:
        fd_impl = ds.dynamics.ABA(schedule=s)
        fd, rk4_step, rk4_step_scanned, make_rollout = b0.make_ds_fns(m, ld, fd_impl)
        roll = jax.jit(make_rollout(rk4_step, a.steps))
        t1, _, (qT, vT) = ev.first_call(roll, m, q0, v0)
        ent_b[f"[{s}] lax.scan RK4 (jit)"] = (lambda r=roll: jax.block_until_ready(r(m, q0, v0)), 4 * a.steps)
        dsr = jax.jit(lambda m, q, v, d=fd_impl: ds.rollout(m, q, v, b0.DT, a.steps, loads=ld, dynamics=d).q[-1])
        t2, _, _ = ev.first_call(dsr, m, q0, v0)
        ent_b[f"[{s}] ds.rollout (library RK4)"] = (lambda r=dsr: jax.block_until_ready(r(m, q0, v0)), 4 * a.steps)
        fdv = jax.jit(jax.vmap(fd, in_axes=(None, None, 0, 0)))
        t3, _, A = ev.first_call(fdv, m, 0.0, Q, V)
        ent_c[f"[{s}] jit(vmap(fd)) B={a.batch}"] = (lambda f=fdv: f(m, 0.0, Q, V).block_until_ready(), a.batch)
        # the same batch as mc.run runs it on a CPU device: vmap over blocks, the blocks in a loop
        fdb = jax.jit(lambda m, t, Q, V: jax.lax.map(lambda qv: fd(m, t, *qv), (Q, V), batch_size=a.block))
        res["correctness"][f"{s}_blocks_vs_vmap_max_abs"] = float(jnp.max(jnp.abs(fdb(m, 0.0, Q, V) - A)))
        ent_c[f"[{s}] jit(vmap(fd)) B={a.batch} in blocks of {a.block}"] = (
            lambda f=fdb: f(m, 0.0, Q, V).block_until_ready(), a.batch)
        if ref is None:
            ref = (qT, vT, A)
        else:
            res["correctness"][f"{s}_vs_{schedules[0]}_max_abs"] = float(max(
                jnp.max(jnp.abs(qT - ref[0])), jnp.max(jnp.abs(vT - ref[1])), jnp.max(jnp.abs(A - ref[2]))))
        rollout_g = make_rollout(rk4_step_scanned, a.grad_steps)
        v0g = 0.01 * jnp.ones(m.nv, m.dtype)

        def loss(mass, v0, rollout_g=rollout_g):
            mm = eqx.tree_at(lambda x: x.mass, m, mass)
            qT_, vT_ = rollout_g(mm, q0, v0)
            return jnp.sum(vT_ ** 2) + jnp.sum((qT_ - q0) ** 2)

        lf, lg = jax.jit(loss), jax.jit(jax.grad(loss, argnums=(0, 1)))
        t4, _, _ = ev.first_call(lf, m.mass, v0g)
        t5, _, g = ev.first_call(lg, m.mass, v0g)
        h = 1e-4 * float(m.mass[2])
        e2 = jnp.zeros_like(m.mass).at[2].set(h)
        fdiff = (float(lf(m.mass + e2, v0g)) - float(lf(m.mass - e2, v0g))) / (2 * h)
        res["correctness"][f"{s}_grad_mass2_rel_err_vs_central_fd"] = abs(float(g[0][2]) - fdiff) / abs(fdiff)
        ent_g[f"[{s}] forward jit(loss)"] = (lambda f=lf: jax.block_until_ready(f(m.mass, v0g)), 1)
        ent_g[f"[{s}] reverse jit(grad(loss))"] = (lambda f=lg: jax.block_until_ready(f(m.mass, v0g)), 1)
        res["compile_s"][s] = {"rk4_scan_first_call": t1, "ds_rollout_first_call": t2, "vmap_fd_first_call": t3,
                               "loss_first_call": t4, "grad_first_call": t5}

    # MuJoCo, same process
    mjm = b0.mj_models()
    d = mujoco.MjData(mjm["rk4"])
    qp, qv = (np.asarray(x) for x in ds.to_mujoco(m, Q[0], V[0]))
    mj_set(mujoco, mjm["rk4"], d, qp, qv)
    ro = mj_rollout.Rollout(nthread=0)
    n_c = 500
    s1 = mj_state(mujoco, mjm["euler"], d)[None]
    ctrl_c, out_c = np.ones((1, n_c, mjm["euler"].nu)), np.empty((1, n_c, s1.shape[1]))
    datas = [mujoco.MjData(mjm["euler"])]
    d_b = mujoco.MjData(mjm["rk4"])
    mj_set(mujoco, mjm["rk4"], d_b, np.asarray(q0), np.zeros(mjm["rk4"].nv))
    s0 = mj_state(mujoco, mjm["rk4"], d_b)[None]
    ctrl_b, out_b = np.ones((1, a.steps, mjm["rk4"].nu)), np.empty((1, a.steps, s0.shape[1]))
    datas_b = [mujoco.MjData(mjm["rk4"])]

    def mj_fwd_loop():
        for _ in range(n_c):
            mujoco.mj_forward(mjm["rk4"], d)

    def mj_py_rk4():
        mj_set(mujoco, mjm["rk4"], d_b, np.asarray(q0), np.zeros(mjm["rk4"].nv))
        for _ in range(a.steps):
            mujoco.mj_step(mjm["rk4"], d_b)

    mj = {"mujoco mj_forward (from Python)": (mj_fwd_loop, n_c),
          "mujoco mj_step Euler in C rollout (per step)": (
              lambda: ro.rollout(mjm["euler"], datas, s1, ctrl_c, nstep=n_c, state=out_c), n_c),
          "mujoco mjINT_RK4 in C rollout (per eval)": (
              lambda: ro.rollout(mjm["rk4"], datas_b, s0, ctrl_b, nstep=a.steps, state=out_b), 4 * a.steps),
          "mujoco mj_step RK4 loop from Python (per eval)": (mj_py_rk4, 4 * a.steps)}
    for f, _ in mj.values():
        f()
    res["times_us"] = interleave({**ent_b, **ent_c, **ent_g, **mj}, a.rounds, 0.0, seed=1)  # one call per entry and round
    ro.close()
    T = res["times_us"]
    for stat in ("median", "min"):
        mj_eval = min(T["mujoco mjINT_RK4 in C rollout (per eval)"][stat],
                      T["mujoco mj_step RK4 loop from Python (per eval)"][stat])
        mj_fwd = min(T["mujoco mj_forward (from Python)"][stat], T["mujoco mj_step Euler in C rollout (per step)"][stat])
        r = res.setdefault("ratios_" + stat, {})
        for s in schedules:
            r[f"[{s}] lax.scan RK4 per eval / mj (target <= 2)"] = T[f"[{s}] lax.scan RK4 (jit)"][stat] / mj_eval
            r[f"[{s}] ds.rollout per eval / mj (target <= 2)"] = T[f"[{s}] ds.rollout (library RK4)"][stat] / mj_eval
            r[f"[{s}] vmap B={a.batch} per sample / mj_forward (target <= 0.5)"] = \
                T[f"[{s}] jit(vmap(fd)) B={a.batch}"][stat] / mj_fwd
            r[f"[{s}] vmap B={a.batch} in blocks of {a.block} (mc.run's CPU form) per sample / mj_forward"] = \
                T[f"[{s}] jit(vmap(fd)) B={a.batch} in blocks of {a.block}"][stat] / mj_fwd
            r[f"[{s}] grad / forward (target <= 3)"] = \
                T[f"[{s}] reverse jit(grad(loss))"][stat] / T[f"[{s}] forward jit(loss)"][stat]
        for s in schedules[1:]:
            r[f"speed-up {s} vs {schedules[0]}, lax.scan RK4"] = \
                T[f"[{schedules[0]}] lax.scan RK4 (jit)"][stat] / T[f"[{s}] lax.scan RK4 (jit)"][stat]
    for s in schedules:
        c = res["compile_s"][s]
        c["rk4_scan_first_minus_steady"] = c["rk4_scan_first_call"] - T[f"[{s}] lax.scan RK4 (jit)"]["median"] * 4 * a.steps * 1e-6
    res["load_average_end"] = loadavg()
    return res


def thunk_counts(compiled_text: str) -> dict:
    """Instructions of the non-fused computations of a compiled XLA CPU module (entry and loop
    bodies): each is one kernel launch (thunk) at run time, except parameters, constants,
    tuples and bitcasts."""
    import collections
    import re

    skip = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
    out = collections.Counter()
    for comp in re.split(r"\n(?=\S)", compiled_text):
        head = comp.split("\n", 1)[0].split("(")[0]
        if "fused" in head or "region" in head:
            continue
        for ln in comp.split("\n")[1:]:
            mm = re.search(r"= \S+ (\w[\w-]*)\(", ln)
            if mm and mm.group(1) not in skip:
                out[mm.group(1)] += 1
    return dict(out.most_common())


def executed_kernels(compiled_text: str) -> dict:
    """Kernels executed by one call of a compiled XLA CPU module, by kind: every instruction of the
    entry computation that runs as a thunk (as :func:`thunk_counts`), a ``while`` loop counted as
    its body and condition times the trip count XLA knows (``known_trip_count``; 1 if unknown), a
    ``call`` as the computation it calls, fusions split into those whose root is a ``dynamic-update-slice`` (a scan writing one row of
    a stacked array: the residuals reverse mode keeps) and the others."""
    import collections
    import re

    skip = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
    comps, entry, name = {}, None, None
    for ln in compiled_text.splitlines():
        head = re.match(r"^(ENTRY )?%?([\w.\-]+) .*\{$", ln)
        if head:
            name = head.group(2)
            comps[name] = []
            entry = name if head.group(1) else entry
        elif name and ln.startswith("  "):
            comps[name].append(ln)
    memo = {}

    def count(comp):
        if comp in memo:
            return memo[comp]
        out = collections.Counter()
        for ln in comps[comp]:
            op = re.search(r"= .*?\b([a-z][a-z0-9\-]*)\(", ln)
            if not op or op.group(1) in skip:
                continue
            op = op.group(1)
            if op == "while":
                trip = re.search(r'known_trip_count":\{"n":"(\d+)"', ln)
                inner = count(re.search(r"body=%?([\w.\-]+)", ln).group(1)) + \
                    count(re.search(r"condition=%?([\w.\-]+)", ln).group(1))
                for k, n in inner.items():
                    out[k] += n * (int(trip.group(1)) if trip else 1)
            elif op == "call":  # a computation XLA kept out of line (here: scatters expanded into loops)
                for k, n in count(re.search(r"to_apply=%?([\w.\-]+)", ln).group(1)).items():
                    out[k] += n
            elif op == "fusion":
                callee = re.search(r"calls=%?([\w.\-]+)", ln).group(1)
                root = next((c for c in comps.get(callee, []) if c.lstrip().startswith("ROOT")), "")
                out["fusion (dynamic-update-slice)" if "dynamic-update-slice(" in root else "fusion"] += 1
            else:
                out[op] += 1
        memo[comp] = out
        return out

    res = dict(count(entry).most_common())
    return {"total": sum(res.values()), **res}


def executed(a) -> dict:
    """:func:`executed_kernels` of the timed rollout loss (``--grad-steps`` RK4 steps, stages in
    a scan) and of its gradient, per schedule (README, core speed: where the gradient's time goes)."""
    sys.argv = [sys.argv[0], "--quick"]
    sys.path.insert(0, str(HERE))
    import bench_s0 as b0
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    import diffsim as ds

    m, ld = b0.ds_model()
    q0 = ds.neutral_configuration(m)
    v0 = 0.01 * jnp.ones(m.nv, m.dtype)
    res = {"grad_steps": a.grad_steps}
    for s in a.schedules.split(","):
        _, _, rk4_step_scanned, make_rollout = b0.make_ds_fns(m, ld, ds.dynamics.ABA(schedule=s))
        rollout = make_rollout(rk4_step_scanned, a.grad_steps)

        def loss(mass, v0, rollout=rollout):
            qT, vT = rollout(eqx.tree_at(lambda x: x.mass, m, mass), q0, v0)
            return jnp.sum(vT ** 2) + jnp.sum((qT - q0) ** 2)

        res[s] = {"forward": executed_kernels(jax.jit(loss).lower(m.mass, v0).compile().as_text()),
                  "grad": executed_kernels(jax.jit(jax.grad(loss, argnums=(0, 1))).lower(m.mass, v0).compile().as_text())}
        print(s, {k: x["total"] for k, x in res[s].items()}, res[s]["grad"], flush=True)
    return res


def thunks(a) -> dict:
    """Kernel counts of one S0 evaluation (loads + forward dynamics) per schedule, and of its
    reverse-mode gradient w.r.t. ``(q, v)`` of a weighted sum of the accelerations."""
    sys.argv = [sys.argv[0], "--quick"]
    sys.path.insert(0, str(HERE))
    import bench_s0 as b0
    import jax
    import jax.numpy as jnp

    import diffsim as ds

    m, ld = b0.ds_model()
    Q, V = b0.random_states(m, 1, seed=0)
    res = {}
    for s in a.schedules.split(","):
        fd = b0.make_ds_fns(m, ld, ds.dynamics.ABA(schedule=s))[0]
        f = jax.jit(lambda m, q, v, fd=fd: fd(m, 0.0, q, v))
        g = jax.jit(jax.grad(lambda q, v, fd=fd: jnp.sum(fd(m, 0.0, q, v) ** 2), argnums=(0, 1)))
        res[s] = {"forward": thunk_counts(f.lower(m, Q[0], V[0]).compile().as_text()),
                  "grad": thunk_counts(g.lower(Q[0], V[0]).compile().as_text())}
        print(s, {k: sum(x.values()) for k, x in res[s].items()}, res[s]["forward"], flush=True)
    return res


def main(argv=None):
    a = parse(argv)
    if a.thunks:
        out = HERE / "results" / "speed_thunks.json"
        out.write_text(json.dumps(thunks(a), indent=1) + "\n")
        print(f"wrote {out}")
        return 0
    if a.executed:
        out = HERE / "results" / "speed_executed_kernels.json"
        out.write_text(json.dumps(executed(a), indent=1) + "\n")
        print(f"wrote {out}")
        return 0
    if a.child:
        print("RESULT " + json.dumps(child(a)))
        return 0
    sys.path.insert(0, str(HERE))
    variants = a.variants.split(",")
    runs = {v: [] for v in variants}

    def write(final):
        """The summary of the runs so far (after every child, so that an interrupted run keeps them)."""
        from harness import machine_info

        summary = {}
        for v, rs in runs.items():
            if not rs:
                continue
            summary[v] = {k: {"median_of_repeats": statistics.median(r["ratios_median"][k] for r in rs),
                              "per_repeat": [r["ratios_median"][k] for r in rs],
                              "min_based_per_repeat": [r["ratios_min"][k] for r in rs]} for k in rs[0]["ratios_median"]}
        if final:
            print("\nsummary (ratio of medians, median over repeats):")
            for k in summary[variants[0]]:
                print(f"  {k:62s}" + "".join(f" {v}={summary[v][k]['median_of_repeats']:6.2f}" for v in summary))
        meta = {"argv": sys.argv[1:], "variants": {v: VARIANTS[v] for v in variants}, "loadavg_end": os.getloadavg()}
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        meta.update(machine_info(modules=("mujoco",)))
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps({"meta": meta, "summary": summary, "runs": runs}, indent=1) + "\n")

    t0 = time.perf_counter()
    for rep in range(a.repeats):
        for v in (variants if rep % 2 == 0 else variants[::-1]):
            env = dict(os.environ, XLA_FLAGS=VARIANTS[v], PYTHONPATH=str(HERE.parent))
            cmd = [sys.executable, __file__, "--child", "--schedules", a.schedules, "--rounds", str(a.rounds),
                   "--steps", str(a.steps), "--grad-steps", str(a.grad_steps), "--batch", str(a.batch), "--block", str(a.block)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True)
            line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
            if not line:
                raise RuntimeError(out.stderr[-3000:])
            r = json.loads(line[0][7:])
            runs[v].append(r)
            print(f"[{time.perf_counter() - t0:6.0f}s] {v} repeat {rep + 1}: load {r['load_average_start']}", flush=True)
            for k, x in r["ratios_median"].items():
                print(f"    {k:62s} {x:7.2f}   (min-based {r['ratios_min'][k]:6.2f})")
            print("    compile [s]:", {s: round(c["rk4_scan_first_minus_steady"], 2) for s, c in r["compile_s"].items()},
                  " correctness:", {k: float(f"{x:.2e}") for k, x in r["correctness"].items()}, flush=True)
            write(False)
    write(True)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
