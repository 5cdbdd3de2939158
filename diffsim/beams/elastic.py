"""Beam modes with elastic boundaries: springs at both ends and a tip mass with rotary inertia.

A uniform beam (Euler–Bernoulli or Timoshenko) of length ``L``, bending stiffness ``EI``, mass per
length ``rhoA`` (Timoshenko: shear stiffness ``kAG``, rotary inertia per length ``rhoI``), with a
rotational spring ``k_rot_*`` [N m/rad] and a translational spring ``k_lat_*`` [N/m] at the root
(``x = 0``) and at the tip (``x = L``), and a point mass ``tip_mass`` [kg] with rotary inertia
``tip_inertia`` [kg m²] at the tip. ``inf`` is the rigid support (exactly: the row becomes the
clamped/pinned condition), ``0`` the free one. Conventions of :mod:`.modes` (``eta = x/L``,
``Theta`` = section rotation × L, ``W`` per unit modal coordinate).

Boundary conditions (Hamilton's principle with ``U = ½∫EI w''² dx + ½ k_rot,0 w'(0)² + ½ k_lat,0
w(0)² + ½ k_rot,L w'(L)² + ½ k_lat,L w(L)²`` and ``T = ½∫rhoA ẇ² dx + ½ m_t ẇ(L)² + ½ J_t ẇ'(L)²``,
harmonic motion at ``omega``; Timoshenko: ``w'' → psi'``, ``EI w''' → −Q`` with the shear force
``Q = kAG (w' − psi)`` and the springs and tip inertia acting on the section rotation ``psi``)::

    x = 0:  EI w''(0) =  k_rot,0 w'(0)                    EI psi'(0) =  k_rot,0 psi(0)
            EI w'''(0) = −k_lat,0 w(0)                    Q(0)       =  k_lat,0 w(0)
    x = L:  EI w''(L) = (J_t omega² − k_rot,L) w'(L)      EI psi'(L) = (J_t omega² − k_rot,L) psi(L)
            EI w'''(L) = (k_lat,L − m_t omega²) w(L)      Q(L)       = (m_t omega² − k_lat,L) w(L)

(a positive root moment ``EI w''(0)`` rotates the spring by ``w'(0) = M/k``; a tip mass's inertia
force ``m_t omega² w(L)`` loads the tip like a negative spring.) In ``eta`` with the dimensionless
groups ``kappa_rot = k_rot L / EI``, ``kappa_lat = k_lat L³ / EI``, ``mu_t = m_t / (rhoA L)``,
``j_t = J_t / (rhoA L³)`` and ``Omega² = omega² rhoA L⁴ / EI`` (``= (beta L)⁴`` for Euler–Bernoulli)::

    ddW(0) = kappa_rot,0 dW(0)          dddW(0) = −kappa_lat,0 W(0)
    ddW(1) = (j_t Omega² − kappa_rot,1) dW(1)   dddW(1) = (kappa_lat,1 − mu_t Omega²) W(1)

Frequency equation: ``det M(s) = 0``, ``M`` the 4×4 boundary-condition matrix on the stable basis
``[sin(alpha eta), cos(alpha eta), e^{beta(eta−1)}, e^{−beta eta}]`` (the span of sin, cos, sinh,
cosh), each condition ``A = c B`` written as the row ``(A − c B)/(1 + |c|)`` over the quantities'
natural scales (``ddW/alpha²``, ``dW/alpha`` …), so a stiff spring (``c`` large) tends smoothly
to the rigid row and ``c = inf`` *is* the rigid row. ``s = sqrt(omega / c0)``,
``c0 = sqrt(EI / (rhoA L⁴))`` (``s = beta L`` for Euler–Bernoulli). Roots: scanned on a grid of
``s`` and bisected (:func:`~.modes.bisect_root`) on the host; shapes: the null vector of
``M(s)``, taken as the largest row of cofactors (the adjugate of a rank-3 matrix is the outer
product of its null vectors), so it is a polynomial — differentiable — function of ``M``.

Derivatives: the roots carry a ``jax.custom_jvp`` from the implicit function theorem on
``f(s, p) = det M(s, p) = 0``: ``ds/dp = −(∂f/∂p)/(∂f/∂s)`` (the bisection is never
differentiated); the shape coefficients then follow ``M(s(p), p)`` through the cofactors.

Orthogonality (``normalize='mass'``): ``∫₀¹ (W_i W_j + r Theta_i Theta_j) deta + mu_t W_i(1) W_j(1)
+ j_t Theta_i(1) Theta_j(1) = delta_ij`` with ``r = rhoI / (rhoA L²)`` (0 for Euler–Bernoulli): the
physical modal mass matrix, beam plus tip, is ``rhoA L · I`` (the :mod:`.modes` convention). In a
:func:`diffsim.beam` link give the same ``tip_mass`` and ``tip_inertia`` (the component about the
bending axis): the tip is a mass section of the link, so the link's mass matrix is exactly this
one. The stiffness orthogonality includes the spring energies: ``∫ EI θ'ᵢθ'ⱼ dx`` (the link's
``K``) plus :meth:`ElasticModes.boundary_stiffness` equals ``rhoA L omega_i² delta_ij``.
"""

from __future__ import annotations

import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from .modes import (
    ModeShapes,
    TrigHyperbolicModes,
    _assemble_arrays,
    _check_n,
    _check_normalize,
    _end_values,
    _section_wavenumbers,
    bisect_root,
)

__all__ = ["ElasticModes", "ElasticSnapshotModes", "elastic_modes", "elastic_frequencies"]

THEORIES = ("euler_bernoulli", "timoshenko")
# Order of the parameter vector p of the internal functions.
_PARAMS = ("EI", "rhoA", "L", "k_rot_root", "k_lat_root", "k_rot_tip", "k_lat_tip", "tip_mass", "tip_inertia",
           "kAG", "rhoI")  # fmt: skip
# Lowest s scanned: below it the stable basis degenerates (det ~ s^k); a mode there is refused
# (_check_no_low_mode); rigid-body modes (s = 0) of unsupported beams are excluded, like the
# ff/sf modes of :mod:`.modes`.
_S_MIN = 0.02
_S_STEP = 0.005


def _canonical_theory(theory) -> str:
    t = str(theory).strip().lower().replace("-", "_")
    if t not in THEORIES:
        raise ValueError(f"unknown theory={theory!r}; valid: euler_bernoulli (or euler-bernoulli), timoshenko")
    return t


# --------------------------------------------------------------------------------------------
# Boundary-condition matrix, its determinant and cofactors (xp = np on the host, jnp traced)
# --------------------------------------------------------------------------------------------


def _safe(k, xp):
    """(is k infinite, k with inf replaced by 0): keeps gradients finite at rigid supports."""
    inf = xp.isinf(k)
    return inf, xp.where(inf, 0.0, k)


def _spring_row(A, B, c, rigid, xp):
    """Row of ``A = c B``, ``c >= 0`` (root springs): ``(A − c B)/(1 + c)``; ``−B`` when rigid."""
    sig = xp.where(rigid, 1.0, c / (1.0 + c))
    return [(1.0 - sig) * a - sig * b for a, b in zip(A, B)]


def _tip_row(A, B, c, rigid, xp):
    """Row of ``A = −c B``, ``c`` of either sign (tip spring minus inertia): ``(A + c B)/(1 + |c|)``;
    ``B`` when the spring is rigid."""
    den = 1.0 + xp.abs(c)
    return [xp.where(rigid, b, (a + c * b) / den) for a, b in zip(A, B)]


def _wavenumbers(s, p, theory, xp):
    """Omega² = omega² rhoA L⁴/EI and (alpha, beta, ca, cb) in eta units at ``s``."""
    if theory == "euler_bernoulli":
        return s**4, s, s, s, s
    EI, rhoA, L, kAG, rhoI = p[0], p[1], p[2], p[9], p[10]
    omega = s**2 * xp.sqrt(EI / (rhoA * L**4))
    return (s**4,) + tuple(_section_wavenumbers(omega, EI, kAG, rhoA, rhoI, L, xp))


def _bc_matrix(s, p, theory, xp):
    """M(s, p) [..., 4, 4]: rows root rotation, root translation, tip rotation, tip translation."""
    EI, rhoA, L, kr0, kl0, kr1, kl1, mt, jt, kAG, rhoI = (p[i] for i in range(11))
    O2, al, be, ca, cb = _wavenumbers(s, p, theory, xp)
    v0 = _end_values(0.0, al, be, ca, cb, xp)
    v1 = _end_values(1.0, al, be, ca, cb, xp)
    (ir0, kr0), (il0, kl0), (ir1, kr1), (il1, kl1) = (_safe(k, xp) for k in (kr0, kl0, kr1, kl1))
    mu_t, j_t = mt / (rhoA * L), jt / (rhoA * L**3)
    if theory == "euler_bernoulli":
        rows = [
            _spring_row(v0["ddW"], v0["dW"], kr0 * L / EI / al, ir0, xp),
            _spring_row(v0["dddW"], [-x for x in v0["W"]], kl0 * L**3 / EI / al**3, il0, xp),
            _tip_row(v1["ddW"], v1["dW"], (kr1 * L / EI - j_t * O2) / al, ir1, xp),
            _tip_row(v1["dddW"], [-x for x in v1["W"]], (kl1 * L**3 / EI - mu_t * O2) / al**3, il1, xp),
        ]
    else:
        # (dW − Theta)/alpha = (L/kAG) Q / alpha ; Q(0) = k w(0), Q(1) = (m_t omega² − k) w(1)
        sh0 = [a - b for a, b in zip(v0["dW"], v0["Theta"])]
        sh1 = [a - b for a, b in zip(v1["dW"], v1["Theta"])]
        e = EI / (kAG * L**2)
        rows = [
            _spring_row(v0["dTheta"], v0["Theta"], kr0 * L / EI / al, ir0, xp),
            _spring_row(sh0, v0["W"], kl0 * L / kAG / al, il0, xp),
            _tip_row(v1["dTheta"], v1["Theta"], (kr1 * L / EI - j_t * O2) / al, ir1, xp),
            _tip_row(sh1, v1["W"], (kl1 * L / kAG - mu_t * O2 * e) / al, il1, xp),
        ]
    rows = [xp.stack(xp.broadcast_arrays(*r), axis=-1) for r in rows]
    return xp.stack(rows, axis=-2)


def _det3(m):
    return (m[..., 0, 0] * (m[..., 1, 1] * m[..., 2, 2] - m[..., 1, 2] * m[..., 2, 1])
            - m[..., 0, 1] * (m[..., 1, 0] * m[..., 2, 2] - m[..., 1, 2] * m[..., 2, 0])
            + m[..., 0, 2] * (m[..., 1, 0] * m[..., 2, 1] - m[..., 1, 1] * m[..., 2, 0]))  # fmt: skip


_DROP = [[j for j in range(4) if j != i] for i in range(4)]


def _cofactors(M):
    """Cofactor matrix C [..., 4, 4] (C_ij = (−1)^{i+j} minor_ij), by explicit 3×3 determinants:
    a polynomial in M, so its derivative exists at singular M (unlike LU-based det)."""
    rows = []
    for i in range(4):
        sub = M[..., _DROP[i], :]
        rows.append([(-1.0) ** (i + j) * _det3(sub[..., _DROP[j]]) for j in range(4)])
    return rows


def _det4(M):
    """det M by Laplace expansion along the first row (polynomial, see :func:`_cofactors`)."""
    sub = M[..., 1:, :]
    return sum((-1.0) ** j * M[..., 0, j] * _det3(sub[..., _DROP[j]]) for j in range(4))


# --------------------------------------------------------------------------------------------
# Roots: host scan + bisection, implicit-function derivative
# --------------------------------------------------------------------------------------------


def _s_cutoff(p, theory):
    """Timoshenko's second-spectrum cutoff sqrt(kAG/rhoI) in s units (inf for Euler–Bernoulli)."""
    EI, rhoA, L, kAG, rhoI = p[0], p[1], p[2], p[9], p[10]
    if theory == "euler_bernoulli" or rhoI == 0.0 or np.isinf(kAG):
        return np.inf
    return float(np.sqrt(np.sqrt(kAG / rhoI) / np.sqrt(EI / (rhoA * L**4))))


def _krylov_det(s, p):
    """det of the Euler–Bernoulli conditions on the Krylov functions K1..K4 (power series in
    s⁴ with positive terms: exact as s -> 0, where the stable basis degenerates), for s <= 1."""
    EI, rhoA, L, kr0, kl0, kr1, kl1, mt, jt = (p[i] for i in range(9))
    s = np.asarray(s, dtype=np.float64)
    x4 = s**4
    K = [sum(x4**k / math.factorial(4 * k + j) for k in range(6)) for j in range(4)]  # K_{j+1}(1)
    O = np.zeros_like(s)
    one = np.ones_like(s)
    # values [W, dW, ddW, dddW] of K1..K4 at eta = 0 and 1 (K1' = s⁴K4, K2' = K1, K3' = K2, K4' = K3)
    e0 = [[one, O, O, O], [O, one, O, O], [O, O, one, O], [O, O, O, one]]
    e1 = [K, [x4 * K[3], K[0], K[1], K[2]], [x4 * K[2], x4 * K[3], K[0], K[1]], [x4 * K[1], x4 * K[2], x4 * K[3], K[0]]]
    (ir0, kr0), (il0, kl0), (ir1, kr1), (il1, kl1) = (_safe(k, np) for k in (kr0, kl0, kr1, kl1))
    mu_t, j_t = mt / (rhoA * L), jt / (rhoA * L**3)
    rows = [
        _spring_row(e0[2], e0[1], kr0 * L / EI, ir0, np),
        _spring_row(e0[3], [-x for x in e0[0]], kl0 * L**3 / EI, il0, np),
        _tip_row(e1[2], e1[1], kr1 * L / EI - j_t * x4, ir1, np),
        _tip_row(e1[3], [-x for x in e1[0]], kl1 * L**3 / EI - mu_t * x4, il1, np),
    ]
    return _det4(np.stack([np.stack(np.broadcast_arrays(*r), axis=-1) for r in rows], axis=-2))


def _check_no_low_mode(p):
    """ValueError when a mode lies below the scan (s < _S_MIN): a nearly unsupported beam. The
    Euler–Bernoulli beam with the same ends bounds Timoshenko's modes from above, so it is the
    test for both. Modes with s < 1e-4 (omega < 1e-8 c0) are rigid to float64 and not seen."""
    d = _krylov_det(np.geomspace(1e-4, _S_MIN, 400), p)
    if np.any(np.sign(d[:-1]) * np.sign(d[1:]) < 0):
        raise ValueError(
            f"elastic_modes: a mode lies below s = sqrt(omega/c0) = {_S_MIN} (omega < {_S_MIN**2:g} c0): the "
            "supports are nearly a mechanism (tiny springs or a huge tip mass); its shapes are not resolved"
        )


def _host_roots(p, n, theory, s_max):
    """The first n roots s of det M(s, p) = 0 in (_S_MIN, s_max] (NumPy, float64)."""
    p = np.asarray(p, dtype=np.float64)
    _check_no_low_mode(p)
    s_hi = min(s_max, _s_cutoff(p, theory))
    det = lambda s: _det4(_bc_matrix(np.asarray(s, dtype=np.float64), p, theory, np))  # noqa: E731
    grid = np.arange(_S_MIN, s_hi, _S_STEP)
    d = det(grid)
    idx = np.nonzero(np.sign(d[:-1]) * np.sign(d[1:]) < 0)[0][:n]
    if idx.size < n:
        where = (f"below Timoshenko's second-spectrum cutoff omega_c = sqrt(kAG/rhoI) (s = {s_hi:.6g})"
                 if s_hi < s_max else f"with s = sqrt(omega/c0) <= s_max = {s_max:.6g}")  # fmt: skip
        raise ValueError(
            f"elastic_modes: the frequency equation has only {idx.size} root(s) {where}; requested n = {n} "
            "(lower n, or raise s_max)"
        )
    return np.array([bisect_root(det, grid[i], grid[i + 1]) for i in idx])


def _host_roots_or_nan(p, n, theory, s_max):
    """:func:`_host_roots`, or NaN roots where it would raise (nearly a mechanism, too few roots)
    and for negative or non-finite parameters (e.g. a fit's trial step of a parameter without a
    positive transform). Used inside traced code, where a raise from a host callback ends the whole
    compiled program (a fit, a batch); with NaN the shapes are NaN, the simulation stops with a
    failure status and a fit rejects that trial step. Concrete input is validated, with the error
    message, before any tracing (:func:`_build`)."""
    try:
        q = np.asarray(p, dtype=np.float64)
        if not (np.all(q >= 0) and np.all(np.isfinite(q[[0, 1, 2, 7, 8]]))):  # NaN fails both
            raise ValueError("negative or non-finite parameters")
        return _host_roots(p, n, theory, s_max)
    except ValueError:
        return np.full(n, np.nan)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2))
def _roots(n, theory, s_max, p):
    """s [n] (traceable): a host callback for the value (NaN where the equation has no valid
    roots, :func:`_host_roots_or_nan`), the implicit-function JVP below."""
    out = jax.ShapeDtypeStruct((n,), p.dtype)
    host = lambda q: np.asarray(_host_roots_or_nan(q, n, theory, s_max), dtype=q.dtype)  # noqa: E731
    return jax.pure_callback(host, out, p, vmap_method="sequential")


@_roots.defjvp
def _roots_jvp(n, theory, s_max, primals, tangents):
    (p,), (dp,) = primals, tangents
    s = _roots(n, theory, s_max, p)
    f = lambda si, q: _det4(_bc_matrix(si, q, theory, jnp))  # noqa: E731
    f_s = jax.vmap(jax.grad(f, 0), (0, None))(s, p)
    f_p = jax.vmap(lambda si: jax.jvp(lambda q: f(si, q), (p,), (dp,))[1])(s)
    return s, -f_p / f_s  # implicit function theorem on f(s(p), p) = 0


# --------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------


def _quadrature(n, s_max):
    m = 64 + int(8 * min(s_max, (n + 2) * np.pi))
    x, w = np.polynomial.legendre.leggauss(m)
    return 0.5 * (x + 1.0), 0.5 * w


def _scaled(modes: TrigHyperbolicModes, f) -> TrigHyperbolicModes:
    """The same shapes times f [n] (every coefficient, wavenumbers kept)."""
    names = ("a", "b", "c", "d", "ta", "tb", "tc", "td", "p", "q", "tp", "tq")
    return eqx.tree_at(lambda m: [getattr(m, k) for k in names], modes, [getattr(modes, k) * f for k in names])


def _mass(fields, p, theory):
    """Diagonal of the modal mass (beam + tip) over rhoA L: ∫(W² + r Theta²) + mu_t W(1)² + j_t Theta(1)²."""
    F, w, F1 = fields
    rhoA, L, mt, jt, rhoI = p[1], p[2], p[7], p[8], p[10]
    m = w @ F["W"] ** 2 + (mt / (rhoA * L)) * F1["W"] ** 2 + (jt / (rhoA * L**3)) * F1["Theta"] ** 2
    if theory == "timoshenko":
        m = m + rhoI / (rhoA * L**2) * (w @ F["Theta"] ** 2)
    return m


def _max_abs(modes):
    """max_{eta in [0,1]} |W| per mode: grid argmax refined by Newton steps on dW = 0."""
    grid = jnp.linspace(0.0, 1.0, 2001, dtype=modes.beta.dtype)
    W = modes.fields(grid)["W"]
    eta = grid[jnp.argmax(jnp.abs(W), axis=0)]
    interior = (eta > 0.0) & (eta < 1.0)
    for _ in range(4):
        F = modes.fields(eta)
        dW, ddW = jnp.diagonal(F["dW"]), jnp.diagonal(F["ddW"])
        eta = jnp.where(interior, jnp.clip(eta - dW / jnp.where(ddW == 0, 1.0, ddW), 0.0, 1.0), eta)
    return jnp.abs(jnp.diagonal(modes.fields(eta)["W"]))


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))  # one compilation per (n, theory, ...)
def _solve(n, theory, normalize, s_max, p):
    """(s [n], TrigHyperbolicModes) for the parameter vector p [11] (traceable)."""
    s = _roots(n, theory, s_max, p)
    _, al, be, ca, cb = _wavenumbers(s, p, theory, jnp)
    M = _bc_matrix(s, p, theory, jnp)  # [n, 4, 4]
    C = jnp.stack([jnp.stack(r, -1) for r in _cofactors(M)], -2)  # [n, 4(i), 4(j)]
    i = jnp.argmax(jnp.sum(C**2, axis=-1), axis=-1)  # the best-conditioned cofactor row
    v = jnp.take_along_axis(C, i[:, None, None], axis=1)[:, 0, :]  # [n, 4], null vector of M
    v = v / jnp.linalg.norm(v, axis=-1, keepdims=True)
    modes = _assemble_arrays(v[:, 0], v[:, 1], v[:, 2], v[:, 3], al, be, ca, cb, jnp)
    # sign: W > 0 just off the root (first grid point where |W| exceeds 1e-3 of its maximum)
    W = modes.fields(jnp.linspace(0.0, 1.0, 401, dtype=p.dtype))["W"]
    first = jnp.argmax(jnp.abs(W) > 1e-3 * jnp.max(jnp.abs(W), axis=0), axis=0)
    modes = _scaled(modes, jnp.sign(W[first, jnp.arange(n)]))
    if normalize == "mass":
        eta, w = _quadrature(n, s_max)
        F = modes.fields(jnp.asarray(eta, p.dtype))
        scale = 1.0 / jnp.sqrt(_mass((F, jnp.asarray(w, p.dtype), modes.fields(jnp.ones((), p.dtype))), p, theory))
    else:
        scale = 1.0 / _max_abs(modes)
    return s, _scaled(modes, scale)


def _pack(EI, rhoA, L, k_rot_root, k_lat_root, k_rot_tip, k_lat_tip, tip_mass, tip_inertia, kAG, rhoI, theory):
    vals = dict(EI=EI, rhoA=rhoA, L=L, k_rot_root=k_rot_root, k_lat_root=k_lat_root, k_rot_tip=k_rot_tip,
                k_lat_tip=k_lat_tip, tip_mass=tip_mass, tip_inertia=tip_inertia, kAG=kAG, rhoI=rhoI)  # fmt: skip
    if theory == "euler_bernoulli":
        if kAG is not None or rhoI is not None:
            raise ValueError("kAG and rhoI are Timoshenko section data: give theory='timoshenko' to use them")
        vals.update(kAG=np.inf, rhoI=0.0)
    elif kAG is None:
        raise ValueError("theory='timoshenko' needs the shear stiffness kAG [N] (and rhoI [kg m], default 0)")
    elif rhoI is None:
        vals["rhoI"] = 0.0
    if is_concrete(list(vals.values())):
        for name, v in vals.items():
            a = np.asarray(v, dtype=float)
            if a.shape != ():
                raise ValueError(f"{name} must be a scalar, got shape {a.shape}")
            if np.isnan(a) or a < 0:
                raise ValueError(f"{name} must be non-negative (inf = rigid for springs), got {v!r}")
            if name in ("EI", "rhoA", "L", "kAG") and a == 0:
                raise ValueError(f"{name} must be positive, got {v!r}")
            if np.isinf(a) and name not in ("k_rot_root", "k_lat_root", "k_rot_tip", "k_lat_tip", "kAG"):
                raise ValueError(f"{name} must be finite, got {v!r}")
    dtype = jnp.result_type(*[jnp.asarray(v) for v in vals.values()], float)
    return jnp.stack([jnp.asarray(vals[k], dtype) for k in _PARAMS])


def _s_max(n, s_max):
    """Default scan limit: beta_n of the clamped–clamped beam (< (n + 1/2) pi) bounds every root:
    springs only stiffen a free end, a tip mass only lowers frequencies (Rayleigh's min–max)."""
    return float((n + 1) * np.pi) if s_max is None else float(s_max)


class _BeamData(eqx.Module):
    """The beam and supports an elastic-boundary family is solved for (:data:`_PARAMS`; the
    arguments of :func:`elastic_modes`)."""

    EI: jax.Array
    rhoA: jax.Array
    L: jax.Array
    k_rot_root: jax.Array
    k_lat_root: jax.Array
    k_rot_tip: jax.Array
    k_lat_tip: jax.Array
    tip_mass: jax.Array
    tip_inertia: jax.Array
    kAG: jax.Array
    rhoI: jax.Array


class ElasticModes(ModeShapes, _BeamData):
    """Elastic-boundary mode shapes whose float fields are the *physical* parameters (module
    docstring): every call to :meth:`fields` solves the frequency equation (roots on the host,
    implicit-function derivatives), so in a :func:`diffsim.beam` link the springs, tip mass and
    section data are fittable parameters (``beam.<b>.modes_y.k_rot_root`` …) and the shapes move
    with them. Build with :func:`elastic_modes` (``parametric=True``) for validated input.
    """

    n_modes: int = eqx.field(static=True)
    theory: str = eqx.field(static=True)
    normalize: str = eqx.field(static=True)
    s_max: float = eqx.field(static=True)

    @property
    def n(self) -> int:
        return self.n_modes

    def _p(self):
        return jnp.stack(jnp.broadcast_arrays(*[jnp.asarray(getattr(self, k)) for k in _PARAMS]))

    def shapes(self) -> TrigHyperbolicModes:
        """The shapes at the current parameters, as a :class:`TrigHyperbolicModes`."""
        return _solve(self.n_modes, self.theory, self.normalize, self.s_max, self._p())[1]

    def fields(self, eta) -> dict:
        return self.shapes().fields(eta)

    def solve(self):
        """(omega [n] rad/s, shapes as :class:`TrigHyperbolicModes`) from one root solve."""
        p = self._p()
        s, shapes = _solve(self.n_modes, self.theory, self.normalize, self.s_max, p)
        return s**2 * jnp.sqrt(p[0] / (p[1] * p[2] ** 4)), shapes

    def frequencies(self):
        """Natural circular frequencies omega_i = s_i² sqrt(EI/(rhoA L⁴)) [rad/s] [n]."""
        return _omega(self.n_modes, self.theory, self.s_max, self._p())

    def resolved(self) -> SolvedElasticModes:
        """These modes with the frequency equation solved once (:class:`SolvedElasticModes`):
        each :meth:`fields` call here solves it again, and XLA cannot merge the copies (the roots
        come from a host callback), so a link's integrals that evaluate the shapes five times
        compiled five solves and their derivatives."""
        return SolvedElasticModes(self, self.shapes())

    def boundary_stiffness(self, L=None, *, shapes: TrigHyperbolicModes | None = None):
        """Modal stiffness of the four springs [n, n] (units of a link's ``K``, N/m per unit
        coordinate²): ``k_rot,0 psi(0)psi(0)ᵀ + k_lat,0 W(0)W(0)ᵀ + k_rot,L psi(1)psi(1)ᵀ + k_lat,L W(1)W(1)ᵀ``
        with ``psi = Theta/L`` (``L``: the link's length, by default the modes' own); a rigid (inf)
        spring contributes nothing (its shape value is 0). ``shapes``: the solved shapes, when
        the caller has them (:meth:`resolved`)."""
        return _spring_stiffness(self, self.shapes() if shapes is None else shapes, L)

    def host_shapes(self) -> TrigHyperbolicModes | None:
        """The shapes solved once on the host in NumPy (up to each mode's scale and sign), for
        build-time checks without compiling the traceable solve; ``None`` when traced."""
        p = _host_params(self)
        return None if p is None else _host_solve(self.n_modes, self.theory, self.s_max, p)

    def host_fields(self, eta):
        shapes = self.host_shapes()
        return None if shapes is None else shapes.host_fields(eta)


def _host_params(m):
    """The parameter vector p [11] of an elastic family as float64 NumPy, or None when traced."""
    try:
        return np.array([np.asarray(getattr(m, k), dtype=np.float64) for k in _PARAMS])
    except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None


def _host_solve(n, theory, s_max, p) -> TrigHyperbolicModes:
    """The shapes of :func:`_solve` up to each mode's scale and sign, in NumPy on the host (roots,
    cofactor null vectors): for build-time checks, without compiling the traceable solve."""
    s = _host_roots(p, n, theory, s_max)
    _, al, be, ca, cb = _wavenumbers(s, p, theory, np)
    C = np.stack([np.stack(r, -1) for r in _cofactors(_bc_matrix(s, p, theory, np))], -2)  # [n, 4, 4]
    v = C[np.arange(n), np.argmax(np.sum(C**2, axis=-1), axis=-1), :]
    v = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return _assemble_arrays(v[:, 0], v[:, 1], v[:, 2], v[:, 3], al, be, ca, cb, np)


def _spring_stiffness(springs, shapes, L=None):
    """Modal stiffness [n, n] of the four springs of ``springs`` (an elastic family) at ``shapes``."""
    F0, F1 = shapes.fields(jnp.zeros(())), shapes.fields(jnp.ones(()))
    L = jnp.asarray(springs.L if L is None else L)
    K = 0.0
    for k, F, q, s in ((springs.k_rot_root, F0, "Theta", 1 / L), (springs.k_lat_root, F0, "W", 1.0),
                       (springs.k_rot_tip, F1, "Theta", 1 / L), (springs.k_lat_tip, F1, "W", 1.0)):  # fmt: skip
        _, ks = _safe(jnp.asarray(k), jnp)
        K = K + ks * s**2 * jnp.outer(F[q], F[q])
    return K


class SolvedElasticModes(ModeShapes):
    """:class:`ElasticModes` with their frequency equation solved (:meth:`ElasticModes.resolved`):
    :meth:`fields` evaluates the solved shapes, :meth:`boundary_stiffness` the springs at them.
    Derived data, differentiable through the solve; the parameters stay those of ``modes``."""

    modes: ElasticModes
    solved: TrigHyperbolicModes

    @property
    def n(self) -> int:
        return self.modes.n

    def fields(self, eta) -> dict:
        return self.solved.fields(eta)

    def boundary_stiffness(self, L=None):
        return self.modes.boundary_stiffness(L, shapes=self.solved)

    def resolved(self) -> SolvedElasticModes:
        return self

    def host_fields(self, eta):
        return self.solved.host_fields(eta)


class ElasticSnapshotModes(TrigHyperbolicModes, _BeamData):
    """The shapes of :func:`elastic_modes` (``parametric=False``): a :class:`TrigHyperbolicModes`
    whose coefficients are fixed (a fit moves them as free-form shapes, the frequency equation is
    not re-solved), carrying the beam and the supports they were solved for (``EI`` … ``rhoI``, as
    in :class:`ElasticModes`). A :func:`diffsim.beam` link adds the springs' strain energy
    (:meth:`boundary_stiffness`) to its stiffness, as for the parametric form, and refuses a link
    whose ``L``, ``EI``, ``mu``, tip or section data differ from these."""

    theory: str = eqx.field(static=True)

    def __init__(self, shapes: TrigHyperbolicModes, p, theory: str):
        for k in ("a", "b", "c", "d", "alpha", "beta", "ta", "tb", "tc", "td", "p", "q", "tp", "tq"):
            setattr(self, k, getattr(shapes, k))
        for i, k in enumerate(_PARAMS):
            setattr(self, k, p[i])
        self.theory = theory

    def boundary_stiffness(self, L=None):
        """Modal stiffness of the four springs [n, n] at these shapes (:meth:`ElasticModes.boundary_stiffness`)."""
        return _spring_stiffness(self, self, L)


def _build(n, theory, normalize, s_max, kw):
    n = _check_n(n)
    theory = _canonical_theory(theory)
    normalize = _check_normalize(normalize)
    p = _pack(theory=theory, **kw)
    s_max = _s_max(n, s_max)
    if is_concrete(p):  # clear errors now rather than from inside a callback
        _host_roots(np.asarray(p), n, theory, s_max)
    return n, theory, normalize, s_max, p


def elastic_modes(n: int, *, L, EI, rhoA, k_rot_root=np.inf, k_lat_root=np.inf, k_rot_tip=0.0, k_lat_tip=0.0,
                  tip_mass=0.0, tip_inertia=0.0, theory: str = "euler_bernoulli", kAG=None, rhoI=None,
                  normalize: str = "mass", s_max=None, parametric: bool = False):  # fmt: skip
    """First ``n`` modes of a uniform beam with elastic ends and a tip mass (module docstring).

    Args:
        n: number of modes (rigid-body modes at ``omega = 0`` of an unsupported beam excluded).
        L [m], EI [N m²], rhoA [kg/m]: the beam.
        k_rot_root [N m/rad], k_lat_root [N/m], k_rot_tip, k_lat_tip: springs (``inf`` rigid,
            0 free); defaults: clamped root, free tip.
        tip_mass [kg], tip_inertia [kg m²] (about the bending axis): point mass at ``x = L``.
        theory: ``'euler_bernoulli'`` (alias ``'euler-bernoulli'``) or ``'timoshenko'`` with
            ``kAG`` [N] (shear stiffness) and ``rhoI`` [kg m] (rotary inertia per length, default 0).
        normalize: ``'mass'`` (default: beam + tip modal mass ``rhoA L · I``, see module
            docstring) or ``'max'`` (``max |W| = 1`` on the span). Sign: ``W > 0`` just off the root.
        s_max: scan limit for ``s = sqrt(omega/c0)`` (default ``(n + 1) pi``, which bounds every
            root); ValueError when fewer than ``n`` roots lie below it (or below Timoshenko's cutoff).
        parametric: return an :class:`ElasticModes` (physical parameters as leaves, shapes solved
            on every use) instead of a snapshot (:class:`ElasticSnapshotModes`: a
            :class:`TrigHyperbolicModes` with fixed coefficients). In a :func:`diffsim.beam` link
            both add the springs' strain energy (``boundary_stiffness``) to its stiffness — the
            shapes of a spring-supported beam without the spring's energy would be a link with a
            free hinge at the root — and both must be given the link of their own beam (``L``,
            ``EI``, ``mu``, ``tip_mass``, ``tip_inertia``); the snapshot's shapes stay fixed when
            a fit moves the springs or the beam's data.

    Every float argument may be a JAX value: under ``jit``/``grad``/``vmap`` the returned
    coefficients are differentiable functions of them (implicit-function roots). Validation
    runs when the values are concrete (ValueError); inside ``jit`` parameters without valid roots
    give NaN frequencies and shapes (a simulation with them fails with a status, a fit rejects
    the step) instead of a raise that would end the compiled program.
    """
    kw = dict(EI=EI, rhoA=rhoA, L=L, k_rot_root=k_rot_root, k_lat_root=k_lat_root, k_rot_tip=k_rot_tip,
              k_lat_tip=k_lat_tip, tip_mass=tip_mass, tip_inertia=tip_inertia, kAG=kAG, rhoI=rhoI)  # fmt: skip
    n, theory, normalize, s_max, p = _build(n, theory, normalize, s_max, kw)
    if parametric:
        return ElasticModes(*[p[i] for i in range(len(_PARAMS))], n_modes=n, theory=theory, normalize=normalize,
                            s_max=s_max)  # fmt: skip
    return ElasticSnapshotModes(_solve(n, theory, normalize, s_max, p)[1], p, theory)


def elastic_frequencies(n: int, *, L, EI, rhoA, k_rot_root=np.inf, k_lat_root=np.inf, k_rot_tip=0.0, k_lat_tip=0.0,
                        tip_mass=0.0, tip_inertia=0.0, theory: str = "euler_bernoulli", kAG=None, rhoI=None,
                        s_max=None):  # fmt: skip
    """The first ``n`` natural circular frequencies [rad/s] of :func:`elastic_modes`' beam
    (same arguments), a differentiable JAX function of every float argument."""
    kw = dict(EI=EI, rhoA=rhoA, L=L, k_rot_root=k_rot_root, k_lat_root=k_lat_root, k_rot_tip=k_rot_tip,
              k_lat_tip=k_lat_tip, tip_mass=tip_mass, tip_inertia=tip_inertia, kAG=kAG, rhoI=rhoI)  # fmt: skip
    n, theory, _, s_max, p = _build(n, theory, "mass", s_max, kw)
    return _omega(n, theory, s_max, p)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _omega(n, theory, s_max, p):
    return _roots(n, theory, s_max, p) ** 2 * jnp.sqrt(p[0] / (p[1] * p[2] ** 4))
