"""A million-sample Monte Carlo study on this CPU (issue 15, section 3): chunked by a memory
budget, written chunk by chunk, killed part-way and resumed, every sample checked against the
exact solution.

System: a physical pendulum (1 kg, centre of mass at distance ℓ below a revolute pivot, inertia
0.01 kg m² about its centre of mass), released from rest at θ0, classical RK4 with dt = 0.01 s
over 2 s (``ds.System(solver="rk4")``). Uncertain: θ0 ~ Uniform(0.1, 3.0) rad (up to 172°: far
into the nonlinear range) and ℓ ~ Uniform(0.25, 1.0) m (``body.arm.com[2]`` = −ℓ).

Exact solution (released from rest): with ω0² = m g ℓ / (I_c + m ℓ²) and k = sin(θ0/2),
θ(t) = 2 arcsin(k sn(K(k) − ω0 t; k)) (Jacobi's sn, K the complete elliptic integral of the first
kind; scipy's ``ellipj``/``ellipk`` with parameter m = k²), θ̇ from the energy with the sign of
cn·dn. Every one of the 10⁶ final states is compared with it; RK4's global error is O(dt⁴): the
order is measured on a subset by halving dt (error ratio → 16).

The run: ``mc.run(..., chunk_size=None, out=DIR)`` chooses the chunk size from XLA's compiled
memory of a probe chunk and the memory budget; a first process is started and killed (SIGKILL)
once some chunks are on disk; the study is then run again with the same arguments, which skips the
finished chunks. The resumed result is checked bit for bit against fresh recomputations of
randomly chosen chunks (``indices=``).

Run: ``python experiments/montecarlo_1e6_pendulum.py [--samples N] [--work DIR] [--budget BYTES]``
(default 10⁶ samples, work dir ``/tmp/diffsim-mc1e6``; about 3 minutes on 2 quiet cores). The
chunk files and ``samples.npz`` (~50 MB) stay in the work dir; the figures, ``summary.json`` and
``README.md`` go to ``experiments/results/montecarlo-1e6-pendulum/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import ellipj, ellipk

jax.config.update("jax_enable_x64", True)

import diffsim as ds  # noqa: E402
from diffsim import montecarlo as mc  # noqa: E402
from diffsim.io.results import provenance, write_json  # noqa: E402
from diffsim.viz import new_figure, save_figure  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "montecarlo-1e6-pendulum"
M, IC, G, T1, DT = 1.0, 0.01, 9.81, 2.0, 0.01
DISTS = {"q0.arm": mc.Uniform(jnp.array([0.1]), jnp.array([3.0])), "body.arm.com[2]": mc.Uniform(-1.0, -0.25)}
KEY = 7


def system(dt=DT):
    b = ds.ModelBuilder(gravity=(0, 0, -G))
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=M, com=[0, 0, -0.5], inertia=(IC, IC, 0.001))
    return ds.System(b.build(), jnp.array([1.0]), t1=T1, solver="rk4", dt0=dt, saveat=2)


def exact(theta0, ell, t):
    """θ(t), θ̇(t) of the physical pendulum released from rest at θ0 (module docstring)."""
    w0 = np.sqrt(M * G * ell / (IC + M * ell**2))
    k = np.sin(theta0 / 2)
    m = k**2
    sn, cn, dn, _ = ellipj(ellipk(m) - w0 * t, m)
    th = 2 * np.arcsin(k * sn)
    # θ̇ = −2 k ω0 cn dn / cos(θ/2) (d/du sn = cn dn, du/dt = −ω0)
    thd = -2 * k * w0 * cn * dn / np.cos(th / 2)
    return th, thd


def run_study(n, work, budget, progress):
    return mc.run(system(), DISTS, n, key=jax.random.PRNGKey(KEY), out=work, memory_budget=budget, progress=progress)


def worker(argv):
    """The process that is killed part-way (``--worker``)."""
    a = parse(argv)
    run_study(a.samples, a.work, a.budget, progress=False)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--work", type=Path, default=Path("/tmp/diffsim-mc1e6"))
    ap.add_argument("--budget", type=float, default=2.0**28, help="memory budget per chunk [bytes]")
    ap.add_argument("--kill-after", type=int, default=3, help="chunks on disk before the first process is killed")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def kill_part_way(argv, work, n_chunks):
    """Start the study in a subprocess, SIGKILL it once ``n_chunks`` chunk files exist."""
    p = subprocess.Popen([sys.executable, __file__, "--worker", *argv])
    chunks = work / "chunks"
    t0 = time.perf_counter()
    while p.poll() is None:
        done = sorted(chunks.glob("chunk_*.npz")) if chunks.exists() else []
        if len(done) >= n_chunks:
            p.send_signal(signal.SIGKILL)
            p.wait()
            break
        time.sleep(0.05)
    done = sorted(chunks.glob("chunk_*.npz")) if chunks.exists() else []
    partial = sorted(chunks.glob("*.tmp*")) if chunks.exists() else []
    return {"killed": p.returncode == -signal.SIGKILL, "chunks_on_disk_at_kill": len(done),
            "partial_files_left": [f.name for f in partial], "seconds_before_kill": time.perf_counter() - t0}


def write_readme(s, out):
    k, o = s["kill"], s["order_subset"]
    (out / "README.md").write_text(f"""# 10⁶-sample Monte Carlo on this CPU: chunked, killed, resumed, checked against the exact solution

Generated by `python experiments/montecarlo_1e6_pendulum.py` (setup and physics in its docstring).

{s['n_samples']:,} physical pendulums (θ0 ~ U(0.1, 3.0) rad, ℓ ~ U(0.25, 1.0) m), classical RK4 with dt = 0.01 s
over 2 s. Status counts: {s['status_counts']}; failed: {s['failed']}.

* **Chunks from memory:** XLA's compiled memory of a probe chunk is {s['bytes_per_sample_compiled']:.0f} B per sample; with a
  {s['memory_budget_bytes'] / 2**20:.0f} MiB budget `mc.run` chose {s['chunk_size']:,} samples per chunk ({s['chunks']} chunks).
* **Killed and resumed:** a first process was killed (SIGKILL) with {k['chunks_on_disk_at_kill']} chunks on disk and no partial file
  left ({k['partial_files_left']}); the rerun with the same arguments read {s['chunks_resumed']} chunks back and ran
  {s['chunks_run_after_resume']} ({s['samples_run_after_resume']:,} samples in {s['wall_time_after_resume_s']:.0f} s incl. compile,
  {s['samples_per_s_after_resume']:.0f} samples/s on 2 cores shared with other work). Chunks recomputed from scratch
  with `indices=` are bit-identical to the resumed study: {s['bit_identical_to_fresh_chunks']}.
* **Every sample against the elliptic solution:** max |θ − θ_exact| = {s['max_abs_error_theta_rad']:.1e} rad (median
  {s['median_abs_error_theta_rad']:.1e}), max |θ̇ − θ̇_exact| = {s['max_abs_error_thetadot_rad_s']:.1e} rad/s; the worst sample is released near
  the top (θ0 = {s['worst_sample']['theta0']:.3f} rad, ℓ = {s['worst_sample']['ell']:.3f} m: the fastest, most nonlinear swing).
* **Order:** halving dt on {o['n']} random samples ({o['n_above_1e-9']} with errors above 1e-9): median log₂ error ratio
  {o['median_log2_ratio']:.2f} (5–95 %: {o['q05_q95_log2_ratio'][0]:.2f} … {o['q05_q95_log2_ratio'][1]:.2f}); RK4 is order 4.

![pendulum](pendulum_1e6.png)
""")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse(argv)
    if a.worker:
        return worker([x for x in argv if x != "--worker"])
    if a.work.exists():
        shutil.rmtree(a.work)
    kill = kill_part_way(argv, a.work, a.kill_after)
    print("killed:", kill)

    t0 = time.perf_counter()
    res = run_study(a.samples, a.work, a.budget, progress=True)
    wall_resumed = time.perf_counter() - t0
    n_chunks = -(-a.samples // res.chunk_size)
    print(f"chunk size {res.chunk_size} ({n_chunks} chunks), resumed {res.chunks_resumed}, ran {res.chunks_run}")

    # bit-identical to fresh recomputations of chosen chunks (one resumed, others run after the kill)
    rng = np.random.default_rng(0)
    picks = sorted({0, *rng.choice(n_chunks, size=min(2, n_chunks), replace=False).tolist()})
    identical = {}
    for c in picks:
        idx = np.arange(c * res.chunk_size, min((c + 1) * res.chunk_size, a.samples))
        fresh = mc.run(system(), DISTS, a.samples, key=jax.random.PRNGKey(KEY), chunk_size=res.chunk_size,
                       indices=idx, progress=False)
        identical[c] = bool(np.array_equal(fresh.statistics["q_final"], res.statistics["q_final"][idx])
                            and np.array_equal(fresh.statistics["v_final"], res.statistics["v_final"][idx]))

    theta0 = np.ravel(res.draws["q0.arm"])
    ell = -np.ravel(res.draws["body.arm.com[2]"])
    th_ex, thd_ex = exact(theta0, ell, T1)
    err_q = np.abs(res.statistics["q_final"][:, 0] - th_ex)
    err_v = np.abs(res.statistics["v_final"][:, 0] - thd_ex)

    # RK4's order on a subset: halve dt
    sub = rng.choice(a.samples, size=2000, replace=False)
    errs = {}
    for dt in (DT, DT / 2):
        r = mc.run(system(dt), {n: mc.Samples(res.draws[n][sub]) for n in DISTS}, sub.size, chunk_size=sub.size,
                   progress=False)
        errs[dt] = np.abs(r.statistics["q_final"][:, 0] - th_ex[sub])
    big = errs[DT] > 1e-9  # ratios of errors above the elliptic functions' own accuracy
    ratio = errs[DT][big] / errs[DT / 2][big]

    fig, ax = new_figure(1, 3, figsize=(15, 4.2))
    ax[0].hist(res.statistics["q_final"][:, 0], bins=200, color="C0")
    ax[0].set(xlabel=r"$\theta(t_1 = 2\,s)$ [rad]", ylabel="samples", title=f"{a.samples:.0e} samples: final angle")
    s = rng.choice(a.samples, size=20000, replace=False)
    sc = ax[1].scatter(theta0[s], err_q[s], c=ell[s], s=2, cmap="viridis")
    ax[1].set(yscale="log", xlabel=r"release angle $\theta_0$ [rad]", ylabel=r"$|\theta - \theta_{exact}|$ [rad]",
              title="RK4 (dt = 0.01 s) vs the elliptic solution (20 000 shown)")
    fig.colorbar(sc, ax=ax[1], label=r"$\ell$ [m]")
    ax[2].hist(np.log2(ratio), bins=60)
    ax[2].axvline(4, color="k", ls="--", lw=0.8, label="order 4")
    ax[2].set(xlabel=r"$\log_2$ (error at dt / error at dt/2)", ylabel="samples",
              title="observed order on 2000 samples")
    ax[2].legend()
    a.out.mkdir(parents=True, exist_ok=True)
    save_figure(fig, a.out / "pendulum_1e6.png")

    summary = {
        "n_samples": a.samples, "status_counts": res.status_counts, "failed": [int(i) for i in res.failed],
        "chunk_size": res.chunk_size, "chunks": n_chunks, "memory_budget_bytes": a.budget,
        "bytes_per_sample_compiled": res.bytes_per_sample,
        "kill": kill, "chunks_resumed": res.chunks_resumed, "chunks_run_after_resume": res.chunks_run,
        "wall_time_after_resume_s": wall_resumed, "samples_run_after_resume": int(a.samples - res.chunks_resumed * res.chunk_size),
        "samples_per_s_after_resume": (a.samples - res.chunks_resumed * res.chunk_size) / wall_resumed,
        "bit_identical_to_fresh_chunks": identical,
        "max_abs_error_theta_rad": float(err_q.max()), "max_abs_error_thetadot_rad_s": float(err_v.max()),
        "median_abs_error_theta_rad": float(np.median(err_q)),
        "worst_sample": {"index": int(err_q.argmax()), "theta0": float(theta0[err_q.argmax()]),
                         "ell": float(ell[err_q.argmax()])},
        "order_subset": {"n": int(sub.size), "n_above_1e-9": int(big.sum()),
                         "median_log2_ratio": float(np.median(np.log2(ratio))),
                         "q05_q95_log2_ratio": [float(x) for x in np.quantile(np.log2(ratio), [0.05, 0.95])]},
        "provenance": provenance(),
    }
    write_json(a.out / "summary.json", summary)
    write_readme(summary, a.out)
    print(json.dumps({k: v for k, v in summary.items() if k != "provenance"}, indent=1, default=str))
    return summary


if __name__ == "__main__":
    main()
