"""Parameter transforms for fitting: the optimiser works on an unconstrained ``θ``, the system on
the physical value ``p = forward(θ)``.

* :class:`Identity` — any real value;
* :class:`Log` — positive values (``p = exp θ``): stiffness, damping, masses, lengths, boundary springs
  (``k_rot_*``, ``k_lat_*``) and tip inertias;
* :class:`Logit` — values in an open or half-open interval ``(lo, hi]`` (``p = lo + (hi − lo) σ(θ)``):
  restitution in (0, 1];
* :class:`LogCholeskyInertia` — the ten inertial parameters of one rigid body (mass, centre of
  mass, rotational inertia) through the log-Cholesky factor of the 4×4 pseudo-inertia
  ``J = [[Σ, h], [hᵀ, m]]``, ``Σ = ½ tr(Ī) 1 − Ī``, ``h = m c`` (Rucker & Wensing 2022, eq. 9):
  every ``θ`` ∈ R¹⁰ gives a physically consistent body (``J ≻ 0``: positive mass, inertia
  positive definite and satisfying the triangle inequalities).

:func:`default_transform` picks one from a parameter's name and value.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..model.params import is_nonnegative


class TransformError(ValueError):
    """A value outside a transform's domain."""


class AbstractTransform(eqx.Module):
    """``forward(θ) = p`` (unconstrained → physical) and its inverse."""

    @abc.abstractmethod
    def forward(self, theta):
        """Physical value from the unconstrained one."""

    @abc.abstractmethod
    def inverse(self, p):
        """Unconstrained value from the physical one (raises :class:`TransformError` outside the
        domain when ``p`` is concrete)."""

    def describe(self) -> str:
        return type(self).__name__.lower()


class Identity(AbstractTransform):
    def forward(self, theta):
        return theta

    def inverse(self, p):
        return jnp.asarray(p)

    def describe(self):
        return "identity"


class Log(AbstractTransform):
    """``p = exp θ`` for ``p > 0``."""

    def forward(self, theta):
        return jnp.exp(theta)

    def inverse(self, p):
        p = jnp.asarray(p)
        if not isinstance(p, jax.core.Tracer) and not np.all(np.asarray(p) > 0):
            raise TransformError(f"value {np.asarray(p).tolist()} is not positive (log transform)")
        return jnp.log(p)

    def describe(self):
        return "log (positive)"


class Logit(AbstractTransform):
    """``p = lo + (hi − lo) σ(θ)`` for ``lo < p < hi``; ``p = hi`` exactly (e.g. restitution 1) is
    mapped just inside, ``hi − 1e-9 (hi − lo)``."""

    lo: float = eqx.field(static=True, default=0.0)
    hi: float = eqx.field(static=True, default=1.0)

    def forward(self, theta):
        return self.lo + (self.hi - self.lo) * jax.nn.sigmoid(theta)

    def inverse(self, p):
        p = jnp.asarray(p)
        if not isinstance(p, jax.core.Tracer):
            pv = np.asarray(p)
            if not np.all((pv > self.lo) & (pv <= self.hi)):
                raise TransformError(f"value {pv.tolist()} is outside ({self.lo}, {self.hi}] (logit transform)")
        u = jnp.clip((p - self.lo) / (self.hi - self.lo), 1e-12, 1.0 - 1e-9)
        return jnp.log(u) - jnp.log1p(-u)

    def describe(self):
        return f"logit ({self.lo}, {self.hi}]"


class LogCholeskyInertia(AbstractTransform):
    """The ten inertial parameters ``[m, c (3), Ī (6: xx, yy, zz, xy, xz, yz about the COM)]`` as
    ``θ = [α, d1, d2, d3, s12, s23, s13, t1, t2, t3]`` with the upper-triangular factor ``U`` of
    ``J = U Uᵀ`` (diagonal ``exp``): Rucker & Wensing, "Smooth parameterization of rigid-body
    inertia", RA-L 2022, eq. 9."""

    def forward(self, theta):
        a, d1, d2, d3, s12, s23, s13, t1, t2, t3 = (theta[k] for k in range(10))
        U = jnp.exp(a) * jnp.array([
            [jnp.exp(d1), s12, s13, t1],
            [0.0, jnp.exp(d2), s23, t2],
            [0.0, 0.0, jnp.exp(d3), t3],
            [0.0, 0.0, 0.0, 1.0],
        ])
        J = U @ U.T
        return pseudo_inertia_to_params(J)

    def inverse(self, p):
        J = params_to_pseudo_inertia(jnp.asarray(p))
        if not isinstance(J, jax.core.Tracer) and np.min(np.linalg.eigvalsh(np.asarray(J))) <= 0:
            raise TransformError("the inertial parameters are not physically consistent (pseudo-inertia not "
                                 "positive definite)")
        # J = U Uᵀ with U upper triangular: flip, Cholesky (lower), flip back
        P = jnp.eye(4)[::-1]
        L = jnp.linalg.cholesky(P @ J @ P)
        U = P @ L @ P
        a = jnp.log(U[3, 3])
        U = U / U[3, 3]
        return jnp.array([a, jnp.log(U[0, 0]), jnp.log(U[1, 1]), jnp.log(U[2, 2]), U[0, 1], U[1, 2], U[0, 2],
                          U[0, 3], U[1, 3], U[2, 3]])

    def describe(self):
        return "log-Cholesky pseudo-inertia"


def _sym(v):
    xx, yy, zz, xy, xz, yz = (v[k] for k in range(6))
    return jnp.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def params_to_pseudo_inertia(p):
    """``[m, c, Ī_com (xx yy zz xy xz yz)]`` → ``J`` (4×4). The inertia about the body origin is
    ``I_o = Ī + m (|c|² 1 − c cᵀ)``; ``Σ = ½ tr(I_o) 1 − I_o``, ``h = m c``."""
    m, c, Ic = p[0], p[1:4], _sym(p[4:10])
    Io = Ic + m * (jnp.dot(c, c) * jnp.eye(3) - jnp.outer(c, c))
    S = 0.5 * jnp.trace(Io) * jnp.eye(3) - Io
    h = m * c
    return jnp.block([[S, h[:, None]], [h[None, :], m[None, None]]])


def pseudo_inertia_to_params(J):
    """Inverse of :func:`params_to_pseudo_inertia`."""
    S, h, m = J[:3, :3], J[:3, 3], J[3, 3]
    Io = jnp.trace(S) * jnp.eye(3) - S
    c = h / m
    Ic = Io - m * (jnp.dot(c, c) * jnp.eye(3) - jnp.outer(c, c))
    return jnp.concatenate([m[None], c, jnp.array([Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2], Ic[1, 2]])])


def default_transform(name: str, value) -> AbstractTransform:
    """Log for quantities that must be positive (stiffness, damping, masses, …), logit (0, 1] for
    a restitution coefficient, identity otherwise (positions, axes, initial state, gravity,
    mode-shape coefficients)."""
    if name.endswith(".c_r") or name.endswith("restitution"):
        return Logit(0.0, 1.0)
    # a mode family's shape coefficients are signed, its physical data positive (is_nonnegative)
    return Log() if is_nonnegative(name) and np.all(np.asarray(value) > 0) else Identity()
