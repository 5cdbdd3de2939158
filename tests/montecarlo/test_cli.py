"""``diffsim montecarlo``: the samples.npz / summary.json contract, resume, and refusals."""

import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from diffsim.cli import UserError, cpu_devices
from diffsim.cli import main as cli

ARGS = ["montecarlo", "ball-drop", "--samples", "12", "--vary", "c_r~uniform(0.6,0.9)", "--vary",
        "K~lognormal(13.8,0.2)", "--set", "t1=0.5", "n_save=26", "--chunk", "4", "--no-progress"]


@pytest.mark.slow
def test_montecarlo_cli_writes_the_contract_and_resumes(tmp_path):
    out = str(tmp_path / "mc")
    assert cli([*ARGS, "--out", out]) == 0
    z = np.load(tmp_path / "mc" / "samples.npz")
    assert {"contact.c_r", "contact.K", "status", "q_final", "v_final", "impacts", "rebound_max_z"} <= set(z.files)
    assert z["q_final"].shape == (12, 7) and z["v_final"].shape == (12, 6) and z["status"].shape == (12,)
    assert np.all((z["contact.c_r"] > 0.6) & (z["contact.c_r"] < 0.9))
    assert np.all(z["impacts"] >= 1)  # the ball reaches the plane by t = 0.5 s in every sample
    s = json.loads((tmp_path / "mc" / "summary.json").read_text())
    assert s["n_samples"] == 12 and s["status_counts"] == {"success": 12}
    assert {"samples_per_s", "wall_time_s", "statistics"} <= set(s)
    assert {"mean", "std", "quantiles"} <= set(s["statistics"]["rebound_max_z"])
    # a rerun without --resume is refused; with it, every chunk is read back, same numbers
    assert cli([*ARGS, "--out", out]) == 2
    first = {k: z[k] for k in z.files}
    assert cli([*ARGS, "--out", out, "--resume"]) == 0
    z2 = np.load(tmp_path / "mc" / "samples.npz")
    for k, v in first.items():
        np.testing.assert_array_equal(z2[k], v)
    # a different study in the same directory is refused
    assert cli([*[a.replace("0.9)", "0.95)") for a in ARGS], "--out", out, "--resume"]) == 2
    assert cli(["montecarlo", "ball-drop", "--samples", "4", "--vary", "c_r~gauss(1,2)", "--out", out + "x"]) == 2
    assert cli(["montecarlo", "spin-up-beam", "--samples", "4", "--vary", "K~normal(1,2)", "--out", out + "y"]) == 2


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_cpu_devices_default_to_the_core_count_before_jax_starts():
    """``diffsim montecarlo`` shards over one CPU device per core (one per process in a multi-host
    run); an explicit count that can no longer be applied is a user error, not ignored."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    code = ("from diffsim.cli import cpu_devices; import sys; cpu_devices(None, multi_host=sys.argv[1] == 'mh'); "
            "import jax; print(len(jax.devices('cpu')))")
    for mode, expected in (("one", os.cpu_count()), ("mh", 1)):
        out = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        assert int(out.stdout.split()[-1]) == expected
    jax.devices()  # this process's backend has started
    cpu_devices(None)  # the default leaves a running process alone
    with pytest.raises(UserError, match="already started"):
        cpu_devices(len(jax.devices("cpu")) + 1)
