"""The ``ur5-reach`` problem against its peers: the vendored UR5 against Pinocchio, and Crocoddyl's
optimal torques (stored in ``data/ur5_croc_reference.npz``: CI has no Crocoddyl) evaluated in
diffsim — the same discretisation (RK4, torque held over the step) and the same cost (the running
cost with Crocoddyl's RK4-weighted quadrature), so states and cost must agree to rounding.

Regenerate the reference (crocoddyl 3.2.1, pin 4.0.0; see ``benchmarks/crocoddyl_reach.py``)::

    python -c "from diffsim.scenarios.ur5_reach import write_problem; write_problem('p.json')"
    /work/venv-croc/bin/python benchmarks/crocoddyl_reach.py --problem p.json --out /tmp/croc \\
        --repeats 1 --reference tests/plan/data/ur5_croc_reference.npz
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.loads import Loads
from diffsim.scenarios import ur5_reach as ur
from diffsim.simulation.rollout import rk4_step

REF = Path(__file__).with_name("data") / "ur5_croc_reference.npz"


@pytest.fixture(scope="module")
def ref():
    z = np.load(REF)
    p = ur.Ur5Reach.from_dict({**json.loads(str(z["problem_json"])), "urdf": str(ur.URDF)})
    return z, p


@pytest.fixture(scope="module")
def model():
    return ur.load_model(dtype=jnp.float64)


def test_the_reference_is_the_default_problem(ref):
    """The stored optimum belongs to today's default problem (change one, regenerate the other)."""
    _, p = ref
    assert p == dataclasses.replace(ur.problem(), urdf=str(ur.URDF))


def test_ur5_matches_pinocchio(model):
    """ABA and the tool frame of the vendored URDF against Pinocchio's, at random states."""
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(str(ur.URDF))
    pd = pm.createData()
    assert (pm.nq, pm.nv) == (model.nq, model.nv) == (6, 6)
    assert [pm.names[j] for j in range(1, pm.njoints)] == [model.topology.joint_names[i] for i in range(2, 8)]
    rng = np.random.default_rng(3)
    Q, V, T = rng.uniform(-np.pi, np.pi, (3, 6)), rng.normal(0, 2, (3, 6)), rng.normal(0, 20, (3, 6))
    mine = jax.jit(jax.vmap(lambda q, v, tau: (ds.forward_dynamics(model, q, v, tau), ur.tool_position(model, q))))
    A, P = (np.asarray(o) for o in mine(jnp.asarray(Q), jnp.asarray(V), jnp.asarray(T)))
    fid = pm.getFrameId("tool0")
    for q, v, tau, a, p in zip(Q, V, T, A, P):
        ap = pin.aba(pm, pd, q, v, tau)
        np.testing.assert_allclose(a, ap, rtol=0, atol=1e-12 * np.abs(ap).max())
        pin.framesForwardKinematics(pm, pd, q)
        np.testing.assert_allclose(p, pd.oMf[fid].translation, rtol=0, atol=1e-14)


def test_step_and_step_cost_equal_crocoddyls(ref, model):
    """At random states and torques: Crocoddyl's ABA, its RK4 step (IntegratedActionModelRK with
    zero-order hold) and its RK4-weighted running cost equal diffsim's ``forward_dynamics``,
    ``rk4_step`` and ``dt · running_cost`` to rounding."""
    z, p = ref
    X, U = z["sample_x"], z["sample_u"]
    lbar, knot = ur.running_cost(p, model), ur.effort_cost(p, model)

    @jax.jit
    @jax.vmap
    def mine(x, u):
        q, v = x[:6], x[6:]
        x1 = jnp.concatenate(rk4_step(model, Loads(tau=u), 0.0, q, v, p.dt))
        return ds.forward_dynamics(model, q, v, u), x1, p.dt * lbar(q, v, u), p.dt * knot(q, v, u)

    a, x1, c, c_knot = (np.asarray(o) for o in mine(jnp.asarray(X), jnp.asarray(U)))
    np.testing.assert_allclose(a, z["sample_acc"], rtol=0, atol=1e-12 * np.abs(z["sample_acc"]).max())
    np.testing.assert_allclose(x1, z["sample_xnext"], rtol=0, atol=1e-12 * np.abs(z["sample_xnext"]).max())
    np.testing.assert_allclose(c, z["sample_step_cost"], rtol=1e-12)
    # the knot rule is a different quadrature (1.6 % per step at these states), so this can fail
    assert np.abs(c_knot / z["sample_step_cost"] - 1).max() > 1e-3


@pytest.mark.parametrize("solver", ["fddp", "boxfddp"])
def test_crocoddyl_optimum_has_the_same_cost_in_diffsim(ref, model, solver):
    """Crocoddyl's optimal torques rolled out by diffsim give its states (100 steps) and its
    optimal cost to rounding (float64: ≤ 1e-9 relative leaves room for 100 steps of round-off)."""
    z, p = ref
    tau = jnp.asarray(z[f"{solver}_tau"])
    if solver == "boxfddp":  # the torque-limited optimum lies in the box, on its faces in places
        lo, hi = (np.asarray(b) for b in p.tau_limits)
        assert np.all(z["boxfddp_tau"] >= lo - 1e-12) and np.all(z["boxfddp_tau"] <= hi + 1e-12)
        assert np.sum(np.isclose(z["boxfddp_tau"], hi) | np.isclose(z["boxfddp_tau"], lo)) > 10
    J, q, v = _total_cost(p, model)(tau)
    np.testing.assert_allclose(np.asarray(q), z[f"{solver}_q"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(v), z[f"{solver}_v"], rtol=0, atol=1e-9)
    assert abs(float(J) / float(z[f"{solver}_cost"]) - 1) <= 1e-9


_COMPILED = {}


def _total_cost(p, model):
    if p not in _COMPILED:
        _COMPILED[p] = jax.jit(lambda tau: ur.total_cost(p, model, tau))
    return _COMPILED[p]


def test_problem_json_round_trip(tmp_path):
    p = ur.problem(w_u=2e-3, tau_limits=None, quadrature="knot")
    assert ur.read_problem(ur.write_problem(tmp_path / "p.json", p)) == p
    assert ur.problem(tau_limits="effort").tau_limits[1] == (150.0, 150.0, 150.0, 28.0, 28.0, 28.0)


@pytest.mark.parametrize("bad, match", [
    (dict(q0=(0.0,) * 5), "q0 must be 6 finite numbers"),
    (dict(target=(0.0, 0.0, float("nan"))), "target must be 3 finite numbers"),
    (dict(horizon=0), "horizon must be a positive integer"),
    (dict(dt=0.0), "dt must be positive"),
    (dict(w_p=-1.0), "weights"),
    (dict(effort="gravity"), "effort must be one of"),
    (dict(quadrature="trapezoid"), "quadrature must be one of"),
    (dict(tau_limits=((1.0,) * 6, (0.0,) * 6)), "lo <= hi"),
    (dict(tau_limits="max"), "tau_limits must be"),
])
def test_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        ur.problem(**bad)


@pytest.mark.slow
def test_ddp_reaches_crocoddyls_optimum(ref, model):
    """``ds.plan.solve(method="ddp")`` from the problem's initial guess converges to an optimum at
    least as good as Crocoddyl's FDDP from the same guess (issue 16: equal to ≤ 0.1 %), and the
    plan's cost is the cost of its torques. The problem has more than one local minimum: ds.plan at
    3024ac6 reached FDDP's (0.0142635796, to 4e-9); at 400b9b3 (PSD-projected cost Hessians) it
    reaches 0.0118482158 (17 % lower), which Crocoddyl re-costs to 7e-16 and where FDDP,
    warm-started, stops at iteration 0 (stop 7e-13): a stationary point of the same problem."""
    z, p = ref
    plan = ds.plan.solve(model, jnp.asarray(p.q0), jnp.asarray(p.v0), horizon=p.horizon, dt=p.dt,
                         **ur.planner_costs(p, model),  # quadrature="rk4": the step's own stage states
                         tau_init=jnp.tile(jnp.asarray(p.tau_init), (p.horizon, 1)), method="ddp", max_iter=200)
    assert plan.message == "converged"
    assert float(plan.cost) <= float(z["fddp_cost"]) * (1 + 1e-3)
    assert abs(float(_total_cost(p, model)(plan.tau)[0]) / float(plan.cost) - 1) <= 1e-9
    assert np.linalg.norm(np.asarray(ur.tool_position(model, plan.q[-1])) - np.asarray(p.target)) <= 1e-4


@pytest.mark.slow
def test_scenario_run_writes_the_plan(tmp_path):
    """``UR5_REACH.run`` (what ``diffsim plan ur5-reach`` will call) on a 5-step horizon: writes
    plan.npz with the documented shapes, problem.json, figures; a model parameter reaches the model."""
    from diffsim.scenarios.base import run_scenario

    summary = run_scenario(ur.UR5_REACH, tmp_path, ["horizon=5", "max_iter=3", "quadrature=knot",
                                                    "body.upper_arm_link.mass=9.0"])
    z = np.load(tmp_path / "plan.npz")
    assert z["tau"].shape == (5, 6) and z["q"].shape == (6, 6) and z["v"].shape == (6, 6) and z["t"].shape == (6,)
    assert ur.read_problem(tmp_path / "problem.json").horizon == 5
    assert summary["iterations"] <= 3 and np.isfinite(summary["cost"]) and summary["status"] in ("converged", "max_iter")
    assert {"cost_history.png", "torques.png", "tool_error.png"} <= {p.name for p in tmp_path.iterdir()}
    with pytest.raises(ds.ParamError, match="unknown parameter 'body.nosuchlink.mass'"):
        run_scenario(ur.UR5_REACH, tmp_path, ["body.nosuchlink.mass=1"])
