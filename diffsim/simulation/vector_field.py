"""The vector field of free motion (no contact) on the state ``y = (q, v, w)``, shared by
:func:`diffsim.simulate` (diffrax) and :func:`diffsim.rollout` (fixed-step RK4)."""

from __future__ import annotations

import jax.numpy as jnp

from ..dynamics.configuration import configuration_rate, normalize
from .prescribed import mixed_dynamics


def vector_field(t, y, args):
    """``(q̇, v̇, ẇ)`` at ``(t, y)``; ``args = (model, loads, integrand, dynamics, prescribed)``.

    Quaternions stay on the manifold: the dynamics is evaluated at the normalised configuration
    and quaternions move with ``q̇ = ½ q ⊗ ω``, whose exact flow keeps ``|q|`` constant."""
    model, loads, integrand, dynamics, prescribed = args
    q, v, _ = y
    qn = normalize(model, q)
    tau, f_ext = loads.evaluate(model, t, qn, v)
    if prescribed is None:
        vdot = dynamics(model, qn, v, tau, f_ext)
    else:
        q, v, vdot, _ = mixed_dynamics(model, prescribed, t, q, v, tau, f_ext)
        qn = normalize(model, q)
    wdot = None if integrand is None else jnp.asarray(integrand(t, qn, v))
    return configuration_rate(model, q, v), vdot, wdot
