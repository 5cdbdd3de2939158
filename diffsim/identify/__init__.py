"""Identification: fit any named parameter of a :class:`diffsim.System` to measured data.

* :class:`Experiment` (with :func:`load_csv`, :func:`load_npz`, :func:`load`) holds measured
  channels, their noise and the experiment's own initial state / inputs;
* :func:`fit` runs weighted nonlinear least squares (Levenberg–Marquardt, exact Jacobians through
  the adaptive solver and its impact events) and returns a :class:`FitResult` with covariance,
  95 % intervals, correlations, an identifiability verdict and a holdout residual;
  :meth:`FitResult.save` writes ``fit.json`` and figures;
* :func:`make_estimator` gives the fit as a pure function of the data (``vmap`` over data sets
  or starts; derivatives of the fitted values with respect to the data by the implicit function
  theorem);
* :mod:`.transforms` maps constrained parameters (positive, (0, 1], physically consistent
  inertia) to unconstrained ones.
"""

from .estimator import Estimator, FitError
from .experiment import Experiment, ExperimentError, load, load_csv, load_npz, observable
from .fit import FitResult, fit, identifiability, make_estimator
from .modal import ModalReport, match_frequencies, measured_frequencies, modal_frequencies, modal_report
from .transforms import Identity, Log, LogCholeskyInertia, Logit, TransformError, default_transform

__all__ = [
    "Estimator",
    "Experiment",
    "ExperimentError",
    "FitError",
    "FitResult",
    "Identity",
    "Log",
    "LogCholeskyInertia",
    "ModalReport",
    "Logit",
    "TransformError",
    "default_transform",
    "fit",
    "identifiability",
    "load",
    "load_csv",
    "load_npz",
    "make_estimator",
    "match_frequencies",
    "measured_frequencies",
    "modal_frequencies",
    "modal_report",
    "observable",
]
