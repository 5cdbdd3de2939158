"""Spatial (6D) algebra, rotations and quaternions.

Conventions, written once for the whole package (Featherstone 2008, ch. 2):

* A spatial motion vector is ``m = [ω; v]`` (angular first); a spatial force is ``f = [n; f]``.
* A Plücker transform ``B_X_A`` is stored as :class:`Transform` ``(E, r)``: ``E`` rotates
  A-coordinates into B-coordinates and ``r`` is the origin of B relative to A, in A
  coordinates (Featherstone's ``plux(E, r)``).  ``B_X_A m_A = [E ω; E (v − r × ω)]``.
* Quaternions are ``[w, x, y, z]`` (MuJoCo order), unit norm, and ``R(q)`` maps the rotated
  (child) frame's coordinates into the reference (parent) frame's coordinates.
* Rotation matrices in the model (``R``) map child coordinates into parent coordinates; the
  Plücker ``E`` of the same placement is ``R.T``.

Everything here is pure ``jax.numpy`` on single instances; batch with ``jax.vmap``. The NumPy
twins used by the model builder and the file loaders are in :mod:`diffsim.model.rotations`.

A free joint's velocity is the one place where a linear part comes first: ``v = [V; ω]``, as in
Pinocchio and MuJoCo (see :mod:`diffsim.model.joints`); every spatial vector is ``[ω; v]``.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp

# --------------------------------------------------------------------------------------
# 3D helpers
# --------------------------------------------------------------------------------------


def skew(a):
    """``[a×]``: the matrix with ``skew(a) @ b == cross(a, b)`` (seed 000, eq 3)."""
    a = jnp.asarray(a)
    z = jnp.zeros_like(a[..., 0])
    return jnp.stack(
        [
            jnp.stack([z, -a[..., 2], a[..., 1]], -1),
            jnp.stack([a[..., 2], z, -a[..., 0]], -1),
            jnp.stack([-a[..., 1], a[..., 0], z], -1),
        ],
        -2,
    )


def vee(W):
    """The vector ``a`` of a skew-symmetric matrix ``W = [a×]`` (inverse of :func:`skew`)."""
    return jnp.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], -1)


def safe_norm(x, axis=-1):
    """``|x|`` along ``axis`` with a finite (zero) gradient at ``x = 0``."""
    ss = jnp.sum(x * x, axis=axis)
    pos = ss > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, ss, 1.0)), 0.0)


def homogeneous(R, p):
    """The 4×4 homogeneous transform ``[[R, p], [0, 1]]`` (leading batch axes allowed)."""
    top = jnp.concatenate([R, p[..., :, None]], -1)
    bottom = jnp.broadcast_to(jnp.array([0.0, 0.0, 0.0, 1.0], R.dtype), R.shape[:-2] + (1, 4))
    return jnp.concatenate([top, bottom], -2)


#: Below this ``θ²`` the coefficients of :func:`so3_coeffs` come from their Taylor series in θ²
#: (12 terms: truncation below 1e-20 there). The closed forms cancel for small θ — ``θ − sin θ``,
#: and the rates ``(a − 2b)/(2θ²)``, ``(b − 3c)/(2θ²)``, whose round-off grows as ~60 ε/θ² — so the
#: switch sits where they are good to ~1e-14 (a switch at θ² = 1e-6 left the rates up to 0.8 % off,
#: relative, just above it).
SO3_SERIES_BELOW = 2.0
_SERIES_TERMS = 12


def _series(t2, offset, order=0):
    """``Σ_k (−1)^k t^k / (2k + offset)!`` (``order=1``: its derivative in ``t``) by Horner."""
    coef = [(-1) ** k / math.factorial(2 * k + offset) for k in range(_SERIES_TERMS)]
    if order:
        coef = [k * coef[k] for k in range(1, _SERIES_TERMS)]
    out = jnp.full_like(t2, coef[-1])
    for ck in coef[-2::-1]:
        out = out * t2 + ck
    return out


def _series_branch(t2):
    """``(small, ts)``: where the series apply, and ``θ²`` with 1 there (no division by 0)."""
    small = t2 < SO3_SERIES_BELOW
    return small, jnp.where(small, 1.0, t2)


def so3_coeffs(t2):
    """``a = sin θ/θ``, ``b = (1 − cos θ)/θ²``, ``c = (θ − sin θ)/θ³`` as functions of ``θ²``
    (their Taylor series below :data:`SO3_SERIES_BELOW`, so that they are accurate and every
    derivative exists at zero rotation)."""
    small, ts = _series_branch(t2)
    th = jnp.sqrt(ts)
    a = jnp.where(small, _series(t2, 1), jnp.sin(th) / th)
    b = jnp.where(small, _series(t2, 2), (1.0 - jnp.cos(th)) / ts)
    c = jnp.where(small, _series(t2, 3), (th - jnp.sin(th)) / (ts * th))
    return a, b, c


def so3_coeffs_and_rates(t2, dt2):
    """``(a, b, c, ḃ, ċ)`` of :func:`so3_coeffs` at ``θ² = t2`` and their rates for ``d(θ²)/dt =
    dt2``, stacked on a new leading axis: ``db/dθ² = (a − 2b)/(2θ²)``, ``dc/dθ² = (b − 3c)/(2θ²)``
    (the series' derivatives below :data:`SO3_SERIES_BELOW`), as one array."""
    a, b, c = so3_coeffs(t2)
    small, ts = _series_branch(t2)
    db = jnp.where(small, _series(t2, 2, 1), (a - 2.0 * b) / (2.0 * ts))
    dc = jnp.where(small, _series(t2, 3, 1), (b - 3.0 * c) / (2.0 * ts))
    return jnp.stack([a, b, c, db * dt2, dc * dt2])


def skew_squared(a):
    """``[a×]² = a aᵀ − |a|² 1`` (elementwise; no matrix product)."""
    a = jnp.asarray(a)
    return a[..., :, None] * a[..., None, :] - jnp.sum(a * a, -1)[..., None, None] * jnp.eye(3, dtype=a.dtype)


def so3_exp(phi):
    """Rodrigues' formula ``exp([φ]×) = 1 + a [φ]× + b [φ]×²`` for a rotation vector ``φ``
    (leading batch axes allowed; twice differentiable at ``φ = 0``)."""
    a, b, _ = so3_coeffs(jnp.sum(phi * phi, -1))
    eye = jnp.eye(3, dtype=phi.dtype)
    return eye + a[..., None, None] * skew(phi) + b[..., None, None] * skew_squared(phi)


# --------------------------------------------------------------------------------------
# How the small products are written: XLA dot kernels, or sums that XLA fuses
# --------------------------------------------------------------------------------------

#: The forms :func:`mm`, :func:`mv` and :func:`vdot` can take (:func:`set_products`).
PRODUCT_FORMS = ("auto", "dot", "unrolled")
_PRODUCTS = {"form": "auto"}


def set_products(form: str = "auto") -> None:
    """How diffsim writes the small matrix products of its forward hot paths: ``"dot"`` (XLA dot
    kernels), ``"unrolled"`` (the sum over the contracted index written out: elementwise work
    that XLA fuses with its neighbours) or ``"auto"`` (the default: ``"unrolled"`` when
    ``jax.default_backend()`` is a GPU when the function is traced, ``"dot"`` otherwise; it follows
    the default backend, not a ``jit(backend=...)`` or ``jax.default_device`` that places the program
    elsewhere). Call it outside traced functions.

    It covers the rigid-tree forward dynamics (the level sweeps of ABA), the joint kinematics of
    its sweeps, Plücker products, spatial inertias, the small inverses, point loads, quaternion
    helpers and configuration rates: S0's forward dynamics and RK4 rollout then hold no dot. The
    derivative's RNEA and ``M⁻¹``, the per-body algorithms, CRBA and the flexible paths keep their
    dot kernels. With no dot left, ``set_matmul_precision`` has no products to set on those paths
    (written out, float32 products are float32).

    The same values to rounding either way; the speed differs. Measured on one H200 (S0,
    ``benchmarks/bench_gpu.py``, README "On one GPU"): written out, the float64 forward dynamics
    under ``vmap`` runs 2.7× faster than with dot kernels (5.9e7 against 2.2e7 evaluations/s at
    batch 2²⁰; each dot was a kernel of its own, and the ~130 kernels passed their intermediates
    through memory) and ``mc.run`` 2.2×. On a CPU the written-out form runs at the same speed and
    compiles 1.3–1.6× longer (``benchmarks/bench_products.py``); reverse mode gains nothing from it
    on either. Read when a function is traced; a change clears JAX's caches of traced and compiled
    functions (``jax.clear_caches``), so that no cached program keeps the former form (a compiled
    function of the caller's that is held as an object, e.g. from ``.lower().compile()``, keeps it)."""
    if not isinstance(form, str) or form not in PRODUCT_FORMS:
        raise ValueError(f"set_products: {form!r} is not one of {PRODUCT_FORMS}")
    form = str(form)  # not a NumPy string
    if form != _PRODUCTS["form"]:
        _PRODUCTS["form"] = form
        jax.clear_caches()


def products() -> str:
    """The form the small products are traced in now: ``"dot"`` or ``"unrolled"`` (:func:`set_products`)."""
    form = _PRODUCTS["form"]
    if form == "auto":
        return "unrolled" if jax.default_backend() in ("gpu", "cuda", "rocm") else "dot"
    return form


def _contracted(n_a: int, n_b: int, what: str) -> int:
    """The length of the contracted axis of a written-out product; a mismatch is an error, as it is
    for ``@`` (indexing would clamp the shorter operand's index and give a wrong number)."""
    if n_a != n_b:
        raise ValueError(f"{what}: contracted axes of lengths {n_a} and {n_b}")
    return n_a


def mm_unrolled(A, B):
    """``A B`` for small matrices with leading batch axes, written as the sum over the contracted
    index (``Σ_k A[..., :, k] B[..., k, :]``): elementwise work that XLA fuses with its
    neighbours (:func:`set_products` says when that pays)."""
    n = _contracted(A.shape[-1], B.shape[-2], "mm_unrolled")
    return sum(A[..., :, k, None] * B[..., None, k, :] for k in range(n))


def mv_unrolled(A, x):
    """``A x`` as :func:`mm_unrolled` writes ``A B``."""
    n = _contracted(A.shape[-1], x.shape[-1], "mv_unrolled")
    return sum(A[..., :, k] * x[..., k, None] for k in range(n))


def mm(A, B):
    """``A B`` (leading batch axes broadcast) in the form :func:`products` says; operands that are no
    stack of matrices, or with an empty contracted axis, take ``@`` (its result and its errors)."""
    if products() == "unrolled" and jnp.ndim(A) >= 2 and jnp.ndim(B) >= 2 and A.shape[-1] > 0:
        return mm_unrolled(A, B)
    return A @ B


def mv(A, x):
    """``A x`` (leading batch axes broadcast) in the form :func:`products` says (as :func:`mm`)."""
    if products() == "unrolled" and jnp.ndim(A) >= 2 and jnp.ndim(x) >= 1 and A.shape[-1] > 0:
        return mv_unrolled(A, x)
    return jnp.einsum("...ij,...j->...i", A, x)


def vdot(a, b):
    """``Σ_k a_k b_k`` over the last axis, in the form :func:`products` says (as :func:`mm`)."""
    if products() == "unrolled" and jnp.ndim(a) >= 1 and jnp.ndim(b) >= 1 and a.shape[-1] > 0:
        n = _contracted(a.shape[-1], b.shape[-1], "vdot")
        return sum(a[..., k] * b[..., k] for k in range(n))
    return jnp.einsum("...i,...i->...", a, b)


def rot_axis_angle(axis, angle):
    """Rotation matrix of ``angle`` [rad] about the unit ``axis`` (Rodrigues)."""
    K = skew(axis)
    s, c = jnp.sin(angle), jnp.cos(angle)
    return jnp.eye(3, dtype=K.dtype) + s * K + (1.0 - c) * (K @ K)


def rot_z(theta):
    c, s = jnp.cos(theta), jnp.sin(theta)
    o, z = jnp.ones_like(theta), jnp.zeros_like(theta)
    return jnp.stack([jnp.stack([c, -s, z]), jnp.stack([s, c, z]), jnp.stack([z, z, o])])


# --------------------------------------------------------------------------------------
# Quaternions [w, x, y, z]
# --------------------------------------------------------------------------------------


def quat_identity(dtype=None):
    return jnp.array([1.0, 0.0, 0.0, 0.0], dtype=dtype)


def quat_mul(p, q):
    """Hamilton product ``p ⊗ q``."""
    pw, pv = p[0], p[1:]
    qw, qv = q[0], q[1:]
    w = pw * qw - vdot(pv, qv)
    v = pw * qv + qw * pv + jnp.cross(pv, qv)
    return jnp.concatenate([w[None], v])


def quat_conj(q):
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def quat_normalize(q):
    return q / jnp.linalg.norm(q)


def quat_to_rot(q):
    """Rotation matrix of a quaternion (normalised inside, so any non-zero ``q`` works)."""
    q = quat_normalize(q)
    w, x, y, z = q[0], q[1], q[2], q[3]
    return jnp.stack(
        [
            jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)]),
            jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)]),
            jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]),
        ]
    )


def _sinc_half(theta):
    """``sin(θ/2)/θ`` with a Taylor branch that is safe under ``grad`` at θ = 0."""
    small = theta < 1e-4
    t = jnp.where(small, 1.0, theta)
    return jnp.where(small, 0.5 - theta**2 / 48.0, jnp.sin(t / 2.0) / t)


def quat_exp(phi):
    """Unit quaternion of the rotation vector ``phi`` (axis × angle)."""
    theta2 = vdot(phi, phi)
    theta = jnp.sqrt(jnp.where(theta2 > 0, theta2, 1.0)) * (theta2 > 0)
    return jnp.concatenate([jnp.cos(theta / 2.0)[None], _sinc_half(theta) * phi])


def quat_log(q):
    """Rotation vector of a unit quaternion (shortest rotation, angle in [0, π])."""
    q = jnp.where(q[0] < 0, -q, q)
    vn2 = vdot(q[1:], q[1:])
    vn = jnp.sqrt(jnp.where(vn2 > 0, vn2, 1.0)) * (vn2 > 0)
    theta = 2.0 * jnp.arctan2(vn, q[0])
    small = vn < 1e-8
    scale = jnp.where(small, 2.0 / jnp.where(small, q[0], 1.0), theta / jnp.where(small, 1.0, vn))
    return scale * q[1:]


def quat_integrate(q, omega, dt):
    """``q ⊗ exp(ω dt)`` — rotation by the body-frame angular velocity ``ω`` over ``dt``."""
    return quat_mul(q, quat_exp(omega * dt))


def quat_rate(q, omega):
    """``q̇ = ½ q ⊗ [0, ω]`` for a body-frame angular velocity ``ω``."""
    return 0.5 * quat_mul(q, jnp.concatenate([jnp.zeros((1,), q.dtype), omega]))


def rot_to_quat(R):
    """Quaternion of a rotation matrix (NumPy-free, branch-free Shepperd method)."""
    tr = jnp.trace(R)
    cands = jnp.stack(
        [
            jnp.array([1.0 + tr, R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]),
            jnp.array([R[2, 1] - R[1, 2], 1.0 + 2 * R[0, 0] - tr, R[0, 1] + R[1, 0], R[0, 2] + R[2, 0]]),
            jnp.array([R[0, 2] - R[2, 0], R[0, 1] + R[1, 0], 1.0 + 2 * R[1, 1] - tr, R[1, 2] + R[2, 1]]),
            jnp.array([R[1, 0] - R[0, 1], R[0, 2] + R[2, 0], R[1, 2] + R[2, 1], 1.0 + 2 * R[2, 2] - tr]),
        ]
    )
    k = jnp.argmax(jnp.array([tr, R[0, 0], R[1, 1], R[2, 2]]))
    q = cands[k]
    q = q / jnp.linalg.norm(q)
    return jnp.where(q[0] < 0, -q, q)


def rot_to_euler_xyz(R):
    """Intrinsic x-y-z (roll-pitch-yaw about the moving axes) angles of ``R`` [rad]."""
    beta = jnp.arcsin(jnp.clip(R[0, 2], -1.0, 1.0))
    alpha = jnp.arctan2(-R[1, 2], R[2, 2])
    gamma = jnp.arctan2(-R[0, 1], R[0, 0])
    return jnp.stack([alpha, beta, gamma])


# --------------------------------------------------------------------------------------
# Plücker transforms and spatial products
# --------------------------------------------------------------------------------------


def _T(A):
    return jnp.swapaxes(A, -1, -2)


class Transform(eqx.Module):
    """Plücker transform ``B_X_A`` as ``(E, r)`` (Featherstone 2008, §2.8, ``plux``).

    Every method accepts leading batch axes (struct-of-arrays: ``E`` [..., 3, 3])."""

    E: jax.Array  # [..., 3, 3] A-coordinates -> B-coordinates
    r: jax.Array  # [..., 3] origin of B relative to A, in A coordinates

    @staticmethod
    def identity(dtype=None):
        return Transform(jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype=dtype))

    @staticmethod
    def from_placement(R, p):
        """Frame B placed in A at position ``p`` with orientation ``R`` (B coords -> A coords)."""
        return Transform(_T(R), p)

    def __matmul__(self, other: "Transform") -> "Transform":
        """``C_X_A = C_X_B @ B_X_A``."""
        return Transform(mm(self.E, other.E), other.r + mv(_T(other.E), self.r))

    def __getitem__(self, i) -> "Transform":
        return Transform(self.E[i], self.r[i])

    def inverse(self) -> "Transform":
        return Transform(_T(self.E), -mv(self.E, self.r))

    def apply_motion(self, m):
        w, v = m[..., :3], m[..., 3:]
        return jnp.concatenate([mv(self.E, w), mv(self.E, v - jnp.cross(self.r, w))], -1)

    def apply_force(self, f):
        n, f3 = f[..., :3], f[..., 3:]
        return jnp.concatenate([mv(self.E, n - jnp.cross(self.r, f3)), mv(self.E, f3)], -1)

    def inv_apply_motion(self, m):
        """``A_X_B m`` for ``self = B_X_A``."""
        w = mv(_T(self.E), m[..., :3])
        return jnp.concatenate([w, mv(_T(self.E), m[..., 3:]) + jnp.cross(self.r, w)], -1)

    def inv_apply_force(self, f):
        """``A_X_B^* f`` for ``self = B_X_A``: a force on B moved to A's coordinates."""
        f3 = mv(_T(self.E), f[..., 3:])
        return jnp.concatenate([mv(_T(self.E), f[..., :3]) + jnp.cross(self.r, f3), f3], -1)

    def motion_matrix(self):
        """The 6×6 motion transform matrix ``[[E, 0], [−E r×, E]]`` ([..., 6, 6]); its transpose
        is the force transform in the opposite direction."""
        Z = jnp.zeros_like(self.E)
        top = jnp.concatenate([self.E, Z], -1)
        bottom = jnp.concatenate([-jnp.cross(self.E, self.r[..., None, :]), self.E], -1)  # row i of E r×: E_i × r
        return jnp.concatenate([top, bottom], -2)

    @property
    def rotation(self):
        """Orientation of B in A (B coordinates -> A coordinates)."""
        return _T(self.E)

    @property
    def translation(self):
        return self.r


def crm(m):
    """Spatial motion cross-product matrix ``m×`` (Featherstone eq 2.31); leading batch axes
    allowed."""
    w, v = skew(m[..., :3]), skew(m[..., 3:])
    return jnp.concatenate([jnp.concatenate([w, jnp.zeros_like(w)], -1), jnp.concatenate([v, w], -1)], -2)


def cross_motion(m, n):
    """``m × n`` for two spatial motion vectors (leading batch axes allowed)."""
    w, v = m[..., :3], m[..., 3:]
    return jnp.concatenate([jnp.cross(w, n[..., :3]), jnp.cross(w, n[..., 3:]) + jnp.cross(v, n[..., :3])], -1)


def cross_force(m, f):
    """``m ×* f`` for a motion vector ``m`` and a force vector ``f`` (leading batch axes allowed)."""
    w, v = m[..., :3], m[..., 3:]
    return jnp.concatenate([jnp.cross(w, f[..., :3]) + jnp.cross(v, f[..., 3:]), jnp.cross(w, f[..., 3:])], -1)


def spatial_inertia(mass, com, inertia_com):
    """Spatial inertia at the body origin from mass, COM ``c`` and inertia about the COM
    (Featherstone eq 2.63: ``[[I_c + m c× c×ᵀ, m c×], [m c×ᵀ, m 1]]``); leading batch axes
    (one per body) allowed."""
    C = skew(com)
    m = jnp.asarray(mass)[..., None, None]
    top = jnp.concatenate([inertia_com + m * mm(C, _T(C)), m * C], -1)
    bottom = jnp.concatenate([m * _T(C), m * jnp.eye(3, dtype=C.dtype)], -1)
    return jnp.concatenate([top, bottom], -2)


# --------------------------------------------------------------------------------------
# Small symmetric positive-definite inverses without LAPACK calls (fast to compile)
# --------------------------------------------------------------------------------------


def _inv3(A):
    """Inverse of a 3×3 matrix by the adjugate."""
    c0 = jnp.cross(A[1], A[2])
    c1 = jnp.cross(A[2], A[0])
    c2 = jnp.cross(A[0], A[1])
    det = vdot(A[0], c0)
    return jnp.stack([c0, c1, c2], axis=1) / det


def small_inv(A):
    """Inverse of a small well-conditioned matrix (the joint-space ``D`` of ABA: 1×1, 2×2,
    3×3 closed form; 6×6 by 3×3 Schur complements; LU otherwise)."""
    n = A.shape[0]
    if n == 1:
        return 1.0 / A
    if n == 2:
        det = A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
        return jnp.array([[A[1, 1], -A[0, 1]], [-A[1, 0], A[0, 0]]]) / det
    if n == 3:
        return _inv3(A)
    if n == 6:
        P, Q, R, S = A[:3, :3], A[:3, 3:], A[3:, :3], A[3:, 3:]
        Pi = _inv3(P)
        PiQ, RPi = mm(Pi, Q), mm(R, Pi)
        Si = _inv3(S - mm(R, PiQ))  # Schur complement of P
        top_right = -mm(PiQ, Si)
        return jnp.block([[Pi - mm(top_right, RPi), top_right], [-mm(Si, RPi), Si]])
    return jnp.linalg.inv(A)
