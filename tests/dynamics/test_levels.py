"""The level-batched rigid-tree schedules (:mod:`diffsim.dynamics.levels`) against the per-body
algorithms: the same ABA and RNEA results to rounding on trees with branches, mixed joint sizes
in one level and fixed joints; gradients against central finite differences; jit/vmap and
float32."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.dynamics import levels
from diffsim.dynamics.aba import articulated_body_algorithm
from diffsim.dynamics.rnea import inverse_dynamics_rigid
from diffsim.model.random import random_tree

MIXED = ("revolute", "prismatic", "spherical", "planar", "fixed")
# the explicit forms; "auto" is one of them on each backend, and the default path
# (``ds.forward_dynamics``, checked in every case below) takes it
FORMS = tuple(p for p in levels.PRODUCTS if p != "auto")
TREES = [  # (seed, tree, product forms checked): the first case checks the default's
    (1, dict(n_bodies=7, joint_types=MIXED, base="free", n_arms=3, damping=True), ("dot",)),
    (1, dict(n_bodies=7, joint_types=MIXED, base="free", n_arms=3, damping=True), FORMS),
    (3, dict(n_bodies=6, joint_types=MIXED, base=None, n_arms=2, damping=True), FORMS),
]


def state(m, seed):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    return (ds.random_configuration(m, k[0]), jax.random.normal(k[1], (m.nv,)), jax.random.normal(k[2], (m.nv,)),
            jax.random.normal(k[3], (m.nb, 6)))


def rel(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1e-300))


@pytest.mark.parametrize("seed, kw, products", TREES)
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_level_schedules_match_per_body(seed, kw, products):
    m = random_tree(seed, **kw)
    lv = levels.tree_levels(m.topology)
    assert sum(len(x.bodies) for x in lv) == m.nb
    assert any(len(x.bodies) > 1 for x in lv)  # something is batched

    @jax.jit
    def run(m, q, v, tau, f_ext):
        a_ref = articulated_body_algorithm(m, q, v, tau, f_ext)
        out = {"a_ref": a_ref, "tau_ref": inverse_dynamics_rigid(m, q, v, a_ref, f_ext)}
        for p in products:
            out[f"a{p}"] = levels.articulated_body_algorithm_levels(m, q, v, tau, f_ext, products=p)
            out[f"tau{p}"] = levels.inverse_dynamics_levels(m, q, v, a_ref, f_ext, products=p)
        out["default"] = ds.forward_dynamics(m, q, v, tau, f_ext)
        return out

    r = run(m, *state(m, seed))
    for p in products:
        assert rel(r[f"a{p}"], r["a_ref"]) <= 1e-10
        assert rel(r[f"tau{p}"], r["tau_ref"]) <= 1e-10
    assert rel(r["default"], r["a_ref"]) <= 1e-10


def test_mixed_joint_sizes_in_one_level():
    """Free base with a revolute, a spherical, a prismatic and a fixed child (one level, joint
    sizes 1, 3, 1, 0: padded subspaces) and a grandchild under the fixed body."""
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("base", None, joint="free", mass=2.0, inertia=(0.1, 0.2, 0.3))
    b.add_body("a", "base", joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(0.01, 0.02, 0.03), pos=(0.1, 0, 0))
    b.add_body("b", "base", joint="spherical", mass=1.0, inertia=(0.01, 0.02, 0.03), pos=(-0.1, 0, 0))
    b.add_body("c", "base", joint="prismatic", axis=(1, 0, 0), mass=1.0, inertia=(0.01, 0.02, 0.03), pos=(0, 0.1, 0))
    b.add_body("e", "base", joint="fixed", mass=0.5, inertia=(0.01, 0.02, 0.03), pos=(0.2, 0, 0.1))
    b.add_body("f", "e", joint="revolute", axis=(1, 0, 0), mass=0.5, inertia=(0.01, 0.02, 0.03), pos=(0.2, 0, 0.1))
    m = b.build()
    assert [x.k for x in levels.tree_levels(m.topology)] == [6, 3, 1]
    q, v, tau, f_ext = state(m, 5)

    @jax.jit
    def run(m, q, v, tau, f_ext):
        a_ref = articulated_body_algorithm(m, q, v, tau, f_ext)
        a = levels.articulated_body_algorithm_levels(m, q, v, tau, f_ext)
        return a_ref, a, levels.inverse_dynamics_levels(m, q, v, a_ref, f_ext)

    a_ref, a, tau_back = run(m, q, v, tau, f_ext)
    assert rel(a, a_ref) <= 1e-10
    assert rel(tau_back, tau) <= 1e-10


@pytest.mark.slow
@pytest.mark.parametrize("schedule", ["levels", "levels_reduce", "levels_unrolled"])
def test_level_gradients_match_finite_differences(schedule):
    """∂a/∂q (tangent space), ∂a/∂v and ∂a/∂mass of the level-batched forward dynamics (its
    implicit-function derivative through the level-batched RNEA) vs central differences. (The
    default schedule's gradients are also checked in the fast set, through ``ds.forward_dynamics``,
    by ``tests/dynamics/test_dynamics.py``.)"""
    m = random_tree(7, 5, joint_types=MIXED, base="free", n_arms=2, damping=True)
    q, v, tau, f_ext = state(m, 7)
    w = jax.random.normal(jax.random.PRNGKey(99), (m.nv,))
    fd = ds.dynamics.ABA(schedule=schedule)

    def loss(mass, dq, v):
        mm = ds.set_params(m, {"body.b2.mass": mass})
        return w @ fd(mm, ds.integrate(mm, q, dq), v, tau, f_ext)

    mass0, dq0 = ds.get_param(m, "body.b2.mass"), jnp.zeros(m.nv)
    g_m, g_dq, g_v = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(mass0, dq0, v)
    loss = jax.jit(loss)
    h = 1e-6
    np.testing.assert_allclose(g_m, (loss(mass0 + h, dq0, v) - loss(mass0 - h, dq0, v)) / (2 * h), rtol=1e-6)
    for k in range(m.nv):
        e = jnp.zeros(m.nv).at[k].set(h)
        np.testing.assert_allclose(g_dq[k], (loss(mass0, e, v) - loss(mass0, -e, v)) / (2 * h), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(g_v[k], (loss(mass0, dq0, v + e) - loss(mass0, dq0, v - e)) / (2 * h),
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_level_schedule_vmap_and_float32():
    m = random_tree(1, n_bodies=7, joint_types=MIXED, base="free", n_arms=3, damping=True)
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    qs = jax.vmap(lambda k: ds.random_configuration(m, k))(keys)
    vs = jax.vmap(lambda k: jax.random.normal(k, (m.nv,)))(keys)
    aba = jax.jit(articulated_body_algorithm)  # one program (op by op: one compile per primitive)
    ref = jnp.stack([aba(m, q, v, jnp.zeros(m.nv)) for q, v in zip(qs, vs)])
    for s in ("levels", "levels_reduce", "levels_unrolled"):
        fd = ds.dynamics.ABA(schedule=s)
        batched = jax.jit(jax.vmap(fd, in_axes=(None, 0, 0)))(m, qs, vs)
        np.testing.assert_allclose(batched, ref, rtol=1e-10, atol=1e-10)
        m32 = m.astype(jnp.float32)
        a32 = jax.jit(fd)(m32, qs[0].astype(jnp.float32), vs[0].astype(jnp.float32))
        assert a32.dtype == jnp.float32
        assert rel(a32.astype(jnp.float64), ref[0]) < 1e-4


def test_unknown_schedule_is_refused():
    m = random_tree(3, 4, base=None, n_arms=2)
    with pytest.raises(ValueError, match="unknown rigid-tree schedule 'nope'"):
        ds.dynamics.ABA(schedule="nope").check(m)
    with pytest.raises(ValueError, match="unknown products 'nope'"):
        levels.forward_dynamics_levels("dot", "nope")
