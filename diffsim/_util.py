"""Small helpers shared by every layer (no diffsim imports)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp


def is_concrete(*values) -> bool:
    """True when no leaf of ``values`` is a JAX tracer, i.e. the values can be checked in Python
    (argument validation is skipped inside ``jit`` / ``grad`` / ``vmap``)."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(values))


def tied(carry, inputs):
    """``carry`` unchanged in value, but dependent on every float leaf of ``inputs``: each float leaf
    plus an exact zero ``0 · Σ inputs`` (non-finite sums contribute nothing), each bool xor-ed and
    each int added with ``False``/``0`` from it.

    For the initial carry of a ``lax.scan`` whose body is expensive to trace. JAX's JVP and batching
    rules for a scan find which carries are perturbed (batched) by a fixed point that re-traces the
    whole body once per round, starting from the initial carry: a carry that starts constant (a
    buffer of ``inf``, a zero count) and is perturbed by the first iteration costs a second (third …)
    round. Tied, every carry is perturbed wherever any input is, and the fixed point ends after one
    round. Measured on the compliant-contact loop (a bouncing ball, forward sensitivities of two
    contact parameters): ``jax.jacfwd`` traced in 5 s instead of 12 s, ``jax.vmap`` in 1.5 s instead
    of 3 s; values identical; reverse mode traced as long as before. In reverse mode the inputs
    receive ``0 ·`` the carries' cotangents (nothing, unless a cotangent is not finite)."""
    zero = jnp.zeros(())
    for x in jax.tree_util.tree_leaves(eqx.filter(inputs, eqx.is_inexact_array)):
        s = jnp.sum(jnp.real(x)).astype(zero.dtype)
        zero = zero + jnp.where(jnp.isfinite(s), 0.0 * s, 0.0)
    flag = zero != 0  # False, perturbed/batched like ``zero``

    def tie(c):
        c = jnp.asarray(c)
        if jnp.issubdtype(c.dtype, jnp.inexact):
            return c + zero.astype(c.dtype)
        if c.dtype == jnp.bool_:
            return c ^ flag
        return c + flag.astype(c.dtype)

    return jax.tree_util.tree_map(tie, carry)
