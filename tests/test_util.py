"""diffsim._util.tied: a loop's initial carry made dependent on the loop's inputs without changing
a value or a derivative."""

import jax
import jax.numpy as jnp
import numpy as np

from diffsim._util import tied


def _carry(p):
    return (jnp.zeros(3), jnp.full(2, jnp.inf), jnp.asarray([True, False]), jnp.asarray(4, jnp.int32), p[0] * 2.0)


def _loop(p, tie):
    """A scan whose buffer and count start constant and are perturbed by the first iteration."""
    c0 = _carry(p)
    c0 = tied(c0, {"p": p, "limit": jnp.inf}) if tie else c0

    def body(c, k):
        acc, buf, flags, n, x = c
        x = x * p[1] + jnp.sin(x)
        return (acc + x * k, buf.at[0].set(x), flags ^ (x > 0), n + 1, x), acc[0]

    return jax.lax.scan(body, c0, jnp.arange(1.0, 4.0))


def test_values_and_derivatives_are_unchanged_and_constant_carries_become_perturbed():
    p = jnp.asarray([0.3, 0.9])
    for got, want in zip(jax.tree.leaves(tied(_carry(p), p)), jax.tree.leaves(_carry(p)), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)  # the infinities stay, nothing turns NaN
    # values, forward and reverse derivatives and a batch: equal with and without the tie
    f = lambda p, tie: jax.tree.map(lambda a: jnp.asarray(a, float), _loop(p, tie))  # noqa: E731
    for a, b in zip(jax.tree.leaves(f(p, True)), jax.tree.leaves(f(p, False)), strict=True):
        np.testing.assert_array_equal(a, b)
    t = jnp.asarray([1.0, -0.5])
    loss = lambda p, tie: jnp.sum(_loop(p, tie)[0][0]) + jnp.sum(_loop(p, tie)[1])  # noqa: E731
    np.testing.assert_array_equal(jax.jvp(lambda p: loss(p, True), (p,), (t,))[1],
                                  jax.jvp(lambda p: loss(p, False), (p,), (t,))[1])
    np.testing.assert_array_equal(jax.grad(loss)(p, True), jax.grad(loss)(p, False))
    P = jnp.stack([p, p * 1.1, p * 0.7])
    batched = [jax.tree.leaves(jax.vmap(lambda p: f(p, tie))(P)) for tie in (True, False)]  # noqa: B023
    for a, b in zip(*batched, strict=True):
        np.testing.assert_array_equal(a, b)
    # the mechanism: a constant carry's tangent is computed from the inputs' tangent (JAX's scan rules
    # then find every carry perturbed in their first round)
    for tie in (True, False):
        def zeros(p, tie=tie):
            return tied(jnp.zeros(3), p) if tie else jnp.zeros(3)

        jaxpr = jax.make_jaxpr(lambda p, t, z=zeros: jax.jvp(z, (p,), (t,)))(p, t).jaxpr
        assert any(jaxpr.invars[1] in e.invars for e in jaxpr.eqns) == tie
