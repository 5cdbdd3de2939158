"""Beams by assumed modes → :class:`~.flexbody.FlexBody` (modal integrals by Gauss–Legendre).

:func:`beam` records the physical description of a link as a :class:`Beam` and derives the
modal integrals from it (:meth:`Beam.flex_body`). The description travels with the link
(``FlexBody.spec``), so its quantities — ``EI_z``, ``mu``, ``tip_mass``, the mode-shape
coefficients … — are named parameters (``beam.<body>.<field>``) whose integrals are derived inside
the traced function when they are set: fitting ``EI`` needs no rebuilt model.

Fields on ``η = x/L``: each family of mode shapes gives ``W`` (displacement, or angle for
torsion), ``dW``, ``ddW`` (``η``-derivatives), ``Theta`` (section rotation × L; ``= dW`` for
Euler–Bernoulli) and ``dTheta`` — the interface of :mod:`diffsim.beams`. Physical quantities:
slope/rotation ``θ = Θ/L``, curvature ``θ′ = Θ′/L²``, shear strain ``γ_s = (W′ − Θ)/L``.

Coordinates of a link, in this order: bending in the x–y plane (``w_y``, rotation about z),
bending in the x–z plane (``w_z``, rotation about −y), torsion (``θ_x``), axial (``u_x``).

Modal integrals (seed 001 eqs 8–11, seed 004 eqs 19–35; Timoshenko stiffness with shear):

* stiffness ``K = ∫ (EI θ′ᵢθ′ⱼ + kAG γᵢγⱼ) dx`` per bending plane, ``∫ GJ θ′ₓᵢθ′ₓⱼ dx`` (torsion),
  ``∫ EA u′ᵢu′ⱼ dx`` (axial);
* damping ``D = ∫ (γ wᵢwⱼ + K_v I w″ᵢw″ⱼ) dx`` (air γ, Kelvin–Voigt K_v), per bending plane;
* mass by sections (Gauss points carrying ``μ w_g`` and ``J w_g``) plus tip masses
  (seed 004 eqs 31–35: a point mass with rotary inertia at ``x = L``; rigid segments of any
  shape are rigid child bodies on a fixed joint at the end frame).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from ..beams import ModeShapes
from ..compiled import staged
from .flexbody import FlexBody


class BeamError(ValueError):
    """Inconsistent beam data, with the offending item named."""


def gauss_legendre(n: int):
    """Nodes and weights of the ``n``-point Gauss–Legendre rule on [0, 1] (NumPy)."""
    x, w = np.polynomial.legendre.leggauss(int(n))
    return 0.5 * (x + 1.0), 0.5 * w


def _positive(name, value, allow_zero=False):
    """Refuse non-positive (or negative) data; traced values (inside ``jit``/``grad``) are not
    checked."""
    if not is_concrete(value):
        return
    v = np.asarray(value, dtype=float)
    bad = (v < 0) if allow_zero else (v <= 0)
    if np.any(bad) or not np.all(np.isfinite(v)):
        raise BeamError(f"{name} must be {'non-negative' if allow_zero else 'positive'} and finite, got {value}")


def _fields(shapes, eta):
    f = shapes.fields(jnp.asarray(eta))
    n = f["W"].shape[-1]
    if n < 1:
        raise BeamError("a mode family with zero modes: give at least one mode or leave the family out")
    return f


def _resolved(shapes):
    """``shapes.resolved()`` (:meth:`~diffsim.beams.ModeShapes.resolved`); a user's family that
    only provides ``n`` and ``fields`` is used as it is."""
    f = getattr(shapes, "resolved", None)
    return shapes if f is None else f()


_FAMILIES = (
    ("y", "modes_y", "EI_z", "kAG_y", "modes_y (bending in the x–y plane) needs EI_z"),
    ("z", "modes_z", "EI_y", "kAG_z", "modes_z (bending in the x–z plane) needs EI_y"),
    ("t", "modes_torsion", "GJ", None, "modes_torsion needs GJ"),
    ("a", "modes_axial", "EA", None, "modes_axial needs EA"),
)


class Beam(eqx.Module):
    """The physical description of a uniform flexible link (arguments of :func:`beam`, which
    documents every field and its unit). Float fields are differentiable leaves; ``None`` marks a
    family or quantity the link does not have. :meth:`flex_body` derives the section data."""

    L: object
    mu: object
    EI_z: object = None
    EI_y: object = None
    GJ: object = None
    EA: object = None
    kAG_y: object = None
    kAG_z: object = None
    modes_y: ModeShapes | None = None
    modes_z: ModeShapes | None = None
    modes_torsion: ModeShapes | None = None
    modes_axial: ModeShapes | None = None
    rotary_inertia: object = (0.0, 0.0, 0.0)
    air_damping: object = 0.0
    kelvin_voigt: object = 0.0
    I_y: object = None
    I_z: object = None
    tip_mass: object = None
    tip_inertia: object = None
    n_quad: int = eqx.field(static=True, default=24)
    stiffening: bool = eqx.field(static=True, default=True)

    @property
    def has_tip(self) -> bool:
        """A concentrated end mass is part of the link (``tip_mass`` or ``tip_inertia`` given)."""
        return self.tip_mass is not None or self.tip_inertia is not None

    def families(self):
        """``(name, shapes, stiffness, shear stiffness)`` of the mode families present."""
        out = []
        for name, field, stiff, kag, _ in _FAMILIES:
            modes = getattr(self, field)
            if modes is not None:
                out.append((name, modes, getattr(self, stiff), None if kag is None else getattr(self, kag)))
        return out

    def deflection(self, x, shapes=None):
        """``[..., 3, ne]``: the centre line's displacement per modal coordinate at ``x`` [m] along
        the link (``x`` [...]), in its floating frame, without foreshortening (the families' ``W``
        on the rows y, z and x of their planes, zero for torsion), in the order of the coordinates.
        ``shapes``: the families' shapes already solved (:attr:`FlexBody.shapes`), in order."""
        x = jnp.asarray(x)
        eta = x / jnp.asarray(self.L, x.dtype if jnp.issubdtype(x.dtype, jnp.floating) else None)
        fams = self.families()
        if shapes is not None:
            fams = [(name, sh, stiff, kag) for (name, _, stiff, kag), sh in zip(fams, shapes, strict=True)]
        cols = []
        for name, shapes_k, _, _ in fams:
            W = _fields(shapes_k, eta)["W"]  # [..., n]
            d = jnp.zeros(eta.shape + (3, W.shape[-1]), W.dtype)
            axis = {"y": 1, "z": 2, "a": 0}.get(name)
            cols.append(d if axis is None else d.at[..., axis, :].set(W))
        return jnp.concatenate(cols, -1)

    def flex_body(self, dtype=None) -> FlexBody:
        """The section data and modal integrals (seed 001 eqs 8–11, seed 004 eqs 19–35).

        Traced into the caller's program when it is being staged (a parameter set inside ``jit``);
        otherwise one compiled program per link structure (families, mode counts, quadrature): run
        op by op, the integrals compiled ~100 one-primitive programs for every new structure."""
        if staged():
            return _integrals(self, dtype)
        # floats as (weakly typed) arrays: the program is traced once per structure, not per value
        spec = jax.tree.map(lambda x: jnp.asarray(x) if isinstance(x, float) else x, self)  # not ints: counts
        return eqx.tree_at(lambda f: f.spec, _integrals_compiled(spec, dtype), self)


def beam(
    L,
    mu,
    *,
    EI_z=None,
    EI_y=None,
    GJ=None,
    EA=None,
    kAG_y=None,
    kAG_z=None,
    modes_y=None,
    modes_z=None,
    modes_torsion=None,
    modes_axial=None,
    rotary_inertia=(0.0, 0.0, 0.0),
    air_damping=0.0,
    kelvin_voigt=0.0,
    I_y=None,
    I_z=None,
    tip_mass=None,
    tip_inertia=None,
    n_quad: int = 24,
    stiffening: bool = True,
    dtype=None,
) -> FlexBody:
    """A uniform beam along the body ``x`` axis as a :class:`FlexBody`.

    Args:
        L: length [m]; mu: mass per unit length ``ρA`` [kg/m].
        EI_z, kAG_y, modes_y: bending in the x–y plane (stiffness [N m²], shear stiffness
            ``k A G`` [N] for Timoshenko shapes, mode family). ``EI_y``, ``kAG_z``, ``modes_z``:
            the x–z plane. ``GJ`` [N m²] / ``modes_torsion``; ``EA`` [N] / ``modes_axial``.
            Families left ``None`` add no coordinates.
        rotary_inertia: section inertia per unit length ``(J_x, J_y, J_z)`` [kg m].
        air_damping ``γ`` [kg/(m s)] and kelvin_voigt ``K_v`` [kg m⁻¹ s] with the second moments
            ``I_z`` (x–y plane) / ``I_y`` [m⁴] (seed 001 eq 11).
        tip_mass [kg], tip_inertia ``(J_x, J_y, J_z)`` [kg m²]: a concentrated mass at ``x = L``.
            Leave both ``None`` for no end mass; give ``tip_mass=0.0`` to keep an end mass that a
            fit may move away from zero.
        n_quad: Gauss–Legendre points for the modal integrals and the mass sections.
        stiffening: keep the foreshortening term (geometric stiffening), see
            :mod:`diffsim.model.flexbody`.

    The returned link carries its description (``FlexBody.spec``, a :class:`Beam`).
    """
    _positive("L", L)
    _positive("mu", mu)
    spec = Beam(L=L, mu=mu, EI_z=EI_z, EI_y=EI_y, GJ=GJ, EA=EA, kAG_y=kAG_y, kAG_z=kAG_z, modes_y=modes_y,
                modes_z=modes_z, modes_torsion=modes_torsion, modes_axial=modes_axial, rotary_inertia=rotary_inertia,
                air_damping=air_damping, kelvin_voigt=kelvin_voigt, I_y=I_y, I_z=I_z, tip_mass=tip_mass,
                tip_inertia=tip_inertia, n_quad=int(n_quad), stiffening=bool(stiffening))
    for _, field, stiff, _, what in _FAMILIES:
        if getattr(spec, field) is not None and getattr(spec, stiff) is None:
            raise BeamError(what)
    families = spec.families()
    if not families:
        raise BeamError("a flexible beam needs at least one mode family (modes_y, modes_z, modes_torsion, modes_axial)")
    for name, _, k, s in families:
        _positive(f"stiffness of the {name!r} family", k)
        if s is not None:
            _positive(f"shear stiffness kAG of the {name!r} family", s)
    _positive("air_damping", air_damping, allow_zero=True)
    _positive("kelvin_voigt", kelvin_voigt, allow_zero=True)
    if tip_mass is not None:
        _positive("tip_mass", tip_mass, allow_zero=True)
    if tip_inertia is not None:
        _positive("tip_inertia", tip_inertia, allow_zero=True)
    if is_concrete(kelvin_voigt) and np.any(np.asarray(kelvin_voigt) != 0):
        for name, _, _, _ in families:
            if name in ("y", "z") and (I_z if name == "y" else I_y) is None:
                raise BeamError("kelvin_voigt damping needs the second moment I_z / I_y of the bending plane")
    return spec.flex_body(dtype)


def _integrals(spec: Beam, dtype=None) -> FlexBody:
    # each family's shapes resolved (an elastic-boundary family's frequency equation solved once)
    # for the evaluations below and for later deflections (FlexBody.shapes)
    plain = spec.families()
    families = [(name, _resolved(sh), stiff, kag) for name, sh, stiff, kag in plain]
    resolved = tuple(f[1] for f in families)
    eta, w = gauss_legendre(spec.n_quad)
    L = jnp.asarray(spec.L, dtype)
    dt = L.dtype
    eta_j, w_j = jnp.asarray(eta, dt), jnp.asarray(w, dt)
    ng = eta.shape[0]
    # nested rule on [0, η_g] (and [0, 1]) for the foreshortening integrals
    eta_n = jnp.asarray(np.concatenate([eta, [1.0]])[:, None] * eta[None, :], dt)  # [ng+1, nq]
    w_n = jnp.asarray(np.concatenate([eta, [1.0]])[:, None] * w[None, :], dt)

    disp = jnp.zeros((ng + 1, 3, 0), dt)  # sections + end
    rot = jnp.zeros((ng + 1, 3, 0), dt)
    slope_n = []  # centre-line slopes at the nested points, per family (for G)
    K_blocks, D_blocks = [], []
    eta_all = jnp.concatenate([eta_j, jnp.ones(1, dt)])
    for name, shapes, stiff, kag in families:
        f = _fields(shapes, eta_all)
        n = f["W"].shape[-1]
        fq = _fields(shapes, eta_j)
        d = jnp.zeros((ng + 1, 3, n), dt)
        r = jnp.zeros((ng + 1, 3, n), dt)
        if name == "y":
            d = d.at[:, 1, :].set(f["W"])
            r = r.at[:, 2, :].set(f["Theta"] / L)
        elif name == "z":
            d = d.at[:, 2, :].set(f["W"])
            r = r.at[:, 1, :].set(-f["Theta"] / L)
        elif name == "t":
            r = r.at[:, 0, :].set(f["W"])
        else:
            d = d.at[:, 0, :].set(f["W"])
        if name in ("y", "z"):
            fn = _fields(shapes, eta_n)
            slope_n.append((len(K_blocks), fn["dW"] / L))
            curv = fq["dTheta"] / L**2
            K = stiff * L * jnp.einsum("g,gi,gj->ij", w_j, curv, curv)
            if kag is not None:
                shear = (fq["dW"] - fq["Theta"]) / L
                K = K + kag * L * jnp.einsum("g,gi,gj->ij", w_j, shear, shear)
            if hasattr(shapes, "boundary_stiffness"):  # elastic supports (beams.elastic): their strain energy
                K = K + shapes.boundary_stiffness(L)
            Ivv = spec.I_z if name == "y" else spec.I_y
            D = spec.air_damping * L * jnp.einsum("g,gi,gj->ij", w_j, fq["W"], fq["W"])
            if Ivv is not None:
                wpp = fq["ddW"] / L**2
                D = D + spec.kelvin_voigt * Ivv * L * jnp.einsum("g,gi,gj->ij", w_j, wpp, wpp)
        else:
            dd = fq["dW"] / L
            K = stiff * L * jnp.einsum("g,gi,gj->ij", w_j, dd, dd)
            D = jnp.zeros((n, n), dt)
        K_blocks.append(K)
        D_blocks.append(D)
        disp = jnp.concatenate([disp, d], -1)
        rot = jnp.concatenate([rot, r], -1)
    sizes = [k.shape[0] for k in K_blocks]
    ne = sum(sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    K = jnp.zeros((ne, ne), dt)
    D = jnp.zeros((ne, ne), dt)
    for k, (Kb, Db) in enumerate(zip(K_blocks, D_blocks)):
        s, e = starts[k], starts[k + 1]
        K = K.at[s:e, s:e].set(Kb)
        D = D.at[s:e, s:e].set(Db)
    # foreshortening G(x) = ∫₀ˣ Σ_planes w′ w′ᵀ dξ (physical x: dξ = L dη)
    G = jnp.zeros((ng + 1, ne, ne), dt)
    for k, sl in slope_n:
        s, e = starts[k], starts[k + 1]
        Gb = L * jnp.einsum("gq,gqi,gqj->gij", w_n, sl, sl)
        G = G.at[:, s:e, s:e].add(Gb)

    Jl = jnp.diag(jnp.asarray(spec.rotary_inertia, dt))
    m = spec.mu * L * w_j
    Jg = (L * w_j)[:, None, None] * Jl
    x = L * eta_j
    phi_d, phi_r, fore = disp[:ng], rot[:ng], G[:ng]
    if spec.has_tip:
        tm = jnp.asarray(0.0 if spec.tip_mass is None else spec.tip_mass, dt)
        tJ = jnp.diag(jnp.asarray((0.0, 0.0, 0.0) if spec.tip_inertia is None else spec.tip_inertia, dt))
        x = jnp.concatenate([x, L[None]])
        m = jnp.concatenate([m, tm[None]])
        Jg = jnp.concatenate([Jg, tJ[None]])
        phi_d = jnp.concatenate([phi_d, disp[ng:]])
        phi_r = jnp.concatenate([phi_r, rot[ng:]])
        fore = jnp.concatenate([fore, G[ng:]])
    return FlexBody(
        x=x,
        m=jnp.broadcast_to(m, x.shape),
        J=Jg,
        phi_d=phi_d,
        phi_r=phi_r,
        fore=fore,
        end_x=L,
        end_phi_d=disp[ng],
        end_phi_r=rot[ng],
        end_fore=G[ng],
        K=K,
        D=D,
        stiffening=spec.stiffening,
        spec=spec,
        shapes=resolved if any(r is not p[1] for r, p in zip(resolved, plain)) else None,
    )


_integrals_compiled = eqx.filter_jit(_integrals)
