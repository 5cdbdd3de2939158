"""The written-out small products of :mod:`diffsim.spatial` (elementwise forms the CPU fuses)
equal the matrix products they replace, the section inertia applied block by block equals the
6×6 spatial inertia of a section, and the SO(3) coefficients and their rates are exact to round-off
against their series summed in rationals."""

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from diffsim import spatial as sp
from diffsim.dynamics.sections import section_inertia_times


def test_written_out_products_equal_the_matrix_products():
    rng = np.random.default_rng(0)
    A, B, x, a = rng.normal(size=(4, 5, 3, 3)), rng.normal(size=(4, 5, 3, 2)), rng.normal(size=(4, 5, 3)), rng.normal(size=(7, 3))
    np.testing.assert_allclose(sp.mm_unrolled(A, B), A @ B, rtol=0, atol=1e-14)
    np.testing.assert_allclose(sp.mv_unrolled(A, x), np.einsum("...ij,...j->...i", A, x), rtol=0, atol=1e-14)
    K = np.asarray(sp.skew(a))
    np.testing.assert_allclose(sp.skew_squared(a), K @ K, rtol=0, atol=1e-14)
    # motion transform [[E, 0], [-E r×, E]] (Featherstone eq 2.24), E a rotation
    E = np.asarray(sp.so3_exp(rng.normal(size=(7, 3))))
    np.testing.assert_allclose(E @ np.swapaxes(E, -1, -2), np.broadcast_to(np.eye(3), E.shape), atol=1e-14)
    X = np.asarray(sp.Transform(E, a).motion_matrix())
    np.testing.assert_allclose(X[:, 3:, :3], -E @ K, rtol=0, atol=1e-14)
    np.testing.assert_allclose(X[:, :3, 3:], 0.0)


def test_section_inertia_applied_by_blocks_equals_the_spatial_inertia():
    rng = np.random.default_rng(1)

    class Sections:  # the two fields section_inertia_times reads (FlexBody.m, FlexBody.J)
        m = rng.uniform(0.5, 2.0, size=5)
        L = rng.normal(size=(5, 3, 3))
        J = L @ np.swapaxes(L, -1, -2)

    X = rng.normal(size=(5, 6, 4))
    I = np.asarray(sp.spatial_inertia(Sections.m, np.zeros((5, 3)), Sections.J))
    np.testing.assert_allclose(section_inertia_times(Sections, X), I @ X, rtol=0, atol=1e-13)


def _exact_series(t2: float, offset: int, order: int = 0, terms: int = 60) -> float:
    """``Σ_k (−1)^k t^k / (2k + offset)!`` (or its derivative in ``t``) summed exactly in rationals
    at the float ``t2``: an independent reference for the SO(3) coefficients and their rates."""
    t = Fraction(t2)
    if order:
        return float(sum(Fraction((-1) ** k * k, math.factorial(2 * k + offset)) * t ** (k - 1) for k in range(1, terms)))
    return float(sum(Fraction((-1) ** k, math.factorial(2 * k + offset)) * t ** k for k in range(terms)))


def test_so3_coefficients_and_their_rates_are_exact_to_round_off():
    """a = sin θ/θ, b = (1 − cos θ)/θ², c = (θ − sin θ)/θ³ and db/dθ², dc/dθ² (closed form and as
    forward-mode derivatives) at θ² from 0 through the switch to the closed forms (where θ − sin θ and
    the rates cancel) to 30."""
    t2 = np.array([0.0, 1e-12, 1e-6, 2e-6, 1e-4, 1e-2, 0.3, sp.SO3_SERIES_BELOW * (1 - 1e-9),
                   sp.SO3_SERIES_BELOW, sp.SO3_SERIES_BELOW * (1 + 1e-9), 1.0, 4.0, 30.0])
    ref = np.array([[_exact_series(t, 1), _exact_series(t, 2), _exact_series(t, 3),
                     _exact_series(t, 2, 1), _exact_series(t, 3, 1)] for t in t2]).T
    got = np.asarray(sp.so3_coeffs_and_rates(jnp.asarray(t2), jnp.ones_like(jnp.asarray(t2))))
    np.testing.assert_allclose(got, ref, rtol=3e-14)
    ad = np.asarray(jax.vmap(jax.jacfwd(lambda t: jnp.stack(sp.so3_coeffs(t))))(jnp.asarray(t2))).T
    np.testing.assert_allclose(ad, np.vstack([[_exact_series(t, 1, 1) for t in t2], ref[3:]]), rtol=3e-14)
