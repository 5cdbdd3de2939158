"""The one place that walks the tree.

Algorithms are written as per-body kernels that mirror the loop bodies of Featherstone's
algorithms; this module decides how to run them. Per-joint quantities (``jcalc``, ``Xup``, body
inertias) are computed batched per joint type over a leading body axis (struct-of-arrays); the
recursive passes are unrolled in Python over the static topology (``parent[i] < i``), which
compiles quickly for the trees of robot arms and space robots (tens of bodies: 865 XLA ops for
the S0 forward dynamics). Level-batched or scanned passes for tall trees belong here, without
touching the algorithms.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from .. import spatial as sp
from ..model import joints as jt
from ..model.model import Model
from ..model.topology import Topology

T = TypeVar("T")


def forward_pass(topology: Topology, kernel: Callable, root) -> list:
    """``out[i] = kernel(i, out[parent[i]])`` (``root`` for children of the world), root to
    leaves."""
    out: list = []
    for i, p in enumerate(topology.parent):
        out.append(kernel(i, root if p < 0 else out[p]))
    return out


def backward_pass(topology: Topology, kernel: Callable, acc: Sequence) -> list:
    """Leaves to root: ``acc[parent[i]] += kernel(i, acc[i])`` once ``acc[i]`` is complete.

    ``kernel`` returns the message for the parent (or ``None`` for nothing); the completed
    per-body accumulators are returned.
    """
    acc = list(acc)
    for i in reversed(range(topology.nb)):
        p = topology.parent[i]
        msg = kernel(i, acc[i])
        if p >= 0 and msg is not None:
            acc[p] = acc[p] + msg
    return acc


def ancestors_pass(topology: Topology, i: int, kernel: Callable, init) -> None:
    """Walk from body ``i`` to the root: ``x = kernel(j, x)`` for each ancestor ``j`` of ``i``
    (excluding ``i``), as in the inner loop of CRBA."""
    x, j = init, i
    while topology.parent[j] >= 0:
        j_next = topology.parent[j]
        x = kernel(j, j_next, x)
        j = j_next


def joint_groups(topology: Topology) -> tuple[tuple[jt.JointType, tuple[int, ...]], ...]:
    """Bodies grouped by joint type (static): per-joint kernels run once per group, batched
    over its bodies (struct-of-arrays), instead of once per body."""
    groups: dict = {}
    for i, jtype in enumerate(topology.joint_types):
        groups.setdefault(jtype, []).append(i)
    return tuple((j, tuple(b)) for j, b in groups.items())


def _gather_rows(x, bodies, sizes, starts):
    """``x[idx]`` [k, n]: each body's slice of ``q`` or ``v`` (one gather)."""
    n = sizes[bodies[0]]
    idx = np.array([np.arange(starts[b], starts[b] + n) for b in bodies], dtype=np.int32).reshape(len(bodies), n)
    return x[idx]


def _to_body_order(parts, order, nb):
    """Concatenate per-group arrays and put the rows back in body order."""
    cat = parts[0] if len(parts) == 1 else jnp.concatenate(parts, 0)
    inv = np.argsort(np.asarray(order))
    return cat if np.array_equal(inv, np.arange(nb)) else cat[inv]


class JointData:
    """Per-body joint quantities at a configuration (Featherstone's ``jcalc`` + ``Xup``),
    computed batched per joint type.

    ``X`` (a batched :class:`~diffsim.spatial.Transform`) and ``Xm`` [nb, 6, 6] are
    ``i_X_parent``; ``S[i]`` [6, nv_i] the motion subspace; ``vJ``/``cJ`` [nb, 6] the joint
    velocity and velocity-product term (when ``v`` is given).
    """

    def __init__(self, model: Model, q, v=None):
        t = model.topology
        groups = joint_groups(t)
        order, E_parts, r_parts, S_parts, vJ_parts, cJ_parts = [], [], [], [], [], []
        for jtype, bodies in groups:
            b = np.asarray(bodies)
            axis = model.axis[b]
            if jt.NQ[jtype]:
                qg = _gather_rows(q, bodies, t.nq_joint, t.q_start)
            else:
                qg = jnp.zeros((len(bodies), 0), model.dtype)
            XJ = jax.vmap(lambda a, qq: jt.joint_transform(jtype, a, qq))(axis, qg)
            S = jax.vmap(lambda a, qq: jt.motion_subspace(jtype, a, qq))(axis, qg)
            order += list(bodies)
            E_parts.append(jnp.broadcast_to(XJ.E, (len(bodies), 3, 3)))
            r_parts.append(jnp.broadcast_to(XJ.r, (len(bodies), 3)))
            S_parts.append((bodies, S))
            if v is not None:
                if jt.NV[jtype]:
                    vg = _gather_rows(v, bodies, t.nv_joint, t.v_start)
                    vJ_parts.append(jnp.einsum("kij,kj->ki", S, vg))
                    cJ_parts.append(jax.vmap(lambda a, qq, vv: jt.bias_acceleration(jtype, a, qq, vv))(axis, qg, vg))
                else:
                    vJ_parts.append(jnp.zeros((len(bodies), 6), model.dtype))
                    cJ_parts.append(jnp.zeros((len(bodies), 6), model.dtype))
        nb = t.nb
        XJ = sp.Transform(_to_body_order(E_parts, order, nb), _to_body_order(r_parts, order, nb))
        Xtree = sp.Transform.from_placement(model.tree_rot, model.tree_pos)
        self.X = XJ @ Xtree
        self.Xm = self.X.motion_matrix()
        self.S = [None] * nb
        for bodies, S in S_parts:
            for k, i in enumerate(bodies):
                self.S[i] = S[k]
        self.vJ = None if v is None else _to_body_order(vJ_parts, order, nb)
        self.cJ = None if v is None else _to_body_order(cJ_parts, order, nb)


def body_spatial_inertias(model: Model):
    """``I_i`` [nb, 6, 6] at each body origin, body coordinates (Featherstone eq 2.63)."""
    return sp.spatial_inertia(model.mass, model.com, model.inertia)


def base_acceleration(model: Model):
    """Gravity as a fictitious base acceleration ``a0 = [0; −g]`` (Featherstone §5.3)."""
    return jnp.concatenate([jnp.zeros(3, model.dtype), -model.gravity])
