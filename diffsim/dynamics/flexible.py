"""Dynamics of trees of rigid and flexible links.

Every link ``i`` has coordinates ``ξ_i = [V_i; δ̇_i]`` (body twist, then its ``ne_i`` modal rates;
``ne_i = 0`` for a rigid link) and equations ``M_i ξ̇_i + b_i`` (:func:`~.sections.body_kinetics`).
A child ``c`` is attached to its parent's end frame: ``V_c = X_c P_end,p ξ_p + S_c q̇_c`` with
``X_c = c_X_end`` (tree placement and joint).

* :func:`articulated_flexible` — the **O(n) sweep** (seed 003's generalised Newton–Euler, in
  Featherstone's articulated-body form): articulated inertias of size ``6 + ne_i`` are built
  leaves to root; the elastic coordinates are condensed out of each link
  (``δ̈_i = −A_ee⁻¹ (A_er A_i + p_e)``) before its joint is, so no system mass matrix is ever formed
  or inverted. Mixed problem: joints listed in ``prescribed`` follow given accelerations and
  return the driving torque (seed 003 §3, the χ_j switch).
* :func:`inverse_dynamics_flexible` — recursive Newton–Euler for the same equations: the
  generalised forces of every coordinate (joints and modes) for given accelerations.
* :func:`mass_matrix_flexible` / :func:`forward_dynamics_mm` — the mass-matrix form
  ``M(z) z̈ = τ − h(z, ż)`` of seeds 001/004, from the inverse dynamics.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp

from .. import spatial as sp
from ..model.model import Model, joint_passive_forces
from .fluid import fluid_power
from .kinematics import frames
from .sections import body_kinetics, section_pose, strain_energy
from .traversal import (
    JointData,
    backward_pass,
    base_acceleration,
    body_spatial_inertias,
    forward_pass,
    implicit_forward_dynamics,
)


def outward_kinematics(model: Model, q, v):
    """Sweep 1 (outward): joint data ``jd`` (``jd.Xm[i]`` = ``i_X_end-of-parent``), body
    inertias, per link twist ``V``, joint velocity-product ``c`` and the link's
    :class:`~.sections.BodyKinetics` (``None`` if rigid)."""
    t = model.topology
    jd = JointData(model, q[: t.nq_rigid], v[: t.nv_rigid])
    Ib = body_spatial_inertias(model)

    def kernel(i, parent):
        if parent is None:
            Vi = jd.vJ[i]
        else:
            V_p, kin_p = parent
            Vi = jd.Xm[i] @ (V_p if kin_p is None else kin_p.V_end) + jd.vJ[i]
        fb = model.flex[i] if model.flex else None
        kin = None if fb is None else body_kinetics(fb, q[t.e_q_slice(i)], v[t.e_v_slice(i)], Vi, Ib[i])
        return Vi, kin

    out = forward_pass(t, kernel)
    V = [o[0] for o in out]
    kin = [o[1] for o in out]
    c = [jd.cJ[i] + sp.cross_motion(V[i], jd.vJ[i]) for i in range(t.nb)]
    return jd, Ib, V, c, kin


def _own_equations(model, i, Ib, V, kin, f_ext, q, v, tau):
    """``(M_i, b_i)`` of link ``i`` with elastic and external forces moved into ``b``."""
    t = model.topology
    if kin[i] is None:
        return Ib[i], sp.cross_force(V[i], Ib[i] @ V[i]) - f_ext[i]
    fb = model.flex[i]
    qe, ve = q[t.e_q_slice(i)], v[t.e_v_slice(i)]
    Qe = tau[t.e_v_slice(i)] - fb.K @ qe - fb.D @ ve
    b = kin[i].b.at[:6].add(-f_ext[i]).at[6:].add(-Qe)
    return kin[i].M, b


def _to_parent(jd, kin, i, p):
    """``P`` [6, 6 + ne_p]: link ``p``'s coordinates → child ``i``'s body twist (``i_X_end`` and,
    for a flexible parent, its end-frame map ``P_end``)."""
    return jd.Xm[i] if kin[p] is None else jd.Xm[i] @ kin[p].P_end


def articulated_flexible(
    model: Model, q, v, tau=None, f_ext=None, prescribed: Sequence[int] = (), qdd_prescribed=None
):
    """O(n) forward dynamics of a rigid/flexible tree (module docstring).

    ``tau`` [nv]: joint forces and modal generalised forces; ``prescribed``: bodies whose joint
    motion is imposed, with accelerations taken from ``qdd_prescribed`` [nv_rigid] (other
    entries ignored). Returns ``(v̇ [nv], τ_joint [nv_rigid])`` where ``τ_joint`` equals ``tau``
    on free joints and, on prescribed ones, is the driving torque the actuator must add to the
    applied joint loads ``tau`` (joint friction, say) to impose the motion (the joints' passive
    forces and armature included).
    """
    t = model.topology
    dt = model.dtype
    nvr = t.nv_rigid
    tau = jnp.zeros(model.nv, dt) if tau is None else tau
    f_ext = jnp.zeros((model.nb, 6), dt) if f_ext is None else f_ext
    pres = set(int(i) for i in prescribed)
    jd, Ib, V, c, kin = outward_kinematics(model, q, v)
    passive = joint_passive_forces(model, v[:nvr], q)
    tau_j = tau[:nvr] - passive

    # sweep 2: leaves to root; link i's own equations, then its children's articulated inertias
    def inward(i, acc):
        A, pa_full = acc  # complete: every child has been added
        L = l = None
        if kin[i] is not None:  # condense the elastic coordinates of link i
            Aee, Aer = A[6:, 6:], A[6:, :6]
            L = jnp.linalg.solve(Aee, Aer)
            l = jnp.linalg.solve(Aee, pa_full[6:])
            Ia6 = A[:6, :6] - A[:6, 6:] @ L
            pa6 = pa_full[:6] - A[:6, 6:] @ l
        else:
            Ia6, pa6 = A, pa_full
        S, sl = jd.S[i], t.v_slice(i)
        U = Dinv = u = None
        if t.nv_joint[i] and i not in pres:
            U = Ia6 @ S
            Dinv = sp.small_inv(S.T @ U + jnp.diag(model.armature[sl]))
            u = tau_j[sl] - S.T @ pa6
            Ia = Ia6 - U @ Dinv @ U.T
            pa = pa6 + Ia @ c[i] + U @ (Dinv @ u)
        elif t.nv_joint[i]:
            Ia = Ia6
            pa = pa6 + Ia6 @ (c[i] + S @ qdd_prescribed[sl])
        else:
            Ia = Ia6
            pa = pa6 + Ia6 @ c[i]
        msg = None
        p = t.parent[i]
        if p >= 0:
            P = _to_parent(jd, kin, i, p)
            pe = pa if kin[p] is None else Ia @ (jd.Xm[i] @ kin[p].c_end) + pa
            msg = (P.T @ Ia @ P, P.T @ pe)
        return msg, (L, l, Ia6, pa6, U, Dinv, u)

    own = [_own_equations(model, i, Ib, V, kin, f_ext, q, v, tau) for i in range(t.nb)]
    _, art = backward_pass(t, inward, own)

    # sweep 3: root to leaves
    def outward(i, A_end_p):
        L, l, Ia6, pa6, U, Dinv, u = art[i]
        Ai = jd.Xm[i] @ A_end_p + c[i]
        sl = t.v_slice(i)
        S = jd.S[i]
        if t.nv_joint[i] and i not in pres:
            qdd = Dinv @ (u - U.T @ Ai)
            Ai = Ai + S @ qdd
            tau_i = tau[sl]
        elif t.nv_joint[i]:
            qdd = qdd_prescribed[sl]
            Ai = Ai + S @ qdd
            # the driving torque on top of the applied joint loads (e.g. friction in ``tau``)
            tau_i = S.T @ (Ia6 @ Ai + pa6) + model.armature[sl] * qdd + passive[sl] - tau[sl]
        else:
            qdd, tau_i = jnp.zeros(0, dt), jnp.zeros(0, dt)
        if kin[i] is None:
            return Ai, (qdd, None, tau_i)
        qdde = -(L @ Ai + l)
        return kin[i].P_end @ jnp.concatenate([Ai, qdde]) + kin[i].c_end, (qdd, qdde, tau_i)

    a0 = base_acceleration(model)
    res = [o[1] for o in forward_pass(t, lambda i, parent: outward(i, a0 if parent is None else parent[0]))]
    vdot = jnp.concatenate([r[0] for r in res] + [r[1] for r in res if r[1] is not None])
    return vdot, jnp.concatenate([r[2] for r in res]) if res else jnp.zeros(0, dt)


def inverse_dynamics_flexible(model: Model, q, v, a, f_ext=None):
    """Generalised forces ``[τ_joints; τ_modes]`` (recursive Newton–Euler) that produce the
    accelerations ``a`` [nv]; ``τ_modes`` is zero for the free motion of the modes."""
    t = model.topology
    f_ext = jnp.zeros((model.nb, 6), model.dtype) if f_ext is None else f_ext
    jd, Ib, V, c, kin = outward_kinematics(model, q, v)
    zero_tau = jnp.zeros(model.nv, model.dtype)

    a0 = base_acceleration(model)

    def outward(i, A_end_p):
        Ai = jd.Xm[i] @ (a0 if A_end_p is None else A_end_p) + c[i] + jd.S[i] @ a[t.v_slice(i)]
        M, b = _own_equations(model, i, Ib, V, kin, f_ext, q, v, zero_tau)
        if kin[i] is None:
            return Ai, M @ Ai + b
        xi_d = jnp.concatenate([Ai, a[t.e_v_slice(i)]])
        return kin[i].P_end @ xi_d + kin[i].c_end, M @ xi_d + b

    F0 = [o[1] for o in forward_pass(t, lambda i, parent: outward(i, None if parent is None else parent[0]))]
    # leaves to root: a child's wrench enters its parent's rows (6 + ne_p of them)
    F, _ = backward_pass(
        t, lambda i, Fi: (None if t.parent[i] < 0 else _to_parent(jd, kin, i, t.parent[i]).T @ Fi[:6], None), F0
    )
    nvr = t.nv_rigid
    tau = [jd.S[i].T @ F[i][:6] for i in range(t.nb)]
    tau_e = [F[i][6:] for i in range(t.nb) if kin[i] is not None]
    out = jnp.concatenate(tau + tau_e)
    arm = jnp.concatenate([model.armature, jnp.zeros(t.ne, model.dtype)])
    passive = jnp.concatenate([joint_passive_forces(model, v[:nvr], q), jnp.zeros(t.ne, model.dtype)])
    return out + arm * a + passive


def mass_matrix_flexible(model: Model, q):
    """``M(z)`` [nv, nv] (symmetric positive definite), columns of the inverse dynamics."""
    z = jnp.zeros(model.nv, model.dtype)
    still = model.without_gravity()
    return jax.jacfwd(lambda a: inverse_dynamics_flexible(still, q, z, a))(z)


def forward_dynamics_mm(model: Model, q, v, tau=None, f_ext=None):
    """Mass-matrix form ``J(z) z̈ = R(z, ż)`` (seeds 001/004): ``z̈ = M⁻¹ (τ − h)``."""
    tau = jnp.zeros(model.nv, model.dtype) if tau is None else tau
    h = inverse_dynamics_flexible(model, q, v, jnp.zeros(model.nv, model.dtype), f_ext)
    return jnp.linalg.solve(mass_matrix_flexible(model, q), tau - h)


def elastic_forces(model: Model, q):
    """``[0; K δ]`` [nv]: the modal stiffness forces (part of the bias at rest)."""
    t = model.topology
    parts = [jnp.zeros(t.nv_rigid, model.dtype)]
    for i in range(t.nb):
        fb = model.flex[i] if model.flex else None
        if fb is not None:
            parts.append(fb.K @ q[t.e_q_slice(i)])
    return jnp.concatenate(parts)


def _sweep_solve(model, q, v, tau, f_ext):
    return articulated_flexible(model, q, v, tau, f_ext)[0]


def _minv_flexible(model: Model, q, x):
    """``M⁻¹ x`` by the sweep at rest (zero velocity, no gravity or joint springs,
    :meth:`Model.at_rest_unloaded`): its bias there is only the elastic force ``K δ``, added back."""
    zero = jnp.zeros(model.nv, model.dtype)
    return articulated_flexible(model.at_rest_unloaded(), q, zero, x + elastic_forces(model, q), None)[0]


#: the sweep with derivatives from the implicit function ``ID(θ, z, ż, z̈) = τ``
#: (:func:`~.traversal.implicit_forward_dynamics`): one JVP of the inverse dynamics and one more sweep
forward_dynamics_sweep = implicit_forward_dynamics(_sweep_solve, inverse_dynamics_flexible, _minv_flexible)


def forward_dynamics_flexible(model: Model, q, v, tau=None, f_ext=None):
    """Accelerations ``[q̈_joints; δ̈]`` of a rigid/flexible tree by the O(n) sweep (derivatives
    from the implicit function, as for rigid trees)."""
    tau = jnp.zeros(model.nv, model.dtype) if tau is None else tau
    f_ext = jnp.zeros((model.nb, 6), model.dtype) if f_ext is None else f_ext
    return forward_dynamics_sweep(model, q, v, tau, f_ext)


def kinetic_energy_flexible(model: Model, q, v):
    """``T = Σ ½ ξᵢᵀ Mᵢ ξᵢ`` (+ armature) — equal to ``½ vᵀ M(z) v``."""
    t = model.topology
    _, Ib, V, _, kin = outward_kinematics(model, q, v)
    T = 0.5 * jnp.sum(model.armature * v[: t.nv_rigid] ** 2)
    for i in range(t.nb):
        if kin[i] is None:
            T = T + 0.5 * V[i] @ Ib[i] @ V[i]
        else:
            xi = jnp.concatenate([V[i], v[t.e_v_slice(i)]])
            T = T + 0.5 * xi @ kin[i].M @ xi
    return T


def potential_energy_flexible(model: Model, q):
    """Gravity potential of rigid parts and sections plus strain energy ``½ δᵀ K δ``."""
    t = model.topology
    Hb, _ = frames(model, q)
    com = Hb[:, :3, 3] + jnp.einsum("bij,bj->bi", Hb[:, :3, :3], model.com)
    V = -jnp.sum(model.mass * (com @ model.gravity))
    for i in range(t.nb):
        fb = model.flex[i] if model.flex else None
        if fb is None:
            continue
        d = q[t.e_q_slice(i)]
        _, p = section_pose(fb.x, fb.phi_d, fb.phi_r, fb.fore, d, fb.stiffening)
        pw = p @ Hb[i, :3, :3].T + Hb[i, :3, 3]
        V = V - jnp.sum(fb.m * (pw @ model.gravity)) + strain_energy(fb, d)
    return V


def dissipated_power(model: Model, q, v):
    """Power dissipated by the joints' passive forces (damping, Coulomb friction), the modal
    (air + Kelvin–Voigt) damping and a fluid (``model.fluid``), ≥ 0 — rigid and flexible trees."""
    t = model.topology
    vr = v[: t.nv_rigid]
    P = jnp.sum(joint_passive_forces(model, vr) * vr)
    if model.fluid is not None:
        P = P - fluid_power(model, q, v)
    for i in range(t.nb):
        fb = model.flex[i] if model.flex else None
        if fb is not None:
            ve = v[t.e_v_slice(i)]
            P = P + ve @ fb.D @ ve
    return P


def reduced_newmark_jacobian(model: Model, prescribed=None):
    """A reduced Jacobian for the Newmark family's Newton iterations, after seed 003 eq 19
    (``J ≈ Diag_j(M_j + γh C_j + βh² K_j)``, one block per link).

    diffsim's solvers iterate on ``r(a) = a − f(q(a), v(a))`` rather than on
    ``M a + h − τ``, so the exact Jacobian is ``1 + M⁻¹(γh C_T + βh² K_T)`` (plus the
    derivatives of ``M`` and of the velocity terms). Here the tangent stiffness and damping are
    kept link-diagonal (``K_j``, ``D_j`` of each flexible link, the joints' viscous damping) and
    ``M⁻¹`` is applied exactly by the O(n) sweep, once per modal column:
    ``J ≈ 1 + M⁻¹ Diag_j(γh D_j + βh² K_j)``. (The literal block-diagonal ``M_j`` drops the
    rigid–flexible coupling that ``M⁻¹`` spreads into the joint rows in this residual form;
    measured on a two-link flexible arm, Newton with it diverges at h = 0.01 s.) No derivatives
    of the sweep are taken, so each Newton step is cheap and converges linearly. With
    ``prescribed`` (a :class:`diffsim.Prescribed`), ``M⁻¹`` is that of the mixed problem (the
    prescribed joints held), as the residual's is."""
    t = model.topology
    bodies = () if prescribed is None else prescribed.bodies
    qdd0 = jnp.zeros(t.nv_rigid, model.dtype)
    still = model.without_gravity()

    def jac(time, q, v, h, beta, gamma):
        B = jnp.zeros((model.nv, model.nv), model.dtype)
        B = B.at[: t.nv_rigid, : t.nv_rigid].set(jnp.diag(gamma * h * model.damping))
        for i in range(t.nb):
            fb = model.flex[i] if model.flex else None
            if fb is not None:
                sl = t.e_v_slice(i)
                B = B.at[sl, sl].set(gamma * h * fb.D + beta * h**2 * fb.K)
        bias = elastic_forces(model, q)
        zero = jnp.zeros_like(v)
        MinvB = jax.vmap(
            lambda col: articulated_flexible(still, q, zero, col + bias, None, bodies, qdd0)[0], in_axes=1, out_axes=1
        )(B)
        return jnp.eye(model.nv, dtype=model.dtype) + MinvB

    return jac
