"""Forward sensitivities under the step controller (``ds.ForwardSensitivity``) through the ball's
first impact, against central differences of the independent SciPy model (tests/ball_reference.py).

One contact phase and the flight after it (t ≤ 0.35 s, the experiment
``experiments/ball_event_gradients.py`` has the four-impact table): at rtol = atol = 1e-10, the
sensitivities in log-parameters ``∂z/∂log p`` (tangents of the state's size, which the shared
tolerances then bound) are compared by their largest error relative to their largest entry.
"""

import dataclasses

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from ball_reference import heights

import diffsim as ds
from diffsim.scenarios.ball_drop import height, system

P0 = {"K": 8e5, "c_r": 0.75}
T = np.linspace(0.0, 0.35, 36)
TOL = 1e-10


def _heights(adjoint):
    s = system({"rtol": TOL, "atol": TOL, "t1": float(T[-1])})
    s = s.replace(saveat=jnp.asarray(T), options=dataclasses.replace(s.options, adjoint=adjoint))

    def z(u):
        return height(ds.simulate(ds.set_params(s, {"contact.K": P0["K"] * jnp.exp(u[0]),
                                                    "contact.c_r": P0["c_r"] * jnp.exp(u[1])})))

    return z


@pytest.fixture(scope="module")
def reference():
    """``p ∂z/∂p`` of the SciPy model: central differences, relative step 1e-6, rtol 1e-13 (steps
    1e-5 and 1e-6 agree to 2.5e-7 of the largest entry for K: experiment README)."""
    cols = []
    for name in P0:
        h = P0[name] * 1e-6
        up, dn = dict(P0), dict(P0)
        up[name] += h
        dn[name] -= h
        cols.append((heights(T, rtol=1e-13, atol=1e-16, **up) - heights(T, rtol=1e-13, atol=1e-16, **dn)) / (2 * h) * P0[name])
    return np.stack(cols, axis=1)


@pytest.fixture(scope="module")
def controlled():
    z = _heights(ds.ForwardSensitivity())
    return z, jax.jit(jax.jacfwd(z))


def _rel_err(J, ref):
    return np.max(np.abs(np.asarray(J) - ref), axis=0) / np.max(np.abs(ref), axis=0)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_controlled_sensitivities_through_an_impact_match_the_independent_model(controlled, reference):
    """Bound 1e-6: the tangents are held to rtol 1e-10 per step (~10³ steps through the contact:
    ≤ 1e-7 accumulated) and the reference is good to ~2.5e-7. Measured 2e-8 (K) and 3e-9 (c_r);
    diffrax's ForwardMode at the same tolerances: 9e-4 and 4e-6 (the tangent is not under error
    control, and ∂F/∂δ ∝ δ^0.5 is not smooth at the onset)."""
    _, jac = controlled
    err = _rel_err(jac(jnp.zeros(2)), reference)
    assert np.all(err < 1e-6), err


@pytest.mark.slow
def test_uncontrolled_forward_mode_misses_the_same_bound(reference):
    """The comparison above can fail: diffrax's ForwardMode differentiates the steps the state
    chose and misses the 1e-6 bound on ∂z/∂log K (measured 9e-4)."""
    err = _rel_err(jax.jit(jax.jacfwd(_heights(diffrax.ForwardMode())))(jnp.zeros(2)), reference)
    assert err[0] > 1e-5, err


@pytest.mark.slow
def test_one_direction_many_directions_and_a_batch_of_points_agree(controlled, reference):
    """A single ``jvp`` (one direction under the controller), ``jacfwd`` (both directions in one
    augmented solve) and ``vmap`` of ``jacfwd`` over two points (one augmented solve per point)
    give the same derivatives: to the tolerance where the step sequences differ, to round-off
    where they are the same; the primal of the ``jvp`` is the run's to the tolerance."""
    z, jac = controlled
    u0 = jnp.zeros(2)
    J = np.asarray(jac(u0))
    z0, dz = jax.jit(lambda u: jax.jvp(z, (u,), (jnp.array([1.0, 0.0]),)))(u0)
    assert np.max(np.abs(np.asarray(dz) - J[:, 0])) < 1e-6 * np.max(np.abs(J[:, 0]))
    assert np.max(np.abs(np.asarray(z0) - np.asarray(jax.jit(z)(u0)))) < 1e-7  # m; the primal error at rtol 1e-10
    U = jnp.array([[0.0, 0.0], [0.1, -0.05]])
    JB = np.asarray(jax.jit(jax.vmap(jax.jacfwd(z)))(U))
    assert np.max(np.abs(JB[0] - J)) < 1e-9 * np.max(np.abs(J))
    assert np.max(np.abs(JB[1] - np.asarray(jac(U[1])))) < 1e-9 * np.max(np.abs(J))


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_reverse_mode_is_refused(controlled):
    """The augmented solve is one loop over state and tangents: reverse mode cannot split it and
    says so (use the system's default adjoint for ``grad``)."""
    z, _ = controlled
    with pytest.raises(ValueError, match="Linearization failed"):
        jax.grad(lambda u: jnp.sum(z(u) ** 2))(jnp.zeros(2))


@pytest.mark.slow
def test_a_run_without_contact_takes_the_same_path():
    """A run without contact (one solve, no located events) with ``ForwardSensitivity``: a damped
    pendulum's ∂q/∂log(damping, frictionloss) at rtol 1e-10 agree with central differences of a
    rtol-1e-13 run (relative step 1e-5: truncation ~1e-10, noise ~1e-13/1e-5) to 1e-7 of the
    largest entry (measured 2e-9 / 5e-9, as diffrax's ForwardMode on this smooth problem)."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=(0.002, 0.01, 0.01),
               damping=0.05, frictionloss=0.02, friction_width=0.01)
    ts = jnp.linspace(0.0, 2.0, 41)

    def q_of(adjoint, tol):
        s = ds.System(b.build(), jnp.array([1.2]), t1=2.0, rtol=tol, atol=tol, saveat=ts)
        s = s.replace(options=dataclasses.replace(s.options, adjoint=adjoint))
        return jax.jit(lambda u: ds.simulate(ds.set_params(s, {"joint.arm.damping": 0.05 * jnp.exp(u[0]),
                                                                "joint.arm.frictionloss": 0.02 * jnp.exp(u[1])})).q[:, 0])

    u0, h = jnp.zeros(2), 1e-5
    fine = q_of(None, 1e-13)
    ref = np.stack([(fine(u0 + h * e) - fine(u0 - h * e)) / (2 * h) for e in jnp.eye(2)], axis=1)
    J = np.asarray(jax.jacfwd(q_of(ds.ForwardSensitivity(), 1e-10))(u0))
    assert np.all(_rel_err(J, ref) < 1e-7), _rel_err(J, ref)
