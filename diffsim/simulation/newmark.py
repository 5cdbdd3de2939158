"""Newmark-β, HHT-α and generalized-α as diffrax solvers for second-order systems.

The solvers integrate the state ``y = (q, v, w)`` (or ``(q, v)``) of :func:`diffsim.simulate`
with an ordinary diffrax term whose vector field returns ``(q̇, v̇, ẇ)``. They assume

* ``q̇ = v`` (so ``q`` and ``v`` have the same shape, ``nq == nv``: no quaternions) — the
  vector field's first output is never evaluated for the update;
* ``v̇ = a(t, q, v)`` is the vector field's second output;
* ``ẇ`` (third output, may be ``None``) does not depend on ``w``; ``w`` is integrated with the
  trapezoidal rule ``w₁ = w₀ + h/2 (ẇ₀ + ẇ₁)``;
* forward integration (``t1 > t0``).

Scheme (Arnold & Brüls 2007 form of Chung & Hulbert's generalized-α for ``q̈ = a(t, q, q̇)``),
with ``â`` an acceleration-like variable carried in the solver state::

    q₁ = q₀ + h v₀ + h² ((½ − β) â₀ + β â₁)
    v₁ = v₀ + h ((1 − γ) â₀ + γ â₁)
    (1 − α_m) â₁ + α_m â₀ = (1 − α_f) a₁ + α_f a₀,      a₁ = a(t₁, q₁, v₁)

The unknown is the true acceleration ``a₁``, found by Newton on ``r(a₁) = a₁ − a(t₁, q₁(a₁),
v₁(a₁))``; ``∂r/∂a₁ = I − β' h² ∂a/∂q − γ' h ∂a/∂v`` with ``β' = β c``, ``γ' = γ c`` and
``c = (1 − α_f)/(1 − α_m)``. For linear problems this is exactly Chung–Hulbert (and HHT); it is
second order when ``γ = ½ − α_m + α_f`` (which all three parameter choices below satisfy, Newmark
only for ``γ = ½``).

* :class:`Newmark` (``α_m = α_f = 0``, ``â = a``): default β = ¼, γ = ½ (average acceleration,
  trapezoidal, energy-conserving for linear undamped systems, ρ∞ = 1).
* :class:`HHT`: ``α ∈ [−1/3, 0]``; ``α_m = 0``, ``α_f = −α``, ``γ = ½ − α``, ``β = ¼(1 − α)²``;
  spectral radius at infinity ``(1 + α)/(1 − α)``.
* :class:`GeneralizedAlpha`: from ρ∞ ∈ [0, 1]: ``α_m = (2ρ∞ − 1)/(ρ∞ + 1)``,
  ``α_f = ρ∞/(ρ∞ + 1)``, ``γ = ½ − α_m + α_f``, ``β = ¼(1 − α_m + α_f)²``.

Newton: a ``lax.while_loop`` of at most ``max_newton`` updates, stopped when the RMS of
``r / (tol + tol·|a|)`` or of the last increment ``δ / (tol + tol·|a|)`` is ≤ 1
(``tol = newton_tol``; the increment test keeps stiff problems, whose residual has a round-off
floor ~ eps·ω²|q|, from failing), wrapped in :func:`jax.lax.custom_root`, so derivatives (forward
and reverse, e.g. ``jax.grad`` through ``diffeqsolve`` with ``RecursiveCheckpointAdjoint``) come
from the implicit function theorem with the exact Jacobian, whichever Jacobian the iteration used.
``jacobian='exact'`` re-evaluates ``jax.jacfwd`` of the residual at every iterate (full Newton,
quadratic convergence, dense ``jnp.linalg.solve``); a callable ``jac(t, q, v, h, beta, gamma) ->
[n, n]`` approximating ``∂r/∂a₁ ≈ I − beta h² ∂a/∂q − gamma h ∂a/∂v`` (``beta``, ``gamma`` are
the *effective* β', γ' above) is evaluated once per step at the predictor ``a₁ = a₀`` and
LU-factorised once (simplified Newton, linear convergence).
A step whose iteration has not converged after ``max_newton`` updates returns
``RESULTS.nonlinear_max_steps_reached`` (diffrax 0.7.2 has no ``implicit_nonconvergence``) and an
infinite error estimate: an adaptive controller rejects the step and shrinks it, a constant step
ends the solve with that result.

Error estimate (Zienkiewicz & Xie 1991, generalised to the shifted acceleration ``â``, which
approximates ``a(t + Δ h)``, ``Δ = α_m − α_f``)::

    e_q = h² (β + Δ/2 − 1/6)(â₁ − â₀),     e_v = h (γ + Δ − ½)(â₁ − â₀),     e_w = 0

``e_q`` is the leading O(h³) local error of ``q`` (for Newmark: ``h²(β − 1/6)(a₁ − a₀)``).
``e_v`` is the leading local error of ``v`` only for first-order parameter sets (Newmark with
γ ≠ ½, O(h²)); for the second-order sets it vanishes identically and the step size is controlled
by ``q``'s estimate. ``order = 2`` and ``error_order = 3`` for second-order parameter sets
(``1`` and ``2`` otherwise).

Dense output: cubic Hermite on each step — ``q`` with ``v`` at both ends, ``v`` with ``a``,
``w`` with ``ẇ`` — so ``SaveAt(ts=...)`` and :class:`diffrax.Event` work.

Solver state: ``(a, â, ẇ, n_newton)`` at the current time; ``n_newton`` counts the Newton updates
of the accepted steps (read it with ``SaveAt(solver_state=True)``: ``sol.solver_state[3]``).
"""

from __future__ import annotations

from typing import Callable, ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
from diffrax import RESULTS
from diffrax import ThirdOrderHermitePolynomialInterpolation

__all__ = ["GeneralizedAlpha", "HHT", "Newmark", "AbstractNewmarkFamily"]


def _split(y):
    if not isinstance(y, (tuple, list)) or len(y) not in (2, 3):
        raise ValueError("Newmark-family solvers need a state y = (q, v) or (q, v, w)")
    q, v = y[0], y[1]
    w = y[2] if len(y) == 3 else None
    if jnp.shape(q) != jnp.shape(v):
        raise ValueError(
            f"Newmark-family solvers assume q̇ = v (nq == nv), got q {jnp.shape(q)} and v {jnp.shape(v)}"
        )
    return q, v, w


def _join(y_like, q, v, w):
    return (q, v, w) if len(y_like) == 3 else (q, v)


def _tmap(f, *xs):
    return jax.tree_util.tree_map(f, *xs)


class AbstractNewmarkFamily(diffrax.AbstractAdaptiveSolver):
    """Common machinery of :class:`Newmark`, :class:`HHT` and :class:`GeneralizedAlpha`."""

    term_structure: ClassVar = diffrax.AbstractTerm
    interpolation_cls: ClassVar[Callable[..., ThirdOrderHermitePolynomialInterpolation]] = (
        ThirdOrderHermitePolynomialInterpolation
    )

    # (α_m, α_f, β, γ) as Python floats
    def _coefficients(self) -> tuple[float, float, float, float]:
        raise NotImplementedError

    # fields every subclass declares: newton_tol, max_newton, jacobian

    def _second_order(self) -> bool:
        am, af, _, gamma = self._coefficients()
        return abs(gamma - (0.5 - am + af)) < 1e-12

    def order(self, terms):
        return 2 if self._second_order() else 1

    def error_order(self, terms):
        return self.order(terms) + 1

    def init(self, terms, t0, t1, y0, args):
        q0, v0, w0 = _split(y0)
        a0, wd0 = self._accel(terms, t0, y0, args)
        return a0, a0, wd0, jnp.zeros((), jnp.int32)

    def _accel(self, terms, t, y, args):
        out = terms.vf(t, y, args)
        a = jnp.asarray(out[1])
        wd = None if len(y) == 2 or y[2] is None else _tmap(jnp.asarray, out[2])
        return a, wd

    def func(self, terms, t0, y0, args):
        return terms.vf(t0, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        am, af, beta, gamma = self._coefficients()
        q0, v0, w0 = _split(y0)
        a0, ah0, wd0, count = solver_state
        if made_jump is not False:  # a discontinuity at t0: restart from the true acceleration
            a_new, wd_new = self._accel(terms, t0, y0, args)
            a0 = jnp.where(made_jump, a_new, a0)
            ah0 = jnp.where(made_jump, a_new, ah0)
            wd0 = _tmap(lambda x, y: jnp.where(made_jump, x, y), wd_new, wd0)
        h = jnp.asarray(t1 - t0, jnp.result_type(q0, v0, a0))  # keep y's dtype (float32 stays float32)
        c = (1.0 - af) / (1.0 - am)
        tol = self.newton_tol
        shape, n = a0.shape, a0.size

        def ahat(a):
            return ((1.0 - af) * a + af * a0 - am * ah0) / (1.0 - am)

        def predict(a):
            ah = ahat(a)
            q1 = q0 + h * v0 + h**2 * ((0.5 - beta) * ah0 + beta * ah)
            v1 = v0 + h * ((1.0 - gamma) * ah0 + gamma * ah)
            return q1, v1

        def residual(a):
            q1, v1 = predict(a)
            a_f, _ = self._accel(terms, t1, _join(y0, q1, v1, w0), args)
            return a - a_f

        def scaled_norm(r, a):
            return jnp.sqrt(jnp.mean((r / (tol + tol * jnp.abs(a))) ** 2))

        guess = a0
        if self.jacobian == "exact":
            lu = None
        elif callable(self.jacobian):
            qp, vp = predict(guess)
            J = jnp.asarray(self.jacobian(t1, qp, vp, h, beta * c, gamma * c)).reshape(n, n)
            lu = jsl.lu_factor(jax.lax.stop_gradient(J))
        else:
            raise ValueError(f"jacobian must be 'exact' or a callable, got {self.jacobian!r}")
        max_newton = self.max_newton

        def newton(res, a_init):
            def delta(a, r):
                if lu is None:
                    Jx = jax.jacfwd(lambda x: res(x.reshape(shape)).reshape(n))(a.reshape(n))
                    d = jnp.linalg.solve(Jx, -r.reshape(n))
                else:
                    d = jsl.lu_solve(lu, -r.reshape(n))
                return d.reshape(shape)

            def cond(s):
                a, r, k, conv = s
                return (k < max_newton) & ~conv & jnp.all(jnp.isfinite(a))

            def body(s):
                a, r, k, _ = s
                d = delta(a, r)
                a = a + d
                r = res(a)
                # converged: the Newton increment (the error estimate of the previous iterate,
                # robust against the residual's round-off floor in stiff problems) or the residual
                # itself is below tolerance
                conv = (scaled_norm(d, a) <= 1.0) | (scaled_norm(r, a) <= 1.0)
                return a, r, k + 1, conv & jnp.all(jnp.isfinite(a))

            r0 = res(a_init)
            init = (a_init, r0, jnp.zeros((), jnp.int32), scaled_norm(r0, a_init) <= 1.0)
            a, r, k, conv = jax.lax.while_loop(cond, body, init)
            # float aux: custom_root's JVP rule gives integer/bool aux outputs non-float0 tangents
            return a, jnp.stack([k.astype(a.dtype), conv.astype(a.dtype)])

        def tangent_solve(g, b):
            Jg = jax.jacfwd(lambda x: g(x.reshape(shape)).reshape(n))(b.reshape(n))
            return jnp.linalg.solve(Jg, b.reshape(n)).reshape(shape)

        a1, aux = jax.lax.custom_root(residual, guess, newton, tangent_solve, has_aux=True)
        aux = jax.lax.stop_gradient(aux)
        k, converged = aux[0].astype(jnp.int32), aux[1] > 0.5

        q1, v1 = predict(a1)
        ah1 = ahat(a1)
        if w0 is not None:
            _, wd1 = self._accel(terms, t1, _join(y0, q1, v1, w0), args)
            w1 = _tmap(lambda w, d0, d1: w + 0.5 * h * (d0 + d1), w0, wd0, wd1)
        else:
            wd1, w1 = None, None
        y1 = _join(y0, q1, v1, w1)

        dah = ah1 - ah0
        delta_shift = am - af
        e_q = h**2 * (beta + 0.5 * delta_shift - 1.0 / 6.0) * dah
        c_v = gamma + delta_shift - 0.5
        c_v = 0.0 if abs(c_v) < 1e-12 else c_v  # exactly 0 for second-order parameter sets
        e_v = h * c_v * dah
        e_w = None if w0 is None else _tmap(jnp.zeros_like, w0)
        y_error = _join(y0, e_q, e_v, e_w)
        y_error = _tmap(lambda e: jnp.where(converged, e, jnp.inf), y_error)
        result = RESULTS.where(converged, RESULTS.successful, RESULTS.nonlinear_max_steps_reached)

        k0 = _join(y0, h * v0, h * a0, None if w0 is None else _tmap(lambda d: h * d, wd0))
        k1 = _join(y0, h * v1, h * a1, None if w0 is None else _tmap(lambda d: h * d, wd1))
        dense_info = dict(y0=y0, y1=y1, k0=k0, k1=k1)
        new_state = (a1, ah1, wd1, count + k)
        return y1, y_error, dense_info, new_state, result


_JAC_DOC = """
    newton_tol: relative and absolute tolerance of the Newton residual (scaled RMS ≤ 1).
    max_newton: maximum number of Newton updates per step.
    jacobian: ``'exact'`` (full Newton, ``jax.jacfwd`` of the residual at each iterate) or a
        callable ``jac(t, q, v, h, beta, gamma) -> [n, n]`` approximating
        ``I − beta h² ∂a/∂q − gamma h ∂a/∂v`` (effective ``beta``, ``gamma``; see the module
        docstring), evaluated once per step (simplified Newton).
"""


class Newmark(AbstractNewmarkFamily):
    __doc__ = (
        "Newmark-β (implicit; ``beta=0.25, gamma=0.5``: average acceleration / trapezoidal,"
        " second order, no numerical dissipation).\n\n    Fields:\n    beta, gamma: Newmark"
        " parameters (second order only for ``gamma = 0.5``)." + _JAC_DOC
    )

    beta: float = eqx.field(default=0.25, static=True)
    gamma: float = eqx.field(default=0.5, static=True)
    newton_tol: float = eqx.field(default=1e-10, static=True)
    max_newton: int = eqx.field(default=20, static=True)
    jacobian: str | Callable = "exact"

    def __check_init__(self):
        if not (self.beta > 0 and self.gamma > 0):
            raise ValueError("Newmark needs beta > 0 (implicit) and gamma > 0")

    def _coefficients(self):
        return 0.0, 0.0, float(self.beta), float(self.gamma)


class HHT(AbstractNewmarkFamily):
    __doc__ = (
        "Hilber–Hughes–Taylor α (second order; spectral radius at infinity (1+α)/(1−α)).\n\n"
        "    Fields:\n    alpha: in [−1/3, 0] (0: average-acceleration Newmark)." + _JAC_DOC
    )

    alpha: float = eqx.field(default=-0.05, static=True)
    newton_tol: float = eqx.field(default=1e-10, static=True)
    max_newton: int = eqx.field(default=20, static=True)
    jacobian: str | Callable = "exact"

    def __check_init__(self):
        if not (-1.0 / 3.0 <= self.alpha <= 0.0):
            raise ValueError(f"HHT alpha must lie in [-1/3, 0], got {self.alpha}")

    def _coefficients(self):
        a = float(self.alpha)
        return 0.0, -a, 0.25 * (1.0 - a) ** 2, 0.5 - a


class GeneralizedAlpha(AbstractNewmarkFamily):
    __doc__ = (
        "Generalized-α (Chung & Hulbert 1993; Arnold & Brüls 2007 ODE form; second order;"
        " spectral radius at infinity ``rho_inf``).\n\n    Fields:\n    rho_inf: in [0, 1]."
        + _JAC_DOC
    )

    rho_inf: float = eqx.field(default=0.9, static=True)
    newton_tol: float = eqx.field(default=1e-10, static=True)
    max_newton: int = eqx.field(default=20, static=True)
    jacobian: str | Callable = "exact"

    def __check_init__(self):
        if not (0.0 <= self.rho_inf <= 1.0):
            raise ValueError(f"rho_inf must lie in [0, 1], got {self.rho_inf}")

    def _coefficients(self):
        r = float(self.rho_inf)
        am = (2.0 * r - 1.0) / (r + 1.0)
        af = r / (r + 1.0)
        return am, af, 0.25 * (1.0 - am + af) ** 2, 0.5 - am + af
