"""The ball drop against an independent implementation (tests/ball_reference.py: closed-form
flights, SciPy contacts), and a fit of diffsim to that implementation's data."""

import numpy as np
import pytest
from ball_reference import heights

import diffsim as ds
from diffsim import identify as idf
from diffsim.scenarios.ball_drop import OBSERVABLES, height, system

SIGMA = 2e-5


@pytest.fixture(scope="module")
def ball():
    tr = ds.simulate(system({"rtol": 1e-12, "atol": 1e-12}))
    return np.asarray(tr.t), np.asarray(height(tr)), int(tr.contact.n_events)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_ball_drop_matches_the_independent_model(ball):
    """Four impacts in 1.2 s: the two implementations agree to far below the 2e-5 m noise of the
    fitting experiments (both integrate at rtol 1e-12; the differences are event location and
    dense-output interpolation)."""
    t, z, n_events = ball
    z_ref = heights(t, K=1e6, c_r=0.8)
    assert n_events == 8
    assert np.max(np.abs(z - z_ref)) < 1e-9
    assert np.max(np.abs(z - heights(t, K=1.01e6, c_r=0.8))) > 1e-6  # the comparison can fail


@pytest.mark.slow
def test_fit_to_the_independent_models_data_recovers_k_and_c_r(ball):
    t, _, _ = ball
    y = heights(t, K=1e6, c_r=0.8) + SIGMA * np.random.default_rng(11).standard_normal(t.shape)
    exp = idf.Experiment(t, {"z": y}, sigma={"z": SIGMA})
    start = ds.set_params(system({}), {"contact.K": 8e5, "contact.c_r": 0.75})
    res = idf.fit(start, ["contact.K", "contact.c_r"], exp, observables=OBSERVABLES)
    assert res.converged and not res.warnings, res.summary()
    for n, true in (("contact.K", 1e6), ("contact.c_r", 0.8)):
        assert abs(res.value[n] - true) < 3.29 * res.std[n], res.summary()  # 99.9 % for one noise draw
        assert res.std[n] < 0.01 * true
