"""The configuration manifold: ``q`` may have ``nq ≠ nv`` (quaternions)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..compiled import compiled
from ..model import joints as jt
from ..model.mimic import couple
from ..model.model import Model, neutral_configuration
from ..precision import full_precision


def _per_joint(model: Model, fn, *vecs, kinds, modal=None):
    """Apply ``fn(jtype, *slices)`` joint by joint; the modal coordinates of flexible bodies
    (after all joint coordinates, a vector space) get ``modal(*tails)``."""
    t = model.topology
    parts = []
    for i, jtype in enumerate(t.joint_types):
        args = [x[t.q_slice(i)] if k == "q" else x[t.v_slice(i)] for x, k in zip(vecs, kinds)]
        parts.append(fn(jtype, *args))
    if t.ne:
        parts.append(modal(*[x[t.nq_rigid if k == "q" else t.nv_rigid:] for x, k in zip(vecs, kinds)]))
    return jnp.concatenate(parts) if parts else jnp.zeros(0, model.dtype)


@full_precision
@compiled
def configuration_rate(model: Model, q, v):
    """``q̇ = G(q) v`` (quaternion kinematics for spherical and free joints)."""
    return _per_joint(model, jt.configuration_rate, q, v, kinds="qv", modal=lambda qe, ve: ve)


@full_precision
@compiled
def integrate(model: Model, q, v, dt=1.0):
    """``q ⊕ v dt`` on the manifold (see :func:`diffsim.model.joints.integrate`)."""
    return _per_joint(
        model, lambda j, qi, vi: jt.integrate(j, qi, vi, dt), q, v, kinds="qv", modal=lambda qe, ve: qe + ve * dt
    )


@full_precision
@compiled
def difference(model: Model, q0, q1):
    """``q1 ⊖ q0``: the tangent vector [nv] with ``integrate(q0, difference(q0, q1)) == q1``."""
    return _per_joint(model, jt.difference, q0, q1, kinds="qq", modal=lambda a, b: b - a)


@full_precision
@compiled
def normalize(model: Model, q):
    """Project ``q`` onto the manifold (normalise every quaternion)."""
    return _per_joint(model, jt.normalize, q, kinds="q", modal=lambda qe: qe)


@full_precision
@compiled
def random_configuration(model: Model, key, scale=1.0):
    """A random configuration: ``integrate(neutral, scale · N(0, 1))``, mimic joints coupled to
    their masters."""
    v = scale * jax.random.normal(key, (model.nv,), model.dtype)
    q = integrate(model, neutral_configuration(model), v)
    return q if model.mimic is None else couple(model, q)
