"""The one place that walks the tree.

Every recursion of diffsim (ABA, RNEA, CRBA, the flexible sweep and inverse dynamics, the
mass-matrix form's outward pass, the link Jacobians, the forward kinematics) is written as a
per-body kernel that mirrors the loop body of the book's algorithm, and runs through one of the
passes here: :func:`forward_pass` (root to leaves), :func:`backward_pass` (leaves to root, with a
message to the parent) and :func:`ancestors_pass` (CRBA's walk up from a body). Kernels take the
body index and the parent's (or the children's accumulated) value and touch nothing else of
the traversal order, so another schedule — level-batched passes that run all bodies of one
depth together, or a scan for tall trees — replaces the loops below in this module alone.

Per-joint quantities (``jcalc``, ``Xup``, body inertias) are computed batched per joint type over
a leading body axis (struct-of-arrays); the passes are unrolled in Python over the static
topology (``parent[i] < i``), which compiles quickly for the trees of robot arms and space robots
(tens of bodies: 865 XLA ops for the S0 forward dynamics).
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from .. import spatial as sp
from ..model import joints as jt
from ..model.model import Model
from ..model.topology import Topology

T = TypeVar("T")


def forward_pass(topology: Topology, kernel: Callable, root=None) -> list:
    """Root to leaves: ``out[i] = kernel(i, out[parent[i]])`` (``root`` for children of the
    world); returns ``out`` in body order."""
    out: list = []
    for i, p in enumerate(topology.parent):
        out.append(kernel(i, root if p < 0 else out[p]))
    return out


def backward_pass(topology: Topology, kernel: Callable, acc: Sequence):
    """Leaves to root: once body ``i``'s accumulator ``acc[i]`` is complete (all its children
    have been added), ``kernel(i, acc[i])`` returns ``(message, out_i)`` and ``message`` (a pytree
    like ``acc[i]``, or ``None``) is added to ``acc[parent[i]]``. Returns the completed
    accumulators and the per-body outputs ``out`` (both in body order)."""
    acc = list(acc)
    out: list = [None] * topology.nb
    for i in reversed(range(topology.nb)):
        p = topology.parent[i]
        msg, out[i] = kernel(i, acc[i])
        if p >= 0 and msg is not None:
            acc[p] = jax.tree_util.tree_map(jnp.add, acc[p], msg)
    return acc, out


def ancestors_pass(topology: Topology, i: int, kernel: Callable, init) -> None:
    """Walk from body ``i`` to the root: ``x = kernel(j, parent(j), x)`` for each body ``j`` on the
    path from ``i`` (included) up to the child of the root, as in the inner loop of CRBA."""
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

    ``XJ`` is the joint transform alone (successor from predecessor); ``X`` (a batched
    :class:`~diffsim.spatial.Transform`) and ``Xm`` [nb, 6, 6] are ``i_X_parent`` (tree placement
    and joint; for a child of a flexible link, ``i_X_end`` of the parent's end frame); ``S[i]`` [6, nv_i] the motion subspace; ``vJ``/``cJ`` [nb, 6] the joint
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
                    vJ_parts.append(sp.mv(S, vg))
                    cJ_parts.append(jax.vmap(lambda a, qq, vv: jt.bias_acceleration(jtype, a, qq, vv))(axis, qg, vg))
                else:
                    vJ_parts.append(jnp.zeros((len(bodies), 6), model.dtype))
                    cJ_parts.append(jnp.zeros((len(bodies), 6), model.dtype))
        nb = t.nb
        self.XJ = sp.Transform(_to_body_order(E_parts, order, nb), _to_body_order(r_parts, order, nb))
        Xtree = sp.Transform.from_placement(model.tree_rot, model.tree_pos)
        self.X = self.XJ @ Xtree
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


def _is_symbolic_zero(x) -> bool:
    return isinstance(x, SymbolicZero)


def jvp_of_nonzero(fn: Callable, primals: tuple, tangents: tuple):
    """``jax.jvp(fn, primals, tangents)[1]`` for tangents with symbolic zeros (a ``custom_jvp``
    rule's, ``symbolic_zeros=True``), pushed through the inputs whose tangent is not a symbolic zero
    only: the others are held fixed, so no tangent is formed through what depends on them alone (a
    mass tangent does not linearise the kinematics through the model's placements and axes, whose
    tangents are zero). ``None`` when every tangent is a symbolic zero."""
    moving = jax.tree_util.tree_map(lambda t: not _is_symbolic_zero(t), tangents, is_leaf=_is_symbolic_zero)
    if not any(jax.tree_util.tree_leaves(moving)):
        return None
    diff, rest = eqx.partition(primals, moving)
    d_diff = eqx.filter(tangents, moving, is_leaf=_is_symbolic_zero)
    return jax.jvp(lambda d: fn(*eqx.combine(d, rest)), (diff,), (d_diff,))[1]


def implicit_forward_dynamics(solve: Callable, inverse: Callable, apply_minv: Callable) -> Callable:
    """Forward dynamics ``a = solve(model, q, v, τ, f)`` whose derivatives follow from the
    implicit function ``inverse(model, q, v, a, f) = τ`` rather than from differentiating the
    solver: ``δa = M⁻¹ (δτ − ∂ID/∂(θ, q, v, f) · δ(θ, q, v, f))``, one JVP of the inverse
    dynamics (in the inputs that have a tangent: :func:`jvp_of_nonzero`) and one
    ``apply_minv(model, q, x) = M⁻¹ x``. Exact in forward and reverse mode, and cheaper to
    compile and to run in reverse mode than the solver's own derivatives."""

    @jax.custom_jvp
    def fd(model, q, v, tau, f_ext):
        return solve(model, q, v, tau, f_ext)

    def fd_jvp(primals, tangents):
        model, q, v, tau, f_ext = primals
        dmodel, dq, dv, dtau, df = tangents
        a = solve(model, q, v, tau, f_ext)
        dID = jvp_of_nonzero(lambda m, q, v, f: inverse(m, q, v, a, f), (model, q, v, f_ext), (dmodel, dq, dv, df))
        if dID is None:
            rhs = jnp.zeros_like(a) if _is_symbolic_zero(dtau) else dtau
        else:
            rhs = -dID if _is_symbolic_zero(dtau) else dtau - dID
        return a, apply_minv(model, q, rhs)

    fd.defjvp(fd_jvp, symbolic_zeros=True)
    return fd


def base_acceleration(model: Model):
    """Gravity as a fictitious base acceleration ``a0 = [0; −g]`` (Featherstone §5.3)."""
    return jnp.concatenate([jnp.zeros(3, model.dtype), -model.gravity])
