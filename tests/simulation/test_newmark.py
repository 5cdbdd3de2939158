"""Newmark-β / HHT-α / generalized-α diffrax solvers: convergence order (linear, damped,
nonlinear), energy conservation, spectral radii, adaptive stepping, gradients vs finite
differences, simplified Newton, non-convergence reporting, events, make_solver names."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
import pytest

from diffsim.simulation.newmark import HHT, GeneralizedAlpha, Newmark
from diffsim.simulation.solvers import make_solver

SCHEMES = {"newmark": Newmark(), "hht": HHT(), "generalized-alpha": GeneralizedAlpha()}


def accel(t, q, v, args):
    """ω² ((1 − p) q + p sin q) restoring force with damping ratio ζ; p = 1: pendulum."""
    w, z, p = args
    return -(w**2) * ((1 - p) * q + p * jnp.sin(q)) - 2 * z * w * v


TERM = diffrax.ODETerm(lambda t, y, args: (y[1], accel(t, y[0], y[1], args), None))
# with a running integral w = ∫ q² dt
TERM_W = diffrax.ODETerm(lambda t, y, args: (y[1], accel(t, y[0], y[1], args), y[0] ** 2))


@eqx.filter_jit
def solve_fixed(solver, dt, args, t1, q0=1.0, v0=0.0):
    y0 = (jnp.array([q0]), jnp.array([v0]), None)
    sol = diffrax.diffeqsolve(
        TERM, solver, 0.0, t1, dt, y0, args=args, max_steps=2048,
        saveat=diffrax.SaveAt(t1=True, solver_state=True), throw=False,
    )
    return sol.ys[0][-1, 0], sol.ys[1][-1, 0], sol.solver_state[3], sol.result


def exact_damped(w, z, t):
    """q, v of q̈ + 2ζω q̇ + ω² q = 0, q(0) = 1, v(0) = 0 (ζ < 1)."""
    wd = w * np.sqrt(1 - z**2)
    e = np.exp(-z * w * t)
    q = e * (np.cos(wd * t) + z * w / wd * np.sin(wd * t))
    v = -e * (w**2 / wd) * np.sin(wd * t)
    return q, v


def slopes(errs):
    return np.log2(np.asarray(errs[:-1]) / np.asarray(errs[1:]))


NS = (50, 100, 200, 400)


@pytest.mark.parametrize("name", list(SCHEMES))
def test_linear_oscillator_order_2(name):
    solver, T = SCHEMES[name], 2.0
    for z in (0.0, 0.1):
        eq, ev = [], []
        for N in NS:
            q, v, _, res = solve_fixed(solver, jnp.asarray(T / N), (2.0, z, 0.0), jnp.asarray(T))
            assert res == diffrax.RESULTS.successful
            qe, ve = exact_damped(2.0, z, T)
            eq.append(abs(float(q) - qe))
            ev.append(abs(float(v) - ve))
        for s in (slopes(eq), slopes(ev)):
            assert np.all(np.abs(s - 2.0) <= 0.15), (name, z, s)


@pytest.mark.parametrize("name", list(SCHEMES))
def test_pendulum_order_2_vs_tsit5(name):
    T, args, q0 = 3.0, (1.0, 0.05, 1.0), 1.2
    ref = diffrax.diffeqsolve(
        TERM, diffrax.Tsit5(), 0.0, T, 1e-3, (jnp.array([q0]), jnp.array([0.0]), None), args=args,
        stepsize_controller=diffrax.PIDController(rtol=1e-12, atol=1e-12), max_steps=100_000,
    )
    qr, vr = float(ref.ys[0][-1, 0]), float(ref.ys[1][-1, 0])
    eq, ev = [], []
    for N in NS:
        q, v, _, res = solve_fixed(SCHEMES[name], jnp.asarray(T / N), args, jnp.asarray(T), q0)
        assert res == diffrax.RESULTS.successful
        eq.append(abs(float(q) - qr))
        ev.append(abs(float(v) - vr))
    for s in (slopes(eq), slopes(ev)):
        assert np.all(np.abs(s - 2.0) <= 0.15), (name, s)


def test_average_acceleration_conserves_energy_to_roundoff():
    w, h, n = 3.0, 0.4, 500  # ωh = 1.2: far from accurate, still exactly energy conserving

    @jax.jit
    def energy(z):
        sol = diffrax.diffeqsolve(
            TERM, Newmark(), 0.0, n * h, h, (jnp.array([1.0]), jnp.array([0.5]), None), args=(w, z, 0.0),
            saveat=diffrax.SaveAt(steps=True), max_steps=n,
        )
        return 0.5 * sol.ys[1][:, 0] ** 2 + 0.5 * w**2 * sol.ys[0][:, 0] ** 2

    E0 = 0.5 * 0.5**2 + 0.5 * w**2
    assert float(jnp.max(jnp.abs(energy(0.0) - E0))) / E0 <= 1e-13
    assert float(energy(0.01)[-1]) < 0.5 * E0  # the damped problem dissipates (the check can fail)


@eqx.filter_jit
def _amplification(solver, w):
    D = jnp.stack([1.0, 1.0 / w, 1.0 / w**2])

    def one(x):
        q, v, ah = x / D
        y0 = (q[None], v[None], None)
        state = (-(w**2) * q[None], ah[None], None, jnp.zeros((), jnp.int32))
        y1, _, _, s1, res = solver.step(TERM, 0.0, 1.0, y0, (w, 0.0, 0.0), state, False)
        return jnp.stack([y1[0][0], y1[1][0], s1[1][0]]) * D, res == diffrax.RESULTS.successful

    return jax.vmap(one)(jnp.eye(3))


def amplification_matrix(solver, wh):
    """One step of q̈ = −ω²q (h = 1, ω = wh) as a matrix on the scaled state (q, v/ω, â/ω²)."""
    cols, ok = _amplification(solver, jnp.asarray(wh, jnp.float64))
    assert bool(jnp.all(ok)), ok
    return np.asarray(cols).T


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, 1.0])
def test_generalized_alpha_spectral_radius_at_infinity(rho):
    # ωh = 1e6, not 1e4: at ρ∞ = 0 the limit root is triple, so |λ| − ρ∞ ~ (1/ωh)^(1/3)
    A = amplification_matrix(GeneralizedAlpha(rho_inf=rho), 1e6)
    assert abs(np.max(np.abs(np.linalg.eigvals(A))) - rho) <= 1e-3
    # low frequencies are (almost) undamped: principal roots of modulus ≈ 1
    A = amplification_matrix(GeneralizedAlpha(rho_inf=rho), 0.1)
    assert 1 - 1e-4 < np.max(np.abs(np.linalg.eigvals(A))) <= 1 + 1e-12


@pytest.mark.parametrize("alpha", [-0.05, -0.2, -1 / 3])
def test_hht_spectral_radius_at_infinity(alpha):
    A = amplification_matrix(HHT(alpha=alpha), 1e6)
    assert abs(np.max(np.abs(np.linalg.eigvals(A))) - (1 + alpha) / (1 - alpha)) <= 1e-3


def test_newmark_trapezoidal_amplification_and_period():
    """Average acceleration: |λ| = 1 at every ωh, arg λ = 2 atan(ωh/2) (period elongation)."""
    for wh in (0.1, 1e4):
        ev = np.linalg.eigvals(amplification_matrix(Newmark(), wh))
        ev = ev[np.argsort(-np.abs(ev))][:2]  # the third (spurious: â = a) root is 0
        np.testing.assert_allclose(np.abs(ev), 1.0, atol=1e-10)
        np.testing.assert_allclose(np.max(np.angle(ev)), 2 * np.arctan(wh / 2), rtol=1e-10)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_adaptive_stepping_meets_tolerance():
    T, args, q0 = 10.0, (1.0, 0.02, 1.0), 2.0
    y0 = (jnp.array([q0]), jnp.array([0.0]), None)
    ts = jnp.linspace(0.0, T, 21)
    ref = diffrax.diffeqsolve(
        TERM, diffrax.Tsit5(), 0.0, T, 1e-3, y0, args=args, saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=diffrax.PIDController(rtol=1e-12, atol=1e-12), max_steps=100_000,
    )

    @jax.jit
    def run(tol):
        sol = diffrax.diffeqsolve(
            TERM, GeneralizedAlpha(), 0.0, T, None, y0, args=args, saveat=diffrax.SaveAt(ts=ts),
            stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol), max_steps=100_000,
        )
        err = jnp.max(jnp.abs(sol.ys[0] - ref.ys[0]))
        return err, sol.stats["num_accepted_steps"], sol.result

    errs, steps = [], []
    for tol in (1e-5, 1e-8):
        err, n, res = run(tol)
        assert res == diffrax.RESULTS.successful
        errs.append(float(err))
        steps.append(int(n))
        # ≈ 5 swings: the global error is about (number of steps) × (local error ≤ tol·(1 + |y|))
        assert errs[-1] <= 3 * (1 + q0) * n * tol, (tol, errs[-1], int(n))
    # local error O(h³) per step, global O(h²): 1000× tighter tol → 10× the steps, 100× less error
    assert 7 < steps[1] / steps[0] < 14, steps
    assert 30 < errs[0] / errs[1] < 300, errs


@pytest.mark.parametrize("name", list(SCHEMES))
@pytest.mark.parametrize("z", [0.0, 0.2])
def test_error_estimate_is_the_local_error(name, z):
    """From the exact state (and â = a(t + (α_m − α_f) h)), e_q → q₁ − q(t₀ + h) as h → 0."""
    solver, w = SCHEMES[name], 2.0
    am, af, _, _ = solver._coefficients()
    exact = lambda t: exact_damped(w, z, t)  # noqa: E731
    t0, h = 0.3, 0.005

    def acc(t):
        q, v = exact(t)
        return -(w**2) * q - 2 * z * w * v

    q, v = exact(t0)
    y0 = (jnp.array([q]), jnp.array([v]), None)
    state = (jnp.array([acc(t0)]), jnp.array([acc(t0 + (am - af) * h)]), None, jnp.zeros((), jnp.int32))
    y1, err, *_ = solver.step(TERM, t0, t0 + h, y0, (w, z, 0.0), state, False)
    q1, v1 = exact(t0 + h)
    np.testing.assert_allclose(float(err[0][0]), float(y1[0][0]) - q1, rtol=0.05)
    assert float(err[1][0]) == 0.0  # second-order parameter sets: no O(h²) velocity error term
    assert abs(float(y1[1][0]) - v1) <= 50 * h**3  # v's local error is O(h³)


def _jac_linearised_at_rest(t, q, v, h, beta, gamma):
    return jnp.eye(1) * (1 + beta * h**2)  # ∂a/∂q ≈ −ω² cos 0 at ω = 1, damping ignored


@pytest.mark.parametrize(
    "solver",
    [GeneralizedAlpha(newton_tol=1e-13), HHT(newton_tol=1e-13, jacobian=_jac_linearised_at_rest)],
    ids=["genalpha-exact", "hht-simplified"],
)
def test_grad_matches_finite_differences(solver):
    """Pendulum with damping and a running integral ∫q² (trapezoidal path), fixed step."""

    def loss(p):
        w, z = p
        sol = diffrax.diffeqsolve(
            TERM_W, solver, 0.0, 2.0, 0.02, (jnp.array([1.0]), jnp.array([0.3]), jnp.zeros(1)),
            args=(w, z, 1.0), max_steps=110, adjoint=diffrax.RecursiveCheckpointAdjoint(checkpoints=110),
        )
        q, v, wi = (x[-1, 0] for x in sol.ys)
        return q**2 + 0.5 * v + wi

    p = jnp.array([1.3, 0.2])
    g = jax.jit(jax.grad(loss))(p)
    f = jax.jit(loss)
    eps = 1e-5
    fd = np.array([(f(p + eps * e) - f(p - eps * e)) / (2 * eps) for e in jnp.eye(2)])
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6)


def test_simplified_newton_same_solution_more_iterations():
    args, T, q0 = (2.0, 0.1, 1.0), 3.0, 1.5

    def jac(t, q, v, h, beta, gamma):  # linearised about q = 0: ∂a/∂q ≈ −ω², ∂a/∂v = −2ζω
        return jnp.eye(1) * (1 + beta * h**2 * args[0] ** 2 + gamma * h * 2 * args[1] * args[0])

    exact = solve_fixed(GeneralizedAlpha(), jnp.asarray(0.02), args, jnp.asarray(T), q0)
    approx = solve_fixed(GeneralizedAlpha(jacobian=jac), jnp.asarray(0.02), args, jnp.asarray(T), q0)
    assert exact[3] == diffrax.RESULTS.successful and approx[3] == diffrax.RESULTS.successful
    assert abs(float(exact[0] - approx[0])) <= 1e-9 and abs(float(exact[1] - approx[1])) <= 1e-9
    assert int(approx[2]) > 1.5 * int(exact[2]), (int(approx[2]), int(exact[2]))


def test_newton_nonconvergence_is_reported():
    # stiff, with a Jacobian that ignores the stiffness: the iteration diverges
    bad = GeneralizedAlpha(max_newton=5, jacobian=lambda t, q, v, h, b, g: jnp.eye(1))
    *_, res = solve_fixed(bad, jnp.asarray(0.1), (100.0, 0.0, 0.0), jnp.asarray(1.0))
    assert res == diffrax.RESULTS.nonlinear_max_steps_reached
    # an adaptive controller rejects such steps and shrinks h until the iteration converges
    sol = diffrax.diffeqsolve(
        TERM, bad, 0.0, 0.2, 0.1, (jnp.array([1.0]), jnp.array([0.0]), None), args=(100.0, 0.0, 0.0),
        stepsize_controller=diffrax.PIDController(rtol=1e-3, atol=1e-3), max_steps=10_000,
    )
    assert sol.result == diffrax.RESULTS.successful and int(sol.stats["num_rejected_steps"]) > 0


def test_event_zero_crossing():
    w = 2.0
    event = diffrax.Event(lambda t, y, args, **kw: y[0][0], root_finder=optx.Newton(1e-12, 1e-12))
    errs = []
    for h in (0.02, 0.01):
        sol = diffrax.diffeqsolve(
            TERM, GeneralizedAlpha(), 0.0, 10.0, jnp.asarray(h), (jnp.array([1.0]), jnp.array([0.0]), None),
            args=(w, 0.0, 0.0), event=event, max_steps=2000,
        )
        assert sol.event_mask
        errs.append(abs(float(sol.ts[-1]) - np.pi / (2 * w)))
        assert abs(float(sol.ys[0][-1, 0])) <= 1e-10  # the interpolant's root
    assert errs[1] < 1e-4 and 3.0 < errs[0] / errs[1] < 5.0, errs


def test_make_solver_names_and_shape_check():
    for name, cls in (("newmark", Newmark), ("hht", HHT), ("generalized-alpha", GeneralizedAlpha)):
        s, adaptive = make_solver(name, 1e-6, 1e-6)
        assert isinstance(s, cls) and adaptive and isinstance(s, diffrax.AbstractAdaptiveSolver)
    with pytest.raises(ValueError, match="nq == nv"):
        Newmark().init(TERM, 0.0, 1.0, (jnp.zeros(4), jnp.zeros(3), None), (1.0, 0.0, 0.0))
    with pytest.raises(ValueError):
        HHT(alpha=0.1)
    with pytest.raises(ValueError):
        GeneralizedAlpha(rho_inf=1.5)
