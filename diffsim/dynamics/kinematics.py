"""Forward kinematics, body velocities and point Jacobians."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import spatial as sp
from ..model.model import Model
from .traversal import JointData, forward_pass


class Kinematics(eqx.Module):
    """World placement of every body frame: ``R[i]`` (body -> world) and origin ``p[i]``."""

    R: jax.Array  # [nb, 3, 3]
    p: jax.Array  # [nb, 3]


def _rigid_only(model: Model, what: str):
    if model.topology.has_flex:
        raise NotImplementedError(
            f"{what} is not implemented for models with flexible links yet; use diffsim.flexible "
            "(frames, sections_world, end_position, kinetic/potential energy) instead"
        )


def world_transforms(model: Model, q, jd: JointData | None = None) -> list[sp.Transform]:
    """``i_X_0`` for each body (world -> body Plücker transforms)."""
    if model.topology.has_flex:
        from ..flexible.kinematics import frames

        H = frames(model, q)[0]
        return [sp.Transform.from_placement(H[i, :3, :3], H[i, :3, 3]) for i in range(model.nb)]
    jd = jd if jd is not None else JointData(model, q)
    return forward_pass(model.topology, lambda i, X_p: jd.X[i] if X_p is None else jd.X[i] @ X_p, None)


def forward_kinematics(model: Model, q) -> Kinematics:
    """Body poses in the world frame (flexible links: children at the deformed ends)."""
    if model.topology.has_flex:
        from ..flexible.kinematics import frames

        H = frames(model, q)[0]
        return Kinematics(R=H[:, :3, :3], p=H[:, :3, 3])
    X0 = world_transforms(model, q)
    return Kinematics(R=jnp.stack([X.rotation for X in X0]), p=jnp.stack([X.translation for X in X0]))


def body_com(model: Model, q):
    """World-frame centres of mass ``[nb, 3]``."""
    k = forward_kinematics(model, q)
    return k.p + jnp.einsum("bij,bj->bi", k.R, model.com)


def site_poses(model: Model, q):
    """World rotation ``[ns, 3, 3]`` and position ``[ns, 3]`` of every site."""
    k = forward_kinematics(model, q)
    b = jnp.asarray(model.topology.site_body, dtype=jnp.int32)
    R = jnp.einsum("sij,sjk->sik", k.R[b], model.site_rot)
    p = k.p[b] + jnp.einsum("sij,sj->si", k.R[b], model.site_pos)
    return R, p


def body_velocities(model: Model, q, v, jd: JointData | None = None) -> list:
    """Spatial velocity ``[ω; v]`` of each body, body coordinates, at the body origin."""
    _rigid_only(model, "body_velocities")
    jd = jd if jd is not None else JointData(model, q, v)
    return forward_pass(
        model.topology,
        lambda i, v_p: jd.vJ[i] if v_p is None else jd.Xm[i] @ v_p + jd.vJ[i],
        None,
    )


def point_velocity(model: Model, q, v, body: int, point):
    """World-frame velocity of a point fixed to ``body`` (``point`` in body coordinates)."""
    k = forward_kinematics(model, q)
    vb = body_velocities(model, q, v)[body]
    return k.R[body] @ (vb[3:] + jnp.cross(vb[:3], point))


def point_jacobian(model: Model, q, body: int, point):
    """``J`` [3, nv] with ``ṗ_world = J v`` for a point fixed to ``body`` (body coordinates).

    Linear in ``v``, so the Jacobian is exact by forward-mode differentiation of
    :func:`point_velocity` with respect to ``v`` (no finite differences)."""
    v0 = jnp.zeros(model.nv, model.dtype)
    return jax.jacfwd(lambda vv: point_velocity(model, q, vv, body, point))(v0)
