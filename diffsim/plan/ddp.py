"""Box-constrained iLQR/DDP (Tassa, Erez & Todorov 2012, "Synthesis and stabilization of complex
behaviors through online trajectory optimization"; Tassa, Mansard & Todorov 2014,
"Control-limited differential dynamic programming").

Each iteration, at the current trajectory ``(x̄, ū)``:

1. Local models (recomputed only when a step was accepted): ``A_k, B_k`` (exact first
   derivatives of the RK4 step, forward mode, in the tangent space ``δx = x ⊖ x̄``) and a
   quadratic model of each stage cost in ``(δx, u)`` (:func:`.problem.quadratic_model`), term by
   term: a least-squares term ``Σ w_i r_i²`` (:class:`.costs.LeastSquares`) gets the Gauss–Newton
   Hessian ``2 Jᵀ W J`` (``J = ∂r/∂(δx, u)``, forward mode) — iLQR with Gauss–Newton cost Hessians,
   as Crocoddyl's FDDP does for its residual costs, and far cheaper than the exact Hessian; any
   other (plain callable) term gets its exact Hessian projected onto the positive semidefinite
   cone (eigenvalues clipped at 0, as trajax's iLQR does): a task-space error far from its target
   has an indefinite Hessian (the kinematics' curvature times the residual), which would otherwise
   need a large ``μ`` and crush the low-curvature directions. The second derivatives of the
   dynamics are dropped (iLQR: Gauss–Newton on the dynamics). The gradients are exact, so the
   fixed point is a stationary point of ``J``. With the running cost integrated over each step
   (``quadrature="rk4"``) the cost's residuals at the step's stage states are differentiated
   through the stages' Jacobians, which the step's forward-mode pass gives
   (:meth:`.problem.Problem.local_models`).
2. Backward pass (Riccati), from ``V_x = ℓ_f,x``, ``V_xx = ℓ_f,xx``::

       Q_x  = ℓ_x  + Aᵀ V_x'          Q_u  = ℓ_u  + Bᵀ V_x'
       Q_xx = ℓ_xx + Aᵀ V_xx' A       Q_uu = ℓ_uu + Bᵀ V_xx' B      Q_ux = ℓ_ux + Bᵀ V_xx' A

   with Levenberg–Marquardt regularisation ``Q̃_uu = Q_uu + μ I``. The feedforward ``k`` minimises
   ``½ δuᵀ Q̃_uu δu + Q_uᵀ δu`` over the box ``lo − ū ≤ δu ≤ hi − ū`` (projected Newton, Tassa 2014
   Algorithm 3, :func:`box_qp`); the feedback ``K = −Q̃_uu,ff⁻¹ Q_ux,f`` on the free coordinates and
   zero on the clamped ones (Tassa 2014 eq. 6). Then (Tassa 2012 eq. 11)::

       V_x  = Q_x  + Kᵀ Q_uu k + Kᵀ Q_u + Q_uxᵀ k
       V_xx = Q_xx + Kᵀ Q_uu K + Kᵀ Q_ux + Q_uxᵀ K

   A Cholesky failure (``Q̃_uu`` not positive definite) rejects the pass: ``μ`` grows.
3. Forward pass on the closed loop ``u = clip(ū + α k + K (x ⊖ x̄))`` with a backtracking line
   search ``α = 1, ½, ¼, …``, accepted when the actual decrease is at least ``c = 0.1`` of the
   expected one ``ΔJ(α) = −(α Σ kᵀQ_u + ½ α² Σ kᵀQ_uu k)`` (Armijo); a non-finite rollout is
   rejected. Accepted: ``μ ← max(μ/10, μ_min)``; rejected: ``μ ← 10 μ`` (Crocoddyl's schedule);
   ``μ > μ_max`` ends the solve as FAILED with the best (current) iterate.
4. Converged when the expected decrease of the full step ``ΔJ(1) ≤ tol·|J|`` with the
   regularisation negligible (``μ ≤ 10⁻⁶ max diag Q_uu``: a large ``μ`` shrinks the step and the
   expected decrease with it, far from an optimum).

Everything runs in one ``lax.while_loop`` (jit-, vmap-able); the horizon in ``lax.scan``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from .problem import Problem, _sym
from .result import PlanStatus, fill_history, make_plan

MU_MIN, MU_MAX, MU_FACTOR = 1e-9, 1e9, 10.0
MU_CONVERGED = 1e-6  # convergence is declared only with μ ≤ 1e-6 of Q_uu's scale
ARMIJO = 0.1  # accepted fraction of the expected decrease
LINE_SEARCH_STEPS = 10  # α = 1 … 2⁻⁹
BOX_QP_ITERS = 30
BOX_QP_STEPS = 20


def _free_block(H, free):
    """``H`` on the free rows/columns, identity on the clamped ones (so one Cholesky factor
    serves the free block)."""
    ff = free[:, None] & free[None, :]
    return jnp.where(ff, H, jnp.eye(H.shape[0], dtype=H.dtype))


def box_qp(H, g, lo, hi, x0):
    """``argmin ½ xᵀHx + gᵀx`` s.t. ``lo ≤ x ≤ hi`` by projected Newton (Tassa 2014, Algorithm 3):
    the clamped set ``{x_i = lo_i, ∂_i > 0} ∪ {x_i = hi_i, ∂_i < 0}``, a Newton step on the free
    coordinates, an Armijo search along the projected path. Returns ``x``, the free mask at ``x``
    and the Cholesky factor of ``H``'s free block (NaN when that block is not positive definite)."""
    dtype = H.dtype
    eps = jnp.finfo(dtype).eps

    def f(x):
        return g @ x + 0.5 * x @ H @ x

    def newton(x):
        grad = g + H @ x
        clamped = ((x <= lo) & (grad > 0)) | ((x >= hi) & (grad < 0))
        free = ~clamped
        L = jnp.linalg.cholesky(_free_block(H, free))
        dx = -jsl.cho_solve((L, True), jnp.where(free, grad, 0.0))
        return grad, free, L, dx

    def cond(s):
        return (s[1] < BOX_QP_ITERS) & ~s[2]

    def body(s):
        x, i, _ = s
        grad, free, L, dx = newton(x)
        fx = f(x)

        def ls_cond(c):
            _, _, ok, j = c
            return ~ok & (j < BOX_QP_STEPS)

        def ls_body(c):
            step, _, _, j = c
            xn = jnp.clip(x + step * dx, lo, hi)
            ok = f(xn) - fx <= 0.1 * grad @ (xn - x)
            return 0.5 * step, xn, ok, j + 1

        _, xn, ok, _ = jax.lax.while_loop(ls_cond, ls_body, (jnp.ones((), dtype), x, False, 0))
        xn = jnp.where(ok, xn, x)
        small = jnp.max(jnp.abs(jnp.where(free, grad, 0.0))) <= 1e3 * eps * (1.0 + jnp.max(jnp.abs(g)))
        stalled = ~ok | (jnp.abs(fx - f(xn)) <= 10 * eps * (1.0 + jnp.abs(fx)))
        done = small | stalled | ~jnp.all(jnp.isfinite(L))
        return xn, i + 1, done

    x, _, _ = jax.lax.while_loop(cond, body, (jnp.clip(x0, lo, hi), 0, False))
    _, free, L, _ = newton(x)
    return x, free, L


def backward_pass(problem: Problem, derivs, us, mu, k_warm):
    """Riccati recursion (module docstring, step 2): ``k`` [N, nu], ``K`` [N, nu, 2nv],
    ``Σ kᵀQ_u``, ``Σ kᵀQ_uu k``, whether every ``Q̃_uu`` was positive definite, and the scale of
    ``Q_uu`` (its largest diagonal entry over the horizon)."""
    A, B, g, H, gf, Hf = derivs
    nx = 2 * problem.nv
    nu = problem.nu
    eye = jnp.eye(nu, dtype=us.dtype)

    def body(carry, inp):
        Vx, Vxx, ok = carry
        Ak, Bk, gk, Hk, uk, kw = inp
        lx, lu = gk[:nx], gk[nx:]
        lxx, luu, lux = Hk[:nx, :nx], Hk[nx:, nx:], Hk[nx:, :nx]
        Qx, Qu = lx + Ak.T @ Vx, lu + Bk.T @ Vx
        Qxx = lxx + Ak.T @ Vxx @ Ak
        Quu = _sym(luu + Bk.T @ Vxx @ Bk)
        Qux = lux + Bk.T @ Vxx @ Ak
        Qr = Quu + mu * eye
        if problem.bounded:
            k, free, L = box_qp(Qr, Qu, problem.lo - uk, problem.hi - uk, kw)
        else:
            free = jnp.ones(nu, bool)
            L = jnp.linalg.cholesky(Qr)
            k = -jsl.cho_solve((L, True), Qu)
        K = jnp.where(free[:, None], -jsl.cho_solve((L, True), Qux), 0.0)
        Vx = Qx + K.T @ Quu @ k + K.T @ Qu + Qux.T @ k
        Vxx = _sym(Qxx + K.T @ Quu @ K + K.T @ Qux + Qux.T @ K)
        ok = ok & jnp.all(jnp.isfinite(L)) & jnp.all(jnp.isfinite(k))
        return (Vx, Vxx, ok), (k, K, k @ Qu, k @ Quu @ k, jnp.max(jnp.abs(jnp.diag(Quu))))

    (_, _, ok), (k, K, d1, d2, s) = jax.lax.scan(body, (gf, Hf, jnp.asarray(True)), (A, B, g, H, us, k_warm),
                                                 reverse=True)
    return k, K, jnp.sum(d1), jnp.sum(d2), ok, jnp.max(s)


def closed_loop(problem: Problem, qs, vs, us, k, K, alpha):
    """Forward pass: ``u_k = clip(ū_k + α k_k + K_k (x_k ⊖ x̄_k))``, ``x_{k+1} = F(x_k, u_k)``."""

    knot = problem.quadrature == "knot"  # else each step gives its own (stage-averaged) running cost

    def body(x, inp):
        i, qb, vb, ub, kk, KK = inp
        q, v = x
        u = problem.clip(ub + alpha * kk + KK @ problem.deviation(qb, vb, q, v))
        x1, c = (problem.step(i, q, v, u), 0.0) if knot else problem.step_cost(i, q, v, u)
        return x1, (x1, u, c)

    ks = jnp.arange(problem.horizon, dtype=problem.dt.dtype)
    _, ((qn, vn), un, run) = jax.lax.scan(body, (qs[0], vs[0]), (ks, qs[:-1], vs[:-1], us, k, K))
    qn, vn = jnp.concatenate([qs[:1], qn]), jnp.concatenate([vs[:1], vn])
    J = problem.trajectory_cost(qn, vn, un) if knot else jnp.sum(run) + problem.terminal_cost(qn[-1], vn[-1])
    return qn, vn, un, jnp.where(jnp.isfinite(J), J, jnp.inf)


def solve_ddp(problem: Problem, u_init, max_iter: int, tol):
    """BoxDDP / iLQR (module docstring) from the controls ``u_init`` [N, nu]; returns a Plan."""
    dtype = u_init.dtype
    tiny = jnp.finfo(dtype).tiny
    us = problem.clip(u_init)
    qs, vs, J0 = problem.rollout_cost(us)
    history = jnp.full(max_iter + 1, J0, dtype)
    finite0 = jnp.isfinite(J0)
    status0 = jnp.where(finite0, PlanStatus.MAX_ITER, PlanStatus.FAILED).astype(jnp.int32)

    def cond(s):
        return (s["it"] < max_iter) & ~s["done"]

    def body(s):
        qs, vs, us, J, mu = s["qs"], s["vs"], s["us"], s["J"], s["mu"]
        k, K, d1, d2, ok, quu_scale = backward_pass(problem, s["derivs"], us, mu, s["k"])
        expected = -(d1 + 0.5 * d2)
        # a large μ shrinks the step and with it the expected decrease: that is no optimum
        converged = ok & (expected <= tol * jnp.abs(J) + tiny) & (mu <= MU_CONVERGED * quu_scale + MU_MIN)
        search = ok & ~converged

        def ls_cond(c):
            return search & ~c[-1] & (c[0] < LINE_SEARCH_STEPS)

        def ls_body(c):
            i = c[0]
            alpha = jnp.asarray(0.5, dtype) ** i
            qn, vn, un, Jn = closed_loop(problem, qs, vs, us, k, K, alpha)
            exp_a = -(alpha * d1 + 0.5 * alpha**2 * d2)
            accept = (J - Jn >= ARMIJO * exp_a) & jnp.isfinite(Jn) & (Jn <= J)
            return i + 1, qn, vn, un, Jn, accept

        _, qn, vn, un, Jn, accepted = jax.lax.while_loop(ls_cond, ls_body, (0, qs, vs, us, J, jnp.asarray(False)))
        mu_new = jnp.where(accepted, jnp.maximum(mu / MU_FACTOR, MU_MIN), mu * MU_FACTOR)
        mu_new = jnp.where(converged, mu, mu_new)
        failed = ~converged & ~accepted & (mu_new > MU_MAX)
        J_new = jnp.where(accepted, Jn, J)
        it = s["it"] + 1
        status = jnp.where(converged, PlanStatus.CONVERGED, jnp.where(failed, PlanStatus.FAILED, s["status"]))

        def pick(a, b):
            return jnp.where(accepted, a, b)

        qs, vs, us = pick(qn, qs), pick(vn, vs), pick(un, us)
        # the local models change only with the trajectory (a rejected step keeps them)
        derivs = jax.lax.cond(accepted & (it < max_iter), lambda *x: problem.local_models(*x), lambda *_: s["derivs"], qs, vs, us)
        return dict(qs=qs, vs=vs, us=us, derivs=derivs, J=J_new, mu=mu_new, it=it,
                    done=converged | failed, status=status.astype(jnp.int32),
                    k=jnp.where(ok, k, s["k"]), history=fill_history(s["history"], it, J_new))

    s0 = dict(qs=qs, vs=vs, us=us, derivs=problem.local_models(qs, vs, us), J=J0, mu=jnp.asarray(MU_MIN, dtype), it=jnp.asarray(0), done=~finite0,
              status=status0, k=jnp.zeros_like(us), history=history)
    s = jax.lax.while_loop(cond, body, s0)
    return make_plan(problem, s["us"], s["qs"], s["vs"], s["J"], s["it"], s["status"], s["history"], "ddp")
