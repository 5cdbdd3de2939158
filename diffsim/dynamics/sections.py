"""Kinematics and kinetics of the sections of a flexible link (the definition is in
:mod:`diffsim.model.flexbody`): section poses, their twists per unit modal rate in closed form,
and a link's Newton–Euler equations in its own coordinates ``ξ = [V; δ̇]`` (seed 003's
generalised Newton–Euler body equations). The sweeps in :mod:`.flexible` and
:mod:`.composite` assemble these per-link equations along the tree."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import spatial as sp
from ..model.flexbody import FlexBody


# ----------------------------------------------------------------------------------------
# Section kinematics relative to the body frame
# ----------------------------------------------------------------------------------------


def section_pose(x, phi_d, phi_r, fore, delta, stiffening=True):
    """``(R, p)`` of sections at ``x`` [...] for modal coordinates ``delta`` [ne] (module
    docstring); ``phi_d``/``phi_r`` [..., 3, ne], ``fore`` [..., ne, ne]."""
    p = jnp.einsum("...ij,j->...i", phi_d, delta)
    ax = x
    if stiffening:
        ax = ax - 0.5 * jnp.einsum("i,...ij,j->...", delta, fore, delta)
    p = p.at[..., 0].add(ax)
    R = sp.so3_exp(jnp.einsum("...ij,j->...i", phi_r, delta))
    return R, p


def relative_twist_autodiff(x, phi_d, phi_r, fore, delta, ddelta, stiffening=True):
    """Twist ``[ω; v]`` of the sections relative to the body frame (section coordinates) by
    differentiating :func:`section_pose` — the definition :func:`section_motion` implements in
    closed form (kept for tests)."""
    (R, p), (Rd, pd) = jax.jvp(lambda d: section_pose(x, phi_d, phi_r, fore, d, stiffening), (delta,), (ddelta,))
    Rt = jnp.swapaxes(R, -1, -2)
    return jnp.concatenate([sp.vee(Rt @ Rd), jnp.einsum("...ij,...j->...i", Rt, pd)], -1)


def section_motion(x, phi_d, phi_r, fore, delta, ddelta, stiffening=True):
    """Everything the dynamics needs about sections at ``x``, in closed form:

    * ``X`` — ``section_X_body`` (a batched :class:`~diffsim.spatial.Transform`),
    * ``S`` [..., 6, ne] — relative twist per unit modal rate, ``V_rel = S δ̇``:
      ``ω = J_r(φ) Φ_r δ̇`` with the right Jacobian ``J_r = 1 − b [φ]× + c [φ]×²`` of SO(3), and
      ``v = Rᵀ (Φ_d − e_x (G δ)ᵀ) δ̇``;
    * ``Sd`` [..., 6] — ``Ṡ δ̇`` (at ``δ̈ = 0``): ``J̇_r φ̇ = −ḃ φ×φ̇ + ċ φ×(φ×φ̇) + c φ̇×(φ×φ̇)``
      and ``−ω × v − Rᵀ e_x (δ̇ᵀ G δ̇)``.
    """
    phi = jnp.einsum("...ij,j->...i", phi_r, delta)
    phid = jnp.einsum("...ij,j->...i", phi_r, ddelta)
    t2 = jnp.sum(phi * phi, -1)
    a, b, c, db, dc = sp.so3_coeffs_and_rates(t2, 2.0 * jnp.sum(phi * phid, -1))
    K = sp.skew(phi)
    K2 = sp.skew_squared(phi)
    eye = jnp.eye(3, dtype=phi.dtype)
    R = eye + a[..., None, None] * K + b[..., None, None] * K2
    Jr = eye - b[..., None, None] * K + c[..., None, None] * K2
    B = phi_d
    pos = jnp.einsum("...ij,j->...i", phi_d, delta)
    ax = x
    if stiffening:
        Gd = jnp.einsum("...ij,j->...i", fore, delta)
        B = B.at[..., 0, :].add(-Gd)
        ax = ax - 0.5 * jnp.einsum("...i,i->...", Gd, delta)
    pos = pos.at[..., 0].add(ax)
    Rt = jnp.swapaxes(R, -1, -2)
    # the per-section 3×3 products written out (sp.mm_unrolled): a batched dot over the sections
    # is one small matrix product per section on the CPU
    S = jnp.concatenate([sp.mm_unrolled(Jr, phi_r), sp.mm_unrolled(Rt, B)], -2)
    w = sp.mv_unrolled(Jr, phid)
    v = jnp.einsum("...ij,j->...i", S[..., 3:, :], ddelta)
    pxd = jnp.cross(phi, phid)
    wd = -db[..., None] * pxd + dc[..., None] * jnp.cross(phi, pxd) + c[..., None] * jnp.cross(phid, pxd)
    vd = -jnp.cross(w, v)
    if stiffening:
        vd = vd - Rt[..., :, 0] * jnp.einsum("i,...ij,j->...", ddelta, fore, ddelta)[..., None]
    return sp.Transform.from_placement(R, pos), S, jnp.concatenate([wd, vd], -1)


class BodyKinetics(eqx.Module):
    """A flexible link's equations in its own coordinates ``ξ = [V; δ̇]`` (6 + ne):
    ``M ξ̇ + b`` is the generalised force (Newton–Euler of every section projected with
    ``P_g = [X_g, S_g]``: ``M = Σ P_gᵀ I_g P_g``, ``b = Σ P_gᵀ (I_g c_g + V_g ×* I_g V_g)``, the
    seed 003 generalised Newton–Euler body equations), and the end frame's motion
    ``A_end = P_end ξ̇ + c_end``."""

    M: jax.Array  # [6+ne, 6+ne]
    b: jax.Array  # [6+ne]
    P_end: jax.Array  # [6, 6+ne]
    c_end: jax.Array  # [6]
    V_end: jax.Array  # [6]
    X_end: sp.Transform


def end_motion(fb: FlexBody, delta, ddelta):
    """``(X_end, S_end, Ṡ_end δ̇)`` of the end section (:func:`section_motion` at ``x = L``)."""
    Xe, Se, Sde = section_motion(
        fb.end_x[None], fb.end_phi_d[None], fb.end_phi_r[None], fb.end_fore[None], delta, ddelta, fb.stiffening
    )
    return Xe[0], Se[0], Sde[0]


def section_inertia_times(fb: FlexBody, X):
    """``I_g X_g`` for ``X`` [ng, 6, k]: the section inertia ``I_g = diag(J_g, m_g 1)`` (the section
    point is its centre of mass) applied block by block, ``[J_g X_top; m_g X_bottom]``, the 3×3
    product written out as three multiply-adds (XLA fuses them; a batched 6×6 dot per section is
    one small kernel per section on the CPU)."""
    return jnp.concatenate([sp.mm_unrolled(fb.J, X[:, :3, :]), fb.m[:, None, None] * X[:, 3:, :]], -2)


def body_kinetics(fb: FlexBody, delta, ddelta, V, I_rigid, end=None):
    """:class:`BodyKinetics` at modal state ``(δ, δ̇)`` and body twist ``V`` (body coords);
    ``I_rigid`` [6, 6] is the link's rigid part (hub, flanges) at the body origin; ``end``: the
    end section's :func:`end_motion` if already computed."""
    X, S, Sd = section_motion(fb.x, fb.phi_d, fb.phi_r, fb.fore, delta, ddelta, fb.stiffening)
    Xm = X.motion_matrix()  # [ng, 6, 6]
    P = jnp.concatenate([Xm, S], -1)  # [ng, 6, 6+ne]
    Vrel = S @ ddelta
    Vg = jnp.einsum("gij,j->gi", Xm, V) + Vrel
    cg = Sd + sp.cross_motion(Vg, Vrel)
    IP = section_inertia_times(fb, P)
    M = jnp.einsum("gki,gkj->ij", P, IP)  # one product over sections and rows (no per-section dots)
    fg = section_inertia_times(fb, cg[..., None])[..., 0] + sp.cross_force(
        Vg, section_inertia_times(fb, Vg[..., None])[..., 0])
    b = jnp.einsum("gki,gk->i", P, fg)
    M = M.at[:6, :6].add(I_rigid)
    b = b.at[:6].add(sp.cross_force(V, I_rigid @ V))
    Xe, Se, Sde = end_motion(fb, delta, ddelta) if end is None else end
    Xem = Xe.motion_matrix()
    Vrel_e = Se @ ddelta
    V_end = Xem @ V + Vrel_e
    c_end = Sde + sp.cross_motion(V_end, Vrel_e)
    return BodyKinetics(M=M, b=b, P_end=jnp.concatenate([Xem, Se], -1), c_end=c_end, V_end=V_end, X_end=Xe)


def end_transform(fb: FlexBody, delta):
    """``end_X_body`` at modal coordinates ``δ`` (kinematics only)."""
    R, p = section_pose(fb.end_x, fb.end_phi_d, fb.end_phi_r, fb.end_fore, delta, fb.stiffening)
    return sp.Transform.from_placement(R, p)


def strain_energy(fb: FlexBody, delta):
    """``½ δᵀ K δ``."""
    return 0.5 * delta @ fb.K @ delta
