"""Forward kinematics of rigid and flexible trees, body velocities and point Jacobians.

One outward pass (:func:`frames`) places every body frame and its end frame in the world with
4×4 homogeneous transforms: ``H_i = H_end,λ(i) · H_tree,i · H_J,i`` and, for a flexible link,
``H_end,i = H_i · H_sec(L, δ_i)`` (the deformed end section, :mod:`.sections`); a rigid body's end
frame is its body frame. Everything else here (poses, centres of mass, sites) is read off it.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import spatial as sp
from ..compiled import compiled
from ..model.model import Model
from ..precision import full_precision
from .sections import section_pose
from .traversal import JointData, forward_pass


class Kinematics(eqx.Module):
    """World placement of every body frame: ``R[i]`` (body -> world) and origin ``p[i]``."""

    R: jax.Array  # [nb, 3, 3]
    p: jax.Array  # [nb, 3]


def rigid_only(model: Model, what: str):
    """Refuse a rigid-tree quantity on a model with flexible links, naming what to use."""
    if model.topology.has_flex:
        raise NotImplementedError(
            f"{what} is not implemented for models with flexible links yet; use diffsim.flexible "
            "(frames, sections_world, end_position, kinetic/potential energy) instead"
        )


def frames(model: Model, q, jd: JointData | None = None):
    """``(H_body [nb, 4, 4], H_end [nb, 4, 4])``: world pose of every body frame and of its
    (deformed) end frame (= the body frame for a rigid body)."""
    t = model.topology
    jd = jd if jd is not None else JointData(model, q[: t.nq_rigid])
    HJ = sp.homogeneous(jd.XJ.rotation, jd.XJ.translation)  # child placed in the predecessor
    Ht = sp.homogeneous(model.tree_rot, model.tree_pos)

    def kernel(i, parent):
        H = Ht[i] @ HJ[i] if parent is None else parent[1] @ Ht[i] @ HJ[i]
        fb = model.flex[i] if model.flex else None
        if fb is None:
            return H, H
        R, pe = section_pose(fb.end_x, fb.end_phi_d, fb.end_phi_r, fb.end_fore, q[t.e_q_slice(i)], fb.stiffening)
        return H, H @ sp.homogeneous(R, pe)

    out = forward_pass(t, kernel)
    return jnp.stack([o[0] for o in out]), jnp.stack([o[1] for o in out])


@full_precision
@compiled
def forward_kinematics(model: Model, q) -> Kinematics:
    """Body poses in the world frame (flexible links: children at the deformed ends)."""
    H = frames(model, q)[0]
    return Kinematics(R=H[:, :3, :3], p=H[:, :3, 3])


def world_transforms(model: Model, q) -> sp.Transform:
    """``i_X_0`` of every body (world -> body Plücker transforms, batched over bodies)."""
    k = forward_kinematics(model, q)
    return sp.Transform.from_placement(k.R, k.p)


@full_precision
@compiled
def body_com(model: Model, q):
    """World-frame centres of mass ``[nb, 3]``."""
    k = forward_kinematics(model, q)
    return k.p + jnp.einsum("bij,bj->bi", k.R, model.com)


@full_precision
@compiled
def site_poses(model: Model, q, kin: Kinematics | None = None):
    """World rotation ``[ns, 3, 3]`` and position ``[ns, 3]`` of every site (from ``kin``, the
    body poses at ``q``, when the caller has them)."""
    k = forward_kinematics(model, q) if kin is None else kin
    b = jnp.asarray(model.topology.site_body, dtype=jnp.int32)
    R = jnp.einsum("sij,sjk->sik", k.R[b], model.site_rot)
    p = k.p[b] + jnp.einsum("sij,sj->si", k.R[b], model.site_pos)
    return R, p


def end_position(model: Model, q, i: int):
    """World position of link ``i``'s (deformed) end."""
    return frames(model, q)[1][i][:3, 3]


def sections_world(model: Model, q, i: int):
    """World rotations [ng, 3, 3] and positions [ng, 3] of flexible link ``i``'s sections."""
    t = model.topology
    fb = model.flex[i]
    H = frames(model, q)[0][i]
    R, p = section_pose(fb.x, fb.phi_d, fb.phi_r, fb.fore, q[t.e_q_slice(i)], fb.stiffening)
    return H[:3, :3] @ R, p @ H[:3, :3].T + H[:3, 3]


@full_precision
@compiled
def body_velocities(model: Model, q, v, jd: JointData | None = None):
    """Spatial velocity ``[ω; v]`` of each body ``[nb, 6]``, body coordinates, at the body
    origin (rigid trees)."""
    rigid_only(model, "body_velocities")
    jd = jd if jd is not None else JointData(model, q, v)
    return jnp.stack(forward_pass(model.topology, lambda i, v_p: jd.vJ[i] if v_p is None else jd.Xm[i] @ v_p + jd.vJ[i]))


@full_precision
@compiled
def point_velocity(model: Model, q, v, body: int, point):
    """World-frame velocity of a point fixed to ``body`` (``point`` in body coordinates)."""
    k = forward_kinematics(model, q)
    vb = body_velocities(model, q, v)[body]
    return k.R[body] @ (vb[3:] + jnp.cross(vb[:3], point))


@full_precision
@compiled
def point_jacobian(model: Model, q, body: int, point):
    """``J`` [3, nv] with ``ṗ_world = J v`` for a point fixed to ``body`` (body coordinates).

    Linear in ``v``, so the Jacobian is exact by forward-mode differentiation of
    :func:`point_velocity` with respect to ``v`` (no finite differences)."""
    v0 = jnp.zeros(model.nv, model.dtype)
    return jax.jacfwd(lambda vv: point_velocity(model, q, vv, body, point))(v0)
