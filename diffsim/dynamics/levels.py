"""Level-batched recursions of rigid trees: every body of one depth runs together.

The per-body passes of :mod:`.traversal` emit one small 6×6 operation per body and per step of
the algorithm, and on a CPU the cost of a small tree is the number of XLA kernels, not flops.
Here the tree is resolved at trace time into *levels* (bodies of equal depth, as MJX does): the
outward sweeps gather each level's parent values from the previous level with a static index,
the inward sweeps add each level's messages to their parents' slots with static gathers (one
per child rank, no scatter), and Featherstone's per-body formulas run as batched 6×6 products
over the level. Terms that need no sweep (``c = cJ + v × vJ``, the bias forces ``v ×* I v``,
RNEA's body forces ``I a + v ×* I v``) run once over all bodies, stored in level order so that a
level's rows are a static slice. Joints of different sizes in one level share a padded motion subspace
``S`` [6, k_max] whose unused columns are zero; ``D`` gets ones on the padded diagonal, so
their accelerations come out exactly zero and are dropped by the final gather.

The algorithms are the book's, unchanged: ABA (Featherstone 2008, Table 7.1, ``FDab``) in
:func:`articulated_body_algorithm_levels` and RNEA (Table 5.1, ``ID``) in
:func:`inverse_dynamics_levels`; :data:`forward_dynamics_aba_levels` is ABA with the derivatives
of the implicit function ``RNEA = τ`` (:func:`~.traversal.implicit_forward_dynamics`). Which
schedule the public entry points use is :data:`diffsim.dynamics.dispatch.RIGID_SCHEDULE`,
chosen by measurement (``benchmarks/bench_speed.py``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import spatial as sp
from ..model.model import Model, joint_passive_forces
from ..model.topology import Topology
from .traversal import JointData, base_acceleration, body_spatial_inertias, implicit_forward_dynamics


class _Level:
    """Static tables of one depth level (numpy, resolved at trace time)."""

    def __init__(self, t: Topology, bodies, prev_bodies):
        self.bodies = np.asarray(bodies, dtype=np.int32)
        n = len(bodies)
        pos_prev = {b: k for k, b in enumerate(prev_bodies)}
        self.is_root = all(t.parent[b] < 0 for b in bodies)
        # position of each body's parent inside the previous level (roots: none)
        self.parent_pos = None if self.is_root else np.array([pos_prev[t.parent[b]] for b in bodies], np.int32)
        self.k = max(t.nv_joint[b] for b in bodies)  # padded joint size
        # rows of v (and of v̇, τ) per body, padded with index nv (a zero appended to v)
        nv = t.nv_rigid
        vs = [t.v_slice(b) for b in bodies]
        self.v_idx = np.array([[s.start + j if j < s.stop - s.start else nv for j in range(self.k)] for s in vs],
                              np.int32).reshape(n, self.k)
        self.valid = self.v_idx < nv  # [n, k]
        # child-rank gathers for the inward sweep: for the previous level's slot p and rank r,
        # child_idx[r][p] is the position of its r-th child here, or n (a zero row)
        self.child_idx = None
        if not self.is_root:
            lists = [[] for _ in prev_bodies]
            for k, p in enumerate(self.parent_pos):
                lists[p].append(k)
            rmax = max(len(c) for c in lists)
            self.child_idx = [np.array([c[r] if r < len(c) else n for c in lists], np.int32) for r in range(rmax)]


@functools.lru_cache(maxsize=None)
def tree_levels(t: Topology) -> tuple[_Level, ...]:
    """The bodies of ``t`` grouped by depth (root level first), with the static gather tables
    of the level-batched sweeps. A level must not mix roots with non-roots (a root's depth is
    0), which holds by construction."""
    depth = []
    for p in t.parent:
        depth.append(0 if p < 0 else depth[p] + 1)
    out, prev = [], []
    for d in range(max(depth) + 1 if depth else 0):
        bodies = [i for i in range(t.nb) if depth[i] == d]
        out.append(_Level(t, bodies, prev))
        prev = bodies
    return tuple(out)


def _level_subspaces(jd: JointData, lv: _Level, dtype):
    """``S`` [n, 6, k] of a level, joints padded with zero columns to ``k``."""
    cols = []
    for b in lv.bodies:
        S = jd.S[int(b)]
        cols.append(S if S.shape[1] == lv.k else jnp.concatenate([S, jnp.zeros((6, lv.k - S.shape[1]), dtype)], 1))
    return jnp.stack(cols)


def _outward_velocities(jd: JointData, levels, mv):
    """The first outward pass of ABA and RNEA: body velocities level by level (``v_i = X_i v_λ(i)
    + vJ_i``), then ``c_i = cJ_i + v_i × vJ_i`` for every body at once. Bodies are in level order
    (root level first; ``cuts`` are the level boundaries), so a level's rows are a contiguous static
    slice. Returns ``(order, cuts, Xs, vel, c)``; ``Xs`` per level, ``vel`` and ``c`` [nb, 6]."""
    order = np.concatenate([lv.bodies for lv in levels]).astype(np.int32)
    cuts = np.cumsum([0] + [len(lv.bodies) for lv in levels]).tolist()
    X_all, vJ_all = jd.Xm[order], jd.vJ[order]
    Xs = [X_all[lo:hi] for lo, hi in zip(cuts[:-1], cuts[1:])]
    vel = []
    for d, lv in enumerate(levels):
        vJ = vJ_all[cuts[d]:cuts[d + 1]]
        vel.append(vJ if lv.is_root else mv(Xs[d], _gather_parent(vel[d - 1], lv)) + vJ)
    vel = jnp.concatenate(vel)
    c = jd.cJ[order] + sp.cross_motion(vel, vJ_all)  # for a root v = vJ, so v × vJ = 0
    return order, cuts, Xs, vel, c


def _gather_parent(x, lv: _Level):
    return x[lv.parent_pos]


def _sum_children(msg, lv: _Level):
    """``Σ`` of each parent slot's children messages (static gathers from ``msg`` padded with a zero row)."""
    z = jnp.concatenate([msg, jnp.zeros((1,) + msg.shape[1:], msg.dtype)], 0)
    out = z[lv.child_idx[0]]
    for idx in lv.child_idx[1:]:
        out = out + z[idx]
    return out


#: How the small products of a level are emitted (static): ``"auto"`` — in the form
#: :func:`diffsim.spatial.products` says when traced (``ds.set_products``: dot kernels on a CPU,
#: written out on a GPU, by default); ``"dot"`` — XLA dot kernels (one kernel each; batch well
#: under ``vmap`` on a CPU); ``"reduce"`` — broadcast multiply and a sum over the contracted axis;
#: ``"unrolled"`` — the sum over the contracted index written out (``Σ_j A[:, j] x[j]``), plain
#: elementwise work. The last two fuse with their neighbours into few XLA kernels.
PRODUCTS = ("auto", "dot", "reduce", "unrolled")


def _mv(A, x, products="dot"):
    """``A x`` batched over the level (:data:`PRODUCTS`)."""
    if products == "auto":
        return sp.mv(A, x)
    if products == "unrolled":
        return sp.mv_unrolled(A, x)
    if products == "reduce":
        return jnp.sum(A * x[..., None, :], -1)
    return jnp.einsum("...ij,...j->...i", A, x)


def _mm(A, B, products="dot"):
    """``A B`` batched over the level (:data:`PRODUCTS`)."""
    if products == "auto":
        return sp.mm(A, B)
    if products == "unrolled":
        return sp.mm_unrolled(A, B)
    if products == "reduce":
        return jnp.sum(A[..., :, None, :] * _T(B)[..., None, :, :], -1)
    return A @ B


def _T(A):
    return jnp.swapaxes(A, -1, -2)


def _to_v(parts, levels, nv, dtype):
    """Per-level padded rows [n, k] back to a vector in ``v`` order (one gather)."""
    flat, idx = [], []
    off = 0
    for x, lv in zip(parts, levels):
        flat.append(x.reshape(-1))
        for k_row, row in enumerate(lv.v_idx):
            for j, vi in enumerate(row):
                if vi < nv:
                    idx.append((vi, off + k_row * lv.k + j))
        off += x.size
    order = np.array([p for _, p in sorted(idx)], np.int32)
    return jnp.concatenate(flat)[order] if len(order) else jnp.zeros(0, dtype)


def articulated_body_algorithm_levels(model: Model, q, v, tau, f_ext=None, products="dot"):
    """ABA (Featherstone 2008, Table 7.1) with each pass batched over the bodies of one depth:
    same arguments and result as :func:`~.aba.articulated_body_algorithm`; ``products``: how
    the small products are emitted (:data:`PRODUCTS`)."""
    mv, mm = functools.partial(_mv, products=products), functools.partial(_mm, products=products)
    t = model.topology
    dt = model.dtype
    nv = t.nv_rigid
    levels = tree_levels(t)
    tau = tau - joint_passive_forces(model, v, q)
    tau_p = jnp.concatenate([tau, jnp.zeros(1, dt)])
    arm_p = jnp.concatenate([model.armature, jnp.zeros(1, dt)])
    jd = JointData(model, q, v)
    Ib = body_spatial_inertias(model)

    # pass 1: velocities and c = cJ + v × vJ; pA = v ×* I v − f_ext for every body at once
    order, cuts, Xs, vel, c_all = _outward_velocities(jd, levels, mv)
    I_all = Ib[order]
    pA_all = sp.cross_force(vel, mv(I_all, vel))
    if f_ext is not None:
        pA_all = pA_all - f_ext[order]
    L = [dict(X=Xs[d], c=c_all[lo:hi], IA=I_all[lo:hi], pA=pA_all[lo:hi])
         for d, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:]))]

    # pass 2: articulated inertias, deepest level first; messages summed into the parents
    for d in reversed(range(len(levels))):
        lv, st = levels[d], L[d]
        IA, pA, X = st["IA"], st["pA"], st["X"]
        if lv.k:
            S = _level_subspaces(jd, lv, dt)
            U = mm(IA, S)  # [n, 6, k]
            D = mm(_T(S), U) + jax.vmap(jnp.diag)(arm_p[lv.v_idx]) + jax.vmap(jnp.diag)(jnp.asarray(~lv.valid, dt))
            Dinv = jax.vmap(sp.small_inv)(D)
            u = tau_p[lv.v_idx] - mv(_T(S), pA)
            st.update(S=S, U=U, Dinv=Dinv, u=u)
        if lv.is_root:
            continue
        if lv.k:
            UD = mm(U, Dinv)
            Ia = IA - mm(UD, _T(U))
            pa = pA + mv(Ia, st["c"]) + mv(UD, u)
        else:
            Ia, pa = IA, pA + mv(IA, st["c"])
        XT = _T(X)
        up = L[d - 1]
        up["IA"] = up["IA"] + _sum_children(mm(mm(XT, Ia), X), lv)
        up["pA"] = up["pA"] + _sum_children(mv(XT, pa), lv)

    # pass 3: accelerations, root level first
    a0 = base_acceleration(model)
    qdd = []
    for d, lv in enumerate(levels):
        st = L[d]
        a_p = jnp.broadcast_to(a0, (len(lv.bodies), 6)) if lv.is_root else _gather_parent(L[d - 1]["a"], lv)
        a = mv(st["X"], a_p) + st["c"]
        if lv.k:
            qd = mv(st["Dinv"], st["u"] - mv(_T(st["U"]), a))
            a = a + mv(st["S"], qd)
            qdd.append(qd)
        else:
            qdd.append(jnp.zeros((len(lv.bodies), 0), dt))
        st["a"] = a
    return _to_v(qdd, levels, nv, dt)


def inverse_dynamics_levels(model: Model, q, v, a, f_ext=None, products="dot"):
    """RNEA (Featherstone 2008, Table 5.1) batched per depth level: same arguments and result as
    :func:`~.rnea.inverse_dynamics_rigid` (``products`` as in :data:`PRODUCTS`)."""
    mv = functools.partial(_mv, products=products)
    t = model.topology
    dt = model.dtype
    nv = t.nv_rigid
    levels = tree_levels(t)
    jd = JointData(model, q, v)
    Ib = body_spatial_inertias(model)
    a_p = jnp.concatenate([a, jnp.zeros(1, dt)])
    a0 = base_acceleration(model)
    # velocities and c = cJ + v × vJ (as in ABA), accelerations level by level, then
    # f = I a + v ×* I v − f_ext for every body at once
    order, cuts, Xs, vel, c_all = _outward_velocities(jd, levels, mv)
    acc, Ss = [], []
    for d, lv in enumerate(levels):
        S = _level_subspaces(jd, lv, dt) if lv.k else None
        aJ = c_all[cuts[d]:cuts[d + 1]] + (mv(S, a_p[lv.v_idx]) if lv.k else 0.0)
        a_par = jnp.broadcast_to(a0, (len(lv.bodies), 6)) if lv.is_root else _gather_parent(acc[d - 1], lv)
        acc.append(mv(Xs[d], a_par) + aJ)
        Ss.append(S)
    acc = jnp.concatenate(acc)
    I_all = Ib[order]
    f_all = mv(I_all, acc) + sp.cross_force(vel, mv(I_all, vel))
    if f_ext is not None:
        f_all = f_all - f_ext[order]
    L = [dict(X=Xs[d], S=Ss[d], f=f_all[cuts[d]:cuts[d + 1]]) for d in range(len(levels))]
    taus = []
    for d in reversed(range(len(levels))):
        lv, st = levels[d], L[d]
        if not lv.is_root:
            L[d - 1]["f"] = L[d - 1]["f"] + _sum_children(mv(_T(st["X"]), st["f"]), lv)
    for d, lv in enumerate(levels):
        st = L[d]
        taus.append(mv(_T(st["S"]), st["f"]) if lv.k else jnp.zeros((len(lv.bodies), 0), dt))
    tau = _to_v(taus, levels, nv, dt)
    return tau + model.armature * a + joint_passive_forces(model, v, q)


def _minv_levels(model: Model, q, x, products="dot"):
    """``M⁻¹ x`` by the level-batched ABA at rest, without gravity and springs."""
    return articulated_body_algorithm_levels(model.at_rest_unloaded(), q, jnp.zeros(model.nv, model.dtype), x, None,
                                             products)


@functools.cache
def forward_dynamics_levels(products: str = "dot", derivative_products: str | None = None):
    """Level-batched ABA with derivatives from the implicit function ``RNEA(q, v, v̇) = τ``
    (level-batched as well; :func:`~.traversal.implicit_forward_dynamics`), small products
    emitted as ``products`` (:data:`PRODUCTS`) in ABA and as ``derivative_products`` (default:
    the same) in the derivative's RNEA and ``M⁻¹``."""
    dp = products if derivative_products is None else derivative_products
    for p in (products, dp):
        if p not in PRODUCTS:
            raise ValueError(f"unknown products {p!r}; use one of {PRODUCTS}")
    return implicit_forward_dynamics(
        functools.partial(articulated_body_algorithm_levels, products=products),
        functools.partial(inverse_dynamics_levels, products=dp),
        functools.partial(_minv_levels, products=dp),
    )
