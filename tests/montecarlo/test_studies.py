"""Monte Carlo against linearised uncertainty propagation (issue 15, section 3; the small-system
version of ``experiments/montecarlo_s0_mass.py``).

A damped pendulum (as in ``test_run.py``: 1 kg at 0.3 m, released at 1 rad) with an
uncertain mass, length (the centre of mass's distance from the pivot) and release angle, each
Gaussian with a small σ. For small σ the final angle is q(t1; p) ≈ q(t1; p̄) + J (p − p̄), so

* the Monte Carlo std of q(t1) must equal the linear prediction √(J Σ Jᵀ), J by ``jax.jacfwd``
  through ``ds.simulate`` with the forward-mode adjoint, within the sampling error of a std:
  for N Gaussian samples the standard error of the sample std is ≈ σ/√(2N) (4 of them allowed);
* the sample mean must equal the nominal run plus the second-order shift ½ tr(HΣ) (H by
  forward-over-forward AD; here ≈ 1.5 standard errors, so it is not negligible) within 4 standard
  errors σ/√N.

The draws are fixed by the key, so the test is deterministic; the tolerances say how far a
correct implementation may be off for a typical key.
"""

import dataclasses

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim import montecarlo as mc


def pendulum_system():
    """The pendulum of ``test_run.py``: 1 kg at 0.3 m on a damped revolute joint, from 1 rad."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=(0.002, 0.01, 0.01),
               damping=0.05)
    return ds.System(b.build(), jnp.array([1.0]), t1=1.0, saveat=11)


N = 2000
NOMINAL = {"body.arm.mass": 1.0, "body.arm.com[0]": 0.3, "q0.arm[0]": 1.0}
SIGMA = {"body.arm.mass": 0.03, "body.arm.com[0]": 0.006, "q0.arm[0]": 0.02}


def final_angle(system, p):
    return ds.simulate(ds.set_params(system, dict(zip(NOMINAL, p)))).q[-1, 0]


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_monte_carlo_spread_matches_linearised_propagation():
    system = pendulum_system()
    names = list(NOMINAL)
    p0 = jnp.asarray([NOMINAL[n] for n in names])
    for n in names:
        assert float(ds.get_param(system, n)) == NOMINAL[n]
    fwd = system.replace(options=dataclasses.replace(system.options, adjoint=diffrax.ForwardMode()))
    J = np.asarray(jax.jit(jax.jacfwd(lambda p: final_angle(fwd, p)))(p0))
    H = np.asarray(jax.jit(jax.jacfwd(jax.jacfwd(lambda p: final_angle(fwd, p))))(p0))
    s = np.array([SIGMA[n] for n in names])
    std_lin = float(np.sqrt(np.sum((J * s) ** 2)))
    shift2 = float(0.5 * np.sum(np.diag(H) * s**2))
    nominal = float(final_angle(system, p0))
    # every input contributes (the check would not notice a wrong J for an input that does not)
    assert np.all(np.abs(J * s) > 0.05 * std_lin), J * s

    dists = {n: mc.Normal(jnp.asarray(NOMINAL[n]), jnp.asarray(SIGMA[n])) for n in names}
    res = mc.run(system, dists, N, key=jax.random.PRNGKey(1), chunk_size=N, progress=False)
    assert res.status_counts == {"success": N}
    q = res.statistics["q_final"][:, 0]
    std_mc, mean_mc = float(q.std(ddof=1)), float(q.mean())

    se_std = std_lin / np.sqrt(2 * N)
    assert abs(std_mc - std_lin) < 4 * se_std, (std_mc, std_lin, se_std)
    se_mean = std_mc / np.sqrt(N)
    assert abs(mean_mc - nominal - shift2) < 4 * se_mean, (mean_mc, nominal, shift2, se_mean)
    print(f"std: MC {std_mc:.5f}, linear {std_lin:.5f} (SE {se_std:.5f}); mean − nominal {mean_mc - nominal:+.5f}, "
          f"second-order shift {shift2:+.5f} (SE {se_mean:.5f})")
    # the draws have the asked spread (the inputs of the comparison)
    for n in names:
        assert abs(res.draws[n].std(ddof=1) / SIGMA[n] - 1) < 4 / np.sqrt(2 * N)


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_lcp_friction_study_follows_coulombs_threshold():
    """S2 (``experiments/montecarlo_s2_friction.py``, fast version): the tip, pressed with
    F_N = 5 N and pushed with F_x = 2.6 N, sticks at the end of the push window iff
    μ > F_x/F_N = 0.52; a sticking contact carries |λ_T/λ_N| = F_x/F_N (the study measured 8e-8)."""
    from diffsim.complementarity.rigid import STICK
    from diffsim.scenarios import seed002 as s2
    from diffsim.simulation.lcp import STEPPERS

    m = s2.model()
    q0, v0 = s2.initial_state(m)
    dt, t1 = 0.01, 1.9
    system = ds.System(m, q0, v0, contact=s2.contact_model(m), tau=s2.controls(m, s2.plane_height(m)), t1=t1,
                       solver=STEPPERS["acceleration"](dt))
    k = int(round(s2.DATA["t_lift"][2] / dt)) - 1  # the last step before the lift

    def stats(tr):
        c = tr.contact
        return {"mode": c.mode[k, 0], "ratio": c.lambda_T[k, 0] / c.lambda_N[k, 0]}

    mu = np.array([0.3, 0.5, 0.515, 0.525, 0.54, 0.6])
    res = mc.run(system, {"contact.mu": mc.Samples(mu)}, mu.size, stats, chunk_size=mu.size, progress=False)
    assert res.status_counts == {"success": mu.size}
    threshold = s2.DATA["push"] / s2.DATA["press"]
    np.testing.assert_array_equal(res.statistics["mode"] == STICK, mu > threshold)
    stick = mu > threshold
    np.testing.assert_allclose(np.abs(res.statistics["ratio"][stick]), threshold, rtol=1e-6)
