"""Contact geometry: points and spheres on bodies (rigid or flexible) against planes and against
each other — penetration, its rate, the contact frame, the tangential slip velocity and the
generalised contact forces (seed 001 eqs 17–19: ``Q = Σ_k J_kᵀ (F_N,k n_k + F_T,k)``).

Every contact is a *pair* ``(A, B)``: ``A`` a material point (a sphere of radius ``r ≥ 0`` on a
body), ``B`` a plane (the world's, possibly moving tangentially like a belt) or another sphere.
With the unit normal ``n`` pointing from ``B`` towards ``A``:

* penetration ``Δ = r_A (+ r_B) − gap`` (``Δ > 0`` in contact);
* the contact material points ``c_A = p_A − r_A n`` and ``c_B = p_B + r_B n`` (or the plane point);
* relative velocity ``u = ċ_A − ċ_B``, penetration rate ``Δ̇ = −n·u`` and slip
  ``v_T = u − (n·u) n`` (planar models simply have ``v_T`` in their plane);
* the force on ``A`` is ``F_N n + F_T`` and on ``B`` its opposite.

Velocities of material points and the generalised forces come from the points' Jacobians in
the tangent space, built from the link Jacobians that the dynamics uses
(:func:`diffsim.flexible.link_jacobians`: the twist of every body and deformed end frame per unit
generalised velocity): ``J = R (J_v − r × J_ω)``, ``ċ = J v`` and ``Q = Jᵀ F``. Points on
flexible links — whose deformation moves them — need no special code: a point ``at='end'``
rides on the deformed end frame of its link.
"""

from __future__ import annotations

from typing import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from ..dynamics.jacobians import link_jacobians
from ..dynamics.kinematics import frames
from ..model.model import Model
from ..model.params import ParamRef, conform
from ..spatial import safe_norm


class ContactError(ValueError):
    """Bad contact specification (unknown body, bad geometry, bad law parameters)."""


class ContactPoint(eqx.Module):
    """A point (``radius = 0``) or sphere on a body. ``pos`` is given in the body frame, or with
    ``at='end'`` in the deformed end frame of a flexible link (the frame its children attach
    to; for a rigid body the two coincide)."""

    body: str = eqx.field(static=True)
    pos: jax.Array | tuple = (0.0, 0.0, 0.0)
    radius: jax.Array | float = 0.0
    at: str = eqx.field(static=True, default="body")
    name: str | None = eqx.field(static=True, default=None)


class Plane(eqx.Module):
    """The half-space ``n·x ≥ offset`` is free space; ``velocity`` is the surface's own
    (tangential) velocity, e.g. a conveyor belt."""

    normal: jax.Array | tuple = (0.0, 0.0, 1.0)
    offset: jax.Array | float = 0.0
    velocity: jax.Array | tuple = (0.0, 0.0, 0.0)


class ContactGeometry(eqx.Module):
    """Resolved contact pairs of a model (build with :func:`contact_geometry`)."""

    bodies: tuple = eqx.field(static=True)  # body index of every material point
    at_end: tuple = eqx.field(static=True)  # point attached to the deformed end frame
    point_names: tuple = eqx.field(static=True)
    pairs: tuple = eqx.field(static=True)  # ('plane', point, plane) | ('sphere', point_a, point_b)
    pos: jax.Array  # [npt, 3] body-frame positions
    radius: jax.Array  # [npt]
    plane_normal: jax.Array  # [npl, 3] unit
    plane_offset: jax.Array  # [npl]
    plane_velocity: jax.Array  # [npl, 3]

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @property
    def pair_names(self) -> tuple:
        out = []
        for kind, a, b in self.pairs:
            out.append(f"{self.point_names[a]}/plane{b}" if kind == "plane" else f"{self.point_names[a]}/{self.point_names[b]}")
        return tuple(out)

    # ---- kinematics -----------------------------------------------------------------------
    def _frames(self, model: Model, q):
        """World rotations and origins of the frames the points live in: ``[npt, 3, 3]``, ``[npt, 3]``."""
        Hb, He = frames(model, q)
        b = np.asarray(self.bodies, dtype=np.int32)
        end = np.asarray(self.at_end, dtype=bool)
        H = jnp.where(end[:, None, None], He[b], Hb[b])
        return H[:, :3, :3], H[:, :3, 3]

    def _frame_jacobians(self, model: Model, q):
        """``[npt, 6, nv]``: the twist ``[ω; v]`` of each point's frame (body or deformed end, in
        its own coordinates) per unit generalised velocity (:func:`diffsim.flexible.link_jacobians`)."""
        Pi, Pe = link_jacobians(model, q)
        return jnp.stack([Pe[b] @ Pi[b] if end and Pe[b] is not None else Pi[b][:6]
                          for b, end in zip(self.bodies, self.at_end)])

    @staticmethod
    def _point_jacobians(R, J6, r):
        """World Jacobians ``R (J_v − r × J_ω)`` [k, 3, nv] of points at ``r`` [k, 3] (frame coordinates)."""
        Jw, Jv = J6[:, :3], J6[:, 3:]
        return jnp.einsum("kij,kjn->kin", R, Jv + jnp.cross(Jw, r[:, :, None], axisa=1, axisb=1, axisc=1))

    def centres(self, model: Model, q):
        """World positions of the points / sphere centres ``[npt, 3]``."""
        R, p = self._frames(model, q)
        return p + jnp.einsum("kij,kj->ki", R, self.pos)

    def penetration(self, model: Model, q):
        """Penetration ``Δ`` [nc] of every pair (positions only)."""
        return self._pair_frame(self.centres(model, q))[1]

    def surface_velocity(self, dtype):
        """Velocity of each pair's B surface [nc, 3] (a moving plane's; zero for spheres)."""
        rows = [self.plane_velocity[b] if kind == "plane" else jnp.zeros(3, dtype) for kind, _, b in self.pairs]
        return jnp.stack(rows)

    def param_refs(self) -> dict[str, ParamRef]:
        """Named parameters (:func:`geometry_param_refs`)."""
        return geometry_param_refs(self)

    def _pair_frame(self, c):
        """Per pair: unit normal ``n`` (from B towards A), penetration ``Δ`` and the contact
        points' offsets from the centres of A and B (world)."""
        ns, ds, oa, ob = [], [], [], []
        for kind, a, b in self.pairs:
            if kind == "plane":
                n = self.plane_normal[b]
                ds.append(self.radius[a] - (c[a] @ n - self.plane_offset[b]))
                ob.append(jnp.zeros(3, c.dtype))
            else:
                d = c[a] - c[b]
                dist = safe_norm(d)
                n = d / jnp.where(dist > 0, dist, 1.0)
                ds.append(self.radius[a] + self.radius[b] - dist)
                ob.append(self.radius[b] * n)
            ns.append(n)
            oa.append(-self.radius[a] * n)
        return jnp.stack(ns), jnp.stack(ds), jnp.stack(oa), jnp.stack(ob)

    def evaluate(self, model: Model, q, v):
        """Contact kinematics at ``(q, v)``.

        Returns ``(Δ [nc], Δ̇ [nc], n [nc, 3], v_T [nc, 3], u [nc, 3], apply)`` where ``u`` is the
        relative velocity of the contact points and ``apply(F [nc, 3]) -> Q [nv]`` maps world
        forces on the A points (minus on B) to generalised forces ``Σ Jᵀ F``."""
        R, p = self._frames(model, q)
        c = p + jnp.einsum("kij,kj->ki", R, self.pos)
        n, delta, oa, ob = self._pair_frame(c)
        ia = np.array([a for _, a, _ in self.pairs], dtype=np.int32)
        sph = [k for k, (kind, _, _) in enumerate(self.pairs) if kind == "sphere"]
        ib = np.array([self.pairs[k][2] for k in sph], dtype=np.int32)
        # contact material points in their frames
        local_a = jnp.einsum("kji,kj->ki", R[ia], (c[ia] + oa) - p[ia])
        local_b = jnp.einsum("kji,kj->ki", R[ib], (c[ib] + ob[np.asarray(sph, np.int32)]) - p[ib]) if sph else None
        # the points' Jacobians in the tangent space [k, 3, nv] from the link Jacobians (twists
        # [ω; v] of the body or end frames, frame coordinates): ċ = R (v + ω × r)
        J6 = self._frame_jacobians(model, q)
        Ja = self._point_jacobians(R[ia], J6[ia], local_a)
        Jb = self._point_jacobians(R[ib], J6[ib], local_b) if sph else None
        u = jnp.einsum("kij,j->ki", Ja, v)
        if sph:
            u = u.at[np.asarray(sph, np.int32)].add(-jnp.einsum("kij,j->ki", Jb, v))
        planes = [k for k, (kind, _, _) in enumerate(self.pairs) if kind == "plane"]
        if planes:
            ipl = np.array([self.pairs[k][2] for k in planes], dtype=np.int32)
            u = u.at[np.asarray(planes, np.int32)].add(-self.plane_velocity[ipl])
        un = jnp.sum(u * n, axis=-1)
        v_t = u - un[:, None] * n

        def apply(F):
            Q = jnp.einsum("kij,ki->j", Ja, F)
            if sph:
                Q = Q - jnp.einsum("kij,ki->j", Jb, F[np.asarray(sph, np.int32)])
            return Q

        return delta, -un, n, v_t, u, apply


def _geometry_field_ref(name: str, field: str, idx: int) -> ParamRef:
    def get(g):
        return getattr(g, field)[idx]

    def set_(g, value):
        arr = getattr(g, field)
        return eqx.tree_at(lambda gg: getattr(gg, field), g, arr.at[idx].set(conform(name, value, arr[idx])))

    return ParamRef(get, set_)


def geometry_param_refs(geometry: ContactGeometry) -> dict[str, ParamRef]:
    """Named parameters of the contact geometry: ``<point>.radius`` [m], ``<point>.pos`` [m]
    (body or end frame), ``plane<j>.offset`` [m], ``plane<j>.velocity`` [m/s]."""
    refs = {}
    for k, name in enumerate(geometry.point_names):
        refs[f"{name}.radius"] = _geometry_field_ref(f"{name}.radius", "radius", k)
        refs[f"{name}.pos"] = _geometry_field_ref(f"{name}.pos", "pos", k)
    for j in range(geometry.plane_offset.shape[0]):
        refs[f"plane{j}.offset"] = _geometry_field_ref(f"plane{j}.offset", "plane_offset", j)
        refs[f"plane{j}.velocity"] = _geometry_field_ref(f"plane{j}.velocity", "plane_velocity", j)
    return refs


def contact_geometry(
    model: Model, points: Sequence[ContactPoint], planes: Sequence[Plane] = (), sphere_pairs: Sequence = ()
) -> ContactGeometry:
    """Resolve ``points`` (every one is paired with every plane) and ``sphere_pairs``
    (``(i, j)`` indices or names of two points) against ``model``; errors name what is wrong."""
    if not isinstance(model, Model):
        raise TypeError(f"contact_geometry expects a diffsim Model, got {type(model).__name__}")
    points = list(points)
    if not points:
        raise ContactError("no contact points given")
    dtype = model.dtype
    bodies, at_end, names, pos, rad = [], [], [], [], []
    for k, cp in enumerate(points):
        if not isinstance(cp, ContactPoint):
            raise ContactError(f"contact point {k} is a {type(cp).__name__}, not a diffsim ContactPoint")
        try:
            bi = model.topology.body_index(cp.body) if isinstance(cp.body, str) else int(cp.body)
        except KeyError as e:
            raise ContactError(f"contact point {cp.name or k}: {e.args[0]}") from None
        if not 0 <= bi < model.nb:
            raise ContactError(f"contact point {cp.name or k}: body index {bi} does not exist (model has {model.nb} bodies)")
        if cp.at not in ("body", "end"):
            raise ContactError(f"contact point {cp.name or k}: at must be 'body' or 'end', got {cp.at!r}")
        p = jnp.asarray(cp.pos, dtype)
        if p.shape != (3,):
            raise ContactError(f"contact point {cp.name or k}: pos must have 3 components, got shape {p.shape}")
        r = jnp.asarray(cp.radius, dtype)
        if is_concrete(r) and not float(r) >= 0.0:
            raise ContactError(f"contact point {cp.name or k}: radius must be >= 0, got {cp.radius}")
        bodies.append(bi)
        at_end.append(cp.at == "end")
        names.append(cp.name or f"p{k}")
        pos.append(p)
        rad.append(r)
    if len(set(names)) != len(names):
        raise ContactError(f"contact point names must be unique, got {names}")
    nrm, off, vel = [], [], []
    for j, pl in enumerate(planes):
        if not isinstance(pl, Plane):
            raise ContactError(f"plane {j} is a {type(pl).__name__}, not a diffsim Plane")
        nv = jnp.asarray(pl.normal, dtype)
        if nv.shape != (3,):
            raise ContactError(f"plane {j}: normal must have 3 components, got shape {nv.shape}")
        if is_concrete(nv) and not float(jnp.linalg.norm(nv)) > 0:
            raise ContactError(f"plane {j}: the normal must be non-zero")
        scale = jnp.linalg.norm(nv)
        nv = nv / scale
        w = jnp.asarray(pl.velocity, dtype)
        if w.shape != (3,):
            raise ContactError(f"plane {j}: velocity must have 3 components, got shape {w.shape}")
        nrm.append(nv)
        off.append(jnp.asarray(pl.offset, dtype) / scale)  # n·x ≥ offset with n of any length
        vel.append(w - (w @ nv) * nv)  # a plane only moves in its own plane
    pairs = [("plane", i, j) for i in range(len(points)) for j in range(len(planes))]
    for sp in sphere_pairs:
        if len(sp) != 2:
            raise ContactError(f"a sphere pair needs two points, got {sp!r}")
        ij = []
        for x in sp:
            if isinstance(x, str):
                if x not in names:
                    raise ContactError(f"sphere pair {sp!r}: no contact point named {x!r}; points are {names}")
                ij.append(names.index(x))
            else:
                if not 0 <= int(x) < len(points):
                    raise ContactError(f"sphere pair {sp!r}: point index {x} out of range")
                ij.append(int(x))
        if ij[0] == ij[1]:
            raise ContactError(f"sphere pair {sp!r} pairs a point with itself")
        if is_concrete(rad[ij[0]], rad[ij[1]]) and not float(rad[ij[0]] + rad[ij[1]]) > 0:
            raise ContactError(f"sphere pair {sp!r}: both points have radius 0, so they can never touch (give the "
                               "ContactPoints their radius)")
        pairs.append(("sphere", ij[0], ij[1]))
    if not pairs:
        raise ContactError("no contact pairs: give at least one plane or one sphere pair")
    z3 = jnp.zeros((0, 3), dtype)
    return ContactGeometry(
        bodies=tuple(bodies),
        at_end=tuple(at_end),
        point_names=tuple(names),
        pairs=tuple(pairs),
        pos=jnp.stack(pos),
        radius=jnp.stack(rad),
        plane_normal=jnp.stack(nrm) if nrm else z3,
        plane_offset=jnp.stack(off) if off else jnp.zeros((0,), dtype),
        plane_velocity=jnp.stack(vel) if vel else z3,
    )
