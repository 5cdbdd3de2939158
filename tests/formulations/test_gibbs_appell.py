"""Seed 001's recursive Gibbs–Appell formulation (planar chains of Timoshenko links) against
diffsim's flexible-tree dynamics (articulated-body sweeps and the mass matrix)."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.flexible import beam
from diffsim.dynamics.flexible import articulated_flexible, mass_matrix_flexible
from diffsim.formulations.gibbs_appell import (
    GibbsAppellError,
    check_planar_chain,
    forward_dynamics_gibbs_appell,
    from_paper_order,
    gibbs_appell_equations,
    mass_matrix_gibbs_appell,
    paper_permutation,
    to_paper_order,
)


class TimoPoly(eqx.Module):
    """Polynomial shapes ``W = η^k`` with a Timoshenko-like section rotation ``Θ ≠ W′``
    (``Θ = W′ + c (1 + k) η²``: the shear strain ``Γ = W′ − Θ`` is nonzero)."""

    k0: int = eqx.field(static=True)
    n: int = eqx.field(static=True)
    c: float = eqx.field(static=True, default=0.3)

    def fields(self, eta):
        eta = jnp.asarray(eta)[..., None]
        k = jnp.arange(self.k0, self.k0 + self.n)
        W = eta**k
        dW = k * eta ** (k - 1)
        ddW = k * (k - 1) * eta ** jnp.maximum(k - 2, 0) * (k >= 2)
        Th = dW + self.c * (1 + k) * eta**2
        dTh = ddW + 2.0 * self.c * (1 + k) * eta
        return dict(W=W, dW=dW, ddW=ddW, Theta=Th, dTheta=dTh)


def _beam(L, stiffening=True, **kw):
    args = dict(
        EI_z=40.0,
        kAG_y=800.0,
        modes_y=TimoPoly(2, 2),
        rotary_inertia=(1e-3, 5e-4, 7e-4),
        air_damping=0.05,
        kelvin_voigt=0.02,
        I_z=1e-3,
        tip_mass=0.2,
        tip_inertia=(0.0, 0.0, 2e-3),
        n_quad=8,
        stiffening=stiffening,
    )
    args.update(kw)
    return beam(L, 1.5, **args)


def free_chain():
    """(a) The paper's system: three flexible links, the first free in the plane."""
    b = ds.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("l1", None, joint="planar", mass=0.3, com=(0.1, 0.02, 0.0), inertia=(0.01, 0.01, 0.02),
               flex=_beam(1.0), damping=(0.1, 0.2, 0.3), armature=(0.0, 0.0, 0.01))
    b.add_body("l2", "l1", joint="revolute", axis=(0, 0, 1), pos=(0.05, 0.02, 0.0), mass=0.2,
               com=(0.05, 0.0, 0.0), inertia=(0.01, 0.01, 0.01), flex=_beam(0.8), damping=0.1, armature=0.02)
    b.add_body("l3", "l2", joint="revolute", axis=(0, 0, -1), flex=_beam(0.6))
    return b.build()


def fixed_two_link():
    """(b) Fixed base, rigid first link, flexible second link (no stiffening)."""
    c, s = np.cos(0.3), np.sin(0.3)
    b = ds.ModelBuilder(gravity=(0.4, -9.81, 0.0))
    b.add_body("hub", None, joint="revolute", axis=(0, 0, 1), mass=1.2, com=(0.35, 0.03, 0.0),
               inertia=(0.02, 0.03, 0.05), damping=0.15)
    b.add_body("arm", "hub", joint="revolute", axis=(0, 0, 1), pos=(0.7, 0.05, 0.0),
               rot=[[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]], mass=0.1, inertia=(1e-3, 1e-3, 1e-3),
               flex=_beam(0.9, stiffening=False), armature=0.05)
    return b.build()


MODELS = {"free_chain": free_chain, "fixed_two_link": fixed_two_link}


@functools.lru_cache(maxsize=None)
def _results(name):
    """Both formulations on 3 random states (one jit per model)."""
    model = MODELS[name]()
    check_planar_chain(model)  # value checks run here, outside jit
    keys = jax.random.split(jax.random.PRNGKey(7), 3)
    n = 3
    q = 0.5 * jax.random.normal(keys[0], (n, model.nq))
    v = jax.random.normal(keys[1], (n, model.nv))
    tau = jax.random.normal(keys[2], (n, model.nv))

    @jax.jit
    def run(model, q, v, tau):
        def one(q, v, tau):
            return (
                articulated_flexible(model, q, v, tau)[0],
                forward_dynamics_gibbs_appell(model, q, v, tau),
                mass_matrix_flexible(model, q),
                mass_matrix_gibbs_appell(model, q),
                *gibbs_appell_equations(model, q, v, tau, order="paper"),
            )

        return jax.vmap(one)(q, v, tau)

    out = run(model, q, v, tau)
    return model, q, v, tau, [np.asarray(o) for o in out]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_forward_dynamics_matches_articulated(name):
    *_, (a_ref, a_ga, *_) = _results(name)
    assert np.all(np.isfinite(a_ga))
    err = np.abs(a_ga - a_ref).max() / np.abs(a_ref).max()
    print(f"{name}: max relative difference {err:.2e}")
    assert err <= 1e-10, err


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
@pytest.mark.parametrize("name", list(MODELS))
def test_mass_matrix_symmetric_and_equal(name):
    *_, (_, _, M_ref, M_ga, *_) = _results(name)
    scale = np.abs(M_ref).max()
    assert np.abs(M_ga - np.swapaxes(M_ga, -1, -2)).max() <= 1e-12 * scale
    assert np.abs(M_ga - M_ref).max() <= 1e-10 * scale
    assert np.all(np.linalg.eigvalsh(M_ga) > 0)


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_paper_order():
    model, q, v, tau, (a_ref, _, _, M_ga, I_p, R_p) = _results("free_chain")
    perm = paper_permutation(model)
    t = model.topology
    # Z = [q1, δ11, δ12, q2, δ21, δ22, q3, δ31, δ32, X1, X2]
    expected = [2, 5, 6, 3, 7, 8, 4, 9, 10, 0, 1]
    assert perm.tolist() == expected and t.nv == 11
    np.testing.assert_array_equal(from_paper_order(model, to_paper_order(model, q[0])), q[0])
    # eq 15 in the paper's order: I(Z) is the reordered mass matrix, I Z̈ = R the reordered accelerations
    np.testing.assert_allclose(I_p, M_ga[:, perm][:, :, perm], rtol=0, atol=1e-13 * np.abs(M_ga).max())
    Zdd = np.linalg.solve(I_p, R_p[..., None])[..., 0]
    np.testing.assert_allclose(Zdd, a_ref[:, perm], rtol=0, atol=1e-10 * np.abs(a_ref).max())
    # X1, X2 are the planar joint's x, y; q1 its angle
    np.testing.assert_array_equal(to_paper_order(model, q[0])[-2:], q[0][:2])


def _chain(second=None, **body1):
    b = ds.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("root", None, joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1))
    kw = dict(joint="revolute", axis=(0, 0, 1), pos=(1.0, 0.0, 0.0), mass=0.5, inertia=(0.1, 0.1, 0.1))
    kw.update(body1)
    b.add_body("link", "root", **kw)
    if second is not None:
        b.add_body("extra", second, joint="revolute", axis=(0, 0, 1), mass=0.5, inertia=(0.1, 0.1, 0.1))
    return b.build()


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: _chain(flex=_beam(1.0, EI_y=30.0, I_y=1e-3, modes_z=TimoPoly(2, 1))), r"body 1 \('link'\).*out-of-plane"),
        (lambda: _chain(flex=_beam(1.0, GJ=30.0, modes_torsion=TimoPoly(1, 1))), r"body 1 \('link'\).*torsion"),
        (lambda: _chain(axis=(0, 1, 0)), r"body 1 \('link'\).*not ±z"),
        (lambda: _chain(pos=(1.0, 0.0, 0.2)), r"body 1 \('link'\).*out-of-plane \(z\) offset"),
        (lambda: _chain(rot=[[1, 0, 0], [0, 0, -1], [0, 1, 0]]), r"body 1 \('link'\).*rotation about z"),
        (lambda: _chain(joint="prismatic", axis=(1, 0, 0)), r"body 1 \('link'\).*'prismatic'"),
        (lambda: _chain(second="root"), r"body 2 \('extra'\).*serial chain"),
    ],
)
def test_clear_errors(build, match):
    model = build()
    with pytest.raises(GibbsAppellError, match=match):
        forward_dynamics_gibbs_appell(model, jnp.zeros(model.nq), jnp.zeros(model.nv))
