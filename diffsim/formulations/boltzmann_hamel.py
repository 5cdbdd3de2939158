"""Recursive Boltzmann–Hamel forward dynamics (seed 000: Lagrange's equations in
quasi-coordinates for a multiple-arm space manipulator, eqs 18–53).

An independent derivation of the equations of motion that :func:`diffsim.forward_dynamics`
(ABA) solves: nothing here calls diffsim.dynamics; only :mod:`diffsim.spatial`'s 3×3 helpers,
the Model's parameter arrays and the Topology tables are shared.

Symbols (seed 000, §3; every column matrix in the frame of the body named by its index):

* quasi-velocities ``ν`` = diffsim's ``v``: free base ``[V0; ω0]`` (velocity of the base-frame
  *origin* and angular velocity, base frame — eqs 19–20 hold for any base-fixed reference point,
  so the origin need not be the centre of mass), then per joint ``u_α`` with relative angular
  velocity ``ω_α = S_α u_α`` in the child frame (``S = I₃`` spherical, the unit axis for
  revolute, nothing for fixed).  A 2-DOF joint is two revolutes with a massless body between.
* ``C_α``: rotation parent-body (world, for a root) coordinates → α coordinates, the paper's
  ``C^α_{α−1}``; ``r_λ`` = α's joint position in λ minus λ's centre of mass (the paper's ``r``,
  COM → distal joint); ``R_α`` = α's centre of mass in α (the paper's ``R``, joint → COM;
  diffsim's joints act at the body origin).
* ``Ω_α``, ``V_α``: absolute angular velocity and centre-of-mass velocity (eqs 24, 27).
* Partial velocities are kept in **column (Jacobian) layout**, one block per pair (body α,
  ancestor joint j): ``∂Ω_α/∂ν_j`` and ``∂V_α/∂ν_j`` [3, nv_j]; the blocks with j not on α's
  path to the root are zero and never formed (eqs 39–40).  The paper writes row layout,
  ``∂V/∂x = (Jacobian)ᵀ`` (eq 32: ``∂V_1/∂V0 = [C^1_0]ᵀ``), so its right factors ``[C]ᵀ`` and
  ``[[r]]`` become left factors ``C`` and ``−[r×]`` here.

``∂K/∂ϑ_i`` of eq 22 is taken with respect to a virtual relative rotation ``π_i`` of joint i in
its child frame, ``C_i → (I − [δπ_i×]) C_i`` at fixed ν; this is the choice ``D_i = I`` in
eq 22 (every attitude parametrisation ϑ gives the same ``E_i``).

``d/dt ∂K/∂ν`` in eqs 19–21 is ``M ν̇ + (∂p/∂q) q̇``.  The paper differentiates the momenta by
hand; here ``(∂p/∂q) q̇`` is a forward-mode ``jax.jvp`` of the momentum recursion along ``q̇``
at fixed ν.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve

from .. import spatial as sp
from ..model.builder import ModelError
from ..model.joints import JointType
from ..dynamics.dispatch import AbstractDynamics, with_coupling
from ..model.model import Model, joint_passive_forces
from ..model.topology import Topology

__all__ = [
    "BoltzmannHamel",
    "check_supported",
    "forward_dynamics_bh",
    "generalised_momentum_bh",
    "kinetic_energy_bh",
    "mass_matrix_bh",
]

_ROOT_JOINTS = (JointType.FREE, JointType.SPHERICAL, JointType.REVOLUTE, JointType.FIXED)
_CHILD_JOINTS = (JointType.SPHERICAL, JointType.REVOLUTE, JointType.FIXED)
_ROTATIONAL = (JointType.SPHERICAL, JointType.REVOLUTE)


def check_supported(topology: Topology) -> None:
    """Raise :class:`~diffsim.model.ModelError` (in Python, before tracing) for a joint this
    formulation does not model.  Roots: free (seed 000's floating base), or a fixed-base root
    (spherical, revolute, fixed); every other body: spherical, revolute or fixed."""
    for i, (name, jtype, p) in enumerate(zip(topology.body_names, topology.joint_types, topology.parent)):
        allowed = _ROOT_JOINTS if p < 0 else _CHILD_JOINTS
        if jtype not in allowed:
            where = "a root body" if p < 0 else f"a child of body {topology.body_names[p]!r}"
            raise ModelError(
                f"body {name!r}: joint {topology.joint_names[i]!r} of type {jtype.value!r} on {where} "
                f"is not supported by the Boltzmann–Hamel formulation "
                f"(supported there: {[j.value for j in allowed]})"
            )


def _dofs(t: Topology) -> list[int]:
    """Bodies whose joint has velocity coordinates, in the order of ``v``."""
    return [i for i in range(t.nb) if t.nv_joint[i]]


# --------------------------------------------------------------------------------------
# joints: C_α, and how u_α enters (Ω_α, V_α)
# --------------------------------------------------------------------------------------


def _rotations(model: Model, q):
    """``C_α`` [3, 3]: parent-body (world, for a root) coordinates → α coordinates."""
    t = model.topology
    C = []
    for i, jtype in enumerate(t.joint_types):
        qi = q[t.q_slice(i)]
        if jtype is JointType.FREE:
            Rj = sp.quat_to_rot(qi[3:7])
        elif jtype is JointType.SPHERICAL:
            Rj = sp.quat_to_rot(qi)
        elif jtype is JointType.REVOLUTE:
            Rj = sp.rot_axis_angle(model.axis[i], qi[0])
        else:
            Rj = jnp.eye(3, dtype=model.dtype)
        C.append((model.tree_rot[i] @ Rj).T)
    return C


def _joint_maps(model: Model, i: int):
    """``(S_Ω, S_V)`` [3, nv_i]: the joint's direct contribution to ``Ω_i`` and to the velocity
    of the body origin — ``(S, 0)`` for rotational joints, ``([0 I], [I 0])`` for the free base."""
    jtype, dt = model.topology.joint_types[i], model.dtype
    I3, Z3 = jnp.eye(3, dtype=dt), jnp.zeros((3, 3), dt)
    if jtype is JointType.FREE:
        return jnp.concatenate([Z3, I3], 1), jnp.concatenate([I3, Z3], 1)
    if jtype is JointType.SPHERICAL:
        return I3, Z3
    return model.axis[i][:, None], jnp.zeros((3, 1), dt)


def _configuration_rate(model: Model, q, v):
    """``q̇`` at quasi-velocities ``v`` (quaternions ``½ q ⊗ [0, ω]``; base position ``R V0``)."""
    t = model.topology
    parts = []
    for i, jtype in enumerate(t.joint_types):
        qi, vi = q[t.q_slice(i)], v[t.v_slice(i)]
        if jtype is JointType.FREE:
            parts += [sp.quat_to_rot(qi[3:7]) @ vi[:3], sp.quat_rate(qi[3:7], vi[3:6])]
        elif jtype is JointType.SPHERICAL:
            parts.append(sp.quat_rate(qi, vi))
        elif jtype is JointType.REVOLUTE:
            parts.append(vi)
    return jnp.concatenate(parts) if parts else jnp.zeros(0, q.dtype)


# --------------------------------------------------------------------------------------
# outward recursions (eqs 24, 27; 30–45; 48–53)
# --------------------------------------------------------------------------------------


def _lever(model: Model, a: int):
    """``r_λ``: α's joint relative to its parent's centre of mass (to the world origin for a
    root, whose parent does not move)."""
    lam = model.topology.parent[a]
    return model.tree_pos[a] if lam < 0 else model.tree_pos[a] - model.com[lam]


def _velocities(model: Model, C, v):
    """``Ω_α`` (eq 24) and centre-of-mass velocity ``V_α`` (eq 27) of every body."""
    t = model.topology
    zero = jnp.zeros(3, model.dtype)
    Om, V = [], []
    for a in range(t.nb):
        lam = t.parent[a]
        Om_l, V_l = (zero, zero) if lam < 0 else (Om[lam], V[lam])
        Om_a = C[a] @ Om_l
        V_a = C[a] @ (V_l - jnp.cross(_lever(model, a), Om_l))
        if t.nv_joint[a]:
            S_Om, S_V = _joint_maps(model, a)
            u = v[t.v_slice(a)]
            Om_a, V_a = Om_a + S_Om @ u, V_a + S_V @ u
        Om.append(Om_a)
        V.append(V_a - jnp.cross(model.com[a], Om_a))
    return Om, V


def _propagate(model: Model, C, seeds):
    """Partials of ``(Ω_α, V_α)`` with respect to per-joint variables x_j, one block per
    (α, ancestor j): ``out[α][j] = (∂Ω_α/∂x_j, ∂V_α/∂x_j)``, column layout.

    The variation of eqs 24 and 27: ``∂Ω_α = C_α ∂Ω_λ (+ seed)``,
    ``∂V_α = C_α(∂V_λ − [r_λ×] ∂Ω_λ) (+ seed) − [R_α×] ∂Ω_α``, where ``seeds[α]`` (or None)
    is the direct dependence of ``(C_α Ω_λ + S_Ω u_α, C_α(V_λ − [r×]Ω_λ) + S_V u_α)`` on x_α.
    """
    t = model.topology
    out = []
    for a in range(t.nb):
        lam = t.parent[a]
        r = sp.skew(_lever(model, a))
        blocks = {}
        if lam >= 0:
            blocks = {j: (C[a] @ dO, C[a] @ (dV - r @ dO)) for j, (dO, dV) in out[lam].items()}
        if seeds[a] is not None:
            blocks[a] = seeds[a]
        R = sp.skew(model.com[a])
        out.append({j: (dO, dV - R @ dO) for j, (dO, dV) in blocks.items()})
    return out


def _partial_velocities(model: Model, C):
    """``∂Ω_α/∂ν_j``, ``∂V_α/∂ν_j`` (seed 000, eqs 30–45).

    Seeds: eq 42 ``∂Ω_i/∂ω_i = I`` (``S_i`` here) and eq 44 ``∂V_i/∂ω_i = [[R_i]]``
    (``−[R_i×] S_i``); for the base, eqs 32/35/37 with ``∂V_0,com/∂[V0, ω0] = [I, −[c0×]]``.
    Descendants: eqs 30, 34, 43 (``C_α ∂Ω_λ``) and 36, 45 (the ``V`` recursion).
    """
    t = model.topology
    seeds = [_joint_maps(model, a) if t.nv_joint[a] else None for a in range(t.nb)]
    return _propagate(model, C, seeds)


def _rotation_partials(model: Model, C, Om, V):
    """``∂Ω_α/∂π_i``, ``∂V_α/∂π_i`` [3, 3] for every rotational joint i (seed 000, eqs 48–53).

    The paper's ``B(α, i) = −(D_iᵀ)⁻¹ ∂Ω_α/∂ϑ_i`` and ``A(α, i) = −(D_iᵀ)⁻¹ ∂V_α/∂ϑ_i`` are in
    row layout and carry a minus sign; with ``D_i = I`` they are ``B = −(∂Ω_α/∂π_i)ᵀ`` and
    ``A = −(∂V_α/∂π_i)ᵀ`` of the blocks returned here, so eq 47 reads
    ``E_i = −Σ_α (∂V_α/∂π_i)ᵀ m_α V_α + (∂Ω_α/∂π_i)ᵀ I_α Ω_α``.

    * eq 50: ``∂Ω_i/∂π_i = [(C_i Ω_λ)×]`` (``B(i,i) = [[C Ω_{i−1}]]``; ``[a×]ᵀ = −[a×]``);
    * eq 52: ``∂V_i/∂π_i = [(C_i(V_λ − [r_λ×]Ω_λ))×] − [R_i×] ∂Ω_i/∂π_i``.  The printed eq 52
      has ``V_{i−1} − [[r_{i−1}]]Ω_{i−1}`` without the ``C^i_{i−1}`` that varying eq 27
      requires (that vector is in frame i−1; the seed must be in frame i);
    * eqs 51, 53: descendants follow the recursion of :func:`_propagate` (the ``C^α_{i−1}``
      printed in eq 51 is ``C^α_{α−1}``).

    The free base has no π (K does not depend on the base pose), nor does a fixed-base root
    (its parent, the world, does not move, so its seeds vanish).
    """
    t = model.topology
    seeds = []
    for a, jtype in enumerate(t.joint_types):
        lam = t.parent[a]
        if jtype not in _ROTATIONAL or lam < 0:
            seeds.append(None)
            continue
        w = V[lam] - jnp.cross(_lever(model, a), Om[lam])
        seeds.append((sp.skew(C[a] @ Om[lam]), sp.skew(C[a] @ w)))
    return _propagate(model, C, seeds)


def _body_momenta(model: Model, Om, V):
    """``(I_α Ω_α, m_α V_α)``: ``∂K/∂Ω_α`` and ``∂K/∂V_α`` of eq 18."""
    return [(model.inertia[a] @ Om[a], model.mass[a] * V[a]) for a in range(model.nb)]


def _contract(P, h, keys, size, dtype):
    """``Σ_α (∂Ω_α/∂x_j)ᵀ h_Ω,α + (∂V_α/∂x_j)ᵀ h_V,α`` for each j in ``keys`` — the sums of
    eqs 29, 33, 41 and 46–47 — concatenated; ``size(j)`` is x_j's length."""
    acc = {}
    for a, blocks in enumerate(P):
        for j, (dO, dV) in blocks.items():
            term = dO.T @ h[a][0] + dV.T @ h[a][1]
            acc[j] = term if j not in acc else acc[j] + term
    parts = [acc.get(j, jnp.zeros(size(j), dtype)) for j in keys]
    return jnp.concatenate(parts) if parts else jnp.zeros(0, dtype)


def _momentum(model: Model, q, v):
    """``p = ∂K/∂ν`` without armature (seed 000, eqs 29, 33, 41), and the kinematics it used
    ``(C, Ω, V, ∂(Ω, V)/∂ν)``."""
    t = model.topology
    C = _rotations(model, q)
    Om, V = _velocities(model, C, v)
    P = _partial_velocities(model, C)
    p = _contract(P, _body_momenta(model, Om, V), _dofs(t), lambda j: t.nv_joint[j], model.dtype)
    return p, (C, Om, V, P)


def _mass_matrix(model: Model, P):
    """``M = Σ_α J_αᵀ diag(I_α, m_α) J_α + diag(armature)``, block (j, k) summed over the
    bodies that both joints move."""
    t = model.topology
    dofs, dt = _dofs(t), model.dtype
    blocks = {}
    for a, pa in enumerate(P):
        hO = {k: model.inertia[a] @ dO for k, (dO, _) in pa.items()}
        for j, (dOj, dVj) in pa.items():
            for k, (_, dVk) in pa.items():
                if k >= j:
                    term = dOj.T @ hO[k] + model.mass[a] * (dVj.T @ dVk)
                    blocks[j, k] = term if (j, k) not in blocks else blocks[j, k] + term

    def block(j, k):
        if (j, k) in blocks:
            return blocks[j, k]
        if (k, j) in blocks:
            return blocks[k, j].T
        return jnp.zeros((t.nv_joint[j], t.nv_joint[k]), dt)

    if not dofs:
        return jnp.zeros((0, 0), dt)
    M = jnp.concatenate([jnp.concatenate([block(j, k) for k in dofs], 1) for j in dofs], 0)
    return M + jnp.diag(model.armature)


def _applied_wrenches(model: Model, C, f_ext):
    """Applied (moment about the COM, force) on each body, body coordinates: gravity
    ``m_α g`` at the COM and ``f_ext = [n; f]`` given at the body origin."""
    t = model.topology
    g = []
    for a in range(t.nb):
        lam = t.parent[a]
        g.append(C[a] @ (model.gravity if lam < 0 else g[lam]))
    out = []
    for a in range(t.nb):
        n, f = jnp.zeros(3, model.dtype), model.mass[a] * g[a]
        if f_ext is not None:
            n = n + f_ext[a, :3] - jnp.cross(model.com[a], f_ext[a, 3:])
            f = f + f_ext[a, 3:]
        out.append((n, f))
    return out


def _quasi_coordinate_terms(model: Model, v, p):
    """The ``[ω×]`` terms of eqs 19–21: ``[ω0×] p_V`` and ``[ω0×] p_ω + [V0×] p_V`` for the
    base, ``[ω_i×] p_i`` for a spherical joint, zero for a revolute one (``sᵀ[(s u)×] = 0``)."""
    t = model.topology
    parts = []
    for i, jtype in enumerate(t.joint_types):
        sl = t.v_slice(i)
        vi, pi = v[sl], p[sl]
        if jtype is JointType.FREE:
            parts += [jnp.cross(vi[3:6], pi[:3]), jnp.cross(vi[3:6], pi[3:6]) + jnp.cross(vi[:3], pi[:3])]
        elif jtype is JointType.SPHERICAL:
            parts.append(jnp.cross(vi, pi))
        elif jtype is JointType.REVOLUTE:
            parts.append(jnp.zeros_like(vi))
    return jnp.concatenate(parts) if parts else jnp.zeros(0, v.dtype)


# --------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------


def kinetic_energy_bh(model: Model, q, v):
    """Kinetic energy ``K`` [J] of seed 000's eq 18, plus ``½ Σ armature ν²``."""
    check_supported(model.topology)
    Om, V = _velocities(model, _rotations(model, q), v)
    K = sum(0.5 * Om[a] @ model.inertia[a] @ Om[a] + 0.5 * model.mass[a] * V[a] @ V[a] for a in range(model.nb))
    return K + 0.5 * jnp.sum(model.armature * v * v)


def generalised_momentum_bh(model: Model, q, v):
    """Generalised momenta ``p = ∂K/∂ν`` [nv] (seed 000, eqs 29, 33, 41); equals ``M ν``."""
    check_supported(model.topology)
    return _momentum(model, q, v)[0] + model.armature * v


def mass_matrix_bh(model: Model, q):
    """``M`` [nv, nv] from the partial velocities of eqs 30–45 (the Hessian of eq 18 in ν)."""
    check_supported(model.topology)
    return _mass_matrix(model, _partial_velocities(model, _rotations(model, q)))


def forward_dynamics_bh(model: Model, q, v, tau=None, f_ext=None):
    """Quasi-accelerations ``ν̇`` [nv] from the Boltzmann–Hamel equations (seed 000, eqs 19–22).

    Same signature and meaning as :func:`diffsim.forward_dynamics`: ``tau`` [nv] generalised
    forces (the base wrench ``[F0; M0]`` in the base frame for the free joint, joint torques in
    the child frame); ``f_ext`` [nb, 6] spatial forces ``[n; f]`` in body coordinates at the
    body origin; joint damping ``−D ν``; ``armature`` adds to the mass-matrix diagonal only (as
    in diffsim.dynamics it enters no gyroscopic term); gravity ``model.gravity`` [m/s²], world.

    With ``p = ∂K/∂ν`` (eqs 29, 33, 41) and ``E_i = −∂K/∂π_i`` (eqs 22, 46–53), per DOF block:

    * base (eqs 19, 20): ``ṗ_V + [ω0×] p_V = F0``, ``ṗ_ω + [ω0×] p_ω + [V0×] p_V = M0``;
    * spherical joint (eq 21): ``ṗ_i + [ω_i×] p_i + E_i = M_i``;
    * revolute joint: ``sᵀ`` times eq 21, i.e. Lagrange's equation ``ṗ_i + sᵀE_i = M_i``;

    where ``ṗ = M ν̇ + (∂p/∂q) q̇`` and the generalised forces
    ``(F0, M0, M_i) = τ − D ν + Σ_α J_αᵀ w_α`` use the same partial velocities.
    ``M ν̇ = rhs`` is solved by a Cholesky factorisation.
    """
    t = model.topology
    check_supported(t)
    dt = model.dtype
    dofs = _dofs(t)
    if t.nv == 0:
        return jnp.zeros(0, dt)
    tau = jnp.zeros(t.nv, dt) if tau is None else tau

    # d/dt ∂K/∂ν = M ν̇ + (∂p/∂q) q̇; the second term (by hand in the paper) by forward mode
    qdot = _configuration_rate(model, q, v)
    p, p_dot_q, (C, Om, V, P) = jax.jvp(lambda qq: _momentum(model, qq, v), (q,), (qdot,), has_aux=True)
    h = _body_momenta(model, Om, V)
    nv_of = lambda j: t.nv_joint[j]  # noqa: E731

    # E_i = −S_iᵀ ∂K/∂π_i (eqs 46–53); zero for the base
    dK_dpi = _contract(_rotation_partials(model, C, Om, V), h, dofs, lambda j: 3, dt)
    E, k = [], 0
    for j in dofs:
        if t.joint_types[j] in _ROTATIONAL:
            E.append(-_joint_maps(model, j)[0].T @ dK_dpi[k : k + 3])
        else:
            E.append(jnp.zeros(t.nv_joint[j], dt))
        k += 3
    E = jnp.concatenate(E) if E else jnp.zeros(0, dt)

    Q = tau - joint_passive_forces(model, v, q) + _contract(P, _applied_wrenches(model, C, f_ext), dofs, nv_of, dt)
    rhs = Q - p_dot_q - _quasi_coordinate_terms(model, v, p) - E
    return cho_solve(cho_factor(_mass_matrix(model, P)), rhs)


class BoltzmannHamel(AbstractDynamics):
    """Seed 000's recursive Boltzmann–Hamel equations in quasi-coordinates as a dynamics
    strategy (trees of spherical / revolute joints on a free or fixed base)."""

    def __call__(self, model, q, v, tau=None, f_ext=None):
        return with_coupling(forward_dynamics_bh, model, q, v, tau, f_ext)

    def check(self, model):
        check_supported(model.topology)
