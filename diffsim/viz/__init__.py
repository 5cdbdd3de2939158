"""Figures of results (matplotlib ``Figure`` objects; the user's backend is never changed)."""

from .plots import (
    new_figure,
    plot_attitudes,
    plot_body_com_displacement,
    plot_conservation,
    plot_series,
    save_figure,
)

__all__ = [
    "new_figure",
    "plot_attitudes",
    "plot_body_com_displacement",
    "plot_conservation",
    "plot_series",
    "save_figure",
]
