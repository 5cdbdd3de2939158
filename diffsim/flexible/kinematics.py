"""World poses of the frames and material sections of rigid/flexible trees (4×4 homogeneous
transforms; no spatial-vector algebra, so that the Lagrangian reference built on it is
independent of the recursive sweeps)."""

from __future__ import annotations

import jax.numpy as jnp

from ..model import joints as jt
from ..model.model import Model
from .body import section_pose


def _H(R, p):
    top = jnp.concatenate([R, p[:, None]], 1)
    return jnp.concatenate([top, jnp.array([[0.0, 0.0, 0.0, 1.0]], R.dtype)], 0)


def frames(model: Model, q):
    """``(H_body [nb, 4, 4], H_end [nb, 4, 4])``: world pose of every body frame and of its
    (deformed) end frame (= the body frame for a rigid body)."""
    t = model.topology
    Hb, He = [], []
    for i, jtype in enumerate(t.joint_types):
        XJ = jt.joint_transform(jtype, model.axis[i], q[t.q_slice(i)])
        # X = child_X_pred: the child frame is placed in the predecessor at (E^T, r)
        HJ = _H(XJ.rotation, XJ.translation)
        Ht = _H(model.tree_rot[i], model.tree_pos[i])
        p = t.parent[i]
        H = Ht @ HJ if p < 0 else He[p] @ Ht @ HJ
        Hb.append(H)
        fb = model.flex[i] if model.flex else None
        if fb is None:
            He.append(H)
        else:
            R, pe = section_pose(fb.end_x, fb.end_phi_d, fb.end_phi_r, fb.end_fore, q[t.e_q_slice(i)], fb.stiffening)
            He.append(H @ _H(R, pe))
    return jnp.stack(Hb), jnp.stack(He)


def sections_world(model: Model, q, i: int):
    """World rotations [ng, 3, 3] and positions [ng, 3] of link ``i``'s sections."""
    t = model.topology
    fb = model.flex[i]
    Hb, _ = frames(model, q)
    R, p = section_pose(fb.x, fb.phi_d, fb.phi_r, fb.fore, q[t.e_q_slice(i)], fb.stiffening)
    H = Hb[i]
    return H[:3, :3] @ R, p @ H[:3, :3].T + H[:3, 3]


def end_position(model: Model, q, i: int):
    """World position of link ``i``'s (deformed) end."""
    return frames(model, q)[1][i][:3, 3]
