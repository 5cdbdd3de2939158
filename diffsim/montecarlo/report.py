"""Writing a Monte Carlo study: ``samples.npz`` (the CLI's contract), ``summary.json`` and figures
— a histogram of every statistic (per component, up to six), each output against each input (up
to six output rows: the user's statistics first, then ``q_final`` and ``v_final``), and, for
statistics that are time series, quantile bands over time when asked for (``bands=``).

Figures and summaries use the finite values of the successful samples: a statistic may be NaN (or
infinite) for a sample it does not apply to (ball-drop's ``rebound_max_z`` before any impact);
``summary.json`` counts them per component (``non_finite``). What a figure leaves out — a
statistic or component without a finite value, outputs beyond the sensitivity figure's six rows,
every figure when no sample succeeded — ``summary.json``'s ``figures_skipped`` says, and a warning.
A component whose values differ by rounding only (a few ulp) gets one histogram bin, labelled."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np

from ..io.results import write_json
from ..viz import new_figure, save_figure

MAX_COMPONENTS = 6


class MonteCarloWarning(UserWarning):
    """Something a study's user should know that does not stop it: a figure skipped, a resume
    across diffsim / JAX versions (``diffsim montecarlo`` prints them as notes)."""


def _columns(name, x):
    x = x.reshape(x.shape[0], -1)
    for k in range(min(x.shape[1], MAX_COMPONENTS)):
        yield (name if x.shape[1] == 1 else f"{name}[{k}]"), x[:, k]


def _bands(name, t, x, path):
    """Median, 25–75 % and 5–95 % bands over time of ``x`` [N, T, ...] (components up to six)."""
    t = np.asarray(t)
    if x.ndim < 2 or x.shape[1] != t.shape[0]:
        raise ValueError(f"bands: statistic {name!r} has shape {x.shape[1:]} per sample; its first axis must be "
                         f"the {t.shape[0]} times given")
    x = x.reshape(x.shape[0], t.shape[0], -1)
    n = min(x.shape[2], MAX_COMPONENTS)
    fig, axes = new_figure(1, n, figsize=(3.6 * n, 3.0), squeeze=False)
    with warnings.catch_warnings():  # a time without a finite value: a gap in the bands
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(finite_values(x), [0.05, 0.25, 0.5, 0.75, 0.95], axis=0)
    for k, ax in enumerate(axes[0]):
        ax.fill_between(t, q[0, :, k], q[4, :, k], color="C0", alpha=0.2, lw=0, label="5–95 %")
        ax.fill_between(t, q[1, :, k], q[3, :, k], color="C0", alpha=0.4, lw=0, label="25–75 %")
        ax.plot(t, q[2, :, k], color="C0", lw=1.2, label="median")
        ax.set(xlabel="t [s]", ylabel=name if x.shape[2] == 1 else f"{name}[{k}]")
    axes[0][0].legend(fontsize=8, title=f"{x.shape[0]} samples", title_fontsize=8)
    return save_figure(fig, path)


#: the standard statistics every study adds (:func:`diffsim.montecarlo.run`): after the user's in the
#: sensitivity figure
STANDARD = ("q_final", "v_final")
#: names a draw or statistic cannot take: the status array, a chunk's sample indices, a rerun's sample numbers
RESERVED = ("status", "index", "sample_index")


def _write_npz(path: Path, arrays: dict) -> None:
    """``np.savez_compressed`` without its keyword arguments (a statistic named ``file`` or
    ``allow_pickle`` was taken for one): one ``NAME.npy`` per array, as ``np.load`` reads them."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(value), allow_pickle=False)


def _bins(col):
    """``(bins, range, note)`` for a histogram of the finite values ``col``: ~√n bins (5 to 50);
    one bin around the value when the values differ by a few ulp only (NumPy cannot cut such a
    range into bins: the save failed there), with a note for the label."""
    lo, hi = float(col.min()), float(col.max())
    if hi - lo <= 16 * np.spacing(max(abs(lo), abs(hi), np.finfo(float).tiny)):
        mid = 0.5 * (lo + hi)
        half = max(abs(mid) * 1e-9, 1e-300)
        return 1, (mid - half, mid + half), f"= {mid:.6g}" + (" to rounding" if hi > lo else "")
    return min(50, max(5, int(np.sqrt(col.size)))), None, None


def finite_values(x) -> np.ndarray:
    """``x`` as floats with every non-finite value NaN (left out by the nan-reductions)."""
    v = np.asarray(x, dtype=float)
    return np.where(np.isfinite(v), v, np.nan)


def _spread(col) -> bool:
    """Whether a column has finite values that differ (worth a scatter plot)."""
    f = col[np.isfinite(col)]
    return f.size > 0 and np.ptp(f) > 0


def save_result(res, out: Path, plots: bool = True, bands=None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    for name in list(res.draws) + list(res.statistics):
        if name in RESERVED:
            raise ValueError(f"samples.npz: {name!r} is a reserved array (the status, a rerun's sample numbers); a draw "
                             "or statistic cannot take that name")
    clash = set(res.draws) & set(res.statistics)
    if clash:
        raise ValueError(f"samples.npz: {sorted(clash)} name both a draw and a statistic")
    arrays = {"status": res.status, **res.draws, **res.statistics}
    if res.sample_index is not None:  # a rerun of chosen samples: row k is sample sample_index[k]
        arrays["sample_index"] = res.sample_index
    _write_npz(out / "samples.npz", arrays)
    ok = res.status == 0
    n_ok = int(ok.sum())
    summary = res.summary_json()
    # histograms of the finite values; a statistic (or component) with none among the successful samples has none
    hists, skipped = {}, {}
    if plots and not ok.any():
        skipped["*"] = f"no successful sample (status {res.status_counts}): no figure"
    elif plots:
        for name, x in res.statistics.items():
            cols = [(label, col[np.isfinite(col)]) for label, col in _columns(name, np.asarray(x[ok], dtype=float))]
            if not cols:
                continue
            kept = [(label, col) for label, col in cols if col.size]
            empty = [label for label, col in cols if not col.size]
            if not kept:
                skipped[name] = f"no finite value among the {n_ok} successful samples: no histogram"
                continue
            hists[name] = kept
            if empty:
                skipped[name] = f"{', '.join(empty)}: no finite value among the {n_ok} successful samples, left out"
        ordered = sorted(res.statistics, key=lambda n: (n in STANDARD, STANDARD.index(n) if n in STANDARD else 0))
        outputs = [c for n in ordered for c in _columns(n, np.asarray(res.statistics[n][ok], dtype=float))
                   if _spread(c[1])]
        if len(outputs) > MAX_COMPONENTS:
            left = [label for label, _ in outputs[MAX_COMPONENTS:]]
            skipped["sensitivity.png"] = (f"{MAX_COMPONENTS} output rows of {len(outputs)}: "
                                          f"{', '.join(left)} left out")
        outputs = outputs[:MAX_COMPONENTS]
    if skipped:
        summary["figures_skipped"] = skipped
    write_json(out / "summary.json", summary)
    paths = [out / "samples.npz", out / "summary.json"]
    for name, why in skipped.items():
        what = "figures" if name == "*" else (name if name.endswith(".png") else f"statistic {name!r}")
        warnings.warn(f"{what}: {why} (summary.json: figures_skipped)", MonteCarloWarning, stacklevel=3)
    if not plots:
        return paths
    for name in bands or {}:
        if name not in res.statistics:
            raise ValueError(f"bands: no statistic {name!r} (have {sorted(res.statistics)})")
    if not ok.any():  # no successful sample: nothing to plot (status and summary say why)
        return paths
    for name, t in (bands or {}).items():
        paths.append(_bands(name, t, res.statistics[name][ok], out / f"bands_{name}.png"))
    for name, cols in hists.items():
        fig, axes = new_figure(1, len(cols), figsize=(3.2 * len(cols), 3.0), squeeze=False)
        for ax, (label, col) in zip(axes[0], cols):
            bins, rng, note = _bins(col)
            ax.hist(col, bins=bins, range=rng, color="C0", alpha=0.8)
            text = label if col.size == n_ok else f"{label} ({col.size} finite)"
            ax.set_xlabel(text if note is None else f"{text} {note}")
        axes[0][0].set_ylabel(f"samples (of {n_ok} successful)")
        paths.append(save_figure(fig, out / f"hist_{name}.png"))
    inputs = [c for n, v in res.draws.items() for c in _columns(n, np.asarray(v[ok], dtype=float))]
    if inputs and outputs:
        fig, axes = new_figure(len(outputs), len(inputs), figsize=(3.0 * len(inputs), 2.4 * len(outputs)),
                               squeeze=False)
        for i, (olab, o) in enumerate(outputs):
            for j, (ilab, x) in enumerate(inputs):
                ax = axes[i][j]
                both = np.isfinite(x) & np.isfinite(o)
                ax.plot(x[both], o[both], ".", ms=2, alpha=0.5)
                if i == len(outputs) - 1:
                    ax.set_xlabel(ilab)
                if j == 0:
                    ax.set_ylabel(olab)
        paths.append(save_figure(fig, out / "sensitivity.png"))
    return paths
