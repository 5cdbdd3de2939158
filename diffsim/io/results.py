"""Results in open formats: JSON for summaries (``summary.json``, ``fit.json``), NPZ for arrays."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def jsonable(x):
    """``x`` with arrays, NumPy scalars, tuples and paths turned into plain JSON values
    (non-finite floats become ``null``, which JSON has no other spelling for)."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, Path):
        return str(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # NumPy and JAX arrays
        return jsonable(np.asarray(x).tolist())
    if isinstance(x, (np.floating, float)):
        return float(x) if np.isfinite(x) else None
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def write_json(path, data) -> None:
    """Write ``data`` (see :func:`jsonable`) as indented JSON to ``path``."""
    Path(path).write_text(json.dumps(jsonable(data), indent=2) + "\n")
