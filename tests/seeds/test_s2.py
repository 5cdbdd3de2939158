"""S2 (seed 002) fast checks: the space robot's tip sequence of contact modes with rigid contact
by Lemke at the paper's step; the full study (step convergence, velocity level, compliant
contact converging to the LCP) is experiments/seed002_space_contact.py."""

import json

import numpy as np
import pytest

from diffsim.complementarity import STICK
from diffsim.scenarios import SCENARIOS, run_scenario
from diffsim.scenarios import seed002 as s2


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    out = tmp_path_factory.mktemp("s2")
    summary = run_scenario(SCENARIOS["seed002-space-contact"], out, ["plots=false"])
    a = dict(np.load(out / "trajectory.npz"))
    return out, summary, a


def _sequence(intervals, min_len=0.03):
    """The modes in time order, dropping blips shorter than ``min_len`` (a step or two at a
    landing) and merging repeats."""
    ivs = sorted((iv[0], iv[1], name) for name, v in intervals.items() for iv in v if iv[1] - iv[0] >= min_len)
    seq = []
    for _, _, name in ivs:
        if not seq or seq[-1] != name:
            seq.append(name)
    return seq


def test_mode_sequence_forces_and_travel_follow_the_paper(scenario):
    out, s, a = scenario
    assert s["status"] == "success" and s["lcp_failures"] == 0
    # paper: contact, separated 0.08–0.66, sliding +x, separated 1.89–2.43, sliding +x, sliding −x to 5 s
    assert _sequence(s["intervals"]) == ["sticking", "separated", "sliding_plus_x", "separated", "sliding_plus_x",
                                         "sliding_minus_x"]
    sep = [iv for iv in s["intervals"]["separated"] if iv[1] - iv[0] > 0.03]
    np.testing.assert_allclose(sep, [[0.08, 0.66], [1.89, 2.43]], atol=0.015)
    assert 1.0 < s["normal_force_max_N"] < 10.0  # "a few newtons" (paper: below 8 N)
    assert 0.5 * s2.PAPER["tip_travel_m"] < s["tip_travel_m"] < 2.0 * s2.PAPER["tip_travel_m"]
    # Coulomb: while sliding |λ_T| = μ λ_N, opposing the slip (λ_T < 0 toward +x, as in fig 8)
    lam, lt, slip, mode = a["lambda_N"], a["lambda_T"], a["slip"], a["mode"]
    sliding = (lam > 0) & (mode != STICK)
    np.testing.assert_allclose(np.abs(lt[sliding]), s2.DATA["mu"] * lam[sliding], rtol=1e-10)
    assert np.all(np.sign(lt[sliding]) == -np.sign(slip[sliding]))
    # rigid contact: the tip does not sink in beyond the stabilised drift
    assert a["gap"].min() > -1e-3
    # the contract: files and keys
    on_disk = json.loads((out / "summary.json").read_text())
    for key in ("intervals", "tip_travel_m", "normal_force_max_N", "status"):
        assert key in on_disk
    assert set(on_disk["intervals"]) == {"separated", "sticking", "sliding_plus_x", "sliding_minus_x"}


def test_halving_the_step_keeps_the_mode_switches(scenario):
    _, s, a = scenario
    m, rc, tr = s2.run(dt=0.005)
    a2 = s2.results(m, rc, tr)
    s_half = s2.summarize(a2)
    assert _sequence(s_half["intervals"]) == _sequence(s["intervals"])
    sep1 = [iv for iv in s["intervals"]["separated"] if iv[1] - iv[0] > 0.03]
    sep2 = [iv for iv in s_half["intervals"]["separated"] if iv[1] - iv[0] > 0.03]
    np.testing.assert_allclose(sep1, sep2, atol=0.011)  # one coarse step
    assert abs(s_half["tip_travel_m"] - s["tip_travel_m"]) < 0.05 * s["tip_travel_m"]


def test_cli_takes_several_settings_after_one_set(scenario, tmp_path):
    from diffsim.cli import main

    _, s, _ = scenario
    assert main(["run", "seed002-space-contact", "--set", "plots=false", "mu=0.3", "--out", str(tmp_path)]) == 0
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["options"]["plots"] is False and on_disk["intervals"] == s["intervals"]
    assert main(["run", "seed002-space-contact", "--set", "plots=false", "method=position", "--out", str(tmp_path)]) == 2
