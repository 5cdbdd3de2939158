"""diffsim.identify's input, names and report: what a fit is given reaches the search as given, or
is refused with a message (experiment names, data files, overrides, parameter names, starts, σ,
quaternions, wrapped angles), and what it reports says what it means (holdout failure, determined
entries, intervals inside the domain, identifiability near 0). Small and fast: a pendulum sampled
21 times over 1 s; the two fits share their compiled programs."""

import json
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim import identify as idf
from diffsim.cli import main as cli
from diffsim.commands import _experiment_names
from diffsim.identify.estimator import prepare, unique_names
from diffsim.identify.fit import _resolve

T = np.linspace(0.0, 1.0, 21)
SIGMA = 1e-4
NAMES = ["joint.arm.damping", "v0.arm", "site.tip.pos"]  # site.tip.pos: the data do not see it


def pendulum(damping=0.05, frictionloss=0.0):
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=(0.002, 0.01, 0.01),
               damping=damping, frictionloss=frictionloss, friction_width=0.01)
    b.add_site("tip", "arm", pos=[0.6, 0, 0])
    return b.build()


def angle(system, seed):
    tr = ds.simulate(system.replace(saveat=jnp.asarray(T), t1=float(T[-1])))
    return np.asarray(tr.q[:, 0]) + SIGMA * np.random.default_rng(seed).standard_normal(T.shape)


@pytest.fixture(scope="module")
def truth():
    return ds.System(pendulum(), jnp.array([1.2]), t1=1.0, rtol=1e-9, atol=1e-9)


@pytest.fixture(scope="module")
def start(truth):
    return ds.set_params(truth, {"joint.arm.damping": 0.08, "v0.arm": jnp.array([0.01])})


@pytest.fixture(scope="module")
def runs(truth, tmp_path_factory):
    """Two runs written as the README's CSV (a column ``q.arm``: [T], the hinge predicts [T, 1]),
    both files named data.csv."""
    root = tmp_path_factory.mktemp("runs")
    paths = []
    for k, seed in enumerate((1, 2)):
        d = root / "ab"[k]
        d.mkdir()
        q = angle(truth, seed)
        (d / "data.csv").write_text("t,q.arm\n" + "\n".join(f"{float(a)!r},{float(b)!r}" for a, b in zip(T, q)) + "\n")
        paths.append(d / "data.csv")
    return paths


@pytest.fixture(scope="module")
def fit_same_names(start, runs):
    """Both experiments and the holdout named 'a/data'; the holdout's angles wrapped by 2π after
    t = 0.5 s."""
    exps = [idf.load(p, sigma={"q.arm": SIGMA}, name="a/data") for p in runs]
    q = exps[0].data["q.arm"].copy()
    q[T > 0.5] -= 2 * np.pi
    hold = idf.Experiment(T, {"q.arm": q}, sigma={"q.arm": SIGMA}, name="a/data")
    return exps, hold, idf.fit(start, NAMES, exps, holdout=hold)


def test_repeated_names_are_numbered_and_nothing_is_lost(fit_same_names, tmp_path):
    exps, hold, res = fit_same_names
    assert [e.name for e in res.experiments] == ["a/data", "a/data#2"] and res.holdout.name == "a/data#holdout"
    assert [e.name for e in exps] == ["a/data", "a/data"] and hold.name == "a/data"  # the user's objects unchanged
    assert set(res.cost_per_experiment) == {"a/data", "a/data#2"}
    assert abs(sum(res.cost_per_experiment.values()) - res.cost) <= 1e-12 * res.cost
    assert set(res.predictions) == {"a/data", "a/data#2", "a/data#holdout"}
    # each experiment's predictions are its own (the holdout's did not replace the training ones),
    # shaped like its data ([T]: the column q.arm)
    for e in res.experiments:
        pred = res.predictions[e.name]["q.arm"]
        assert pred.shape == (T.size,) and np.max(np.abs(pred - e.data["q.arm"])) < 5 * SIGMA
    written = {p.name for p in res.save(tmp_path)}
    assert {"fit_a_data.png", "fit_a_data#2.png", "holdout_a_data#holdout.png", "fit.json"} <= written
    out = json.loads((tmp_path / "fit.json").read_text())
    assert set(out["cost_per_experiment"]) == {"a/data", "a/data#2"}


def test_identifiability_near_zero_determined_key_and_wrapped_angles(fit_same_names, tmp_path):
    _, _, res = fit_same_names
    assert res.converged, res.status
    # v0.arm (truth 0, start 0.01) is pinned to ~1e-4 rad/s: not "undetermined" for being near 0
    assert abs(res.value["v0.arm"][0]) < 5 * res.std["v0.arm"][0] < 1e-3
    dirs = res.identifiable["directions"]
    assert dirs and all(set(d["combination"]) <= {f"site.tip.pos[{k}]" for k in range(3)} for d in dirs), dirs
    res.save(tmp_path)
    params = json.loads((tmp_path / "fit.json").read_text())["params"]
    assert params["site.tip.pos"]["std"] == [None] * 3 and params["site.tip.pos"]["determined"] == [False] * 3
    assert params["joint.arm.damping"]["determined"] == [True] and params["v0.arm"]["determined"] == [True]
    assert set(params["v0.arm"]) >= {"value", "std", "ci95", "initial", "transform"}
    wrapped = [w for w in res.warnings if "a/data#holdout" in w and "np.unwrap" in w]
    assert len(wrapped) == 1 and not any("'a/data'" in w for w in res.warnings), res.warnings


def test_a_failed_holdout_has_no_rms_and_a_warning(start, runs):
    exps = [idf.load(p, sigma={"q.arm": SIGMA}) for p in runs]  # both named "data": numbered
    hold = idf.Experiment(T, {"q.arm": exps[0].data["q.arm"]}, sigma={"q.arm": SIGMA}, name="far",
                          overrides={"body.arm.com": jnp.array([1e200, 0.0, 0.0])})
    res = idf.fit(start, NAMES, exps, holdout=hold)
    assert res.holdout_rms is None
    assert any("holdout experiment 'far'" in w and "holdout_rms is None" in w for w in res.warnings), res.warnings
    assert "holdout_rms is None" in res.summary()


def test_the_cli_names_experiments_by_their_paths_when_stems_collide(tmp_path):
    a, b = tmp_path / "runs" / "a" / "data.csv", tmp_path / "runs" / "b" / "data.csv"
    assert _experiment_names([a, b]) == ["a/data", "b/data"]
    assert _experiment_names([a, tmp_path / "c.csv"]) == ["data", "c"]
    assert _experiment_names([a, a.with_suffix(".npz")]) == ["data.csv", "data.npz"]
    assert _experiment_names([a, a]) == ["data", "data"]  # one file twice: fit numbers it
    x = idf.Experiment(T, {"z": T})
    assert [e.name for e in unique_names([x, x, x])] == ["experiment", "experiment#2", "experiment#3"]


def test_cli_fit_from_a_zero_default_start_names_the_flag(tmp_path, capsys):
    """The ball's joint damping defaults to 0 (as flexible-hub's air_damping): a log-space fit
    cannot start there; the CLI says which --set gives it a start, before anything is written."""
    (tmp_path / "z.csv").write_text("t,z\n0,0.25\n0.1,0.2\n0.2,0.05\n")
    code = cli(["fit", "ball-drop", "--data", str(tmp_path / "z.csv"), "--params", "joint.ball.damping",
                "--out", str(tmp_path / "f")])
    assert code == 2 and "--set joint.ball.damping=" in capsys.readouterr().err
    assert not (tmp_path / "f").exists()


def test_a_positive_quantity_starting_at_zero_is_refused(truth):
    zero = ds.set_params(truth, {"joint.arm.damping": 0.0})
    exp = idf.Experiment(T, {"q.arm": T})
    with pytest.raises(idf.FitError, match="'joint.arm.damping': the start .0.0. is 0"):
        idf.fit(zero, ["joint.arm.damping"], exp)
    with pytest.raises(idf.FitError, match="is 0"):
        idf.fit(truth, ["joint.arm.damping"], exp, initial={"joint.arm.damping": 0.0})
    (p,) = _resolve(zero, ["joint.arm.damping"], None, {"joint.arm.damping": idf.Identity()})  # explicit: allowed
    assert p.transform.describe() == "identity"


def test_the_same_quantity_under_two_names_is_refused(truth):
    exp = idf.Experiment(T, {"q.arm": T})
    for pair in (["body.arm.mass", "body.arm.inertial"], ["joint.arm.damping", "joint.arm.damping[0]"],
                 ["body.arm.inertial", "body.arm.com"], ["body.arm.inertia[1]", "body.arm.inertia[1, 2]"]):
        with pytest.raises(idf.FitError, match=re.escape(f"'{pair[0]}' and '{pair[1]}' both set")):
            idf.fit(truth, pair, exp)
    (a, b) = _resolve(truth, ["body.arm.inertia[0, 0]", "body.arm.inertia[1, 1]"], None, None)  # distinct entries
    assert (a.shape, b.shape) == ((), ())


def test_overrides_of_a_fitted_parameter_are_refused(truth):
    own = idf.Experiment(T, {"q.arm": T}, overrides={"joint.arm.damping": 0.5}, name="own")
    with pytest.raises(idf.FitError, match="experiment 'own': its overrides set 'joint.arm.damping'"):
        idf.fit(truth, ["joint.arm.damping"], own)
    heavy = idf.Experiment(T, {"q.arm": T}, overrides={"body.arm.mass": 1.5}, name="heavy")
    with pytest.raises(idf.FitError, match="'body.arm.mass', which the fit estimates .'body.arm.inertial'"):
        idf.fit(truth, ["body.arm.inertial"], heavy)
    plain = idf.Experiment(T, {"q.arm": T})
    with pytest.raises(idf.FitError, match="experiment 'own'"):  # the holdout too, before the search
        idf.fit(truth, ["joint.arm.damping"], plain, holdout=own)


def test_tau_replaces_the_joint_torques_only(truth):
    m = truth.model
    pushed = truth.replace(forces=(ds.point_force(m, "arm", jnp.array([0.0, 0.0, 1.0]), (0.6, 0.0, 0.0)),))
    exp = idf.Experiment(T, {"q.arm": T}, tau=jnp.array([0.5]))
    (p,) = prepare(pushed, [exp], None, "fwd")
    assert len(p.system.loads.forces) == 1 and p.system.loads.tau is not None
    with pytest.raises(idf.ExperimentError, match="not both"):
        idf.Experiment(T, {"q.arm": T}, tau=jnp.array([0.5]), loads=ds.Loads())


def test_bad_site_component_is_an_experiment_error(truth):
    with pytest.raises(idf.ExperimentError, match="'site.tip.pos.w': component must be x, y or z"):
        idf.observable(truth.model, "site.tip.pos.w")


def test_csv_vector_columns_are_checked_and_ordered(tmp_path):
    t = np.linspace(0, 1, 5)

    def load(header, rows, name="a.csv", **kw):
        path = tmp_path / name
        path.write_text(header + "\n" + "\n".join(",".join(f"{float(v)!r}" for v in r) for r in rows) + "\n", **kw)
        return idf.load(path)

    e = load("t,x[1],x[0]", [(a, 2 * a, a) for a in t])  # by index, not header order
    np.testing.assert_array_equal(e.data["x"], np.stack([t, 2 * t], 1))
    ten = [0, 1, 10, 2, 3, 4, 5, 6, 7, 8, 9]
    e = load("t," + ",".join(f"x[{k}]" for k in ten), [(a, *ten) for a in t])
    np.testing.assert_array_equal(e.data["x"][0], np.arange(11.0))
    for header, match in (("t,x[0],x[2]", r"indices \[0, 2\]"), ("t,x[foo],x[bar]", "one integer index"),
                          ("t,x,x[0]", "both a column and a vector channel"), ("t,z,z", "more than once"),
                          ("t,x[0],x[0]", "more than once"), ("t,x[0],x[00]", r"indices \[0, 0\]")):
        with pytest.raises(idf.ExperimentError, match=match):
            load(header, [(a, a, a) for a in t])
    e = load("t,z", [(a, a) for a in t], name="bom.csv", encoding="utf-8-sig")  # Excel's byte-order mark
    np.testing.assert_array_equal(e.data["z"], t)
    np.savez(tmp_path / "s.npz", t=t, z=t, label=np.array(["a"] * 5))
    with pytest.raises(idf.ExperimentError, match="channel 'label' is not numeric"):
        idf.load(tmp_path / "s.npz")
    with pytest.raises(idf.ExperimentError, match="channel 'z' is complex"):
        idf.Experiment(t, {"z": t + 1j})


def test_per_sample_sigma_of_a_square_channel_is_refused_as_ambiguous():
    t = np.arange(3.0)
    with pytest.raises(idf.ExperimentError, match=r"give shape \[3, 1\] for one σ per sample or \[3\] for one per"):
        idf.Experiment(t, {"x": np.ones((3, 3))}, sigma={"x": [1.0, 2.0, 3.0]})
    per_sample = idf.Experiment(t, {"x": np.ones((3, 3))}, sigma={"x": [[1.0], [2.0], [3.0]]}).sigma["x"]
    np.testing.assert_array_equal(per_sample, np.repeat([[1.0], [2.0], [3.0]], 3, 1))
    per_component = idf.Experiment(t, {"x": np.ones((3, 2))}, sigma={"x": [1.0, 2.0]}).sigma["x"]
    np.testing.assert_array_equal(per_component, [1.0, 2.0])


def test_inertial_intervals_lie_in_the_domain(truth):
    """A poorly determined body.arm.inertial: its intervals are percentiles of the transform over
    draws of θ, so the mass and the principal moments stay positive (p ± 1.96 σ_p went negative)."""
    est = idf.make_estimator(truth, ["body.arm.inertial"], idf.Experiment(T, {"q.arm": T[:, None]}))
    J = jnp.asarray(np.diag(np.full(10, 0.7)))  # σ_θ ≈ 1.4: the mass known to a factor of e^±2.8
    intervals = eqx.filter_jit(lambda e, J: (e.intervals_from_jacobian(e.theta0, J, 1.0),
                                             e.layout.physical_flat(e.theta0)))
    (std, lo, hi, _), p = jax.tree_util.tree_map(np.asarray, intervals(est, J))
    assert np.all(lo <= p) and np.all(p <= hi)
    assert lo[0] > 0 and np.all(lo[4:7] > 0), lo  # mass, I_xx, I_yy, I_zz
    assert p[0] - 1.96 * std[0] < 0  # what the symmetric interval said
    (_, lo2, hi2, _), _ = jax.tree_util.tree_map(np.asarray, intervals(est, J))
    np.testing.assert_array_equal(lo, lo2)  # a fixed key: the same interval every time
    np.testing.assert_array_equal(hi, hi2)


def test_measured_quaternions_are_compared_up_to_sign():
    """A free body turning about z: its q_w changes sign at ~0.8 s; a logger's w >= 0 convention
    gives the same orientations, so the residuals stay at the solver's round-off."""
    b = ds.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("box", None, joint="free", mass=1.0, inertia=(0.1, 0.2, 0.3))
    s = ds.System(b.build(), jnp.array([0.0, 0, 0, 1, 0, 0, 0]), v0=jnp.array([0.0, 0, 0, 0, 0, 4.0]), t1=1.0,
                  rtol=1e-10, atol=1e-10)
    t = np.linspace(0, 1.0, 11)
    q = np.zeros((t.size, 7))
    q[:, 3], q[:, 6] = np.cos(2 * t), np.sin(2 * t)  # steady rotation about a principal axis at 4 rad/s
    assert q[:, 3].min() < -0.4
    q[:, 3:] *= np.where(q[:, 3:4] < 0, -1.0, 1.0)
    est = idf.make_estimator(s, ["body.box.mass"], idf.Experiment(t, {"q.box": q}, sigma={"q.box": 1e-6}))
    r = eqx.filter_jit(lambda e: e.residuals(e.theta0, e.data))(est)
    assert float(jnp.max(jnp.abs(r))) < 0.1  # 2e6 at the last samples when compared componentwise


# ---- found by a review of what a fit reports ----------------------------------------------------

@pytest.mark.slow  # two small fits (two data shapes: two compiles)
def test_without_sigma_the_noise_needs_degrees_of_freedom(truth, start):
    """No stated σ: the covariance is scaled by the residual variance 2C/(N − P). With N = P the fit
    passes through the data and that variance is 0: the fit reported damping ± 7e-11 and
    "determined" (the degrees of freedom were clamped to 1). Now std = inf, with a warning; a few
    degrees of freedom get a warning that the normal quantile's intervals are too narrow."""
    names = ["joint.arm.damping", "v0.arm"]
    for n, what in ((2, "cannot be estimated"), (6, "too narrow")):
        t = T[1:n + 1]
        q = np.interp(t, T, angle(truth, 3))
        res = idf.fit(start, names, idf.Experiment(t, {"q.arm": q}))
        assert res.converged and any(what in w for w in res.warnings), res.warnings
        doc = res.to_json()
        assert np.isnan(res.chi2_per_dof)  # no χ² without a stated σ (it was the residual variance); null in JSON
        if n == 2:
            assert np.isinf(res.std["joint.arm.damping"]) and not doc["params"]["joint.arm.damping"]["determined"]
            assert res.ci95["joint.arm.damping"][1] == np.inf
        else:
            assert 0 < res.std["joint.arm.damping"] < np.inf and res.noise_scale > 0


def test_a_float32_fit_ends_on_its_own_last_sample(truth):
    """The save times were cast to float32 and t1 kept in float64: 1.2 became 1.2000000477 > 1.2 and
    the system refused its own grid ("saveat times must be increasing within [0, 1.2]")."""
    t = np.linspace(0.0, 1.2, 241)
    s32 = truth.replace(model=truth.model.astype(jnp.float32), q0=truth.q0.astype(jnp.float32),
                        v0=truth.v0.astype(jnp.float32))
    (prep,) = prepare(s32, [idf.Experiment(t, {"q.arm": np.zeros_like(t)})], None, "fwd")
    assert prep.system.saveat.dtype == jnp.float32
    assert float(prep.system.t1) == float(prep.system.saveat[-1]) == float(np.float32(1.2))


def test_an_entry_of_a_signed_parameter_is_signed():
    """``body.b.com[k]`` was classified positive (".c" of a contact damping matched ".com[2]"): log
    transform, interval in (0, ∞), a negative start refused. The class of a name is its field's."""
    from diffsim.identify.transforms import Identity, Log, default_transform
    from diffsim.model.params import is_nonnegative

    assert isinstance(default_transform("body.arm.com[0]", 0.3), Identity)
    assert not is_nonnegative("body.arm.com[2]") and not is_nonnegative("joint.mass_arm.springref")
    assert is_nonnegative("contact.c") and is_nonnegative("contact.c_r") and is_nonnegative("body.mass_arm.mass")
    assert isinstance(default_transform("joint.arm.damping", 0.05), Log)
