"""The one place that walks the tree.

Algorithms are written as per-body kernels that mirror the loop bodies of Featherstone's
algorithms; this module decides how to run them. Today every pass is unrolled in Python over
the static topology (``parent[i] < i``), which compiles quickly for the small and medium trees
of robot arms and space robots (tens of bodies). Level-batched or scanned passes for tall trees
can be added here without touching the algorithms.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

import jax.numpy as jnp

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


class JointData:
    """Per-body joint quantities at a configuration (Featherstone's ``jcalc`` + ``Xup``).

    ``Xup[i]`` is ``i_X_parent``; ``S[i]`` [6, nv_i] the motion subspace; ``qi[i]``/``vi[i]``
    the joint's slice of q / v (v may be ``None`` for position-only uses).
    """

    def __init__(self, model: Model, q, v=None):
        t = model.topology
        self.Xup: list[sp.Transform] = []
        self.S: list = []
        self.vJ: list = []
        self.cJ: list = []
        for i, jtype in enumerate(t.joint_types):
            qi = q[t.q_slice(i)]
            Xtree = sp.Transform.from_placement(model.tree_rot[i], model.tree_pos[i])
            XJ = jt.joint_transform(jtype, model.axis[i], qi)
            self.Xup.append(XJ @ Xtree)
            S = jt.motion_subspace(jtype, model.axis[i], qi)
            self.S.append(S)
            if v is not None:
                vi = v[t.v_slice(i)]
                self.vJ.append(S @ vi)
                self.cJ.append(jt.bias_acceleration(jtype, model.axis[i], qi, vi))


def body_spatial_inertias(model: Model) -> list:
    """``I_i`` [6, 6] at each body origin, body coordinates (Featherstone eq 2.63)."""
    return [sp.spatial_inertia(model.mass[i], model.com[i], model.inertia[i]) for i in range(model.nb)]


def base_acceleration(model: Model):
    """Gravity as a fictitious base acceleration ``a0 = [0; −g]`` (Featherstone §5.3)."""
    return jnp.concatenate([jnp.zeros(3, model.dtype), -model.gravity])
