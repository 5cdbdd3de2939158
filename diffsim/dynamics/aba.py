"""Articulated-body algorithm: O(n) forward dynamics (Featherstone 2008, Table 7.1, ``FDab``)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import spatial as sp
from ..model.model import Model
from .rnea import inverse_dynamics
from .traversal import JointData, base_acceleration, body_spatial_inertias


def forward_dynamics(model: Model, q, v, tau=None, f_ext=None):
    """Joint accelerations ``v̇`` of ``M v̇ + C v + g + D v = τ + Σ Jᵢᵀ f_ext,i``.

    ``tau`` [nv] generalised forces (joint torques; base wrench ``[F; M]`` in the base frame
    for a free joint); ``f_ext`` [nb, 6] spatial forces on the bodies, body coordinates at the
    body origin. Armature adds to each joint's ``D_i = Sᵢᵀ IAᵢ Sᵢ``.

    Derivatives (forward and reverse mode) follow from the implicit function
    ``ID(θ, q, v, v̇, f_ext) = τ`` rather than from differentiating ABA's passes:
    ``δv̇ = M⁻¹ (δτ − ∂ID/∂(θ, q, v, f_ext) · δ(θ, q, v, f_ext))``, with ``M⁻¹`` applied by ABA at
    zero velocity and gravity (:func:`_forward_dynamics_jvp`). Exact, and cheaper to compile
    and to run in reverse mode.

    Trees with flexible links (``model.flex``): ``v̇`` ends with the modal accelerations and
    ``tau`` with the modal generalised forces. Up to ``COMPOSITE_MAX_NV`` coordinates they use the
    mass-matrix form batched over links (:func:`diffsim.flexible.forward_dynamics_composite`,
    fewer XLA kernels: faster on a CPU), larger trees the O(n) flexible sweep
    (:func:`diffsim.flexible.forward_dynamics_flexible`); both solve the same equations.
    """
    if model.topology.has_flex:
        from ..flexible.composite import COMPOSITE_MAX_NV, forward_dynamics_composite
        from ..flexible.dynamics import forward_dynamics_flexible

        if model.nv <= COMPOSITE_MAX_NV:
            return forward_dynamics_composite(model, q, v, tau, f_ext)
        return forward_dynamics_flexible(model, q, v, tau, f_ext)
    tau = jnp.zeros(model.nv, model.dtype) if tau is None else tau
    f_ext = jnp.zeros((model.nb, 6), model.dtype) if f_ext is None else f_ext
    return _forward_dynamics(model, q, v, tau, f_ext)


@jax.custom_jvp
def _forward_dynamics(model, q, v, tau, f_ext):
    return articulated_body_algorithm(model, q, v, tau, f_ext)


@_forward_dynamics.defjvp
def _forward_dynamics_jvp(primals, tangents):
    model, q, v, tau, f_ext = primals
    dmodel, dq, dv, dtau, df = tangents
    a = articulated_body_algorithm(model, q, v, tau, f_ext)
    _, dID = jax.jvp(lambda m, q, v, f: inverse_dynamics(m, q, v, a, f), (model, q, v, f_ext), (dmodel, dq, dv, df))
    still = eqx.tree_at(lambda m: m.gravity, model, jnp.zeros_like(model.gravity))
    da = articulated_body_algorithm(still, q, jnp.zeros_like(v), dtau - dID, None)  # M⁻¹ (δτ − δID)
    return a, da


def articulated_body_algorithm(model: Model, q, v, tau, f_ext=None):
    """ABA itself (Featherstone 2008, Table 7.1); see :func:`forward_dynamics`."""
    t = model.topology
    dt = model.dtype
    tau = tau - model.damping * v
    jd = JointData(model, q, v)
    Xm = jd.Xm  # i_X_λ(i) [nb, 6, 6]; its transpose carries forces to the parent
    Ib = body_spatial_inertias(model)
    nb = t.nb

    # pass 1: velocities root to leaves; then c = cJ + v × vJ and pA = v ×* I v − f_ext, batched
    vel = [None] * nb
    for i in range(nb):
        p = t.parent[i]
        vel[i] = jd.vJ[i] if p < 0 else Xm[i] @ vel[p] + jd.vJ[i]
    vel = jnp.stack(vel)
    c = jd.cJ + sp.cross_motion(vel, jd.vJ)  # for a root v = vJ, so v × vJ = 0
    pA_all = sp.cross_force(vel, jnp.einsum("bij,bj->bi", Ib, vel))
    if f_ext is not None:
        pA_all = pA_all - f_ext
    IA, pA = [Ib[i] for i in range(nb)], [pA_all[i] for i in range(nb)]

    # pass 2: articulated inertias, leaves to root
    U, Dinv, u = [None] * nb, [None] * nb, [None] * nb
    for i in reversed(range(nb)):
        S = jd.S[i]
        p = t.parent[i]
        if t.nv_joint[i]:
            sl = t.v_slice(i)
            U[i] = IA[i] @ S
            Dinv[i] = sp.small_inv(S.T @ U[i] + jnp.diag(model.armature[sl]))
            u[i] = tau[sl] - S.T @ pA[i]
            if p >= 0:
                UD = U[i] @ Dinv[i]
                Ia = IA[i] - UD @ U[i].T
                pa = pA[i] + Ia @ c[i] + UD @ u[i]
        elif p >= 0:
            Ia = IA[i]
            pa = pA[i] + Ia @ c[i]
        if p >= 0:
            IA[p] = IA[p] + Xm[i].T @ Ia @ Xm[i]
            pA[p] = pA[p] + Xm[i].T @ pa

    # pass 3: accelerations, root to leaves
    a0 = base_acceleration(model)
    acc, qdd = [None] * nb, []
    for i in range(nb):
        p = t.parent[i]
        ai = Xm[i] @ (a0 if p < 0 else acc[p]) + c[i]
        if t.nv_joint[i]:
            qdd_i = Dinv[i] @ (u[i] - U[i].T @ ai)
            ai = ai + jd.S[i] @ qdd_i
            qdd.append(qdd_i)
        acc[i] = ai
    return jnp.concatenate(qdd) if qdd else jnp.zeros(0, dt)
