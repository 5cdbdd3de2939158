"""A flexible link's data: the sections and modal integrals the dynamics consumes.

Kinematics (the one definition every formulation in diffsim follows; the functions that evaluate
it are in :mod:`diffsim.dynamics.sections`). The link's body frame sits at its joint; the
undeformed beam axis is the body ``x`` axis, ``0 ≤ x ≤ L``. A material section at ``x`` moves with
the modal coordinates ``δ`` [ne] to

    p(x, δ) = [x, 0, 0] + Φ_d(x) δ − ½ (δᵀ G(x) δ) e_x        (position, body coordinates)
    R(x, δ) = exp([Φ_r(x) δ]×)                                  (orientation of the section)

with ``Φ_d`` [3, ne] the displacement modes (axial, transverse y, transverse z), ``Φ_r`` [3, ne]
the section-rotation modes (torsion about x, bending about y and z) and
``G(x) = ∫₀ˣ (Φ_y′ᵀ Φ_y′ + Φ_z′ᵀ Φ_z′) dξ`` the foreshortening of the bent centre line: the
second-order axial displacement of an inextensible beam, which gives **geometric
(centrifugal) stiffening** through the kinetic energy (Kane, Ryan & Banerjee 1987; Sharf
1996). ``stiffening=False`` drops it (the linear assumed-mode model of the textbooks, which
diverges under fast rotation). The exact exponential keeps the end frame a rigid frame; its
first-order expansion ``I + [Φ_r δ]×`` is seed 004's ``E_i = H_i + Σ δ_ij M_ij``.

Mass: ``ng`` sections (Gauss–Legendre points of the beam, plus concentrated masses), each a
point mass ``m_g`` with rotary inertia ``J_g`` (section axes), so that the link's kinetic energy
is ``T = ½ Σ_g V_gᵀ I_g V_g`` with ``V_g`` the section's spatial velocity. Children attach to
the deformed distal section ``x = L`` (the end frame).
"""

from __future__ import annotations

import equinox as eqx
import jax


class FlexBody(eqx.Module):
    """Section data of one flexible link (all arrays are differentiable leaves).

    ``spec``: the physical description the data were computed from (a
    :class:`diffsim.model.beam.Beam`, from :func:`diffsim.beam`), or ``None`` for data given
    directly. With a spec, the link's physical quantities are named parameters
    (``beam.<body>.EI_z`` …) and the integrals are recomputed from them when they are set.
    ``shapes``: the spec's mode families as solved at that derivation
    (:meth:`~diffsim.beams.ModeShapes.resolved`), kept where that differs from the spec's
    (elastic-boundary shapes), so that :meth:`deflection` does not solve them again."""

    x: jax.Array  # [ng] axial position of each section, m
    m: jax.Array  # [ng] section mass (μ w_g for a quadrature point), kg
    J: jax.Array  # [ng, 3, 3] section rotary inertia about the section point, kg m²
    phi_d: jax.Array  # [ng, 3, ne] displacement modes at the sections, m
    phi_r: jax.Array  # [ng, 3, ne] rotation modes at the sections, rad
    fore: jax.Array  # [ng, ne, ne] foreshortening matrices G(x_g), 1/m
    end_x: jax.Array  # [] length L, m
    end_phi_d: jax.Array  # [3, ne]
    end_phi_r: jax.Array  # [3, ne]
    end_fore: jax.Array  # [ne, ne]
    K: jax.Array  # [ne, ne] modal stiffness
    D: jax.Array  # [ne, ne] modal damping (air + Kelvin–Voigt)
    stiffening: bool = eqx.field(static=True, default=True)
    spec: eqx.Module | None = None
    shapes: tuple | None = None  # the spec's families' shapes, solved (class docstring)

    @property
    def ne(self) -> int:
        return self.phi_d.shape[-1]

    def deflection(self, x):
        """The spec's :meth:`~diffsim.model.beam.Beam.deflection` at ``x`` [m], evaluated on the
        shapes solved when the data were derived (an elastic-boundary link solves no frequency
        equation again)."""
        if self.spec is None:
            raise ValueError("this flexible link was given as section data, without a beam spec: "
                             "its deflection between sections is not defined")
        return self.spec.deflection(x, self.shapes)
