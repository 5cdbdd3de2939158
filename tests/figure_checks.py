"""What makes a figure readable (issue 19), checked on matplotlib's objects: every panel with
data has labelled axes with units, several curves come with a legend, the limits follow the
data, and a log axis spans only the data's range."""

from __future__ import annotations

import numpy as np


def _lines(ax):
    return [ln for ln in ax.get_lines() if len(np.ravel(ln.get_ydata())) > 1]


def _has_xlabel(ax):
    if ax.get_xlabel():
        return True
    return any(o.get_xlabel() for o in ax.get_shared_x_axes().get_siblings(ax))


def problems(fig, name="figure") -> list[str]:
    """The readability problems of ``fig`` (empty: none)."""
    out = []
    fig_legend = bool(fig.legends)
    for i, ax in enumerate(fig.axes):
        lines = _lines(ax)
        if not ax.get_visible() or not lines:
            continue
        where = f"{name} panel {i} ({ax.get_title() or ax.get_ylabel()!r})"
        if not ax.get_ylabel() or "[" not in ax.get_ylabel():
            out.append(f"{where}: y axis without label and unit ({ax.get_ylabel()!r})")
        if not _has_xlabel(ax):
            out.append(f"{where}: x axis without label")
        elif ax.get_xlabel() and "[" not in ax.get_xlabel():
            out.append(f"{where}: x axis label without unit ({ax.get_xlabel()!r})")
        if ax.get_xlabel() and not any(lab.get_visible() and lab.get_text() for lab in ax.get_xticklabels()):
            fig.canvas.draw()  # tick texts are set at draw time
            if not any(lab.get_visible() and lab.get_text() for lab in ax.get_xticklabels()):
                out.append(f"{where}: x axis labelled but without tick values (hidden by a shared axis)")
        if len(lines) > 1 and ax.get_legend() is None and not fig_legend:
            out.append(f"{where}: {len(lines)} curves and no legend")
        ys = np.concatenate([np.asarray(ln.get_ydata(), float).ravel() for ln in lines])
        ys = ys[np.isfinite(ys)]
        lo, hi = ax.get_ylim()
        lo, hi = min(lo, hi), max(lo, hi)
        inside = ys[(ys >= lo) & (ys <= hi)]
        if ax.get_yscale() == "log":
            pos = inside[inside > 0]
            if pos.size and (lo < pos.min() / 100 or hi > pos.max() * 100):
                out.append(f"{where}: log axis {lo:.3g}…{hi:.3g} beyond the data's {pos.min():.3g}…{pos.max():.3g}")
        elif inside.size and np.ptp(inside) > 0 and np.ptp(inside) < 0.2 * (hi - lo):
            out.append(f"{where}: the data span {np.ptp(inside):.3g} of an axis {hi - lo:.3g} long: limits do not "
                       "follow the data")
    return out
