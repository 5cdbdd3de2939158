"""Figures of results (matplotlib, headless)."""

from .plots import plot_attitudes, plot_body_com_displacement, plot_conservation, plot_series

__all__ = ["plot_attitudes", "plot_body_com_displacement", "plot_conservation", "plot_series"]
