"""Writing a Monte Carlo study: ``samples.npz`` (the CLI's contract), ``summary.json`` and figures
— a histogram of every statistic (per component, up to six) and each output against each input."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..io.results import write_json
from ..viz import new_figure, save_figure

MAX_COMPONENTS = 6


def _columns(name, x):
    x = x.reshape(x.shape[0], -1)
    for k in range(min(x.shape[1], MAX_COMPONENTS)):
        yield (name if x.shape[1] == 1 else f"{name}[{k}]"), x[:, k]


def save_result(res, out: Path, plots: bool = True) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    arrays = {"status": res.status, **res.draws, **res.statistics}
    np.savez_compressed(out / "samples.npz", **arrays)
    write_json(out / "summary.json", res.summary_json())
    paths = [out / "samples.npz", out / "summary.json"]
    if not plots:
        return paths
    ok = res.status == 0
    for name, x in res.statistics.items():
        cols = list(_columns(name, x[ok]))
        if not cols or not ok.any():
            continue
        fig, axes = new_figure(1, len(cols), figsize=(3.2 * len(cols), 3.0), squeeze=False)
        for ax, (label, col) in zip(axes[0], cols):
            ax.hist(col, bins=min(50, max(5, int(np.sqrt(col.size)))), color="C0", alpha=0.8)
            ax.set_xlabel(label)
        axes[0][0].set_ylabel(f"samples (of {int(ok.sum())} successful)")
        paths.append(save_figure(fig, out / f"hist_{name}.png"))
    inputs = [c for n, v in res.draws.items() for c in _columns(n, v[ok])]
    outputs = [c for n, v in res.statistics.items() for c in _columns(n, v[ok]) if np.ptp(c[1]) > 0][:MAX_COMPONENTS]
    if inputs and outputs and ok.any():
        fig, axes = new_figure(len(outputs), len(inputs), figsize=(3.0 * len(inputs), 2.4 * len(outputs)),
                               squeeze=False)
        for i, (olab, o) in enumerate(outputs):
            for j, (ilab, x) in enumerate(inputs):
                ax = axes[i][j]
                ax.plot(x, o, ".", ms=2, alpha=0.5)
                if i == len(outputs) - 1:
                    ax.set_xlabel(ilab)
                if j == 0:
                    ax.set_ylabel(olab)
        paths.append(save_figure(fig, out / "sensitivity.png"))
    return paths
