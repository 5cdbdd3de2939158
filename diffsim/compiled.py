"""Public array functions of diffsim run as compiled programs, wherever they are called.

Called outside ``jit`` (eagerly, or under an eager ``vmap``, ``grad``, ``jvp``, ``jacfwd``), JAX
executes a function op by op and compiles every primitive of a first call on its own (one small
XLA program per primitive, shape and parameter): ``jax.vmap(lambda q, v: ds.total_energy(m, q,
v))(Q, V)`` on a 4-body tree compiled 199 of them (``tests/test_compiled.py``), an eager
``ds.inverse_dynamics`` on a new tree hundreds. :func:`compiled` runs the function as one program instead
(``eqx.filter_jit``: arrays are traced, everything else — ints, strings, the model's topology —
is static), compiled once per model structure and argument shapes; transformations apply to it
as to any ``jit``. Inside a user's ``jit`` it is traced once per argument signature and inlined
by XLA. Measured on six dynamics/contact test modules: 7 891 → 6 607 compiles, wall 364 → 329 s
on 2 cores; a module that calls them mostly inside ``jit`` (``tests/simulation/test_system.py``)
492 → 323 compiles in the same time.

Module-level switches that a function reads while tracing (``dispatch.WELD_FIXED``, the rigid
schedule) are read when its program is traced, as in any ``jit``.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax.numpy as jnp

try:  # reads JAX's trace stack (:func:`staged`)
    from jax.extend.core import unsafe_am_i_under_a_jit_DO_NOT_USE as _under_jit
except ImportError:  # pragma: no cover - a JAX without it
    _under_jit = None


def staged() -> bool:
    """Whether the caller is being traced into a program (inside ``jit``, ``lax.scan``, …) rather than
    run eagerly or under an eager transformation. JAX has no public test for this; its
    ``jax.extend.core.unsafe_am_i_under_a_jit_DO_NOT_USE`` reads the trace stack. Without it, every
    call counts as staged (the caller's program, as before)."""
    return True if _under_jit is None else bool(_under_jit())


def _traced(x):
    """A Python float as a (weakly typed) array: a new value is a new input of the same program,
    not a new static argument that ``eqx.filter_jit`` compiles again (a loop over ``dt`` compiled
    one program per value). Ints, bools and everything else stay as they are (static)."""
    return jnp.asarray(x) if type(x) is float else x


def compiled(fn):
    """``fn`` as one compiled program (``eqx.filter_jit``), keeping its name, signature and
    docstring (``__wrapped__`` is ``fn``); Python floats among the arguments are traced."""
    program = eqx.filter_jit(fn)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return program(*map(_traced, args), **{k: _traced(v) for k, v in kwargs.items()})

    return wrapped
