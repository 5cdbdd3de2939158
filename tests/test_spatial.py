"""The written-out small products of :mod:`diffsim.spatial` (elementwise forms the CPU fuses)
equal the matrix products they replace, and the section inertia applied block by block equals the
6×6 spatial inertia of a section."""

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
