"""Small helpers shared by every layer (no diffsim imports)."""

from __future__ import annotations

import jax


def is_concrete(*values) -> bool:
    """True when no leaf of ``values`` is a JAX tracer, i.e. the values can be checked in Python
    (argument validation is skipped inside ``jit`` / ``grad`` / ``vmap``)."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(values))
