"""diffsim.montecarlo: results independent of chunking and resumption, failures kept, bad input
refused clearly."""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim import montecarlo as mc


def pendulum_system(**options):
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=(0.002, 0.01, 0.01),
               damping=0.05)
    return ds.System(b.build(), jnp.array([1.0]), t1=1.0, saveat=11, **options)


DISTS = {"q0.arm": mc.Normal(1.0, 0.1), "body.arm.mass": mc.Uniform(0.5, 1.5)}


def qmax(traj):
    return {"qmax": jnp.max(traj.q[:, 0])}


@pytest.fixture(scope="module")
def reference():
    return mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=40, progress=False)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_results_do_not_depend_on_chunk_size_and_match_single_runs(reference):
    other = mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, progress=False)
    for k in reference.statistics:
        np.testing.assert_array_equal(other.statistics[k], reference.statistics[k])
    for n in DISTS:
        np.testing.assert_array_equal(other.draws[n], reference.draws[n])
    # sample 7 alone (indices=) has the same draws and result
    seven = mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=1, indices=[7], progress=False)
    np.testing.assert_array_equal(seven.draws["q0.arm"][0], reference.draws["q0.arm"][7])
    # and the statistic is the simulation of those draws
    s = ds.set_params(pendulum_system(), {n: jnp.asarray(reference.draws[n][7]) for n in DISTS})
    np.testing.assert_allclose(reference.statistics["qmax"][7], float(jnp.max(ds.simulate(s).q[:, 0])), rtol=1e-12)
    assert reference.status_counts == {"success": 40}
    # the draws follow their distributions (40 samples: loose, but a wrong law fails)
    assert abs(reference.draws["q0.arm"].mean() - 1.0) < 4 * 0.1 / np.sqrt(40)
    assert 0.5 <= reference.draws["body.arm.mass"].min() and reference.draws["body.arm.mass"].max() <= 1.5


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_chunk_size_is_chosen_from_the_memory_budget(reference):
    """chunk_size=None: the chunk is the budget over the compiled bytes per sample (a probe chunk's
    memory_analysis), and the results are those of any other chunking."""
    big = mc.run(pendulum_system(), DISTS, 40, qmax, progress=False)
    assert big.chunk_size == 40 and big.bytes_per_sample > 0  # the whole study fits 1 GiB
    # a budget of 19.5 samples: 16 (a multiple of the 8 SIMD lanes), 3 chunks, bit-identical
    mid = mc.run(pendulum_system(), DISTS, 40, qmax, memory_budget=19.5 * big.bytes_per_sample, progress=False)
    assert mid.chunk_size == 16 and mid.chunks_run == 3
    for k in reference.statistics:
        np.testing.assert_array_equal(mid.statistics[k], reference.statistics[k])
    # below 8 lanes: 5 per chunk; the lanes past the last full SIMD vector are scalar code, so
    # the results agree to an ulp or so, not bit for bit (module docstring)
    small = mc.run(pendulum_system(), DISTS, 40, qmax, memory_budget=5.5 * big.bytes_per_sample, progress=False)
    assert small.chunk_size == 5 and small.chunks_run == 8
    for k in reference.statistics:
        np.testing.assert_allclose(small.statistics[k], reference.statistics[k], rtol=4e-15, atol=0)


def test_order_runs_chunks_sorted_by_cost_and_returns_sample_order(reference, tmp_path):
    """order=: the chunks hold consecutive samples of the cost order (here the mass), the results
    come back in sample order, bit-identical (chunks of 8)."""
    res = mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, out=tmp_path, progress=False,
                 order=lambda d: d["body.arm.mass"])
    for k in reference.statistics:
        np.testing.assert_array_equal(res.statistics[k], reference.statistics[k])
    np.testing.assert_array_equal(res.draws["body.arm.mass"], reference.draws["body.arm.mass"])
    mass = reference.draws["body.arm.mass"]
    ran = np.concatenate([np.load(f)["index"] for f in sorted((tmp_path / "chunks").glob("chunk_*.npz"))])
    np.testing.assert_array_equal(ran, np.argsort(mass, kind="stable"))
    with pytest.raises(mc.MonteCarloError, match="different study.*order"):  # another order is another study
        mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, out=tmp_path, progress=False,
               order=lambda d: -d["body.arm.mass"])
    with pytest.raises(mc.MonteCarloError, match="one finite cost per sample"):
        mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, progress=False, order=lambda d: d["q0.arm"][:3])


def test_failed_samples_are_kept_with_their_status(reference):
    """A too-small step budget fails some samples: each keeps its status, none is dropped."""
    s = pendulum_system(max_steps=6)
    res = mc.run(s, DISTS, 40, qmax, chunk_size=40, progress=False)
    assert res.n_samples == 40 and res.failed.size > 0
    assert set(res.status_counts) <= {"success", "max_steps_reached"}
    np.testing.assert_array_equal(res.failed, np.flatnonzero(res.status != 0))
    # a rerun of chosen samples reports their sample numbers, not its row positions (it said [1]
    # for sample 6 of indices=[5, 6], and a rerun of that would have run sample 1)
    pick = np.concatenate([np.flatnonzero(res.status == 0)[:2], res.failed[:2]])[::-1]
    again = mc.run(s, DISTS, 40, qmax, chunk_size=40, progress=False, indices=pick)  # the same program
    np.testing.assert_array_equal(again.sample_index, pick)
    np.testing.assert_array_equal(again.status, res.status[pick])
    np.testing.assert_array_equal(again.failed, pick[res.status[pick] != 0])


def test_save_writes_the_contract(reference, tmp_path):
    reference.save(tmp_path)
    z = np.load(tmp_path / "samples.npz")
    assert {"q0.arm", "body.arm.mass", "status", "qmax", "q_final", "v_final"} <= set(z.files)
    assert z["q_final"].shape == (40, 1)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {"n_samples", "status_counts", "samples_per_s", "wall_time_s", "statistics"} <= set(summary)
    assert set(summary["statistics"]["qmax"]) >= {"mean", "std", "quantiles"}
    assert (tmp_path / "hist_qmax.png").exists() and (tmp_path / "sensitivity.png").exists()
    # a study in which every sample failed is saved too (status and summary say why), without figures
    failed = dataclasses.replace(reference, status=np.full(40, int(ds.Status.MAX_STEPS_REACHED)))
    with pytest.warns(mc.MonteCarloWarning, match="figures: no successful sample"):
        paths = failed.save(tmp_path / "failed")
    assert [p.name for p in paths] == ["samples.npz", "summary.json"]
    summary = json.loads((tmp_path / "failed" / "summary.json").read_text())
    assert summary["status_counts"] == {"max_steps_reached": 40} and summary["statistics"]["qmax"]["mean"] is None


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_quantile_bands_over_time(tmp_path):
    """save(bands={name: t}): the quantiles of a time-series statistic over time, as a figure;
    the bands are the per-time quantiles of the samples' paths."""
    s = pendulum_system()
    res = mc.run(s, DISTS, 16, lambda tr: {"q_path": tr.q[:, 0], "t": tr.t}, chunk_size=16, progress=False)
    t = res.statistics["t"][0]
    paths = res.save(tmp_path, bands={"q_path": t})
    assert tmp_path / "bands_q_path.png" in paths
    # the path's first value is the drawn release angle, its last the final state
    np.testing.assert_array_equal(res.statistics["q_path"][:, 0], res.draws["q0.arm"][:, 0])
    np.testing.assert_array_equal(res.statistics["q_path"][:, -1], res.statistics["q_final"][:, 0])
    with pytest.raises(ValueError, match="no statistic 'nope'"):
        res.save(tmp_path, bands={"nope": t})
    with pytest.raises(ValueError, match="first axis must be the 3 times"):
        res.save(tmp_path, bands={"q_path": t[:3]})


def test_bad_input_is_refused_clearly(tmp_path):
    s = pendulum_system()
    with pytest.raises(mc.MonteCarloError, match="did you mean"):
        mc.run(s, {"q0.armm": mc.Normal(1.0, 0.1)}, 4, progress=False)
    with pytest.raises(mc.DistributionError, match="sigma must be > 0"):
        mc.Normal(1.0, 0.0)
    with pytest.raises(mc.DistributionError, match="lo < hi"):
        mc.Uniform(2.0, 1.0)
    with pytest.raises(mc.DistributionError, match="normal: mu must be finite"):
        mc.parse("normal(nan,1)")
    with pytest.raises(mc.DistributionError, match="uniform: lo must be finite"):
        mc.parse("uniform(-inf,inf)")
    assert mc.TruncatedNormal(0.0, 1.0, 0.0, np.inf).hi == np.inf  # one-sided truncation is a distribution
    with pytest.raises(mc.MonteCarloError, match="its Normal's mu has shape .2,., which does not broadcast"):
        mc.run(s, {"body.arm.mass": mc.Normal(jnp.array([1.0, 2.0]), 0.1)}, 4, progress=False)  # was JAX's error
    with pytest.raises(mc.DistributionError, match="cannot read"):
        mc.parse("gauss(1,2)")
    assert mc.parse("lognormal(0, 0.5)") == mc.LogNormal(0.0, 0.5)
    with pytest.raises(mc.MonteCarloError, match="dict of arrays.*not a valid JAX type"):
        mc.run(s, DISTS, 4, lambda tr: {"bad": "text"}, progress=False)
    with pytest.raises(mc.MonteCarloError, match="dict"):
        mc.run(s, DISTS, 4, lambda tr: tr.q[-1], progress=False)
    mc.run(s, DISTS, 4, chunk_size=4, out=tmp_path / "a", progress=False)
    with pytest.raises(mc.MonteCarloError, match="different study"):
        mc.run(s, {"q0.arm": mc.Normal(1.0, 0.2)}, 4, chunk_size=4, out=tmp_path / "a", progress=False)
    for bad in (0, 2.5, True, "big"):
        with pytest.raises(mc.MonteCarloError, match="batch_size must be a positive integer"):
            mc.run(s, DISTS, 4, progress=False, batch_size=bad)


def test_a_failed_write_leaves_no_partial_file_and_resumes(reference, tmp_path, monkeypatch):
    """Disk full while chunk 2 is written: a clear error, no partial chunk, the manifest and the
    finished chunks intact; once there is space, a rerun resumes to the same results."""
    import errno

    import diffsim.montecarlo.study as study

    real_savez, calls = np.savez, []

    def savez(fh, **arrays):
        calls.append(1)
        if len(calls) == 3:
            fh.write(b"PK partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        real_savez(fh, **arrays)

    monkeypatch.setattr(study.np, "savez", savez)
    out = tmp_path / "study"
    with pytest.raises(mc.MonteCarloError, match="No space left on device.*rerun with the same arguments"):
        mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, out=out, progress=False)
    assert sorted(f.name for f in (out / "chunks").iterdir()) == ["chunk_000000.npz", "chunk_000001.npz"]
    json.loads((out / "manifest.json").read_text())
    monkeypatch.setattr(study.np, "savez", real_savez)
    res = mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, out=out, progress=False)
    assert res.chunks_resumed == 2 and res.chunks_run == 3 and res.samples_run == 24  # the rate counts these
    np.testing.assert_array_equal(res.statistics["qmax"], reference.statistics["qmax"])


SCRIPT = textwrap.dedent("""
    import sys, time, jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, {tests!r})
    from montecarlo.test_run import DISTS, pendulum_system, qmax
    from diffsim import montecarlo as mc

    import diffsim.montecarlo.study as r
    orig = r._write_chunk
    def write(*a):  # slow the study down so that the kill lands between chunks
        orig(*a); time.sleep(1.0)
    r._write_chunk = write
    mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, out={out!r}, progress=False)
""")


@pytest.mark.slow
def test_a_killed_run_resumes_bit_identically(reference, tmp_path):
    out = tmp_path / "study"
    code = SCRIPT.format(tests=os.path.dirname(os.path.dirname(__file__)), out=str(out))
    p = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)

    def n_done():
        return len(list((out / "chunks").glob("chunk_*.npz"))) if (out / "chunks").exists() else 0
    for _ in range(1200):  # a hang guard (at most ~4 min of polling), not a timing
        if n_done() >= 2 or p.poll() is not None:
            break
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    done = n_done()
    assert 2 <= done < 5, done
    res = mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, out=out, progress=False)
    assert res.chunks_resumed == done and res.chunks_run == 5 - done
    for k in reference.statistics:
        np.testing.assert_array_equal(res.statistics[k], reference.statistics[k])


SHARDED = textwrap.dedent("""
    import os, sys
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, {tests!r})
    from montecarlo.test_run import DISTS, pendulum_system, qmax
    from diffsim import montecarlo as mc
    assert len(jax.local_devices()) == 2
    two = mc.run(pendulum_system(), DISTS, 20, qmax, chunk_size=8, progress=False)
    one = mc.run(pendulum_system(), DISTS, 20, qmax, chunk_size=8, devices=jax.local_devices()[:1], progress=False)
    assert two.n_devices == 2 and one.n_devices == 1
    for k in one.statistics:
        np.testing.assert_array_equal(two.statistics[k], one.statistics[k])
    # blocks of 2 samples per device (lax.map under shard_map; shares padded to whole blocks):
    # 2 devices x 2 blocks, 1 device x 4 blocks and 1 device with chunks of 6 (3 blocks) agree bit for bit
    b2 = [mc.run(pendulum_system(), DISTS, 20, qmax, chunk_size=c, batch_size=2, devices=d, progress=False)
          for c, d in ((8, None), (8, jax.local_devices()[:1]), (6, jax.local_devices()[:1]))]
    for r in b2[1:]:
        for k in one.statistics:
            np.testing.assert_array_equal(r.statistics[k], b2[0].statistics[k])
    print("OK")
""")


@pytest.mark.slow
def test_sharding_over_two_devices_gives_the_same_results():
    """Two CPU devices (XLA's host-platform device count): each chunk is split over a Mesh along
    the batch axis; the samples' results are those of one device, bit for bit, also when each
    device runs its share in blocks (``batch_size``)."""
    code = SHARDED.format(tests=os.path.dirname(os.path.dirname(__file__)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]


TWO_PROCESSES = textwrap.dedent("""
    import sys
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address="127.0.0.1:{port}", num_processes=2, process_id=int(sys.argv[1]))
    sys.path.insert(0, {tests!r})
    from montecarlo.test_run import DISTS, pendulum_system, qmax
    from diffsim import montecarlo as mc
    res = mc.run(pendulum_system(), DISTS, 40, qmax, chunk_size=8, out={out!r}, progress=False)
    assert res.chunks_run == (3 if jax.process_index() == 0 else 2), res.chunks_run  # chunks 0,2,4 / 1,3
    np.save({out!r} + f"/qmax_{{jax.process_index()}}.npy", res.statistics["qmax"])
""")


@pytest.mark.slow
def test_two_processes_share_a_study_through_jax_distributed(reference, tmp_path):
    """Two processes on this machine (jax.distributed, CPU, gloo barrier) split the chunks of one
    study; each returns the whole study, equal bit for bit to a single-process run."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "shared"
    code = TWO_PROCESSES.format(port=port, tests=os.path.dirname(os.path.dirname(__file__)), out=str(out))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
    for i in range(2):
        np.testing.assert_array_equal(np.load(out / f"qmax_{i}.npy"), reference.statistics["qmax"])
    summary = json.loads((out / "summary.json").read_text())  # the study's counts, not process 0's (3 chunks, 24)
    assert (summary["chunks_run"], summary["samples_run"], summary["n_processes"]) == (5, 40, 2), summary
    assert summary["samples_per_s"] == pytest.approx(40 / summary["wall_time_s"])
    assert (out / "samples.npz").exists()


@pytest.mark.slow
def test_blocks_make_large_chunks_bit_identical():
    """On CPU each device's share runs in blocks of ``CPU_BLOCK`` samples (``batch_size="auto"``),
    so a study gives the same bits whatever the chunk size. S0 with four link masses drawn, chunks
    of 1024 and 256: measured without blocks (``batch_size=None``: one vmap per chunk), 79 % of the
    samples differed in the last bit (XLA's code for a vmap depends on its size)."""
    from diffsim.scenarios import seed000

    m = seed000.model()
    s = ds.System(m, ds.neutral_configuration(m), jnp.zeros(m.nv), loads=seed000.loads(m), t1=0.02, solver="rk4",
                  dt0=1e-3, saveat=2, max_steps=28)
    dists = {f"body.{b}.mass": mc.Normal(61.27, 3.0) for b in ("a1l1", "a1l2", "a2l1", "a2l2")}
    dev = jax.local_devices()[:1]
    big = mc.run(s, dists, 1024, chunk_size=1024, devices=dev, progress=False)
    small = mc.run(s, dists, 1024, chunk_size=256, devices=dev, progress=False)
    assert big.status_counts == {"success": 1024}
    for k in big.statistics:
        np.testing.assert_array_equal(small.statistics[k], big.statistics[k])


@pytest.mark.slow  # compiles its own study (~5 s)
def test_draws_outside_the_physical_domain_are_marked_not_counted_as_success():
    """Normal(0.5, 1) over a mass draws negative masses; those samples ran to 'success' before.
    They keep their draws and results, with status INVALID_PARAMETER; the others are untouched."""
    res = mc.run(pendulum_system(), {"body.arm.mass": mc.Normal(0.5, 1.0)}, 16, qmax, chunk_size=16, progress=False)
    neg = res.draws["body.arm.mass"] <= 0
    assert neg.any() and (~neg).any()
    np.testing.assert_array_equal(res.status[neg], int(ds.Status.INVALID_PARAMETER))
    np.testing.assert_array_equal(res.status[~neg], int(ds.Status.SUCCESS))
    np.testing.assert_array_equal(res.failed, np.flatnonzero(neg))
    assert "outside its physical domain" in res.summary_json()["failure_messages"]["invalid_parameter"]
