"""Builder validation (every error names the offending body) and named parameters."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.model.random import random_tree


def two_link(**override):
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("base", joint="free", mass=2.0, inertia=[0.1, 0.1, 0.1])
    kw = dict(parent="base", joint="revolute", axis=[0, 0, 1], pos=[0.5, 0, 0], mass=1.0,
              com=[0.25, 0, 0], inertia=[0.01, 0.02, 0.02], damping=0.1)
    kw.update(override)
    b.add_body("link", **kw)
    return b


@pytest.mark.parametrize(
    "override, message",
    [
        (dict(parent="nope"), "body 'link': unknown parent 'nope'"),
        (dict(mass=-1.0), "body 'link': mass must be finite and non-negative"),
        (dict(inertia=[1.0, -0.1, 1.0]), "body 'link': inertia is not positive definite"),
        (dict(inertia=[0.01, 0.01, 0.05]), "body 'link': principal moments"),
        (dict(inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), "body 'link': inertia is not symmetric"),
        (dict(joint="helical"), "unsupported joint type 'helical'"),
        (dict(axis=[0, 0, 2.0]), "body 'link': joint axis must be a unit vector"),
        (dict(com=[0.0, 0.0]), "body 'link': com must have shape (3,)"),
        (dict(pos=[0, 0, 0, 0]), "body 'link': pos must have shape (3,)"),
        (dict(inertia=np.ones((2, 2))), "body 'link': inertia must be a 3-vector"),
        (dict(quat=[0, 0, 0, 0]), "body 'link': zero quaternion"),
        (dict(mass=float("nan")), "body 'link': mass must be finite"),
    ],
)
def test_builder_errors_name_the_body(override, message):
    with pytest.raises(ds.ModelError) as e:
        two_link(**override).build()
    assert message in str(e.value)


def test_cycle_and_duplicate_and_massless_errors():
    b = ds.ModelBuilder()
    b.add_body("a", parent="c", joint="revolute", mass=1, inertia=[1, 1, 1])
    b.add_body("b", parent="a", joint="revolute", mass=1, inertia=[1, 1, 1])
    b.add_body("c", parent="b", joint="revolute", mass=1, inertia=[1, 1, 1])
    with pytest.raises(ds.ModelError, match=r"forms a cycle \(a -> c -> b -> a\)|forms a cycle"):
        b.build()
    b = ds.ModelBuilder()
    b.add_body("a", joint="revolute", mass=1, inertia=[1, 1, 1])
    with pytest.raises(ds.ModelError, match="body 'a': a body with this name already exists"):
        b.add_body("a", joint="revolute", mass=1, inertia=[1, 1, 1])
    b = ds.ModelBuilder()
    b.add_body("ghost", joint="revolute", mass=0.0, inertia=[0, 0, 0])
    with pytest.raises(ds.ModelError, match="body 'ghost': its revolute joint moves a subtree with zero mass"):
        b.build()


def test_topology_order_and_tables():
    b = ds.ModelBuilder()
    b.add_body("tip", parent="mid", joint="spherical", mass=1, inertia=[1, 1, 1])  # parent added later
    b.add_body("root", joint="free", mass=1, inertia=[1, 1, 1])
    b.add_body("mid", parent="root", joint="planar", mass=1, inertia=[1, 1, 1])
    m = b.build()
    t = m.topology
    assert t.body_names == ("root", "mid", "tip")
    assert t.parent == (-1, 0, 1)
    assert (t.nq, t.nv) == (7 + 3 + 4, 6 + 3 + 3)
    assert t.quat_q_indices == ((3, 7), (10, 14))
    assert hash(t) == hash(b.build().topology) and t == b.build().topology


def test_param_names_get_set():
    m = two_link().build()
    names = ds.param_names(m)
    for n in ["body.link.mass", "body.link.com", "body.link.inertia", "joint.link.damping", "joint.link.axis", "gravity"]:
        assert n in names
    assert float(ds.get_param(m, "body.link.mass")) == 1.0
    m2 = ds.set_params(m, {"body.link.mass": 3.0, "joint.link.damping": [0.5], "gravity": [0, 0, -1.62]})
    assert float(ds.get_param(m2, "body.link.mass")) == 3.0
    assert float(ds.get_param(m, "body.link.mass")) == 1.0  # functional update
    np.testing.assert_allclose(ds.get_param(m2, "joint.link.damping"), [0.5])
    np.testing.assert_allclose(m2.gravity, [0, 0, -1.62])
    with pytest.raises(KeyError, match="unknown parameter 'body.nobody.mass'"):
        ds.get_param(m, "body.nobody.mass")
    with pytest.raises(KeyError, match="unknown parameter 'joint.base.axis'"):
        ds.get_param(m, "joint.base.axis")  # free joints have no axis
    with pytest.raises(ValueError, match="has shape"):
        ds.set_params(m, {"body.link.com": [1.0, 2.0]})


def test_named_params_under_jit_grad_vmap():
    m = two_link().build()
    q = ds.random_configuration(m, jax.random.PRNGKey(0))
    v = jnp.ones(m.nv)

    def kinetic(mass):
        return ds.kinetic_energy(ds.set_params(m, {"body.link.mass": mass}), q, v)

    g = jax.jit(jax.grad(kinetic))(2.0)
    h = 1e-6
    fd = (kinetic(2.0 + h) - kinetic(2.0 - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-8)
    masses = jnp.array([1.0, 2.0, 3.0])
    batched = jax.vmap(kinetic)(masses)
    np.testing.assert_allclose(batched, [kinetic(x) for x in masses], rtol=1e-14)
    # the same under vmap of get_param
    got = jax.vmap(lambda x: ds.get_param(ds.set_params(m, {"body.link.mass": x}), "body.link.mass"))(masses)
    np.testing.assert_array_equal(got, masses)


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_astype_float32_runs():
    m = random_tree(0, 4).astype(jnp.float32)
    q = ds.random_configuration(m, jax.random.PRNGKey(1))
    a = ds.forward_dynamics(m, q, jnp.ones(m.nv, jnp.float32))
    assert a.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(a)))


def _one_body(joint, inertia, com=(0.0, 0.0, 0.0), child=False):
    b = ds.ModelBuilder()
    b.add_body("p", joint=joint, axis=(0, 0, 1), mass=2.0, com=com, inertia=inertia)
    if child:  # a massive body further down, on its own joint
        b.add_body("c", parent="p", joint="revolute", axis=(0, 1, 0), pos=(0.3, 0.0, 0.0), mass=1.0, inertia=(1, 1, 1))
    return b.build()


# joint, COM, inertia of size ε: as ε → 0 the joint can move the body without moving mass
SINGULAR = [("revolute", (0.0, 0.0, 0.2), lambda e: (e, e, e)),  # a point mass on the axis
            ("revolute", (0.0, 0.0, 0.2), lambda e: (1.0, 1.0, e)),  # a line mass about its own line (z)
            ("spherical", (0.3, 0.0, 0.0), lambda e: (e, e, e)),  # a point mass off the centre: spin about the line to it
            ("free", (0.0, 0.0, 0.0), lambda e: (e, e, e)),
            ("planar", (0.3, 0.1, 0.0), lambda e: (e, e, e))]


@pytest.mark.parametrize("joint, com, inertia", SINGULAR)
def test_a_leaf_that_can_move_without_moving_mass_is_refused(joint, com, inertia):
    """The mass matrix of these one-body models tends to singular as a moment ε → 0 (its least
    eigenvalue ∝ ε, computed by the CRBA), and with ε = 0 the builder refuses the body with the
    reason instead of a model whose every run fails as non-finite."""
    lam = [float(np.linalg.eigvalsh(np.asarray(ds.mass_matrix(m, ds.neutral_configuration(m))))[0])
           for m in (_one_body(joint, inertia(eps), com) for eps in (1e-4, 1e-6))]
    assert lam[0] > 0 and lam[1] / lam[0] == pytest.approx(1e-2, rel=1e-3)  # ε a + O(ε²)
    with pytest.raises(ds.ModelError, match="body 'p': its .* joint can move the body without moving any of its mass"):
        _one_body(joint, inertia(0.0), com)


@pytest.mark.parametrize("joint, com, child", [("revolute", (0.3, 0.0, 0.0), False),  # the mass off the axis
                                                ("revolute", (0.0, 0.0, 0.2), True),  # a massive child swings
                                                ("prismatic", (0.0, 0.0, 0.0), False),
                                                ("spherical", (0.0, 0.0, 0.0), True)])
def test_point_masses_that_move_are_accepted(joint, com, child):
    m = _one_body(joint, (0.0, 0.0, 0.0), com, child=child)
    assert np.linalg.eigvalsh(np.asarray(ds.mass_matrix(m, ds.neutral_configuration(m))))[0] > 1e-3
