"""Mimic joints on example-robot-data's Panda (issue 18): gradients of the coupled forward
dynamics against central differences, and its cost beside ABA on the same tree without the
coupling, measured side by side in one run.

* Gradient of ``w · v̇_r`` (``v̇_r`` = :func:`diffsim.dynamics.reduced_forward_dynamics`) with
  respect to the arm angles and the finger coordinate in ``q_r``, ``v_r``, ``τ_r``, and the
  finger's ``multiplier`` and ``offset``, by reverse mode (implicit-function derivative) vs
  central differences with step ``h = 1e-6`` (error ``O(h²) + O(ε/h)`` ≈ 1e-9 relative).
* Time of ``jit(forward_dynamics)`` on the fixed-base Panda with the finger coupled (CRBA + RNEA
  + Cholesky of ``Gᵀ M G``) and without (``<mimic>`` removed: ABA), median of 200 calls after
  compile, and the compile times.

Run: ``PYTHONPATH=$PWD python experiments/mimic_panda.py`` (needs example-robot-data);
writes ``results/mimic_panda/summary.json``.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import time
import warnings
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import diffsim as ds
from diffsim.dynamics import reduced_forward_dynamics
from diffsim.io.results import provenance, write_json
from diffsim.model.mimic import independent_v, reduce_q


def panda_path() -> Path:
    files = importlib.metadata.files("example-robot-data") or []
    return next(Path(f.locate()) for f in files if str(f).endswith("panda_description/urdf/panda.urdf"))


def timed(fn, *args, n=200):
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    compile_s = time.perf_counter() - t0
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t0)
    return compile_s, float(np.median(ts))


def main(out=Path("results/mimic_panda")):
    warnings.simplefilter("ignore")
    xml = panda_path().read_text()
    model = ds.load_urdf(xml)
    free = ds.load_urdf(re.sub(r"<mimic[^>]*/>", "", xml))  # the same tree, finger 2 free
    rng = np.random.default_rng(0)

    # gradients vs central differences
    q_r = reduce_q(model, ds.random_configuration(model, jax.random.PRNGKey(0)))
    nr = len(independent_v(model))
    v_r, tau_r, w = (jnp.asarray(rng.normal(size=nr)) for _ in range(3))

    def f(q_r, v_r, tau_r, mult, off):
        m = eqx.tree_at(lambda m: (m.mimic.multiplier, m.mimic.offset), model, (mult, off))
        return w @ reduced_forward_dynamics(m, q_r, v_r, tau_r, None)

    args = (q_r, v_r, tau_r, model.mimic.multiplier, model.mimic.offset)
    grads = jax.jit(jax.grad(f, argnums=range(5)))(*args)
    fj, h, worst = jax.jit(f), 1e-6, {}
    for name, x, g in zip(("q_r", "v_r", "tau_r", "multiplier", "offset"), args, grads):
        err = 0.0
        for i in range(x.size):
            e = jnp.zeros_like(x).at[i].set(h)
            lo, hi = list(args), list(args)
            k = ("q_r", "v_r", "tau_r", "multiplier", "offset").index(name)
            hi[k], lo[k] = x + e, x - e
            fd = float((fj(*hi) - fj(*lo)) / (2 * h))
            err = max(err, abs(float(g[i]) - fd) / max(1.0, abs(fd)))
        worst[name] = err

    # cost beside ABA on the uncoupled tree
    q = ds.random_configuration(model, jax.random.PRNGKey(1))
    v, tau = jnp.asarray(rng.normal(size=model.nv)), jnp.asarray(rng.normal(size=model.nv))
    fd_c = jax.jit(ds.forward_dynamics)
    c_coupled, t_coupled = timed(fd_c, model, q, v, tau)
    c_free, t_free = timed(jax.jit(ds.forward_dynamics), free, q, v, tau)
    summary = {
        "gradient_vs_central_differences_worst_relative": worst,
        "forward_dynamics_median_s": {"coupled": t_coupled, "free_tree_aba": t_free, "ratio": t_coupled / t_free},
        "compile_s": {"coupled": c_coupled, "free_tree_aba": c_free},
        "nv": model.nv, "nr": nr, "device": str(jax.devices()[0]), "provenance": provenance(),
    }
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "summary.json", summary)
    print(json.dumps(summary["gradient_vs_central_differences_worst_relative"]), summary["forward_dynamics_median_s"])


if __name__ == "__main__":
    main()
