"""Seed 001's recursive Gibbs–Appell formulation for planar chains of flexible (Timoshenko)
links — an independent cross-check of :mod:`diffsim.dynamics.flexible`.

The system (seed 001, "Modeling and simulation of contact and friction forces in flexible
robotic arms"): an open planar chain of ``n`` links joined by revolute joints, each link a
Timoshenko beam by assumed modes with bending in its own plane only. The first link is either
free (a PLANAR joint: the paper's ``X1, X2, q1``) or hinged to the ground (a REVOLUTE joint).

Coordinates. diffsim's order is ``[joint coordinates of every body; modal coordinates of every
flexible body]``; the paper's (eq 13) is

    Z = [q1, δ11..δ1m1, q2, δ21.., …, qn, δn1.., X1, X2]

(``X1, X2`` only for a free first link). :func:`paper_permutation` gives ``Z = q[perm]``,
:func:`to_paper_order` / :func:`from_paper_order` map vectors, and
``gibbs_appell_equations`` returns ``I(Z)``, ``R(Z, Ż)`` in the paper's order.

Kinematics (:func:`planar_kinematics`, recursive, in the plane, no spatial algebra). A point
``Q`` of link ``i`` at the undeformed abscissa ``η`` sits, in the link frame attached at the
link's start ``O_i`` (x axis along the undeformed link), at (eqs 1–2, 4)

    r_{Q/O_i} = η e_1 + Σ_j δ_ij W_ij(η)  [− ½ (δᵀ G(η) δ) e_1 with geometric stiffening]
    θ_3(η)    = Σ_j δ_ij Θ_ij(η)          (section rotation; Γ = W′ − Θ, eq 5, is the shear)

and its absolute acceleration is eq 6,

    a_Q = a_{O_i} + r̈_{Q/O_i} + 2 ω_i × ṙ_{Q/O_i} + ω̇_i × r_{Q/O_i} + ω_i × (ω_i × r_{Q/O_i}),

the section's angular acceleration ``ω̇_Q = ω̇_i + θ̈_3(η)``. The next link starts at the
deformed end of link ``i`` (``O_{i+1} = Q(l_i)``, plus an optional rigid in-plane offset of the
model's tree placement), rotated by the end rotation ``θ_3(l_i)`` and the relative angle
``q_{i+1}``: ``ω_{i+1} = ω_i + θ̇_3(l_i) + q̇_{i+1}``, ``ω̇_{i+1} = ω̇_i + θ̈_3(l_i) + q̈_{i+1}``.
Gravity enters as the paper does it: the inertial origin ``O_ref`` is given the acceleration
``−g`` (1 g along +X2 for ``g`` along −X2), so every ``a_Q`` carries ``−g``.

Gibbs function (:func:`gibbs_function`, eq 7), the integral over each link taken with the
FlexBody's own sections as the quadrature (``m_g = μ w_g``, ``J_g``):

    S = Σ_i Σ_g [½ m_g a_g·a_g + ½ ω̇_gᵀ J_g ω̇_g + ω̇_gᵀ ω̃_g J_g ω_g]
        + Σ_i [rigid part of link i: same terms at its COM] + ½ Σ armature q̈²

(the last term of eq 7 vanishes identically in the plane; it is kept as written).

Equations (eqs 12, 14, 15): ``∂S/∂Z̈ + ∂D/∂Ż + ∂V_e/∂Z = U`` with ``V_e = ½ δᵀKδ`` (eqs 8–9),
``D = ½ δ̇ᵀ D_e δ̇`` (eqs 10–11) plus viscous joint damping, and ``U`` = the applied generalised
forces ``tau``. ``S`` is quadratic in ``Z̈``, so ``I(Z) = ∂²S/∂Z̈²`` and
``R(Z, Ż) = U − ∂D/∂Ż − ∂V_e/∂Z − ∂S/∂Z̈|_{Z̈=0}``; both derivatives of the explicitly written
``S`` are taken by JAX autodiff (the accelerations themselves come from the recursion above).

Scope (checked by :func:`check_planar_chain`, which raises :class:`GibbsAppellError` naming the
body): a chain (``parent[i] = i − 1``); body 0 PLANAR or REVOLUTE, the others REVOLUTE; revolute
axes ``±z``; tree placements in the xy-plane (rotation about z, zero z offset); flexible links
with in-plane modes only (transverse ``y`` bending with rotation about ``z``; axial modes are
in-plane and accepted) — no ``z`` bending, no torsion. Geometric stiffening (``stiffening=True``,
the foreshortening ``−½ δᵀGδ`` of the axial position) is included. Out-of-plane data that cannot
affect the planar motion (the z component of gravity, COM z offsets, inertia products) are
ignored, exactly as the constrained 3-D model ignores them. Value checks need concrete arrays:
under ``jit`` with the model traced only the structural checks run — call
:func:`check_planar_chain` once outside ``jit``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from ..dynamics.dispatch import AbstractDynamics, no_body_wrenches, with_coupling
from ..model.joints import JointType
from ..model.model import Model, joint_passive_forces

__all__ = [
    "GibbsAppell",
    "GibbsAppellError",
    "check_planar_chain",
    "paper_permutation",
    "to_paper_order",
    "from_paper_order",
    "planar_kinematics",
    "gibbs_function",
    "gibbs_appell_equations",
    "mass_matrix_gibbs_appell",
    "forward_dynamics_gibbs_appell",
]


class GibbsAppellError(ValueError):
    """The model is outside the planar-chain scope of seed 001's formulation."""


# ----------------------------------------------------------------------------------------
# Scope checks
# ----------------------------------------------------------------------------------------


def _concrete(x):
    """``x`` as a NumPy array, or ``None`` when it is traced (value checks impossible)."""
    return np.asarray(x) if is_concrete(x) else None


def _zero(x, tol=1e-12):
    a = _concrete(x)
    return True if a is None else bool(np.all(np.abs(a) <= tol))


def check_planar_chain(model: Model) -> None:
    """Raise :class:`GibbsAppellError` (naming the body) unless ``model`` is a planar chain of
    rigid / in-plane-flexible links (module docstring)."""
    t = model.topology
    if t.nb == 0:
        raise GibbsAppellError("the model has no bodies")
    flex = model.flex if model.flex else (None,) * t.nb
    for i in range(t.nb):
        name = f"body {i} ({t.body_names[i]!r})"
        if t.parent[i] != i - 1:
            raise GibbsAppellError(
                f"{name}: parent is {t.parent[i]}, but the Gibbs–Appell formulation of seed 001 needs a "
                f"serial chain (parent[i] = i - 1)"
            )
        jtype = t.joint_types[i]
        allowed = (JointType.PLANAR, JointType.REVOLUTE) if i == 0 else (JointType.REVOLUTE,)
        if jtype not in allowed:
            raise GibbsAppellError(
                f"{name}: joint type {jtype.value!r} is not supported (body 0: planar or revolute about z; "
                f"other bodies: revolute about z)"
            )
        if jtype is JointType.REVOLUTE:
            ax = _concrete(model.axis[i])
            if ax is not None and not (abs(ax[0]) <= 1e-12 and abs(ax[1]) <= 1e-12 and abs(abs(ax[2]) - 1.0) <= 1e-12):
                raise GibbsAppellError(f"{name}: revolute axis {ax.tolist()} is not ±z (the chain must stay planar)")
        R = _concrete(model.tree_rot[i])
        if R is not None and not (
            np.allclose(R[2], [0.0, 0.0, 1.0], atol=1e-12) and np.allclose(R[:, 2], [0.0, 0.0, 1.0], atol=1e-12)
        ):
            raise GibbsAppellError(f"{name}: the tree placement rotation is not a rotation about z")
        if not _zero(model.tree_pos[i][2]):
            raise GibbsAppellError(
                f"{name}: nonzero out-of-plane (z) offset {float(_concrete(model.tree_pos[i][2]))} of the joint"
            )
        fb = flex[i]
        if fb is None:
            if t.modes[i]:
                raise GibbsAppellError(f"{name}: has modal coordinates but no FlexBody")
            continue
        if not (_zero(fb.phi_d[:, 2, :]) and _zero(fb.end_phi_d[2])):
            raise GibbsAppellError(f"{name}: flexible link has out-of-plane (z) displacement modes")
        if not (_zero(fb.phi_r[:, 0, :]) and _zero(fb.end_phi_r[0])):
            raise GibbsAppellError(f"{name}: flexible link has torsion modes (rotation about the link axis)")
        if not (_zero(fb.phi_r[:, 1, :]) and _zero(fb.end_phi_r[1])):
            raise GibbsAppellError(f"{name}: flexible link has out-of-plane bending rotations (about y)")


# ----------------------------------------------------------------------------------------
# Coordinate orders
# ----------------------------------------------------------------------------------------


def paper_permutation(model: Model) -> np.ndarray:
    """Indices ``perm`` with ``Z = q[perm]`` (and ``Ż = v[perm]``): seed 001's eq 13 order
    ``[q1, δ1.., q2, δ2.., …, X1, X2]`` (``X1, X2`` only for a PLANAR body 0)."""
    t = model.topology
    perm = []
    for i in range(t.nb):
        s = t.q_slice(i)
        perm.append(s.stop - 1)  # the angle (θ of a planar joint, the revolute angle)
        e = t.e_q_slice(i)
        perm.extend(range(e.start, e.stop))
    if t.joint_types[0] is JointType.PLANAR:
        perm.extend([t.q_slice(0).start, t.q_slice(0).start + 1])
    return np.asarray(perm, dtype=int)


def to_paper_order(model: Model, x):
    """A vector in diffsim's coordinate order -> the paper's ``Z`` order."""
    return jnp.asarray(x)[paper_permutation(model)]


def from_paper_order(model: Model, z):
    """A vector in the paper's ``Z`` order -> diffsim's coordinate order."""
    perm = paper_permutation(model)
    z = jnp.asarray(z)
    return jnp.zeros_like(z).at[perm].set(z)


# ----------------------------------------------------------------------------------------
# Recursive planar kinematics
# ----------------------------------------------------------------------------------------


def _rot2(psi):
    c, s = jnp.cos(psi), jnp.sin(psi)
    return jnp.stack([jnp.stack([c, -s]), jnp.stack([s, c])])


def _perp(r):
    """``e_3 × r`` for in-plane vectors ``r`` [..., 2]."""
    return jnp.stack([-r[..., 1], r[..., 0]], -1)


def _local_points(x, phi_ax, phi_tr, fore, d, dd, ddd, stiffening):
    """Eqs 1–2 and their first two time derivatives, in the link frame: ``r, ṙ, r̈`` [..., 2]."""
    ax = x + phi_ax @ d
    ax_d = phi_ax @ dd
    ax_dd = phi_ax @ ddd
    if stiffening:
        Gd = jnp.einsum("...ij,j->...i", fore, d)
        Gdd = jnp.einsum("...ij,j->...i", fore, dd)
        ax = ax - 0.5 * (Gd @ d)
        ax_d = ax_d - 0.5 * (Gd @ dd + Gdd @ d)
        ax_dd = ax_dd - 0.5 * (Gd @ ddd + jnp.einsum("...ij,j->...i", fore, ddd) @ d) - Gdd @ dd
    tr, tr_d, tr_dd = phi_tr @ d, phi_tr @ dd, phi_tr @ ddd
    return jnp.stack([ax, tr], -1), jnp.stack([ax_d, tr_d], -1), jnp.stack([ax_dd, tr_dd], -1)


def _point_acceleration(A_O, R, w, wd, r, rd, rdd):
    """Eq 6 in the plane: ``a_Q = a_O + R (r̈ + 2 ω × ṙ + ω̇ × r + ω × (ω × r))``."""
    rel = rdd + 2.0 * w * _perp(rd) + wd * _perp(r) - (w * w) * r
    return A_O + jnp.einsum("ij,...j->...i", R, rel)


def _point_velocity(V_O, R, w, r, rd):
    return V_O + jnp.einsum("ij,...j->...i", R, rd + w * _perp(r))


def planar_kinematics(model: Model, q, v, a):
    """Seed 001's recursive kinematics of every link (positions, velocities, accelerations in
    terms of ``Z, Ż, Z̈``; diffsim's coordinate order in, world xy-plane out).

    Returns a list with one dict per link: ``psi, w, wd`` (frame angle, rate, acceleration),
    ``O, V, A`` (link start ``O_i``), ``com_a`` (rigid COM acceleration), and for flexible links
    ``sec_a`` [ng, 2], ``sec_w``, ``sec_wd`` [ng] (sections), plus ``end`` (end frame). The
    accelerations include ``−g`` (the accelerated inertial origin of the paper)."""
    t = model.topology
    dt = model.dtype
    flex = model.flex if model.flex else (None,) * t.nb
    g = jnp.asarray(model.gravity, dt)[:2]
    # state of the predecessor's end frame (the world for body 0)
    psi_e = jnp.zeros((), dt)
    w_e = jnp.zeros((), dt)
    wd_e = jnp.zeros((), dt)
    O_e = jnp.zeros(2, dt)
    V_e = jnp.zeros(2, dt)
    A_e = -g
    out = []
    for i in range(t.nb):
        # joint predecessor frame: a rigid in-plane offset on the predecessor's end frame
        Re = _rot2(psi_e)
        tpos = Re @ model.tree_pos[i][:2]
        alpha = jnp.arctan2(model.tree_rot[i][1, 0], model.tree_rot[i][0, 0])
        P = O_e + tpos
        V_P = V_e + w_e * _perp(tpos)
        A_P = A_e + wd_e * _perp(tpos) - w_e * w_e * tpos
        psi_p = psi_e + alpha
        sq, sv, sa = q[t.q_slice(i)], v[t.v_slice(i)], a[t.v_slice(i)]
        if t.joint_types[i] is JointType.PLANAR:
            Rp = _rot2(psi_p)
            r, rd, rdd = Rp @ sq[:2], Rp @ sv[:2], Rp @ sa[:2]
            O = P + r
            V = V_P + w_e * _perp(r) + rd
            A = A_P + wd_e * _perp(r) - w_e * w_e * r + 2.0 * w_e * _perp(rd) + rdd
            psi, w, wd = psi_p + sq[2], w_e + sv[2], wd_e + sa[2]
        else:  # revolute about ±z
            s = model.axis[i][2]
            O, V, A = P, V_P, A_P
            psi, w, wd = psi_p + s * sq[0], w_e + s * sv[0], wd_e + s * sa[0]
        R = _rot2(psi)
        c = model.com[i][:2]
        z2 = jnp.zeros(2, dt)
        link = dict(psi=psi, w=w, wd=wd, O=O, V=V, A=A, com_a=_point_acceleration(A, R, w, wd, c, z2, z2))
        fb = flex[i]
        if fb is None:
            psi_e, w_e, wd_e, O_e, V_e, A_e = psi, w, wd, O, V, A
        else:
            e = t.e_q_slice(i)
            d, dd, ddd = q[e], v[t.e_v_slice(i)], a[t.e_v_slice(i)]
            # sections (eqs 1, 2, 4 and 6)
            r, rd, rdd = _local_points(fb.x, fb.phi_d[:, 0, :], fb.phi_d[:, 1, :], fb.fore, d, dd, ddd, fb.stiffening)
            link["sec_a"] = _point_acceleration(A, R, w, wd, r, rd, rdd)
            link["sec_w"] = w + fb.phi_r[:, 2, :] @ dd
            link["sec_wd"] = wd + fb.phi_r[:, 2, :] @ ddd
            # the deformed end: the next link's start
            r, rd, rdd = _local_points(
                fb.end_x, fb.end_phi_d[0], fb.end_phi_d[1], fb.end_fore, d, dd, ddd, fb.stiffening
            )
            th, th_d, th_dd = fb.end_phi_r[2] @ d, fb.end_phi_r[2] @ dd, fb.end_phi_r[2] @ ddd
            O_e = O + R @ r
            V_e = _point_velocity(V, R, w, r, rd)
            A_e = _point_acceleration(A, R, w, wd, r, rd, rdd)
            psi_e, w_e, wd_e = psi + th, w + th_d, wd + th_dd
            link["end"] = dict(psi=psi_e, w=w_e, wd=wd_e, O=O_e, V=V_e, A=A_e)
        out.append(link)
    return out


# ----------------------------------------------------------------------------------------
# Gibbs function and the equations of motion
# ----------------------------------------------------------------------------------------


def _rot_terms(wd, w, J):
    """``½ ω̇ᵀ J ω̇ + ω̇ᵀ ω̃ J ω`` for planar ``ω = w e_3`` (batched over leading axes)."""
    z = jnp.zeros_like(w)
    W = jnp.stack([z, z, w], -1)
    Wd = jnp.stack([z, z, wd], -1)
    Jw = jnp.einsum("...ij,...j->...i", J, W)
    return 0.5 * jnp.einsum("...i,...ij,...j->...", Wd, J, Wd) + jnp.einsum("...i,...i->...", Wd, jnp.cross(W, Jw))


def gibbs_function(model: Model, q, v, a):
    """Seed 001's eq 7 summed over the links (sections as the quadrature) plus the rigid part
    of every link and the joint armature; ``a`` in diffsim's coordinate order."""
    t = model.topology
    flex = model.flex if model.flex else (None,) * t.nb
    kin = planar_kinematics(model, q, v, a)
    S = 0.5 * jnp.sum(model.armature * a[: t.nv_rigid] ** 2)
    for i, link in enumerate(kin):
        S = S + 0.5 * model.mass[i] * (link["com_a"] @ link["com_a"]) + _rot_terms(link["wd"], link["w"], model.inertia[i])
        fb = flex[i]
        if fb is not None:
            sa = link["sec_a"]
            S = S + 0.5 * jnp.sum(fb.m * jnp.sum(sa * sa, -1)) + jnp.sum(_rot_terms(link["sec_wd"], link["sec_w"], fb.J))
    return S


def _dissipation_and_strain(model: Model, q, v):
    """``∂D/∂ż + ∂V_e/∂z`` (eqs 8–11 plus viscous joint damping), diffsim order."""
    t = model.topology
    flex = model.flex if model.flex else (None,) * t.nb
    f = [joint_passive_forces(model, v[: t.nv_rigid], q)]
    for i in range(t.nb):
        fb = flex[i]
        if fb is not None:
            f.append(fb.K @ q[t.e_q_slice(i)] + fb.D @ v[t.e_v_slice(i)])
    return jnp.concatenate(f)


def gibbs_appell_equations(model: Model, q, v, tau=None, *, order: str = "paper"):
    """``(I(Z), R(Z, Ż))`` of eq 15, ``I Z̈ = R``: ``I = ∂²S/∂Z̈²`` and
    ``R = U − ∂D/∂Ż − ∂V_e/∂Z − ∂S/∂Z̈|_{Z̈=0}`` (eq 14 with ``U = tau``).

    ``order="paper"`` (eq 13's ``Z``) or ``"diffsim"``; ``q, v, tau`` in diffsim's order."""
    check_planar_chain(model)
    if order not in ("paper", "diffsim"):
        raise ValueError(f"order must be 'paper' or 'diffsim', got {order!r}")
    dt = model.dtype
    nv = model.nv
    tau = jnp.zeros(nv, dt) if tau is None else jnp.asarray(tau, dt)
    perm = paper_permutation(model) if order == "paper" else np.arange(nv)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(nv)

    def S(zdd):  # the Gibbs function of the accelerations, in the chosen order
        return gibbs_function(model, q, v, zdd[inv])

    zero = jnp.zeros(nv, dt)
    dS = jax.grad(S)
    I = jax.jacfwd(dS)(zero)
    R = (tau - _dissipation_and_strain(model, q, v))[perm] - dS(zero)
    return I, R


def mass_matrix_gibbs_appell(model: Model, q, *, order: str = "diffsim"):
    """``I(Z) = ∂²S/∂Z̈²`` (diffsim's coordinate order unless ``order="paper"``)."""
    return gibbs_appell_equations(model, q, jnp.zeros(model.nv, model.dtype), order=order)[0]


def forward_dynamics_gibbs_appell(model: Model, q, v, tau=None):
    """``v̇`` (diffsim's coordinate order) from seed 001's Gibbs–Appell equations
    ``I(Z) Z̈ = R(Z, Ż)``, solved in the paper's order and mapped back."""
    I, R = gibbs_appell_equations(model, q, v, tau, order="paper")
    return from_paper_order(model, jnp.linalg.solve(I, R))


class GibbsAppell(AbstractDynamics):
    """Seed 001's recursive Gibbs–Appell equations for planar chains of flexible links as a
    dynamics strategy (joint and modal forces ``tau`` only; no body wrenches)."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        no_body_wrenches("the Gibbs–Appell formulation", f_ext)
        return with_coupling(lambda m, q, v, t, _: forward_dynamics_gibbs_appell(m, q, v, t), model, q, v, tau, None)

    def check(self, model):
        check_planar_chain(model)
