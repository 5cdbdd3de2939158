"""Composite-rigid-body algorithm for the joint-space mass matrix of rigid trees (Featherstone
2008, Table 6.2)."""

from __future__ import annotations

import jax.numpy as jnp

from ..model.model import Model
from .traversal import JointData, ancestors_pass, backward_pass, body_spatial_inertias


def mass_matrix_crba(model: Model, q):
    """``M(q)`` [nv, nv] of a rigid tree, armature included, symmetric positive definite."""
    t = model.topology
    jd = JointData(model, q)
    Xm = jd.Xm  # i_X_λ(i) [nb, 6, 6]
    Ib = body_spatial_inertias(model)
    # composite inertias, leaves to root: IC_λ += Xᵀ IC_i X
    IC, _ = backward_pass(t, lambda i, ICi: (Xm[i].T @ ICi @ Xm[i], None), [Ib[i] for i in range(t.nb)])
    blocks = {}
    for i in range(t.nb):
        if not t.nv_joint[i]:
            continue
        F = IC[i] @ jd.S[i]
        blocks[i, i] = jd.S[i].T @ F

        def up(j, j_parent, F, i=i):
            F = Xm[j].T @ F  # move the force columns to the parent's coordinates
            if t.nv_joint[j_parent]:
                blocks[i, j_parent] = F.T @ jd.S[j_parent]
            return F

        ancestors_pass(t, i, up, F)
    H = jnp.zeros((model.nv, model.nv), model.dtype)
    for (i, j), blk in blocks.items():
        H = H.at[t.v_slice(i), t.v_slice(j)].set(blk)
        if i != j:
            H = H.at[t.v_slice(j), t.v_slice(i)].set(blk.T)
    return H + jnp.diag(model.armature)
