"""The two forms of diffsim's small products on this CPU (``ds.set_products``): dot kernels against
the products written out, S0 in float64, one process, interleaved rounds.

Rows per form: ``jit(vmap)`` forward dynamics per sample at ``--batch``, ``ds.rollout`` (RK4,
``--steps`` steps) per evaluation, a 100-step rollout loss and its gradient; the compile time of each
program (``.lower().compile()``); the two forms' gradients compared. The GPU side of the same
question is ``bench_gpu.py --sections schedules,grad`` (README, "On one GPU": written out, the GPU
default; here, dot kernels stay the default).

    python benchmarks/bench_products.py                  # ~3 min -> results/products_cpu.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from harness import interleave, loadavg, machine_info, setup_jax  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--grad-steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=str(HERE / "results" / "products_cpu.json"))
    a = ap.parse_args()
    jax = setup_jax()
    import jax.numpy as jnp

    import diffsim as ds
    from bench_montecarlo import DT
    from diffsim.scenarios import seed000

    m = seed000.model()
    ld = seed000.loads(m)

    def fd(m, q, v):
        tau, f_ext = ld.evaluate(m, 0.0, q, v)
        return ds.forward_dynamics(m, q, v, tau, f_ext)

    kq, kv = jax.random.split(jax.random.PRNGKey(0))
    Q = jax.vmap(lambda k: ds.random_configuration(m, k))(jax.random.split(kq, a.batch))
    V = 0.5 * jax.random.normal(kv, (a.batch, m.nv))
    q0, v0 = ds.neutral_configuration(m), 0.2 * jnp.ones(m.nv)

    def loss(v):
        return jnp.sum(ds.rollout(m, q0, v, DT, a.grad_steps, loads=ld, save_every=a.grad_steps).q[-1] ** 2)

    def compiled(fn, *args):
        t0 = time.perf_counter()
        c = jax.jit(fn).lower(*args).compile()
        return c, time.perf_counter() - t0

    ent, comp, grads = {}, {}, {}
    load0 = loadavg()
    for form in ("dot", "unrolled"):
        ds.set_products(form)  # clears JAX's caches: each program below is traced in this form
        fv, comp[f"{form} jit(vmap(fd))"] = compiled(jax.vmap(fd, in_axes=(None, 0, 0)), m, Q, V)
        ro, comp[f"{form} ds.rollout"] = compiled(
            lambda v: ds.rollout(m, q0, v, DT, a.steps, loads=ld, save_every=a.steps).q[-1], v0)
        fw, comp[f"{form} loss"] = compiled(loss, v0)
        gr, comp[f"{form} grad of loss"] = compiled(jax.grad(loss), v0)
        grads[form] = gr(v0)
        ent[f"{form} jit(vmap(fd)) per sample"] = ((lambda fv=fv: fv(m, Q, V).block_until_ready()), a.batch)
        ent[f"{form} ds.rollout per evaluation"] = ((lambda ro=ro: ro(v0).block_until_ready()), 4 * a.steps)
        ent[f"{form} loss"] = ((lambda fw=fw: fw(v0).block_until_ready()), 1)
        ent[f"{form} grad of loss"] = ((lambda gr=gr: gr(v0).block_until_ready()), 1)
    ds.set_products("auto")
    r = interleave(ent, rounds=a.rounds, min_time=0.3, seed=1)
    rows = ("jit(vmap(fd)) per sample", "ds.rollout per evaluation", "loss", "grad of loss")
    res = {"meta": {**machine_info(), "loadavg_start": load0, "loadavg_end": loadavg(), "args": vars(a)},
           "us": r, "compile_s": comp,
           "unrolled_speedup": {k: r[f"dot {k}"]["median"] / r[f"unrolled {k}"]["median"] for k in rows},
           "unrolled_compile_ratio": {k: comp[f"unrolled {k}"] / comp[f"dot {k}"]
                                      for k in ("jit(vmap(fd))", "ds.rollout", "loss", "grad of loss")},
           "max_abs_grad_diff_between_forms": float(jnp.max(jnp.abs(grads["dot"] - grads["unrolled"]))),
           "max_abs_grad": float(jnp.max(jnp.abs(grads["dot"])))}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1, default=str))
    for k, x in r.items():
        print(f"{k:40s} {x['median']:12.3f} µs")
    for k, x in comp.items():
        print(f"compile {k:32s} {x:6.2f} s")
    print("written out / dot, speed:", json.dumps(res["unrolled_speedup"]))
    print("written out / dot, compile:", json.dumps(res["unrolled_compile_ratio"]))


if __name__ == "__main__":
    main()
