"""Figures a person can read (issue 19, findings 8 and 9): the plotting functions on small
synthetic data, inspected through matplotlib's objects (tests/figure_checks.py). Every figure of
every scenario is inspected after a short run in tests/scenarios/test_scenario_figures.py (slow)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from diffsim import viz
from diffsim.scenarios import spinup
from figure_checks import problems


@pytest.fixture
def saved(monkeypatch):
    """The figures written during the test (Figure.savefig recorded, files still written)."""
    figs = []
    original = Figure.savefig

    def record(self, *a, **k):
        figs.append(self)
        return original(self, *a, **k)

    monkeypatch.setattr(Figure, "savefig", record)
    return figs


def test_finding8_balance_figure_is_readable(saved, tmp_path):
    """S0's balance figure: the error is exactly 0 at t = 0 (the old + 1e-300 floor put the log
    axis at 1e-300), the curves need a legend, the error a unit and 'absolute'."""
    t = np.linspace(0.0, 10.0, 101)
    rng = np.random.default_rng(0)
    change = np.stack([np.sin(t), t, t**2], 1)
    applied = change + 1e-13 * rng.standard_normal(change.shape) * (t[:, None] > 0)
    viz.plot_conservation(t, {"linear momentum vs impulse [N s]": (change, applied),
                              "kinetic energy vs work [J]": (t**2, t**2 + 1e-12 * t)}, tmp_path / "balance.png")
    (fig,) = saved
    assert problems(fig, "balance.png") == []
    err_axes = [ax for ax in fig.axes if ax.get_yscale() == "log"]
    assert len(err_axes) == 2
    assert err_axes[0].get_ylabel() == "absolute error [N s]" and err_axes[1].get_ylabel() == "absolute error [J]"
    assert err_axes[0].get_ylim()[0] > 1e-17


def test_a_balance_that_went_non_finite_is_marked_not_called_exact(saved, tmp_path):
    """Errors NaN from t = 0.6 on (a diverged run) were drawn as a flat 0 labelled 'exactly 0'."""
    t = np.linspace(0.0, 1.0, 11)
    change = np.where(t > 0.55, np.nan, 0.0)
    viz.plot_conservation(t, {"energy [J]": (change, np.zeros(11))}, tmp_path / "balance.png")
    (fig,) = saved
    labels = [h.get_label() for ax in fig.axes for h in [*ax.get_lines(), *ax.patches]]
    assert not any("exactly 0" in lab for lab in labels)
    assert "non-finite (5 of 11 times)" in labels
    assert problems(fig) == []


def test_per_body_panels_keep_time_ticks_above_an_empty_slot(saved, tmp_path):
    """Four bodies in a 2 × 3 grid: the panels above the two empty slots had 't [s]' and no tick values."""
    t = np.linspace(0.0, 1.0, 11)
    viz.plot_body_com_displacement(t, np.zeros((11, 4, 3)) + t[:, None, None], list("abcd"), tmp_path / "com.png")
    (fig,) = saved
    assert problems(fig) == []


def test_finding9_spinup_limits_follow_the_data(saved, tmp_path):
    """``spin-up-beam --set t1=2``: a 0.1 m deflection was drawn on a fixed −3 … 1 m axis."""
    t = np.linspace(0.0, 2.0, 41)
    case = lambda s: dict(t=t, tip=-0.1 * s * (t / 2) ** 2, torque=50 * s * t, status="success")  # noqa: E731
    res = {"with stiffening": case(1.0), "without stiffening": case(1.1)}
    spinup.figures(res, {"omega_s": 6.0, "n_modes": 4}, tmp_path)
    assert [problems(f) for f in saved] == [[], []]
    lo, hi = saved[0].axes[0].get_ylim()
    assert -0.13 < lo < -0.11 and -0.01 < hi < 0.01


def test_spinup_limits_follow_the_converged_case_when_one_diverges(saved, tmp_path):
    t = np.linspace(0.0, 30.0, 61)
    res = {"with stiffening": dict(t=t, tip=-0.5 * np.sin(t / 5), torque=100 * np.sin(t / 5), status="success"),
           "without stiffening": dict(t=t, tip=-np.exp(t / 3), torque=np.exp(t), status="max_steps_reached")}
    spinup.figures(res, {"omega_s": 6.0, "n_modes": 4}, tmp_path)
    lo, hi = saved[0].axes[0].get_ylim()
    assert -0.6 < lo < -0.5 and 0.5 < hi < 0.6


def test_the_checker_finds_unreadable_figures():
    fig = Figure()
    ax = fig.subplots()
    t = np.linspace(0, 1, 11)
    ax.plot(t, 0.1 * t)
    ax.plot(t, 1e-3 * t)
    ax.set_ylim(-3, 1)
    found = problems(fig)
    assert any("no legend" in p for p in found) and any("without label" in p for p in found)
    assert any("limits do not follow" in p for p in found)
    fig = Figure()
    ax = fig.subplots()
    ax.semilogy(t, np.abs(np.sin(t)) + 1e-300)
    ax.set(xlabel="t [s]", ylabel="e [m]")
    assert any("log axis" in p for p in problems(fig))
