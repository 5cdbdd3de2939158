"""Results in open formats: JSON for summaries (``summary.json``, ``fit.json``), NPZ for arrays."""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
from pathlib import Path

import jax
import numpy as np

from ..precision import matmul_precision
from ..spatial import products


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


def provenance() -> dict:
    """What produced a result, for its ``summary.json`` / manifest: diffsim's version, the git
    commit of its source tree and whether ``diffsim/`` had uncommitted changes (``None`` outside
    a git checkout), the versions of JAX and the solver libraries, and how the numbers were made:
    JAX's default backend, float64 on or off, the form of the small products
    (``ds.set_products``) and the float32 matmul precision (``ds.set_matmul_precision``) — the
    same study on another backend or form agrees to rounding, not bit for bit."""
    src = Path(__file__).resolve().parents[1]

    def git(*args):
        try:
            r = subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True, check=False, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    status = git("status", "--porcelain", "--", ".")
    versions = {}
    for dist in ("diffsim", "jax", "jaxlib", "diffrax", "equinox", "optimistix", "lineax", "numpy"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            versions[dist] = None
    return {"commit": git("rev-parse", "HEAD"), "diffsim_modified": None if status is None else bool(status),
            "versions": versions, "backend": jax.default_backend(), "x64": bool(jax.config.jax_enable_x64),
            "products": products(), "matmul_precision": matmul_precision()}
