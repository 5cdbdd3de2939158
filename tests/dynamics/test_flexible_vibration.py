"""Flexible links over time: frequencies from free vibration, the energy balance over 10 s, and
the Newmark family (split from test_flexible.py so that the two test workers share the load)."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.beams import euler_bernoulli_modes, euler_bernoulli_roots
from diffsim.flexible import beam, dissipated_power, reduced_newmark_jacobian
from flex_models import _energy_arm, _poly


def _cantilever(modes, EI=2.0, mu=0.5, L=1.5):
    b = ds.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body("beam", None, joint="fixed", flex=beam(L, mu, EI_z=EI, modes_y=modes, n_quad=32))
    return b.build()


@pytest.mark.slow
@pytest.mark.optimized  # its time is in running its programs: LLVM level 1 (tests/conftest.py)
def test_cantilever_frequencies_from_free_vibration():
    """Clamped–free Euler–Bernoulli beam on a fixed base, Ritz with polynomial shapes η², …, η⁷
    (not the eigenfunctions): the first three frequencies, measured from the simulated free
    vibration started in each linear normal mode, match (β_k L)² √(EI/μL⁴) to 0.1 % (Ritz
    errors with 6 shapes: 7e-10, 1.4e-5, 3.1e-4; 5 shapes would miss ω₃ by 2.5 %)."""
    EI, mu, L = 2.0, 0.5, 1.5
    m = _cantilever(_poly(list(range(2, 8))), EI, mu, L)
    exact = euler_bernoulli_roots("cf", 3) ** 2 * np.sqrt(EI / (mu * L**4))
    z = jnp.zeros(m.nv)
    Kl = -jax.jacfwd(lambda q: ds.forward_dynamics(m, q, z))(z)  # M⁻¹K of the tree
    w2, vecs = np.linalg.eig(np.asarray(Kl))
    order = np.argsort(w2.real)
    omega = np.sqrt(w2.real[order])
    np.testing.assert_allclose(omega[:3], exact, rtol=1e-3)

    @jax.jit
    def tip(q0, t1):
        ts = jnp.linspace(0.0, t1, 801)
        tr = ds.simulate(m, q0, z, t1, solver="tsit5", rtol=1e-10, atol=1e-12, saveat=ts, max_steps=200_000)
        return tr.t, tr.q @ m.flex[0].end_phi_d[1]

    for k in range(3):
        mode = np.real(vecs[:, order[k]])
        T = 2 * np.pi / exact[k]
        t, y = map(np.asarray, tip(jnp.asarray(1e-4 * mode / np.abs(mode).max()), 4 * T))
        s = np.sign(y)
        idx = np.nonzero(s[:-1] * s[1:] < 0)[0]
        cross = t[idx] - y[idx] * (t[idx + 1] - t[idx]) / (y[idx + 1] - y[idx])
        period = 2 * np.mean(np.diff(cross))
        assert abs(2 * np.pi / period / exact[k] - 1) < 1e-3


@pytest.mark.slow
def test_eigenfunction_modes_give_exact_frequencies():
    """With the Euler–Bernoulli eigenfunctions as assumed modes the Ritz frequencies are exact
    (to the quadrature)."""
    EI, mu, L = 2.0, 0.5, 1.5
    m = _cantilever(euler_bernoulli_modes("cf", 3), EI, mu, L)
    z = jnp.zeros(m.nv)
    Kl = -jax.jacfwd(lambda q: ds.forward_dynamics(m, q, z))(z)
    omega = np.sort(np.sqrt(np.linalg.eigvals(np.asarray(Kl)).real))
    exact = euler_bernoulli_roots("cf", 3) ** 2 * np.sqrt(EI / (mu * L**4))
    np.testing.assert_allclose(omega, exact, rtol=1e-10)


@eqx.filter_jit
def _energy_run(m, q0, v0):  # the model is an argument: damped and undamped share one compile
    P = lambda t, q, v: dissipated_power(m, q, v)[None]  # noqa: E731
    return ds.simulate(m, q0, v0, 10.0, solver="dopri8", rtol=1e-13, atol=1e-13, saveat=51, integrals=P,
                       max_steps=400_000)


@pytest.mark.slow
@pytest.mark.optimized  # its time is in running its programs: LLVM level 1 (tests/conftest.py)
@pytest.mark.parametrize("damped", [False, True])
def test_energy_balance_over_10s(damped):
    """Undamped: T + V constant to 1e-8 relative over 10 s; damped: T + V + W_D constant to the
    same level, with the dissipated work W_D integrated alongside."""
    m = _energy_arm(damped)
    q0 = jnp.zeros(m.nq).at[0].set(0.3).at[1].set(-0.4).at[2].set(0.01)
    v0 = jnp.zeros(m.nv).at[0].set(1.0)
    tr = _energy_run(m, q0, v0)
    E = jax.vmap(lambda q, v: ds.total_energy(m, q, v))(tr.q, tr.v)
    W = tr.integrals[:, 0]
    scale = float(jnp.max(jnp.abs(jax.vmap(lambda q, v: ds.kinetic_energy(m, q, v))(tr.q, tr.v))))
    err = float(jnp.max(jnp.abs(E + W - E[0]))) / scale
    assert err < 1e-8
    if damped:
        assert float(W[-1]) > 1e-3 * scale  # it did dissipate


@pytest.mark.slow
def test_newmark_on_a_flexible_arm_with_reduced_jacobian():
    """Generalized-α on a flexible arm (one link, two modes; the two-link S3 arm is in
    benchmarks/bench_exudyn.py): the exact-Jacobian and seed 003 reduced-Jacobian Newton reach
    the same solution; the scheme converges to the adaptive reference at second order."""
    b = ds.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("arm", None, joint="revolute", axis=(0, 0, 1), damping=0.1,
               flex=beam(1.0, 1.0, EI_z=40.0, modes_y=_poly([2, 3]), air_damping=0.05, n_quad=8, tip_mass=0.2))
    m = b.build()
    q0 = jnp.zeros(m.nq).at[0].set(0.3).at[1].set(0.01)
    v0 = jnp.zeros(m.nv).at[0].set(1.0)
    ref = ds.simulate(m, q0, v0, 0.2, solver="dopri5", rtol=1e-13, atol=1e-13, saveat=jnp.array([0.2])).q[-1]

    def run(h, jac):
        solver = ds.GeneralizedAlpha(rho_inf=0.8, jacobian=jac)
        return ds.simulate(m, q0, v0, 0.2, solver=solver, dt0=h, saveat=jnp.array([0.2]),
                           controller=diffrax.ConstantStepSize()).q[-1]

    red = reduced_newmark_jacobian(m)
    e1 = float(jnp.max(jnp.abs(run(5e-4, "exact") - ref)))
    e2 = float(jnp.max(jnp.abs(run(2.5e-4, "exact") - ref)))
    assert 3.5 < e1 / e2 < 4.5  # second order once ω_max h ≤ 0.2 (ω_max = 352 rad/s; measured 3.9)
    np.testing.assert_allclose(run(0.002, red), run(0.002, "exact"), atol=1e-9)
