"""S1 gradients: reverse mode through the falling chain's first impact burst against central
finite differences, for the contact stiffness K, restitution c_r, friction μ_k, Kelvin–Voigt K_v
and air damping γ.

    python experiments/seed001_gradients.py [--t1 0.45]

* smooth formulation (``mode='smooth'``: softplus onset of width 1e-7 m, tanh friction of width
  v1 = 1e-3 m/s, memory state with τ_m = 1e-4 s): all five parameters, target ≤ 1e-5 relative;
* events formulation (the exact Hu–Guo + Ambrosio law with located onsets): K and c_r, whose
  gradients flow through the impact times.

Loss over 0.6 s (the first O1/O4 burst and the O2/O3 impacts): Σ_t |O_i(t)|² over the saved
joint positions plus scaled Σ_t (δ² + (δ̇/ω₁)²) of the modal coordinates (so that the damping
constants, which act only once the links vibrate, are visible). Central differences: five-point
stencil at a relative step 1e-3 with the solves at rtol 1e-12 — an adaptive solve is only smooth
in the parameters to ~rtol, so the step must be large enough for that noise to stay ≪ 1e-5
relative, and the five-point stencil keeps the truncation error (∝ h⁴) below it.
Writes ``experiments/results/seed001/gradients.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

from diffsim.scenarios import seed001 as s1  # noqa: E402
from diffsim.scenarios.base import write_json  # noqa: E402
from diffsim.simulation.simulate import simulate  # noqa: E402

OUT = Path(__file__).parent / "results" / "seed001"
NAMES = ("K", "c_r", "mu_k", "K_v", "gamma")
P0 = np.array([s1.DATA["K"], s1.DATA["c_r"], s1.DATA["mu_k"], s1.DATA["Kv"], s1.DATA["gamma"]])


def make_loss(mode, t1, rtol):
    def loss(p):
        K, c_r, mu_k, Kv, gamma = p
        m = s1.model("ss-ss-ss", Kv=Kv, gamma=gamma)
        if mode == "smooth":
            c = s1.contact_model(m, K=K, c_r=c_r, mu_k=mu_k, mode="smooth", smooth=1e-7, friction="smooth-coulomb",
                                 friction_width=1e-3)
        else:
            c = s1.contact_model(m, K=K, c_r=c_r, mu_k=mu_k)
        q0, v0 = s1.initial_state(m)
        tr = simulate(m, q0, v0, t1, contact=c, rtol=rtol, atol=rtol, saveat=31, max_events=24, max_steps=100_000,
                      throw=False)
        xy = jax.vmap(lambda q: s1.joint_positions(m, c, q))(tr.q)
        return jnp.sum(xy**2) + 1e4 * jnp.sum(tr.q[:, 5:] ** 2) + 1e-1 * jnp.sum(tr.v[:, 5:] ** 2)

    return loss


# Kelvin–Voigt damping acts ~200× more weakly than air damping on these shapes
# (K_v I ∫W″² ≈ 6e-5 against γ ∫W² ≈ 1e-2 kg/s), so its loss change at a 1e-3 step sits at the
# solver's noise floor; it gets a 1e-2 step (five-point truncation error ∝ h⁴ stays ~1e-8).
REL_STEP = {"K_v": 1e-2}


def check(mode, which, t1, rtol, rel_steps):
    loss = make_loss(mode, t1, rtol)
    f = eqx.filter_jit(loss)
    p = jnp.asarray(P0)
    t = time.perf_counter()
    g = eqx.filter_jit(jax.grad(loss))(p)
    jax.block_until_ready(g)
    t_grad = time.perf_counter() - t
    rows = {}
    for i in which:
        h = REL_STEP.get(NAMES[i], rel_steps) * abs(P0[i])
        e = jnp.zeros(5).at[i].set(h)
        fd = float((8 * (f(p + e) - f(p - e)) - (f(p + 2 * e) - f(p - 2 * e))) / (12 * h))
        rows[NAMES[i]] = {"grad": float(g[i]), "fd": fd, "rel_err": abs(float(g[i]) - fd) / abs(fd), "h": h}
        print(mode, NAMES[i], rows[NAMES[i]], flush=True)
    return {"rtol": rtol, "t1": t1, "grad_first_call_s": t_grad, "finite": bool(np.all(np.isfinite(np.asarray(g)))),
            "params": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--t1", type=float, default=0.6)
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    res = {"smooth": check("smooth", range(5), args.t1, 1e-12, 1e-3),
           "events": check("events", (0, 1), args.t1, 1e-12, 1e-3)}
    write_json(OUT / "gradients.json", res)
    return res


if __name__ == "__main__":
    main(sys.argv[1:])
