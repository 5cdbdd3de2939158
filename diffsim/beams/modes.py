"""Assumed-mode shapes for Euler–Bernoulli and Timoshenko beams.

Coordinates and units (one convention for the whole module):

* ``eta = x / L`` in [0, 1], from the root (``eta = 0``) to the tip (``eta = 1``).
* ``W(eta)``: transverse displacement per unit modal coordinate [m per unit coordinate].
* ``Theta(eta)``: cross-section rotation **times L**, so that it is measured in the same units
  as ``dW/deta``; for an Euler–Bernoulli beam ``Theta == dW`` (shear strain ``dW - Theta = 0``).
  The physical rotation is ``psi = Theta / L`` [rad per unit coordinate].
* Derivatives are with respect to ``eta``: ``dW = dW/deta``, ``ddW = d²W/deta²``,
  ``dTheta = dTheta/deta``. Physical: ``w' = dW / L``, ``psi' = dTheta / L**2``.

Every shape family is an ``eqx.Module`` whose float fields are differentiable leaves and whose
:meth:`ModeShapes.fields` is pure ``jnp`` (works under ``jit``, ``grad``, ``vmap``). The
constructors that solve frequency equations (:func:`euler_bernoulli_modes`,
:func:`timoshenko_modes`) run once in NumPy/SciPy at model-build time and are not traceable;
the Modules they return are.

Boundary conditions are two letters, root then tip, from ``c`` (clamped: ``W = 0``,
``Theta = 0``), ``s`` or ``p`` (simply supported / pinned: ``W = 0``, zero moment
``dTheta = 0``) and ``f`` (free: zero moment ``dTheta = 0`` and zero shear force; Timoshenko
shear force is ``kAG (w' - psi) = kAG (dW - Theta) / L``, Euler–Bernoulli ``EI W''' = 0``).
"""

from __future__ import annotations

import abc
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "ModeShapes",
    "TrigHyperbolicModes",
    "PolynomialModes",
    "CallableModes",
    "TabulatedModes",
    "SupportedModes",
    "euler_bernoulli_roots",
    "euler_bernoulli_modes",
    "timoshenko_frequencies",
    "timoshenko_modes",
    "check_boundary_conditions",
    "VALID_BCS",
]

VALID_BCS = ("cc", "cf", "cs", "fc", "ff", "fs", "sc", "sf", "ss")
_END_NAMES = {"c": "clamped", "s": "simply supported", "f": "free"}
_NORMALIZATIONS = ("mass", "max", "seed001")
# Above this wavenumber a hyperbolic pair is stored as decaying exponentials (fields p, q):
# sinh/cosh coefficients of size ~1 cancel to ~eps * e^beta / 2 (float64: 1.6e-14 at beta = 5,
# 2.4e-12 at 10; float32: 4e-6 at 5). Table 2's modes (beta < 4.8) stay in sinh/cosh form.
_HYPERBOLIC_MAX_BETA = 5.0


# --------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------


class ModeShapes(eqx.Module):
    """Base class of mode-shape families (abstract).

    ``fields(eta)`` takes ``eta`` of any shape ``[...]`` and returns a dict of arrays
    ``[..., n]`` with keys ``'W'``, ``'dW'``, ``'ddW'``, ``'Theta'``, ``'dTheta'`` (module
    docstring for units).
    """

    @property
    @abc.abstractmethod
    def n(self) -> int:
        """Number of modes."""

    @abc.abstractmethod
    def fields(self, eta) -> dict:
        """Shape values and eta-derivatives at ``eta`` [...] -> dict of [..., n]."""

    def resolved(self) -> ModeShapes:
        """The same shapes with any work that :meth:`fields` repeats on every call done once (a
        family that solves an eigenproblem per call returns one holding the solution); for use
        within one computation, e.g. a link's integrals. Here: ``self``."""
        return self

    def host_fields(self, eta):
        """:meth:`fields` in NumPy (float64) at a NumPy ``eta`` [...], for build-time checks on the
        host (:func:`diffsim.beam` checks that its Gauss rule resolves the shapes); ``None`` when the
        family has no host form (here) or its data are traced."""
        return None


def _host(*arrays):
    """The arrays as float64 NumPy arrays, or ``None`` when one is traced."""
    try:
        return [np.asarray(a, dtype=np.float64) for a in arrays]
    except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None


def _as_eta(eta, like):
    eta = jnp.asarray(eta)
    if not jnp.issubdtype(eta.dtype, jnp.floating):
        eta = eta.astype(like.dtype)
    return eta


def _vec(x, name):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    if x.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array [n], got shape {x.shape}")
    return x


class TrigHyperbolicModes(ModeShapes):
    """Seed 001, Table 2 / eqs (28)–(29) family; per mode k (all arrays [n], differentiable)::

        W_k     = a sin(alpha eta) + b cos(alpha eta) + c sinh(beta eta) + d cosh(beta eta)
                  + p exp(beta (eta - 1)) + q exp(-beta eta)
        Theta_k = ta sin(alpha eta) + tb cos(alpha eta) + tc sinh(beta eta) + td cosh(beta eta)
                  + tp exp(beta (eta - 1)) + tq exp(-beta eta)

    ``alpha``, ``beta`` are wavenumbers in eta units (per unit L). The keyword-only
    exponential terms (default 0) span the same space as sinh/cosh but stay O(1) for large
    ``beta``; the constructors use them for modes with ``beta > 5`` so high modes remain
    accurate to ~1e-13 instead of ~eps * e^beta.
    """

    a: jax.Array
    b: jax.Array
    c: jax.Array
    d: jax.Array
    alpha: jax.Array
    beta: jax.Array
    ta: jax.Array
    tb: jax.Array
    tc: jax.Array
    td: jax.Array
    p: jax.Array
    q: jax.Array
    tp: jax.Array
    tq: jax.Array

    def __init__(self, a, b, c, d, alpha, beta, ta, tb, tc, td, *, p=None, q=None, tp=None, tq=None):
        names = ("a", "b", "c", "d", "alpha", "beta", "ta", "tb", "tc", "td")
        vals = [_vec(v, nm) for v, nm in zip((a, b, c, d, alpha, beta, ta, tb, tc, td), names)]
        n = vals[0].shape[0]
        if n < 1:
            raise ValueError("TrigHyperbolicModes: zero modes (coefficient arrays are empty)")
        zeros = jnp.zeros_like(vals[0])
        extra = [zeros if v is None else _vec(v, nm) for v, nm in zip((p, q, tp, tq), ("p", "q", "tp", "tq"))]
        for v, nm in zip(vals + extra, names + ("p", "q", "tp", "tq")):
            if v.shape != (n,):
                raise ValueError(f"TrigHyperbolicModes: {nm} has shape {v.shape}, expected ({n},) like a")
        (self.a, self.b, self.c, self.d, self.alpha, self.beta, self.ta, self.tb, self.tc, self.td) = vals
        self.p, self.q, self.tp, self.tq = extra

    @property
    def n(self) -> int:
        return self.a.shape[0]

    @eqx.filter_jit  # compiled once per shape; inlined when called inside a user's jit
    def fields(self, eta) -> dict:
        w = (self.a, self.b, self.c, self.d, self.p, self.q)
        t = (self.ta, self.tb, self.tc, self.td, self.tp, self.tq)
        return _trig_hyperbolic_fields(w, t, self.alpha, self.beta, _as_eta(eta, self.alpha)[..., None], jnp)

    def host_fields(self, eta):
        names = ("a", "b", "c", "d", "p", "q", "ta", "tb", "tc", "td", "tp", "tq", "alpha", "beta")
        v = _host(*(getattr(self, k) for k in names))
        if v is None:
            return None
        return _trig_hyperbolic_fields(v[0:6], v[6:12], v[12], v[13], np.asarray(eta, dtype=np.float64)[..., None], np)


def _trig_hyperbolic_fields(w, t, al, be, eta, xp) -> dict:
    """``W, W', W'', Θ, Θ'`` of the trigonometric–hyperbolic family at ``eta`` [..., 1]: each
    coefficient sextuple ``(A, B, C, D, P, Q)`` of ``w`` (deflection) and ``t`` (rotation) weighs
    ``sin αη, cos αη, sinh βη, cosh βη, e^{β(η−1)}, e^{−βη}``; ``xp`` is ``jnp`` (traced) or ``np``
    (the host checks)."""
    s, co = xp.sin(al * eta), xp.cos(al * eta)
    sh, ch = xp.sinh(be * eta), xp.cosh(be * eta)
    ep, em = xp.exp(be * (eta - 1.0)), xp.exp(-be * eta)

    def value(A, B, C, D, P, Q):
        return A * s + B * co + C * sh + D * ch + P * ep + Q * em

    def d1(A, B, C, D, P, Q):
        return al * (A * co - B * s) + be * (C * ch + D * sh + P * ep - Q * em)

    def d2(A, B, C, D, P, Q):
        return -al**2 * (A * s + B * co) + be**2 * (C * sh + D * ch + P * ep + Q * em)

    return {"W": value(*w), "dW": d1(*w), "ddW": d2(*w), "Theta": value(*t), "dTheta": d1(*t)}


class PolynomialModes(ModeShapes):
    """``W_k(eta) = sum_j coeffs[k, j] eta**j`` (ascending powers; ``coeffs`` [n, p]).

    ``Theta = dW`` (Euler–Bernoulli) unless ``theta_coeffs`` [n, p'] gives Theta's own series.
    """

    coeffs: jax.Array
    theta_coeffs: jax.Array | None

    def __init__(self, coeffs, theta_coeffs=None):
        coeffs = jnp.asarray(coeffs)
        if not jnp.issubdtype(coeffs.dtype, jnp.floating):
            coeffs = coeffs.astype(jnp.result_type(float))
        if coeffs.ndim != 2 or coeffs.shape[1] < 1:
            raise ValueError(f"PolynomialModes: coeffs must have shape [n, p] with p >= 1, got {coeffs.shape}")
        if coeffs.shape[0] < 1:
            raise ValueError("PolynomialModes: zero modes (coeffs has no rows)")
        if theta_coeffs is not None:
            theta_coeffs = jnp.asarray(theta_coeffs, dtype=coeffs.dtype)
            if theta_coeffs.ndim != 2 or theta_coeffs.shape[0] != coeffs.shape[0]:
                raise ValueError(
                    f"PolynomialModes: theta_coeffs must have shape [{coeffs.shape[0]}, p'], got {theta_coeffs.shape}"
                )
        self.coeffs = coeffs
        self.theta_coeffs = theta_coeffs

    @property
    def n(self) -> int:
        return self.coeffs.shape[0]

    @staticmethod
    def _deriv(c):
        p = c.shape[1]
        if p == 1:
            return jnp.zeros_like(c)
        return c[:, 1:] * jnp.arange(1, p, dtype=c.dtype)

    @staticmethod
    def _horner(c, eta):
        out = jnp.zeros(eta.shape + (c.shape[0],), dtype=jnp.result_type(c, eta))
        for j in range(c.shape[1] - 1, -1, -1):
            out = out * eta[..., None] + c[:, j]
        return out

    @eqx.filter_jit  # compiled once per shape; inlined when called inside a user's jit
    def fields(self, eta) -> dict:
        eta = _as_eta(eta, self.coeffs)
        c1 = self._deriv(self.coeffs)
        c2 = self._deriv(c1)
        W, dW, ddW = (self._horner(c, eta) for c in (self.coeffs, c1, c2))
        if self.theta_coeffs is None:
            Theta, dTheta = dW, ddW
        else:
            Theta = self._horner(self.theta_coeffs, eta)
            dTheta = self._horner(self._deriv(self.theta_coeffs), eta)
        return {"W": W, "dW": dW, "ddW": ddW, "Theta": Theta, "dTheta": dTheta}

    def host_fields(self, eta):
        v = _host(self.coeffs) if self.theta_coeffs is None else _host(self.coeffs, self.theta_coeffs)
        if v is None:
            return None
        eta = np.asarray(eta, dtype=np.float64)
        ev = lambda c: np.polynomial.polynomial.polyval(eta, c.T, tensor=True)  # noqa: E731  [n, ...]
        der = lambda c: np.polynomial.polynomial.polyder(c, axis=1) if c.shape[1] > 1 else np.zeros_like(c)  # noqa: E731
        c0 = v[0]
        c1 = der(c0)
        c2 = der(c1)
        f = {"W": ev(c0), "dW": ev(c1), "ddW": ev(c2)}
        if self.theta_coeffs is None:
            f["Theta"], f["dTheta"] = f["dW"], f["ddW"]
        else:
            f["Theta"], f["dTheta"] = ev(v[1]), ev(der(v[1]))
        return {k: np.moveaxis(x, 0, -1) for k, x in f.items()}


class CallableModes(ModeShapes):
    """User shapes ``fn(eta) -> (W [..., n], Theta [..., n] or None)``, pure ``jnp``.

    ``fn`` must act pointwise in ``eta`` (the value at ``eta[i]`` depends on ``eta[i]`` only,
    as broadcasting code does); derivatives are then exact forward-mode ``jax.jvp``s.
    ``Theta=None`` (or ``fn`` returning ``W`` alone) means Euler–Bernoulli: ``Theta = dW``.
    ``fn`` is a static field: it must be hashable (a plain function is); put trainable
    parameters in a Module of your own and close over them through ``eqx.Module`` methods.
    """

    fn: Callable = eqx.field(static=True)
    n_modes: int = eqx.field(static=True)

    def __init__(self, fn, n):
        if not callable(fn):
            raise ValueError("CallableModes: fn must be callable")
        n = int(n)
        if n < 1:
            raise ValueError(f"CallableModes: zero modes (n = {n}); need n >= 1")
        self.fn = fn
        self.n_modes = n

    @property
    def n(self) -> int:
        return self.n_modes

    def _split(self, eta):
        out = self.fn(eta)
        if isinstance(out, (tuple, list)):
            if len(out) != 2:
                raise ValueError("CallableModes: fn must return (W, Theta) or (W, None) or W")
            return out[0], out[1]
        return out, None

    @eqx.filter_jit  # compiled once per shape; inlined when called inside a user's jit
    def fields(self, eta) -> dict:
        eta = _as_eta(eta, jnp.zeros((), jnp.result_type(float)))
        one = jnp.ones_like(eta)
        W_fn = lambda e: self._split(e)[0]  # noqa: E731
        dW_fn = lambda e: jax.jvp(W_fn, (e,), (jnp.ones_like(e),))[1]  # noqa: E731
        (W, dW), ddW = jax.jvp(lambda e: (W_fn(e), dW_fn(e)), (eta,), (one,))
        ddW = ddW[1]
        if W.shape != eta.shape + (self.n_modes,):
            raise ValueError(f"CallableModes: fn returned W of shape {W.shape}, expected {eta.shape + (self.n_modes,)}")
        if self._split(eta)[1] is None:  # trace-time check (fn is re-traced, not re-run)
            Theta, dTheta = dW, ddW
        else:
            Theta, dTheta = jax.jvp(lambda e: self._split(e)[1], (eta,), (one,))
        return {"W": W, "dW": dW, "ddW": ddW, "Theta": Theta, "dTheta": dTheta}


class TabulatedModes(ModeShapes):
    """Natural cubic spline through sampled shapes; ``Theta = dW`` (Euler–Bernoulli).

    ``eta_samples`` [m] strictly increasing (m >= 3), ``W_samples`` [m, n]. The spline's
    second derivatives solve the natural-spline system in ``jnp``, so everything is
    differentiable in both sample arrays. Outside the sampled range the end cubics are
    extended.
    """

    eta_samples: jax.Array
    W_samples: jax.Array

    def __init__(self, eta_samples, W_samples):
        x = jnp.asarray(eta_samples)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.result_type(float))
        y = jnp.asarray(W_samples, dtype=x.dtype)
        if y.ndim == 1:
            y = y[:, None]
        if x.ndim != 1 or x.shape[0] < 3:
            raise ValueError(f"TabulatedModes: eta_samples must be 1-D with >= 3 points, got shape {x.shape}")
        if y.ndim != 2 or y.shape[0] != x.shape[0]:
            raise ValueError(f"TabulatedModes: W_samples must have shape [{x.shape[0]}, n], got {y.shape}")
        if y.shape[1] < 1:
            raise ValueError("TabulatedModes: zero modes (W_samples has no columns)")
        try:
            xn = np.asarray(x)
        except Exception:  # traced: cannot check here
            xn = None
        if xn is not None and not np.all(np.diff(xn) > 0):
            raise ValueError("TabulatedModes: eta_samples must be strictly increasing")
        self.eta_samples = x
        self.W_samples = y

    @property
    def n(self) -> int:
        return self.W_samples.shape[1]

    def _second_derivatives(self):
        x, y = self.eta_samples, self.W_samples
        h = jnp.diff(x)
        rhs = 6.0 * (jnp.diff(y[1:], axis=0) / h[1:, None] - jnp.diff(y[:-1], axis=0) / h[:-1, None])
        z1 = jnp.zeros((1,), h.dtype)
        lower = jnp.concatenate([z1, h[1:-1]])  # tridiagonal_solve wants dl[0] = du[-1] = 0
        upper = jnp.concatenate([h[1:-1], z1])
        M = jax.lax.linalg.tridiagonal_solve(lower, 2.0 * (h[:-1] + h[1:]), upper, rhs)
        z = jnp.zeros((1, y.shape[1]), y.dtype)
        return jnp.concatenate([z, M, z], axis=0)

    @eqx.filter_jit
    def fields(self, eta) -> dict:
        x, y = self.eta_samples, self.W_samples
        eta = _as_eta(eta, x)
        M = self._second_derivatives()
        i = jnp.clip(jnp.searchsorted(x, eta, side="right") - 1, 0, x.shape[0] - 2)
        x0, x1 = x[i][..., None], x[i + 1][..., None]
        y0, y1, M0, M1 = y[i], y[i + 1], M[i], M[i + 1]
        h = x1 - x0
        A = (x1 - eta[..., None]) / h
        B = 1.0 - A
        W = A * y0 + B * y1 + ((A**3 - A) * M0 + (B**3 - B) * M1) * h**2 / 6.0
        dW = (y1 - y0) / h + (-(3 * A**2 - 1) * M0 + (3 * B**2 - 1) * M1) * h / 6.0
        ddW = A * M0 + B * M1
        return {"W": W, "dW": dW, "ddW": ddW, "Theta": dW, "dTheta": ddW}


_ROOTS = ("clamped", "pinned", "free")


class SupportedModes(ModeShapes):
    """Free-form shapes held to the joint's kinematic boundary conditions, with root springs.

    The shapes of ``shapes`` (any family: its coefficients — :class:`PolynomialModes` ``coeffs``,
    :class:`TrigHyperbolicModes` ``a … tq``, :class:`TabulatedModes` ``W_samples`` — are the
    free-form parameters a fit moves) minus the rigid-body motion they have at the root ``eta = 0``::

        clamped:  W~ = W - W(0) - eta Theta(0),   Theta~ = Theta - Theta(0)   (W~(0) = Theta~(0) = 0)
        pinned:   W~ = W - W(0),                  Theta~ = Theta              (W~(0) = 0)
        free:     W~ = W,                         Theta~ = Theta

    A rigid-body motion carries no strain (curvature ``dTheta`` and shear ``dW - Theta`` are
    unchanged), so every coefficient vector gives an admissible shape with the strain energy of
    ``shapes``, and the kinematic conditions hold to round-off whatever a fit does to the
    coefficients. Where the condition leaves the root free the springs act (strain energy
    ``½ k_rot_root psi(0)² + ½ k_lat_root W(0)²``, ``psi = Theta/L``, :meth:`boundary_stiffness`):
    ``k_rot_root`` [N m/rad] on a pinned or free root, ``k_lat_root`` [N/m] on a free one.

    Only the span of the shapes (the Ritz subspace) changes the dynamics: an invertible linear
    combination of the modes, or a mode's scale, is compensated by the modal coordinates. Fit
    ``n_modes × (p - n_modes)`` coefficients and hold an ``n × n`` block fixed (e.g. the lowest free
    powers of a polynomial) so the fitted coefficients are identifiable.
    """

    shapes: ModeShapes
    k_rot_root: jax.Array | None
    k_lat_root: jax.Array | None
    root: str = eqx.field(static=True)

    def __init__(self, shapes, root: str = "clamped", *, k_rot_root=0.0, k_lat_root=0.0):
        if not isinstance(shapes, ModeShapes):
            raise ValueError(f"SupportedModes: shapes must be a mode-shape family (ModeShapes), got {type(shapes).__name__}")
        if isinstance(shapes, SupportedModes):
            raise ValueError("SupportedModes: shapes are already supported; wrap the free-form family once")
        if root not in _ROOTS:
            raise ValueError(f"SupportedModes: root must be one of {', '.join(_ROOTS)}, got {root!r}")
        dtype = jnp.result_type(float)
        k_rot, k_lat = jnp.asarray(k_rot_root, dtype), jnp.asarray(k_lat_root, dtype)
        for name, k, unused in (("k_rot_root", k_rot, root == "clamped"), ("k_lat_root", k_lat, root != "free")):
            if k.ndim != 0:
                raise ValueError(f"SupportedModes: {name} must be a scalar, got shape {k.shape}")
            try:
                v = float(k)
            except Exception:  # traced: checked where concrete
                continue
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"SupportedModes: {name} must be a finite spring stiffness >= 0, got {v!r}")
            if unused and v != 0:
                raise ValueError(f"SupportedModes: {name} = {v:g} acts on a motion the {root} root holds rigidly; "
                                 "leave it 0 (or choose a root that leaves that motion free)")  # fmt: skip
        self.shapes, self.root = shapes, root
        self.k_rot_root = None if root == "clamped" else k_rot  # None: not a parameter of this root
        self.k_lat_root = k_lat if root == "free" else None

    @property
    def n(self) -> int:
        return self.shapes.n

    def resolved(self) -> SupportedModes:
        inner = self.shapes.resolved()
        return self if inner is self.shapes else eqx.tree_at(lambda m: m.shapes, self, inner)

    @eqx.filter_jit
    def fields(self, eta) -> dict:
        f = dict(self.shapes.fields(eta))
        if self.root == "free":
            return f
        f0 = self.shapes.fields(jnp.zeros((), jnp.asarray(f["W"]).dtype))
        f["W"] = f["W"] - f0["W"]
        if self.root == "clamped":
            eta = _as_eta(eta, f["W"])[..., None]
            f["W"] = f["W"] - eta * f0["Theta"]
            f["dW"] = f["dW"] - f0["Theta"]
            f["Theta"] = f["Theta"] - f0["Theta"]
        return f

    def boundary_stiffness(self, L):
        """Modal stiffness of the root springs [n, n] (units of a link's ``K``, N/m per unit
        coordinate²) of a link of length ``L`` [m]: ``k_rot psi(0)psi(0)ᵀ + k_lat W(0)W(0)ᵀ``,
        ``psi = Theta/L``, at the supported shapes (zero where the root holds the motion)."""
        f0 = self.fields(jnp.zeros(()))
        n = self.n
        K = jnp.zeros((n, n), f0["W"].dtype)
        if self.root != "clamped":
            psi = f0["Theta"] / L
            K = K + self.k_rot_root * jnp.outer(psi, psi)
        if self.root == "free":
            K = K + self.k_lat_root * jnp.outer(f0["W"], f0["W"])
        return K

    def host_fields(self, eta):
        f = self.shapes.host_fields(eta)
        if f is None or self.root == "free":
            return f
        f0 = self.shapes.host_fields(np.zeros(()))
        f = dict(f)
        f["W"] = f["W"] - f0["W"]
        if self.root == "clamped":
            e = np.asarray(eta, dtype=np.float64)[..., None]
            f["W"] = f["W"] - e * f0["Theta"]
            f["dW"] = f["dW"] - f0["Theta"]
            f["Theta"] = f["Theta"] - f0["Theta"]
        return f


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def bisect_root(f, a: float, b: float, xtol: float = 1e-15, rtol: float = 4 * np.finfo(float).eps,
                maxiter: int = 2000) -> float:
    """A root of ``f`` in ``[a, b]`` where ``f(a)`` and ``f(b)`` differ in sign, by bisection to
    ``|b − a| <= xtol + rtol |x|`` (at most ~60 halvings in float64). Robust and exact to the
    last bits for the smooth frequency equations here; (scipy's brentq converges in fewer
    evaluations, but importing scipy.optimize costs more than every root of a model.)"""
    fa = f(a)
    if fa == 0.0:
        return a
    fb = f(b)
    if fb == 0.0:
        return b
    if np.sign(fa) == np.sign(fb):
        raise ValueError(f"f(a) and f(b) have the same sign on [{a}, {b}]")
    for _ in range(maxiter):
        m = 0.5 * (a + b)
        if abs(b - a) <= xtol + rtol * abs(m) or m in (a, b):
            return m
        fm = f(m)
        if fm == 0.0:
            return m
        if np.sign(fm) == np.sign(fa):
            a, fa = m, fm
        else:
            b = m
    return 0.5 * (a + b)


def _canonical_bc(bc) -> str:
    if not isinstance(bc, str):
        raise ValueError(f"boundary condition must be a string, got {bc!r}; valid: {', '.join(VALID_BCS)}")
    b = bc.strip().lower().replace("p", "s")
    if b not in VALID_BCS:
        raise ValueError(
            f"unknown boundary condition {bc!r}; valid (root, tip): {', '.join(VALID_BCS)} "
            "(c = clamped, s or p = simply supported/pinned, f = free)"
        )
    return b


def _check_n(n) -> int:
    if isinstance(n, bool) or int(n) != n:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    n = int(n)
    if n < 1:
        raise ValueError(f"zero modes requested (n = {n}); need n >= 1")
    return n


def _check_positive(**kw):
    for name, v in kw.items():
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a positive real number, got {v!r}") from None
        if not (np.isfinite(f) and f > 0):
            raise ValueError(f"{name} must be positive and finite, got {v!r}")


# --------------------------------------------------------------------------------------------
# Frequency equations and modal coefficients (NumPy, build time)
# --------------------------------------------------------------------------------------------

# Euler–Bernoulli frequency equations in beta = beta_k L, scaled to O(1) for any beta.
_EB_EQ = {
    "cc": lambda b: np.cos(b) - 1.0 / np.cosh(b),  # cos b cosh b = 1
    "ff": lambda b: np.cos(b) - 1.0 / np.cosh(b),  # same (elastic modes)
    "cf": lambda b: np.cos(b) + 1.0 / np.cosh(b),  # cos b cosh b = -1
    "fc": lambda b: np.cos(b) + 1.0 / np.cosh(b),
    "cs": lambda b: np.sin(b) - np.cos(b) * np.tanh(b),  # tan b = tanh b
    "sc": lambda b: np.sin(b) - np.cos(b) * np.tanh(b),
    "sf": lambda b: np.sin(b) - np.cos(b) * np.tanh(b),  # elastic modes
    "fs": lambda b: np.sin(b) - np.cos(b) * np.tanh(b),
}


def euler_bernoulli_roots(bc: str, n: int) -> np.ndarray:
    """First ``n`` roots ``beta_k L`` of the Euler–Bernoulli frequency equation, float64.

    ``omega_k = (beta_k L)**2 sqrt(EI / (rho A L**4))``. For ``ff``, ``sf``/``fs`` only the
    elastic modes are returned (the rigid-body modes at ``beta = 0`` are excluded). Roots are
    bracketed on a grid and refined by bisection to ~1e-15.
    """
    bc = _canonical_bc(bc)
    n = _check_n(n)
    if bc == "ss":
        return np.pi * np.arange(1, n + 1, dtype=np.float64)
    f = _EB_EQ[bc]
    grid = np.arange(0.5, (n + 2) * np.pi, 0.01)
    v = f(grid)
    idx = np.nonzero(np.sign(v[:-1]) != np.sign(v[1:]))[0][:n]
    rtol = 4 * np.finfo(float).eps
    roots = np.array([bisect_root(f, grid[i], grid[i + 1], xtol=1e-15, rtol=rtol) for i in idx])
    if roots.shape[0] != n:  # pragma: no cover - the grid covers (n + 2) pi
        raise RuntimeError(f"found {roots.shape[0]} of {n} roots for bc {bc!r}")
    return roots


def _end_values(eta, al, be, ca, cb, xp=np):
    """Rows of W, dW/al, Theta/al, dTheta/al², ddW/al², dddW/al³ at ``eta`` in the stable basis
    [sin(al eta), cos(al eta), e^{be(eta-1)}, e^{-be eta}] (each quantity over its natural scale,
    so every entry is O(1) for any wavenumber); ``xp``: ``np`` or ``jnp``."""
    s, c = xp.sin(al * eta), xp.cos(al * eta)
    ep, em = xp.exp(be * (eta - 1.0)), xp.exp(-be * eta)
    return {
        "W": [s, c, ep, em],
        "dW": [c, -s, be / al * ep, -be / al * em],
        "Theta": [ca / al * c, -ca / al * s, cb / al * ep, -cb / al * em],
        "dTheta": [-ca / al * s, -ca / al * c, cb * be / al**2 * ep, cb * be / al**2 * em],
        "ddW": [-s, -c, (be / al) ** 2 * ep, (be / al) ** 2 * em],
        "dddW": [-c, s, (be / al) ** 3 * ep, -((be / al) ** 3) * em],
    }


def _rows(end, eta, al, be, ca, cb, theory):
    """BC rows at one end in the stable basis [sin(al eta), cos(al eta), e^{be(eta-1)}, e^{-be eta}]."""
    v = _end_values(eta, al, be, ca, cb)
    if end == "c":
        return [v["W"], v["Theta"]]
    if end == "s":
        return [v["W"], v["dTheta"]]
    if theory == "eb":
        return [v["ddW"], v["dddW"]]
    return [v["dTheta"], [x - y for x, y in zip(v["dW"], v["Theta"])]]


def _bc_matrix_rows(bc, al, be, ca, cb, theory):
    return _rows(bc[0], 0.0, al, be, ca, cb, theory) + _rows(bc[1], 1.0, al, be, ca, cb, theory)


def _bc_matrix(bc, al, be, ca, cb, theory):
    return np.array(_bc_matrix_rows(bc, al, be, ca, cb, theory), dtype=np.float64)


def _eval_basis(coef, al, be, eta, deriv=0):
    """W or its eta-derivative from stable-basis coefficients (NumPy)."""
    C1, C2, P, Q = coef
    e = np.asarray(eta, dtype=np.float64)
    s, c = np.sin(al * e), np.cos(al * e)
    ep, em = np.exp(be * (e - 1.0)), np.exp(-be * e)
    if deriv == 0:
        return C1 * s + C2 * c + P * ep + Q * em
    return al * (C1 * c - C2 * s) + be * (P * ep - Q * em)


def _normalize(coef, al, be, normalize):
    """Scale a null vector: sign so that W > 0 just off the root, then the amplitude rule."""
    grid = np.linspace(0.0, 1.0, 4001)
    Wg = _eval_basis(coef, al, be, grid)
    big = np.abs(Wg).max()
    first = np.nonzero(np.abs(Wg) > 1e-3 * big)[0][0]
    coef = coef * np.sign(Wg[first])
    Wg = Wg * np.sign(Wg[first])
    if normalize == "mass":
        x, w = np.polynomial.legendre.leggauss(max(64, int(4 * max(al, be)) + 64))
        eta = 0.5 * (x + 1.0)
        return coef / np.sqrt(0.5 * np.sum(w * _eval_basis(coef, al, be, eta) ** 2))
    # 'max' / 'seed001': max |W| = 1 on [0, 1], the extremum located to machine precision.
    i = int(np.argmax(np.abs(Wg)))
    eta_star = grid[i]
    if 0 < i < grid.size - 1:
        g = lambda e: _eval_basis(coef, al, be, e, deriv=1)  # noqa: E731
        lo, hi = grid[i - 1], grid[i + 1]
        if np.sign(g(lo)) != np.sign(g(hi)):
            eta_star = bisect_root(g, lo, hi)
    return coef / abs(_eval_basis(coef, al, be, eta_star))


def _null_vector(M):
    v = np.linalg.svd(M)[2][-1]
    v = np.where(np.abs(v) < 1e-14 * np.abs(v).max(), 0.0, v)
    return v


def _assemble_arrays(C1, C2, P, Q, al, be, ca, cb, xp=np):
    """Stable-basis coefficients [n] (and wavenumbers, Theta ratios) -> TrigHyperbolicModes;
    sinh/cosh form for modes with ``be <= 5``, exponential form above (``xp``: np or jnp)."""
    hyp = be <= _HYPERBOLIC_MAX_BETA
    # P e^{be(eta-1)} + Q e^{-be eta} = c sinh + d cosh with c + d = 2 P e^{-be}, d - c = 2 Q.
    d = xp.where(hyp, P * xp.exp(-be) + Q, 0.0)
    c = xp.where(hyp, P * xp.exp(-be) - Q, 0.0)
    P, Q = xp.where(hyp, 0.0, P), xp.where(hyp, 0.0, Q)
    # W = sin -> Theta = ca cos; cos -> -ca sin; sinh -> cb cosh; cosh -> cb sinh;
    # e^{be eta} -> cb e^{be eta}; e^{-be eta} -> -cb e^{-be eta}.
    return TrigHyperbolicModes(C1, C2, c, d, al, be, -ca * C2, ca * C1, cb * d, cb * c,
                               p=P, q=Q, tp=cb * P, tq=-cb * Q)


def _assemble(modes):
    """List of (coef[4], al, be, ca, cb) -> TrigHyperbolicModes, sinh/cosh form when be <= 5."""
    cols = np.array([[float(x) for x in coef] + [float(al), float(be), float(ca), float(cb)]
                     for coef, al, be, ca, cb in modes], dtype=np.float64)
    return _assemble_arrays(*cols.T)


def _check_normalize(normalize):
    if normalize not in _NORMALIZATIONS:
        raise ValueError(f"unknown normalize={normalize!r}; valid: {', '.join(_NORMALIZATIONS)}")
    return "max" if normalize == "seed001" else normalize


def euler_bernoulli_modes(bc: str, n: int, *, normalize: str = "mass") -> TrigHyperbolicModes:
    """First ``n`` elastic Euler–Bernoulli modes: ``alpha = beta = beta_k L``, ``Theta = dW``.

    The shapes are the classical closed forms (e.g. cf: ``cosh - cos - sigma (sinh - sin)``),
    obtained here as the null vector of the boundary-condition matrix in a stable basis.
    ``normalize='mass'`` (default): ``int_0^1 W_k^2 deta = 1``, i.e. modal mass
    ``rho A L`` per unit coordinate, and then ``int W_i W_j = delta_ij``. ``'max'`` (alias
    ``'seed001'``): ``max |W_k| = 1`` on [0, 1]. Sign: ``W_k > 0`` just off the root.
    Modes with ``beta > 5`` use the exponential terms of :class:`TrigHyperbolicModes`.
    """
    bc = _canonical_bc(bc)
    n = _check_n(n)
    norm = _check_normalize(normalize)
    modes = []
    for bl in euler_bernoulli_roots(bc, n):
        v = _null_vector(_bc_matrix(bc, bl, bl, bl, bl, "eb"))
        modes.append((_normalize(v, bl, bl, norm), bl, bl, bl, bl))
    return _assemble(modes)


def _timoshenko_wavenumbers(omega, E, G, k, A, I, rho, L):
    """alpha, beta (eta units) and the Theta/W ratios ca, cb at circular frequency ``omega``
    (material form of :func:`_section_wavenumbers`)."""
    return _section_wavenumbers(omega, E * I, k * A * G, rho * A, rho * I, L)


def _section_wavenumbers(omega, EI, kAG, rhoA, rhoI, L, xp=np):
    """alpha, beta (eta units) and the Theta/W ratios ca, cb at circular frequency ``omega``.

    W = sin(alpha eta) -> Theta = ca cos(alpha eta); W = sinh(beta eta) -> Theta = cb cosh(beta eta).
    From EI s^4 - s^2 w^2 (rho I + EI rho A/(kAG)) + rho I rho A w^4/(kAG) - rho A w^2 = 0,
    s^2 in {alpha^2, -beta^2}. ``kAG = inf`` and ``rhoI = 0`` give Euler–Bernoulli's
    alpha = beta, ca = alpha, cb = beta.
    """
    w2 = omega**2
    Bq = w2 * (rhoI + EI * rhoA / kAG)
    Cq = rhoI * rhoA * w2**2 / kAG - rhoA * w2  # < 0 below the cutoff
    al2 = (Bq + xp.sqrt(Bq**2 - 4 * EI * Cq)) / (2 * EI)
    be2 = -Cq / (EI * al2)  # stable form of (sqrt(D) - B) / (2 EI)
    al, be = xp.sqrt(al2) * L, xp.sqrt(be2) * L
    r = rhoA * w2 * L**2 / kAG
    return al, be, al - r / al, be + r / be


def _timoshenko_solve(bc, n, E, G, k, A, I, rho, L):
    bc = _canonical_bc(bc)
    n = _check_n(n)
    _check_positive(E=E, G=G, k=k, A=A, I=I, rho=rho, L=L)
    E, G, k, A, I, rho, L = map(float, (E, G, k, A, I, rho, L))
    c0 = np.sqrt(E * I / (rho * A)) / L**2  # omega = (beta L)^2 c0 for Euler-Bernoulli
    cutoff = np.sqrt(k * G * A / (rho * I))

    def det(w):  # scalar or [N] -> same shape
        al, be, ca, cb = _timoshenko_wavenumbers(np.asarray(w, dtype=np.float64), E, G, k, A, I, rho, L)
        M = np.array(np.broadcast_arrays(*sum(_bc_matrix_rows(bc, al, be, ca, cb, "timoshenko"), [])))
        return np.linalg.det(np.moveaxis(M.reshape((4, 4) + M.shape[1:]), (0, 1), (-2, -1)))

    # Timoshenko frequencies lie below Euler-Bernoulli's; scan sqrt-frequency uniformly.
    s_max = euler_bernoulli_roots(bc, n)[-1] + 1.0
    s_cut = np.sqrt(cutoff / c0)
    s = np.arange(0.3, min(s_max, s_cut), 0.005)
    w = s**2 * c0
    d = det(w)
    idx = np.nonzero(np.sign(d[:-1]) != np.sign(d[1:]))[0][:n]
    if idx.size < n:
        raise ValueError(
            f"only {idx.size} Timoshenko mode(s) for bc {bc!r} lie below the second-spectrum cutoff "
            f"omega_c = sqrt(kGA/(rho I)) = {cutoff:.6g} rad/s; requested n = {n}"
        )
    out = []
    for i in idx:
        om = bisect_root(det, w[i], w[i + 1], xtol=1e-300)
        out.append((om,) + _timoshenko_wavenumbers(om, E, G, k, A, I, rho, L))
    return bc, out


def timoshenko_frequencies(bc: str, n: int, *, E, G, k, A, I, rho, L) -> np.ndarray:
    """First ``n`` circular frequencies [rad/s] of a uniform Timoshenko beam (first spectrum).

    ``E``, ``G`` [Pa]; ``k`` shear correction [-]; ``A`` [m²]; ``I`` second moment [m⁴];
    ``rho`` density [kg/m³] (mass per length ``rho A``, rotary inertia per length ``rho I``);
    ``L`` [m]. Same parameters and rules as :func:`timoshenko_modes`.
    """
    return np.array([m[0] for m in _timoshenko_solve(bc, n, E, G, k, A, I, rho, L)[1]])


def timoshenko_modes(bc: str, n: int, *, E, G, k, A, I, rho, L, normalize: str = "seed001") -> TrigHyperbolicModes:
    """First ``n`` Timoshenko modes (Huang 1961): W and Theta in the trig/hyperbolic family.

    Physical equations (x = L eta, psi = Theta / L)::

        EI psi'' + kAG (w' - psi) + rho I omega^2 psi = 0
        kAG (w'' - psi') + rho A omega^2 w = 0

    ``alpha > beta`` are the two wavenumbers at the root ``omega`` of the 4x4 boundary-condition
    determinant (scanned, then bisection), ``Theta``'s coefficients follow from the second
    equation. Only the first spectrum below the cutoff ``sqrt(kGA / (rho I))`` is supported
    (ValueError otherwise). Free-end rigid-body modes (ff, sf, fs) are excluded.

    ``normalize='seed001'`` (default, alias ``'max'``): ``max_{eta in [0,1]} |W| = 1`` with the
    extremum located to machine precision and ``W > 0`` just off the root — this reproduces every
    coefficient of seed 001's Table 2. ``'mass'``: ``int_0^1 W^2 deta = 1``.

    Seed 001's Table 2 follows (to ~1e-15) from the *unrounded* Table 3 values
    ``G = E / (2 (1 + 0.3)) = 7.6923e10`` and ``I = 0.03 * 0.0125**3 / 12 = 4.8828125e-9``
    (30 x 12.5 mm section, A = 3.75e-4); the printed ``G = 7.7e10``, ``I = 4.883e-9`` move its
    coefficients by 1.2e-6 .. 5.6e-6.
    """
    norm = _check_normalize(normalize)
    bc, sols = _timoshenko_solve(bc, n, E, G, k, A, I, rho, L)
    modes = []
    for _, al, be, ca, cb in sols:
        v = _null_vector(_bc_matrix(bc, al, be, ca, cb, "timoshenko"))
        modes.append((_normalize(v, al, be, norm), al, be, ca, cb))
    return _assemble(modes)


# --------------------------------------------------------------------------------------------
# Boundary-condition check
# --------------------------------------------------------------------------------------------


@eqx.filter_jit
def _bc_fields(shapes, grid):
    F = dict(shapes.fields(grid))
    F["shear"] = F["dW"] - F["Theta"]
    F["dddW"] = jax.jvp(lambda e: shapes.fields(e)["ddW"], (grid,), (jnp.ones_like(grid),))[1]
    return F


def check_boundary_conditions(shapes: ModeShapes, bc: str, tol: float = 1e-8, *, theory: str = "auto") -> None:
    """Raise ``ValueError`` naming the first mode and condition that ``shapes`` violates.

    Each condition value is compared with ``tol`` relative to that quantity's largest magnitude
    over the span (so it is independent of the amplitude normalisation). ``theory``:
    ``'timoshenko'`` (free end: ``dTheta = 0`` and ``dW - Theta = 0``), ``'euler_bernoulli'``
    (free end: ``ddW = 0`` and ``dddW = 0``) or ``'auto'``: Euler–Bernoulli when
    ``Theta == dW`` along the span.
    """
    bc = _canonical_bc(bc)
    if theory not in ("auto", "timoshenko", "euler_bernoulli"):
        raise ValueError(f"unknown theory={theory!r}; valid: auto, timoshenko, euler_bernoulli")
    F = {k: np.asarray(v) for k, v in _bc_fields(shapes, jnp.linspace(0.0, 1.0, 201)).items()}
    if theory == "auto":
        scale = np.abs(F["dW"]).max(axis=0) + 1e-300
        eb = np.all(np.abs(F["shear"]).max(axis=0) <= 1e-12 * scale)
        theory = "euler_bernoulli" if eb else "timoshenko"
    free = ("ddW", "dddW") if theory == "euler_bernoulli" else ("dTheta", "shear")
    conds = {"c": ("W", "Theta"), "s": ("W", "dTheta"), "f": free}
    label = {"W": "W", "Theta": "Theta", "dTheta": "dTheta/deta", "shear": "dW/deta - Theta",
             "ddW": "d2W/deta2", "dddW": "d3W/deta3"}  # fmt: skip
    for end, j, where in ((bc[0], 0, "root"), (bc[1], -1, "tip")):
        for q in conds[end]:
            # shear's natural scale is dW's (the difference of two O(dW) quantities)
            ref = np.abs(F["dW" if q == "shear" else q]).max(axis=0)
            for m in range(F["W"].shape[-1]):
                val = F[q][j, m]
                if abs(val) > tol * max(ref[m], 1e-300):
                    pos = "0" if j == 0 else "1"
                    raise ValueError(
                        f"mode {m + 1}: {label[q]}({pos}) = {val:.3g} ≠ 0 at a {_END_NAMES[end]} {where} "
                        f"(tolerance {tol:g} relative to max|{label[q] if q != 'shear' else 'dW/deta'}| = {ref[m]:.3g})"
                    )
