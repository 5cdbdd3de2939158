"""Lemke's complementary pivot algorithm (Lemke 1965/1968; Cottle, Pang & Stone, *The Linear
Complementarity Problem*, §4.4) with lexicographic anti-cycling, and implicit derivatives of its
solution on the active set.

The LCP(M, q): find ``z`` with ``w = M z + q``, ``w ≥ 0``, ``z ≥ 0``, ``wᵀz = 0``.

Lemke's scheme augments it with an artificial variable ``z0`` and covering vector ``d = 1``:
``w − M z − d z0 = q``. Start with ``z0 = max_i(−q_i)`` (all ``w`` basic), then pivot
*complementarily*: the variable entering is the complement of the one that just left, the one
leaving is picked by the (lexicographic) minimum-ratio test. It ends

* in a solution when ``z0`` leaves the basis (``SOLVED``),
* on a secondary ray when the entering column has no positive entry (``RAY``: for a
  copositive-plus ``M`` this proves the LCP has no solution; Cottle–Pang–Stone Thm 4.4.13),
* or at the pivot bound (``MAX_PIVOTS``).

The pivoting keeps the basis inverse ``B⁻¹`` (product-form updates, ``O(n²)`` per pivot) inside a
``lax.while_loop``, so it works under ``jit`` and ``vmap``. Anti-cycling: the leaving row is the
lexicographic minimum of the rows of ``[B⁻¹q | B⁻¹] / (B⁻¹a_e)_i`` (Cottle–Pang–Stone §4.9),
which is unique because ``B⁻¹`` is non-singular, so no basis ever repeats.

The final basis names the *active set* ``A = {i : z_i basic}``; the solution is then
re-computed from it directly (``M_AA z_A = −q_A``, ``z_i = 0`` off ``A``) — removing the
round-off of the pivot updates — and checked (``z ≥ 0``, ``w ≥ 0`` to a tolerance that scales
with the data; a violated check gives ``INACCURATE``, never a silent wrong answer). The same
active-set equations give the implicit derivative (a ``custom_jvp``):
``dz_A = −M_AA⁻¹ (dM_{A·} z + dq_A)``, ``dz_i = 0`` off ``A``, ``dw = dM z + M dz + dq``. It is the
derivative of the solution wherever the active set is locally constant (strict
complementarity); at a degenerate solution (some ``z_i = w_i = 0``) it is one of the one-sided
derivatives.
"""

from __future__ import annotations

import enum

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from ..precision import full_precision


class LCPStatus(enum.IntEnum):
    """How :func:`lemke` ended. Anything but ``SOLVED`` returns NaN in ``z`` and ``w``."""

    SOLVED = 0
    #: secondary-ray termination: no solution found (for copositive-plus M: none exists)
    RAY = 1
    #: the pivot bound was reached before a solution
    MAX_PIVOTS = 2
    #: a basis was found but the recomputed solution violates z ≥ 0 or w ≥ 0 beyond round-off
    INACCURATE = 3
    #: M or q has NaN or inf entries (reported under jit; eagerly it raises)
    NONFINITE = 4


class LCPError(ValueError):
    """Bad input to :func:`lemke`."""


_RUNNING = -1


def _check_input(M, q):
    M = jnp.asarray(M)
    q = jnp.asarray(q)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise LCPError(f"lemke: M must be a square matrix, got shape {M.shape}")
    if q.ndim != 1 or q.shape[0] != M.shape[0]:
        raise LCPError(f"lemke: q must be a vector of length {M.shape[0]} to match M {M.shape}, got shape {q.shape}")
    if M.shape[0] == 0:
        raise LCPError("lemke: empty problem (n = 0)")
    for name, x in (("M", M), ("q", q)):
        if not jnp.issubdtype(x.dtype, jnp.floating):
            continue
        try:
            finite = bool(np.all(np.isfinite(np.asarray(x))))
        except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
            continue  # traced: reported as LCPStatus.NONFINITE instead
        if not finite:
            raise LCPError(f"lemke: {name} has NaN or inf entries")
    dtype = jnp.result_type(M.dtype, q.dtype, jnp.float32)
    return M.astype(dtype), q.astype(dtype)


def _pivot_basis(M, q, max_pivots: int, lexicographic: bool):
    """Run the complementary pivots; returns ``(basis [n] int, status, pivots)``.

    Variables are numbered ``w_i → i``, ``z_i → n + i``, ``z0 → 2n``; the columns of
    ``[I, −M, −d]`` multiply them."""
    n = q.shape[0]
    dtype = q.dtype
    eps = jnp.finfo(dtype).eps
    scale = 1.0 + jnp.max(jnp.abs(M)) + jnp.max(jnp.abs(q))
    piv_tol = 100 * eps * scale  # entries below this are not pivots
    tie_tol = 100 * eps  # relative tolerance for equal ratios
    d = jnp.ones(n, dtype)
    rows = jnp.arange(n)

    def column(e):
        unit = (rows == e).astype(dtype)
        zcol = -M[:, jnp.clip(e - n, 0, n - 1)]
        return jnp.where(e < n, unit, jnp.where(e < 2 * n, zcol, -d))

    def lexmin(xB, Binv, col, cand, prefer):
        """Row of the lexicographic minimum ratio among ``cand`` (``prefer`` wins first-level ties)."""
        safe = jnp.where(cand, col, 1.0)
        ratio = xB / safe
        big = jnp.asarray(jnp.inf, dtype)
        m = jnp.min(jnp.where(cand, ratio, big))
        tied = cand & (ratio <= m + tie_tol * (1.0 + jnp.abs(m)))
        # Lemke's rule: if z0 can leave, let it (the pivot ends in a solution)
        tied = jnp.where(jnp.any(tied & prefer), tied & prefer, tied)
        if lexicographic:

            def narrow(k, t):
                rk = Binv[:, k] / safe
                mk = jnp.min(jnp.where(t, rk, big))
                return t & (rk <= mk + tie_tol * (1.0 + jnp.abs(mk)))

            tied = jax.lax.fori_loop(0, n, narrow, tied)
        return jnp.argmax(tied)  # first remaining row

    def pivot(Binv, xB, col, r):
        pr = col[r]
        Binv_r = Binv[r] / pr
        x_r = xB[r] / pr
        f = jnp.where(rows == r, 0.0, col)
        Binv = (Binv - f[:, None] * Binv_r[None, :]).at[r].set(Binv_r)
        xB = (xB - f * x_r).at[r].set(x_r)
        return Binv, xB

    # initial pivot: z0 enters at the row of the most negative q (lexicographically)
    Binv0 = jnp.eye(n, dtype=dtype)
    basis0 = rows
    col0 = -d
    # the lexicographic minimum of the rows (q_i, e_iᵀ)/d_i: the most negative q_i, ties broken so
    # that every row of the new basis stays lexicographically positive
    r0 = lexmin(q, Binv0, d, jnp.ones(n, bool), jnp.zeros(n, bool))
    Binv1, xB1 = pivot(Binv0, q, col0, r0)
    basis1 = basis0.at[r0].set(2 * n)
    entering1 = n + r0  # complement of w_{r0}
    solved_at_start = jnp.all(q >= 0)

    def cond(c):
        return c[5] == _RUNNING

    def body(c):
        Binv, xB, basis, e, k, _ = c
        col = Binv @ column(e)
        cand = col > piv_tol
        r = lexmin(xB, Binv, col, cand, basis == 2 * n)
        leaving = basis[r]
        Binv, xB = pivot(Binv, xB, col, r)
        basis = basis.at[r].set(e)
        k = k + 1
        status = jnp.where(
            ~jnp.any(cand),
            int(LCPStatus.RAY),
            jnp.where(leaving == 2 * n, int(LCPStatus.SOLVED), jnp.where(k >= max_pivots, int(LCPStatus.MAX_PIVOTS), _RUNNING)),
        )
        # on a ray nothing may change: undo by keeping the old carry
        keep = ~jnp.any(cand)
        Binv = jnp.where(keep, c[0], Binv)
        xB = jnp.where(keep, c[1], xB)
        basis = jnp.where(keep, c[2], basis)
        e = jnp.where(leaving < n, leaving + n, leaving - n)
        return Binv, xB, basis, e, k, status

    init = (Binv1, xB1, basis1, entering1, jnp.asarray(1), jnp.where(solved_at_start, int(LCPStatus.SOLVED), _RUNNING))
    init = jax.tree_util.tree_map(jnp.asarray, init)
    _, _, basis, _, k, status = jax.lax.while_loop(cond, body, init)
    basis = jnp.where(solved_at_start, rows, basis)
    k = jnp.where(solved_at_start, 0, k)
    return basis, status, k


@jax.custom_jvp
def _active_set_solution(M, q, active):
    """``z`` with ``M_AA z_A = −q_A`` and ``z = 0`` off ``A`` (``active`` a boolean mask)."""
    z, _ = _active_set_solve(M, q, active)
    return z


def _active_set_solve(M, q, active):
    n = q.shape[0]
    eye = jnp.eye(n, dtype=M.dtype)
    both = active[:, None] & active[None, :]
    K = jnp.where(both, M, eye * (~active)[:, None])
    lu = jsl.lu_factor(K)
    z = jsl.lu_solve(lu, jnp.where(active, -q, 0.0))
    return z, lu


@_active_set_solution.defjvp
def _active_set_solution_jvp(primals, tangents):
    M, q, active = primals
    dM, dq, _ = tangents
    z, lu = _active_set_solve(M, q, active)
    dz = jsl.lu_solve(lu, jnp.where(active, -(dM @ z + dq), 0.0))
    return z, dz


@full_precision
def lemke(M, q, *, max_pivots: int | None = None, lexicographic: bool = True, return_pivots: bool = False):
    """Solve the LCP ``w = M z + q ≥ 0, z ≥ 0, wᵀz = 0`` by Lemke's complementary pivot method.

    Returns ``(z, w, status)`` with ``status`` an :class:`LCPStatus` code (an integer array under
    ``jit``/``vmap``); unless ``status == SOLVED``, ``z`` and ``w`` are NaN. ``jvp``, ``grad`` and
    ``vmap`` work: the derivative is the implicit one on the final active set (module doc).

    ``max_pivots`` bounds the pivots (default ``max(100, 20 n)``); ``lexicographic=False`` breaks
    ratio ties by the lowest row index instead, which can cycle on degenerate problems (kept to
    demonstrate exactly that). ``return_pivots`` adds the pivot count as a fourth output.
    """
    M, q = _check_input(M, q)
    n = q.shape[0]
    if max_pivots is None:
        max_pivots = max(100, 20 * n)
    Ms, qs = jax.lax.stop_gradient(M), jax.lax.stop_gradient(q)
    finite = jnp.all(jnp.isfinite(Ms)) & jnp.all(jnp.isfinite(qs))
    Mc = jnp.where(finite, Ms, jnp.eye(n, dtype=M.dtype))
    qc = jnp.where(finite, qs, jnp.ones(n, dtype=q.dtype))
    # entries of q within round-off of zero are zero for the pivoting (they are where degenerate
    # problems come from in practice, e.g. ±1e-17 residues of quantities that cancel exactly; the
    # lexicographic rule resolves exact degeneracy, not noise); the solution is then recomputed
    # with the true q and checked
    q_tol = 10 * jnp.finfo(q.dtype).eps * (1.0 + jnp.max(jnp.abs(Mc)) + jnp.max(jnp.abs(qc)))
    qc = jnp.where(jnp.abs(qc) <= q_tol, 0.0, qc)
    basis, status, pivots = _pivot_basis(Mc, qc, int(max_pivots), lexicographic)
    active = jnp.any(basis[None, :] == (n + jnp.arange(n))[:, None], axis=1)
    z = _active_set_solution(M, q, active)
    w = jnp.where(active, 0.0, M @ z + q)
    # the solution check: feasibility to round-off of the data's scale
    eps = jnp.finfo(q.dtype).eps
    scale = 1.0 + jnp.max(jnp.abs(qs)) + jnp.max(jnp.abs(Ms)) * jnp.max(jnp.abs(jax.lax.stop_gradient(z)))
    tol = 1e4 * eps * scale
    ok = (jnp.min(jax.lax.stop_gradient(z)) >= -tol) & (jnp.min(jax.lax.stop_gradient(w)) >= -tol)
    ok = ok & jnp.all(jnp.isfinite(jax.lax.stop_gradient(z)))
    status = jnp.where(status == int(LCPStatus.SOLVED), jnp.where(ok, status, int(LCPStatus.INACCURATE)), status)
    status = jnp.where(finite, status, int(LCPStatus.NONFINITE)).astype(jnp.int32)
    good = status == int(LCPStatus.SOLVED)
    nan = jnp.asarray(jnp.nan, q.dtype)
    z = jnp.where(good, z, nan)
    w = jnp.where(good, w, nan)
    if return_pivots:
        return z, w, status, pivots
    return z, w, status
