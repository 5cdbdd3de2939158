"""diffsim.identify on a free-floating system (issue 14, item 3, small version of
experiments/identify_s0_inertia.py): link inertias from base motion alone. With planar motion
the moments about the in-plane axes are invisible and the verdict must name them; a second
experiment with a tumbling base determines them, truth inside the 95 % intervals."""

import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim import identify as idf

T = np.linspace(0.0, 3.0, 31)
SIGMA = 1e-5  # m for the base position, and for the base rotation-matrix entries
TRUE = {"body.rod.mass": 2.0, "body.rod.inertia[0,0]": 0.02, "body.rod.inertia[1,1]": 0.1,
        "body.rod.inertia[2,2]": 0.1}
# 25–30 % off, a physically consistent body (triangle inequality holds)
START = {"body.rod.mass": 2.6, "body.rod.inertia[0,0]": 0.014, "body.rod.inertia[1,1]": 0.125,
         "body.rod.inertia[2,2]": 0.125}
IN_PLANE_INVISIBLE = {"body.rod.inertia[0,0]", "body.rod.inertia[1,1]"}


def spacecraft():
    """A free-floating base (no gravity) carrying a rod on a revolute joint about the base z
    axis; the rod lies along its body x axis (I_xx is its small axial moment)."""
    b = ds.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body("base", joint="free", mass=10.0, inertia=(1.0, 1.2, 1.4))
    b.add_body("rod", "base", joint="revolute", joint_name="hinge", axis=[0, 0, 1], pos=[0.3, 0, 0], mass=2.0,
               com=[0.4, 0, 0], inertia=(0.02, 0.1, 0.1))
    return b.build()


def tau(t, q, v):
    return jnp.zeros(7).at[6].set(2.0 * jnp.sin(3.0 * t))  # free joint 6 DOF, then the hinge


def measure(system, seed, name, overrides=None):
    s = ds.set_params(system, overrides) if overrides else system
    tr = ds.simulate(s)
    R, p = tr.body_poses()
    rng = np.random.default_rng(seed)
    data = {"body.base.pos": np.asarray(p[:, 0]), "body.base.rot": np.asarray(R[:, 0]).reshape(T.size, 9)}
    data = {k: y + SIGMA * rng.standard_normal(y.shape) for k, y in data.items()}
    return idf.Experiment(T, data, sigma={k: SIGMA for k in data}, overrides=overrides, name=name)


@pytest.fixture(scope="module")
def setup():
    truth = ds.System(spacecraft(), tau=tau, t1=float(T[-1]), saveat=jnp.asarray(T), rtol=1e-12, atol=1e-12)
    planar = measure(truth, seed=0, name="planar")
    # the base tumbles about its x and y axes at the start: the rod turns about its own axis
    # and about an in-plane transverse axis
    tumbling = measure(truth, seed=1, name="tumbling", overrides={"v0.base": jnp.array([0, 0, 0, 0.4, 0.3, 0.0])})
    start = truth.replace(rtol=1e-9, atol=1e-9)
    return start, planar, tumbling


def fit(start, exps):
    return idf.fit(start, list(TRUE), exps, initial=START, transforms={n: idf.Log() for n in TRUE}, max_steps=60)


@pytest.fixture(scope="module")
def planar_fit(setup):
    start, planar, _ = setup
    return fit(start, [planar])


@pytest.mark.slow
def test_base_motion_names_the_invisible_moments_and_a_tumbling_experiment_resolves_them(setup, planar_fit):
    start, planar, tumbling = setup
    # the hinge turns the rod in the base's x-y plane: only I_zz (and the mass) reach the base
    res = planar_fit
    assert res.converged, res.status
    ident = res.identifiable
    assert not ident["identifiable"]
    named = {n for d in ident["directions"] for n in d["combination"]}
    assert named == IN_PLANE_INVISIBLE, ident["directions"]
    assert len(ident["directions"]) == 2
    for n in ("body.rod.mass", "body.rod.inertia[2,2]"):  # the in-plane parameters are found
        assert abs(res.value[n] / TRUE[n] - 1) < 1e-3, (n, res.value[n])

    res2 = fit(start, [planar, tumbling])
    assert res2.converged, res2.status
    assert res2.identifiable["identifiable"], res2.identifiable["directions"]
    for n, true in TRUE.items():
        lo, hi = res2.ci95[n]
        assert lo < true < hi, (n, res2.value[n], res2.ci95[n])
        assert res2.std[n] < 0.05 * true  # determined, not a uselessly wide interval


@pytest.mark.slow
def test_determined_parameters_keep_finite_intervals_beside_null_directions(planar_fit):
    """The two null directions (I_xx, I_yy) must not spill into the intervals of the parameters
    the data do determine (mass, I_zz): those stay finite and contain the truth, and the
    undetermined ones are not given a spuriously tight interval."""
    res = planar_fit
    for n in ("body.rod.mass", "body.rod.inertia[2,2]"):
        lo, hi = res.ci95[n]
        assert np.isfinite(res.std[n]) and res.std[n] < 0.01 * TRUE[n], (n, res.std[n])
        assert lo < TRUE[n] < hi and hi - lo < 0.05 * TRUE[n], (n, res.ci95[n])
    for n in IN_PLANE_INVISIBLE:
        assert res.std[n] == np.inf, (n, res.std[n])  # undetermined: infinite, never a small number
