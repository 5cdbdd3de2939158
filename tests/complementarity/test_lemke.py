"""Lemke's algorithm: standard problems, exhaustive enumeration, status codes, implicit
gradients, vmap and bad input (issue 5, acceptance 1, 2, 5)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from diffsim import LCPError, LCPStatus, lemke


def enumerate_solutions(M, q, tol=1e-12):
    """Every solution among the 2ⁿ complementary bases (the independent reference)."""
    n = len(q)
    sols = []
    for mask in itertools.product([False, True], repeat=n):
        A = np.array(mask)
        z = np.zeros(n)
        if A.any():
            MAA = M[np.ix_(A, A)]
            if abs(np.linalg.det(MAA)) < 1e-12:
                continue
            z[A] = np.linalg.solve(MAA, -q[A])
        w = M @ z + q
        if z.min() >= -tol and w.min() >= -tol:
            sols.append(z)
    return sols


def random_p_matrix(rng, n):
    """Positive definite symmetric part ⇒ P-matrix (every principal minor > 0): unique solution."""
    A = rng.normal(size=(n, n))
    S = rng.normal(size=(n, n))
    return A @ A.T + 0.3 * np.eye(n) + (S - S.T)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_random_p_matrix_problems_match_enumeration():
    rng = np.random.default_rng(0)
    solve = jax.jit(lemke)
    worst = 0.0
    for _ in range(120):
        n = int(rng.integers(1, 9))
        M, q = random_p_matrix(rng, n), rng.normal(size=n)
        (ref,) = enumerate_solutions(M, q)
        z, w, status = solve(M, q)
        assert int(status) == LCPStatus.SOLVED
        np.testing.assert_allclose(w, M @ np.asarray(z) + q, atol=1e-12)
        assert float(jnp.abs(z * w).max()) == 0.0  # complementary by construction
        worst = max(worst, float(np.abs(np.asarray(z) - ref).max()))
    assert worst <= 1e-10


@pytest.mark.slow
def test_murty_exponential_example_takes_2_to_the_n_pivots():
    """Murty (1978): M lower-triangular with 1 on, 2 below the diagonal, q = −e; Lemke's method
    visits 2ⁿ bases. The unique solution is z = e₁."""
    for n in range(2, 6):
        M = np.tril(2.0 * np.ones((n, n)), -1) + np.eye(n)
        z, w, status, pivots = lemke(M, -np.ones(n), return_pivots=True)
        assert int(status) == LCPStatus.SOLVED
        np.testing.assert_array_equal(np.asarray(z), np.eye(n)[0])
        assert int(pivots) == 2**n
    # with a bound below 2ⁿ the pivot limit is reported, not a wrong answer
    n = 5
    M = np.tril(2.0 * np.ones((n, n)), -1) + np.eye(n)
    z, w, status = lemke(M, -np.ones(n), max_pivots=20)
    assert int(status) == LCPStatus.MAX_PIVOTS and bool(jnp.all(jnp.isnan(z)))


def test_degenerate_problem_cycles_without_anticycling_and_is_solved_with_it():
    """M = [[1,2,0],[0,1,2],[2,0,1]], q = −e: every ratio test ties. Lowest-index tie breaking
    returns to an earlier basis forever; the lexicographic rule solves it (z = e/3)."""
    M = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]])
    q = -np.ones(3)
    z, w, status, pivots = lemke(M, q, lexicographic=False, max_pivots=200, return_pivots=True)
    assert int(status) == LCPStatus.MAX_PIVOTS and int(pivots) == 200
    z, w, status = lemke(M, q)
    assert int(status) == LCPStatus.SOLVED
    np.testing.assert_allclose(z, np.full(3, 1 / 3), atol=1e-15)
    (ref,) = enumerate_solutions(M, q)
    np.testing.assert_allclose(z, ref, atol=1e-14)


def test_no_solution_ends_on_a_ray_and_trivial_problems():
    # M positive semidefinite (copositive-plus) and z1 − z2 ≥ 1, z2 − z1 ≥ 1 infeasible
    for M, q in [
        (np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([-1.0, -1.0])),
        (-np.eye(3), -np.ones(3)),
    ]:
        assert enumerate_solutions(M, q) == []
        z, w, status = lemke(M, q)
        assert int(status) == LCPStatus.RAY and bool(jnp.all(jnp.isnan(z)))
    # q ≥ 0: z = 0 without a pivot
    z, w, status, pivots = lemke(np.array([[0.0, -1.0], [1.0, 0.0]]), np.array([0.0, 2.0]), return_pivots=True)
    assert int(status) == LCPStatus.SOLVED and int(pivots) == 0
    np.testing.assert_array_equal(z, [0.0, 0.0])
    np.testing.assert_array_equal(w, [0.0, 2.0])


def test_nonfinite_input_is_a_status_under_jit_and_an_error_eagerly():
    M, q = np.eye(2), np.array([1.0, np.nan])
    z, w, status = jax.jit(lemke)(M, q)
    assert int(status) == LCPStatus.NONFINITE and bool(jnp.all(jnp.isnan(z)))
    with pytest.raises(LCPError, match="NaN"):
        lemke(M, q)
    with pytest.raises(LCPError, match="NaN"):
        lemke(np.array([[np.inf, 0.0], [0.0, 1.0]]), np.ones(2))


def test_bad_shapes_are_clear_errors():
    with pytest.raises(LCPError, match="square"):
        lemke(np.ones((2, 3)), np.ones(2))
    with pytest.raises(LCPError, match="length 2"):
        lemke(np.eye(2), np.ones(3))
    with pytest.raises(LCPError, match="length 2"):
        lemke(np.eye(2), np.ones((2, 1)))
    with pytest.raises(LCPError, match="empty"):
        lemke(np.zeros((0, 0)), np.zeros(0))


def _mixed_problem(seed=3, n=6):
    """A P-matrix problem whose solution has both active and inactive components, none of them
    degenerate (so the active set is locally constant)."""
    rng = np.random.default_rng(seed)
    while True:
        M, q = random_p_matrix(rng, n), rng.normal(size=n)
        z, w, _ = lemke(M, q)
        z, w = np.asarray(z), np.asarray(w)
        if 0 < (z > 0).sum() < n and np.minimum(z + w, 10).min() > 0.05:
            return M, q


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_implicit_gradients_match_central_differences():
    M, q = _mixed_problem()
    cot = np.random.default_rng(9).normal(size=(2, len(q)))

    @jax.jit
    def loss(M, q):
        z, w, _ = lemke(M, q)
        return jnp.dot(cot[0], z) + jnp.dot(cot[1], w)

    gM, gq = jax.grad(loss, argnums=(0, 1))(M, q)
    h = 1e-6
    fd_q = np.array([(loss(M, q + h * e) - loss(M, q - h * e)) / (2 * h) for e in np.eye(len(q))])
    fd_M = np.zeros_like(M)
    for i, j in itertools.product(range(len(q)), repeat=2):
        E = np.zeros_like(M)
        E[i, j] = h
        fd_M[i, j] = (loss(M + E, q) - loss(M - E, q)) / (2 * h)
    scale = max(np.abs(fd_q).max(), np.abs(fd_M).max())
    assert np.abs(np.asarray(gq) - fd_q).max() <= 1e-6 * scale
    assert np.abs(np.asarray(gM) - fd_M).max() <= 1e-6 * scale
    # forward mode agrees with reverse mode
    dM, dq = np.random.default_rng(2).normal(size=M.shape), np.random.default_rng(3).normal(size=q.shape)
    _, tangent = jax.jvp(loss, (M, q), (dM, dq))
    np.testing.assert_allclose(tangent, np.sum(gM * dM) + np.dot(gq, dq), rtol=1e-12)


def test_vmap_over_1024_problems_equals_a_loop_and_vmap_of_grad():
    rng = np.random.default_rng(5)
    n = 5
    Ms = np.stack([random_p_matrix(rng, n) for _ in range(1024)])
    qs = rng.normal(size=(1024, n))
    Ms[7, 0, 0] = np.nan  # one bad element does not spoil the batch
    solve = jax.jit(lemke)
    zb, wb, sb = jax.jit(jax.vmap(lemke))(Ms, qs)
    loop = [solve(M, q) for M, q in zip(Ms, qs)]
    np.testing.assert_array_equal(np.asarray(sb), [int(s) for _, _, s in loop])
    assert int(sb[7]) == LCPStatus.NONFINITE and (np.delete(np.asarray(sb), 7) == 0).all()
    np.testing.assert_allclose(zb, np.stack([z for z, _, _ in loop]), atol=1e-13, equal_nan=True)
    np.testing.assert_allclose(wb, np.stack([w for _, w, _ in loop]), atol=1e-13, equal_nan=True)

    def f(M, q):
        return jnp.sum(lemke(M, q)[0] ** 2)

    gb = jax.jit(jax.vmap(jax.grad(f, argnums=1)))(Ms[8:40], qs[8:40])
    grad_one = jax.jit(jax.grad(f, argnums=1))
    gl = np.stack([grad_one(M, q) for M, q in zip(Ms[8:40], qs[8:40])])
    np.testing.assert_allclose(gb, gl, atol=1e-12)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_float32_solves_and_reports():
    rng = np.random.default_rng(11)
    M, q = random_p_matrix(rng, 6), rng.normal(size=6)
    z32, w32, s32 = lemke(M.astype(np.float32), q.astype(np.float32))
    z64, _, _ = lemke(M, q)
    assert z32.dtype == jnp.float32 and int(s32) == LCPStatus.SOLVED
    np.testing.assert_allclose(z32, z64, atol=1e-5)
