"""What a study reports (``summary.json``, ``samples.npz``, figures), checked on results built from
arrays (no simulation): each case is one a review found reported wrongly or not at all.

Independent references: the sample standard deviation written out (``√(Σ(x − x̄)²/(n − 1))``), counts
by hand, ``np.load`` of the written archive."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from diffsim import montecarlo as mc
from diffsim.montecarlo import MonteCarloResult
from diffsim.montecarlo.study import MAX_FAILED_LISTED


def result(draws, stats, status=None, **kw):
    n = len(next(iter(draws.values())))
    status = np.zeros(n, np.int32) if status is None else np.asarray(status, np.int32)
    fields = dict(wall_time_s=2.0, chunk_size=n, n_devices=1, chunks_run=1, chunks_resumed=0) | kw
    return MonteCarloResult({k: np.asarray(v, float) for k, v in draws.items()},
                            {k: np.asarray(v, float) for k, v in stats.items()}, status, **fields)


def written(tmp_path, res, **kw):
    with pytest.warns(mc.MonteCarloWarning) if kw.pop("warns", False) else _nothing():
        paths = res.save(tmp_path, **kw)
    return {p.name for p in paths}, json.loads((tmp_path / "summary.json").read_text())


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _std(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def test_std_is_the_sample_std_and_undefined_below_two_values(tmp_path):
    """It was the population std (ddof = 0: 1.247 for [1, 2, 4] instead of 1.528), and 0.0 for one
    sample, which reads as a measured spread of zero."""
    res = result({"p": [10.0, 20.0, 30.0]}, {"y": [1.0, 2.0, 4.0], "w": [[1.0, np.nan], [3.0, np.nan], [5.0, 7.0]]})
    s = res.summary_json()
    assert s["statistics"]["y"]["std"] == pytest.approx(_std([1.0, 2.0, 4.0]), rel=1e-15)
    assert s["inputs"]["p"]["std"] == pytest.approx(_std([10.0, 20.0, 30.0]), rel=1e-15)
    w = s["statistics"]["w"]["std"]
    assert w[0] == pytest.approx(2.0, rel=1e-15) and np.isnan(w[1])  # one finite value: undefined
    _, doc = written(tmp_path, result({"p": [1.0]}, {"y": [3.0]}))
    assert doc["statistics"]["y"]["std"] is None and doc["inputs"]["p"]["std"] is None  # null, not 0.0


def test_non_finite_is_counted_per_component_and_per_sample(tmp_path):
    """``non_finite`` was one number summed over components (7 for one NaN sample of a 7-vector,
    1 for a scalar); a component without any finite value vanished from its histogram unnoted."""
    w = np.array([[np.nan, np.nan, np.nan], [1.0, 2.0, np.nan], [3.0, 4.0, 5.0], [5.0, 6.0, 7.0]])
    z = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan], [4.0, np.nan]])
    res = result({"p": [1.0, 2.0, 3.0, 4.0]}, {"w": w, "z": z})
    names, doc = written(tmp_path, res, warns=True)
    st = doc["statistics"]
    assert st["w"]["non_finite"] == [1, 1, 2] and st["w"]["non_finite_samples"] == 2
    assert st["z"]["non_finite"] == [0, 4] and st["z"]["non_finite_samples"] == 4
    assert "z[1]" in doc["figures_skipped"]["z"] and "hist_z.png" in names


def test_a_component_that_varies_by_rounding_only_gets_one_labelled_bin(tmp_path):
    """NumPy cannot cut a range of a few ulp into bins: the save (and ``diffsim montecarlo``) ended
    in an internal error after the study had run (S0's base quaternion w over a short horizon)."""
    w = 0.999999999999988
    q = np.array([w, np.nextafter(w, 2), np.nextafter(np.nextafter(w, 2), 2), w])
    res = result({"p": [1.0, 2.0, 3.0, 4.0]}, {"q": q, "y": [1.0, 2.0, 3.0, 5.0]})
    names, _ = written(tmp_path, res)
    assert {"hist_q.png", "hist_y.png", "sensitivity.png"} <= names


def test_sensitivity_rows_put_the_users_statistics_first_and_name_what_is_left_out(tmp_path):
    """Six output rows in total, in the statistics' (alphabetical) order: ``q_final`` filled them
    and a user statistic named after it (``tip_error``) never appeared, without a word."""
    rng = np.random.default_rng(0)
    n = 20
    stats = {"q_final": rng.normal(size=(n, 6)), "v_final": rng.normal(size=(n, 6)), "tip_error": rng.normal(size=n),
             "base": rng.normal(size=(n, 2))}
    stats = dict(sorted(stats.items()))  # the order a run returns them in (pytree flattening)
    import diffsim.montecarlo.report as report

    rows = []
    orig = report.new_figure

    def spy(nrows, ncols, **kw):
        fig, axes = orig(nrows, ncols, **kw)
        rows.append(axes)
        return fig, axes

    report.new_figure = spy
    try:
        names, doc = written(tmp_path, result({"p": rng.normal(size=n)}, stats), warns=True)
    finally:
        report.new_figure = orig
    labels = [ax.get_ylabel() for ax in rows[-1][:, 0]]
    assert labels == ["base[0]", "base[1]", "tip_error", "q_final[0]", "q_final[1]", "q_final[2]"]
    left = doc["figures_skipped"]["sensitivity.png"]
    assert left.startswith("6 output rows of 15") and "q_final[3]" in left and "v_final[5]" in left


def test_a_rerun_of_chosen_samples_names_its_samples_in_both_files(tmp_path):
    res = result({"p": [1.0, 2.0, 3.0]}, {"y": [1.0, 2.0, 3.0]}, status=[0, 3, 0], sample_index=np.array([17, 42, 99]))
    _, doc = written(tmp_path, res)
    with np.load(tmp_path / "samples.npz") as z:
        np.testing.assert_array_equal(z["sample_index"], [17, 42, 99])
        assert z["status"][1] != 0
    assert doc["sample_index"] == [17, 42, 99] and doc["failed_indices"] == [42]


def test_statistics_named_like_savez_keywords_are_written(tmp_path):
    """``np.savez_compressed(path, **arrays)`` took ``allow_pickle`` as its keyword (the statistic
    vanished) and raised on ``file``."""
    res = result({"p": [1.0, 2.0]}, {"allow_pickle": [3.0, 4.0], "file": [5.0, 6.0]})
    written(tmp_path, res)
    with np.load(tmp_path / "samples.npz") as z:
        assert set(z.files) == {"status", "p", "allow_pickle", "file"}
        np.testing.assert_array_equal(z["allow_pickle"], [3.0, 4.0])
        np.testing.assert_array_equal(z["file"], [5.0, 6.0])


def test_failures_beyond_the_listed_ones_are_counted_and_marked(tmp_path):
    n = MAX_FAILED_LISTED + 300
    status = np.r_[np.zeros(200), np.full(n, 3)].astype(np.int32)
    res = result({"p": np.arange(n + 200.0)}, {"y": np.arange(n + 200.0)}, status=status)
    doc = res.summary_json()
    assert doc["n_failed"] == n and len(doc["failed_indices"]) == MAX_FAILED_LISTED
    assert doc["failed_indices_truncated"] is True
    assert result({"p": [1.0]}, {"y": [1.0]}, status=[3]).summary_json()["failed_indices_truncated"] is False


def test_no_successful_sample_is_said_in_the_summary_and_a_warning(tmp_path):
    res = result({"p": [1.0, 2.0]}, {"y": [1.0, 2.0]}, status=[3, 3])
    names, doc = written(tmp_path, res, warns=True)
    assert names == {"samples.npz", "summary.json"} and "no successful sample" in doc["figures_skipped"]["*"]


def test_the_summary_says_what_each_block_covers_and_how_much_ran(tmp_path):
    res = result({"p": [1.0, 2.0, 9.0]}, {"y": [1.0, 2.0, 3.0]}, status=[0, 0, 7], samples_run=1, chunks_run=1,
                 chunks_resumed=2)
    doc = res.summary_json()
    assert doc["inputs"]["p"]["mean"] == pytest.approx(4.0)  # every sample, the invalid one included
    assert doc["statistics"]["y"]["mean"] == pytest.approx(1.5)  # the successful ones
    assert set(doc["populations"]) == {"inputs", "statistics"}
    assert (doc["samples_run"], doc["chunks_run"], doc["chunks_resumed"], doc["n_processes"]) == (1, 1, 2, 1)
    assert doc["samples_per_s"] == pytest.approx(0.5)  # the simulated samples over this call's time
