"""Time-history figures in the style of the papers' result plots.

Figures are drawn on :class:`matplotlib.figure.Figure` objects (no ``pyplot``), so plotting never
changes the user's matplotlib backend and works on headless machines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure


def new_figure(nrows=1, ncols=1, *, figsize=(7.0, 3.8), **subplots_kw):
    """``(fig, axes)``: a figure with a grid of axes (``fig.subplots`` keywords), not registered
    with ``pyplot``."""
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(nrows, ncols, **subplots_kw)


def save_figure(fig, path, dpi=120) -> Path:
    """Lay out and write ``fig`` to ``path``; returns the path."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return Path(path)

_AXES = ("x", "y", "z")


def _grid(n):
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    fig, axs = new_figure(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False, sharex=True)
    return fig, axs.ravel()


def _per_body_panels(t, series, names, labels, ylabel, path, title):
    """One panel per body, one curve per component: ``series`` [T, nb, k]; one legend for the
    figure (the components are the same in every panel)."""
    fig, axs = _grid(len(names))
    for k, name in enumerate(names):
        for j, lab in enumerate(labels):
            axs[k].plot(t, series[:, k, j], label=lab)
        axs[k].set_title(name)
        axs[k].set_ylabel(ylabel)
        axs[k].grid(alpha=0.3)
    for ax in axs[len(names):]:
        ax.set_visible(False)
    visible = axs[: len(names)]
    ncols = min(len(names), 3)
    for ax in visible[-ncols:]:  # the lowest visible panel of each column (shared x hides the others' ticks)
        ax.set_xlabel("t [s]")
        ax.xaxis.set_tick_params(labelbottom=True)
    handles, labs = visible[0].get_legend_handles_labels()
    fig.legend(handles, labs, loc="upper right", ncols=len(labs))
    fig.suptitle(title)
    return save_figure(fig, path)


def plot_body_com_displacement(t, body_com, names, path, title="Centre-of-mass displacement"):
    """One panel per body: x, y, z of its COM minus the initial value [m]."""
    com = np.asarray(body_com)
    return _per_body_panels(np.asarray(t), com - com[:1], names, _AXES, "Δ COM [m]", path, title)


def plot_attitudes(t, euler, names, path, title="Attitude (intrinsic x-y-z angles, world frame)"):
    """One panel per body: its three attitude angles [deg] (unwrapped)."""
    e = np.degrees(np.unwrap(np.asarray(euler), axis=0))
    return _per_body_panels(np.asarray(t), e, names, ("φ (x)", "θ (y)", "ψ (z)"), "angle [deg]", path, title)


def _unit_of(label: str) -> str:
    """The unit in a label's trailing brackets: ``"kinetic energy vs work [J]"`` → ``"J"``."""
    return label[label.rindex("[") + 1 : label.rindex("]")] if label.endswith("]") and "[" in label else ""


def plot_conservation(t, series: dict, path, title="Balance checks"):
    """Each entry ``label [unit] -> (change, expected)`` ([T] or [T, k]): top row both curves per
    component (legend), bottom row the absolute error ``max_k |change_k − expected_k|`` in the same
    unit, on a log axis over the error's own range (exact zeros, e.g. at t = 0, are left out);
    times where the error is not finite (a run that diverged) are shaded red in both rows."""
    t = np.asarray(t)
    n = len(series)
    fig, axs = new_figure(2, n, figsize=(4.5 * n, 5.5), squeeze=False, sharex=True)
    for k, (label, (change, expected)) in enumerate(series.items()):
        change, expected = np.asarray(change), np.asarray(expected)
        if change.ndim == 1:
            change, expected = change[:, None], expected[:, None]
        comps = _AXES if change.shape[1] == 3 else [str(j) for j in range(change.shape[1])]
        comps = [""] if change.shape[1] == 1 else [f" {c}" for c in comps]
        for j in range(change.shape[1]):
            line, = axs[0, k].plot(t, change[:, j], label=f"change{comps[j]}")
            axs[0, k].plot(t, expected[:, j], "--", color=line.get_color(), label=f"applied{comps[j]}")
        unit = _unit_of(label)
        axs[0, k].set_title(label, fontsize=10)
        axs[0, k].set_ylabel(f"value [{unit}]" if unit else "value")
        axs[0, k].legend(fontsize=7, ncols=2)
        err = np.abs(change - expected).max(axis=1)
        bad = ~np.isfinite(err)
        positive = (err > 0) & ~bad
        if positive.any():
            axs[1, k].semilogy(t[positive], err[positive], ".-", ms=2, label="max |change − applied|")
        elif not bad.any():
            axs[1, k].plot(t, err, label="max |change − applied| (exactly 0)")
        edges = np.flatnonzero(np.diff(np.concatenate([[0], bad.astype(int), [0]])))  # runs [start, stop)
        for j, (a, b) in enumerate(zip(edges[::2], edges[1::2])):  # non-finite times marked, not dropped
            for ax in axs[:, k]:
                ax.axvspan(t[a], t[b - 1], color="tab:red", alpha=0.15, lw=2, ec="tab:red",
                           label=f"non-finite ({int(bad.sum())} of {bad.size} times)" if j == 0 else None)
        if bad.any():
            axs[1, k].legend(fontsize=7)
        axs[1, k].set_ylabel(f"absolute error [{unit}]" if unit else "absolute error")
        axs[1, k].set_xlabel("t [s]")
        for ax in axs[:, k]:
            ax.grid(alpha=0.3)
    fig.suptitle(title)
    return save_figure(fig, path)


def plot_series(curves: dict, path, *, xlabel="t [s]", ylabel="", title="", ylim=None, styles=None, focus=None):
    """One panel, one curve per entry of ``curves`` (``label -> (x, y)``), a legend when there are
    several; returns ``path``. The axis limits follow the data; ``focus`` (labels) makes the
    y-limits follow those curves only (others, e.g. a diverging run, are clipped at the edge);
    ``ylim`` fixes them."""
    fig, ax = new_figure(figsize=(7.0, 3.8))
    for label, (x, y) in curves.items():
        style = (styles or {}).get(label, {})
        ax.plot(x, y, label=label, **style)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim is None and focus:
        ys = np.concatenate([np.ravel(curves[k][1]) for k in focus])
        ys = ys[np.isfinite(ys)]
        if ys.size:
            lo, hi = float(ys.min()), float(ys.max())
            pad = 0.05 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.05
            ylim = (lo - pad, hi + pad)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.grid(alpha=0.3)
    if len(curves) > 1:
        ax.legend()
    ax.set_title(title)
    return save_figure(fig, path)
