"""The command line as a new user meets it (issue 19): every bad input is one line on stderr and
exit code 2 with nothing written, options are discoverable, ``--help`` does not import JAX.

Each test names the finding of issue 19 it reproduces. Tests that would run a simulation replace
the scenario's run (the CLI's handling is under test, not the physics)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from diffsim import cli, commands
from diffsim.catalog import CATALOG, parse_sets
from diffsim.options import OptionError
from diffsim.scenarios import SCENARIOS

REPO = Path(__file__).resolve().parents[1]


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("diffsim: "), err
    return err


def test_finding1_a_value_of_the_wrong_type_is_one_line_and_exit_2(capsys, tmp_path):
    out = tmp_path / "never"
    assert cli.main(["run", "seed000-dual-arm", "--set", "rtol=abc", "--out", str(out)]) == 2
    assert _one_line_error(capsys) == "diffsim: rtol expects a number, got 'abc'"
    assert cli.main(["run", "seed001-falling-chain", "--set", "n_save=2.5", "--out", str(out)]) == 2
    assert "n_save expects an integer" in _one_line_error(capsys)
    assert cli.main(["run", "ball-drop", "--set", "plots=maybe", "--out", str(out)]) == 2
    assert "plots expects true or false" in _one_line_error(capsys)
    assert cli.main(["run", "seed000-dual-arm", "--set", "F1=1,2", "--out", str(out)]) == 2
    assert "F1 expects 3 numbers" in _one_line_error(capsys)
    assert cli.main(["run", "seed000-dual-arm", "--set", "solver=euler", "--out", str(out)]) == 2
    assert "solver must be one of tsit5" in _one_line_error(capsys)
    assert not out.exists()  # nothing written


def test_finding2_a_value_out_of_range_is_refused(capsys, tmp_path):
    out = tmp_path / "never"
    assert cli.main(["run", "seed000-dual-arm", "--set", "t1=-1", "--out", str(out)]) == 2
    assert _one_line_error(capsys) == "diffsim: t1 must be > 0 s; got -1.0"
    for bad in ("rtol=0", "rtol=2", "n_save=1", "t1=nan", "t1=inf"):
        assert cli.main(["run", "ball-drop", "--set", bad, "--out", str(out)]) == 2, bad
        _one_line_error(capsys)
    assert cli.main(["run", "ball-drop", "--set", "c_r=1.5", "--out", str(out)]) == 2
    assert "c_r must be > 0 and <= 1" in _one_line_error(capsys)
    assert not out.exists()
    # +inf where the help gives it a meaning (a clamped root: "inf: clamped"), nowhere else
    k_root = CATALOG["flexible-hub"].options["k_root"]
    assert k_root.parse("inf", "k_root") == float("inf")
    for bad in ("-inf", "nan"):
        with pytest.raises(OptionError, match="k_root must be"):
            k_root.parse(bad, "k_root")


def _fake_run(monkeypatch, name, seen, figures=("a.png",)):
    """Replace scenario ``name``'s run by one that records its options (no simulation)."""

    def run(options, params, out):
        seen.append(options)
        return {"status": "success", "figures": list(figures) if options.get("plots", True) else []}

    monkeypatch.setitem(SCENARIOS, name, dataclasses.replace(SCENARIOS[name], run=run))


@pytest.mark.parametrize("name", [n for n, info in CATALOG.items() if "run" in info.jobs])
def test_finding3_every_scenario_takes_progress(monkeypatch, tmp_path, name):
    """--progress reaches every scenario's run (seed001/seed002 had no such option and ignored
    it); that each run shows progress is checked in tests/scenarios/test_scenario_runs.py."""
    seen = []
    _fake_run(monkeypatch, name, seen)
    assert cli.main(["run", name, "--progress", "--out", str(tmp_path)]) == 0
    assert seen[0]["progress"] is True
    assert CATALOG[name].options["progress"].default is False


def test_finding4_an_unwritable_output_directory_is_one_line(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for out in ("/proc/nope/x", str(blocker / "sub")):
        assert cli.main(["run", "ball-drop", "--set", "plots=false", "--out", out]) == 2
        err = _one_line_error(capsys)
        assert err.startswith(f"diffsim: cannot write to output directory '{out}'"), err


def test_debug_shows_the_traceback(capsys):
    assert cli.main(["run", "ball-drop", "--set", "t1=-1", "--debug", "--out", "/proc/nope"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().endswith("diffsim: t1 must be > 0 s; got -1.0")


def test_model_parameters_given_with_set_are_checked(capsys, tmp_path):
    """A single number for gravity was spread over x, y and z (9.81 upwards and sideways); a
    negative or non-finite mass ran to "success". Refused in one line, nothing written."""
    out = tmp_path / "never"
    for bad, message in (("gravity=9.81", "gravity expects 3 numbers"), ("gravity=0,-9.81", "gravity expects 3"),
                         ("body.ball.mass=-1", "parameter 'body.ball.mass' must be a body's mass, > 0"),
                         ("body.ball.mass=nan", "must be finite"), ("contact.K=inf", "must be finite")):
        assert cli.main(["run", "ball-drop", "--set", bad, "--out", str(out)]) == 2, bad
        assert message in _one_line_error(capsys), bad
    assert not out.exists()
    _, params = parse_sets(CATALOG["ball-drop"], ["gravity=[0, 0, -3.7]", "body.ball.mass=0.1"])
    assert params == {"gravity": [0.0, 0.0, -3.7], "body.ball.mass": 0.1}


def test_finding5_an_unknown_model_parameter_has_no_stray_quotes(capsys, tmp_path):
    """... and leaves no empty output directory behind (the name is found unknown after the
    directory was created to check it is writable); a directory that was there stays."""
    out = tmp_path / "new"
    assert cli.main(["run", "ball-drop", "--set", "body.nosuch.mass=3", "plots=false", "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert err.startswith("diffsim: unknown parameter 'body.nosuch.mass'"), err
    assert not out.exists()
    assert cli.main(["run", "ball-drop", "--set", "body.nosuch.mass=3", "--out", str(tmp_path)]) == 2
    _one_line_error(capsys)
    assert tmp_path.is_dir()


def test_finding6_options_are_discoverable_and_share_names(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "seed003-two-link", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for name in CATALOG["seed003-two-link"].options:
        assert f"\n  {name}=" in text, name
    assert "t1=0.628319 [s]" in text and "revolutions" not in text
    assert cli.main(["list", "--verbose"]) == 0
    text = capsys.readouterr().out
    assert "height=0.25 [m]" in text and "K=1e+06 [N/m^n]" in text
    # the same name for the same thing in every scenario: the end time is t1 [s] everywhere
    for info in CATALOG.values():  # (a planning task has a horizon of steps instead: ur5-reach)
        if "run" in info.jobs:
            assert info.options["t1"].unit == "s" and "end time" in info.options["t1"].help, info.name


def _entry_point():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module, func = scripts["diffsim"].split(":")
    return module, func


def test_finding7_help_and_list_import_no_jax():
    """The console command (the entry point of pyproject.toml) answers --help and list without
    importing JAX, NumPy or matplotlib (importing JAX took 6-9 s of `diffsim --help`)."""
    module, func = _entry_point()
    code = (f"import sys\nfrom {module} import {func} as main\nfor argv in (['--help'], ['list', '-v'], "
            "['run', 'ball-drop', '--help']):\n    sys.argv = ['diffsim', *argv]\n    try:\n        main()\n"
            "    except SystemExit:\n        pass\nheavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('jax', 'numpy', 'matplotlib', 'diffrax', 'equinox'))\nprint('HEAVY', heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout, proc.stdout[-500:]
    assert "usage: diffsim" in proc.stdout and "seed000-dual-arm" in proc.stdout


@pytest.mark.slow  # imports JAX in a fresh process
def test_the_entry_point_still_runs_commands(tmp_path):
    """Through the console entry point a computing command finishes the package import first
    (the error path of a real command: JAX imported, one line, exit 2)."""
    module, func = _entry_point()
    code = (f"import sys\nfrom {module} import {func} as main\nsys.argv = ['diffsim', 'run', 'ball-drop', "
            f"'--out', '/proc/nope']\ncode = main()\nimport diffsim\nprint('API', hasattr(diffsim, 'simulate'), "
            "'jax' in sys.modules)\nsys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert proc.returncode == 2, proc.stderr
    assert "API True True" in proc.stdout
    assert proc.stderr.strip().startswith("diffsim: cannot write to output directory '/proc/nope'")


def test_finding11_no_empty_figure_list(monkeypatch, capsys, tmp_path):
    seen = []
    _fake_run(monkeypatch, "ball-drop", seen)
    assert cli.main(["run", "ball-drop", "--set", "plots=false", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "figures: )" not in out and f"results written to {tmp_path}/ (trajectory.npz, summary.json)" in out
    assert cli.main(["run", "ball-drop", "--out", str(tmp_path)]) == 0
    assert "(trajectory.npz, summary.json, figures: a.png)" in capsys.readouterr().out
    assert json.loads((tmp_path / "summary.json").read_text())["options"]["plots"] is True


def test_unknown_names_and_jobs(capsys, tmp_path):
    assert cli.main(["run", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown scenario 'nope'; available: seed000-dual-arm" in _one_line_error(capsys)
    assert cli.main(["run", "ball-drop", "--set", "nonsense=1", "--out", str(tmp_path)]) == 2
    assert "unknown option 'nonsense'" in _one_line_error(capsys)
    assert cli.main(["run", "ball-drop", "--set", "K", "--out", str(tmp_path)]) == 2
    assert "--set expects name=value" in _one_line_error(capsys)
    assert cli.main(["montecarlo", "spin-up-beam", "--samples", "4", "--vary", "K~normal(1,2)", "--out",
                     str(tmp_path)]) == 2
    assert "does not support 'montecarlo' (it supports: run); these do: " in _one_line_error(capsys)
    with pytest.raises(SystemExit) as e:  # argparse's usage error for a declared flag
        cli.main(["montecarlo", "ball-drop", "--samples", "0", "--vary", "K~normal(1,2)", "--out", str(tmp_path)])
    assert e.value.code == 2 and "--samples must be >= 1" in capsys.readouterr().err


def test_fit_reports_a_missing_data_file_in_one_line(capsys, tmp_path):
    assert cli.main(["fit", "ball-drop", "--data", str(tmp_path / "none.csv"), "--params", "K", "--out",
                     str(tmp_path / "f")]) == 2
    assert _one_line_error(capsys) == f"diffsim: data file '{tmp_path / 'none.csv'}' not found"
    assert not (tmp_path / "f").exists()


def test_commands_cover_every_subcommand():
    assert set(commands.COMMANDS) == set(cli.SCENARIO_COMMANDS)


def test_plan_command_checks_its_input(capsys):
    """``diffsim plan``: a scenario without a planning task and a bad option are one-line errors."""
    from diffsim.cli import main

    assert main(["plan", "seed000-dual-arm", "--out", "/tmp/never"]) == 2
    assert "does not support 'plan'" in capsys.readouterr().err
    assert main(["plan", "ur5-reach", "--set", "horizon=0", "--out", "/tmp/never"]) == 2
    assert "horizon" in capsys.readouterr().err


@pytest.mark.slow
def test_plan_command_writes_the_plan(tmp_path, capsys):
    """``diffsim plan ur5-reach`` (a short horizon): plan.npz with t, tau, q, v; summary.json with
    cost, iterations, status and the task's figures of merit; exit 0 when converged."""
    import json

    import numpy as np

    from diffsim.cli import main

    code = main(["plan", "ur5-reach", "--set", "horizon=25", "dt=0.04", "max_iter=100", "--out", str(tmp_path)])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == (0 if summary["status"] == "converged" else 1)
    assert summary["status"] == "converged", summary
    assert {"cost", "iterations", "status", "first_call_s", "tool_error_m"} <= set(summary)
    with np.load(tmp_path / "plan.npz") as z:
        assert z["tau"].shape == (25, 6) and z["q"].shape == (26, 6) and z["v"].shape == (26, 6)
        assert z["t"].shape == (26,)
    assert summary["tool_error_m"] < 1e-2
    assert (tmp_path / "cost_history.png").exists()


def test_montecarlo_help_names_required_flags_and_its_example_runs_its_names(capsys):
    """A required flag's help says so (it said "default 1"), and the example's --vary names are
    names the scenario varies (it used 'height', an option, refused by the command)."""
    with pytest.raises(SystemExit) as e:
        cli.main(["montecarlo", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "number of samples (integer, >= 1; required)" in " ".join(text.split())
    example = text.split("example:")[1]
    varied = [v.split("~")[0].strip("'") for v in example.split("--vary ")[1:]]
    assert varied and set(varied) <= set(CATALOG["ball-drop"].aliases), varied


def test_float32_relaxes_the_tolerances_of_fit_and_montecarlo_too(monkeypatch, capsys, tmp_path):
    """``--float32`` put rtol/atol at float32's reach for ``run`` only; ``fit`` and ``montecarlo``
    kept the float64 defaults (down to 1e-13, below float32 round-off). The System each command
    builds now has 1e-6 unless the user sets them."""
    seen = []

    def system(info, sets):
        seen.append(sets)
        raise cli.UserError("stop here")  # the command's input is what is tested, not its run

    monkeypatch.setattr(commands, "_system", system)
    monkeypatch.setattr(commands, "_precision", lambda args: None)  # this process stays in float64
    data = tmp_path / "d.csv"
    data.write_text("t,z\n0,1\n1,2\n")
    assert cli.main(["fit", "ball-drop", "--float32", "--data", str(data), "--params", "K", "--out", str(tmp_path)]) == 2
    assert cli.main(["montecarlo", "ball-drop", "--float32", "--samples", "2", "--vary", "K~normal(1e6,1)",
                     "--set", "rtol=1e-5", "--out", str(tmp_path / "m")]) == 2
    assert cli.main(["montecarlo", "ball-drop", "--samples", "2", "--vary", "K~normal(1e6,1)", "--out",
                     str(tmp_path / "m")]) == 2
    capsys.readouterr()
    assert seen == [["rtol=1e-6", "atol=1e-6"], ["rtol=1e-6", "atol=1e-6", "rtol=1e-5"], []]


def test_help_of_a_scenario_the_command_cannot_run_is_the_error(capsys):
    """``diffsim run ur5-reach --help`` listed options ``run`` cannot use (exit 0), and an unknown
    scenario's help was the generic one; both are now the one-line error the command gives."""
    assert cli.main(["run", "ur5-reach", "--help"]) == 2
    assert "does not support 'run' (it supports: plan)" in _one_line_error(capsys)
    assert cli.main(["fit", "nosuch", "--help"]) == 2
    assert "unknown scenario 'nosuch'" in _one_line_error(capsys)
    with pytest.raises(SystemExit) as e:
        cli.main(["plan", "ur5-reach", "--help"])
    assert e.value.code == 0 and "horizon" in capsys.readouterr().out


def test_an_error_inside_numpy_is_internal_not_the_users(monkeypatch, capsys, tmp_path):
    """A ValueError that NumPy raises inside a command is a bug (exit 1, the hint to rerun with
    --debug and report it), where diffsim's own checks raising ValueError are user errors (exit 2):
    the all-failed Monte Carlo study's reshape crash was reported as a user mistake."""
    import numpy as np

    def crash(args, info):
        np.zeros(0).reshape(0, -1)  # NumPy: cannot reshape array of size 0 into shape (0,newaxis)

    assert cli.main(["run", "ball-drop", "--set", "body.nosuch.mass=3", "--out", str(tmp_path / "y")]) == 2
    assert "internal" not in _one_line_error(capsys)  # ParamError, raised by diffsim's check of the name
    monkeypatch.setitem(commands.COMMANDS, "run", crash)
    assert cli.main(["run", "ball-drop", "--out", str(tmp_path / "x")]) == 1
    err = _one_line_error(capsys)
    assert err.startswith("diffsim: internal error: cannot reshape") and "--debug" in err and "report" in err


@pytest.mark.parametrize("scenario, param", [("seed001-falling-chain", "joint.base.damping=0.1"),
                                             ("seed003-two-link", "beam.link2.EI_z=9.33"),
                                             ("spin-up-beam", "beam.beam.EI_z=140")])
def test_scenarios_that_build_their_models_per_case_refuse_model_parameters(scenario, param, capsys, tmp_path):
    """A review found these accepted a model parameter, listed it in summary.json's overrides, and
    ignored it (S3's tip deflection with EI/100 equal to the default run's)."""
    assert cli.main(["run", scenario, "--set", param, "--out", str(tmp_path / "never")]) == 2
    assert f"{scenario} takes no model-parameter overrides (got {param.split('=')[0]})" in _one_line_error(capsys)
    assert not (tmp_path / "never" / "summary.json").exists()


@pytest.mark.slow  # a float32 subprocess (~15 s)
def test_float32_runs_a_flexible_scenario_with_euler_bernoulli_shapes(tmp_path):
    """``--float32`` stopped spin-up-beam and seed003-two-link before they ran: the check that
    Euler–Bernoulli shapes have no shear strain (Theta = dW) used float64's 1e-9, and float32
    coefficients leave 3e-8 (the bound now follows JAX's float)."""
    r = subprocess.run([sys.executable, "-m", "diffsim", "run", "spin-up-beam", "--float32", "--set", "t1=0.05",
                        "n_save=3", "compare=false", "plots=false", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "summary.json").exists()


@pytest.mark.slow  # a float32 subprocess (~15 s)
def test_float32_ball_drop_locates_its_impact_and_separation(tmp_path):
    """With x64 off (all float32) the ball-drop state became non-finite at the first impact for
    every normal law: the pair the root find located was flipped only when its Δ at the located
    time was within 1e3 event_time_tol × Δ̇ (+1e-14 m) of 0, and float32 locates the time to ~1e-6 s
    (Δ to ~3e-6 m at 2.2 m/s), so no pair flipped and the segment ended as non-finite. The located
    pair now always flips. The onset is the free-fall time √(2h/g) to the float32 root find's
    tolerance (10 eps ≈ 1.2e-6 s, plus the dense output's float32 round-off)."""
    r = subprocess.run([sys.executable, "-m", "diffsim", "run", "ball-drop", "--float32", "--set", "t1=0.4",
                        "plots=false", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((tmp_path / "summary.json").read_text())
    assert (s["status"], s["events"]) == ("success", 2)  # onset and separation, then flight to t1
    h, g = s["options"]["height"], s["options"]["g"]
    assert abs(s["impact_times_s"][0] - (2 * h / g) ** 0.5) < 5e-6
    assert 0 < s["z_min_m"] < s["options"]["radius"]  # it penetrated, finitely
