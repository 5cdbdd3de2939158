"""Rigid unilateral contact with Coulomb friction (static = kinetic coefficient μ), written as
linear complementarity problems at the acceleration level (seed 002 §3; Glocker & Pfeiffer 1993)
and at the velocity level (Stewart & Trinkle 1996; Anitescu & Potra 1997).

Contacts are points or spheres on bodies against planes, resolved by
:func:`diffsim.contact.contact_geometry` (the compliant-contact geometry; sphere–sphere pairs are
not supported here). Per contact ``k`` with plane normal ``n_k``: the gap ``g_N = −Δ``, the
relative velocity of the contact points ``u = J_u(q) v + u₀`` and the rates ``ġ_N = nᵀu``,
``ġ_T = tᵀu``.

**Planar formulation** (seed 002 eqs 9–20, the paper's method). With the friction margins
``λ_T0^± = μλ_N ± λ_T`` and the tangential acceleration split ``g̈_T = g̈_T⁺ − g̈_T⁻``, a closed,
sticking contact satisfies the three complementarity pairs

    g̈_N ≥ 0 ⊥ λ_N ≥ 0,    λ_T0⁺ ≥ 0 ⊥ g̈_T⁺ ≥ 0,    g̈_T⁻ ≥ 0 ⊥ λ_T0⁻ ≥ 0,

i.e. ``w = (g̈_N, λ_T0⁺, g̈_T⁻)``, ``z = (λ_N, g̈_T⁺, λ_T0⁻)``, ``λ_T = μλ_N − λ_T0⁻``. A sliding
contact (``ġ_T ≠ 0``) keeps only the normal pair with ``λ_T = −μ sgn(ġ_T) λ_N``; an open contact
none. The tangent ``t = n × e_plane`` lies in the plane of motion (normal ``e_plane``).

**Polyhedral formulation** (spatial; Stewart & Trinkle). The friction cone is replaced by
``n_d`` directions ``d_j`` in the tangent plane, ``F_T = Σ β_j d_j``; a closed, sticking
contact satisfies

    g̈_N ≥ 0 ⊥ λ_N ≥ 0,    γ + d_jᵀü ≥ 0 ⊥ β_j ≥ 0,    μλ_N − Σβ_j ≥ 0 ⊥ γ ≥ 0

(``γ`` is the magnitude of the sliding acceleration); a sliding contact has
``F_T = −μλ_N ŝ`` along its slip direction ``ŝ``.

Both are assembled in one form: the unknowns ``z`` act on the system as generalised forces
``B z``, and ``w = E v̇ + e + F z + c`` with ``M v̇ = τ − h + B z``, so that

    w = (E M⁻¹ B + F) z + (E a_free + e + c),     a_free = M⁻¹(τ − h)

(unused slots are identity rows, ``w = z + 1``, hence ``z = 0``). At the velocity level the same
blocks hold with impulses for forces and ``v⁺`` for ``v̇`` (:mod:`.timestepping`).

**Where the acceleration-level problem has no solution (Painlevé).** With friction the LCP
matrix need not be copositive-plus, and for large μ with a sliding contact the normal
coefficient ``W_N M⁻¹(W_N − μ s W_T)ᵀ`` can turn negative: then no contact force (or several)
is consistent with rigid bodies (Painlevé's paradox). Lemke reports it as ``RAY`` (or
``MAX_PIVOTS``); the acceleration-level simulation stops there with that status and NaN state
rather than guessing. The velocity-level (impulsive) formulation always has a solution
(Anitescu & Potra), which is why it is the robust choice with impacts.
"""

from __future__ import annotations

from typing import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from ..contact.geometry import ContactError, ContactGeometry, ContactPoint, Plane, contact_geometry, geometry_param_refs
from ..dynamics.configuration import configuration_rate
from ..model.model import Model
from ..model.params import ParamRef, attribute_ref, nested_refs

FORMULATIONS = ("planar", "polyhedral")

#: contact modes reported per contact and step
OPEN, STICK, SLIDE = 0, 1, 2


class ContactKinematics(eqx.Module):
    """Per contact: gap ``g`` [nc], normal rate ``g_dot`` [nc], tangential rates ``s_dot``
    [nc, m] along the formulation's tangent directions, rows ``W_N`` [nc, nv] and ``W_T``
    [nc, m, nv] (``ġ = W v + ġ₀``), the velocity offsets ``g0_N``, ``g0_T`` (moving planes) and the
    drifts ``dW_N v``, ``dW_T v`` (``g̈ = W v̇ + drift``), and the relative contact velocity
    ``u = Ju v + u0`` they are projections of."""

    g: jax.Array
    g_dot: jax.Array
    s_dot: jax.Array
    W_N: jax.Array
    W_T: jax.Array
    g0_N: jax.Array
    g0_T: jax.Array
    drift_N: jax.Array
    drift_T: jax.Array
    Ju: jax.Array  # [nc, 3, nv] relative contact velocity u = Ju v + u0
    u0: jax.Array  # [nc, 3]


class RigidContact(eqx.Module):
    """Rigid contacts of a model (build with :func:`rigid_contact`)."""

    geometry: ContactGeometry
    mu: jax.Array  # [nc]
    restitution: jax.Array  # [nc], velocity level and impacts
    directions: jax.Array  # [nc, m, 3]: planar m = 1 (t); polyhedral m = n_d (d_j)
    formulation: str = eqx.field(static=True)
    stick_tol: float = eqx.field(static=True, default=1e-6)

    @property
    def nc(self) -> int:
        return self.geometry.n_pairs

    @property
    def slots(self) -> int:
        """LCP unknowns per contact in the formulation's own structure."""
        return self.slots_for(None)

    # ---- kinematics -----------------------------------------------------------------------
    def _normals(self):
        return self.geometry.plane_normal[np.array([b for _, _, b in self.geometry.pairs], dtype=np.int32)]

    def _rel_velocity(self, model, qq, vv):
        delta, _, _, _, u, _ = self.geometry.evaluate(model, qq, vv)
        return u, -delta

    def kinematics(self, model: Model, q, v, drift: bool = True) -> ContactKinematics:
        """Gaps, rates, Jacobian rows and (with ``drift``) the drift terms ``J̇v`` at ``(q, v)``:
        one Jacobian in v (the relative contact velocities are linear in v), one JVP in q."""
        n, D = self._normals(), self.directions
        u0, g = self._rel_velocity(model, q, jnp.zeros_like(v))
        Ju = jax.jacfwd(lambda vv: self._rel_velocity(model, q, vv)[0])(v)  # [nc, 3, nv]
        base = ContactKinematics(
            g=g, g_dot=g, s_dot=jnp.zeros(D.shape[:2], g.dtype),
            W_N=jnp.einsum("ki,kiv->kv", n, Ju), W_T=jnp.einsum("kmi,kiv->kmv", D, Ju),
            g0_N=jnp.sum(n * u0, -1), g0_T=jnp.einsum("kmi,ki->km", D, u0),
            drift_N=jnp.zeros_like(g), drift_T=jnp.zeros(D.shape[:2], g.dtype), Ju=Ju, u0=u0,
        )
        return self.at_velocity(model, q, v, base, drift)

    def at_velocity(self, model: Model, q, v, kin: ContactKinematics, drift: bool = True) -> ContactKinematics:
        """``kin`` (same ``q``) with the rates — and with ``drift`` the ``J̇v`` terms — of velocity
        ``v`` (after an impulse the rows stay, only these change)."""
        n, D = self._normals(), self.directions
        u = jnp.einsum("kiv,v->ki", kin.Ju, v) + kin.u0
        un = jnp.sum(n * u, -1)
        if drift:
            du = jax.jvp(lambda qq: self._rel_velocity(model, qq, v)[0], (q,), (configuration_rate(model, q, v),))[1]
            d_n, d_t = jnp.sum(n * du, -1), jnp.einsum("kmi,ki->km", D, du)
        else:
            d_n, d_t = jnp.zeros_like(un), jnp.zeros(D.shape[:2], un.dtype)
        return eqx.tree_at(lambda k: (k.g_dot, k.s_dot, k.drift_N, k.drift_T), kin,
                           (un, jnp.einsum("kmi,ki->km", D, u), d_n, d_t))

    # ---- LCP blocks -----------------------------------------------------------------------
    def _directions_map(self, structure):
        """Friction directions of a Stewart–Trinkle structure as (tangent row, sign) pairs: the
        polyhedral d_j, or for the planar formulation ±t on its one tangent row."""
        m = self.directions.shape[1]
        if self.formulation == "planar":
            return ((0, 1.0), (0, -1.0)) if structure == "stewart-trinkle" else None
        return tuple((j, 1.0) for j in range(m))

    def slots_for(self, structure):
        if self.formulation == "planar" and structure != "stewart-trinkle":
            return 3
        return len(self._directions_map("stewart-trinkle")) + 2

    def blocks(self, closed, stick, slide_dir, structure=None):
        """The LCP structure for contact modes ``closed``, ``stick`` [nc] (booleans) and the unit
        slip direction ``slide_dir`` (:meth:`slide_direction`) of sliding contacts.

        ``structure``: ``None`` — the formulation's own (planar: seed 002's three slots);
        ``'stewart-trinkle'`` — ``z = (λ_N, β_j, γ)`` for every formulation (the planar one with
        the two directions ±t), the structure that Lemke provably solves at the velocity level
        (Anitescu & Potra 1997); the impulsive problems use it.

        Returns ``(P, S, F, c)``: with the stacked contact rows ``W = [W_N; W_T]`` (``nc + nc·m``
        rows) the contact forces are ``λ = P z`` (generalised force ``Wᵀλ``), the measured rows
        of ``w`` are ``S (W v̇ + drift)`` and ``w = S(...) + F z + c``; so the LCP matrix is
        ``S G P + F`` with the Delassus matrix ``G = W M⁻¹ Wᵀ``."""
        nc, s = self.nc, self.slots_for(structure)
        m = self.directions.shape[1]
        dmap = self._directions_map(structure)
        dtype = self.mu.dtype
        f = lambda b: b.astype(dtype)  # noqa: E731
        cl = f(closed)
        st = f(closed & stick)
        sl = f(closed & ~stick)
        mu = self.mu
        # per-contact blocks: Pk [nc, 1+m, s] (rows: normal, tangents), Sk [nc, s, 1+m], Fk [nc, s, s]
        Pk = jnp.zeros((nc, 1 + m, s), dtype).at[:, 0, 0].set(cl)
        Sk = jnp.zeros((nc, s, 1 + m), dtype).at[:, 0, 0].set(cl)
        Fk = jnp.zeros((nc, s, s), dtype)
        if dmap is None:
            # seed 002: z = (λ_N, g̈_T⁺, λ_T0⁻), w = (g̈_N, λ_T0⁺, g̈_T⁻); λ_T = μλ_N − λ_T0⁻ or −μ sgn λ_N
            Pk = Pk.at[:, 1, 0].set(st * mu - sl * mu * slide_dir[:, 0]).at[:, 1, 2].set(-st)
            Sk = Sk.at[:, 2, 1].set(-st)
            Fk = Fk.at[:, 1, 0].set(2.0 * mu * st).at[:, 1, 2].set(-st).at[:, 2, 1].set(st)
        else:
            # Stewart–Trinkle: z = (λ_N, β_1..β_nd, γ), w = (g̈_N, γ + d_jᵀü, μλ_N − Σβ)
            nd = len(dmap)
            for j, (row, sgn) in enumerate(dmap):
                Pk = Pk.at[:, 1 + row, 1 + j].set(sgn * st)
                Sk = Sk.at[:, 1 + j, 1 + row].set(sgn * st)
            Fk = Fk.at[:, 1 : 1 + nd, s - 1].set(st[:, None]).at[:, s - 1, 1 : 1 + nd].set(-st[:, None])
            Fk = Fk.at[:, s - 1, 0].set(mu * st)
            # sliding: F_T = −μ λ_N ŝ (planar: ŝ = sgn ġ_T t; spatial: ŝ = a d_0 + b d_{nd/4})
            Pk = Pk.at[:, 1, 0].set(-sl * mu * slide_dir[:, 0])
            if self.formulation != "planar":
                Pk = Pk.at[:, 1 + m // 4, 0].set(-sl * mu * slide_dir[:, 1])
        # unused slots: w = z + 1 ⇒ z = 0 (the normal slot when open, friction slots unless sticking)
        unused = jnp.concatenate([(1.0 - cl)[:, None], jnp.broadcast_to((1.0 - st)[:, None], (nc, s - 1))], axis=1)
        Fk = Fk + unused[:, :, None] * jnp.eye(s, dtype=dtype)
        # scatter the blocks: contact k owns normal row k, tangent rows nc + m k + j, slots s k + i
        rows = np.array([[k] + [nc + m * k + j for j in range(m)] for k in range(nc)])  # [nc, 1+m]
        slots = np.arange(nc * s).reshape(nc, s)
        nl = nc + nc * m
        P = jnp.zeros((nl, s * nc), dtype).at[rows[:, :, None], slots[:, None, :]].set(Pk)
        S = jnp.zeros((s * nc, nl), dtype).at[slots[:, :, None], rows[:, None, :]].set(Sk)
        F = jnp.zeros((s * nc, s * nc), dtype).at[slots[:, :, None], slots[:, None, :]].set(Fk)
        return P, S, F, unused.reshape(-1)

    def stacked_rows(self, kin: ContactKinematics):
        """``W = [W_N; W_T]`` [nc + nc·m, nv] and the matching drifts and velocity offsets."""
        nc, m = self.nc, self.directions.shape[1]
        W = jnp.concatenate([kin.W_N, kin.W_T.reshape(nc * m, -1)])
        drift = jnp.concatenate([kin.drift_N, kin.drift_T.reshape(-1)])
        g0 = jnp.concatenate([kin.g0_N, kin.g0_T.reshape(-1)])
        return W, drift, g0

    def split(self, lam):
        """``λ = P z`` → normal forces [nc] and world friction forces [nc, 3]."""
        nc, m = self.nc, self.directions.shape[1]
        lam_n = lam[:nc]
        F_t = jnp.einsum("km,kmi->ki", lam[nc:].reshape(nc, m), self.directions)
        return lam_n, F_t

    def slide_direction(self, kin: ContactKinematics):
        """Unit slip direction: planar ``sgn(ġ_T)`` [nc, 1]; polyhedral the unit slip in the
        ``(d_0, d_{nd/4})`` basis [nc, 2]."""
        if self.formulation == "planar":
            return jnp.sign(kin.s_dot)
        nd = self.directions.shape[1]
        s = jnp.stack([kin.s_dot[:, 0], kin.s_dot[:, nd // 4]], axis=1)
        nrm = jnp.sqrt(jnp.sum(s * s, -1, keepdims=True))
        return jnp.where(nrm > 0, s / jnp.where(nrm > 0, nrm, 1.0), 0.0)


def rigid_contact_param_refs(contact: RigidContact) -> dict[str, ParamRef]:
    """Named parameters of rigid contacts (without the ``contact.`` prefix a
    :class:`diffsim.System` adds): ``mu`` [nc], ``restitution`` [nc] and the geometry's."""
    refs = {k: attribute_ref(k, (k,)) for k in ("mu", "restitution")}
    refs.update(nested_refs(geometry_param_refs(contact.geometry), "geometry"))
    return refs


def rigid_contact(
    model: Model,
    points: Sequence[ContactPoint],
    planes: Sequence[Plane],
    *,
    mu=0.0,
    restitution=0.0,
    formulation: str = "planar",
    plane_of_motion=(0.0, 0.0, 1.0),
    n_directions: int = 8,
    stick_tol: float = 1e-6,
) -> RigidContact:
    """Rigid unilateral contacts of ``points`` against ``planes`` with Coulomb friction ``mu``
    (scalar or one per contact pair) and Newton restitution ``restitution`` (used by the
    velocity-level stepper and at impacts).

    ``formulation='planar'`` (seed 002's LCP; the model moves in the plane with normal
    ``plane_of_motion``) or ``'polyhedral'`` (spatial, ``n_directions`` friction directions, a
    multiple of 4). ``stick_tol`` [m/s]: a closed contact slipping slower than this is treated
    as sticking at the acceleration level."""
    if formulation not in FORMULATIONS:
        raise ContactError(f"unknown rigid contact formulation {formulation!r}; choose one of {FORMULATIONS}")
    if not planes:
        raise ContactError("rigid contacts need at least one plane (sphere–sphere pairs are not supported)")
    geom = contact_geometry(model, points, planes)
    nc = geom.n_pairs
    dtype = model.dtype
    mu = jnp.broadcast_to(jnp.asarray(mu, dtype), (nc,))
    e = jnp.broadcast_to(jnp.asarray(restitution, dtype), (nc,))
    for name, x, lo, hi in (("friction coefficient mu", mu, 0.0, np.inf), ("restitution", e, 0.0, 1.0)):
        if not is_concrete(x):
            continue
        xv = np.asarray(x)
        if not np.all(np.isfinite(xv)) or np.any(xv < lo) or np.any(xv > hi):
            raise ContactError(f"{name} must be in [{lo}, {hi}], got {xv.tolist()}")
    n = geom.plane_normal[np.array([b for _, _, b in geom.pairs], dtype=np.int32)]
    if formulation == "planar":
        ez = jnp.asarray(plane_of_motion, dtype)
        t = jnp.cross(n, ez)
        tn = jnp.linalg.norm(t, axis=-1, keepdims=True)
        # traced normals (e.g. differentiating w.r.t. the plane) cannot be checked
        if is_concrete(tn) and bool(np.any(np.asarray(tn) < 1e-12)):
            raise ContactError("planar contact: a plane normal is parallel to the normal of the plane of motion")
        D = (t / tn)[:, None, :]
    else:
        if n_directions < 4 or n_directions % 4:
            raise ContactError(f"n_directions must be a positive multiple of 4, got {n_directions}")
        a = jnp.where(jnp.abs(n[:, 0:1]) < 0.9, jnp.array([1.0, 0.0, 0.0], dtype), jnp.array([0.0, 1.0, 0.0], dtype))
        t1 = a - jnp.sum(a * n, -1, keepdims=True) * n
        t1 = t1 / jnp.linalg.norm(t1, axis=-1, keepdims=True)
        t2 = jnp.cross(n, t1)
        ang = 2 * np.pi * np.arange(n_directions) / n_directions
        D = np.cos(ang)[None, :, None] * t1[:, None, :] + np.sin(ang)[None, :, None] * t2[:, None, :]
    return RigidContact(geometry=geom, mu=mu, restitution=e, directions=jnp.asarray(D, dtype), formulation=formulation, stick_tol=float(stick_tol))
