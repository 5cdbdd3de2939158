"""Cost terms for planning: small pure functions returning a scalar, to be combined in the
``running_cost(q, v, τ)`` / ``terminal_cost(q, v)`` given to :func:`diffsim.plan.solve`.

Each is smooth (C^∞) so that DDP's exact cost Hessians are well defined, and each is ≈ a squared
distance near its minimum, so weights read as ``1/tolerance²``.

Two structured costs tell DDP how to build its local quadratic model (:mod:`.ddp`):

* :class:`LeastSquares` ``(residual, weights)``: ``ℓ = Σ_i w_i r_i²`` (no ½), callable like any
  cost; DDP uses the Gauss–Newton Hessian ``2 Jᵀ W J`` (``J = ∂r/∂(δx, u)`` by forward mode) and the
  exact gradient ``2 Jᵀ W r`` — iLQR with Gauss–Newton cost Hessians, what Crocoddyl's (Box)FDDP does
  for its residual cost models (Crocoddyl's ``CostModelResidual`` is ``½ Σ w_i r_i²``: its
  weights are twice these).
* :class:`Sum` ``(a, b, ...)``: the sum of terms, so residual terms mix with general scalar ones
  (those get the exact Hessian, projected onto the PSD cone).

A plain callable is one general term (exact, PSD-projected Hessian), as before.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from ..dynamics.dispatch import kinetic_energy
from ..dynamics.kinematics import site_poses
from ..dynamics.sections import strain_energy
from ..model.joints import JointType
from ..model.model import Model


class LeastSquares:
    """A least-squares cost ``ℓ(*args) = Σ_i w_i r_i(*args)²`` = ``‖r‖²_W`` (no ½ factor).

    ``residual``: a JAX callable with the cost's arguments (``(q, v, τ)`` running, ``(q, v)``
    terminal) returning a vector ``r`` [m]; ``weights``: ``w ≥ 0``, a scalar or [m] (static
    numbers, compiled in like the constants a cost closes over; to vary them under ``vmap``, close
    over traced values inside ``residual``).

    Calling it gives the scalar ``ℓ`` (so :func:`diffsim.plan.solve`'s shooting and CEM, and the
    trajectory cost, use it like any cost). DDP (:mod:`.ddp`) reads the residual instead and uses the
    Gauss–Newton model of the term at ``z = (δx, u)``: gradient ``2 Jᵀ W r`` (exact) and Hessian
    ``2 Jᵀ W J`` with ``J = ∂r/∂z`` (forward mode), i.e. the exact Hessian less
    ``2 Σ_i w_i r_i ∇²r_i`` — iLQR with Gauss–Newton cost Hessians as in Crocoddyl's FDDP for its
    residual costs. The fixed point (``∇J = 0``) is unchanged; only the step differs where the
    residual is not zero. Equal and hashing alike when the residual is the same object and the
    weights are equal (no recompilation for an equal cost)."""

    def __init__(self, residual: Callable, weights=1.0):
        if not callable(residual):
            raise TypeError(f"LeastSquares: residual must be a callable, got {type(residual).__name__}")
        try:
            w = np.asarray(weights, dtype=float)
        except (TypeError, ValueError):
            raise TypeError("LeastSquares: weights must be concrete numbers (a scalar or a vector), got "
                            f"{type(weights).__name__}") from None
        if w.ndim > 1:
            raise ValueError(f"LeastSquares: weights must be a scalar or a vector [m], got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"LeastSquares: weights must be finite and >= 0 (a Gauss–Newton Hessian 2 JᵀWJ is "
                             f"positive semidefinite only then), got {w.tolist()}")
        self.residual = residual
        self.weights = w

    def _key(self):
        return (self.residual, self.weights.shape, self.weights.tobytes())

    def __eq__(self, other):
        return isinstance(other, LeastSquares) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"LeastSquares({getattr(self.residual, '__name__', self.residual)!r}, weights={self.weights.tolist()})"

    def residual_and_weights(self, *args):
        """``(r [m], w [m])`` at ``args`` (checks that ``r`` is a vector the weights fit)."""
        r = jnp.asarray(self.residual(*args))
        if r.ndim != 1:
            raise ValueError(f"LeastSquares: the residual must return a vector [m], got shape {r.shape}")
        if self.weights.ndim == 1 and self.weights.shape != r.shape:
            raise ValueError(f"LeastSquares: weights have shape {self.weights.shape} but the residual has "
                             f"shape {r.shape}")
        return r, jnp.broadcast_to(jnp.asarray(self.weights, r.dtype), r.shape)

    def __call__(self, *args):
        r, w = self.residual_and_weights(*args)
        return jnp.sum(w * r**2)


class Sum:
    """``ℓ(*args) = Σ_j term_j(*args)``: a cost made of terms, each a :class:`LeastSquares`
    (Gauss–Newton Hessian in DDP) or a plain scalar callable (exact Hessian, PSD-projected).
    Nested sums are flattened. Equal and hashing alike when the terms are."""

    def __init__(self, *terms):
        flat = []
        for t in terms:
            if isinstance(t, Sum):
                flat.extend(t.terms)
            elif callable(t):
                flat.append(t)
            else:
                raise TypeError(f"Sum: every term must be a callable cost, got {type(t).__name__}")
        if not flat:
            raise ValueError("Sum: give at least one term")
        self.terms = tuple(flat)

    def __eq__(self, other):
        return isinstance(other, Sum) and self.terms == other.terms

    def __hash__(self):
        return hash(("Sum", self.terms))

    def __repr__(self):
        return f"Sum{self.terms!r}"

    def __call__(self, *args):
        return sum(t(*args) for t in self.terms)


def terms(cost) -> tuple:
    """The terms of a cost: those of a :class:`Sum`, else the cost itself."""
    return cost.terms if isinstance(cost, Sum) else (cost,)


def _site(model: Model, site) -> int:
    """A site's index from its name or index (an index out of range is an error: JAX indexing
    would clamp it to the last site)."""
    if isinstance(site, str):
        return model.topology.site_index(site)
    n = len(model.topology.site_names)
    if isinstance(site, bool) or not isinstance(site, (int, np.integer)) or not 0 <= int(site) < n:
        raise ValueError(f"site must be a site name or an index in [0, {n}), got {site!r}")
    return int(site)


def _target(x, shape, what, dtype):
    """``x`` as an array of ``shape``; a batch of targets (or any other shape) is an error — it
    would broadcast into a sum over the targets (``vmap`` the cost over a batch instead)."""
    x = jnp.asarray(x, dtype)
    if x.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {x.shape} (for several targets, vmap over them)")
    return x


def site_position_error(model: Model, q, site, target):
    """``|p_s(q) − p*|²`` [m²]: squared distance of site ``site`` (name or index) from the world
    point ``target`` [3]."""
    p = site_poses(model, q)[1][_site(model, site)]
    return jnp.sum((p - _target(target, (3,), "site_position_error: target", p.dtype)) ** 2)


def site_orientation_error(model: Model, q, site, target_rot):
    """``3 − tr(R*ᵀ R_s(q)) = 2 (1 − cos θ)`` [-], with ``θ`` the angle of the rotation from the
    target orientation ``target_rot`` [3, 3] (world frame) to the site's: ≈ θ² near the target,
    smooth everywhere (no logarithm singularity at θ = 0 or π)."""
    R = site_poses(model, q)[0][_site(model, site)]
    return 3.0 - jnp.sum(_target(target_rot, (3, 3), "site_orientation_error: target_rot (a rotation matrix)",
                                 R.dtype) * R)


def _base_quaternion_slice(model: Model, joint):
    t = model.topology
    if joint is None:
        cands = [i for i, jt in enumerate(t.joint_types) if jt in (JointType.FREE, JointType.SPHERICAL)]
        if not cands:
            raise ValueError("base_attitude_change: the model has no free or spherical joint")
        i = cands[0]
    else:
        if joint not in t.joint_names:
            raise ValueError(f"base_attitude_change: no joint named {joint!r}")
        i = t.joint_names.index(joint)
        if t.joint_types[i] not in (JointType.FREE, JointType.SPHERICAL):
            raise ValueError(f"base_attitude_change: joint {joint!r} has no quaternion")
    s = t.q_start[i] + (3 if t.joint_types[i] is JointType.FREE else 0)
    return slice(s, s + 4)


def base_attitude_change(model: Model, q, q_ref, joint: str | None = None):
    """``4 (1 − ⟨ρ, ρ_ref⟩²) = 4 sin²(θ/2)`` [-] (≈ θ²): the rotation angle ``θ`` of the base (the
    first free or spherical joint, or ``joint``) between configurations ``q_ref`` and ``q``;
    invariant to the quaternion's sign."""
    sl = _base_quaternion_slice(model, joint)
    a, b = q[sl], jnp.asarray(q_ref)[sl]
    c = jnp.dot(a, b) / (jnp.linalg.norm(a) * jnp.linalg.norm(b))
    return 4.0 * (1.0 - c**2)


def box_penalty(x, lo, hi, width):
    """``Σ (w·softplus((x − hi)/w))² + (w·softplus((lo − x)/w))²``: a smooth exterior penalty of
    the box ``lo ≤ x ≤ hi`` (→ the squared violation as the width ``w → 0``; ≈ ``w² e^{−2d/w}``
    at a distance ``d`` inside)."""
    x = jnp.asarray(x)
    w = jnp.asarray(width, x.dtype)
    if is_concrete(lo, hi) and np.any(np.asarray(lo) > np.asarray(hi)):
        raise ValueError(f"box_penalty: lower > upper ({np.asarray(lo).tolist()} > {np.asarray(hi).tolist()})")
    if is_concrete(w) and not np.all(np.asarray(w) > 0):
        raise ValueError(f"box_penalty: width must be > 0, got {np.asarray(w).tolist()}")
    up = w * jax.nn.softplus((x - hi) / w)
    down = w * jax.nn.softplus((lo - x) / w)
    return jnp.sum(up**2 + down**2)


def joint_limit_barrier(q, lower, upper, width=0.01, indices=None):
    """Smooth penalty :func:`box_penalty` of joint positions ``q[indices]`` outside
    ``[lower, upper]`` [rad or m]; ``width`` [same unit] sets how sharp it is."""
    x = q if indices is None else q[jnp.asarray(indices)]
    return box_penalty(x, lower, upper, width)


def torque_barrier(tau, lower, upper, width=0.1, indices=None):
    """Smooth penalty :func:`box_penalty` of torques ``tau[indices]`` outside ``[lower, upper]``
    [N m or N]: soft limits for the unconstrained methods (DDP and shooting also take hard
    limits, ``tau_limits=``)."""
    x = tau if indices is None else tau[jnp.asarray(indices)]
    return box_penalty(x, lower, upper, width)


def elastic_energy(model: Model, q, v):
    """Residual elastic energy of the flexible links [J]: strain energy ``Σ ½ δᵢᵀ Kᵢ δᵢ`` plus the
    kinetic energy of the modal motion alone, ``T(q, [0; δ̇])`` = ``½ δ̇ᵀ M_δδ(q) δ̇`` (the joints
    held still). Zero exactly when every link is undeformed and at rest relative to its floating
    frame: the residual vibration after a rest-to-rest move. Zero for rigid models."""
    t = model.topology
    if not t.has_flex:
        return jnp.zeros((), model.dtype)
    E = jnp.zeros((), model.dtype)
    for i in range(t.nb):
        fb = model.flex[i] if model.flex else None
        if fb is not None:
            E = E + strain_energy(fb, q[t.e_q_slice(i)])
    v_modal = jnp.concatenate([jnp.zeros(t.nv_rigid, v.dtype), v[t.nv_rigid:]])
    return E + kinetic_energy(model, q, v_modal)
