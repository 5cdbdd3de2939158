"""Fixed joints welded (:mod:`diffsim.dynamics.welded`): the public algorithms sweep the tree with
its fixed bodies merged into their moving hosts; they must give what the per-body algorithms give
on the tree as built — accelerations, inverse dynamics, mass matrix, forces on fixed bodies,
derivatives with respect to a fixed body's inertia and placement — to rounding."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.dynamics import dispatch
from diffsim.dynamics.aba import articulated_body_algorithm
from diffsim.dynamics.crba import mass_matrix_crba
from diffsim.dynamics.rnea import inverse_dynamics_rigid
from diffsim.dynamics.welded import weld_plan
from diffsim.model.random import random_tree

ROT = np.array([[0.0, -1.0, 0.0], [0.6, 0.0, 0.8], [-0.8, 0.0, 0.6]])  # a rotation, no symmetry


def _handmade():
    """A base welded to the world (with mass), an arm whose links carry welded bodies with mass,
    a chain of two welded bodies, a moving body below a welded one, and a massless tool."""
    b = ds.ModelBuilder()
    b.add_body("plinth", joint="fixed", pos=(0.1, 0.2, 0.3), rot=ROT, mass=5.0, com=(0.1, 0, 0), inertia=(1, 2, 3))
    b.add_body("l1", "plinth", joint="revolute", axis=(0, 0, 1), pos=(0, 0, 0.4), mass=2.0, com=(0.1, 0.02, 0.0),
               inertia=(0.02, 0.03, 0.04), damping=0.1)
    b.add_body("motor", "l1", joint="fixed", pos=(0.2, 0.1, -0.05), rot=ROT.T, mass=1.5, com=(0.0, 0.05, 0.01),
               inertia=(0.01, 0.02, 0.015))
    b.add_body("cover", "motor", joint="fixed", pos=(0.0, 0.1, 0.0), rot=ROT, mass=0.3, com=(0.02, 0, 0),
               inertia=(0.001, 0.002, 0.003))
    b.add_body("l2", "cover", joint="revolute", axis=(0.6, 0.0, 0.8), pos=(0.3, 0.0, 0.1), mass=1.0,
               com=(0.15, 0.0, 0.01), inertia=(0.01, 0.012, 0.005))
    b.add_body("l3", "l2", joint="prismatic", axis=(1, 0, 0), pos=(0.3, 0.0, 0.0), mass=0.5, com=(0.05, 0, 0),
               inertia=(0.001, 0.002, 0.002))
    b.add_body("tool", "l3", joint="fixed", pos=(0.1, 0.0, 0.0))
    return b.build()


MODELS = {"handmade": _handmade,
          "random": lambda: random_tree(5, n_bodies=8, joint_types=("revolute", "prismatic", "spherical", "fixed"),
                                        base="free", n_arms=3, damping=True)}


def _state(m, seed=0):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    return (ds.random_configuration(m, k[0]), jax.random.normal(k[1], (m.nv,)), jax.random.normal(k[2], (m.nv,)),
            jax.random.normal(k[3], (m.nb, 6)))


def rel(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1e-300))


@pytest.fixture(scope="module", params=sorted(MODELS))
def case(request):
    m = MODELS[request.param]()
    plan = weld_plan(m.topology)
    assert plan is not None and len(plan.keep) < m.nb  # something is welded
    return request.param, m


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_welded_tree_equals_the_tree_as_built(case):
    name, m = case
    q, v, tau, f = _state(m)

    @jax.jit
    def both(m, q, v, tau, f):
        a_ref = articulated_body_algorithm(m, q, v, tau, f)  # the per-body ABA on the tree as built
        return dict(a=ds.forward_dynamics(m, q, v, tau, f), a_ref=a_ref,
                    a0=ds.forward_dynamics(m, q, v, tau), a0_ref=articulated_body_algorithm(m, q, v, tau, None),
                    tau=ds.inverse_dynamics(m, q, v, a_ref, f), tau_ref=inverse_dynamics_rigid(m, q, v, a_ref, f),
                    M=ds.mass_matrix(m, q), M_ref=mass_matrix_crba(m, q))

    r = both(m, q, v, tau, f)
    for k in ("a", "a0", "tau", "M"):
        assert rel(r[k], r[k + "_ref"]) <= 1e-12, (name, k)
    # the forces on welded bodies matter (they are moved to the hosts, not dropped)
    host_of_fixed = [i for i, h in enumerate(weld_plan(m.topology).host)
                     if h >= 0 and m.topology.joint_types[i] is ds.JointType.FIXED]
    assert host_of_fixed
    assert rel(r["a"], r["a0"]) > 1e-3


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_welded_derivatives(case):
    """Forward mode through the welded model (its inertia merge, composed placements, moved
    forces) equals reverse mode and central differences, for the parameters of welded bodies."""
    name, m = case
    q, v, tau, f = _state(m, 1)
    fixed = [m.topology.body_names[i] for i, h in enumerate(weld_plan(m.topology).host)
             if h >= 0 and m.topology.joint_types[i] is ds.JointType.FIXED]
    names = [f"body.{fixed[0]}.mass", f"body.{fixed[0]}.com[1]", f"body.{fixed[0]}.pos[0]"]
    p0 = jnp.asarray([float(ds.get_param(m, n)) for n in names])

    def a_of(p):
        mm = ds.set_params(m, dict(zip(names, p)))
        return ds.forward_dynamics(mm, q, v, tau, f)

    J_fwd = jax.jit(jax.jacfwd(a_of))(p0)
    J_rev = jax.jit(jax.jacrev(a_of))(p0)
    h = 1e-6
    J_fd = jnp.stack([(a_of(p0.at[i].add(h)) - a_of(p0.at[i].add(-h))) / (2 * h) for i in range(len(names))], 1)
    assert rel(J_rev, J_fwd) <= 1e-12
    assert rel(J_fd, J_fwd) <= 1e-7
    assert float(jnp.max(jnp.abs(J_fwd))) > 1e-3  # the welded bodies' parameters do act


def test_nothing_to_weld_is_the_same_model():
    m = random_tree(2, n_bodies=3, joint_types=("revolute",), base="free")
    assert weld_plan(m.topology) is None
    q, v, tau, f = _state(m)
    a = jax.jit(ds.forward_dynamics)(m, q, v, tau, f)
    assert rel(a, jax.jit(articulated_body_algorithm)(m, q, v, tau, f)) <= 1e-12


def test_switch_off_sweeps_the_tree_as_built(monkeypatch):
    m = _handmade()
    q, v, tau, f = _state(m)
    monkeypatch.setattr(dispatch, "WELD_FIXED", False)
    a = jax.jit(lambda *x: ds.forward_dynamics(*x))(m, q, v, tau, f)
    assert rel(a, jax.jit(articulated_body_algorithm)(m, q, v, tau, f)) <= 1e-12
