#!/usr/bin/env python
"""Monte Carlo throughput: batched S0 rollouts, diffsim against MuJoCo's threaded C rollout, and
weak scaling of ``diffsim.montecarlo.run`` over devices, in one run.

Throughput (S0 dual-arm robot with the follower forces, float64, classical RK4, dt = 1e-3,
``--steps`` steps from B initial states with random joint velocities, only the final state kept):

* ``diffsim montecarlo.run``: ``mc.run`` of the S0 System (``solver="rk4"``, fixed step) with the
  link masses drawn per sample, chunk = B (draws, ``set_params``, simulate, statistics, status);
* ``diffsim vmap(rollout)``: ``jit(vmap(ds.rollout))`` from the same states (the floor of the
  library's batched path);
* ``diffsim montecarlo.run, D CPU devices``: the same study sharded over ``D = --cpu-devices``
  CPU devices of this process (default ``os.cpu_count()``; ``jax_num_cpu_devices``), i.e. one
  XLA CPU thread per core as MuJoCo's thread pool has one C thread per core; the two rows above
  run on the first device alone. Each device runs its share in blocks of 128 samples (``mc.run``'s
  CPU default); ``…, one vmap per device`` is the same with ``batch_size=None``;
* ``mujoco.rollout``: ``mjINT_RK4`` in C with a thread pool of ``os.cpu_count()`` threads.

Reported per sample-step (µs), timed after compilation, rounds interleaved, median of rounds.
Target (issue 15, this CPU): diffsim per sample-step ≤ 0.5× MuJoCo's threaded rollout, taken from
the row that, like MuJoCo, uses every core.

Weak scaling: ``mc.run`` with ``--per-device`` samples per device on D = 1, 2, 4 CPU devices
(``--xla_force_host_platform_device_count``, each D in a fresh process); efficiency ``t(1)/t(D)``.
On a machine with fewer cores than D the devices share cores (the JSON records the core count).

Usage: ``python benchmarks/bench_montecarlo.py [--steps 100] [--batches 64,256,1024] [--rounds 3]``
→ ``results/montecarlo_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import loadavg, machine_info, mj_set, mj_state, s0_mujoco_models, setup_jax  # noqa: E402

FOLLOWER = (("a1tip", "a1j2", (1.0, -1.0, 1.0)), ("a2tip", "a2j2", (2.0, -2.0, -2.0)))
DT = 1e-3

SCALING_CHILD = r"""
import os, sys, time, json
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=" + sys.argv[1]
import jax; jax.config.update("jax_enable_x64", True)
sys.path.insert(0, sys.argv[4])
from bench_montecarlo import mc_case
D, per, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
assert len(jax.local_devices()) == D
run = mc_case(per * D, steps)
run()
ts = []
for _ in range(3):
    t0 = time.perf_counter(); run(); ts.append(time.perf_counter() - t0)
print(json.dumps({"devices": D, "samples": per * D, "wall_s": sorted(ts)[1]}))
"""


def s0_system(steps, dtype=None):
    """The S0 System of the throughput rows: RK4 at ``DT``, ``steps`` steps, the follower forces;
    ``dtype`` casts the model (float32 rows of ``bench_gpu.py``)."""
    import jax.numpy as jnp

    import diffsim as ds
    from diffsim.scenarios import seed000

    m = seed000.model()
    m = m if dtype is None else m.astype(dtype)
    return ds.System(m, ds.neutral_configuration(m), jnp.zeros(m.nv, m.dtype), loads=seed000.loads(m),
                     t1=steps * DT, solver="rk4", dt0=DT, saveat=2, max_steps=steps + 8)


def mc_case(n, steps, devices=None, dtype=None, batch_size="auto"):
    """A callable running an S0 mass-uncertainty study of ``n`` samples in one chunk, sharded over
    ``devices`` (default: all local devices), ``batch_size`` as in ``mc.run``."""
    import diffsim as ds
    from diffsim import montecarlo as mc

    s = s0_system(steps, dtype)
    dists = {k: mc.Normal(float(ds.get_param(s, k)), 0.05 * float(ds.get_param(s, k)))
             for k in ds.param_names(s) if k.endswith(".mass") and ".a" in k}
    return lambda: mc.run(s, dists, n, chunk_size=n, devices=devices, progress=False, batch_size=batch_size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batches", default="64,256,1024")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--per-device", type=int, default=128)
    ap.add_argument("--devices", default="1,2,4")
    ap.add_argument("--cpu-devices", type=int, default=os.cpu_count() or 1,
                    help="CPU devices of this process for the sharded montecarlo.run row (default: the core count)")
    ap.add_argument("--out", default=str(HERE / "results" / "montecarlo_cpu.json"))
    args = ap.parse_args()
    jax = setup_jax()
    from diffsim.cli import cpu_devices

    cpu_devices(args.cpu_devices)  # as `diffsim montecarlo` does, before the first computation
    import jax.numpy as jnp
    import mujoco
    import numpy as np
    from mujoco import rollout as mj_rollout

    import diffsim as ds
    from diffsim.scenarios import seed000

    load0 = loadavg()
    steps = args.steps
    m = seed000.model()
    ld = seed000.loads(m)
    batches = [int(b) for b in args.batches.split(",")]
    Bmax = max(batches)
    rng = np.random.default_rng(0)
    q0 = ds.neutral_configuration(m)
    V = jnp.asarray(0.2 * rng.standard_normal((Bmax, m.nv)))
    roll = jax.jit(jax.vmap(lambda v: ds.rollout(m, q0, v, DT, steps, loads=ld).q[-1]))
    mjm = s0_mujoco_models(seed000.DATA, FOLLOWER, DT)["rk4"]
    nthread = os.cpu_count() or 1
    ro = mj_rollout.Rollout(nthread=nthread)
    datas = [mujoco.MjData(mjm) for _ in range(nthread)]
    d_tmp = mujoco.MjData(mjm)
    S_all = []
    for i in range(Bmax):
        qm, vm = ds.to_mujoco(m, q0, V[i])
        mj_set(mujoco, mjm, d_tmp, np.asarray(qm), np.asarray(vm))
        S_all.append(mj_state(mujoco, mjm, d_tmp))
    S_all = np.stack(S_all)
    # correctness: the same final state (one sample)
    out1 = np.empty((1, steps, S_all.shape[1]))
    ro.rollout(mjm, datas, S_all[:1], np.ones((1, steps, mjm.nu)), nstep=steps, state=out1)
    q_mj_final = out1[0, -1, 1:1 + mjm.nq]
    q_ds_final = np.asarray(ds.to_mujoco(m, roll(V[:1])[0], V[0])[0])
    agreement = float(np.max(np.abs(q_mj_final - q_ds_final)))

    rows = {}
    n_dev = len(jax.local_devices())
    sharded = f"diffsim montecarlo.run, {n_dev} CPU devices"
    for B in batches:
        S, ctrl = S_all[:B], np.ones((B, steps, mjm.nu))
        out = np.empty((B, steps, S.shape[1]))
        Vb = V[:B]
        mc_run = mc_case(B, steps, devices=jax.local_devices()[:1])
        t0 = time.perf_counter()
        roll(Vb).block_until_ready()
        c_roll = time.perf_counter() - t0
        t0 = time.perf_counter()
        mc_run()
        c_mc = time.perf_counter() - t0
        peers = {"diffsim montecarlo.run": mc_run,
                 "diffsim vmap(rollout)": lambda Vb=Vb: roll(Vb).block_until_ready(),
                 f"mujoco.rollout RK4, {nthread} threads": lambda S=S, ctrl=ctrl, out=out: ro.rollout(
                     mjm, datas, S, ctrl, nstep=steps, state=out)}
        if n_dev > 1:
            peers[sharded] = mc_case(B, steps)
            peers[sharded]()  # compile
            peers[sharded + ", one vmap per device"] = mc_case(B, steps, batch_size=None)
            peers[sharded + ", one vmap per device"]()
        times = {k: [] for k in peers}
        for _ in range(args.rounds):
            order = list(peers)
            random.shuffle(order)
            for k in order:
                t0 = time.perf_counter()
                peers[k]()
                times[k].append(time.perf_counter() - t0)
        rows[str(B)] = {k: {"us_per_sample_step": 1e6 * statistics.median(v) / (B * steps),
                            "wall_s_median": statistics.median(v)} for k, v in times.items()}
        rows[str(B)]["compile_plus_first_s"] = {"vmap(rollout)": c_roll, "montecarlo.run": c_mc}
        mjk = f"mujoco.rollout RK4, {nthread} threads"
        for k in [k for k in peers if k.startswith("diffsim")]:
            rows[str(B)][k]["ratio_to_mujoco"] = rows[str(B)][k]["us_per_sample_step"] / rows[str(B)][mjk][
                "us_per_sample_step"]
        print(f"B={B}: " + ", ".join(f"{k} {v['us_per_sample_step']:.2f} us" for k, v in rows[str(B)].items()
                                     if "us_per_sample_step" in v), flush=True)

    scaling = []
    for D in [int(d) for d in args.devices.split(",")]:
        r = subprocess.run([sys.executable, "-c", SCALING_CHILD, str(D), str(args.per_device), str(steps), str(HERE)],
                           capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            scaling.append({"devices": D, "error": r.stderr[-2000:]})
            continue
        scaling.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(scaling[-1], flush=True)
    base = next((s["wall_s"] for s in scaling if s.get("devices") == 1 and "wall_s" in s), None)
    for s in scaling:
        if base and "wall_s" in s:
            s["weak_scaling_efficiency"] = base / s["wall_s"]
    best = min(rows[str(B)][sharded if n_dev > 1 else "diffsim montecarlo.run"]["ratio_to_mujoco"] for B in batches)
    result = {"meta": {**machine_info(modules=("mujoco",)), "loadavg_start": load0, "loadavg_end": loadavg(),
                       "cpu_count": os.cpu_count(), "cpu_devices": n_dev, "steps": steps, "dt": DT, "dtype": "float64"},
              "final_state_agreement_vs_mujoco": agreement, "throughput": rows, "weak_scaling": scaling,
              "targets": {"best_ratio_montecarlo_run_to_mujoco": best, "at_most_0.5x_mujoco": best <= 0.5,
                          "row": sharded if n_dev > 1 else "diffsim montecarlo.run"}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2, default=float))
    print(json.dumps(result["targets"], indent=1))


if __name__ == "__main__":
    main()
