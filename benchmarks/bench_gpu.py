"""The GPU rows of issues 15 (Monte Carlo) and 20 (core speed): S0 on one GPU, diffsim and MJX side
by side in one process per dtype.

S0 dual-arm robot with its follower forces (the model, loads, MJCF and actuators of
``bench_s0.py`` / ``bench_montecarlo.py``), on the process's first JAX device:

* ``fd``: forward-dynamics evaluations per second of ``jit(vmap(fd))`` at batch ``--fd-batch``
  (issue 20: ≥ 3e8 in float32, ≥ 2× MJX in float64), against ``jit(vmap(mjx.forward))`` from the
  same states; the compiled program's kernel count (GPU thunks of the entry computation);
* ``rollout``: S0 RK4 steps per second (issue 15: ≥ 1e8 in float32 on one H100, ≥ 2× MJX in
  float64), ``--steps`` steps of dt = 1e-3 from ``--batch`` states: ``montecarlo.run`` of the S0
  System with the link masses drawn per sample (one chunk: draws, ``set_params``, simulate,
  statistics, status), ``jit(vmap(ds.rollout))`` keeping the final state, and a ``lax.scan`` of
  ``vmap(mjx.step)`` (mjINT_RK4) at ``--mjx-batch``; the final states of diffsim and MJX compared;
* ``accuracy`` (float64 process only): the same float32 paths (model and states cast) against
  float64 on 4096 samples: forward dynamics, and the 100-step rollout's final state;
* ``memory``: XLA's planned temporary memory of the batched rollout (compiled
  ``memory_analysis()``) at several batch sizes, and the device's peak bytes in use;
* ``schedules``: the forward dynamics and the rollout under each of ``--variants`` (rigid-tree
  schedule; small products as dot kernels or written out), side by side with MJX: kernels, dots
  left, compile time, throughput (README "On one GPU": written out, the products fuse);
* ``grad``: ``jit(vmap(grad))`` of a rollout loss against its forward pass under each form of
  the products (``ds.set_products``).

Each section writes the JSON again as it finishes, so a run cut short keeps what it measured.
``--budget`` seconds: later sections are skipped (and say so) once it is spent.

Precision: diffsim traces its own float32 products in true float32 (``diffsim.precision``); MJX's
follow JAX's default, TF32 on NVIDIA GPUs, unless ``--matmul-precision highest`` sets the process
default (then both are true float32).

Usage (a GPU machine; float32 runs with ``jax_enable_x64`` off, as MJX users run it)::

    python benchmarks/bench_gpu.py --dtype float32 --out results/gpu_float32.json
    python benchmarks/bench_gpu.py --dtype float64 --out results/gpu_float64.json
    python benchmarks/bench_gpu.py --dtype float64 --fd-batch 4096 --batch 256 --mjx-batch 256  # a CPU dry run
    python benchmarks/bench_gpu.py --dtype float32 --sections schedules --batch 131072 --mjx-batch 131072 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--fd-batch", type=int, default=2**20)
    p.add_argument("--batch", type=int, default=2**16, help="samples of the rollout rows")
    p.add_argument("--mjx-batch", type=int, default=2**16)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--memory-batches", default="1024,8192,65536")
    p.add_argument("--sections", default="fd,rollout,accuracy,memory")
    p.add_argument("--skip", default="", help="mjx to leave MJX out; montecarlo: no mc.run rows in schedules")
    p.add_argument("--variants", default="levels,levels_reduce,levels_unrolled,levels_unrolled+nodots",
                   help="schedules section: rigid-tree schedules for the forward dynamics, the other products as dot "
                        "kernels (+unrolled: every product written out by the library; +nodots: by a jaxpr rewrite)")
    p.add_argument("--rollout-variants", default="levels,levels_unrolled,levels_unrolled+nodots",
                   help="schedules section: the same for the RK4 rollout")
    p.add_argument("--grad-batch", type=int, default=16384, help="grad section: samples")
    p.add_argument("--hlo-dir", default=None, help="schedules section: write each compiled fd program's HLO here")
    p.add_argument("--matmul-precision", default=None,
                   help="jax_default_matmul_precision for the whole process (e.g. highest: no TF32 on GPUs)")
    p.add_argument("--budget", type=float, default=1e9, help="seconds; later sections are skipped after it")
    p.add_argument("--out", default=None)
    return p.parse_args(argv)


ARGS = parse_args()
os.environ.setdefault("MUJOCO_GL", "disable")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", ARGS.dtype == "float64")
if ARGS.matmul_precision:
    jax.config.update("jax_default_matmul_precision", ARGS.matmul_precision)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import diffsim as ds  # noqa: E402
from bench_montecarlo import DT, FOLLOWER, mc_case  # noqa: E402
from diffsim.scenarios import seed000  # noqa: E402
from _dot_rewrite import count_dots, without_dots  # noqa: E402
from diffsim.dynamics import dispatch  # noqa: E402
from harness import CompileEvents, interleave, loadavg, machine_info, s0_mujoco_models  # noqa: E402

T0 = time.perf_counter()
DTYPE = jnp.float32 if ARGS.dtype == "float32" else jnp.float64
# HLO opcodes that are no kernel of their own on a GPU
_NO_KERNEL = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "partition-id"}


def log(*a):
    print(f"[{time.perf_counter() - T0:7.1f} s]", *a, flush=True)


def kernel_count(compiled) -> dict:
    """Kernels of a compiled program: the instructions of its entry computation (and of each
    ``while`` body: a loop's per-iteration kernels) that are not parameters, constants, tuples or
    bitcasts; each fusion, custom call (cuBLAS, …) and copy is one launch."""
    text = compiled.as_text()
    comps, name = {}, None
    for ln in text.splitlines():
        m = re.match(r"^(ENTRY )?%?([\w.\-]+) .*\{$", ln)
        if m:
            name = "ENTRY" if m.group(1) else m.group(2)
            comps[name] = []
        elif name and ln.strip() == "}":
            name = None
        elif name and "=" in ln:
            op = re.search(r"=\s*[^ ]+\s+([\w\-]+)\(", ln)
            if op:
                comps[name].append(op.group(1))
    bodies = set(re.findall(r"body=%?([\w.\-]+)", text))

    def count(c):
        return sum(op not in _NO_KERNEL for op in comps.get(c, []))

    return {"entry": count("ENTRY"), "while_bodies": {b: count(b) for b in bodies if b in comps}}


def memory(compiled) -> dict:
    try:
        ma = compiled.memory_analysis()
        return {k: int(getattr(ma, k)) for k in ("temp_size_in_bytes", "argument_size_in_bytes",
                                                  "output_size_in_bytes", "generated_code_size_in_bytes")}
    except Exception as e:  # not every backend reports it
        return {"error": repr(e)}


def compiled(ev, jitted, *args):
    """``jitted.lower(*args).compile()``, its seconds and JAX's stage split (one compilation, whose
    executable is then timed and inspected)."""
    ev.active = {}
    t0 = time.perf_counter()
    comp = jitted.lower(*args).compile()
    t = time.perf_counter() - t0
    stages, ev.active = ev.active, None
    return comp, {"total_s": t, **stages}


def mjx_module():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from mujoco import mjx
    return mjx


def s0(dtype):
    m = seed000.model().astype(dtype)
    return m, seed000.loads(m)


def fd_fn(ld):
    def fd(m, q, v):
        tau, f_ext = ld.evaluate(m, 0.0, q, v)
        return ds.forward_dynamics(m, q, v, tau, f_ext)
    return fd


def states(m, n, seed=0):
    kq, kv = jax.random.split(jax.random.PRNGKey(seed))
    Q = jax.vmap(lambda k: ds.random_configuration(m, k))(jax.random.split(kq, n))
    return Q, 0.5 * jax.random.normal(kv, (n, m.nv), m.dtype)


def rollout_fn(m, ld, steps):
    q0 = ds.neutral_configuration(m)
    return jax.jit(jax.vmap(lambda v: ds.rollout(m, q0, v, DT, steps, loads=ld, save_every=steps).q[-1]))


def mjx_setup(dev):
    import mujoco

    mjx = mjx_module()
    mjm = s0_mujoco_models(seed000.DATA, FOLLOWER, DT)["rk4"]
    d = mujoco.MjData(mjm)
    d.ctrl[:] = 1.0
    mx, dx = jax.device_put((mjx.put_model(mjm), mjx.put_data(mjm, d)), dev)
    return mjx, mx, dx


def mjx_fd(m, Q, V, a, dev, ev) -> dict:
    """``jit(vmap(mjx.forward))`` from diffsim's states ``Q, V``; its accelerations against diffsim's
    ``a`` on 64 samples."""
    mjx, mx, dx = mjx_setup(dev)
    Qm, Vm = jax.vmap(lambda q, v: ds.to_mujoco(m, q, v))(Q, V)
    mjx_v = jax.jit(jax.vmap(lambda mx, qp, qv: mjx.forward(mx, dx.replace(qpos=qp, qvel=qv)).qacc,
                             in_axes=(None, 0, 0)))
    mjx_c, t = compiled(ev, mjx_v, mx, Qm, Vm)
    qacc = mjx_c(mx, Qm, Vm)
    # the same accelerations (diffsim's free-joint v̇ rotated to MuJoCo's qacc convention)
    a_mj = np.array(qacc[:64], np.float64)
    a_ds = np.array(a[:64], np.float64)
    q_ds, v_ds = np.asarray(Q[:64], np.float64), np.asarray(V[:64], np.float64)
    R = np.asarray(jax.vmap(ds.spatial.quat_to_rot)(jnp.asarray(q_ds[:, 3:7])))
    a_ds[:, :3] = np.einsum("bij,bj->bi", R, a_ds[:, :3] + np.cross(v_ds[:, 3:6], v_ds[:, :3]))
    return {"call": lambda: mjx_c(mx, Qm, Vm).block_until_ready(), "compile_s": t,
            "kernels": kernel_count(mjx_c), "max_abs_qacc_diff_64": float(np.max(np.abs(a_mj - a_ds)))}


def mjx_rollout(m, Vb, qf, steps, dev, ev) -> dict:
    """A ``lax.scan`` of ``vmap(mjx.step)`` (mjINT_RK4) from the neutral configuration and velocities
    ``Vb``; its final ``qpos`` against diffsim's ``qf`` on 64 samples."""
    mjx, mx, dx = mjx_setup(dev)
    q0 = ds.neutral_configuration(m)
    Qm, Vm = jax.vmap(lambda v: ds.to_mujoco(m, q0, v))(Vb)

    def one(qp, qv):
        d1 = dx.replace(qpos=qp, qvel=qv)
        d1, _ = jax.lax.scan(lambda d, _: (mjx.step(mx, d), None), d1, None, length=steps)
        return d1.qpos

    mjx_rc, t = compiled(ev, jax.jit(jax.vmap(one)), Qm, Vm)
    qpos = mjx_rc(Qm, Vm)
    n = min(64, Vb.shape[0])
    return {"call": lambda: mjx_rc(Qm, Vm).block_until_ready(), "compile_s": t, "kernels": kernel_count(mjx_rc),
            "max_abs_final_qpos_diff_64": float(np.max(np.abs(np.asarray(qpos[:n], np.float64)
                                                               - np.asarray(qf[:n], np.float64))))}


def section_fd(res, dev, ev):
    B = ARGS.fd_batch
    m, ld = s0(DTYPE)
    Q, V = jax.device_put(states(m, B), dev)
    fd_v = jax.jit(jax.vmap(fd_fn(ld), in_axes=(None, 0, 0)))
    fd_c, t = compiled(ev, fd_v, m, Q, V)
    out = {"batch": B, "kernels": {"diffsim": kernel_count(fd_c)}, "compile_s": {"diffsim": t}}
    a = fd_c(m, Q, V)
    out["finite_fraction"] = float(jnp.mean(jnp.isfinite(a).all(axis=-1)))
    ent = {"diffsim jit(vmap(fd))": (lambda: fd_c(m, Q, V).block_until_ready(), B)}
    if "mjx" not in ARGS.skip:
        try:
            mj = mjx_fd(m, Q, V, a, dev, ev)
            out["compile_s"]["mjx"], out["kernels"]["mjx"] = mj["compile_s"], mj["kernels"]
            out["max_abs_qacc_diff_vs_mjx_64_samples"] = mj["max_abs_qacc_diff_64"]
            ent["mjx jit(vmap(mjx.forward))"] = (mj["call"], B)
        except Exception as e:
            out["mjx_error"] = repr(e)
    r = interleave(ent, rounds=ARGS.rounds, min_time=0.5, seed=3)
    out["us_per_eval"] = r
    out["evals_per_s"] = {k: 1e6 / v["median"] for k, v in r.items()}
    if "mjx jit(vmap(mjx.forward))" in r:
        out["diffsim_over_mjx_speed"] = r["mjx jit(vmap(mjx.forward))"]["median"] / r["diffsim jit(vmap(fd))"]["median"]
    res["fd"] = out


def section_rollout(res, dev, ev):
    B, steps = ARGS.batch, ARGS.steps
    m, ld = s0(DTYPE)
    V = jax.device_put(0.2 * jax.random.normal(jax.random.PRNGKey(1), (B, m.nv), m.dtype), dev)
    roll = rollout_fn(m, ld, steps)
    out = {"batch": B, "steps": steps, "mjx_batch": ARGS.mjx_batch}
    roll_c, t = compiled(ev, roll, V)
    out["compile_s"] = {"vmap(rollout)": t}
    out["kernels"] = {"vmap(rollout)": kernel_count(roll_c)}
    qf = roll_c(V)
    mc_run = mc_case(B, steps, devices=[dev], dtype=DTYPE)
    t0 = time.perf_counter()
    r0 = mc_run()
    out["compile_s"]["montecarlo.run (first call)"] = time.perf_counter() - t0
    out["montecarlo_status_counts"] = {str(k): int(v) for k, v in r0.status_counts.items()} if hasattr(
        r0, "status_counts") else None
    ent = {"diffsim montecarlo.run": (mc_run, B * steps),
           "diffsim jit(vmap(rollout))": (lambda: roll_c(V).block_until_ready(), B * steps)}
    if "mjx" not in ARGS.skip:
        try:
            mj = mjx_rollout(m, V[:ARGS.mjx_batch], qf, steps, dev, ev)
            out["compile_s"]["mjx"], out["kernels"]["mjx"] = mj["compile_s"], mj["kernels"]
            out["max_abs_final_qpos_diff_vs_mjx"] = mj["max_abs_final_qpos_diff_64"]
            ent["mjx lax.scan(vmap(mjx.step)) RK4"] = (mj["call"], ARGS.mjx_batch * steps)
        except Exception as e:
            out["mjx_error"] = repr(e)
    r = interleave(ent, rounds=ARGS.rounds, min_time=0.0, seed=4)
    out["us_per_sample_step"] = r
    out["steps_per_s"] = {k: 1e6 / v["median"] for k, v in r.items()}
    mk = "mjx lax.scan(vmap(mjx.step)) RK4"
    if mk in r:
        out["speed_over_mjx"] = {k: r[mk]["median"] / v["median"] for k, v in r.items() if k != mk}
    res["rollout"] = out


def section_accuracy(res, dev, ev):
    if DTYPE != jnp.float64:
        res["accuracy"] = {"skipped": "float32 accuracy is measured in the float64 process (x64 on)"}
        return
    n, steps = 4096, ARGS.steps
    m64, ld64 = s0(jnp.float64)
    m32, ld32 = s0(jnp.float32)
    Q, V = states(m64, n)
    a64 = jax.jit(jax.vmap(fd_fn(ld64), in_axes=(None, 0, 0)))(m64, Q, V)
    a32 = jax.jit(jax.vmap(fd_fn(ld32), in_axes=(None, 0, 0)))(m32, Q.astype(jnp.float32), V.astype(jnp.float32))
    rel = jnp.linalg.norm(a32 - a64, axis=-1) / jnp.linalg.norm(a64, axis=-1)
    V0 = 0.2 * jax.random.normal(jax.random.PRNGKey(1), (n, m64.nv))
    q64 = rollout_fn(m64, ld64, steps)(V0)
    q32 = rollout_fn(m32, ld32, steps)(V0.astype(jnp.float32))
    e = jnp.max(jnp.abs(q32 - q64), axis=-1)
    res["accuracy"] = {"samples": n, "dtype_of_float32_outputs": [str(a32.dtype), str(q32.dtype)],
                       "fd_rel_error": {"median": float(jnp.median(rel)), "max": float(jnp.max(rel))},
                       f"rollout_{steps}_steps_final_q_max_abs_error": {"median": float(jnp.median(e)),
                                                                       "max": float(jnp.max(e))}}


def section_memory(res, dev, ev):
    m, ld = s0(DTYPE)
    steps = ARGS.steps
    roll = rollout_fn(m, ld, steps)
    rows = []
    for B in [int(b) for b in ARGS.memory_batches.split(",")]:
        V = jax.ShapeDtypeStruct((B, m.nv), m.dtype)
        t0 = time.perf_counter()
        comp = roll.lower(V).compile()
        rows.append({"batch": B, "compile_s": time.perf_counter() - t0, **memory(comp)})
        log("memory", rows[-1])
        if time.perf_counter() - T0 > ARGS.budget:
            break
    if len(rows) > 1 and "temp_size_in_bytes" in rows[0]:
        b = np.array([r["batch"] for r in rows], float)
        tmp = np.array([r["temp_size_in_bytes"] for r in rows], float)
        rows_fit = {"temp_bytes_per_sample": float(np.polyfit(b, tmp, 1)[0]),
                    "state_bytes": int((m.nq + m.nv) * np.dtype(m.dtype).itemsize)}
    else:
        rows_fit = {}
    stats = {}
    try:
        stats = {k: int(v) for k, v in (dev.memory_stats() or {}).items() if "bytes" in k}
    except Exception as e:
        stats = {"error": repr(e)}
    res["memory"] = {"steps": steps, "rows": rows, **rows_fit, "device_memory_stats_after_all_sections": stats}


def with_variant(variant, make):
    """``make(nodots)`` traced (and compiled) under one rigid-tree variant: ``"<schedule>"``
    (``dispatch.RIGID_SCHEDULE``; every other small product a dot kernel: ``ds.set_products("dot")``),
    ``"<schedule>+unrolled"`` (every small product written out by the library:
    ``ds.set_products("unrolled")``) or ``"<schedule>+nodots"`` (the dot form's products rewritten as
    multiply-adds by ``_dot_rewrite``, loop bodies included: forward only). Each switch clears
    JAX's caches, so the next trace reads it."""
    schedule, _, extra = variant.partition("+")
    old = dispatch.RIGID_SCHEDULE
    dispatch.RIGID_SCHEDULE = schedule
    ds.set_products("unrolled" if extra == "unrolled" else "dot")
    jax.clear_caches()
    try:
        return make(extra == "nodots")
    finally:
        dispatch.RIGID_SCHEDULE = old
        ds.set_products("auto")


def beside_mjx(part, info, ent, setup, count, keys, min_time, seed):
    """MJX's entry (``setup()``: :func:`mjx_fd` / :func:`mjx_rollout`; None or ``--skip mjx``: none)
    added to diffsim's ``ent``, all timed in interleaved rounds, and written into ``part``: ``info``,
    the times and rates under ``keys`` (µs per unit, units per second) and each speed over MJX's."""
    if setup is not None and "mjx" not in ARGS.skip:
        try:
            mj = setup()
            info["mjx"] = {k: v for k, v in mj.items() if k != "call"}
            ent["mjx"] = (mj["call"], count)
        except Exception as e:
            info["mjx"] = {"error": repr(e)}
    r = interleave(ent, rounds=ARGS.rounds, min_time=min_time, seed=seed)
    part.update({"info": info, keys[0]: r, keys[1]: {k: 1e6 / x["median"] for k, x in r.items()}})
    if "mjx" in r:
        part["speed_over_mjx"] = {k: r["mjx"]["median"] / x["median"] for k, x in r.items() if k != "mjx"}


def section_schedules(res, dev, ev):
    """Does the GPU gain from products that XLA can fuse? The forward dynamics (``--fd-batch``) and
    the RK4 rollout (``--batch``) under each of ``--variants``, side by side with MJX: kernels,
    dots left in the jaxpr, compile time, agreement with the first variant, throughput."""
    variants = [v for v in ARGS.variants.split(",") if v]
    m, ld = s0(DTYPE)
    out = {"variants": variants, "fd": {"batch": ARGS.fd_batch}, "rollout": {"batch": ARGS.batch, "steps": ARGS.steps}}
    res["schedules"] = out
    # forward dynamics
    B = ARGS.fd_batch
    Q, V = jax.device_put(states(m, B), dev)
    fd1 = fd_fn(ld)
    q1, v1 = Q[0], V[0]
    info, ent, ref = {}, {}, None
    for var in variants:
        def make(nodots):  # traced and compiled while the variant is set
            f = without_dots(fd1, m, q1, v1) if nodots else fd1
            return (count_dots(f, m, q1, v1),) + compiled(ev, jax.jit(jax.vmap(f, in_axes=(None, 0, 0))), m, Q, V)

        ndots, c, t = with_variant(var, make)
        a = c(m, Q, V)
        ref = a if ref is None else ref
        info[var] = {"dots_in_jaxpr": ndots, "kernels": kernel_count(c), "compile_s": t,
                     "max_abs_diff_vs_first": float(jnp.max(jnp.abs(a - ref))),
                     "finite_fraction": float(jnp.mean(jnp.isfinite(a).all(axis=-1)))}
        ent[f"diffsim {var}"] = ((lambda c=c: c(m, Q, V).block_until_ready()), B)
        log("schedules fd", var, info[var])
        if ARGS.hlo_dir:
            Path(ARGS.hlo_dir).mkdir(parents=True, exist_ok=True)
            (Path(ARGS.hlo_dir) / f"fd_{ARGS.dtype}_{var.replace('+', '_')}.hlo.txt").write_text(c.as_text())
    beside_mjx(out["fd"], info, ent, lambda: mjx_fd(m, Q, V, ref, dev, ev), B, ("us_per_eval", "evals_per_s"), 0.5, 5)
    log("schedules fd", json.dumps(out["fd"].get("evals_per_s")))
    if time.perf_counter() - T0 > ARGS.budget:
        out["rollout"]["skipped"] = "budget"
        return
    # RK4 rollout
    B, steps = ARGS.batch, ARGS.steps
    Vr = jax.device_put(0.2 * jax.random.normal(jax.random.PRNGKey(1), (B, m.nv), m.dtype), dev)
    q0 = ds.neutral_configuration(m)

    def roll1(v):
        return ds.rollout(m, q0, v, DT, steps, loads=ld, save_every=steps).q[-1]

    info, ent, ref = {}, {}, None
    for var in ARGS.rollout_variants.split(","):
        if not var or time.perf_counter() - T0 > ARGS.budget:
            continue

        def make(nodots):
            f = without_dots(roll1, Vr[0]) if nodots else roll1
            res = (count_dots(f, Vr[0]),) + compiled(ev, jax.jit(jax.vmap(f)), Vr)
            if nodots or "montecarlo" in ARGS.skip:
                return res + (None,)
            # montecarlo.run of the S0 System under this schedule: its chunk program is cached by
            # structure, not by schedule, so its calls are timed here, in a row, not interleaved
            run = mc_case(B, steps, devices=[dev], dtype=DTYPE)
            t0 = time.perf_counter()
            run()
            first = time.perf_counter() - t0
            ts = []
            for _ in range(ARGS.rounds):
                t0 = time.perf_counter()
                run()
                ts.append(time.perf_counter() - t0)
            return res + ({"first_call_s": first, "call_s": ts, "steps_per_s": B * steps / float(np.median(ts))},)

        ndots, c, t, mc_row = with_variant(var, make)
        qf = c(Vr)
        ref = qf if ref is None else ref
        info[var] = {"dots_in_jaxpr": ndots, "kernels": kernel_count(c), "compile_s": t,
                     "max_abs_diff_vs_first": float(jnp.max(jnp.abs(qf - ref))), "montecarlo.run": mc_row}
        ent[f"diffsim {var}"] = ((lambda c=c: c(Vr).block_until_ready()), B * steps)
        log("schedules rollout", var, info[var])
    beside_mjx(out["rollout"], info, ent, None if ref is None else lambda: mjx_rollout(m, Vr[:ARGS.mjx_batch], ref, steps, dev, ev),
               ARGS.mjx_batch * steps, ("us_per_sample_step", "steps_per_s"), 0.0, 6)


def section_grad(res, dev, ev):
    """Reverse mode on the GPU under each form of the small products (``ds.set_products``):
    ``jit(vmap(grad))`` of a ``--steps``-step RK4 rollout loss at batch ``--grad-batch`` against
    its forward pass; compile times, kernels, the two forms' gradients compared."""
    B, steps = ARGS.grad_batch, ARGS.steps
    m, ld = s0(DTYPE)
    q0 = ds.neutral_configuration(m)
    V = jax.device_put(0.2 * jax.random.normal(jax.random.PRNGKey(2), (B, m.nv), m.dtype), dev)

    def loss(v):
        return jnp.sum(ds.rollout(m, q0, v, DT, steps, loads=ld, save_every=steps).q[-1] ** 2)

    out, ent, grads = {"batch": B, "steps": steps}, {}, {}
    try:
        for form in ("dot", "unrolled"):
            ds.set_products(form)
            fw, tf = compiled(ev, jax.jit(jax.vmap(loss)), V)
            gr, tg = compiled(ev, jax.jit(jax.vmap(jax.grad(loss))), V)
            grads[form] = gr(V)
            out[form] = {"compile_s": {"forward": tf, "grad": tg},
                         "kernels": {"forward": kernel_count(fw), "grad": kernel_count(gr)}}
            ent[f"{form} forward"] = ((lambda fw=fw: fw(V).block_until_ready()), B)
            ent[f"{form} grad"] = ((lambda gr=gr: gr(V).block_until_ready()), B)
            log("grad", form, out[form])
    finally:
        ds.set_products("auto")
    g0, g1 = grads["dot"], grads["unrolled"]
    out["max_abs_grad_diff_between_forms"] = float(jnp.max(jnp.abs(g0 - g1)))
    out["max_abs_grad"] = float(jnp.max(jnp.abs(g0)))
    r = interleave(ent, rounds=ARGS.rounds, min_time=0.3, seed=7)
    out["us_per_sample"] = r
    out["grad_over_forward"] = {f: r[f"{f} grad"]["median"] / r[f"{f} forward"]["median"] for f in ("dot", "unrolled")}
    out["unrolled_speedup"] = {k: r[f"dot {k}"]["median"] / r[f"unrolled {k}"]["median"] for k in ("forward", "grad")}
    res["grad"] = out


def main():
    dev = jax.devices()[0]
    out = Path(ARGS.out) if ARGS.out else HERE / "results" / f"gpu_{ARGS.dtype}.json"
    res = {"meta": {**machine_info(modules=("mujoco", "equinox", "diffrax"), distributions=("mujoco-mjx",)),
                    "device": str(dev), "device_kind": getattr(dev, "device_kind", ""), "dtype": ARGS.dtype,
                    "x64": bool(jax.config.jax_enable_x64),
                    "default_matmul_precision": str(jax.config.jax_default_matmul_precision),
                    "diffsim_products": ds.products(), "loadavg_start": loadavg(), "args": vars(ARGS),
                    "started": time.strftime("%Y-%m-%d %H:%M:%S")}}
    ev = CompileEvents()
    sections = {"fd": section_fd, "rollout": section_rollout, "accuracy": section_accuracy, "memory": section_memory,
                "schedules": section_schedules, "grad": section_grad}
    for name in [s for s in ARGS.sections.split(",") if s]:
        if time.perf_counter() - T0 > ARGS.budget:
            res.setdefault("skipped", []).append(name)
            continue
        log("section", name)
        try:
            with jax.default_device(dev):
                sections[name](res, dev, ev)
        except Exception as e:  # keep the other sections' figures
            import traceback

            res[name] = {"error": repr(e), "traceback": traceback.format_exc()[-3000:]}
        res["meta"]["wall_s"] = time.perf_counter() - T0
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=1, default=str))
        log(name, json.dumps(res.get(name), default=str)[:1500])


if __name__ == "__main__":
    main()
