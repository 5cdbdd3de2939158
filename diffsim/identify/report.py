"""Writing a fit's results: ``fit.json`` (open format, the CLI's contract) and figures a person
can read — model vs data per channel, weighted residuals, and the parameter correlations."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..io.results import write_json
from ..viz import new_figure, save_figure


def _channels(exp, preds, quats=None):
    for ch, y in exp.data.items():
        for o in (quats or {}).get(ch, ()):  # q and −q: one rotation (the residuals' alignment)
            dot = np.sum(y[:, o:o + 4] * np.asarray(preds[ch])[:, o:o + 4], axis=-1, keepdims=True)
            y = y.copy()
            y[:, o:o + 4] *= np.where(dot < 0, -1.0, 1.0)
        s = np.broadcast_to(exp.sigma[ch], y.shape).reshape(y.shape[0], -1)  # per component or per sample
        y = y.reshape(y.shape[0], -1)
        p = np.asarray(preds[ch]).reshape(y.shape[0], -1)
        for k in range(y.shape[1]):
            label = ch if y.shape[1] == 1 else f"{ch}[{k}]"
            yield label, y[:, k], p[:, k], s[:, k]


def _file_stem(name: str, used: set) -> str:
    """A file-name-safe form of an experiment's name (``runs/a`` → ``runs_a``), unique among ``used``."""
    stem = re.sub(r"[^A-Za-z0-9._#+=-]+", "_", name).strip("._") or "experiment"
    out, k = stem, 1
    while out in used:
        k += 1
        out = f"{stem}_{k}"
    used.add(out)
    return out


def save_fit(result, out_dir, document: dict | None = None) -> list[Path]:
    """``fit.json``, ``fit_<experiment>.png`` (model vs data and weighted residuals per channel;
    ``holdout_<name>.png`` for a validation experiment; the name with characters other than
    letters, digits and ``._#+=-`` as ``_``) and ``correlation.png``; ``document``
    replaces :meth:`FitResult.to_json` as the JSON content (the CLI adds its own keys)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "fit.json"]
    write_json(paths[0], result.to_json() if document is None else document)
    exps = list(result.experiments) + ([result.holdout] if result.holdout is not None else [])
    used = set()
    for exp in exps:
        preds = result.predictions.get(exp.name)
        if preds is None:
            continue
        rows = list(_channels(exp, preds, getattr(result, "quaternion_blocks", {}).get(exp.name)))
        fig, axes = new_figure(len(rows), 2, figsize=(10.0, 2.6 * len(rows)), squeeze=False)
        for (label, y, p, s), (ax, axr) in zip(rows, axes):
            ax.plot(exp.t, y, ".", ms=3, color="0.5", label="data")
            ax.plot(exp.t, p, "-", lw=1.2, color="C0", label="fitted model")
            ax.set_ylabel(label)
            ax.legend(loc="best", fontsize=8)
            axr.plot(exp.t, (p - y) / s, ".", ms=3, color="C3")
            axr.axhline(0.0, color="k", lw=0.6)
            axr.set_ylabel(f"({label} model − data) / σ")
        for a in axes[-1]:
            a.set_xlabel("t [s]")
        kind = "holdout" if exp is result.holdout else "fit"
        fig.suptitle(f"{kind}: {exp.name}")
        paths.append(save_figure(fig, out / f"{kind}_{_file_stem(exp.name, used)}.png"))
    C = np.asarray(result.correlation)
    n = len(result.flat_names)
    fig, ax = new_figure(figsize=(1.2 + 0.6 * n + 2.0, 1.2 + 0.6 * n))
    im = ax.imshow(C, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(n), result.flat_names, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(n), result.flat_names, fontsize=8)
    for i in range(n):
        for j in range(n):
            ax.text(j, i, f"{C[i, j]:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, shrink=0.8, label="correlation")
    ax.set_title("parameter correlation (Gauss–Newton covariance)")
    paths.append(save_figure(fig, out / "correlation.png"))
    return paths
