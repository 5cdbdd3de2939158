"""A fluid medium around the bodies: MuJoCo's inertia-based fluid model (data only; the forces
are :func:`diffsim.dynamics.fluid.fluid_wrenches`).

Each body with mass moves through a fluid of density ``ρ`` and viscosity ``β`` as its
*equivalent inertia box*: the uniform box of the body's mass and principal moments, whose sides
are ``r_x = √(6 (I_y + I_z − I_x)/m)`` (and cyclically), in the body's principal axes at its
centre of mass. The axes are fixed when the model is read (MuJoCo's compiled ``body_iquat``);
the moments, masses and the fluid's constants stay differentiable leaves.
"""

from __future__ import annotations

import equinox as eqx
import jax
import numpy as np


class Fluid(eqx.Module):
    """``density`` ρ [kg/m³], ``viscosity`` β [Pa s] and ``axes`` [nb, 3, 3]: each body's
    principal axes (columns) in its body frame."""

    density: jax.Array | float
    viscosity: jax.Array | float
    axes: jax.Array


def principal_axes(inertia) -> np.ndarray:
    """Principal axes [nb, 3, 3] (columns, right-handed) of inertia tensors [nb, 3, 3]."""
    out = []
    for I in np.asarray(inertia, float):
        _, R = np.linalg.eigh(0.5 * (I + I.T))
        if np.linalg.det(R) < 0:
            R[:, 2] = -R[:, 2]
        out.append(R)
    return np.stack(out) if out else np.zeros((0, 3, 3))
