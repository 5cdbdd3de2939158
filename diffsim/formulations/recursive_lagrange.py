"""Recursive Lagrange dynamics with 4×4 homogeneous transforms (seed 004, after Book 1984).

An independent cross-check of :mod:`diffsim.dynamics.flexible` for trees of rigid and flexible
links on revolute, prismatic and fixed joints (fixed base). No spatial vectors: every quantity
is a 4×4 homogeneous matrix and every energy term a trace of 4×4 products.

Notation (homogeneous coordinates ``[x, y, z, 1]`` — the paper puts the 1 first; the algebra is
the same). For body ``i`` with parent ``p``:

* ``A_i(q_i) = H_tree,i · J_i(q_i)`` — body frame ``i`` in the parent's end frame (eq 1),
  ``U_i = ∂A_i/∂q_i``, ``U2_i = ∂²A_i/∂q_i²`` (eqs 10–11);
* ``E_i(δ_i)`` — the (deformed) end frame in body frame ``i`` (eq 2), ``M_ik = ∂E_i/∂δ_ik``
  (eq 3), ``N_ikl = ∂²E_i/∂δ_ik∂δ_il``;
* ``W_i = W̄_p A_i`` and ``W̄_i = W_i E_i`` — world poses of the body and end frames (eqs 4, 12),
  ``Ẇ, Ẅ, W̄̇, W̄̈`` by the recursions of eqs 8–9, 13–14 (:func:`_kinematics`); ``Ẅ_v`` is the
  velocity-product part (``z̈ = 0``, eq 75).

**Exact deformation transforms.** diffsim's link kinematics (:mod:`diffsim.dynamics.sections`) puts
section ``g`` at ``S_g(δ) = [[exp([Φ_r δ]×), [x_g,0,0] + Φ_d δ − ½ δᵀGδ e_x], [0, 1]]`` and the end
frame at the same formula for ``x = L``. The paper's ``E_i = H_i + Σ δ_ij M_ij`` is the first-order
expansion of this: with ``E`` linear the end frame is not orthonormal at second order and its
second derivatives vanish, so Lagrange's equations would differ from diffsim's at ``O(δ)`` in
the velocity products. Here ``E_i`` and ``S_g`` are the exact rigid transforms;
``M_ik = ∂E_i/∂δ_ik`` (equal to the paper's ``M_ik`` at ``δ = 0``) and the section Jacobians are
evaluated at the current ``δ``, and the second-derivative terms the paper's linearity drops
(``Σ N_ikl δ̇_k δ̇_l`` in ``Ë_i``, eq 16, and ``S̈_g`` of the sections) are kept. The foreshortening
``−½ δᵀGδ`` (``stiffening=True``) is therefore supported as well. These per-section derivatives
of the kinematic map (the paper's mode-shape data) are taken with ``jax.jvp``/``jax.jacfwd``;
all the dynamics is the recursion below.

**Pseudo-inertias (eqs 19–35).** Each mass element ``e`` — a section (point mass ``m_g`` with
rotary inertia ``J_g``) or a body's rigid part (mass, COM ``c``, inertia ``I_c``) — has
``Ĵ_e = ∫ r rᵀ dm = [[½ tr(I_c) 1 − I_c + m c cᵀ, m c], [m cᵀ, m]]`` in its own frame, so that
``T = ½ Σ_e tr(Ṫ_e Ĵ_e Ṫ_eᵀ)`` with ``T_e = W_i S_e``. The section's full rotary inertia is in
``Ĵ``: the paper's torsional term ``T_ikl`` (eq 20) is the ``J_xx`` part of it. Per link, at the
current ``δ`` (:func:`_link_moments`):

* ``G_i = Σ S Ĵ Sᵀ`` (eq 72, the paper's ``C_i + Σ δ (C_ik + C_ikᵀ) + …``; eqs 30, 33–35),
* ``D_ik = Σ S Ĵ ∂_kSᵀ`` (eq 71; eqs 29, 32), ``C_ikl = Σ ∂_kS Ĵ ∂_lSᵀ`` (eqs 28, 31, 20),
* ``r_i = Σ S Ĵ e₄`` and ``ε_ik = Σ ∂_kS Ĵ e₄`` (eqs 45–46, first moments for gravity).

**Equations (eqs 47–50).** Lagrange's equations of ``T`` give, for every coordinate ``a``,
``Σ_e tr(∂_aT_e Ĵ_e T̈_eᵀ) = J z̈ + h``, with ``∂T_e/∂q_j = W̄_p(j) U_j X_je`` and
``∂T_e/∂δ_jk = W_j ∂_kS_e`` (own sections) or ``W_j M_jk A_c X_ce`` (beyond the end).

* Mass matrix ``J`` (eqs 51–61, :func:`mass_matrix_recursive_lagrange`): composite
  pseudo-inertias ``F_i = G_i + E_i F̄_i E_iᵀ``, ``F̄_i = Σ_children A_c F_c A_cᵀ`` built leaves to
  root (eqs 76–78, 80); per column ``b`` of body ``h`` the 4×4 matrix
  ``Φ_b = Σ_e X_he Ĵ_e ∂_bT_eᵀ`` (``F_h U_hᵀ W̄_pᵀ`` for the joint, ``(D_hk + E_h F̄_h M_hkᵀ) W_hᵀ``
  for a mode) is carried to the ancestors by ``Φ ← E_k A_c Φ`` (eq 79; ``A_c Φ`` before the
  ``E_k`` is the paper's ``F`` of eq 80), and each entry is one trace:
  ``J(q_k, b) = tr(W̄_p(k) U_k Φ)``, ``J(δ_kl, b) = tr(W_k M_kl A_c Φ)`` (eqs 51, 53–55, 59–60);
  mode–mode of one link ``tr(W_h (C_hlk + M_hl F̄_h M_hkᵀ) W_hᵀ)`` (eqs 57–58, 61).
* Right-hand side (eqs 62–70, :func:`rhs_recursive_lagrange`): ``Q_i = G_i Ẅ_v,iᵀ +
  2 (Σ δ̇_k D_ik) Ẇ_iᵀ + (Σ S Ĵ S̈_vᵀ) W_iᵀ + E_i Σ_c A_c Q_c`` and ``P_i = r_i + E_i Σ_c A_c P_c``
  (eqs 67–70) leaves to root; ``h(q_j) = tr(W̄_p U_j Q_j)``, gravity ``ĝᵀ W̄_p U_j P_j``
  (eqs 63–64), and for the modes the traces of eqs 65–66 with the own-link sums.

``J z̈ = τ − h + Q_gravity − K δ − D δ̇ − d ∘ q̇`` (joint armature on ``J``'s diagonal).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import spatial as sp
from ..dynamics.dispatch import AbstractDynamics, no_body_wrenches, with_coupling
from ..dynamics.sections import section_pose
from ..model.joints import JointType
from ..model.model import Model, joint_passive_forces

_SUPPORTED = (JointType.REVOLUTE, JointType.PRISMATIC, JointType.FIXED)


def _check(model: Model):
    bad = [
        f"{model.topology.joint_names[i]!r} ({j.value})"
        for i, j in enumerate(model.topology.joint_types)
        if j not in _SUPPORTED
    ]
    if bad:
        raise ValueError(
            "the recursive Lagrange formulation (seed 004) supports revolute, prismatic and fixed "
            f"joints on a fixed base only; unsupported joints: {', '.join(bad)}"
        )


# ----------------------------------------------------------------------------------------
# 4×4 building blocks
# ----------------------------------------------------------------------------------------


def _joint(model: Model, i: int, qi):
    """``A_i, U_i = ∂A_i/∂q_i, U2_i = ∂²A_i/∂q_i²`` (eqs 1, 10–11)."""
    jtype = model.topology.joint_types[i]
    dt = model.dtype
    Ht = sp.homogeneous(model.tree_rot[i], model.tree_pos[i])
    zero = jnp.zeros((4, 4), dt)
    a = model.axis[i]
    if jtype is JointType.FIXED:
        return Ht, zero, zero
    if jtype is JointType.REVOLUTE:
        K = sp.skew(a)
        s, c = jnp.sin(qi[0]), jnp.cos(qi[0])
        eye = jnp.eye(3, dtype=dt)
        R = eye + s * K + (1.0 - c) * (K @ K)
        dR = c * K + s * (K @ K)
        ddR = -s * K + c * (K @ K)
        J = sp.homogeneous(R, jnp.zeros(3, dt))
        dJ = zero.at[:3, :3].set(dR)
        ddJ = zero.at[:3, :3].set(ddR)
        return Ht @ J, Ht @ dJ, Ht @ ddJ
    if jtype is JointType.PRISMATIC:
        J = sp.homogeneous(jnp.eye(3, dtype=dt), a * qi[0])
        dJ = zero.at[:3, 3].set(a)
        return Ht @ J, Ht @ dJ, zero
    raise ValueError(f"unsupported joint type {jtype}")  # pragma: no cover (see _check)


def _pose4(x, phi_d, phi_r, fore, delta, stiffening):
    R, p = section_pose(x, phi_d, phi_r, fore, delta, stiffening)
    return sp.homogeneous(R, p)


def _pose_derivs(x, phi_d, phi_r, fore, delta, ddelta, stiffening):
    """``S [...,4,4]``, ``∂S/∂δ_k [ne,...,4,4]``, ``Ṡ``, ``S̈_v = Σ ∂²S/∂δ_k∂δ_l δ̇_k δ̇_l``."""

    def f(d):
        return _pose4(x, phi_d, phi_r, fore, d, stiffening)

    S = f(delta)
    ne = delta.shape[0]
    dS = jax.vmap(lambda e: jax.jvp(f, (delta,), (e,))[1])(jnp.eye(ne, dtype=delta.dtype))
    Sd, Sddv = jax.jvp(lambda d: jax.jvp(f, (d,), (ddelta,))[1], (delta,), (ddelta,))
    return S, dS, Sd, Sddv


def _pseudo_inertia(m, c, Ic):
    """``Ĵ = ∫ r rᵀ dm`` (4×4) of a body of mass ``m``, COM ``c``, inertia ``I_c`` (batched)."""
    eye = jnp.eye(3, dtype=Ic.dtype)
    top_left = 0.5 * jnp.trace(Ic, axis1=-2, axis2=-1)[..., None, None] * eye - Ic
    top_left = top_left + m[..., None, None] * c[..., :, None] * c[..., None, :]
    mc = m[..., None] * c
    top = jnp.concatenate([top_left, mc[..., :, None]], -1)
    bottom = jnp.concatenate([mc, m[..., None]], -1)[..., None, :]
    return jnp.concatenate([top, bottom], -2)


# ----------------------------------------------------------------------------------------
# Per-link pseudo-inertias (eqs 19–35, 45–46, 71–72)
# ----------------------------------------------------------------------------------------


class _Link:
    """Per-link data at the current state (plain container, not a pytree)."""


def _link_moments(model: Model, i: int, q, v):
    t = model.topology
    dt = model.dtype
    Jr = _pseudo_inertia(model.mass[i], model.com[i], model.inertia[i])
    L = _Link()
    fb = model.flex[i] if model.flex else None
    e4 = jnp.array([0.0, 0.0, 0.0, 1.0], dt)
    if fb is None:
        L.ne = 0
        L.G = Jr
        L.r = Jr @ e4
        eye = jnp.eye(4, dtype=dt)
        L.E, L.M, L.Edd_v = eye, jnp.zeros((0, 4, 4), dt), jnp.zeros((4, 4), dt)
        L.Ed = jnp.zeros((4, 4), dt)
        return L
    d, dd = q[t.e_q_slice(i)], v[t.e_v_slice(i)]
    L.ne = d.shape[0]
    # sections
    S, dS, Sd, Sddv = _pose_derivs(fb.x, fb.phi_d, fb.phi_r, fb.fore, d, dd, fb.stiffening)
    Jg = _pseudo_inertia(fb.m, jnp.zeros(fb.x.shape + (3,), dt), fb.J)  # [ng,4,4]
    SJ = jnp.einsum("gab,gbc->gac", S, Jg)
    dSJ = jnp.einsum("kgab,gbc->kgac", dS, Jg)
    L.G = jnp.einsum("gac,gdc->ad", SJ, S) + Jr  # eq 72 (+ rigid part, eq 35)
    L.D = jnp.einsum("gac,kgdc->kad", SJ, dS)  # eq 71: Σ S Ĵ ∂_kSᵀ
    L.C = jnp.einsum("kgac,lgdc->klad", dSJ, dS)  # eq 28 (+ rotary, eq 20): Σ ∂_kS Ĵ ∂_lSᵀ
    L.Dv = jnp.einsum("gac,gdc->ad", SJ, Sddv)  # Σ S Ĵ S̈_vᵀ
    L.Cv = jnp.einsum("kgac,gdc->kad", dSJ, Sddv)  # Σ ∂_kS Ĵ S̈_vᵀ
    L.r = jnp.einsum("gac,c->a", SJ, e4) + Jr @ e4  # eq 45
    L.eps = jnp.einsum("kgac,c->ka", dSJ, e4)  # eq 46
    L.dd = dd
    # end frame: E_i, M_ik, Ė_i, Ë_v,i (eqs 2–3, 15–16)
    E, M, Ed, Eddv = _pose_derivs(fb.end_x, fb.end_phi_d, fb.end_phi_r, fb.end_fore, d, dd, fb.stiffening)
    L.E, L.M, L.Ed, L.Edd_v = E, M, Ed, Eddv
    return L


# ----------------------------------------------------------------------------------------
# Kinematic recursions (eqs 4–16, 75)
# ----------------------------------------------------------------------------------------


def _kinematics(model: Model, q, v, links):
    """Per body: ``A, U, U2, W, Ẇ, Ẅ_v`` (body frame) and ``W̄, W̄̇, W̄̈_v`` (end frame)."""
    t = model.topology
    dt = model.dtype
    eye, zero = jnp.eye(4, dtype=dt), jnp.zeros((4, 4), dt)
    K = [None] * t.nb
    for i in range(t.nb):
        p = t.parent[i]
        qi, vi = q[t.q_slice(i)], v[t.v_slice(i)]
        A, U, U2 = _joint(model, i, qi)
        qd = vi[0] if vi.shape[0] else jnp.zeros((), dt)
        Wb_p, Wbd_p, Wbdd_p = (eye, zero, zero) if p < 0 else (K[p].Wb, K[p].Wbd, K[p].Wbdd)
        k = _Link()
        k.A, k.U, k.U2 = A, U, U2
        k.Wp = Wb_p  # W̄ of the predecessor (the world for a root)
        k.W = Wb_p @ A  # eq 4
        k.Wd = Wbd_p @ A + Wb_p @ U * qd  # eq 8
        k.Wdd = Wbdd_p @ A + 2.0 * (Wbd_p @ U) * qd + Wb_p @ U2 * qd**2  # eqs 9, 75 (q̈ = 0)
        L = links[i]
        k.Wb = k.W @ L.E  # eq 12
        k.Wbd = k.Wd @ L.E + k.W @ L.Ed  # eq 13
        k.Wbdd = k.Wdd @ L.E + 2.0 * (k.Wd @ L.Ed) + k.W @ L.Edd_v  # eq 14 (δ̈ = 0)
        K[i] = k
    return K


def _children(t):
    ch = [[] for _ in range(t.nb)]
    for i, p in enumerate(t.parent):
        if p >= 0:
            ch[p].append(i)
    return ch


def _tr(A, B):
    """``tr(A B)`` for 4×4 matrices (batched over leading axes of ``B``)."""
    return jnp.einsum("ab,...ba->...", A, B)


# ----------------------------------------------------------------------------------------
# Mass matrix (eqs 51–61, 76–81)
# ----------------------------------------------------------------------------------------


def _mass_matrix(model: Model, q, links, K):
    t = model.topology
    dt = model.dtype
    nb, nv = t.nb, model.nv
    ch = _children(t)
    # composite pseudo-inertias, leaves to root (eqs 76–78, 80)
    F, Fbar = [None] * nb, [None] * nb
    for i in reversed(range(nb)):
        Fb = jnp.zeros((4, 4), dt)
        for c in ch[i]:
            Fb = Fb + K[c].A @ F[c] @ K[c].A.T
        Fbar[i] = Fb
        F[i] = links[i].G + links[i].E @ Fb @ links[i].E.T

    Mm = jnp.zeros((nv, nv), dt)
    for h in range(nb):
        kh, Lh = K[h], links[h]
        jv = list(range(t.v_start[h], t.v_start[h] + t.nv_joint[h]))
        ev = list(range(t.e_v_slice(h).start, t.e_v_slice(h).stop))
        cols = jv + ev
        if not cols:
            continue
        # column matrices Φ_b in body h's frame
        Phis = []
        if jv:
            Phis.append((F[h] @ kh.U.T @ kh.Wp.T)[None])
        if ev:
            Phis.append(
                jnp.einsum("kab,cb->kac", Lh.D + jnp.einsum("ab,bc,kdc->kad", Lh.E, Fbar[h], Lh.M), kh.W)
            )
        Phi = jnp.concatenate(Phis, 0)  # [nc,4,4]
        # same-body block
        if jv:
            Mm = Mm.at[jv[0], cols].set(_tr(kh.Wp @ kh.U, Phi))
        if ev:
            # mode rows: tr(W_h (C_hlk + M_hl F̄ M_hkᵀ) W_hᵀ) for mode columns (eqs 57–58)
            CC = Lh.C + jnp.einsum("lab,bc,kdc->lkad", Lh.M, Fbar[h], Lh.M)
            Mee = jnp.einsum("ab,lkbc,dc->lkad", kh.W, CC, kh.W)
            Mm = Mm.at[np.ix_(ev, ev)].set(jnp.trace(Mee, axis1=-2, axis2=-1))
            if jv:
                Mm = Mm.at[ev, jv[0]].set(Mm[jv[0], ev])
        # carry the columns to the ancestors (eqs 79–81)
        k = h
        while t.parent[k] >= 0:
            p = t.parent[k]
            kp, Lp = K[p], links[p]
            Psi = jnp.einsum("ab,kbc->kac", K[k].A, Phi)  # the paper's F (eq 80)
            Phi = jnp.einsum("ab,kbc->kac", Lp.E, Psi)
            if t.nv_joint[p]:
                j = t.v_start[p]
                row = _tr(kp.Wp @ kp.U, Phi)
                Mm = Mm.at[j, cols].set(row).at[cols, j].set(row)
            if Lp.ne:
                ep = list(range(t.e_v_slice(p).start, t.e_v_slice(p).stop))
                blk = jnp.einsum("ab,lbc,kca->lk", kp.W, Lp.M, Psi)  # tr(W_p M_pl A_c Φ) (eqs 59–60)
                Mm = Mm.at[np.ix_(ep, cols)].set(blk).at[np.ix_(cols, ep)].set(blk.T)
            k = p
    nvr = t.nv_rigid
    return Mm.at[jnp.arange(nvr), jnp.arange(nvr)].add(model.armature)


# ----------------------------------------------------------------------------------------
# Right-hand side (eqs 62–70)
# ----------------------------------------------------------------------------------------


def _rhs(model: Model, q, v, tau, links, K):
    t = model.topology
    dt = model.dtype
    nb = t.nb
    ch = _children(t)
    gh = jnp.concatenate([model.gravity, jnp.zeros(1, dt)])
    R = jnp.zeros(model.nv, dt)
    Q, P = [None] * nb, [None] * nb
    for i in reversed(range(nb)):
        k, L = K[i], links[i]
        Qbar, Pbar = jnp.zeros((4, 4), dt), jnp.zeros(4, dt)
        for c in ch[i]:
            Qbar = Qbar + K[c].A @ Q[c]
            Pbar = Pbar + K[c].A @ P[c]
        Qi = L.G @ k.Wdd.T + L.E @ Qbar  # eqs 67–68
        if L.ne:
            Dt = jnp.einsum("k,kab->ab", L.dd, L.D)
            Qi = Qi + 2.0 * Dt @ k.Wd.T + L.Dv @ k.W.T
        Q[i] = Qi
        P[i] = L.r + L.E @ Pbar  # eqs 69–70
        if t.nv_joint[i]:
            j = t.v_start[i]
            WU = k.Wp @ k.U
            R = R.at[j].add(-jnp.trace(WU @ Qi) + gh @ WU @ P[i])  # eqs 63–64
        if L.ne:
            sl = t.e_v_slice(i)
            Ck = jnp.einsum("l,klab->kab", L.dd, L.C)
            inner = (
                jnp.einsum("kba,cb->kac", L.D, k.Wdd)  # D_kᵀ Ẅ_vᵀ
                + 2.0 * jnp.einsum("kab,cb->kac", Ck, k.Wd)
                + jnp.einsum("kab,cb->kac", L.Cv, k.W)
                + jnp.einsum("kab,bc->kac", L.M, Qbar)
            )
            h = jnp.einsum("ab,kba->k", k.W, inner)
            g = jnp.einsum("a,ab,kb->k", gh, k.W, L.eps + jnp.einsum("kab,b->ka", L.M, Pbar))
            fb = model.flex[i]
            d = q[t.e_q_slice(i)]
            R = R.at[sl].add(-h + g - fb.K @ d - fb.D @ L.dd)  # eqs 65–66
    nvr = t.nv_rigid
    return R.at[:nvr].add(-joint_passive_forces(model, v[:nvr], q)) + tau


def _prepare(model: Model, q, v):
    _check(model)
    links = [_link_moments(model, i, q, v) for i in range(model.nb)]
    return links, _kinematics(model, q, v, links)


def mass_matrix_recursive_lagrange(model: Model, q):
    """``J(z)`` [nv, nv] (eqs 51–61) by the backward recursions of eqs 76–81."""
    v = jnp.zeros(model.nv, model.dtype)
    links, K = _prepare(model, q, v)
    return _mass_matrix(model, q, links, K)


def rhs_recursive_lagrange(model: Model, q, v, tau=None):
    """``R(z, ż)`` [nv] of ``J z̈ = R`` (eqs 62–70): ``τ`` minus velocity products, gravity,
    elastic and damping forces."""
    tau = jnp.zeros(model.nv, model.dtype) if tau is None else tau
    links, K = _prepare(model, q, v)
    return _rhs(model, q, v, tau, links, K)


def forward_dynamics_recursive_lagrange(model: Model, q, v, tau=None):
    """``z̈ = J⁻¹ R`` (eq 49) for a tree of rigid/flexible links on revolute, prismatic and
    fixed joints; ``tau`` [nv] holds joint forces and modal generalised forces."""
    tau = jnp.zeros(model.nv, model.dtype) if tau is None else tau
    links, K = _prepare(model, q, v)
    J = _mass_matrix(model, q, links, K)
    R = _rhs(model, q, v, tau, links, K)
    return jnp.linalg.solve(J, R)


def world_frames_recursive_lagrange(model: Model, q):
    """``(W [nb,4,4], W̄ [nb,4,4])``: body- and end-frame poses from the recursion of eq 4."""
    links, K = _prepare(model, q, jnp.zeros(model.nv, model.dtype))
    return jnp.stack([k.W for k in K]), jnp.stack([k.Wb for k in K])


class RecursiveLagrange(AbstractDynamics):
    """Seed 004's recursive Lagrange equations with 4×4 transforms as a dynamics strategy (trees
    of revolute / prismatic / fixed joints on a fixed base; joint and modal forces only)."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        no_body_wrenches("the recursive Lagrange formulation", f_ext)
        return with_coupling(lambda m, q, v, t, _: forward_dynamics_recursive_lagrange(m, q, v, t), model, q, v, tau,
                             None)

    def check(self, model):
        _check(model)
