"""Distributions of uncertain named parameters (``diffsim.montecarlo``).

Each draws ``sample(key, shape, dtype)``; its parameters broadcast to the named parameter's shape.
:func:`parse` reads the CLI spelling ``normal(MU,SIGMA)``, ``lognormal(MU,SIGMA)`` (of ``log x``),
``uniform(LO,HI)``, ``truncnormal(MU,SIGMA,LO,HI)``.
"""

from __future__ import annotations

import abc
import hashlib
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


class DistributionError(ValueError):
    """Invalid distribution parameters or spelling."""


def _check(cond, msg):
    if not np.all(cond):
        raise DistributionError(msg)


def _finite(kind, **values):
    for name, v in values.items():
        _check(np.isfinite(np.asarray(v, float)), f"{kind}: {name} must be finite, got {v}")


class AbstractDistribution(eqx.Module):
    """A distribution of one named parameter."""

    @abc.abstractmethod
    def sample(self, key, shape, dtype):
        """One draw of the given shape."""

    def describe(self) -> dict:
        return {"kind": type(self).__name__, **{k: np.asarray(v).tolist() for k, v in vars(self).items()}}


class Normal(AbstractDistribution):
    """``x ~ N(mu, sigma²)``."""

    mu: object
    sigma: object

    def __post_init__(self):
        _finite("normal", mu=self.mu, sigma=self.sigma)
        _check(np.asarray(self.sigma) > 0, f"normal: sigma must be > 0, got {self.sigma}")

    def sample(self, key, shape, dtype):
        return self.mu + self.sigma * jax.random.normal(key, shape, dtype)


class LogNormal(AbstractDistribution):
    """``log x ~ N(mu, sigma²)`` (positive values: stiffness, masses)."""

    mu: object
    sigma: object

    def __post_init__(self):
        _finite("lognormal", mu=self.mu, sigma=self.sigma)
        _check(np.asarray(self.sigma) > 0, f"lognormal: sigma must be > 0, got {self.sigma}")

    def sample(self, key, shape, dtype):
        return jnp.exp(self.mu + self.sigma * jax.random.normal(key, shape, dtype))


class Uniform(AbstractDistribution):
    """``x ~ U(lo, hi)``."""

    lo: object
    hi: object

    def __post_init__(self):
        _finite("uniform", lo=self.lo, hi=self.hi)
        _check(np.asarray(self.lo) < np.asarray(self.hi), f"uniform: need lo < hi, got lo={self.lo}, hi={self.hi}")

    def sample(self, key, shape, dtype):
        return jax.random.uniform(key, shape, dtype, self.lo, self.hi)


class TruncatedNormal(AbstractDistribution):
    """``x ~ N(mu, sigma²)`` conditioned on ``lo ≤ x ≤ hi``."""

    mu: object
    sigma: object
    lo: object
    hi: object

    def __post_init__(self):
        _finite("truncnormal", mu=self.mu, sigma=self.sigma)  # lo / hi may be infinite: one-sided
        _check(np.asarray(self.sigma) > 0, f"truncnormal: sigma must be > 0, got {self.sigma}")
        _check(np.asarray(self.lo) < np.asarray(self.hi), f"truncnormal: need lo < hi, got {self.lo}, {self.hi}")

    def sample(self, key, shape, dtype):
        a, b = (self.lo - self.mu) / self.sigma, (self.hi - self.mu) / self.sigma
        return self.mu + self.sigma * jax.random.truncated_normal(key, a, b, shape, dtype)


class Samples(AbstractDistribution):
    """User-given draws: sample ``i`` takes ``values[i]`` (``values`` [N, *shape])."""

    values: object

    def sample(self, key, shape, dtype):
        raise DistributionError("Samples are indexed, not drawn")

    def describe(self) -> dict:
        v = np.asarray(self.values)
        return {"kind": "Samples", "n": int(v.shape[0]), "sha1": _sha1(v)}


def _sha1(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


_KINDS = {"normal": (Normal, 2), "lognormal": (LogNormal, 2), "uniform": (Uniform, 2),
          "truncnormal": (TruncatedNormal, 4)}


def parse(text: str) -> AbstractDistribution:
    """``normal(0.1,0.01)`` → :class:`Normal` (module docstring)."""
    m = re.fullmatch(r"\s*([a-z]+)\s*\(([^)]*)\)\s*", text)
    if not m or m.group(1) not in _KINDS:
        raise DistributionError(f"cannot read distribution {text!r}: use one of "
                                "normal(MU,SIGMA), lognormal(MU,SIGMA), uniform(LO,HI), truncnormal(MU,SIGMA,LO,HI)")
    cls, n = _KINDS[m.group(1)]
    try:
        args = [float(x) for x in m.group(2).split(",")]
    except ValueError:
        raise DistributionError(f"cannot read the numbers of {text!r}") from None
    if len(args) != n:
        raise DistributionError(f"{m.group(1)} takes {n} numbers, got {len(args)} in {text!r}")
    return cls(*args)
