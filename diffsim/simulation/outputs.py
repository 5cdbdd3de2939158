"""What every simulator shares about its outputs: the save times and the non-finite-state event."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def save_times(saveat, t0, t1, dtype):
    """The output times: ``saveat`` evenly spaced points (a count ≥ 2) or the given array."""
    if saveat is None:
        saveat = 101
    if isinstance(saveat, (int, np.integer)) and not isinstance(saveat, bool):
        if saveat < 2:
            raise ValueError("saveat as a count needs at least 2 points (t0 and t1)")
        return jnp.linspace(t0, t1, int(saveat), dtype=dtype)
    ts = jnp.asarray(saveat, dtype)
    if ts.ndim != 1 or ts.shape[0] < 1:
        raise ValueError(f"saveat must be a count or a 1-D array of times, got shape {ts.shape}")
    return ts


def nonfinite(t, y, args, **kwargs):
    """Event condition: some state component is NaN or inf."""
    return ~jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in jax.tree_util.tree_leaves(y)]))
