#!/usr/bin/env python
"""Where one DDP iteration on ``ur5-reach`` spends its time, with the analytical derivatives
(``tangents="analytic"``, :mod:`diffsim.dynamics.derivatives`) and with forward-mode AD through
ABA (``"ad"``), side by side in one run (interleaved rounds).

Rows (each jitted, timed after compilation at the scenario's guess plus 0.3 N m, float64):

* ``rollout_cost``: the 100-step RK4 rollout with its stage-averaged cost;
* ``local_models [analytic|ad]``: DDP's local models (step Jacobians, stage-state Jacobians,
  Gauss–Newton cost models) — ``Problem.local_models``, with the default switch to
  :class:`~diffsim.dynamics.AnalyticTangents` and the analytical gravity residual, or with both
  switched off;
* ``step_jacobians [analytic|ad]``: the step Jacobians alone;
* ``fd jacobian x400 [analytic|ad]``: ``jacfwd`` of the forward dynamics in ``(q, q̇, τ)`` (18
  tangents) at 400 states;
* ``backward_pass``, ``closed_loop``: DDP's Riccati pass and one closed-loop rollout;
* ``S0 step_jacobians [analytic|ad]``: the step Jacobians of the ``space-reorient`` problem
  (``experiments/plan_space_reorient.py``: S0's free base and four spherical joints, nq = 23,
  nv = 18, 12 driven coordinates, 60 steps of 50 ms) at rest-to-bent torques.

Usage: ``python benchmarks/bench_ddp_parts.py [--rounds 7]`` → ``results/ddp_parts.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import interleave, loadavg, machine_info, setup_jax  # noqa: E402

jax = setup_jax()
import jax.numpy as jnp  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim.plan import ddp  # noqa: E402
from diffsim.plan.costs import LeastSquares  # noqa: E402
from diffsim.scenarios import seed000  # noqa: E402
from diffsim.scenarios import ur5_reach as ur  # noqa: E402


def _ad(problem):
    """``problem`` with forward-mode AD through ABA in its local models."""

    class ADProblem(type(problem)):
        def for_jacobians(self):  # keep forward-mode AD through ABA
            return self

    return ADProblem(**{f.name: getattr(problem, f.name) for f in dataclasses.fields(problem)})


def s0_problem():
    """The space-reorient discretisation on S0 (costs do not enter the step Jacobians)."""
    m = ds.set_params(seed000.model(), {"gravity": jnp.zeros(3)})
    bend = jnp.zeros(m.nv).at[7].set(0.5).at[10].set(-1.0)
    q0 = ds.integrate(m, ds.neutral_configuration(m), bend)
    arm = [j for j in m.topology.joint_names if j != m.topology.joint_names[0]]
    return ds.plan.make_problem(m, q0, jnp.zeros(m.nv), horizon=60, dt=0.05, actuation=arm,
                                running_cost=lambda q, v, tau: jnp.sum(tau**2), terminal_cost=lambda q, v: jnp.sum(v**2))


def problems(p, model):
    """``{"analytic": the scenario's Problem, "ad": the same with AD tangents everywhere}``."""
    analytic = ur.planning_problem(p, model)

    def effort(q, v, tau):
        return tau - ds.gravity_forces(model, q, tangents="ad")

    return {"analytic": analytic, "ad": _ad(dataclasses.replace(analytic, running_cost=LeastSquares(effort, p.w_u)))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--out", default=str(HERE / "results" / "ddp_parts.json"))
    a = ap.parse_args(argv)
    p = ur.problem()
    model = ur.load_model(p.urdf, dtype=jnp.float64)
    probs = problems(p, model)
    us = jnp.tile(jnp.asarray(p.tau_init), (p.horizon, 1)) + 0.3
    prob = probs["analytic"]
    qs, vs, _ = jax.jit(lambda u: prob.rollout_cost(u))(us)
    derivs = jax.jit(lambda *x: prob.local_models(*x))(qs, vs, us)
    bp = jax.jit(lambda d, u: ddp.backward_pass(prob, d, u, 1e-6, jnp.zeros_like(u)))
    k, K, *_ = bp(derivs, us)
    key = jax.random.split(jax.random.PRNGKey(0), 3)
    Q, V, T = (jax.random.normal(kk, (400, 6)) for kk in key)

    fns = {"rollout_cost": (jax.jit(lambda u: prob.rollout_cost(u)), (us,)),
           "backward_pass": (bp, (derivs, us)),
           "closed_loop": (jax.jit(lambda k, K: ddp.closed_loop(prob, qs, vs, us, k, K, 1.0)), (k, K))}
    check = {}
    for kind, pr in probs.items():
        fns[f"local_models [{kind}]"] = (jax.jit(lambda *x, pr=pr: pr.local_models(*x)), (qs, vs, us))
        fns[f"step_jacobians [{kind}]"] = (jax.jit(lambda *x, pr=pr: pr.step_jacobians(*x)), (qs, vs, us))
        jac = jax.vmap(jax.jacfwd(lambda q, v, t, kind=kind: ds.forward_dynamics(model, q, v, t, tangents=kind),
                                  argnums=(0, 1, 2)))
        fns[f"fd jacobian x400 [{kind}]"] = (jax.jit(jac), (Q, V, T))
        check[kind] = fns[f"local_models [{kind}]"][0](qs, vs, us)
    rel = max(float(jnp.max(jnp.abs(x - y)) / jnp.max(jnp.abs(y))) for x, y in zip(check["analytic"], check["ad"]))
    s0 = s0_problem()
    u0 = 0.5 * jnp.ones((s0.horizon, s0.nu))
    q0s, v0s = jax.jit(lambda u: s0.rollout(u))(u0)
    s0_jac = {}
    for kind, pr in (("analytic", s0), ("ad", _ad(s0))):
        f = jax.jit(lambda *x, pr=pr: pr.step_jacobians(*x))
        fns[f"S0 step_jacobians [{kind}]"] = (f, (q0s, v0s, u0))
        s0_jac[kind] = f(q0s, v0s, u0)
    rel_s0 = max(float(jnp.max(jnp.abs(x - y)) / jnp.max(jnp.abs(y))) for x, y in zip(s0_jac["analytic"], s0_jac["ad"]))
    for f, args in fns.values():  # compile
        jax.block_until_ready(f(*args))
    entries = {name: (lambda f=f, args=args: jax.block_until_ready(f(*args)), 1) for name, (f, args) in fns.items()}
    res = {"meta": machine_info() | {"loadavg_start": loadavg()}, "local_models_max_rel_diff": rel,
           "s0_step_jacobians_max_rel_diff": rel_s0}
    res["times_us"] = interleave(entries, a.rounds, a.min_time)
    res["meta"]["loadavg_end"] = loadavg()
    t = {k: v["median"] for k, v in res["times_us"].items()}
    res["ratios_ad_over_analytic"] = {w: t[f"{w} [ad]"] / t[f"{w} [analytic]"]
                                      for w in ("local_models", "step_jacobians", "fd jacobian x400",
                                                "S0 step_jacobians")}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    for k, v in res["times_us"].items():
        print(f"{k:32s} {v['median'] / 1e3:8.2f} ms  (min {v['min'] / 1e3:.2f})")
    print("ad / analytic:", {k: round(v, 2) for k, v in res["ratios_ad_over_analytic"].items()},
          f"local models agree to {rel:.1e}, S0 step Jacobians to {rel_s0:.1e}")
    print("wrote", a.out)


if __name__ == "__main__":
    main()
