"""The S0 reproduction through the CLI (the user's path): files, keys, momentum check."""

import json

import numpy as np
import pytest

from diffsim.catalog import CATALOG
from diffsim.cli import main
from diffsim.scenarios import SCENARIOS


@pytest.fixture(scope="module")
def s0_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("s0")
    code = main(["run", "seed000-dual-arm", "--out", str(out), "--set", "n_save=201"])
    return code, out


def test_s0_cli_writes_results_and_momentum_balances(s0_run):
    code, out = s0_run
    assert code == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["status"] == "success"
    assert s["momentum_check"]["linear_rel_error"] <= 1e-9
    assert s["momentum_check"]["angular_rel_error"] <= 1e-9
    assert s["energy_check"]["work_rel_error"] <= 1e-9
    d = np.load(out / "trajectory.npz")
    T, nb = d["t"].shape[0], len(d["body_names"])
    assert list(d["body_names"]) == ["base", "a1l1", "a1l2", "a2l1", "a2l2"]
    assert d["t"][0] == 0.0 and d["t"][-1] == 10.0 and T == 201
    assert d["body_com"].shape == (T, nb, 3) and d["body_quat"].shape == (T, nb, 4)
    assert d["attitude_euler_xyz"].shape == (T, nb, 3) and np.all(d["attitude_euler_xyz"][0] == 0.0)
    assert d["q"].shape == (T, 7 + 4 * 4) and d["v"].shape == (T, 6 + 3 * 4)
    # zero initial state; the applied impulse is what moved the system's momentum
    np.testing.assert_allclose(d["linear_momentum"][-1], d["linear_impulse"][-1], rtol=1e-9)
    for fig in ("com_displacement.png", "attitudes.png", "balance.png"):
        assert (out / fig).stat().st_size > 10_000


def test_s0_total_momentum_equals_total_impulse_from_forces(s0_run):
    """Independent of the integrator's bookkeeping: with follower forces of constant magnitude
    |F1| = √3, |F2| = √12 the impulse magnitude is bounded by (|F1| + |F2|) t."""
    _, out = s0_run
    d = np.load(out / "trajectory.npz")
    bound = (np.sqrt(3) + np.sqrt(12)) * d["t"]
    assert np.all(np.linalg.norm(d["linear_momentum"], axis=1) <= bound + 1e-12)


def test_cli_help_lists_scenarios_and_rejects_bad_options(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    runnable = [name for name in SCENARIOS if "run" in CATALOG[name].jobs]
    assert "ur5-reach" not in runnable  # a planning-only scenario: listed by `diffsim plan --help`
    for name in runnable:
        assert name in text
    assert main(["run", "seed000-dual-arm", "--out", str(tmp_path), "--set", "nonsense=1"]) == 2
    assert "unknown option 'nonsense'" in capsys.readouterr().err
    assert main(["run", "no-such-scenario", "--out", str(tmp_path)]) == 2
    assert main(["run", "seed000-dual-arm", "--out", str(tmp_path), "--set", "body.nobody.mass=3"]) == 2
    assert "unknown parameter" in capsys.readouterr().err


def test_cli_set_overrides_a_named_parameter(s0_run, tmp_path):
    """``--set body.base.mass=800``: recorded in the summary, and a heavier base moves less."""
    _, out = s0_run
    code = main(["run", "seed000-dual-arm", "--out", str(tmp_path), "--set", "body.base.mass=800",
                 "--set", "t1=1", "--set", "n_save=11", "--set", "plots=false"])
    assert code == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["overrides"] == {"body.base.mass": 800.0} and s["options"]["t1"] == 1.0
    heavy = np.load(tmp_path / "trajectory.npz")
    light = np.load(out / "trajectory.npz")
    k = int(np.argmin(np.abs(light["t"] - 1.0)))
    assert light["t"][k] == 1.0
    d_heavy = np.linalg.norm(heavy["body_com"][-1, 0] - heavy["body_com"][0, 0])
    d_light = np.linalg.norm(light["body_com"][k, 0] - light["body_com"][0, 0])
    assert 0 < d_heavy < d_light
