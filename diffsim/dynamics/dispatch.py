"""The dynamics of any tree, rigid or flexible: the public entry points choose the algorithm,
and the formulations are strategies (:class:`AbstractDynamics`) that :func:`diffsim.simulate`
takes.

* rigid trees: ABA (:mod:`.aba`), RNEA (:mod:`.rnea`), CRBA (:mod:`.crba`);
* trees with flexible links: the mass-matrix form batched over links (:mod:`.composite`) up to
  :data:`~.composite.COMPOSITE_MAX_NV` coordinates (fewer XLA kernels: faster on a CPU), the
  O(n) sweep (:mod:`.flexible`) above; both solve the same equations.
"""

from __future__ import annotations

import abc
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero
from jaxtyping import Array, Float

from ..compiled import compiled, staged
from ..model.mimic import couple
from ..model.model import Model, joint_spring_energy
from ..precision import full_precision
from .aba import forward_dynamics_aba
from .composite import COMPOSITE_MAX_NV, forward_dynamics_composite
from .coupled import forward_dynamics_coupled, project_acceleration
from .crba import mass_matrix_crba
from .derivatives import aba_derivatives, rnea_derivatives, supported
from .energy import kinetic_energy_rigid, potential_energy_rigid
from .fluid import fluid_wrenches
from .flexible import (
    forward_dynamics_flexible,
    forward_dynamics_mm,
    inverse_dynamics_flexible,
    kinetic_energy_flexible,
    mass_matrix_flexible,
    potential_energy_flexible,
)
from .levels import forward_dynamics_levels
from .rnea import inverse_dynamics_rigid
from .traversal import jvp_of_nonzero
from .welded import welded

#: How rigid trees are swept by :func:`forward_dynamics`: ``"per_body"`` (one body at a time,
#: :mod:`.aba`) or all bodies of one depth batched (:mod:`.levels`), the small products in the
#: form ``ds.set_products`` sets (``"levels"``: dot kernels on a CPU, written out on a GPU, by
#: default), as multiply-and-sum (``"levels_reduce"``) or written out (``"levels_unrolled"``).
#: (``"levels"`` keeps dot kernels in its derivative's RNEA and ``M⁻¹``: reverse mode gained nothing
#: from the written-out form on an H200 and compiled 1.6× longer.)
#: All give the same accelerations and derivatives to rounding; the default is ``"levels"``,
#: chosen by ``benchmarks/bench_speed.py`` and ``bench_gpu.py`` (README, "Core speed", "On one GPU").
RIGID_SCHEDULE = "levels"
#: Whether rigid trees are swept with their fixed joints welded (:mod:`.welded`: fixed bodies merged into
#: their moving parents; the same dynamics to rounding, fewer bodies per pass). ``False`` sweeps the
#: tree as built (for comparisons: ``tests/dynamics/test_welded.py``, README "Core speed").
WELD_FIXED = True
RIGID_SCHEDULES = {"per_body": forward_dynamics_aba, "levels": forward_dynamics_levels("auto", "dot"),
                   "levels_reduce": forward_dynamics_levels("reduce"),
                   "levels_unrolled": forward_dynamics_levels("unrolled")}


def _rigid(schedule):
    s = RIGID_SCHEDULE if schedule is None else schedule
    if s not in RIGID_SCHEDULES:
        raise ValueError(f"unknown rigid-tree schedule {s!r}; use one of {sorted(RIGID_SCHEDULES)}")
    return RIGID_SCHEDULES[s]


def _defaults(model: Model, tau, f_ext):
    tau = jnp.zeros(model.nv, model.dtype) if tau is None else tau
    f_ext = jnp.zeros((model.nb, 6), model.dtype) if f_ext is None else f_ext
    return tau, f_ext


@full_precision
def forward_dynamics(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], tau: Float[Array, " nv"] | None = None,
                     f_ext: Float[Array, "nb 6"] | None = None, *, tangents: str = "ad") -> Float[Array, " nv"]:
    """Accelerations ``v̇`` [nv] of ``M v̇ + C v + g + D(v) = τ + Σ Jᵢᵀ f_ext,i``.

    ``tau`` [nv] generalised forces (joint torques; base wrench ``[F; M]`` in the base frame for a
    free joint; modal forces last for flexible links); ``f_ext`` [nb, 6] spatial forces on the
    bodies, body coordinates at the body origin; ``D(v)`` the joints' damping and Coulomb friction
    (:func:`diffsim.model.model.joint_passive_forces`). Armature adds to each joint's inertia.
    A model in a fluid (``model.fluid``) adds the fluid's wrenches to ``f_ext`` (:mod:`.fluid`).

    Derivatives (forward and reverse mode) follow from the implicit function
    ``ID(θ, q, v, v̇, f_ext) = τ`` rather than from differentiating ABA's passes (exact, and cheaper
    to compile and to run in reverse mode). Trees with flexible links use the mass-matrix form
    batched over links up to ``COMPOSITE_MAX_NV`` coordinates and the O(n) sweep above.

    Mimic joints (``model.mimic``): Kane's equations in the independent coordinates,
    ``v̇ = G v̇_r`` with ``Gᵀ M G v̇_r = Gᵀ (τ − h)`` (:mod:`.coupled`); the mimic entries of ``q``
    and ``v`` follow from their masters.

    ``tangents="analytic"``: forward-mode derivatives apply ``∂v̇/∂q``, ``∂v̇/∂q̇`` and ``M⁻¹``
    formed once (:mod:`.derivatives`) to every tangent — for rigid trees of revolute, prismatic,
    spherical and free joints; the same values, cheaper when many tangents are pushed at once (a
    Jacobian), dearer for one (:class:`AnalyticTangents`).
    """
    _check_tangents(tangents)
    if tangents == "analytic":
        tau, f_ext = _defaults(model, tau, f_ext)
        return _fd_analytic(model, q, v, tau, f_ext)
    if staged():  # traced into the caller's program: inlined, as written (the switches read now)
        return _forward_dynamics(model, q, v, tau, f_ext, None, None)
    # eagerly or under an eager jacfwd / grad / vmap: one compiled program per model structure
    return _forward_dynamics_compiled(model, q, v, tau, f_ext, RIGID_SCHEDULE, WELD_FIXED)


def _forward_dynamics(model, q, v, tau, f_ext, schedule, weld):
    if model.fluid is not None:
        f_ext = fluid_wrenches(model, q, v) + (0.0 if f_ext is None else f_ext)
    if model.mimic is None and not model.topology.has_flex:
        model, f_ext = _swept(model, f_ext, weld)
        tau, f_ext = _defaults(model, tau, f_ext)
        return _rigid(schedule)(model, q, v, tau, f_ext)
    tau, f_ext = _defaults(model, tau, f_ext)
    if model.mimic is not None:
        return forward_dynamics_coupled(model, q, v, tau, f_ext)
    if model.nv <= COMPOSITE_MAX_NV:
        return forward_dynamics_composite(model, q, v, tau, f_ext)
    return forward_dynamics_flexible(model, q, v, tau, f_ext)


def _swept(model: Model, f_ext=None, weld: bool | None = None):
    """The rigid tree the recursive algorithms sweep, and its body forces: fixed joints welded
    (``weld``, default :data:`WELD_FIXED`; :mod:`.welded`), or the tree as built."""
    return welded(model, f_ext) if (WELD_FIXED if weld is None else weld) else (model, f_ext)


# Called eagerly or under an eager transformation: one compiled program (the schedule and the weld
# switch are static arguments, read at each call). Op by op, the level schedule's ~140 small indexing
# operations were each compiled on first use (2 eager calls on a 12-joint quadruped 9.6 s, compiled
# 3.3 s), also under an eager jacfwd / grad / vmap (README, "Performance"). Inside a program it is
# inlined as written: nested, the model's index arrays became arguments of the inner program and a
# jitted RK4 scan of a rigid tree ran ~6 % slower (its gathers no longer saw constant indices).
_forward_dynamics_compiled = eqx.filter_jit(_forward_dynamics)


@full_precision
@compiled
def inverse_dynamics(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"], a: Float[Array, " nv"],
                     f_ext: Float[Array, "nb 6"] | None = None, *, tangents: str = "ad") -> Float[Array, " nv"]:
    """``τ = M(q) a + C(q, v) v + g(q) + D(v) − Σ Jᵢᵀ f_ext,i`` (RNEA; flexible trees: the
    generalised forces of every coordinate, the modal ones last), so that
    ``forward_dynamics(model, q, v, inverse_dynamics(model, q, v, a)) == a``.

    With mimic joints this is the tree's (every joint free) at the given state: for a coupled
    ``a = G a_r`` it is one of the torques that produce ``a`` (the one with no coupling force);
    the coupled system's own is ``Gᵀ τ`` (:func:`~.coupled.reduced_inverse_dynamics`).

    ``tangents="analytic"``: forward-mode derivatives apply ``∂τ/∂q``, ``∂τ/∂q̇`` and ``M`` formed
    once (:func:`.derivatives.rnea_derivatives`) to every tangent (as in :func:`forward_dynamics`)."""
    _check_tangents(tangents)
    if tangents == "analytic":
        return _id_analytic(model, q, v, a, _defaults(model, None, f_ext)[1])
    if model.fluid is not None:
        f_ext = fluid_wrenches(model, q, v) + (0.0 if f_ext is None else f_ext)
    if model.topology.has_flex:
        return inverse_dynamics_flexible(model, q, v, a, f_ext)
    model, f_ext = _swept(model, f_ext)
    return inverse_dynamics_rigid(model, q, v, a, f_ext)


@full_precision
@compiled
def mass_matrix(model: Model, q: Float[Array, " nq"]) -> Float[Array, "nv nv"]:
    """``M(q)`` [nv, nv], armature included, symmetric positive definite (CRBA; flexible trees:
    columns of the inverse dynamics). With mimic joints: the tree's, every joint free; the
    coupled system's is ``Gᵀ M G`` (:func:`~.coupled.reduced_mass_matrix`)."""
    if model.topology.has_flex:
        return mass_matrix_flexible(model, q)
    return mass_matrix_crba(_swept(model)[0], q)


@full_precision
@compiled
def bias_forces(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"],
                f_ext: Float[Array, "nb 6"] | None = None) -> Float[Array, " nv"]:
    """``C(q, v) v + g(q) + D(v) − Jᵀ f_ext`` (inverse dynamics at zero acceleration)."""
    return inverse_dynamics(model, q, v, jnp.zeros(model.nv, model.dtype), f_ext)


@full_precision
@compiled
def gravity_forces(model: Model, q: Float[Array, " nq"], *, tangents: str = "ad") -> Float[Array, " nv"]:
    """``g(q)``: generalised gravity forces (flexible trees: plus the elastic forces ``K δ``);
    ``tangents`` as in :func:`inverse_dynamics`."""
    z = jnp.zeros(model.nv, model.dtype)
    return inverse_dynamics(model, q, z, z, tangents=tangents)


@full_precision
@compiled
def kinetic_energy(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"]) -> Float[Array, ""]:
    """``T = ½ vᵀ M(q) v`` [J]."""
    if model.topology.has_flex:
        return kinetic_energy_flexible(model, q, v)
    return kinetic_energy_rigid(model, q, v)


@full_precision
@compiled
def potential_energy(model: Model, q: Float[Array, " nq"]) -> Float[Array, ""]:
    """Gravity potential ``V = −Σ mᵢ g·cᵢ`` (zero at the world origin) [J]; flexible trees add
    their sections' gravity potential and the strain energy; joint springs add
    ``½ Σ K (q − q_ref)²`` (:func:`diffsim.model.model.joint_spring_energy`)."""
    if model.topology.has_flex:
        return potential_energy_flexible(model, q) + joint_spring_energy(model, q)
    return potential_energy_rigid(model, q) + joint_spring_energy(model, q)


@full_precision
@compiled
def total_energy(model: Model, q: Float[Array, " nq"], v: Float[Array, " nv"]) -> Float[Array, ""]:
    """``T + V`` [J]."""
    return kinetic_energy(model, q, v) + potential_energy(model, q)


# ------------------------------------------------------------------------------------------
# Strategies: which formulation a simulation integrates
# ------------------------------------------------------------------------------------------


class AbstractDynamics(eqx.Module):
    """A formulation of the equations of motion, called as ``dynamics(model, q, v, tau, f_ext)
    -> v̇`` (same arguments and result as :func:`forward_dynamics`). Pass one to
    :class:`diffsim.System` (``dynamics=``); the papers' formulations are in
    :mod:`diffsim.formulations`."""

    @abc.abstractmethod
    def __call__(self, model: Model, q, v, tau=None, f_ext=None):
        """Accelerations ``v̇`` [nv]."""

    def check(self, model: Model) -> None:
        """Raise a clear error, before any tracing, if this formulation cannot handle ``model``."""


def with_coupling(fd, model: Model, q, v, tau, f_ext):
    """``fd``'s acceleration, projected onto the mimic coupling by Gauss's principle
    (:func:`.coupled.project_acceleration`) on a model with mimic joints: how every strategy,
    the papers' formulations included, honours ``model.mimic``."""
    if model.mimic is None:
        return fd(model, q, v, tau, f_ext)
    q, v = couple(model, q, v)
    return project_acceleration(model, q, fd(model, q, v, tau, f_ext))


def no_body_wrenches(name: str, f_ext) -> None:
    """Refuse body wrenches for a formulation that takes generalised forces only."""
    if f_ext is not None:
        raise ValueError(f"{name} takes joint and modal forces only (tau), not body wrenches f_ext: apply "
                         "point forces through tau (Jᵀ F) or use the default dynamics")


class Default(AbstractDynamics):
    """:func:`forward_dynamics`: ABA for rigid trees; for flexible ones the mass-matrix form
    batched over links up to ``COMPOSITE_MAX_NV`` coordinates, the O(n) sweep above."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        return forward_dynamics(model, q, v, tau, f_ext)


class ABA(AbstractDynamics):
    """Featherstone's articulated-body algorithm (rigid trees); ``schedule`` one of
    :data:`RIGID_SCHEDULES` (``None``: :data:`RIGID_SCHEDULE`). With mimic joints (this and the
    strategies below): the free tree's acceleration projected by Gauss's principle
    (:func:`.coupled.project_acceleration`); every joint must then move mass of its own."""

    schedule: str | None = eqx.field(static=True, default=None)

    def __call__(self, model, q, v, tau=None, f_ext=None):
        tau, f_ext = _defaults(model, tau, f_ext)
        return with_coupling(_rigid(self.schedule), model, q, v, tau, f_ext)

    def check(self, model):
        _rigid(self.schedule)
        if model.topology.has_flex:
            raise ValueError("ABA is the rigid-tree algorithm; this model has flexible links (use Sweep or Composite)")


def _is_zero(tangent) -> bool:
    leaves = jax.tree_util.tree_leaves(tangent, is_leaf=lambda x: isinstance(x, SymbolicZero))
    return all(isinstance(x, SymbolicZero) for x in leaves)


def _instantiate(tangent):
    return jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype) if isinstance(x, SymbolicZero) else x,
                                  tangent, is_leaf=lambda x: isinstance(x, SymbolicZero))


def _analytic(fn: Callable, jacobians: Callable, inverse: Callable | None = None) -> Callable:
    """``fn(model, q, v, x, f_ext)`` (forward or inverse dynamics) with a JVP rule that applies
    three matrices formed once, ``δy = J_q δq + J_v δq̇ + J_x δx``
    (``jacobians(swept, q, v, x, y, f_swept)``, on the welded tree: :mod:`.derivatives`), plus the
    tangents of the model's parameters and of the body forces when there are any: the JVP of
    ``fn`` in those inputs, or, when ``fn`` solves ``inverse(model, q, v, y, f_ext) = x`` (forward
    dynamics), ``δy = −J_x ∂inverse/∂(θ, f_ext) · δ(θ, f_ext)`` with ``J_x = M⁻¹`` already formed
    (the implicit function theorem: one JVP of RNEA at fixed kinematics, no second ABA). Trees the
    analytical pass does not handle get ``fn``'s own derivatives."""

    @jax.custom_jvp
    def f(model, q, v, x, f_ext):
        return fn(model, q, v, x, f_ext)

    def f_jvp(primals, tangents):
        model, q, v, x, f_ext = primals
        dmodel, dq, dv, dx, df = tangents
        swept, f_swept = _swept(model, f_ext)
        if not supported(swept):
            return jax.jvp(fn, primals, tuple(_instantiate(t) for t in tangents))
        y = fn(model, q, v, x, f_ext)
        dy = jnp.zeros_like(y)
        mats = jacobians(swept, q, v, x, y, f_swept)
        for mat, d in zip(mats, (dq, dv, dx)):
            if not _is_zero(d):
                dy = dy + mat @ d
        if not (_is_zero(dmodel) and _is_zero(df)):
            if inverse is None:
                dy = dy + jvp_of_nonzero(lambda m, fe: fn(m, q, v, x, fe), (model, f_ext), (dmodel, df))
            else:
                dy = dy - mats[2] @ jvp_of_nonzero(lambda m, fe: inverse(m, q, v, y, fe), (model, f_ext), (dmodel, df))
        return y, dy

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


#: forward dynamics with ``(∂v̇/∂q, ∂v̇/∂q̇, M⁻¹)`` at ``v̇``, inverse dynamics with ``(∂τ/∂q, ∂τ/∂q̇, M)``
_fd_analytic = _analytic(lambda *a: forward_dynamics(*a), lambda m, q, v, tau, a, f: aba_derivatives(m, q, v, a, f),
                         inverse=lambda *a: inverse_dynamics(*a))
_id_analytic = _analytic(lambda *a: inverse_dynamics(*a), lambda m, q, v, a, tau, f: rnea_derivatives(m, q, v, a, f))
TANGENTS = ("ad", "analytic")


def _check_tangents(tangents: str) -> None:
    if tangents not in TANGENTS:
        raise ValueError(f"unknown tangents {tangents!r}; use one of {TANGENTS}")


class AnalyticTangents(AbstractDynamics):
    """:func:`forward_dynamics`, whose forward-mode derivatives apply the analytical Jacobians
    ``∂v̇/∂(q, q̇)`` and ``M⁻¹`` (:mod:`.derivatives`, Carpentier & Mansard 2018), formed once
    per state, to every tangent: for rigid trees of revolute, prismatic, spherical and free joints
    (fixed joints welded; floating bases included). Forming them costs about two or three tangents
    pushed through ABA, so this pays where many tangents are pushed at once (Jacobians of a step:
    DDP's local models use it) and not for a single JVP. Other trees get
    :func:`forward_dynamics`'s own derivatives. Reverse mode transposes the same linear map."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        return forward_dynamics(model, q, v, tau, f_ext, tangents="analytic")


class Sweep(AbstractDynamics):
    """The O(n) flexible sweep (seed 003's generalised Newton–Euler in articulated-body form);
    any tree."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        return with_coupling(forward_dynamics_flexible, model, q, v, tau, f_ext)


class Composite(AbstractDynamics):
    """The mass-matrix form batched over links (link Jacobians, Cholesky); any tree."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        return with_coupling(forward_dynamics_composite, model, q, v, tau, f_ext)


class MassMatrix(AbstractDynamics):
    """``M(z) z̈ = τ − h(z, ż)`` with ``M`` from columns of the inverse dynamics (seeds 001/004's
    mass-matrix form); any tree."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        return with_coupling(forward_dynamics_mm, model, q, v, tau, f_ext)


class FunctionDynamics(AbstractDynamics):
    """A user function ``fn(model, q, v, tau, f_ext) -> v̇`` as a strategy."""

    fn: Callable = eqx.field(static=True)

    def __call__(self, model, q, v, tau=None, f_ext=None):
        return self.fn(model, q, v, tau, f_ext)


def as_dynamics(dynamics) -> AbstractDynamics:
    """A strategy from a strategy, ``None`` (the default) or a plain function."""
    if dynamics is None:
        return Default()
    if isinstance(dynamics, AbstractDynamics):
        return dynamics
    if dynamics is forward_dynamics:
        return Default()
    if callable(dynamics):
        return FunctionDynamics(dynamics)
    raise TypeError(f"dynamics must be a diffsim dynamics strategy or a function, got {type(dynamics).__name__}")
