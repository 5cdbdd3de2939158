"""Mimic joints: a 1-DoF joint whose coordinate follows another's,
``q_mimic = multiplier · q_master + offset`` (URDF ``<mimic>``, Pinocchio's ``JointModelMimic``).

The coupling is a constant affine map from the independent coordinates ``q_r`` (every
coordinate that is not a mimic, in ``q``'s order) to the tree's coordinates:
``q = expand(q_r) = G q_r + b`` on the coupled entries, ``v = G v_r``, with ``G`` [nv, nr] the
identity on the independent DOFs and one row ``multiplier · G[master]`` per mimic (a mimic of a
mimic is resolved through its master's row: the chain is composed, level by level).
Quaternion entries of ``q`` are independent coordinates and pass through unchanged.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp


class Mimic(eqx.Module):
    """The mimic joints of a model (``Model.mimic``), built by
    :meth:`diffsim.ModelBuilder.add_mimic`. Static index tables (resolved once, by the
    builder) and two differentiable leaves per mimic:

    * ``multiplier`` [nm] (dimensionless for revolute–revolute or prismatic–prismatic; m/rad or
      rad/m across types) and ``offset`` [nm] (rad | m);
    * ``joints``/``masters``: the joint names; ``q_index``/``q_master`` and
      ``v_index``/``v_master``: their coordinate's index in ``q`` and ``v``; ``levels``: the
      mimics grouped by chain depth (a master is resolved before its mimics).
    """

    joints: tuple = eqx.field(static=True)
    masters: tuple = eqx.field(static=True)
    q_index: tuple = eqx.field(static=True)
    q_master: tuple = eqx.field(static=True)
    v_index: tuple = eqx.field(static=True)
    v_master: tuple = eqx.field(static=True)
    levels: tuple = eqx.field(static=True)  # tuple of tuples of mimic numbers
    multiplier: jax.Array
    offset: jax.Array

    def __len__(self) -> int:
        return len(self.joints)


def _complement(n: int, taken) -> tuple[int, ...]:
    taken = set(taken)
    return tuple(i for i in range(n) if i not in taken)


def independent_q(model) -> tuple[int, ...]:
    """Indices of the independent coordinates inside ``q`` (all but the mimics')."""
    return _complement(model.nq, () if model.mimic is None else model.mimic.q_index)


def independent_v(model) -> tuple[int, ...]:
    """Indices of the independent DOFs inside ``v`` (all but the mimics')."""
    return _complement(model.nv, () if model.mimic is None else model.mimic.v_index)


def reduce_q(model, q):
    """``q_r``: the independent coordinates of ``q`` [nq − nm]."""
    return q[jnp.asarray(independent_q(model), int)]


def reduce_v(model, v):
    """``v_r``: the independent DOFs of ``v`` (or of any vector indexed like ``v``) [nv − nm]."""
    return v[jnp.asarray(independent_v(model), int)]


def _fill(mim: Mimic, x, index, master, affine: bool):
    """Set ``x[index_k] = m_k x[master_k] (+ o_k)`` level by level (a chain's master first)."""
    for level in mim.levels:
        k = jnp.asarray(level, int)
        i, j = jnp.asarray([index[n] for n in level], int), jnp.asarray([master[n] for n in level], int)
        val = mim.multiplier[k] * x[j]
        x = x.at[i].set(val + mim.offset[k] if affine else val)
    return x


def expand_q(model, q_r):
    """``q = G q_r + b``: the tree's coordinates [nq] from the independent ones."""
    q = jnp.zeros(model.nq, q_r.dtype).at[jnp.asarray(independent_q(model), int)].set(q_r)
    return q if model.mimic is None else _fill(model.mimic, q, model.mimic.q_index, model.mimic.q_master, True)


def expand_v(model, v_r):
    """``v = G v_r`` [nv] (also accelerations)."""
    v = jnp.zeros(model.nv, v_r.dtype).at[jnp.asarray(independent_v(model), int)].set(v_r)
    return v if model.mimic is None else _fill(model.mimic, v, model.mimic.v_index, model.mimic.v_master, False)


def coupling_matrix(model):
    """``G = ∂v/∂v_r`` [nv, nr]: one unit column per independent DOF, the mimic rows
    ``multiplier · G[master]``."""
    nr = len(independent_v(model))
    return jax.vmap(lambda e: expand_v(model, e), out_axes=1)(jnp.eye(nr, dtype=model.dtype))


def couple(model, q, v=None):
    """``q`` (and ``v``) with every mimic entry recomputed from its master (the others
    unchanged): the closest consistent state, and the identity on one that already is."""
    qc = expand_q(model, reduce_q(model, q))
    return qc if v is None else (qc, expand_v(model, reduce_v(model, v)))
