"""Every scenario through the command line on a short run (slow: one compile each): it takes
``--progress`` and shows progress on stderr (issue 19, finding 3), and every figure it writes is
readable (findings 8 and 9: labelled axes with units, a legend for several curves, limits that
follow the data; ``spin-up-beam --set t1=2`` is the run of finding 9)."""

from __future__ import annotations

import json

import pytest
from matplotlib.figure import Figure

from diffsim.catalog import CATALOG
from diffsim.cli import main
from figure_checks import problems

SHORT = {
    "seed000-dual-arm": ["t1=0.05", "n_save=11"],
    "seed001-falling-chain": ["t1=0.05", "n_save=11"],
    "seed002-space-contact": ["t1=0.2"],
    "seed003-two-link": ["t1=0.05", "n_save=11"],
    "seed004-canadarm2": ["t1=0.05", "n_save=11"],
    "spin-up-beam": ["t1=2", "n_save=41"],
    "ball-drop": ["t1=0.3", "n_save=31"],
    "flexible-hub": ["t1=0.3", "n_save=31"],
}


def test_every_scenario_has_a_short_run():
    assert set(SHORT) == {n for n, info in CATALOG.items() if "run" in info.jobs}  # ur5-reach: plan only


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SHORT))
def test_short_run_shows_progress_and_readable_figures(name, tmp_path, monkeypatch, capsys):
    figs = []
    original = Figure.savefig

    def record(self, path, *a, **k):
        figs.append((str(path), self))
        return original(self, path, *a, **k)

    monkeypatch.setattr(Figure, "savefig", record)
    code = main(["run", name, "--progress", "--out", str(tmp_path), "--set", *SHORT[name]])
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    assert "%|" in captured.err, f"no progress shown:\n{captured.err[-2000:]}"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["options"]["progress"] is True
    assert figs, "no figures written"
    found = [p for path, fig in figs for p in problems(fig, path.split("/")[-1])]
    assert not found, "\n".join(found)
