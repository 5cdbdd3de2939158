"""Normal-force and friction laws of compliant contact (every constant a differentiable leaf).

Normal force (the family of seed 001 §2.3 and SPEC S1): with penetration ``Δ ≥ 0``, its rate
``Δ̇`` and the rate at the instant of impact ``Δ̇⁽⁻⁾ > 0`` (the law's memory of the impact),

    F_N = K Δⁿ [1 + χ′ Δ̇ / Δ̇⁽⁻⁾],        F_N ≥ 0 (never pulls),

with the hysteresis factor ``χ′(c_r)`` of each model:

=====================  ==========================  =====================================
law                    χ′(c_r)                     reference
=====================  ==========================  =====================================
Hertz                  0                           Hertz (1882)
Hunt–Crossley          3(1 − c_r)/2                Hunt & Crossley (1975)
Lankarani–Nikravesh    3(1 − c_r²)/4               Lankarani & Nikravesh (1990)
Gonthier et al.        (1 − c_r²)/c_r              Gonthier et al. (2004)
Flores et al.          8(1 − c_r)/(5 c_r)          Flores et al. (2011)
Hu–Guo                 3(1 − c_r)/(2 c_r)          Hu & Guo (2015), used by seed 001
=====================  ==========================  =====================================

plus the linear spring–damper ``F_N = K Δ + c Δ̇`` (Kelvin–Voigt). ``smooth`` (a length, 0 =
exact) replaces the onset ``max(Δ, 0)`` by a softplus of that width ``w``, the clipping
``max(F, 0)`` by a softplus of width ``K wⁿ`` (the force at that penetration), and the cut
``Δ > 0`` by the logistic step ``σ(Δ/w)``: differentiable everywhere, → the exact law as
``w → 0``, and no force out of contact (``∝ e^{Δ/w}`` at a gap ``−Δ``; without the step the
softplus left ``K wⁿ log 2`` and, for the spring–damper, ``c Δ̇`` at any distance).

Friction (tangential force opposing the slip velocity ``v``, proportional to ``F_N``):
Coulomb (exact sign), smoothed Coulomb (``tanh`` or ``arctan`` of ``v/ε``), Coulomb + viscous,
Stribeck, Ambrosio (seed 001 eq 24: zero below ``v0``, linear ramp, ``μ_k F_N`` above ``v1``),
Threlfall, Bengisu–Akay, and LuGre (a bristle state ``z`` with its own rate equation).
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._util import is_concrete


def _exact(width) -> bool:
    """A smoothing width of exactly zero (a Python, NumPy or concrete JAX scalar): the exact
    branches below (``x / 0`` would make the smoothed forms NaN)."""
    return is_concrete(width) and np.ndim(width) == 0 and float(width) == 0


def _softplus(x, width):
    """``width · log(1 + exp(x/width))`` (→ ``max(x, 0)`` as ``width → 0``); exact max at 0."""
    if _exact(width):
        return jnp.maximum(x, 0.0)
    return width * jax.nn.softplus(x / width)


def _onset(delta, f, f_width, width):
    """``max(F, 0)`` in contact (``Δ > 0``), 0 outside; smoothed (module docstring) when
    ``width > 0``: ``softplus(F; f_width) · σ(Δ/width)``."""
    if _exact(width):
        return jnp.where(delta > 0, jnp.maximum(f, 0.0), 0.0)
    return _softplus(f, f_width) * jax.nn.sigmoid(delta / width)


class AbstractNormalLaw(eqx.Module):
    """A normal-force law ``F_N(Δ, Δ̇, Δ̇⁽⁻⁾) ≥ 0``: penetration [m], its rate [m/s] and the rate at
    the instant of impact [m/s] (the law's memory; laws without hysteresis ignore it)."""

    @abc.abstractmethod
    def __call__(self, delta, delta_dot, delta_dot_impact):
        """Normal force [N] (never pulling)."""


class AbstractHysteresisLaw(AbstractNormalLaw):
    """``F_N = K Δⁿ [1 + χ′ Δ̇/Δ̇⁽⁻⁾]`` (module docstring); the final subclasses define ``chi``."""

    K: jax.Array | float  # stiffness, N/mⁿ
    c_r: jax.Array | float = 1.0  # nominal coefficient of restitution, (0, 1]
    n: float = eqx.field(static=True, default=1.5)
    smooth: float = eqx.field(static=True, default=0.0)

    @abc.abstractmethod
    def chi(self):
        """The hysteresis factor ``χ′(c_r)``."""

    def __call__(self, delta, delta_dot, delta_dot_impact):
        d = _softplus(delta, self.smooth)
        f = self.K * d**self.n * (1.0 + self.chi() * delta_dot / delta_dot_impact)
        return _onset(delta, f, self.K * self.smooth**self.n, self.smooth)


class Hertz(AbstractHysteresisLaw):
    """``F_N = K Δⁿ``: elastic (``χ′ = 0``); its ``c_r`` has no effect."""

    def chi(self):
        return 0.0


class HuntCrossley(AbstractHysteresisLaw):
    def chi(self):
        return 1.5 * (1.0 - self.c_r)


class LankaraniNikravesh(AbstractHysteresisLaw):
    def chi(self):
        return 0.75 * (1.0 - self.c_r**2)


class Gonthier(AbstractHysteresisLaw):
    def chi(self):
        return (1.0 - self.c_r**2) / self.c_r


class Flores(AbstractHysteresisLaw):
    def chi(self):
        return 1.6 * (1.0 - self.c_r) / self.c_r


class HuGuo(AbstractHysteresisLaw):
    def chi(self):
        return 1.5 * (1.0 - self.c_r) / self.c_r


class LinearSpringDamper(AbstractNormalLaw):
    """``F_N = K Δ + c Δ̇`` for ``Δ > 0``, clipped at zero (no adhesion)."""

    K: jax.Array | float
    c: jax.Array | float = 0.0
    smooth: float = eqx.field(static=True, default=0.0)

    def __call__(self, delta, delta_dot, delta_dot_impact=None):
        d = _softplus(delta, self.smooth)
        f = self.K * d + self.c * delta_dot
        return _onset(delta, f, self.smooth * self.K, self.smooth)


NORMAL_LAWS = {
    "linear": LinearSpringDamper,
    "hertz": Hertz,
    "hunt-crossley": HuntCrossley,
    "lankarani-nikravesh": LankaraniNikravesh,
    "gonthier": Gonthier,
    "flores": Flores,
    "hu-guo": HuGuo,
}


def normal_law(name: str, **params):
    """A normal-force law by name (``NORMAL_LAWS``), with its parameters checked:
    ``K > 0`` (``K ≥ 0`` with ``c > 0`` for the linear law), ``0 < c_r ≤ 1``, ``n > 0``,
    ``smooth ≥ 0``. Hertz's law is elastic: it accepts ``c_r`` (so that code can sweep every law
    with the same arguments) and ignores it."""
    key = str(name).lower().replace("_", "-")
    if key not in NORMAL_LAWS:
        raise ValueError(f"unknown normal-force law {name!r}; choose one of {sorted(NORMAL_LAWS)}")
    _check(params)
    if "smooth" in params and is_concrete(params["smooth"]) and np.ndim(params["smooth"]) == 0:
        params["smooth"] = float(params["smooth"])  # a static field: a plain number, whatever type it came as
    law = NORMAL_LAWS[key](**params)
    if is_concrete(law.K) and not np.all(np.asarray(law.K) > 0):
        if not (key == "linear" and is_concrete(law.c) and np.all(np.asarray(law.c) > 0)):
            raise ValueError(f"contact parameter K = {params.get('K')} must be > 0: the law would exert no force")
    return law


def _check(params):
    for name, lo, lo_ok, hi in (("K", 0.0, True, None), ("c", 0.0, True, None), ("c_r", 0.0, False, 1.0),
                                ("n", 0.0, False, None), ("smooth", 0.0, True, None), ("mu_k", 0.0, True, None),
                                ("mu_s", 0.0, True, None), ("v0", 0.0, False, None), ("v1", 0.0, False, None),
                                ("width", 0.0, False, None), ("viscous", 0.0, True, None), ("v_s", 0.0, False, None),
                                ("exponent", 0.0, False, None), ("zeta", 0.0, True, None), ("sigma0", 0.0, True, None),
                                ("sigma1", 0.0, True, None), ("sigma2", 0.0, True, None)):
        if name not in params or not is_concrete(params[name]):
            continue
        v = np.asarray(params[name], float)
        bad = np.any(v < lo) if lo_ok else np.any(v <= lo)
        if hi is not None:
            bad = bad or np.any(v > hi)
        if bad or not np.all(np.isfinite(v)):
            rng = f"({lo}, {hi}]" if hi is not None else (f">= {lo}" if lo_ok else f"> {lo}")
            raise ValueError(f"contact parameter {name} = {params[name]} is outside its range {rng}")


# ----------------------------------------------------------------------------------------
# Friction laws: force along −v, magnitude μ(|v|) F_N
# ----------------------------------------------------------------------------------------


class AbstractFrictionLaw(eqx.Module):
    """A friction law of the slip velocity: ``F_T(v, F_N)`` opposing ``v`` (elementwise; with
    ``F_N = 1`` its ``μ`` parameters are forces, which is how joint friction uses it)."""

    @abc.abstractmethod
    def __call__(self, v, f_n):
        """Friction force [N] (or torque) for slip velocity ``v`` and normal force ``f_n``."""


class AbstractStatefulFrictionLaw(eqx.Module):
    """A friction law with an internal state per contact that the simulation integrates (the
    state has the shape of the slip velocity): ``z_rate(v, z)`` and ``F_T(v, F_N, z)``."""

    @abc.abstractmethod
    def z_rate(self, v, z, speed=None):
        """``ż`` of the law's state."""

    @abc.abstractmethod
    def __call__(self, v, f_n, z, zdot=None):
        """Friction force for slip velocity ``v``, normal force ``f_n`` and state ``z``."""


class Coulomb(AbstractFrictionLaw):
    """``F_T = −μ_k F_N sgn(v)`` (exact: zero at ``v = 0``; not differentiable there)."""

    mu_k: jax.Array | float

    def __call__(self, v, f_n):
        return -self.mu_k * f_n * jnp.sign(v)


class SmoothCoulomb(AbstractFrictionLaw):
    """``F_T = −μ_k F_N s(v/ε)`` with ``s = tanh`` or ``(2/π) arctan``; ``ε → 0`` gives Coulomb."""

    mu_k: jax.Array | float
    width: jax.Array | float = 1e-3
    kind: str = eqx.field(static=True, default="tanh")

    def __check_init__(self):
        if self.kind not in ("tanh", "arctan"):
            raise ValueError(f"SmoothCoulomb kind must be 'tanh' or 'arctan', got {self.kind!r}")

    def __call__(self, v, f_n):
        x = v / self.width
        s = jnp.tanh(x) if self.kind == "tanh" else (2.0 / jnp.pi) * jnp.arctan(x)
        return -self.mu_k * f_n * s


class CoulombViscous(AbstractFrictionLaw):
    """Smoothed Coulomb plus viscous: ``F_T = −μ_k F_N tanh(v/ε) − c_v v``."""

    mu_k: jax.Array | float
    viscous: jax.Array | float
    width: jax.Array | float = 1e-3

    def __call__(self, v, f_n):
        return -self.mu_k * f_n * jnp.tanh(v / self.width) - self.viscous * v


class Stribeck(AbstractFrictionLaw):
    """``μ(v) = μ_k + (μ_s − μ_k) exp(−(|v|/v_s)^δ)`` (+ viscous), smoothed sign of width ε."""

    mu_k: jax.Array | float
    mu_s: jax.Array | float
    v_s: jax.Array | float
    exponent: float = eqx.field(static=True, default=2.0)
    viscous: jax.Array | float = 0.0
    width: jax.Array | float = 1e-4

    def __call__(self, v, f_n):
        mu = self.mu_k + (self.mu_s - self.mu_k) * jnp.exp(-((jnp.abs(v) / self.v_s) ** self.exponent))
        return -mu * f_n * jnp.tanh(v / self.width) - self.viscous * v


class Ambrosio(AbstractFrictionLaw):
    """Seed 001 eq 24: ``0`` for ``|v| ≤ v0``, ``μ_k F_N (|v| − v0)/(v1 − v0)`` between,
    ``μ_k F_N`` for ``|v| ≥ v1``, opposing ``v``."""

    mu_k: jax.Array | float
    v0: jax.Array | float = 1e-4
    v1: jax.Array | float = 1e-3

    def __call__(self, v, f_n):
        a = jnp.abs(v)
        ramp = jnp.clip((a - self.v0) / (self.v1 - self.v0), 0.0, 1.0)
        return -self.mu_k * f_n * ramp * jnp.sign(v)


class Threlfall(AbstractFrictionLaw):
    """Threlfall (1978): ``F_T = −μ_k F_N (1 − exp(−3|v|/v0)) sgn(v)``."""

    mu_k: jax.Array | float
    v0: jax.Array | float = 1e-3

    def __call__(self, v, f_n):
        return -self.mu_k * f_n * (1.0 - jnp.exp(-3.0 * jnp.abs(v) / self.v0)) * jnp.sign(v)


class BengisuAkay(AbstractFrictionLaw):
    """Bengisu & Akay (1994): ``μ = μ_s − μ_s (|v| − v0)²/v0²`` for ``|v| ≤ v0`` (rising to
    ``μ_s`` at ``v0``), then ``μ_k + (μ_s − μ_k) exp(−ζ (|v| − v0))``; opposing ``v``."""

    mu_k: jax.Array | float
    mu_s: jax.Array | float
    v0: jax.Array | float = 1e-3
    zeta: jax.Array | float = 100.0

    def __call__(self, v, f_n):
        a = jnp.abs(v)
        low = self.mu_s - self.mu_s * (a - self.v0) ** 2 / self.v0**2
        high = self.mu_k + (self.mu_s - self.mu_k) * jnp.exp(-self.zeta * jnp.maximum(a - self.v0, 0.0))
        return -jnp.where(a <= self.v0, low, high) * f_n * jnp.sign(v)


class LuGre(AbstractStatefulFrictionLaw):
    """LuGre (Canudas de Wit et al. 1995), per unit normal force: bristle deflection ``z`` [m]
    with ``ż = v − σ0 |v| z / g(v)``, ``g(v) = μ_k + (μ_s − μ_k) exp(−(v/v_s)²)``, and
    ``F_T = −F_N (σ0 z + σ1 ż) − σ2 v``. ``z`` is a state the simulation integrates
    (:meth:`z_rate`)."""

    mu_k: jax.Array | float
    mu_s: jax.Array | float
    v_s: jax.Array | float
    sigma0: jax.Array | float = 1e5  # 1/m (bristle stiffness per unit normal force)
    sigma1: jax.Array | float = 300.0  # s/m
    sigma2: jax.Array | float = 0.0  # N s/m

    def g(self, v):
        return self.mu_k + (self.mu_s - self.mu_k) * jnp.exp(-((v / self.v_s) ** 2))

    def z_rate(self, v, z, speed=None):
        """``ż = v − σ0 |v| z / g(|v|)``; ``v`` the slip velocity (a scalar or a vector, then
        ``speed`` = its norm [..., 1])."""
        s = jnp.abs(v) if speed is None else speed
        return v - self.sigma0 * s * z / self.g(s)

    def __call__(self, v, f_n, z, zdot=None):
        """``F_T = −F_N (σ0 z + σ1 ż) − σ2 v`` (``zdot``: ``ż`` if already known)."""
        zdot = self.z_rate(v, z) if zdot is None else zdot
        return -f_n * (self.sigma0 * z + self.sigma1 * zdot) - self.sigma2 * v


FRICTION_LAWS = {
    "coulomb": Coulomb,
    "smooth-coulomb": SmoothCoulomb,
    "coulomb-viscous": CoulombViscous,
    "stribeck": Stribeck,
    "ambrosio": Ambrosio,
    "threlfall": Threlfall,
    "bengisu-akay": BengisuAkay,
    "lugre": LuGre,
}


def friction_law(name: str, **params):
    """A friction law by name (``FRICTION_LAWS``) with its parameters checked
    (``μ ≥ 0``, positive velocity scales and widths)."""
    key = str(name).lower().replace("_", "-")
    if key not in FRICTION_LAWS:
        raise ValueError(f"unknown friction law {name!r}; choose one of {sorted(FRICTION_LAWS)}")
    _check(params)
    law = FRICTION_LAWS[key](**params)
    if key == "ambrosio" and is_concrete(law.v0, law.v1) and not np.all(np.asarray(law.v1) > np.asarray(law.v0)):
        # with one given, against the other's default too (v0 = 2e-3 alone inverted the ramp)
        raise ValueError(f"Ambrosio friction needs v1 > v0, got v0 = {law.v0}, v1 = {law.v1}")
    if key == "lugre" and is_concrete(law.mu_k, law.mu_s) and not np.all(np.maximum(law.mu_k, law.mu_s) > 0):
        raise ValueError("LuGre friction needs mu_k or mu_s > 0 (the bristles' steady deflection divides by g(v))")
    return law
