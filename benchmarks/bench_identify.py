#!/usr/bin/env python
"""Identification speed: the ball-drop fit of K and c_r, side by side in one run.

Peers (the same noisy data: diffsim heights at rtol 1e-12 + σ = 2e-5 m noise, 241 samples; the
same start K = 8e5, c_r = 0.75 (from which all three reach the global optimum; from K = 5e5, c_r = 0.7 single starts end in the rigid-limit minimum); the same unconstrained variables log K, logit c_r):

* ``diffsim fwd``: :func:`diffsim.identify.make_estimator` (Levenberg–Marquardt, exact forward-mode
  Jacobian through diffrax and the located impacts), rtol = atol = 1e-10;
* ``diffsim fd``: the same solver with central finite-difference Jacobians (two simulations per
  parameter per Jacobian: the ``mujoco.sysid`` approach);
* ``scipy``: ``scipy.optimize.least_squares`` (``method="lm"``, MINPACK, forward-difference
  Jacobian) on the independent ball model ``tests/ball_reference.py`` (closed-form flights,
  DOP853 contacts at rtol 1e-10).

Each is timed after compilation (diffsim's first call is reported separately as compile), rounds
interleaved in shuffled order, median of the rounds; the accuracy column is the distance of the
final (K, c_r) from diffsim's converged optimum in units of the fit's standard deviation.
Targets (issue 14): exact-Jacobian fit ≥ 3× faster than FD at equal accuracy; ≤ 5 s after compile.

Case ``s0`` (how the ratio moves with the number of parameters P, on a smooth problem without
events): the S0 inertia fit of ``experiments/identify_s0_inertia.py`` (experiments A + B, base
pose over 4 s, model at rtol 1e-9) with P = 2 (the two arm-1 link masses; the inertias at the
truth) and P = 8 (masses and principal moments), ``fwd`` vs ``fd`` side by side; also one primal
evaluation of the residuals and one Jacobian of each kind, so that their costs can be stated in
primal solves.

Case ``tangents`` (what one Jacobian direction costs, the reason for the ratios above): the S0
vector field ``v̇ = FD(q, q̇, τ)`` in a jitted loop, batched over ``B`` states (the ``2P + 1`` runs of
a central-difference Jacobian share one ``vmap``) against its forward-mode tangents in ``J``
directions (``vmap`` of ``jvp``, as a sensitivity solve and ``jacfwd`` push them) of the state and of
the link masses, in units of one unbatched evaluation; interleaved rounds in one process.

Usage: ``python benchmarks/bench_identify.py [--rounds 3] [--cases ball,s0,tangents]`` →
``results/bench_identify.json`` (ball rows at the top level, the S0 rows under ``"s0"``, the
tangent costs under ``"tangents"``).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "experiments"))

from harness import loadavg, machine_info, setup_jax  # noqa: E402

jax = setup_jax()

import equinox as eqx  # noqa: E402
import numpy as np  # noqa: E402
from ball_reference import heights  # noqa: E402
from scipy.optimize import least_squares  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim import identify as idf  # noqa: E402
from diffsim.scenarios.ball_drop import OBSERVABLES, height, system  # noqa: E402
from diffsim.scenarios.seed000 import model as s0_model  # noqa: E402

NAMES = ["contact.K", "contact.c_r"]
SIGMA = 2e-5
START = {"contact.K": 8e5, "contact.c_r": 0.75}


def _timed(f, *a):
    t0 = time.perf_counter()
    out = jax.block_until_ready(f(*a))
    return out, time.perf_counter() - t0


def s0_case(rounds: int) -> dict:
    """The S0 inertia fit with P = 2 and P = 8: fwd vs fd fits, one primal residual evaluation and
    one Jacobian of each kind, all timed after compilation in interleaved rounds."""
    import identify_s0_inertia as s0x  # the experiment's data, inputs and start (experiments/)

    truth = ds.System(s0_model(), t1=float(s0x.T[-1]), saveat=jax.numpy.asarray(s0x.T), rtol=1e-12, atol=1e-12)
    exps = [s0x.measure(truth, tau, s0x.SEEDS[k], k)[0] for k, tau in s0x.torques(truth.model).items()]
    truth_vals = {n: float(ds.get_param(truth, n)) for n in s0x.NAMES}
    start = truth.replace(rtol=1e-9, atol=1e-9)
    out = {}
    for P, names in ((2, s0x.NAMES[:2]), (8, s0x.NAMES)):
        initial = {n: truth_vals[n] * s0x.START_FACTOR[n] for n in names}
        runners, row = {}, {"names": names}
        for jac in ("fwd", "fd"):
            est = idf.make_estimator(start, names, exps, initial=initial, transforms={n: idf.Log() for n in names},
                                     max_steps=80, jacobian=jac)
            fit = eqx.filter_jit(lambda e: e())
            jacobian = eqx.filter_jit(lambda e: e.jacobian(e.theta0)[1])
            (theta, ok, steps), first = _timed(fit, est)
            _, first_jac = _timed(jacobian, est)
            row[jac] = {"compile_plus_first_fit_s": first, "compile_plus_first_jacobian_s": first_jac,
                        "iterations": int(steps), "converged": bool(ok),
                        "values": dict(zip(names, np.asarray(est.layout.physical_flat(theta)).tolist()))}
            runners[f"fit {jac}"] = (fit, est)
            runners[f"jacobian {jac}"] = (jacobian, est)
            if jac == "fwd":
                std = np.asarray(eqx.filter_jit(est.intervals)(theta)[0])
                primal = eqx.filter_jit(lambda e: e.residuals.evaluate(e.theta0, e.data)[0])
                _, row["primal_compile_s"] = _timed(primal, est)
                runners["primal residuals"] = (primal, est)
        times = {k: [] for k in runners}
        for _ in range(rounds):
            order = list(runners)
            random.shuffle(order)
            for k in order:
                times[k].append(_timed(*runners[k])[1])
        med = {k: statistics.median(v) for k, v in times.items()}
        row["wall_s_median"], row["wall_s_min"] = med, {k: min(v) for k, v in times.items()}
        fwd_v, fd_v = (np.array(list(row[j]["values"].values())) for j in ("fwd", "fd"))
        row["fd_minus_fwd_in_std"] = (np.abs(fd_v - fwd_v) / std).tolist()
        row["truth_minus_fwd_in_std"] = (np.abs(np.array([truth_vals[n] for n in names]) - fwd_v) / std).tolist()
        row["fd_over_fwd_fit_time"] = med["fit fd"] / med["fit fwd"]
        row["jacobian_in_primal_solves"] = {j: med[f"jacobian {j}"] / med["primal residuals"] for j in ("fwd", "fd")}
        row["fit_in_primal_solves_per_iteration"] = {
            j: med[f"fit {j}"] / med["primal residuals"] / max(row[j]["iterations"], 1) for j in ("fwd", "fd")}
        out[f"P={P}"] = row
        print(f"S0 P={P}: fit fwd {med['fit fwd']:.2f} s ({row['fwd']['iterations']} it), fit fd {med['fit fd']:.2f} s "
              f"({row['fd']['iterations']} it), fd/fwd {row['fd_over_fwd_fit_time']:.2f}; primal "
              f"{med['primal residuals'] * 1e3:.1f} ms; Jacobian fwd {row['jacobian_in_primal_solves']['fwd']:.1f} / "
              f"fd {row['jacobian_in_primal_solves']['fd']:.1f} primal solves; |fd - fwd| / std "
              f"{max(row['fd_minus_fwd_in_std']):.1e}", flush=True)
    return out


def tangents_case(rounds: int, loop: int = 400) -> dict:
    """S0 forward dynamics: one evaluation, ``vmap`` over B states, and ``vmap`` of ``jvp`` over J
    state / mass directions, each in a jitted ``lax.scan`` of ``loop`` evaluations (the state moved by
    the carry, so that nothing is hoisted out of the loop); µs per evaluation and in evaluations."""
    import jax.numpy as jnp

    from harness import interleave

    m = s0_model()
    q, v = ds.neutral_configuration(m), 0.1 * jax.random.normal(jax.random.PRNGKey(0), (m.nv,))
    tau = jax.random.normal(jax.random.PRNGKey(1), (m.nv,))

    def fd(x, mass):
        return ds.forward_dynamics(eqx.tree_at(lambda z: z.mass, m, mass), x[0], x[1], tau)

    def looped(fn, *args):
        def run(x, *rest):
            def body(c, _):
                out = fn((x[0], x[1] + 1e-30 * c), *rest)
                return c + sum(jnp.sum(o) for o in jax.tree_util.tree_leaves(out)), None
            return jax.lax.scan(body, 0.0, None, length=loop)[0]
        run = jax.jit(run)
        jax.block_until_ready(run((q, v), *args))
        return lambda: jax.block_until_ready(run((q, v), *args))

    entries = {"evaluation": (looped(fd, m.mass), loop)}
    for B in (5, 17):  # central differences of P = 2 and P = 8 parameters
        xb = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (B,) + a.shape), ((q, v), m.mass))
        entries[f"vmap B={B}"] = (looped(lambda x, xb: jax.vmap(lambda y, ms: fd((y[0], y[1] + x[1] - v), ms))(*xb), xb),
                                  loop)
    for J in (1, 2, 8):
        dx = jax.tree_util.tree_map(lambda a: jnp.full((J,) + a.shape, 1e-3, a.dtype), (q, v))
        dmass = jnp.ones((J, m.nb))
        entries[f"jvp state J={J}"] = (looped(lambda x, dx: jax.vmap(
            lambda d: jax.jvp(lambda y: fd(y, m.mass), (x,), (d,)))(dx), dx), loop)
        entries[f"jvp mass J={J}"] = (looped(lambda x, dm: jax.vmap(
            lambda d: jax.jvp(lambda ms: fd(x, ms), (m.mass,), (d,)))(dm), dmass), loop)
    res = interleave(entries, rounds=max(rounds, 5), min_time=0.2)
    one = res["evaluation"]["median"]
    out = {"us": {k: r["median"] for k, r in res.items()}, "in_evaluations": {k: r["median"] / one for k, r in res.items()}}
    out["per_lane_of_vmap"] = {f"B={B}": res[f"vmap B={B}"]["median"] / one / B for B in (5, 17)}
    out["per_direction_beyond_the_first"] = {
        kind: (res[f"jvp {kind} J=8"]["median"] - res[f"jvp {kind} J=1"]["median"]) / one / 7 for kind in ("state", "mass")}
    print("S0 tangents (in evaluations of FD): " + ", ".join(f"{k} {x:.2f}" for k, x in out["in_evaluations"].items()),
          flush=True)
    print(f"  per vmap lane {out['per_lane_of_vmap']}, per tangent direction {out['per_direction_beyond_the_first']}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", default="ball,s0,tangents", help="comma-separated: ball, s0, tangents")
    ap.add_argument("--out", default=str(HERE / "results" / "bench_identify.json"))
    args = ap.parse_args()
    cases = set(args.cases.split(","))
    known = {"ball", "s0", "tangents"}
    if not cases <= known:
        ap.error(f"unknown case(s) {sorted(cases - known)}: choose from {', '.join(sorted(known))}")
    load0 = loadavg()
    out = {"meta": {**machine_info(), "loadavg_start": load0, "rounds": args.rounds}}
    if "ball" in cases:
        out.update(ball_case(args.rounds))
    if "s0" in cases:
        out["s0"] = s0_case(args.rounds)
    if "tangents" in cases:
        out["tangents"] = tangents_case(args.rounds)
    out["meta"]["loadavg_end"] = loadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=float))


def ball_case(rounds: int) -> dict:
    """K and c_r of the ball: diffsim fwd vs diffsim fd vs SciPy on the independent model."""
    tr = ds.simulate(system({"rtol": 1e-12, "atol": 1e-12}))
    t, z = np.asarray(tr.t), np.asarray(height(tr))
    y = z + SIGMA * np.random.default_rng(0).standard_normal(z.shape)
    exp = idf.Experiment(t, {"z": y}, sigma={"z": SIGMA})
    start = ds.set_params(system({}), START)

    runners, compile_s, iters = {}, {}, {}
    for jac in ("fwd", "fd"):
        est = idf.make_estimator(start, NAMES, exp, observables=OBSERVABLES, jacobian=jac)
        f = eqx.filter_jit(lambda e: e())
        t0 = time.perf_counter()
        _, _, steps = jax.block_until_ready(f(est))
        first = time.perf_counter() - t0
        iters[f"diffsim {jac}"] = int(steps)

        def run(f=f, est=est):
            theta, ok, steps = jax.block_until_ready(f(est))
            return np.asarray(est.layout.physical_flat(theta)), bool(ok)
        runners[f"diffsim {jac}"] = run
        compile_s[f"diffsim {jac}"] = first
    est = idf.make_estimator(start, NAMES, exp, observables=OBSERVABLES)
    # the reference optimum and its standard deviations (tight LM tolerances)
    tight = idf.make_estimator(start, NAMES, exp, observables=OBSERVABLES, rtol=1e-14, atol=1e-14, max_steps=300)
    th_star = eqx.filter_jit(lambda e: e()[0])(tight)
    p_star = np.asarray(tight.layout.physical_flat(th_star))
    std_star = np.asarray(eqx.filter_jit(tight.intervals)(th_star)[0])

    nfev = {}

    def scipy_fit():
        def res(x):
            K, c = np.exp(x[0]), 1.0 / (1.0 + np.exp(-x[1]))
            try:
                return (heights(t, K=K, c_r=c, rtol=1e-10, atol=1e-12) - y) / SIGMA
            except RuntimeError:  # a failed solve at an extreme trial point: a step MINPACK rejects
                return np.full(y.shape, 1e12)
        c0 = START["contact.c_r"]
        x0 = np.array([np.log(START["contact.K"]), np.log(c0 / (1.0 - c0))])
        sol = least_squares(res, x0, method="lm", xtol=1e-10, ftol=1e-10)
        nfev["scipy"] = int(sol.nfev)
        return np.array([np.exp(sol.x[0]), 1.0 / (1.0 + np.exp(-sol.x[1]))]), bool(sol.success)
    runners["scipy"] = scipy_fit
    compile_s["scipy"] = 0.0

    times = {k: [] for k in runners}
    finals = {}
    for _ in range(rounds):
        order = list(runners)
        random.shuffle(order)
        for k in order:
            t0 = time.perf_counter()
            finals[k] = runners[k]()
            times[k].append(time.perf_counter() - t0)
    rows = {}
    for k in runners:
        p, ok = finals[k]
        rows[k] = {"wall_s_median": statistics.median(times[k]), "wall_s_min": min(times[k]),
                   "compile_plus_first_run_s": compile_s[k], "iterations": iters.get(k), "nfev": nfev.get(k),
                   "converged": ok, "K": float(p[0]), "c_r": float(p[1]),
                   "error_in_std": (np.abs(p - p_star) / std_star).tolist()}
    fwd, fd = rows["diffsim fwd"], rows["diffsim fd"]
    targets = {
        "fd_over_fwd_time": fd["wall_s_median"] / fwd["wall_s_median"],
        "fwd_faster_than_fd_3x": fd["wall_s_median"] / fwd["wall_s_median"] >= 3.0,
        "fwd_at_most_5s_after_compile": fwd["wall_s_median"] <= 5.0,
        "scipy_over_fwd_time": rows["scipy"]["wall_s_median"] / fwd["wall_s_median"],
    }
    out = {"optimum": {"K": float(p_star[0]), "c_r": float(p_star[1]), "std": std_star.tolist()},
           "rows": rows, "targets": targets}
    print(f"{'peer':14s} {'wall s':>8s} {'compile s':>10s} {'iters':>6s} {'nfev':>6s}  error/std (K, c_r)")
    for k, r in rows.items():
        print(f"{k:14s} {r['wall_s_median']:8.2f} {r['compile_plus_first_run_s']:10.1f} {r['iterations']!s:>6s} "
              f"{r['nfev']!s:>6s}  {r['error_in_std'][0]:.1e}, {r['error_in_std'][1]:.1e}")
    print(json.dumps(targets, indent=1), flush=True)
    return out


if __name__ == "__main__":
    main()
