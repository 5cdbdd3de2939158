"""Profiling aid: rewrite every ``dot_general`` of a traced function as unrolled multiply-adds.

XLA:CPU runs each ``dot`` as its own kernel, and it does not fuse dots with their neighbours.
Running the jaxpr of a function with its dots written as ``Σ_k x[..., k] * y[..., k]`` shows
how much the tiny 3×3 and 6×6 products cost when diffsim's algorithms run them one by one.
This is a measurement tool, not a library feature: ``bench_s0.py`` uses it in its profile section,
``bench_gpu.py`` in its ``schedules`` section (does a GPU gain from products that XLA can fuse?).
"""

from __future__ import annotations

import string

import jax
import jax.numpy as jnp
from jax.extend import core as jcore


def _dot_unrolled(x, y, dimension_numbers, preferred_element_type=None, **_):
    (cx, cy), (bx, by) = dimension_numbers
    letters = iter(string.ascii_letters)
    xs, ys = [None] * x.ndim, [None] * y.ndim
    for a, b in zip(bx, by):
        xs[a] = ys[b] = next(letters)
    for a, b in zip(cx, cy):
        xs[a] = ys[b] = next(letters)
    xs = [lab or next(letters) for lab in xs]
    ys = [lab or next(letters) for lab in ys]
    out = ([xs[a] for a in bx] + [lab for i, lab in enumerate(xs) if i not in bx and i not in cx]
           + [lab for i, lab in enumerate(ys) if i not in by and i not in cy])
    red = [xs[a] for a in cx]
    labels = out + red

    def expand(arr, labs):
        arr = jnp.transpose(arr, [labs.index(lab) for lab in labels if lab in labs])
        shape, it = [], iter(arr.shape)
        for lab in labels:
            shape.append(next(it) if lab in labs else 1)
        return arr.reshape(shape)

    X, Y = expand(x, xs), expand(y, ys)
    if len(red) == 1:
        K = max(X.shape[-1], Y.shape[-1])
        r = X[..., 0] * Y[..., 0]
        for k in range(1, K):
            r = r + X[..., k] * Y[..., k]
    else:
        r = (X * Y).sum(tuple(range(len(out), len(labels)))) if red else X * Y
    return r.astype(preferred_element_type) if preferred_element_type is not None else r


def _rewrite_closed(cj):
    """A closed jaxpr (a loop's body, a branch) with its dots unrolled, for the same input avals."""
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in cj.jaxpr.invars]
    return jax.make_jaxpr(lambda *a: _eval(cj.jaxpr, cj.consts, *a))(*avals)


def _inner_rewritten(params):
    """``params`` with every closed jaxpr in it (scan/while bodies, cond branches) rewritten."""
    out = {}
    for k, p in params.items():
        if isinstance(p, jcore.ClosedJaxpr):
            out[k] = _rewrite_closed(p)
        elif isinstance(p, tuple) and p and all(isinstance(x, jcore.ClosedJaxpr) for x in p):
            out[k] = tuple(_rewrite_closed(x) for x in p)
        else:
            out[k] = p
    return out


def _eval(jaxpr, consts, *args):
    env = {}

    def read(v):
        return v.val if isinstance(v, jcore.Literal) else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        env[v] = a
    for eqn in jaxpr.eqns:
        inv = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if name == "dot_general":
            outs = [_dot_unrolled(*inv, **eqn.params)]
        elif name in ("pjit", "jit", "closed_call", "core_call"):
            cj = eqn.params["jaxpr"]
            outs = _eval(cj.jaxpr, cj.consts, *inv)
        elif name in ("custom_jvp_call", "custom_vjp_call"):  # forward only: the primal is inlined
            cj = eqn.params["call_jaxpr"]
            outs = _eval(cj.jaxpr, cj.consts, *inv)
        else:
            params = _inner_rewritten(eqn.params) if name in ("scan", "while", "cond") else eqn.params
            outs = eqn.primitive.bind(*inv, **eqn.primitive.get_bind_params(params))
            if not eqn.primitive.multiple_results:
                outs = [outs]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
    return [read(v) for v in jaxpr.outvars]


def without_dots(fn, *example_args):
    """``fn`` (array/pytree arguments, one array result) re-expressed without ``dot_general``, also
    inside its loops (``scan``/``while`` bodies, ``cond`` branches): traced once at
    ``example_args``; the result takes the same arguments. Forward only: custom derivative rules
    are dropped (their primal is inlined)."""
    flat, tree = jax.tree_util.tree_flatten(example_args)
    closed = jax.make_jaxpr(lambda *xs: fn(*jax.tree_util.tree_unflatten(tree, xs)))(*flat)

    def rewritten(*args):
        return _eval(closed.jaxpr, closed.consts, *jax.tree_util.tree_leaves(args))[0]

    return rewritten


def count_dots(fn, *example_args) -> int:
    """``dot_general`` equations in ``fn``'s jaxpr at ``example_args``, nested ones included."""
    closed = jax.make_jaxpr(fn)(*example_args)

    def walk(j):
        n = 0
        for e in j.eqns:
            n += e.primitive.name == "dot_general"
            for p in e.params.values():
                for x in (p if isinstance(p, tuple) else (p,)):
                    if isinstance(x, jcore.ClosedJaxpr):
                        n += walk(x.jaxpr)
                    elif isinstance(x, jcore.Jaxpr):
                        n += walk(x)
        return n

    return walk(closed.jaxpr)
