"""diffsim.montecarlo: what a study accepts and refuses — resumes of another system, precision or
statistics, corrupt chunk files, non-finite statistics, tail truncations, quaternion coordinates,
indexed parameters' domains, reserved names, non-integer counts — and the CLI's montecarlo options.

One small pendulum study (8 samples in chunks of 4) is run once for the module; the resume tests
copy its directory and most refusals happen before anything compiles."""

import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
import diffsim.montecarlo.study as study
from diffsim import montecarlo as mc


def pendulum(dtype=None, **options):
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=(0.002, 0.01, 0.01),
               damping=0.05)
    options.setdefault("t1", 0.3)
    return ds.System(b.build(dtype), jnp.array([1.0]), saveat=5, **options)


DISTS = {"q0.arm": mc.Normal(1.0, 0.1)}


def stats(traj):
    """qmax; 'part': NaN for the samples released above 1 rad; 'never': -inf for every sample."""
    q0 = traj.q[0, 0]
    return {"qmax": jnp.max(traj.q[:, 0]), "part": jnp.where(q0 > 1.0, jnp.nan, q0), "never": -jnp.inf + 0 * q0}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The study on disk (``out``) and its result."""
    out = tmp_path_factory.mktemp("mc") / "study"
    res = mc.run(pendulum(), DISTS, 8, stats, chunk_size=4, out=out, progress=False)
    assert res.chunks_run == 2
    return out, res


def _copy(base, tmp_path, drop=True):
    """A copy of the study's directory, chunk 1 removed (an interrupted run) unless ``drop=False``."""
    d = tmp_path / "copy"
    shutil.copytree(base[0], d)
    if drop:
        (d / "chunks" / "chunk_000001.npz").unlink()
    return d


def _resume(d, system=None, statistics=stats, **kw):
    kw = {"chunk_size": 4, **kw}
    return mc.run(pendulum() if system is None else system, DISTS, 8, statistics, out=d, progress=False, **kw)


# -- 1, 7: the identity of a study ------------------------------------------------------------
def test_resume_refuses_another_system_precision_or_statistics(base, tmp_path):
    d = _copy(base, tmp_path)
    with pytest.raises(mc.MonteCarloError, match=r"different study: the system differs in t1"):
        _resume(d, pendulum(t1=0.6))
    with pytest.raises(mc.MonteCarloError, match=r"the system differs in model"):
        _resume(d, ds.set_params(pendulum(), {"gravity": jnp.array([0.0, 0.0, -1.0])}))
    with pytest.raises(mc.MonteCarloError, match=r"precision float64 vs float32"):
        _resume(d, pendulum(dtype=jnp.float32))
    # a function with the same name and outputs that computes something else (was accepted and mixed)
    def other(traj):
        return {**stats(traj), "qmax": jnp.min(traj.q[:, 0])}
    other.__qualname__ = stats.__qualname__
    with pytest.raises(mc.MonteCarloError, match="statistics function computes something else"):
        _resume(d, statistics=other)
    # other names: refused naming them (was a bare KeyError once the chunks were concatenated)
    with pytest.raises(mc.MonteCarloError, match=r"the statistics differ: .*qmin"):
        _resume(d, statistics=lambda tr: {**stats(tr), "qmin": jnp.min(tr.q[:, 0])})
    # the same study resumes (chunk 1 recomputed), bit-identical
    res = _resume(d)
    assert (res.chunks_resumed, res.chunks_run) == (1, 1)
    np.testing.assert_array_equal(res.statistics["qmax"], base[1].statistics["qmax"])


def _torque(amplitude):
    return lambda t, q, v: amplitude * jnp.sin(t) * jnp.ones(1)


class _Torque:
    def __init__(self, amplitude):
        self.amplitude = amplitude

    def __call__(self, t, q, v):
        return self.amplitude * jnp.cos(t) * jnp.ones(1)


@pytest.mark.slow  # two compiled runs per case; the fast subset stays within 3 min (2:58 with it)
@pytest.mark.parametrize("make", [_torque, _Torque], ids=["closure", "callable object"])
def test_resume_refuses_a_system_function_that_computes_something_else(make, tmp_path):
    """A torque function closing over another number (or a callable object with another attribute):
    same code, same leaves, another simulation. Was accepted and mixed into the finished chunks."""
    out = tmp_path / "study"
    run = functools.partial(mc.run, distributions=DISTS, n_samples=8, statistics=stats, chunk_size=4, out=out,
                            progress=False)
    run(pendulum(tau=make(1.0)))
    (out / "chunks" / "chunk_000001.npz").unlink()
    with pytest.raises(mc.MonteCarloError, match="one sample's simulation computes something else"):
        run(pendulum(tau=make(50.0)))
    res = run(pendulum(tau=make(1.0)))  # another object, the same function: resumed
    assert (res.chunks_resumed, res.chunks_run) == (1, 1)


FRESH = textwrap.dedent("""
    import sys, jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, {tests!r})
    from montecarlo.test_study_input import DISTS, pendulum, stats
    from diffsim import montecarlo as mc
    res = mc.run(pendulum(), DISTS, 8, stats, chunk_size=4, out={out!r}, progress=False)
    print("RESUMED", res.chunks_resumed, res.chunks_run)
    try:  # and another system is told apart there too
        mc.run(pendulum(t1=0.31), DISTS, 8, stats, chunk_size=4, out={out!r}, progress=False)
    except mc.MonteCarloError as e:
        print("REFUSED", e)
""")


def test_a_fresh_process_rebuilding_the_same_system_resumes(base, tmp_path):
    """The fingerprint has no per-process noise (memory addresses, hash seeds): another process that
    rebuilds the system is accepted and reads every chunk back."""
    d = _copy(base, tmp_path, drop=False)
    code = FRESH.format(tests=os.path.dirname(os.path.dirname(__file__)), out=str(d))
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RESUMED 2 0" in r.stdout and "REFUSED" in r.stdout and "system differs in t1" in r.stdout


def test_another_diffsim_version_warns_and_resumes(base, tmp_path, monkeypatch):
    d = _copy(base, tmp_path, drop=False)
    real = study._versions
    monkeypatch.setattr(study, "_versions", lambda: {**real(), "diffsim": "99.0"})
    with pytest.warns(mc.MonteCarloWarning, match=r"started with diffsim .* \(now 99.0\)"):
        res = _resume(d)
    assert res.chunks_resumed == 2


def test_automatic_chunk_size_reuses_the_studys_own(base, tmp_path):
    """chunk_size unset on resume: the manifest's chunk (4) where these devices split it, not a
    newly sized one (the whole study, 8, was refused as a different study)."""
    d = _copy(base, tmp_path)
    res = _resume(d, chunk_size=None)
    assert res.chunk_size == 4 and res.chunks_resumed == 1
    with pytest.raises(mc.MonteCarloError, match="chunk size differs .4 vs 8.: leave it unset"):
        _resume(d, chunk_size=8)
    old, new = {"chunk_size": 4}, {"chunk_size": 3}
    refuse, _ = study._differences(old, new, auto_chunk=True, n_dev=3, versions_differ=False)
    assert "3 devices of this run cannot split evenly" in refuse[0] and "[1, 2, 4]" in refuse[0]


# -- 8: chunk files ---------------------------------------------------------------------------
def test_corrupt_or_foreign_chunks_are_named_with_the_fix(base, tmp_path):
    d = _copy(base, tmp_path, drop=False)
    p = d / "chunks" / "chunk_000001.npz"
    data = p.read_bytes()
    good = dict(np.load(p))
    for bad in (data[: len(data) // 2], b""):
        p.write_bytes(bad)
        with pytest.raises(mc.MonteCarloError, match=f"chunk file {p} cannot be read.*delete it"):
            _resume(d)
    np.savez(p, **{k: v[:2] for k, v in good.items()})  # 2 rows where 4 are expected (was accepted: 6 of 8)
    with pytest.raises(mc.MonteCarloError, match=r"not a chunk of this study: its sample indices are \[4, 5\]"):
        _resume(d)
    np.savez(p, **{**good, "index": good["index"] - 4})  # another chunk's samples
    with pytest.raises(mc.MonteCarloError, match="sample indices are .0, 1, 2, 3. .4 rows., expected .4, 5, 6, 7."):
        _resume(d)


# -- 2: non-finite statistics of successful samples -------------------------------------------
def test_non_finite_statistics_are_left_out_and_counted(base, tmp_path):
    res = base[1]
    assert res.status_counts == {"success": 8}
    part = res.statistics["part"]
    nan = np.isnan(part)
    assert nan.any() and (~nan).any()
    s = res.summary_json()["statistics"]
    assert s["part"]["mean"] == pytest.approx(part[~nan].mean()) and s["part"]["non_finite"] == nan.sum()
    assert np.isnan(s["never"]["mean"]) and s["never"]["non_finite"] == 8 and s["qmax"]["non_finite"] == 0
    np.testing.assert_allclose(res.quantiles("part", (0.5,))[0], np.median(part[~nan]))
    with pytest.warns(mc.MonteCarloWarning, match="'never': no finite value"):
        paths = res.save(tmp_path / "saved")  # crashed: "supplied range of [-inf, -inf] is not finite"
    names = {p.name for p in paths}
    assert {"hist_part.png", "hist_qmax.png", "sensitivity.png"} <= names and "hist_never.png" not in names
    saved = json.loads((tmp_path / "saved" / "summary.json").read_text())
    assert "never" in saved["figures_skipped"] and saved["statistics"]["never"]["mean"] is None  # JSON: null
    assert saved["statistics"]["part"]["quantiles"]["0.5"] == pytest.approx(np.median(part[~nan]))


def test_ball_drop_rebound_is_nan_without_an_impact():
    from diffsim.scenarios import ball_drop

    t = jnp.linspace(0.0, 0.1, 5)
    traj = SimpleNamespace(t=t, q=jnp.zeros((5, 7)).at[:, 2].set(0.3 - t),
                           contact=SimpleNamespace(event_t=jnp.array([jnp.inf, jnp.inf]), impacts=jnp.array([0])))
    out = ball_drop.statistics(traj)
    assert np.isnan(out["rebound_max_z"]) and float(out["z_min"]) == pytest.approx(0.2)
    hit = SimpleNamespace(event_t=jnp.array([0.03, 0.04]), impacts=jnp.array([1]))
    out = ball_drop.statistics(SimpleNamespace(t=t, q=traj.q, contact=hit))
    assert float(out["rebound_max_z"]) == pytest.approx(0.3 - 0.05)


def test_quantiles_without_a_successful_sample_say_so(base):
    failed = dataclasses.replace(base[1], status=np.full(8, int(ds.Status.MAX_STEPS_REACHED)))
    with pytest.raises(mc.MonteCarloError, match="no successful sample"):
        failed.quantiles("qmax")
    with pytest.raises(mc.MonteCarloError, match="no statistic 'nope'"):
        base[1].quantiles("nope")


# -- 3: truncated normals in a tail -----------------------------------------------------------
@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_truncated_normal_far_in_a_tail_has_the_analytical_mean(dtype):
    """N(0, 1) on [10, 11]: mean 10.098 (φ(10) − φ(11)) / (Φ(11) − Φ(10)); JAX's truncated_normal
    returned the bound. Also on [-11, -10] and [10, inf); 20000 draws, within 4 standard errors."""
    key = jax.random.PRNGKey(1)
    from scipy import stats as st

    for lo, hi in ((10.0, 11.0), (-11.0, -10.0), (10.0, np.inf), (-0.5, 2.0)):
        x = np.asarray(mc.TruncatedNormal(0.0, 1.0, lo, hi).sample(key, (20000,), dtype), float)
        law = st.truncnorm(lo, hi)
        assert np.all((x >= lo) & (x <= hi)) and np.all(np.isfinite(x))
        assert abs(x.mean() - law.mean()) < 4 * law.std() / np.sqrt(x.size), (lo, hi, x.mean(), law.mean())
        assert abs(x.std() - law.std()) < 0.05 * law.std()
    if dtype == jnp.float64:  # and far beyond float32's reach
        x = np.asarray(mc.TruncatedNormal(0.0, 1.0, 30.0, 31.0).sample(key, (20000,), dtype))
        assert abs(x.mean() - st.truncnorm(30, 31).mean()) < 1e-3


def test_truncated_normal_whose_mass_underflows_is_refused():
    with pytest.raises(mc.DistributionError, match=r"below the smallest normal float64"):
        mc.TruncatedNormal(0.0, 1.0, 40.0, 41.0)
    d = mc.TruncatedNormal(0.0, 1.0, 20.0, 21.0)  # fine in float64, not in float32
    with pytest.raises(mc.DistributionError, match="cannot be sampled in float32"):
        d.sample(jax.random.PRNGKey(0), (3,), jnp.float32)
    with pytest.raises(mc.MonteCarloError, match="'q0.arm': truncnormal.*cannot be sampled in float32"):
        mc.run(pendulum(dtype=jnp.float32), {"q0.arm": d}, 4, progress=False)


# -- 4: quaternion coordinates ----------------------------------------------------------------
def _free_body():
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("ball", None, joint="free", mass=1.0, inertia=(0.1, 0.1, 0.1))
    return ds.System(b.build(), jnp.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]), t1=0.1, saveat=3)


def test_laws_over_quaternion_coordinates_are_refused():
    s = _free_body()
    for name in ("q0.ball", "q0.ball[3]"):
        with pytest.raises(mc.MonteCarloError, match="orientation quaternion of joint 'ball'.*normalises"):
            mc.run(s, {name: mc.Normal(0.5, 0.1)}, 4, progress=False)
    q = np.tile([0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0], (4, 1))
    q[:, 3:] = [[1, 0, 0, 0], [0, 1, 0, 0], [np.sqrt(0.5), 0, np.sqrt(0.5), 0], [0.5, 0.5, 0.5, 0.5]]
    study._resolve(s, {"q0.ball": mc.Samples(q), "q0.ball[2]": mc.Normal(1.0, 0.1)}, 4)  # unit, or positions
    q[2, 3] *= 1.01
    with pytest.raises(mc.MonteCarloError, match="sample 2's has norm 1.005"):
        mc.run(s, {"q0.ball": mc.Samples(q)}, 4, progress=False)


# -- 5: the domain of an indexed parameter ----------------------------------------------------
def test_indexed_entries_are_checked_on_the_assembled_parameter():
    s = pendulum()
    with pytest.raises(ds.ParamError, match=r"setting 'body.arm.inertia\[0\]'.*positive semi-definite"):
        ds.set_params(s, {"body.arm.inertia[0]": jnp.array([0.002, 0.02, 0.0])})  # symmetric part indefinite
    # one entry moved (a finite-difference probe): asymmetric, its symmetric part positive definite
    ds.set_params(s, {"body.arm.inertia[0]": jnp.array([0.002, 1e-6, 0.0])})
    with pytest.raises(ds.ParamError, match="positive semi-definite"):
        ds.set_params(s, {"body.arm.inertia[0, 0]": -0.002})
    ds.set_params(s, {"body.arm.inertia[0, 0]": 0.003})
    draws = {"body.arm.inertia[0]": np.array([[0.003, 0.0, 0.0], [-0.002, 0.0, 0.0], [0.002, 0.02, 0.0]]),
             "body.arm.mass": np.array([1.0, 1.0, 1.0])}
    bad = study._outside_domain(s, sorted(draws), draws)
    np.testing.assert_array_equal(bad, [False, True, True])


# -- 6, 9, 12: names, keys, shapes, integers --------------------------------------------------
def test_bad_input_is_refused_with_its_own_message():
    s = pendulum()
    for name in ("status", "index", "q0.arm"):
        with pytest.raises(mc.MonteCarloError, match=f"statistics would overwrite '{name}'"):
            mc.run(s, DISTS, 4, lambda tr, n=name: {n: jnp.max(tr.q)}, progress=False)
    with pytest.raises(mc.MonteCarloError, match="key must be a jax.random key, got 42"):
        mc.run(s, DISTS, 4, key=42, progress=False)
    with pytest.raises(mc.MonteCarloError, match=r"Samples has shape \(4,\); need \[4, \*\(3,\)\]"):
        mc.run(s, {"body.arm.com": mc.Samples(np.linspace(0.2, 0.4, 4))}, 4, progress=False)
    with pytest.raises(mc.MonteCarloError, match="statistics.traj. raised AttributeError"):
        mc.run(s, DISTS, 4, lambda tr: {"x": tr.nosuch}, progress=False)
    for kw, msg in ((dict(n_samples=5.5), "n_samples must be an integer, got 5.5"),
                    (dict(chunk_size=2.9), "chunk_size must be an integer, got 2.9"),
                    (dict(indices=[1.7]), r"indices must be integers .sample numbers., got \[1.7\]"),
                    (dict(n_samples=True), "n_samples must be an integer")):
        args = {"n_samples": 4, "chunk_size": 1, **kw}
        with pytest.raises(mc.MonteCarloError, match=msg):
            mc.run(s, DISTS, args.pop("n_samples"), progress=False, **args)
    for bad in (("0", 1.0), (0.0, "1"), (None, 1.0)):
        with pytest.raises(mc.DistributionError, match="must be a number or an array of numbers"):
            mc.Normal(*bad)


# -- 13: the CLI's montecarlo options ---------------------------------------------------------
def test_cli_montecarlo_options(base, tmp_path, monkeypatch, capsys):
    from diffsim import commands
    from diffsim.cli import main as cli

    args = ["montecarlo", "ball-drop", "--samples", "4", "--no-progress", "--vary", "c_r~uniform(0.6,0.9)", "--chunk",
            "4", "--set", "t1=0.05", "n_save=3"]  # short, should a refusal regress into a run
    assert cli([*args, "--vary", "contact.c_r~uniform(0.1,0.2)", "--out", str(tmp_path / "a")]) == 2
    assert "--vary c_r and --vary contact.c_r both name the parameter 'contact.c_r'" in capsys.readouterr().err
    assert cli([*args, "--set", "noise=0.5", "--out", str(tmp_path / "b")]) == 2
    assert "--set noise: this option does not apply to montecarlo" in capsys.readouterr().err
    seen = {}

    def fake_run(system, dists, n, statistics, **kw):
        seen.update(kw)
        return base[1]

    monkeypatch.setattr(commands, "run_montecarlo", fake_run)
    out = tmp_path / "c"
    assert cli([*args, "--set", "plots=false", "--out", str(out)]) == 0
    assert not list(out.glob("*.png")) and (out / "samples.npz").exists()  # figures were written anyway
    assert seen["context"]["scenario"] == "ball-drop" and seen["context"]["options"]["t1"] == 0.05
    assert "plots" not in seen["context"]["options"]
