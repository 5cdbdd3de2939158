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

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete
from ..beams import ModeShapes
from ..beams.elastic import ElasticModes, ElasticSnapshotModes, SolvedElasticModes
from ..compiled import staged
from ..precision import full_precision
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
    """The family's fields at ``eta``, in ``eta``'s dtype (shape coefficients may be float64 under
    x64 for a float32 link: written into float32 arrays they were a lossy scatter JAX warns of)."""
    eta = jnp.asarray(eta)
    f = jax.tree.map(lambda x: x.astype(eta.dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x,
                     shapes.fields(eta))
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

    @full_precision  # its float32 integrals in true float32 under a TF32 default (diffsim.precision)
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
    n_quad: int | None = None,
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
        n_quad: Gauss–Legendre points for the modal integrals and the mass sections. Default:
            the fewest points from 24 up that resolve the shapes (below); a given ``n_quad`` that
            does not resolve them is refused (BeamError naming the ``n_quad`` that would). The
            check compares the modal integrals (mass, stiffness, foreshortening, first moments)
            with those of a finer rule on the host, for the families with a host form
            (:meth:`~diffsim.beams.ModeShapes.host_fields`: polynomial, trigonometric–hyperbolic,
            Euler–Bernoulli, Timoshenko and elastic-boundary modes, supported ones of these);
            splines and callables are not checked (default 24).
        stiffening: keep the foreshortening term (geometric stiffening), see
            :mod:`diffsim.model.flexbody`.

    Refused (BeamError): shapes the Gauss rule does not resolve (``n_quad``); elastic-boundary
    modes (:func:`~diffsim.beams.elastic_modes`) of another beam (``L``, ``EI``, ``mu``, tip, section
    data); shapes with shear strain (``Theta ≠ dW``, Timoshenko) without the plane's ``kAG``;
    stiffness data without their mode family; inertias of the wrong shape or sign.

    The returned link carries its description (``FlexBody.spec``, a :class:`Beam`).
    """
    _positive("L", L)
    _positive("mu", mu)
    explicit_n = n_quad is not None
    if explicit_n and (isinstance(n_quad, bool) or int(n_quad) != n_quad or int(n_quad) < 1):
        raise BeamError(f"n_quad must be a positive integer (Gauss–Legendre points), got {n_quad!r}")
    for name, v, unit in (("rotary_inertia", rotary_inertia, "kg m"), ("tip_inertia", tip_inertia, "kg m²")):
        if v is not None and np.shape(v) != (3,):
            raise BeamError(f"{name} must be the three values (J_x, J_y, J_z) [{unit}] about the link's x, y, z "
                            f"axes, got shape {np.shape(v)}")  # fmt: skip
    spec = Beam(L=L, mu=mu, EI_z=EI_z, EI_y=EI_y, GJ=GJ, EA=EA, kAG_y=kAG_y, kAG_z=kAG_z, modes_y=modes_y,
                modes_z=modes_z, modes_torsion=modes_torsion, modes_axial=modes_axial, rotary_inertia=rotary_inertia,
                air_damping=air_damping, kelvin_voigt=kelvin_voigt, I_y=I_y, I_z=I_z, tip_mass=tip_mass,
                tip_inertia=tip_inertia, n_quad=int(n_quad) if explicit_n else 24, stiffening=bool(stiffening))
    for _, field, stiff, kag, what in _FAMILIES:
        if getattr(spec, field) is not None and getattr(spec, stiff) is None:
            raise BeamError(what)
        for arg in (stiff, kag):
            if arg is not None and getattr(spec, arg) is not None and getattr(spec, field) is None:
                raise BeamError(f"{arg} given but no {field}: the link has no coordinates for it to act on; "
                                f"give {field} or leave {arg} out")  # fmt: skip
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
    _positive("rotary_inertia", rotary_inertia, allow_zero=True)
    if is_concrete(kelvin_voigt) and np.any(np.asarray(kelvin_voigt) != 0):
        for name, _, _, _ in families:
            if name in ("y", "z") and (I_z if name == "y" else I_y) is None:
                raise BeamError("kelvin_voigt damping needs the second moment I_z / I_y of the bending plane")
    for name, shapes, stiff, kag in families:
        _check_elastic_family(spec, name, shapes, stiff, kag)
    host = _host_families(spec)
    _check_shear(host)
    n = _check_quadrature(spec, host, spec.n_quad, explicit_n)
    if n != spec.n_quad:
        spec = dataclasses.replace(spec, n_quad=n)
    return spec.flex_body(dtype)


_FIELD = {"y": "modes_y", "z": "modes_z", "t": "modes_torsion", "a": "modes_axial"}
_KAG = {"y": "kAG_y", "z": "kAG_z"}
# Relative tolerance for an elastic-boundary family's beam data against the link's: the same
# numbers given twice, so it only has to absorb their round trips (a product computed in another
# order, a decimal literal: ~1e-16 .. 1e-15), while any physical difference is far larger.
_DATA_RTOL = 1e-9
# Shear strain dW − Theta of shapes meant to be Euler–Bernoulli: their Theta is dW to round-off
# (the constructors set Theta's coefficients to dW's: ~1e-15 .. 1e-13 relative to max |dW| for the
# highest modes), so anything above 1e-9 is a shear strain of Timoshenko-like shapes.
_SHEAR_RTOL = 1e-9
# Quadrature check (_check_quadrature): the modal integrals at n_quad against a finer rule, each
# entry relative to sqrt(A_ii A_jj) (the modes' own scale, so independent of their normalisation).
# Both are float64 sums on the host of fields evaluated to ~1e-13 (hyperbolic terms in their
# stable form), so the round-off of the difference stays below ~1e-12 and neither tolerance can be
# reached by round-off alone. The default n_quad is the fewest points from 24 up that meet
# sqrt(eps) = 1.5e-8 (the integrals, hence the modal frequencies, dω/ω = ½ δK/K − ½ δM/M, to
# ~1e-8: at no cost in accuracy for float64). A given n_quad is refused above 1e-6 (frequencies off
# by more than ~5e-7, the size of an integration tolerance): an under-resolved rule (the
# 20-mode cantilever at 24 points: 0.5, frequencies off by up to 35×) is refused, a deliberate
# small rule that is accurate enough (2 cantilever modes at 8 points: 4.8e-8) is not.
_QUAD_RTOL = float(np.sqrt(np.finfo(np.float64).eps))
_QUAD_REFUSE = 1e-6
_QUAD_MAX = 4096


def _check_elastic_family(spec, name, shapes, stiff, kag):
    """Refuse elastic-boundary modes (``elastic_modes``) solved for another beam than the link's."""
    src = shapes.modes if isinstance(shapes, SolvedElasticModes) else shapes
    if not isinstance(src, (ElasticModes, ElasticSnapshotModes)):
        return
    field = _FIELD[name]
    if name not in ("y", "z"):
        raise BeamError(f"{field}: elastic_modes are bending shapes; give them as modes_y or modes_z")
    axis = 2 if name == "y" else 1  # the bending axis: tip and section inertia about it
    component = lambda v: v if not is_concrete(v) else np.asarray(v, dtype=float)[axis]  # noqa: E731
    tm = 0.0 if spec.tip_mass is None else spec.tip_mass
    tj = 0.0 if spec.tip_inertia is None else component(spec.tip_inertia)
    pairs = [("L", "L", spec.L), ("EI", "EI_z" if name == "y" else "EI_y", stiff), ("rhoA", "mu", spec.mu),
             ("tip_mass", "tip_mass", tm), ("tip_inertia", f"tip_inertia[{axis}]", tj)]  # fmt: skip
    if src.theory == "timoshenko":  # (Euler–Bernoulli modes in a link with rotary inertia: a Rayleigh beam's Ritz basis)
        if kag is None:
            raise BeamError(f"{field} are Timoshenko elastic modes but {_KAG[name]} is not given: give {_KAG[name]} "
                            "(their kAG) so the link has their shear energy")  # fmt: skip
        pairs += [("kAG", _KAG[name], kag), ("rhoI", f"rotary_inertia[{axis}]", component(spec.rotary_inertia))]
    for k, arg, link_value in pairs:
        a, b = getattr(src, k), link_value
        if not is_concrete(a, b):
            continue
        a, b = float(a), float(b)
        if abs(a - b) > _DATA_RTOL * max(abs(a), abs(b)):
            raise BeamError(
                f"{field} were solved for {k} = {a:g} but the link has {arg} = {b:g}: elastic_modes must be given "
                f"the link's own beam (L, EI, rhoA, tip_mass, tip_inertia about the bending axis; kAG, rhoI), or the "
                f"link the modes' ({arg}={a:g})")  # fmt: skip


def _host_families(spec):
    """``[(name, host shapes, kAG)]`` of the families with a host form (:meth:`ModeShapes.host_fields`)."""
    out = []
    for name, shapes, _, kag in spec.families():
        if isinstance(shapes, ElasticModes):  # solve once on the host, not on every evaluation
            shapes = shapes.host_shapes()
        host_fields = getattr(shapes, "host_fields", None)  # a user's family need not derive from ModeShapes
        if host_fields is None or host_fields(np.zeros(1)) is None:
            continue
        out.append((name, shapes, kag))
    return out


def _check_shear(host):
    """Refuse shapes with shear strain (Theta ≠ dW) in a plane without kAG: their shear energy
    ``½∫kAG γ²`` would be left out of the link's stiffness."""
    eta = np.linspace(0.0, 1.0, 101)
    for name, shapes, kag in host:
        if name not in ("y", "z") or kag is not None:
            continue
        f = shapes.host_fields(eta)
        shear = np.max(np.abs(f["dW"] - f["Theta"]), axis=0)
        scale = np.max(np.abs(f["dW"]), axis=0)
        # x64 off: the shapes' coefficients were stored in float32 (Theta's and dW's each rounded at
        # ~1e-7, 3e-8 apart measured), the bound follows JAX's float
        tol = max(_SHEAR_RTOL, 1e3 * float(jnp.finfo(jnp.result_type(float)).eps))
        bad = np.nonzero(shear > tol * scale)[0]
        if bad.size:
            k = int(bad[0])
            raise BeamError(
                f"{_FIELD[name]} have shear strain (Theta ≠ dW/deta, Timoshenko shapes: mode {k + 1}, max |dW − Theta| = "
                f"{shear[k]:.3g} of max |dW| = {scale[k]:.3g}) but {_KAG[name]} is not given: the link would drop their "
                f"shear energy; give {_KAG[name]} (shear stiffness k A G [N])")  # fmt: skip


def _integrals_host(spec, host, n):
    """Matrices and first moments that the link integrates over the span with ``n`` points."""
    eta, w = gauss_legendre(n)
    kv = is_concrete(spec.kelvin_voigt) and np.any(np.asarray(spec.kelvin_voigt) != 0)
    out = []
    for name, shapes, kag in host:
        f = shapes.host_fields(eta)
        qs = [f["W"], f["dW"]]
        if name in ("y", "z"):
            qs += [f["Theta"], f["dTheta"]] + ([f["dW"] - f["Theta"]] if kag is not None else [])
            qs += [f["ddW"]] if kv else []
        mats = [np.einsum("g,gi,gj->ij", w, q, q) for q in qs]
        moments = [w @ f["W"], (w * eta) @ f["W"]]
        out.append((mats, moments))
    return out


def _quadrature_error(spec, host, n):
    """Largest relative difference of the span integrals at ``n`` points and at ``2 n + 8``."""
    err = 0.0
    for (mats, moms), (mats_r, moms_r) in zip(_integrals_host(spec, host, n), _integrals_host(spec, host, 2 * n + 8)):
        for A, R in zip(mats, mats_r):
            d = np.abs(np.diag(R))
            d = d + 1e-300 + 1e-30 * d.max()
            err = max(err, float(np.max(np.abs(A - R) / np.sqrt(np.outer(d, d)))))
        dW = np.abs(np.diag(mats_r[0])) + 1e-300
        for v, r in zip(moms, moms_r):
            err = max(err, float(np.max(np.abs(v - r) / np.sqrt(dW))))
        if not np.isfinite(err):
            return np.inf
    return err


def _check_quadrature(spec, host, n, explicit):
    """Default (``explicit`` False): the fewest points from ``n`` up whose rule resolves the shapes
    to ``_QUAD_RTOL``. Given: ``n``, or a BeamError when its error exceeds ``_QUAD_REFUSE``."""
    if not host:
        return n
    err = _quadrature_error(spec, host, n)
    if err <= (_QUAD_REFUSE if explicit else _QUAD_RTOL):
        return n
    need = next((m for m in range(n + 1, _QUAD_MAX + 1) if _quadrature_error(spec, host, m) <= _QUAD_RTOL), None)
    if explicit or need is None:
        fix = f"give n_quad={need} or more (or leave it out: the default picks it)" if need else (
            f"no rule up to {_QUAD_MAX} points resolves them: check the shapes")
        raise BeamError(
            f"n_quad={n} Gauss points do not resolve the mode shapes: their modal integrals differ by {err:.2g} "
            f"(relative) from a finer rule's (tolerance {_QUAD_REFUSE:g}), so the link's mass and stiffness — and "
            f"its frequencies — would be wrong; {fix}")  # fmt: skip
    return need


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
