"""Monte Carlo studies: many simulations of a :class:`diffsim.System` with uncertain named
parameters, batched on the device, chunked, sharded over local devices and resumable.

* distributions: :class:`Normal`, :class:`LogNormal`, :class:`Uniform`, :class:`TruncatedNormal`,
  :class:`Samples` (user draws); :func:`parse` reads ``normal(MU,SIGMA)`` …;
* :func:`run` → :class:`MonteCarloResult` (statistics per sample, status, failed indices,
  quantiles, :meth:`~MonteCarloResult.save`: ``samples.npz``, ``summary.json``, figures).
"""

from .distributions import (AbstractDistribution, DistributionError, LogNormal, Normal, Samples, TruncatedNormal,
                            Uniform, parse)
from .report import MonteCarloWarning
from .study import MonteCarloError, MonteCarloResult, final_state, run

__all__ = ["AbstractDistribution", "DistributionError", "LogNormal", "MonteCarloError", "MonteCarloResult",
           "MonteCarloWarning", "Normal", "Samples", "TruncatedNormal", "Uniform", "final_state", "parse", "run"]
