"""The precision of diffsim's own matrix products in float32: true float32, whatever JAX's default.

On NVIDIA GPUs since Ampere (and on TPUs) JAX computes float32 matrix products in reduced
precision by default (TF32: 10-bit mantissa on the GPU). That is tuned for neural networks, not
for the articulated-body recursion: on an H200, S0's float32 forward dynamics under the default
was **6.5 % off float64 (median over 4096 states; 87 % at worst)** and MJX's 3.8 m/s² off,
against 1.6e-5 (1.6e-4 at worst) in true float32, at 8 % of the speed
(``benchmarks/bench_gpu.py``, README "GPU"). CPUs compute float32 products in float32 either way.

So every public entry point of diffsim that computes (dynamics, kinematics, energies,
``simulate``, ``rollout``, the jobs) is traced under ``jax.default_matmul_precision(p)`` with
``p = "highest"`` (:func:`full_precision`): its float32 products are true float32, and the
caller's own products keep the caller's setting. Methods of diffsim's objects (``Loads.evaluate``,
a contact law's forces) are traced under it inside those entry points; called on their own, they
follow the caller's setting. :func:`set_matmul_precision` changes ``p``
(``None``: follow JAX's setting, e.g. TF32 for speed where the error is acceptable). The
setting is read when a function is traced (a ``jit`` traced before a change keeps its products).
float64 products are float64 on every backend, whatever the setting.
"""

from __future__ import annotations

import functools

import jax

_SETTING = {"precision": "highest"}


def set_matmul_precision(precision: str | None = "highest") -> None:
    """Set the precision of diffsim's float32 matrix products: any value that
    ``jax.default_matmul_precision`` takes (``"highest"`` / ``"float32"``: true float32, the
    default; ``"tensorfloat32"``, ``"bfloat16"``, a ``DotAlgorithmPreset`` name) or ``None``
    (follow JAX's own setting). Takes effect for functions traced afterwards."""
    if precision is not None:
        try:
            with jax.default_matmul_precision(precision):
                pass
        except (ValueError, TypeError) as e:
            raise ValueError(f"set_matmul_precision: {precision!r} is no matmul precision JAX knows "
                             f"(e.g. 'highest', 'tensorfloat32', 'bfloat16', or None): {e}") from None
    _SETTING["precision"] = precision


def matmul_precision() -> str | None:
    """The precision diffsim's float32 matrix products are traced with (:func:`set_matmul_precision`)."""
    return _SETTING["precision"]


def full_precision(fn):
    """``fn`` traced under ``jax.default_matmul_precision(matmul_precision())`` (module docstring).

    Nested entry points re-enter the same setting; the products of ``fn``'s JVP (traced with it)
    and of its transpose (which keeps each product's precision) follow it too."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        p = _SETTING["precision"]
        if p is None:
            return fn(*args, **kwargs)
        with jax.default_matmul_precision(p):
            return fn(*args, **kwargs)

    wrapped.__diffsim_full_precision__ = True
    return wrapped
