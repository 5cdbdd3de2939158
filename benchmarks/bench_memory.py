#!/usr/bin/env python
"""Memory that XLA plans for batched S0 rollouts (issue 15): compiled ``memory_analysis()`` of
``jit(...).lower(...).compile()``, nothing is run (the numbers are XLA's buffer assignment on this
backend, CPU here).

S0 dual-arm robot with its follower forces, float64, no contact, classical RK4, dt = 1e-3; B initial
states (random joint velocities), N steps, only the final state wanted. Variants:

* ``fwd_rollout``: ``vmap`` of ``ds.rollout(model, q0, v0, dt, N, loads=...)``, returning
  ``traj.q[-1], traj.v[-1]`` (the default ``save_every=1``);
* ``fwd_rollout_save_final``: the same with ``save_every=N`` (the trajectory holds t0 and t1 only);
* ``fwd_scan_floor``: a hand-written ``lax.scan`` of RK4 (stages unrolled) on ``ds.forward_dynamics``
  that carries ``(q, v)`` only — the floor;
* ``grad_rollout``: reverse-mode gradient w.r.t. the five link masses (``ds.set_params``) of the
  batch-mean loss ``|q_N|² + |v_N|²`` of the final states (default rollout, no checkpointing);
  ``grad_rollout_ckptC``: with ``checkpoint=C`` (state stored every C steps, the C steps in between
  recomputed), the trajectory saved at every step; ``grad_rollout_save_final_ckptC``: with
  ``checkpoint=C, save_every=N`` as well (no saved trajectory, hence no cotangent of it).

For each variant and N: bytes per sample = the least-squares slope of ``temp_size_in_bytes`` (and of
temp + output + argument) over the batch sizes; bytes per step and sample = the difference of
those slopes between the two horizons over the difference of steps. ``--timing`` also runs the
gradients once compiled at one small case to give checkpointing's compute cost.

``--before PATH`` embeds a JSON written by this script against the code before the fix (run it with
``PYTHONPATH`` pointing at an export of that revision: ``git archive <rev> | tar -x -C DIR``).

Usage: ``python benchmarks/bench_memory.py [--batches 1,64,256,1024] [--grad-batches 1,64,1024] [--steps 100,1000]
[--checkpoints 1,10] [--timing] [--before PATH] [--out results/memory_cpu.json]`` (+ a .png figure).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import loadavg, machine_info, setup_jax  # noqa: E402

DT = 1e-3


def s0_problem():
    import jax.numpy as jnp

    import diffsim as ds
    from diffsim.scenarios import seed000

    m = seed000.model()
    masses = {n: ds.get_param(m, n) for n in ds.param_names(m) if n.endswith(".mass")}
    return ds, seed000, m, ds.neutral_configuration(m), masses, jnp


def make_variants(checkpoints):
    import jax

    ds, seed000, m, q0, masses, jnp = s0_problem()
    ld = seed000.loads(m)
    has_opts = "save_every" in inspect.signature(ds.rollout).parameters

    def final(tr):
        return tr.q[-1], tr.v[-1]

    def fwd_rollout(V, n):
        return jax.vmap(lambda v: final(ds.rollout(m, q0, v, DT, n, loads=ld)))(V)

    def fwd_rollout_save_final(V, n):
        return jax.vmap(lambda v: final(ds.rollout(m, q0, v, DT, n, loads=ld, save_every=n)))(V)

    def rk4_floor(mm, lds, q, v, n):
        def f(t, q, v):
            qn = ds.normalize(mm, q)
            tau, fext = lds.evaluate(mm, t, qn, v)
            return ds.configuration_rate(mm, q, v), ds.forward_dynamics(mm, qn, v, tau, fext)

        def body(c, k):
            q, v = c
            t = k * DT
            a = f(t, q, v)
            b = f(t + DT / 2, q + DT / 2 * a[0], v + DT / 2 * a[1])
            c_ = f(t + DT / 2, q + DT / 2 * b[0], v + DT / 2 * b[1])
            d = f(t + DT, q + DT * c_[0], v + DT * c_[1])
            q = ds.normalize(mm, q + DT / 6 * (a[0] + 2 * b[0] + 2 * c_[0] + d[0]))
            v = v + DT / 6 * (a[1] + 2 * b[1] + 2 * c_[1] + d[1])
            return (q, v), None

        return jax.lax.scan(body, (ds.normalize(mm, q), v), jnp.arange(n, dtype=q.dtype))[0]

    def fwd_scan_floor(V, n):
        return jax.vmap(lambda v: rk4_floor(m, ld, q0, v, n))(V)

    def grad_of(**kw):
        def loss(ms, V, n):
            mm = ds.set_params(m, ms)
            lds = seed000.loads(mm)

            def one(v):
                tr = ds.rollout(mm, q0, v, DT, n, loads=lds, **{k: n if x == "N" else x for k, x in kw.items()})
                return jnp.sum(tr.q[-1] ** 2) + jnp.sum(tr.v[-1] ** 2)

            return jnp.mean(jax.vmap(one)(V))

        return lambda V, n: jax.grad(loss)(masses, V, n)

    v = {"fwd_rollout": ("forward", fwd_rollout), "fwd_scan_floor": ("forward", fwd_scan_floor),
         "grad_rollout": ("grad", grad_of())}
    if has_opts:
        v["fwd_rollout_save_final"] = ("forward", fwd_rollout_save_final)
        v[f"grad_rollout_ckpt{checkpoints[0]}"] = ("grad", grad_of(checkpoint=checkpoints[0]))
        for c in checkpoints:
            v[f"grad_rollout_save_final_ckpt{c}"] = ("grad", grad_of(checkpoint=c, save_every="N"))
    return v, m, jnp


def slope(xs, ys):
    import numpy as np

    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0]) if len(xs) > 1 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="1,64,256,1024")
    ap.add_argument("--grad-batches", default="1,64,1024", help="batches of the gradient variants "
                    "(XLA's plan is linear in the batch; fewer compiles of the slowest variants)")
    ap.add_argument("--steps", default="100,1000")
    ap.add_argument("--checkpoints", default="1,10")
    ap.add_argument("--only", default="", help="comma-separated variant names (default: all)")
    ap.add_argument("--timing", action="store_true", help="time the gradients at batch 64, the first horizon")
    ap.add_argument("--before", default=None, help="JSON of this script run against the code before the fix")
    ap.add_argument("--before-note", default="", help="what --before was run against (e.g. the git revision)")
    ap.add_argument("--out", default=str(HERE / "results" / "memory_cpu.json"))
    ap.add_argument("--no-figure", action="store_true")
    a = ap.parse_args()
    t_start = time.perf_counter()
    load0 = loadavg()
    jax = setup_jax()
    import numpy as np

    batches = [int(x) for x in a.batches.split(",")]
    grad_batches = [int(x) for x in a.grad_batches.split(",")]
    steps = [int(x) for x in a.steps.split(",")]
    checkpoints = [int(x) for x in a.checkpoints.split(",") if x]
    variants, m, jnp = make_variants(checkpoints)
    if a.only:
        variants = {k: v for k, v in variants.items() if k in a.only.split(",")}
    state_bytes = (m.nq + m.nv) * np.dtype(m.dtype).itemsize
    print(f"S0 nq={m.nq} nv={m.nv} state {state_bytes} B/sample; variants {list(variants)}", flush=True)

    rows, compiled = [], {}
    for name, (kind, fn) in variants.items():
        for n in steps:
            for B in (grad_batches if kind == "grad" else batches):
                V = jnp.zeros((B, m.nv), m.dtype)
                t0 = time.perf_counter()
                c = jax.jit(fn, static_argnums=1).lower(V, n).compile()
                dt_c = time.perf_counter() - t0
                ma = c.memory_analysis()
                row = {"variant": name, "kind": kind, "n_steps": n, "batch": B, "temp": int(ma.temp_size_in_bytes),
                       "output": int(ma.output_size_in_bytes), "argument": int(ma.argument_size_in_bytes),
                       "compile_s": round(dt_c, 2)}
                rows.append(row)
                if a.timing and kind == "grad" and n == steps[0] and B == 64:
                    compiled[name] = (c, V, n)
                print(f"{name:26s} N={n:5d} B={B:5d} temp {row['temp']:>13,d} out {row['output']:>9,d} "
                      f"arg {row['argument']:>9,d}  compile {dt_c:5.1f} s", flush=True)

    summary = {}
    for name, (kind, _) in variants.items():
        s = {"kind": kind}
        for n in steps:
            rs = [r for r in rows if r["variant"] == name and r["n_steps"] == n]
            s[f"N={n}"] = {
                "temp_bytes_per_sample": slope([r["batch"] for r in rs], [r["temp"] for r in rs]),
                "total_bytes_per_sample": slope([r["batch"] for r in rs],
                                                [r["temp"] + r["output"] + r["argument"] for r in rs]),
                "temp_at_batch": {r["batch"]: r["temp"] for r in rs},
            }
        if len(steps) > 1:
            n1, n2 = steps[0], steps[-1]
            p1, p2 = s[f"N={n1}"]["temp_bytes_per_sample"], s[f"N={n2}"]["temp_bytes_per_sample"]
            if p1 is not None and p2 is not None:
                s["temp_bytes_per_step_per_sample"] = (p2 - p1) / (n2 - n1)
        summary[name] = s

    timing = {}
    for name, (c, V, n) in compiled.items():
        key = jax.random.PRNGKey(0)
        Vr = 0.1 * jax.random.normal(key, V.shape, V.dtype)
        jax.block_until_ready(c(Vr))
        ts = []
        for _ in range(3):
            t0 = time.perf_counter()
            jax.block_until_ready(c(Vr))
            ts.append(time.perf_counter() - t0)
        timing[name] = {"batch": int(V.shape[0]), "n_steps": n, "median_s": sorted(ts)[1], "runs_s": ts}
        print(f"time {name:26s} B={V.shape[0]} N={n}: {sorted(ts)[1]:.3f} s", flush=True)
    if timing and "grad_rollout" in timing:
        base = timing["grad_rollout"]["median_s"]
        for v in timing.values():
            v["vs_no_checkpoint"] = v["median_s"] / base

    out = {
        "meta": {
            "what": "XLA-planned memory (compiled memory_analysis, nothing executed) of batched S0 RK4 rollouts, "
                    "float64, dt=1e-3, final state only; bytes per sample = slope over batch",
            "machine": machine_info(modules=("diffsim",)),
            "diffsim_path": str(Path(sys.modules["diffsim"].__file__).parent),
            "state_bytes_per_sample": int(state_bytes), "nq": int(m.nq), "nv": int(m.nv),
            "batches": batches, "grad_batches": grad_batches, "steps": steps, "checkpoints": checkpoints,
            "loadavg_start": load0, "loadavg_end": loadavg(),
            "wall_s": round(time.perf_counter() - t_start, 1),
        },
        "summary": summary,
        "rows": rows,
    }
    if timing:
        out["gradient_timing"] = timing
    if a.before:
        before = json.loads(Path(a.before).read_text())
        out["before_fix"] = {"note": a.before_note, "diffsim_path": before["meta"].get("diffsim_path"),
                             "wall_s": before["meta"]["wall_s"], "summary": before["summary"],
                             "rows": before["rows"]}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {a.out}  ({out['meta']['wall_s']} s)")
    for name, s in summary.items():
        per = "  ".join(f"N={n}: {s[f'N={n}']['temp_bytes_per_sample']:,.0f} B/sample" for n in steps
                        if s[f"N={n}"]["temp_bytes_per_sample"] is not None)
        extra = f"  per step {s['temp_bytes_per_step_per_sample']:,.1f} B" if "temp_bytes_per_step_per_sample" in s else ""
        print(f"  {name:26s} {per}{extra}")
    if not a.no_figure:
        figure(out, Path(a.out).with_suffix(".png"))


def figure(out, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = out["meta"]["steps"]
    names = list(out["summary"])
    series = [(k, k, v, "-") for k, v in out["summary"].items()]
    if "before_fix" in out:
        series += [(k + " (before fix)", k, v, "--") for k, v in out["before_fix"]["summary"].items()]
    color = {k: f"C{i}" for i, k in enumerate(names)}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, kind in zip(axes, ("forward", "grad")):
        for label, k, s, ls in series:
            if s["kind"] != kind:
                continue
            ys = [s[f"N={n}"]["temp_bytes_per_sample"] for n in steps]
            ax.plot(steps, ys, ls, marker="o" if ls == "-" else "x", ms=8 if ls == "-" else 10,
                    color=color.get(k, "0.5"), label=label)
        ax.axhline(out["meta"]["state_bytes_per_sample"], color="k", lw=0.8, ls=":", label="state (q, v)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("steps N")
        ax.set_ylabel("XLA temp bytes per sample (slope over batch)")
        ax.set_title(f"S0 RK4, float64, {kind}" + (" (d/d masses)" if kind == "grad" else ", final state"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
