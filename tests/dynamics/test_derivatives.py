"""Analytical derivatives of the rigid-body dynamics (:mod:`diffsim.dynamics.derivatives`) and the
``tangents="analytic"`` JVP rules built on them: against forward-mode AD of the per-body RNEA (a
second implementation of the same derivatives), central finite differences, and the default
(AD) rules of :func:`ds.forward_dynamics` / :func:`ds.inverse_dynamics`, on a branched tree of
revolute and prismatic joints with every passive term, a random fixed-base tree, a floating base
with spherical joints (the S0 robot's joint types), and the UR5 file."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.dynamics import dispatch
from diffsim.dynamics.crba import mass_matrix_crba
from diffsim.dynamics.derivatives import aba_derivatives, rnea_derivatives, supported
from diffsim.dynamics.rnea import inverse_dynamics_rigid
from diffsim.model.random import random_tree
from diffsim.scenarios import ur5_reach

ROT = np.array([[0.0, -1.0, 0.0], [0.6, 0.0, 0.8], [-0.8, 0.0, 0.6]])


def _branched():
    """Two branches off a welded plinth, revolute and prismatic joints on tilted axes, joint
    damping, springs, Coulomb friction and armature, welded bodies with mass on the links."""
    b = ds.ModelBuilder(gravity=(0.3, -0.2, -9.81))
    b.add_body("plinth", joint="fixed", pos=(0.1, 0.2, 0.3), rot=ROT, mass=5.0, inertia=(1, 2, 3))
    b.add_body("l1", "plinth", joint="revolute", axis=(0, 0, 1), pos=(0, 0, 0.4), mass=2.0, com=(0.1, 0.02, 0.0),
               inertia=(0.02, 0.03, 0.04), damping=0.1, stiffness=3.0, springref=0.2, armature=0.05)
    b.add_body("motor", "l1", joint="fixed", pos=(0.2, 0.1, -0.05), rot=ROT.T, mass=1.5, com=(0.0, 0.05, 0.01),
               inertia=(0.01, 0.02, 0.015))
    b.add_body("l2", "motor", joint="revolute", axis=(0.6, 0.0, 0.8), pos=(0.3, 0.0, 0.1), mass=1.0,
               com=(0.15, 0.0, 0.01), inertia=(0.01, 0.012, 0.005), frictionloss=0.2, friction_width=0.1)
    b.add_body("l3", "l2", joint="prismatic", axis=(1, 0, 0), pos=(0.3, 0.0, 0.0), mass=0.5, com=(0.05, 0, 0),
               inertia=(0.001, 0.002, 0.002), damping=0.3, armature=0.02)
    b.add_body("r1", "l1", joint="prismatic", axis=(0.0, 0.6, 0.8), pos=(-0.1, 0.2, 0.0), mass=0.8,
               com=(0.0, 0.03, 0.02), inertia=(0.004, 0.003, 0.002))
    b.add_body("r2", "r1", joint="revolute", axis=(0, 1, 0), pos=(0.0, 0.1, 0.2), rot=ROT, mass=0.6,
               com=(0.02, 0.0, 0.05), inertia=(0.003, 0.002, 0.004), stiffness=1.5)
    return b.build()


MODELS = {"branched": _branched,
          "random": lambda: random_tree(3, n_bodies=7, joint_types=("revolute", "prismatic"), base=None, n_arms=3,
                                        damping=True),
          "floating": lambda: random_tree(4, n_bodies=5, joint_types=("revolute", "spherical", "prismatic"), base="free",
                                          n_arms=2, damping=True),
          "ur5": lambda: ur5_reach.load_model(dtype=jnp.float64)}


def rel(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1e-300))


def _state(m, seed=0):
    """A random state; quaternions of norm 1.3 (the rotation normalises them; derivatives in the
    configuration vector's own coordinates, radial direction included)."""
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    return (1.3 * ds.random_configuration(m, k[0]), jax.random.normal(k[1], (m.nv,)),
            jax.random.normal(k[2], (m.nv,)), jax.random.normal(k[3], (m.nb, 6)))


@pytest.fixture(scope="module", params=sorted(MODELS))
def case(request):
    return request.param, MODELS[request.param]()


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_rnea_derivatives_equal_forward_mode_ad_of_the_rnea(case):
    """``∂τ/∂q``, ``∂τ/∂q̇`` and ``M`` of the world-frame pass = forward-mode AD of the per-body RNEA
    on the welded tree (and CRBA's ``M`` on the tree as built), with body forces and without."""
    name, m = case
    swept, _ = dispatch._swept(m)
    assert supported(swept)
    q, v, a, f = _state(m)
    f_swept = dispatch._swept(m, f)[1]

    @jax.jit
    def both(q, v, a, f_swept):
        out = {}
        for tag, fe in (("f", f_swept), ("0", None)):
            out["dq" + tag], out["dv" + tag], out["M" + tag] = rnea_derivatives(swept, q, v, a, fe)
            out["dq" + tag + "_ref"], out["dv" + tag + "_ref"] = jax.jacfwd(
                lambda q, v: inverse_dynamics_rigid(swept, q, v, a, fe), argnums=(0, 1))(q, v)
        out["M_ref"] = mass_matrix_crba(m, q)
        return out

    r = both(q, v, a, f_swept)
    for tag in ("f", "0"):
        assert rel(r["dq" + tag], r["dq" + tag + "_ref"]) <= 1e-12, (name, tag)
        assert rel(r["dv" + tag], r["dv" + tag + "_ref"]) <= 1e-12, (name, tag)
        assert rel(r["M" + tag], r["M_ref"]) <= 1e-12, (name, tag)


def test_aba_derivatives_equal_central_differences(case):
    """``(∂v̇/∂q, ∂v̇/∂q̇, M⁻¹)`` = central differences of ``ds.forward_dynamics`` (no AD involved):
    h = 1e-6, truncation ~h² and round-off ~eps/h bound the agreement at ~1e-8 relative."""
    name, m = case
    q, v, tau, f = _state(m, 1)
    fd = jax.jit(lambda q, v, tau: ds.forward_dynamics(m, q, v, tau, f))
    a = fd(q, v, tau)
    swept, f_swept = dispatch._swept(m, f)
    Aq, Av, Minv = jax.jit(aba_derivatives)(swept, q, v, a, f_swept)
    h = 1e-6
    for J, arg in ((Aq, 0), (Av, 1), (Minv, 2)):
        cols = []
        for e in np.eye((q, v, tau)[arg].size):  # q: the configuration vector's own coordinates
            x = [q, v, tau]
            xp, xm = list(x), list(x)
            xp[arg], xm[arg] = x[arg] + h * e, x[arg] - h * e
            cols.append((fd(*xp) - fd(*xm)) / (2 * h))
        assert rel(J, jnp.stack(cols, 1)) <= 1e-7, (name, arg)


@pytest.mark.parametrize("name", ["branched", "floating"])
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_analytic_tangents_equal_the_default_derivatives(name):
    """``tangents="analytic"``: the same values and, in forward and reverse mode, the same
    derivatives as the default rules — for state, torque and body-force tangents, for tangents of
    the model's parameters in forward and reverse mode (the inverse dynamics' JVP in those, with
    ``M⁻¹`` for the forward dynamics), and under ``vmap``. (~40 s of
    compilation per tree.) The rules are the same code for every tree; the two trees cover what
    differs between trees (welded bodies, branches, revolute and prismatic joints on tilted axes,
    every passive term; a free base and spherical joints). The matrices the rules apply are checked
    on all four trees above (central differences and the second implementation)."""
    m = MODELS[name]()
    q, v, tau, f = _state(m, 2)

    def fd(kind):
        return lambda m, q, v, tau, f: ds.forward_dynamics(m, q, v, tau, f, tangents=kind)

    def idyn(kind):
        return lambda m, q, v, a, f: ds.inverse_dynamics(m, q, v, a, f, tangents=kind)

    def grav(kind):
        return lambda m, q, v, a, f: ds.gravity_forces(m, q, tangents=kind)

    @jax.jit
    def derivatives(m, q, v, tau, f):
        out = {}
        for fn, tag in ((fd, "fd"), (idyn, "id"), (grav, "g")):
            for kind in ("ad", "analytic"):
                F = fn(kind)
                out[tag, kind, "value"] = F(m, q, v, tau, f)
                out[tag, kind, "jac"] = jax.jacfwd(F, argnums=(1, 2, 3, 4))(m, q, v, tau, f)
                out[tag, kind, "mass"] = jax.jvp(lambda mass: F(eqx_mass(m, mass), q, v, tau, f), (m.mass,),
                                                 (jnp.linspace(0.5, 1.5, m.nb),))[1]
                out[tag, kind, "grad"] = jax.grad(lambda m, q, v, tau, f: jnp.sum(jnp.sin(F(m, q, v, tau, f))),
                                                  argnums=(1, 2, 3, 4))(m, q, v, tau, f)
                # reverse mode through the model's parameters (forward dynamics: M⁻¹ applied to
                # the inverse dynamics' parameter tangent)
                out[tag, kind, "grad mass, inertia"] = jax.grad(
                    lambda mass, inertia: jnp.sum(jnp.sin(F(eqx.tree_at(lambda x: (x.mass, x.inertia), m, (mass, inertia)),
                                                            q, v, tau, f))), argnums=(0, 1))(m.mass, m.inertia)
                out[tag, kind, "vmap"] = jax.vmap(jax.jacfwd(lambda q: F(m, q, v, tau, f)))(jnp.stack([q, 0.5 * q]))
        return out

    r = derivatives(m, q, v, tau, f)
    for tag in ("fd", "id", "g"):
        for what in ("value", "jac", "mass", "grad", "grad mass, inertia", "vmap"):
            for x, y in zip(jax.tree.leaves(r[tag, "analytic", what]), jax.tree.leaves(r[tag, "ad", what])):
                assert rel(x, y) <= 1e-12, (name, tag, what)


def eqx_mass(m, mass):
    return eqx.tree_at(lambda x: x.mass, m, mass)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_other_trees_fall_back_to_the_default_derivatives():
    """A planar base (its motion subspace turns with its angle) is not handled by the analytical
    pass: the ``"analytic"`` rules give the default derivatives there; ``rnea_derivatives``
    refuses it."""
    m = random_tree(4, n_bodies=3, joint_types=("revolute",), base="planar")
    assert not supported(m)
    k = jax.random.split(jax.random.PRNGKey(3), 3)
    q, v, tau = ds.random_configuration(m, k[0]), jax.random.normal(k[1], (m.nv,)), jax.random.normal(k[2], (m.nv,))
    J = {kind: jax.jit(jax.jacfwd(lambda q, v, tau, kind=kind: ds.forward_dynamics(m, q, v, tau, tangents=kind),
                                  argnums=(0, 1, 2)))(q, v, tau) for kind in ("ad", "analytic")}
    for x, y in zip(J["analytic"], J["ad"]):
        assert rel(x, y) <= 1e-14
    with pytest.raises(ValueError, match="revolute, prismatic, spherical and free"):
        rnea_derivatives(m, q, v, tau)


def test_bad_tangents_option():
    m = _branched()
    z = jnp.zeros(m.nv)
    with pytest.raises(ValueError, match="unknown tangents 'exact'"):
        ds.forward_dynamics(m, z, z, z, tangents="exact")
    with pytest.raises(ValueError, match="unknown tangents"):
        ds.gravity_forces(m, z, tangents="fd")


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_float32_agrees_with_float64():
    """float32: the analytical Jacobians agree with the float64 ones to float32 rounding
    amplified by ``cond(M)`` (measured ~1e-5 relative on the UR5)."""
    m64 = ur5_reach.load_model(dtype=jnp.float64)
    m32 = ur5_reach.load_model(dtype=jnp.float32)
    q, v, tau, _ = _state(m64, 4)

    def jac(m, q, v, tau):
        return jax.jacfwd(lambda q, v, tau: ds.forward_dynamics(m, q, v, tau, tangents="analytic"),
                          argnums=(0, 1, 2))(q, v, tau)

    J64 = jax.jit(jac)(m64, q, v, tau)
    J32 = jax.jit(jac)(m32, *(x.astype(jnp.float32) for x in (q, v, tau)))
    assert all(x.dtype == jnp.float32 for x in J32)
    for x, y in zip(J32, J64):
        assert rel(x.astype(jnp.float64), y) <= 1e-4
