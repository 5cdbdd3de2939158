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
from ..dynamics.traversal import JointData, base_acceleration, body_spatial_inertias
from ..model.model import Model
from .body import body_kinetics, end_motion

COMPOSITE_MAX_NV = 48  # trees up to this many coordinates use the mass-matrix form by default


def _flex_groups(model: Model):
    """Flexible bodies grouped by the shapes of their section data (static), so that each group's
    section work is one batched (vmapped) computation."""
    groups: dict = {}
    for i, fb in enumerate(model.flex or ()):
        if fb is not None:
            key = (fb.x.shape, fb.ne, fb.stiffening)
            groups.setdefault(key, []).append(i)
    return list(groups.values())


def _stack(model, bodies):
    fbs = [model.flex[i] for i in bodies]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *fbs)


def _end_groups(model: Model, q, v=None):
    """Per group of equal flexible links: ``(bodies, stacked FlexBody, δ [k, ne], δ̇ [k, ne],
    end_motion)``; ``v = None``: at ``δ̇ = 0`` (the Jacobians only need ``δ``)."""
    t = model.topology
    out = []
    for bodies in _flex_groups(model):
        fbs = _stack(model, bodies)
        d = jnp.stack([q[t.e_q_slice(i)] for i in bodies])
        dd = jnp.zeros_like(d) if v is None else jnp.stack([v[t.e_v_slice(i)] for i in bodies])
        out.append((bodies, fbs, d, dd, jax.vmap(end_motion)(fbs, d, dd)))
    return out


def link_jacobians(model: Model, q, ends=None):
    """The link Jacobians of a rigid/flexible tree: ``(Π, P_end)`` with ``Π[i]`` [6 + ne_i, nv]
    mapping ``v`` to link ``i``'s coordinates ``ξ_i = [V_i; δ̇_i]`` (its body twist ``V_i`` in body
    coordinates, then its modal rates) and ``P_end[i]`` [6, 6 + ne_i] mapping ``ξ_i`` to the twist of
    its deformed end frame (end coordinates; ``None`` for a rigid link, whose end frame is its
    body frame). ``Π_c = [X_c P_end,p Π_p + S_c E_c; E_δc]`` along the tree.

    The contact kinematics (:mod:`diffsim.contact.geometry`) and
    :func:`forward_dynamics_composite` both call this; inside one jitted vector field XLA
    computes it once. ``ends``: the :func:`_end_groups` already computed (their ``X`` and ``S``
    parts do not depend on ``δ̇``)."""
    t = model.topology
    dt = model.dtype
    nb, nv = t.nb, model.nv
    jd = JointData(model, q[: t.nq_rigid])
    Pe = [None] * nb
    for bodies, _, _, _, (Xe, Se, _) in _end_groups(model, q) if ends is None else ends:
        Xem = Xe.motion_matrix()
        for k, i in enumerate(bodies):
            Pe[i] = jnp.concatenate([Xem[k], Se[k]], -1)
    Pi = [None] * nb
    for i in range(nb):
        p = t.parent[i]
        J = jnp.zeros((6, nv), dt)
        if t.nv_joint[i]:
            J = J.at[:, t.v_slice(i)].set(jd.S[i])
        if p >= 0:
            J = J + (jd.Xm[i] @ Pi[p] if Pe[p] is None else (jd.Xm[i] @ Pe[p]) @ Pi[p])
        if Pe[i] is None:
            Pi[i] = J
        else:
            E = jnp.zeros((t.modes[i], nv), dt).at[:, t.e_v_slice(i)].set(jnp.eye(t.modes[i], dtype=dt))
            Pi[i] = jnp.concatenate([J, E], 0)
    return Pi, Pe


def forward_dynamics_composite(model: Model, q, v, tau=None, f_ext=None):
    """``z̈ = [q̈_joints; δ̈]`` of a rigid/flexible tree from ``M(z) z̈ = τ − h(z, ż)`` assembled
    from link Jacobians (module docstring); same arguments and result as
    :func:`~.dynamics.forward_dynamics_flexible`."""
    t = model.topology
    dt = model.dtype
    nb, nv, nvr = t.nb, model.nv, t.nv_rigid
    tau = jnp.zeros(nv, dt) if tau is None else tau
    f_ext = jnp.zeros((nb, 6), dt) if f_ext is None else f_ext
    jd = JointData(model, q[: t.nq_rigid], v[:nvr])
    Ib = body_spatial_inertias(model)
    flex = [model.flex[i] if model.flex else None for i in range(nb)]
    gdata = _end_groups(model, q, v)
    Pi, Pe = link_jacobians(model, q, gdata)
    Se, Sde = [None] * nb, [None] * nb
    for bodies, _, _, _, (_, S_e, Sd_e) in gdata:
        for k, i in enumerate(bodies):
            Se[i], Sde[i] = S_e[k], Sd_e[k]

    # outward: twists V_i, velocity products c_i and the zero-acceleration motion ξ̇⁰_i
    V, V_end, A0, A0_end = ([None] * nb for _ in range(4))
    a0 = base_acceleration(model)
    for i in range(nb):
        p = t.parent[i]
        if p < 0:
            Vi, Ai = jd.vJ[i], jd.Xm[i] @ a0
        else:
            Vi, Ai = jd.Xm[i] @ V_end[p] + jd.vJ[i], jd.Xm[i] @ A0_end[p]
        Ai = Ai + jd.cJ[i] + sp.cross_motion(Vi, jd.vJ[i])
        V[i], A0[i] = Vi, Ai
        if flex[i] is None:
            V_end[i], A0_end[i] = Vi, Ai
        else:
            Vrel_e = Se[i] @ v[t.e_v_slice(i)]
            V_end[i] = Pe[i][:, :6] @ Vi + Vrel_e
            A0_end[i] = Pe[i][:, :6] @ Ai + Sde[i] + sp.cross_motion(V_end[i], Vrel_e)

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
    M = jnp.einsum("bki,bkl,blj->ij", P, Mb, P)
    h = jnp.einsum("bki,bk->i", P, fb_)
    arm = jnp.concatenate([model.armature, jnp.zeros(t.ne, dt)])
    M = M + jnp.diag(arm)
    rhs = jnp.concatenate([tau[:nvr] - model.damping * v[:nvr], jnp.zeros(t.ne, dt)]) - h
    cf = jax.scipy.linalg.cho_factor(M)
    return jax.scipy.linalg.cho_solve(cf, rhs)
