"""Fixed joints welded: the rigid tree the dynamics algorithms sweep, without its fixed joints.

Robot files carry many bodies on fixed joints — the UR5 of example-robot-data has 11 bodies for
6 joints (``world``, ``base_link``, ``base``, ``ee_link``, ``tool0``). They add nothing to the
dynamics but each is a step of every recursive pass (and of every tangent of its derivatives).
Here such a body is merged into its *host*, the nearest ancestor on a moving joint, as Pinocchio
merges a fixed joint's inertia into its parent's (its frame stays a frame). Bodies welded to the
world through fixed joints only move with it and drop out. Nothing here changes the model the
user holds: the welded model is built inside the traced function from its leaves, so every
parameter stays differentiable; ``q`` and ``v`` are the same (a fixed joint has no coordinate).

For a fixed body ``i`` with pose ``(R_i, p_i)`` in its host's frame (the product of the fixed
placements between them), mass ``m_i``, centre of mass ``c_i`` and inertia ``I_i`` about it (body
axes), the host's merged inertial parameters are (the parallel-axis theorem; Featherstone 2008,
eq 2.63 summed over the welded set)::

    m = Σ m_i,   c = Σ m_i (p_i + R_i c_i) / m,
    I_c = Σ [R_i I_i R_iᵀ + m_i (‖d_i‖² 1 − d_i d_iᵀ)],   d_i = p_i + R_i c_i − c,

with the host itself in the sums at the identity pose. A moving body below a fixed one gets the
composed placement ``(R_p R_tree, p_p + R_p p_tree)`` in its new parent's frame, and a force
``f_ext,i`` (body coordinates at the body origin) moves to the host as ``ᴴX_i^* f_i``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax.numpy as jnp
import numpy as np

from .. import spatial as sp
from ..model.joints import JointType
from ..model.model import Model
from ..model.topology import Topology


@dataclasses.dataclass(frozen=True)
class WeldPlan:
    """Static tables of a welded tree: ``keep`` the bodies on moving joints (original indices, in
    order), ``host[i]`` the welded-tree index of body ``i``'s host (``-1``: the world), and the
    welded ``topology``."""

    keep: tuple[int, ...]
    host: tuple[int, ...]
    topology: Topology


@functools.cache
def weld_plan(t: Topology) -> WeldPlan | None:
    """The :class:`WeldPlan` of a rigid topology, or ``None`` when it has no fixed joint (or has
    flexible links, which are not welded)."""
    if t.has_flex or JointType.FIXED not in t.joint_types:
        return None
    keep, host = [], []
    for i, jtype in enumerate(t.joint_types):
        if jtype is JointType.FIXED:
            host.append(-1 if t.parent[i] < 0 else host[t.parent[i]])
        else:
            host.append(len(keep))
            keep.append(i)
    parent = tuple(-1 if t.parent[i] < 0 else host[t.parent[i]] for i in keep)
    topology = Topology(body_names=tuple(t.body_names[i] for i in keep), parent=parent,
                        joint_types=tuple(t.joint_types[i] for i in keep),
                        joint_names=tuple(t.joint_names[i] for i in keep))
    return WeldPlan(tuple(keep), tuple(host), topology)


def welded(model: Model, f_ext=None):
    """``(model', f_ext')``: the model with its fixed joints welded (module docstring) and the body
    forces [nb', 6] moved to the hosts; ``(model, f_ext)`` unchanged when there is nothing to weld.
    Only what the recursive algorithms read is carried over (no sites, geoms or actuators)."""
    t = model.topology
    plan = weld_plan(t)
    if plan is None:
        return model, f_ext
    dtype = model.dtype
    # pose (R, p) of every fixed body in its host's frame; None = the host itself (identity)
    pose: list = [None] * t.nb
    tree_rot, tree_pos = [None] * len(plan.keep), [None] * len(plan.keep)  # placements in the welded tree
    for i, jtype in enumerate(t.joint_types):
        parent = t.parent[i]
        up = None if parent < 0 else pose[parent]  # the parent's pose in its host (None: identity)
        R, p = model.tree_rot[i], model.tree_pos[i]
        if up is not None:
            R, p = up[0] @ R, up[0] @ p + up[1]
        if jtype is JointType.FIXED:
            pose[i] = (R, p)
        else:
            k = plan.host[i]
            tree_rot[k], tree_pos[k] = R, p
    # merged inertial parameters of each host (the fixed bodies welded to the world drop out)
    members: dict[int, list[int]] = {}
    for i, h in enumerate(plan.host):
        if h >= 0:
            members.setdefault(h, []).append(i)
    mass, com, inertia = [], [], []
    for k, i0 in enumerate(plan.keep):
        group = members[k]
        if len(group) == 1:
            mass.append(model.mass[i0]), com.append(model.com[i0]), inertia.append(model.inertia[i0])
            continue
        ms, xs, Is = [], [], []
        for i in group:
            R, p = (jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype)) if pose[i] is None else pose[i]  # None: the host
            ms.append(model.mass[i]), xs.append(p + R @ model.com[i]), Is.append(R @ model.inertia[i] @ R.T)
        ms, xs = jnp.stack(ms), jnp.stack(xs)
        m = jnp.sum(ms)
        c = ms @ xs / jnp.where(m > 0, m, 1.0)
        d = xs - c
        shift = ms[:, None, None] * (jnp.sum(d * d, -1)[:, None, None] * jnp.eye(3, dtype=dtype)
                                     - d[:, :, None] * d[:, None, :])
        mass.append(m), com.append(c), inertia.append(sum(Is) + jnp.sum(shift, 0))
    keep = np.asarray(plan.keep, dtype=np.int32)
    out = dataclasses.replace(
        model, topology=plan.topology, mass=jnp.stack(mass), com=jnp.stack(com), inertia=jnp.stack(inertia),
        tree_rot=jnp.stack(tree_rot), tree_pos=jnp.stack(tree_pos), axis=model.axis[keep],
        site_pos=jnp.zeros((0, 3), dtype), site_rot=jnp.zeros((0, 3, 3), dtype), flex=(), fluid=None,
        geoms=(), joint_limits=(), actuator_force_ranges=(), actuators=(), tendons=())
    if f_ext is None:
        return out, None
    f = f_ext[keep]
    for i, h in enumerate(plan.host):
        if h >= 0 and pose[i] is not None:  # a fixed body's force, moved to its host (the world takes the others)
            f = f.at[h].add(sp.Transform.from_placement(*pose[i]).inv_apply_force(f_ext[i]))
    return out, f
