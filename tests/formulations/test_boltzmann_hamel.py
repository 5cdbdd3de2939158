"""The recursive Boltzmann–Hamel formulation (seed 000) against the default path (ABA/CRBA).

float64 comes from tests/conftest.py.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim
from diffsim import spatial as sp
from diffsim.dynamics import random_configuration
from diffsim.formulations import (
    forward_dynamics_bh,
    generalised_momentum_bh,
    kinetic_energy_bh,
    mass_matrix_bh,
)
from diffsim.formulations import boltzmann_hamel as bh
from diffsim.model import JointType, ModelBuilder, ModelError
from diffsim.model.random import random_tree

JOINTS = ("spherical", "revolute", "fixed")
# eager on purpose: the tests use many distinct topologies, and each would recompile under jit
fd_aba = diffsim.forward_dynamics
fd_bh = eqx.filter_jit(forward_dynamics_bh)  # one program per tree (op by op: hundreds of one-primitive compiles)


def rel(a, b):
    return float(jnp.linalg.norm(a - b) / jnp.linalg.norm(b))


def random_state(model, seed, scale=1.0):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    q = random_configuration(model, k[0], scale=2.0)
    v = scale * jax.random.normal(k[1], (model.nv,), model.dtype)
    tau = 5.0 * jax.random.normal(k[2], (model.nv,), model.dtype)
    f_ext = 3.0 * jax.random.normal(k[3], (model.nb, 6), model.dtype)
    return q, v, tau, f_ext


def tree(seed, n_bodies=7, n_arms=3, base="free"):
    g = np.random.default_rng(100 + seed).normal(size=3) * 5.0
    return random_tree(seed, n_bodies, joint_types=JOINTS, base=base, n_arms=n_arms, gravity=g, damping=True)


def two_dof_model():
    """Free base; arm 1: a 2-DOF (universal) joint as two revolutes with a massless body
    between them, then a spherical wrist; arm 2: a revolute elbow chain."""
    b = ModelBuilder(gravity=(0.5, -1.0, -9.81))
    b.add_body("base", joint="free", mass=20.0, com=[0.05, -0.02, 0.1], inertia=[3.0, 2.5, 2.0])
    b.add_body("u_x", "base", joint="revolute", axis=[1, 0, 0], pos=[0.3, 0.1, 0.2], damping=0.2)
    b.add_body("u_y", "u_x", joint="revolute", axis=[0, 1, 0], mass=2.0, com=[0.0, 0.0, 0.4],
               inertia=[0.2, 0.21, 0.02], damping=0.1, armature=0.05)
    b.add_body("wrist", "u_y", joint="spherical", pos=[0, 0, 0.8], quat=[0.9, 0.1, -0.3, 0.2],
               mass=1.0, com=[0.1, 0.0, 0.2], inertia=[0.05, 0.04, 0.03], armature=0.02)
    b.add_body("e1", "base", joint="revolute", axis=[0, 0.6, 0.8], pos=[-0.3, 0.0, 0.1],
               mass=1.5, com=[-0.3, 0.0, 0.0], inertia=[0.01, 0.1, 0.1])
    b.add_body("e2", "e1", joint="revolute", axis=[0, 0, 1], pos=[-0.6, 0.0, 0.0],
               mass=1.0, com=[-0.3, 0.0, 0.0], inertia=[0.01, 0.08, 0.08])
    return b.build()


S0_LINK = dict(mass=61.27, com=[0.0, 0.0, 0.5], inertia=[5.144, 5.144, 0.076])


def s0_dual_arm():
    """SPEC S0 / seed 000 Table 1: base 400 kg, diag(900); two arms of two links, spherical
    joints, mounted at ±0.5 m on x with the link axis (body z) pointing outwards; no gravity."""
    c, s = np.cos(np.pi / 4), np.sin(np.pi / 4)
    b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body("base", joint="free", mass=400.0, inertia=[900.0, 900.0, 900.0])
    for arm, sign in ((1, 1.0), (2, -1.0)):
        b.add_body(f"a{arm}l1", "base", joint="spherical", pos=[sign * 0.5, 0, 0],
                   quat=[c, 0.0, sign * s, 0.0], **S0_LINK)
        b.add_body(f"a{arm}l2", f"a{arm}l1", joint="spherical", pos=[0, 0, 1.0], **S0_LINK)
    return b.build()


def s0_tip_forces(model):
    """The paper's F2(1) = [1, −1, 1] N, F2(2) = [2, −2, −2] N at the distal ends (link-2 body
    frame), as spatial forces at the body origins."""
    f = np.zeros((model.nb, 6))
    tip = np.array([0.0, 0.0, 1.0])
    for name, F in (("a1l2", [1.0, -1.0, 1.0]), ("a2l2", [2.0, -2.0, -2.0])):
        i = model.topology.body_index(name)
        f[i] = np.concatenate([np.cross(tip, F), F])
    return jnp.asarray(f)


# --------------------------------------------------------------------------------------
# agreement with the default path
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,n_arms", [(0, 2), (1, 3), (2, 4), (4, 3)])
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_forward_dynamics_matches_aba_on_random_trees(seed, n_arms):
    model = tree(seed, n_bodies=8, n_arms=n_arms)
    assert JointType.SPHERICAL in model.topology.joint_types[1:]
    q, v, tau, f_ext = random_state(model, seed)
    expected = fd_aba(model, q, v, tau, f_ext)
    assert rel(fd_bh(model, q, v, tau, f_ext), expected) <= 1e-10
    # velocity terms and gravity alone, so the loads cannot hide an error in them
    assert rel(fd_bh(model, q, v), fd_aba(model, q, v)) <= 1e-10


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_fixed_base_root_matches_aba():
    for seed in (7,):
        model = tree(seed, n_bodies=6, n_arms=2, base=None)
        assert model.topology.joint_types[0] is JointType.REVOLUTE
        q, v, tau, f_ext = random_state(model, seed)
        assert rel(fd_bh(model, q, v, tau, f_ext), fd_aba(model, q, v, tau, f_ext)) <= 1e-10


def test_two_dof_joint_from_two_revolutes():
    model = two_dof_model()
    assert model.mass[model.topology.body_index("u_x")] == 0.0
    q, v, tau, f_ext = random_state(model, 11)
    assert rel(fd_bh(model, q, v, tau, f_ext), fd_aba(model, q, v, tau, f_ext)) <= 1e-10


def test_s0_dual_arm():
    model = s0_dual_arm()
    assert model.nv == 6 + 4 * 3
    f_ext = s0_tip_forces(model)
    q0, v0 = diffsim.neutral_configuration(model), jnp.zeros(model.nv)
    a0 = fd_aba(model, q0, v0, None, f_ext)
    assert rel(fd_bh(model, q0, v0, None, f_ext), a0) <= 1e-10
    # the base starts accelerating along the net applied force [3, −3, −1] N
    F_net = jnp.array([3.0, -3.0, -1.0])
    assert float(jnp.dot(a0[:3], F_net)) > 0.0
    q, v, tau, _ = random_state(model, 12)
    assert rel(fd_bh(model, q, v, tau, f_ext), fd_aba(model, q, v, tau, f_ext)) <= 1e-10


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_mass_matrix_momentum_and_energy_match_default_path():
    model = tree(3, n_bodies=7, n_arms=3)
    q, v, _, _ = random_state(model, 3)
    M = mass_matrix_bh(model, q)
    np.testing.assert_allclose(M, diffsim.mass_matrix(model, q), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(generalised_momentum_bh(model, q, v), M @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kinetic_energy_bh(model, q, v), diffsim.kinetic_energy(model, q, v), rtol=1e-12)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_E_recursion_is_the_configuration_derivative_of_K():
    """The A/B recursions (eqs 48–53) give ∂K/∂π_i: compare with forward-mode derivatives of
    the default path's kinetic energy along q_i ⊗ exp(ε e_k) (spherical) and θ_i + ε (revolute)."""
    model = tree(4, n_bodies=7, n_arms=2)
    t = model.topology
    q, v, _, _ = random_state(model, 4)
    C = bh._rotations(model, q)
    Om, V = bh._velocities(model, C, v)
    rotational = [i for i, j in enumerate(t.joint_types) if j in (JointType.SPHERICAL, JointType.REVOLUTE)]
    P_pi = bh._rotation_partials(model, C, Om, V)
    dK_dpi = bh._contract(P_pi, bh._body_momenta(model, Om, V), rotational, lambda j: 3, model.dtype)
    dK_dpi = {i: dK_dpi[3 * k : 3 * k + 3] for k, i in enumerate(rotational)}
    checked = 0
    for i, jtype in enumerate(t.joint_types):
        sl = t.q_slice(i)
        if jtype is JointType.SPHERICAL:
            for k in range(3):
                e = jnp.zeros(3).at[k].set(1.0)
                move = lambda eps: q.at[sl].set(sp.quat_mul(q[sl], sp.quat_exp(eps * e)))  # noqa: E731
                _, dK = jax.jvp(lambda eps: diffsim.kinetic_energy(model, move(eps), v), (0.0,), (1.0,))
                np.testing.assert_allclose(dK_dpi[i][k], dK, rtol=1e-11, atol=1e-11)
                checked += 1
        elif jtype is JointType.REVOLUTE:
            _, dK = jax.jvp(lambda eps: diffsim.kinetic_energy(model, q.at[sl].add(eps), v), (0.0,), (1.0,))
            np.testing.assert_allclose(model.axis[i] @ dK_dpi[i], dK, rtol=1e-11, atol=1e-11)
            checked += 1
    assert checked >= 3


# --------------------------------------------------------------------------------------
# transformations: grad, jit, vmap, float32
# --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_gradient_wrt_parameters_matches_aba():
    """Reverse mode through the whole formulation (jvp included) against reverse mode through
    ABA, for the parameters that do not change the configuration manifold."""
    model = two_dof_model()
    q, v, tau, f_ext = random_state(model, 21)
    w = jax.random.normal(jax.random.PRNGKey(22), (model.nv,))
    names = ("mass", "inertia", "com", "gravity", "damping", "armature")
    select = lambda m: tuple(getattr(m, n) for n in names)  # noqa: E731

    def loss(fd):
        return lambda params: jnp.dot(w, fd(eqx.tree_at(select, model, params), q, v, tau, f_ext)) ** 2

    g_bh = jax.grad(loss(forward_dynamics_bh))(select(model))
    g_aba = jax.grad(loss(diffsim.forward_dynamics))(select(model))
    for name, a, b in zip(names, g_bh, g_aba):
        if name == "inertia":  # only the symmetric part of an inertia is a parameter
            a, b = a + jnp.swapaxes(a, -1, -2), b + jnp.swapaxes(b, -1, -2)
        assert float(jnp.linalg.norm(b)) > 0.0, name
        assert rel(a, b) <= 1e-8, name


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_jit_and_vmap_give_the_same_numbers():
    model = tree(4, n_bodies=2, n_arms=2)
    assert model.nv > 6
    states = [random_state(model, s) for s in range(3)]
    q, v, tau, f_ext = (jnp.stack(x) for x in zip(*states))
    eager = jnp.stack([forward_dynamics_bh(model, *s) for s in states])
    batched_fn = jax.jit(jax.vmap(forward_dynamics_bh, in_axes=(None, 0, 0, 0, 0)))
    batched = batched_fn(model, q, v, tau, f_ext)
    jitted = jnp.stack([batched_fn(model, *(x[None] for x in s))[0] for s in states])
    np.testing.assert_allclose(jitted, eager, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(batched, eager, rtol=1e-12, atol=1e-12)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_float32():
    model = tree(2, n_bodies=6, n_arms=3)
    q, v, tau, f_ext = random_state(model, 2, scale=0.5)
    expected = fd_aba(model, q, v, tau, f_ext)
    f32 = jnp.float32
    out = fd_bh(model.astype(f32), q.astype(f32), v.astype(f32), tau.astype(f32), f_ext.astype(f32))
    assert out.dtype == f32
    assert rel(out, expected) <= 1e-4


# --------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "root,child,bad",
    [("free", "prismatic", "slider"), ("planar", "revolute", "base"), ("free", "free", "slider")],
)
def test_unsupported_joints_are_refused_naming_the_body(root, child, bad):
    b = ModelBuilder()
    b.add_body("base", joint=root, mass=1.0, inertia=[1.0, 1.0, 1.0])
    b.add_body("slider", "base", joint=child, mass=1.0, inertia=[0.1, 0.1, 0.1])
    model = b.build()
    q, v = diffsim.neutral_configuration(model), jnp.zeros(model.nv)
    with pytest.raises(ModelError, match=f"body '{bad}'.*'{(root if bad == 'base' else child)}'"):
        forward_dynamics_bh(model, q, v)
