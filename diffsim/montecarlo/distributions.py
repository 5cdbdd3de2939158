"""Distributions of uncertain named parameters (``diffsim.montecarlo``).

Each draws ``sample(key, shape, dtype)``; its parameters are numbers (or arrays of numbers) that
broadcast to the named parameter's shape. :func:`parse` reads the CLI spelling ``normal(MU,SIGMA)``,
``lognormal(MU,SIGMA)`` (of ``log x``), ``uniform(LO,HI)``, ``truncnormal(MU,SIGMA,LO,HI)``.

:class:`TruncatedNormal` samples by the inverse CDF on the side of the interval's tail (the interval
mirrored into the lower tail, where ``ndtr`` / ``ndtri`` keep their relative accuracy), so a
truncation far in a tail (``[10, 11]`` of ``N(0, 1)``) is sampled correctly in float64 and float32;
an interval whose probability underflows the dtype (below its smallest normal number) is refused.
"""

from __future__ import annotations

import abc
import hashlib
import math
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


def _concrete(v) -> bool:
    return not isinstance(v, jax.core.Tracer)


def _numbers(kind, **values):
    """Each value is a number or an array of numbers (not text, None, booleans or ragged lists)."""
    for name, v in values.items():
        if not _concrete(v):
            continue
        try:
            a = np.asarray(v)
        except (TypeError, ValueError):
            a = np.asarray(None)
        if a.dtype.kind not in "iuf":
            raise DistributionError(f"{kind}: {name} must be a number or an array of numbers, got {v!r}")


def _finite(kind, **values):
    _numbers(kind, **values)
    for name, v in values.items():
        if _concrete(v):
            _check(np.isfinite(np.asarray(v, float)), f"{kind}: {name} must be finite, got {v}")


class AbstractDistribution(eqx.Module):
    """A distribution of one named parameter."""

    @abc.abstractmethod
    def sample(self, key, shape, dtype):
        """One draw of the given shape."""

    def check_dtype(self, dtype) -> None:
        """Raise :class:`DistributionError` if the distribution cannot be sampled in ``dtype``
        (:func:`diffsim.montecarlo.run` calls it with the system's dtype before compiling)."""

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


def _log_ndtr(x: float) -> float:
    """``log Φ(x)`` in float64 (``math.erfc`` above -30, the asymptotic series below; enough to
    decide whether a probability underflows)."""
    if x == -math.inf:
        return -math.inf
    if x > -30.0:
        if x < 5.0:
            return math.log(0.5 * math.erfc(-x / math.sqrt(2.0)))
        return math.log1p(-0.5 * math.erfc(x / math.sqrt(2.0)))
    r = 1.0 / (x * x)
    series = math.log1p(-r + 3 * r * r - 15 * r**3 + 105 * r**4)
    return -0.5 * x * x - math.log(-x) - 0.5 * math.log(2.0 * math.pi) + series


def _log_mass(a: float, b: float) -> float:
    """``log P(a ≤ Z ≤ b)`` for a standard normal ``Z`` (mirrored into the lower tail)."""
    if a + b > 0:
        a, b = -b, -a
    la, lb = _log_ndtr(a), _log_ndtr(b)
    if lb - la < 1e-6:  # a narrow interval: its width times the largest density on it
        c = min(max(0.0, a), b)
        return math.log(b - a) - 0.5 * c * c - 0.5 * math.log(2.0 * math.pi) if b > a else -math.inf
    return lb + math.log1p(-math.exp(la - lb))


class TruncatedNormal(AbstractDistribution):
    """``x ~ N(mu, sigma²)`` conditioned on ``lo ≤ x ≤ hi`` (``lo`` / ``hi`` may be infinite).

    Sampled by the inverse CDF on the tail side of the interval (module docstring): accurate far in
    a tail. An interval whose probability under ``N(mu, sigma²)`` is below the smallest normal
    number of the dtype is refused (in float64 at construction; in float32 by
    :func:`~diffsim.montecarlo.run` or a concrete ``sample``; traced parameters give NaN draws)."""

    mu: object
    sigma: object
    lo: object
    hi: object

    def __post_init__(self):
        _finite("truncnormal", mu=self.mu, sigma=self.sigma)  # lo / hi may be infinite: one-sided
        _numbers("truncnormal", lo=self.lo, hi=self.hi)
        _check(np.asarray(self.sigma) > 0, f"truncnormal: sigma must be > 0, got {self.sigma}")
        _check(np.asarray(self.lo) < np.asarray(self.hi), f"truncnormal: need lo < hi, got {self.lo}, {self.hi}")
        self.check_dtype(np.float64)

    def check_dtype(self, dtype) -> None:
        if not all(_concrete(v) for v in (self.mu, self.sigma, self.lo, self.hi)):
            return
        mu, sigma, lo, hi = np.broadcast_arrays(*(np.asarray(v, float) for v in (self.mu, self.sigma, self.lo,
                                                                                    self.hi)))
        tiny = math.log(float(jnp.finfo(dtype).tiny))
        for m, s, lo_, hi_ in zip(mu.ravel(), sigma.ravel(), lo.ravel(), hi.ravel()):
            lm = _log_mass(float((lo_ - m) / s), float((hi_ - m) / s))
            if lm < tiny:
                raise DistributionError(
                    f"truncnormal: the interval [{lo_:g}, {hi_:g}] holds a probability of about "
                    f"{_exp10(lm)} under N({m:g}, {s:g}²), below the smallest normal {jnp.dtype(dtype).name} "
                    f"number ({float(jnp.finfo(dtype).tiny):.3g}): it cannot be sampled in {jnp.dtype(dtype).name}; "
                    "choose an interval nearer mu or a larger sigma")

    def sample(self, key, shape, dtype):
        self.check_dtype(dtype)  # concrete parameters: refused here; traced ones give NaN below
        mu, sigma = jnp.asarray(self.mu, dtype), jnp.asarray(self.sigma, dtype)
        a = jnp.broadcast_to((jnp.asarray(self.lo, dtype) - mu) / sigma, shape)
        b = jnp.broadcast_to((jnp.asarray(self.hi, dtype) - mu) / sigma, shape)
        # mirror so that the interval's far side is the lower tail (-inf + inf is NaN: no flip)
        flip = a + b > 0
        lo, hi = jnp.where(flip, -b, a), jnp.where(flip, -a, b)
        p_lo, p_hi = jax.scipy.special.ndtr(lo), jax.scipy.special.ndtr(hi)
        fi = jnp.finfo(dtype)
        u = jax.random.uniform(key, shape, dtype, minval=fi.tiny, maxval=1.0)  # (0, 1): no infinite draw
        p = jnp.minimum(p_lo + u * (p_hi - p_lo), jnp.nextafter(jnp.asarray(1.0, dtype), jnp.asarray(0.0, dtype)))
        z = jnp.clip(jax.scipy.special.ndtri(p), lo, hi)
        # an interval too narrow for the CDF to resolve (its mass within 1e3 ulps of Φ(hi)): the
        # density is constant across it to that accuracy, so a uniform draw on it
        narrow = p_hi - p_lo < 1e3 * fi.eps * p_hi
        z = jnp.where(narrow, lo + u * (hi - lo), z)
        # the mass underflows (only for traced parameters; concrete ones were refused above)
        z = jnp.where(p_hi >= fi.tiny, jnp.where(flip, -z, z), jnp.nan)
        return mu + sigma * z


def _exp10(log_x: float) -> str:
    """``exp(log_x)`` written as ``1.2e-400`` (beyond float64's range)."""
    if log_x == -math.inf:
        return "0"
    e = log_x / math.log(10.0)
    k = math.floor(e)
    return f"{10 ** (e - k):.2g}e{k}"


class Samples(AbstractDistribution):
    """User-given draws: sample ``i`` takes ``values[i]`` (``values`` [N, *shape])."""

    values: object

    def __post_init__(self):
        _numbers("Samples", values=self.values)
        if _concrete(self.values) and np.ndim(self.values) < 1:
            raise DistributionError(f"Samples: values must be an array [N, *shape] (one row per sample), got "
                                    f"{self.values!r}")

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
