"""Link Jacobians of rigid/flexible trees: the twist of every body (and deformed end frame) per
unit generalised velocity, shared by the mass-matrix form of the dynamics
(:mod:`.composite`) and the contact kinematics (:mod:`diffsim.contact.geometry`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..model.model import Model
from .sections import end_motion
from .traversal import JointData, forward_pass


def flex_groups(model: Model):
    """Flexible bodies grouped by the shapes of their section data (static), so that each group's
    section work is one batched (vmapped) computation."""
    groups: dict = {}
    for i, fb in enumerate(model.flex or ()):
        if fb is not None:
            key = (fb.x.shape, fb.ne, fb.stiffening)
            groups.setdefault(key, []).append(i)
    return list(groups.values())


def _stack_bodies(model, bodies):
    fbs = [model.flex[i] for i in bodies]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *fbs)


def end_groups(model: Model, q, v=None):
    """Per group of equal flexible links: ``(bodies, stacked FlexBody, δ [k, ne], δ̇ [k, ne],
    end_motion)``; ``v = None``: at ``δ̇ = 0`` (the Jacobians only need ``δ``)."""
    t = model.topology
    out = []
    for bodies in flex_groups(model):
        fbs = _stack_bodies(model, bodies)
        d = jnp.stack([q[t.e_q_slice(i)] for i in bodies])
        dd = jnp.zeros_like(d) if v is None else jnp.stack([v[t.e_v_slice(i)] for i in bodies])
        out.append((bodies, fbs, d, dd, jax.vmap(end_motion)(fbs, d, dd)))
    return out



def link_jacobians(model: Model, q, ends=None):
    """The link Jacobians of a rigid/flexible tree: ``(Π, P_end)`` with ``Π[i]`` [6 + ne_i, nv]
    mapping ``v`` to link ``i``'s coordinates ``ξ_i = [V_i; δ̇_i]`` (its body twist ``V_i`` in body
    coordinates, then its modal rates) and ``P_end[i]`` [6, 6 + ne_i] mapping ``ξ_i`` to the twist of
    its deformed end frame (end coordinates; ``None`` for a rigid link, whose end frame is its
    body frame). ``Π_c = [X_c P_end,p Π_p + S_c E_c; E_δc]`` along the tree.

    The contact kinematics (:mod:`diffsim.contact.geometry`) and
    :func:`forward_dynamics_composite` both call this; inside one jitted vector field XLA
    computes it once. ``ends``: the :func:`end_groups` already computed (their ``X`` and ``S``
    parts do not depend on ``δ̇``)."""
    t = model.topology
    dt = model.dtype
    nb, nv = t.nb, model.nv
    jd = JointData(model, q[: t.nq_rigid])
    Pe = [None] * nb
    for bodies, _, _, _, (Xe, Se, _) in end_groups(model, q) if ends is None else ends:
        Xem = Xe.motion_matrix()
        for k, i in enumerate(bodies):
            Pe[i] = jnp.concatenate([Xem[k], Se[k]], -1)

    def kernel(i, Pi_p):
        J = jnp.zeros((6, nv), dt)
        if t.nv_joint[i]:
            J = J.at[:, t.v_slice(i)].set(jd.S[i])
        if Pi_p is not None:
            p = t.parent[i]
            J = J + (jd.Xm[i] @ Pi_p if Pe[p] is None else (jd.Xm[i] @ Pe[p]) @ Pi_p)
        if Pe[i] is None:
            return J
        E = jnp.zeros((t.modes[i], nv), dt).at[:, t.e_v_slice(i)].set(jnp.eye(t.modes[i], dtype=dt))
        return jnp.concatenate([J, E], 0)

    return forward_pass(t, kernel), Pe
