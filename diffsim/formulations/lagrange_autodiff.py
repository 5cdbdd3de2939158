"""Lagrange's equations by automatic differentiation — a brute-force reference.

``T(z, ż) = Σ_bodies ½ (m |ṗ_c|² + ωᵀ I_c ω) + Σ_sections ½ (m_g |ṗ_g|² + ω_gᵀ J_g ω_g)``
from the world poses of :mod:`diffsim.dynamics.kinematics` (4×4 transforms),
``V(z) = −Σ m g·p + ½ δᵀ K δ``, Rayleigh ``D = ½ δ̇ᵀ D_e δ̇ + ½ Σ d q̇²``, and

    M(z) z̈ = τ − (∂²T/∂ż∂z) ż + ∂T/∂z − ∂V/∂z − ∂D/∂ż,   M = ∂²T/∂ż².

No recursion, no spatial algebra: O(n³) and slow to compile, but independent of every sweep.
Needs ``q̇ = v`` (no quaternion joints).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import spatial as sp
from ..dynamics.dispatch import AbstractDynamics, no_body_wrenches, with_coupling
from ..dynamics.kinematics import frames
from ..dynamics.sections import section_pose
from ..model.model import Model, joint_passive_forces


def _check(model: Model):
    if model.nq != model.nv:
        raise ValueError("the autodiff Lagrangian reference needs q̇ = v (no spherical/free joints)")


def _elements(model: Model, q):
    """World rotation [k, 3, 3], position [k, 3], mass [k], inertia [k, 3, 3] of every mass
    element (rigid-body COM frames and flexible sections)."""
    t = model.topology
    Hb, _ = frames(model, q)
    Rs = [Hb[:, :3, :3]]
    ps = [Hb[:, :3, 3] + jnp.einsum("bij,bj->bi", Hb[:, :3, :3], model.com)]
    ms = [model.mass]
    Js = [model.inertia]
    for i in range(t.nb):
        fb = model.flex[i] if model.flex else None
        if fb is None:
            continue
        R, p = section_pose(fb.x, fb.phi_d, fb.phi_r, fb.fore, q[t.e_q_slice(i)], fb.stiffening)
        Rs.append(Hb[i, :3, :3] @ R)
        ps.append(p @ Hb[i, :3, :3].T + Hb[i, :3, 3])
        ms.append(fb.m)
        Js.append(fb.J)
    return jnp.concatenate(Rs), jnp.concatenate(ps), jnp.concatenate(ms), jnp.concatenate(Js)


def kinetic_energy_lagrange(model: Model, q, qd):
    (R, p, _, _), (Rd, pd, _, _) = jax.jvp(lambda z: _elements(model, z), (q,), (qd,))
    _, _, m, J = _elements(model, q)
    w = sp.vee(jnp.swapaxes(R, -1, -2) @ Rd)
    return 0.5 * jnp.sum(m * jnp.sum(pd * pd, -1)) + 0.5 * jnp.einsum("ki,kij,kj->", w, J, w) + 0.5 * jnp.sum(
        model.armature * qd[: model.topology.nv_rigid] ** 2
    )


def potential_energy_lagrange(model: Model, q):
    t = model.topology
    _, p, m, _ = _elements(model, q)
    V = -jnp.sum(m * (p @ model.gravity))
    for i in range(t.nb):
        fb = model.flex[i] if model.flex else None
        if fb is not None:
            d = q[t.e_q_slice(i)]
            V = V + 0.5 * d @ fb.K @ d
    return V


def _dissipation_force(model: Model, q, qd):
    t = model.topology
    f = [joint_passive_forces(model, qd[: t.nv_rigid], q)]
    for i in range(t.nb):
        fb = model.flex[i] if model.flex else None
        if fb is not None:
            f.append(fb.D @ qd[t.e_v_slice(i)])
    return jnp.concatenate(f)


def mass_matrix_lagrange(model: Model, q):
    _check(model)
    z = jnp.zeros(model.nv, model.dtype)
    return jax.hessian(lambda qd: kinetic_energy_lagrange(model, q, qd))(z)


def forward_dynamics_lagrange(model: Model, q, v, tau=None, f_ext=None):
    """``z̈`` from Lagrange's equations (module docstring). ``f_ext`` is not supported."""
    _check(model)
    no_body_wrenches("forward_dynamics_lagrange", f_ext)
    tau = jnp.zeros(model.nv, model.dtype) if tau is None else tau
    dT_dqd = jax.grad(kinetic_energy_lagrange, 2)
    M = jax.jacfwd(dT_dqd, 2)(model, q, v)
    Cqd = jax.jvp(lambda z: dT_dqd(model, z, v), (q,), (v,))[1]
    dT_dq = jax.grad(kinetic_energy_lagrange, 1)(model, q, v)
    dV = jax.grad(potential_energy_lagrange, 1)(model, q)
    rhs = tau - Cqd + dT_dq - dV - _dissipation_force(model, q, v)
    return jnp.linalg.solve(M, rhs)


class LagrangeAutodiff(AbstractDynamics):
    """Lagrange's equations by automatic differentiation of the kinetic and potential energies
    as a dynamics strategy (``q̇ = v`` trees; joint and modal forces only)."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        return with_coupling(forward_dynamics_lagrange, model, q, v, tau, f_ext)

    def check(self, model):
        _check(model)
