"""Forward dynamics of small rigid/flexible trees in the mass-matrix form, batched over links.

The equations are those of :mod:`.dynamics` — every link ``i`` has coordinates
``ξ_i = [V_i; δ̇_i]`` and equations ``M_i ξ̇_i + b_i`` (:func:`~.body.body_kinetics`) — assembled
with the link Jacobians ``Π_i = ∂ξ_i/∂v`` instead of swept:

    M(z) = Σ_i Π_iᵀ M_i Π_i,      h = Σ_i Π_iᵀ (M_i ξ̇⁰_i + b_i),      z̈ = M⁻¹ (τ − h)

(the mass-matrix form ``J(z) z̈ = R(z, ż)`` of seeds 001/004), where ``ξ̇⁰_i`` is link ``i``'s
acceleration at ``z̈ = 0`` (velocity products and gravity, the inverse dynamics' outward pass)
and ``Π_c = [X_c P_end,p Π_p + S_c E_c; E_δc]`` follows the tree.

Why a second algorithm: the O(n) sweep (:func:`~.dynamics.articulated_flexible`) is a long
chain of tiny matrix operations per link, and on a CPU a small tree's cost is the number of
XLA kernels, not flops. Here the per-section work of all links of the same shape runs as one
batched computation and only the short recursions for ``V``, ``ξ̇⁰`` and ``Π`` walk the tree:
seed 001's three-link chain compiles to half the kernels of the sweep (171 against 352), and a
step of its contact simulation takes 0.87× the time (``benchmarks/bench_contact.py``). ``M`` is factorised by
Cholesky (``O(n³)`` in the coordinates, cheap for the tens of coordinates it is meant for;
:func:`diffsim.forward_dynamics` picks it below :data:`COMPOSITE_MAX_NV`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import spatial as sp
from ..model.model import Model, joint_passive_forces
from .jacobians import end_groups, link_jacobians
from .sections import body_kinetics
from .traversal import JointData, base_acceleration, body_spatial_inertias, forward_pass

COMPOSITE_MAX_NV = 48  # trees up to this many coordinates use the mass-matrix form by default


def forward_dynamics_composite(model: Model, q, v, tau=None, f_ext=None):
    """``z̈ = [q̈_joints; δ̈]`` of a rigid/flexible tree from ``M(z) z̈ = τ − h(z, ż)`` assembled
    from link Jacobians (module docstring); same arguments and result as
    :func:`~.flexible.forward_dynamics_flexible`."""
    t = model.topology
    dt = model.dtype
    nb, nv, nvr = t.nb, model.nv, t.nv_rigid
    tau = jnp.zeros(nv, dt) if tau is None else tau
    f_ext = jnp.zeros((nb, 6), dt) if f_ext is None else f_ext
    jd = JointData(model, q[: t.nq_rigid], v[:nvr])
    Ib = body_spatial_inertias(model)
    flex = [model.flex[i] if model.flex else None for i in range(nb)]
    gdata = end_groups(model, q, v)
    Pi, Pe = link_jacobians(model, q, gdata)
    Se, Sde = [None] * nb, [None] * nb
    for bodies, _, _, _, (_, S_e, Sd_e) in gdata:
        for k, i in enumerate(bodies):
            Se[i], Sde[i] = S_e[k], Sd_e[k]

    # outward: twists V_i, velocity products c_i and the zero-acceleration motion ξ̇⁰_i
    a0 = base_acceleration(model)

    def outward(i, parent):
        if parent is None:
            Vi, Ai = jd.vJ[i], jd.Xm[i] @ a0
        else:
            Vi, Ai = jd.Xm[i] @ parent[2] + jd.vJ[i], jd.Xm[i] @ parent[3]
        Ai = Ai + jd.cJ[i] + sp.cross_motion(Vi, jd.vJ[i])
        if flex[i] is None:
            return Vi, Ai, Vi, Ai
        Vrel_e = Se[i] @ v[t.e_v_slice(i)]
        V_end = Pe[i][:, :6] @ Vi + Vrel_e
        return Vi, Ai, V_end, Pe[i][:, :6] @ Ai + Sde[i] + sp.cross_motion(V_end, Vrel_e)

    out = forward_pass(t, outward)
    V, A0 = [o[0] for o in out], [o[1] for o in out]

    # link equations: rigid links directly, flexible ones batched per group
    Ml, bl = [None] * nb, [None] * nb
    for i in range(nb):
        if flex[i] is None:
            Ml[i] = Ib[i]
            bl[i] = sp.cross_force(V[i], Ib[i] @ V[i]) - f_ext[i]
    for bodies, fbs, d, dd, end in gdata:
        Vs = jnp.stack([V[i] for i in bodies])
        kin = jax.vmap(body_kinetics)(fbs, d, dd, Vs, Ib[np.asarray(bodies)], end)
        for k, i in enumerate(bodies):
            Qe = tau[t.e_v_slice(i)] - flex[i].K @ d[k] - flex[i].D @ dd[k]
            Ml[i] = kin.M[k]
            bl[i] = kin.b[k].at[:6].add(-f_ext[i]).at[6:].add(-Qe)

    # assemble M = Σ Πᵀ M_i Π and h = Σ Πᵀ (M_i ξ̇⁰ + b_i), all links padded to 6 + max ne
    n_max = 6 + max(t.modes)
    ns = [Pi[i].shape[0] for i in range(nb)]

    def pad_rows(x, n):
        return jnp.pad(x, ((0, n_max - n),) + ((0, 0),) * (x.ndim - 1))

    xi0 = [A0[i] if flex[i] is None else jnp.concatenate([A0[i], jnp.zeros(t.modes[i], dt)]) for i in range(nb)]
    P = jnp.stack([pad_rows(Pi[i], ns[i]) for i in range(nb)])  # [nb, n, nv]
    Mb = jnp.stack([jnp.pad(Ml[i], ((0, n_max - ns[i]), (0, n_max - ns[i]))) for i in range(nb)])
    fb_ = jnp.stack([pad_rows(Ml[i] @ xi0[i] + bl[i], ns[i]) for i in range(nb)])  # [nb, n]
    M = jnp.einsum("bki,bkj->ij", P, sp.mm_unrolled(Mb, P))  # M_i Π_i written out, then one product
    h = jnp.einsum("bki,bk->i", P, fb_)
    arm = jnp.concatenate([model.armature, jnp.zeros(t.ne, dt)])
    M = M + jnp.diag(arm)
    rhs = jnp.concatenate([tau[:nvr] - joint_passive_forces(model, v[:nvr], q), jnp.zeros(t.ne, dt)]) - h
    cf = jax.scipy.linalg.cho_factor(M)
    return jax.scipy.linalg.cho_solve(cf, rhs)
