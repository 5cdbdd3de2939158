"""Weighted nonlinear least squares over named system parameters, with calibrated uncertainty
and an identifiability verdict.

Cost (one or several experiments ``e``, channels ``c``, samples ``k``)::

    C(p) = ½ Σ_e Σ_c Σ_k ((y_ec(t_k; p) − ȳ_eck) / σ_ec)²

minimised over the unconstrained ``θ`` (``p = forward(θ)``, :mod:`.transforms`) by optimistix's
Levenberg–Marquardt with the exact Jacobian: forward mode, through located impact events included
(with compliant contact, the sensitivity equations solved under the step controller:
:class:`~diffsim.simulation.sensitivity.ForwardSensitivity`).

Uncertainty (Gauss–Newton / Laplace at the optimum): ``Cov(θ) = s² (JᵀJ)⁻¹`` with ``s² = 1``
when every channel's σ is given (absolute noise) and ``s² = 2C/(N − P)`` otherwise; ``Cov(p) =
G Cov(θ) Gᵀ`` with ``G = ∂p/∂θ``. The 95 % interval is ``forward(θ ± 1.96 σ_θ)`` per entry for the
elementwise transforms (asymmetric for log/logit) and, for the others (``body.<b>.inertial``'s
log-Cholesky), the 2.5 and 97.5 percentiles of ``forward(θ)`` over 4000 draws ``θ ~ N(θ̂,
Cov(θ))`` with a fixed key: every interval lies inside the parameter's domain (a positive mass,
a positive-definite inertia's moments).

Identifiability: the singular values ``s_i`` of the Jacobian in relative parameters
(``J_p diag(scale)``: ``scale = |p|`` for log / logit entries, ``max(|p|, |p0|)`` with the start
``p0`` for signed ones, which can be fitted at 0; 1 where that is 0). A right singular vector ``v_i``
whose relative standard deviation ``s/s_i`` exceeds 1 (the data do not pin that combination to
within 100 %), or with ``s_i < 1e-9 s_max`` (numerically null), is reported as a direction with no
information, by the parameter combination it names.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..model.params import ParamError, split_index
from ..precision import full_precision
from ..simulation.system import System, get_param, param_names
from .estimator import (
    FAILED_RESIDUAL,
    JACOBIANS,
    Estimator,
    FitError,
    Param,
    estimator,
    is_inertial,
    prepare,
    wrapped_angle_warnings,
)
from .experiment import Experiment
from .report import save_fit
from .transforms import (
    AbstractTransform,
    Log,
    LogCholeskyInertia,
    Logit,
    TransformError,
    default_transform,
)


def _inertial_get(system, body):
    m = get_param(system, f"body.{body}.mass")
    c = get_param(system, f"body.{body}.com")
    I = get_param(system, f"body.{body}.inertia")
    return jnp.concatenate([jnp.reshape(m, (1,)), c, jnp.array([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])])


def _value(system, name):
    return _inertial_get(system, name.split(".")[1]) if is_inertial(name) else get_param(system, name)


def _resolve(system, names, initial, transforms) -> list[Param]:
    if isinstance(names, str):
        names = [names]
    names = list(names)
    if not names:
        raise FitError("give at least one parameter name to fit")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise FitError(f"duplicate parameter names {dup}")
    known = set(param_names(system))
    initial, transforms = dict(initial or {}), dict(transforms or {})
    extra = (set(initial) | set(transforms)) - set(names)
    if extra:
        raise FitError(f"initial/transforms given for names not being fitted: {sorted(extra)}")
    for n in names:
        if is_inertial(n):
            if f"body.{n.split('.')[1]}.mass" not in known:
                raise FitError(f"{n!r}: no rigid body {n.split('.')[1]!r}")
        else:
            try:
                get_param(system, n)
            except ParamError as e:
                raise FitError(str(e)) from None
    _check_overlap(system, names)
    out = []
    for n in names:
        v = np.asarray(initial.get(n, _value(system, n)), dtype=float)
        default_shape = np.shape(_value(system, n))
        if v.shape != default_shape:
            if v.ndim == 0:
                v = np.broadcast_to(v, default_shape).copy()
            else:
                raise FitError(f"initial value of {n!r} has shape {v.shape}, the parameter {default_shape}")
        tr = transforms.get(n) or (LogCholeskyInertia() if is_inertial(n) else default_transform(n, v))
        positive = not is_inertial(n) and isinstance(default_transform(n, np.ones_like(v)), Log)
        if n not in transforms and positive and np.any(v < 0):  # a positive quantity: no silent switch to identity
            raise FitError(f"{n!r}: initial value {v.tolist()} is negative, and this quantity is positive; start "
                           f"from a positive value (or give transforms={{{n!r}: Identity()}} to fit it unconstrained)")
        if n not in transforms and positive and np.any(v == 0):  # log cannot start at 0; identity could go negative
            raise FitError(f"{n!r}: the start {v.tolist()} is 0, on the edge of this quantity's domain (it cannot be "
                           f"negative): start from a positive value (initial={{{n!r}: ...}} or the system's value; it "
                           f"is then fitted in log space), or give a transform explicitly (transforms={{{n!r}: "
                           f"Identity()}}: unconstrained, it can come back negative)")
        if not isinstance(tr, AbstractTransform):
            raise FitError(f"transform of {n!r} must be a diffsim.identify transform, got {type(tr).__name__}")
        try:
            th = np.asarray(tr.inverse(jnp.asarray(v)))
        except TransformError as e:
            raise FitError(f"{n!r}: {e}") from None
        if not np.all(np.isfinite(th)):
            raise FitError(f"{n!r}: initial value {v.tolist()} maps to a non-finite unconstrained value")
        out.append(Param(n, v.shape, tr, v))
    return out


def entries(system, name) -> set:
    """The entries ``(base name, index)`` of the system that the parameter ``name`` sets:
    ``body.<b>.inertial`` the mass, the three of the centre of mass and the nine of the inertia;
    ``joint.j.damping`` every entry; ``joint.j.damping[0]`` one (an index selects the entries
    it is a prefix of)."""
    if is_inertial(name):
        b = name.split(".")[1]
        return ({(f"body.{b}.mass", ())} | {(f"body.{b}.com", (k,)) for k in range(3)}
                | {(f"body.{b}.inertia", ij) for ij in np.ndindex(3, 3)})
    base, idx = split_index(name)
    shape = np.shape(get_param(system, base))
    idx = tuple(idx or ())
    return {(base, full) for full in np.ndindex(*shape) if full[:len(idx)] == idx}


def _entry_text(entry) -> str:
    base, idx = entry
    return f"{base}[{', '.join(map(str, idx))}]" if idx else base


def _check_overlap(system, names):
    """Two names of the fit that set the same entry (``body.arm.mass`` and ``body.arm.inertial``,
    ``joint.arm.damping`` and ``joint.arm.damping[0]``) are one quantity fitted twice: refused."""
    seen = {}
    for n in names:
        for e in sorted(entries(system, n)):
            if e in seen:
                raise FitError(f"{seen[e]!r} and {n!r} both set {_entry_text(e)}: fit each quantity under one name")
            seen[e] = n


def _check_overrides(system, params, experiments):
    """An experiment's ``overrides`` of a fitted entry would be replaced by the fitted value: refused."""
    fitted = {}
    for p in params:
        for e in entries(system, p.name):
            fitted[e] = p.name
    for exp in experiments:
        for o in getattr(exp, "overrides", None) or {}:
            try:
                hit = sorted(entries(system, o) & set(fitted))
            except (ParamError, TypeError, ValueError):  # not a parameter of the system: prepare() says so
                continue
            if hit:
                raise FitError(f"experiment {exp.name!r}: its overrides set {o!r}, which the fit estimates "
                               f"({fitted[hit[0]]!r}; the fitted value would replace the experiment's own): remove "
                               "it from the overrides, or from the fitted names")


def _relative_scale(params: Sequence[Param], p_flat) -> np.ndarray:
    """The size of each flat entry behind the identifiability verdict's relative parameters: ``|p|``
    for a positive (log / logit) entry; ``max(|p|, |p0|)`` (the start ``p0``) for a signed one, which
    can be fitted at or near 0 (an initial velocity of 0) and would otherwise count as undetermined
    however well the data pin it; 1 where both are 0 (absolute units)."""
    out, k = [], 0
    for prm in params:
        v = np.abs(p_flat[k:k + prm.size])
        if not isinstance(prm.transform, (Log, Logit)):
            v = np.maximum(v, np.abs(np.ravel(np.asarray(prm.initial, dtype=float))))
        out.append(np.where(v > 0, v, 1.0))
        k += prm.size
    return np.concatenate(out)


def zero_start(system, name) -> bool:
    """Whether ``name`` is a quantity that cannot be negative (log transform by default) whose value
    in ``system`` has an entry at exactly 0: :func:`fit` refuses that start unless it is given a
    transform (the CLI says which ``--set`` fixes it)."""
    if is_inertial(name):
        return False
    try:
        v = np.asarray(_value(system, name), dtype=float)
    except (ParamError, TypeError, ValueError):
        return False
    return isinstance(default_transform(name, np.ones_like(v)), Log) and bool(np.any(v == 0))


def _flat_names(params: Sequence[Param]) -> list[str]:
    out = []
    for p in params:
        if is_inertial(p.name):
            b = p.name.split(".")[1]
            out += [f"body.{b}.mass"] + [f"body.{b}.com[{k}]" for k in range(3)] + \
                   [f"body.{b}.inertia[{ij}]" for ij in ("0,0", "1,1", "2,2", "0,1", "0,2", "1,2")]
        elif p.size == 1 and p.shape == ():
            out.append(p.name)
        else:
            out += [f"{p.name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*p.shape)]
    return out


@dataclasses.dataclass
class FitResult:
    """What :func:`fit` found (module docstring). Arrays are NumPy; ``value``/``std``/``ci95``/
    ``initial`` map each fitted name to its value (the name's shape)."""

    names: list[str]
    value: dict
    initial: dict
    std: dict
    ci95: dict
    flat_names: list[str]
    covariance: np.ndarray
    correlation: np.ndarray
    cost: float
    cost_per_experiment: dict
    n_samples: int
    noise_scale: float
    iterations: int
    status: str
    converged: bool
    identifiable: dict
    holdout_rms: float | None
    transforms: dict
    chi2_per_dof: float = float("nan")
    warnings: list = dataclasses.field(default_factory=list)
    predictions: dict = dataclasses.field(repr=False, default_factory=dict)
    experiments: list = dataclasses.field(repr=False, default_factory=list)
    holdout: object = dataclasses.field(repr=False, default=None)
    #: experiment name → {channel: offsets of its quaternion blocks} (the figures compare them up to sign)
    quaternion_blocks: dict = dataclasses.field(repr=False, default_factory=dict)

    def to_json(self) -> dict:
        """The ``fit.json`` contract: ``params`` {NAME: {value, std, ci95, initial}}, ``cost``,
        ``status``, ``iterations``, ``identifiable``, ``holdout_rms`` (+ details). Each parameter's
        ``determined`` (true/false, shaped like its value) tells a finite ``std`` from an infinite one
        (a direction without information), which JSON writes as ``null`` as it does NaN."""
        params = {n: {"value": self.value[n], "std": self.std[n], "ci95": list(self.ci95[n]),
                      "initial": self.initial[n], "transform": self.transforms[n],
                      "determined": np.isfinite(np.asarray(self.std[n]))} for n in self.names}
        return {"params": params, "cost": self.cost, "status": self.status, "iterations": self.iterations,
                "identifiable": self.identifiable, "holdout_rms": self.holdout_rms,
                "converged": self.converged, "warnings": self.warnings, "chi2_per_dof": self.chi2_per_dof,
                "cost_per_experiment": self.cost_per_experiment,
                "n_samples": self.n_samples, "noise_scale": self.noise_scale,
                "correlation": {"names": self.flat_names, "matrix": self.correlation}}

    def save(self, out_dir, document: dict | None = None) -> list:
        """Write ``fit.json`` and the figures (model vs data and residuals per channel, correlation)
        to ``out_dir``; returns the written paths."""
        return save_fit(self, out_dir, document)

    def summary(self) -> str:
        lines = [f"fit: {self.status} after {self.iterations} iterations, cost {self.cost:.6g} "
                 f"({self.n_samples} samples)"]
        for n in self.names:
            v, s, (lo, hi) = np.asarray(self.value[n]), np.asarray(self.std[n]), self.ci95[n]
            lines.append(f"  {n:<28} {_fmt(v, 7)} ± {_fmt(s, 3)}  95 % [{_fmt(lo, 7)}, {_fmt(hi, 7)}]")
        for w in self.warnings:
            lines.append(f"  WARNING: {w}")
        ident = self.identifiable
        lines.append("  identifiable" if ident["identifiable"] else
                     "  NOT identifiable: " + "; ".join(d["combination_text"] for d in ident["directions"]))
        if self.holdout_rms is not None:
            lines.append(f"  holdout rms (weighted) {self.holdout_rms:.4g}")
        return "\n".join(lines)


def _fmt(x, digits):
    """Scalars and arrays with ``digits`` significant digits (a small std is not printed as 0)."""
    return np.array2string(np.asarray(x), formatter={"float_kind": lambda v: f"{v:.{digits}g}"})


#: Below this many degrees of freedom a noise level estimated from the residuals makes the normal
#: quantile's intervals noticeably too narrow (Student's t_{0.975}: 2.09 at 20, 2.04 at 30, vs 1.96)
FEW_DOF = 30


def identifiability(J_rel: np.ndarray, flat_names: Sequence[str], noise_scale: float = 1.0,
                    rel_std_max: float = 1.0, rcond: float = 1e-9) -> dict:
    """The verdict from the weighted Jacobian in relative parameters ``J_rel`` [N, P] (module
    docstring): singular values, rank, and every direction with no information named by its
    parameter combination."""
    _, s, Vt = np.linalg.svd(J_rel, full_matrices=False)
    smax = s[0] if s.size else 0.0
    dirs = []
    for i, si in enumerate(s):
        rel_std = noise_scale / si if si > 0 else np.inf
        if si <= rcond * smax or rel_std > rel_std_max:
            v = Vt[i] / np.max(np.abs(Vt[i]))
            comb = {flat_names[k]: float(v[k]) for k in np.argsort(-np.abs(v)) if abs(v[k]) >= 0.05}
            text = " ".join(f"{'+' if c >= 0 else '−'} {abs(c):.3g}·{n}" for n, c in comb.items()).lstrip("+ ")
            dirs.append({"singular_value": float(si), "relative_std": float(rel_std), "combination": comb,
                         "combination_text": f"{text} (relative changes) is not determined by the data"})
    return {"identifiable": not dirs, "rank": int(np.sum(s > rcond * smax)), "n_params": int(J_rel.shape[1]),
            "singular_values": s.tolist(), "condition_number": float(smax / s[-1]) if s.size and s[-1] > 0 else None,
            "directions": dirs}


def _build(system, names, experiments, observables, initial, transforms, rtol, atol, max_steps, jacobian):
    if jacobian not in JACOBIANS:
        raise FitError(f"jacobian must be one of {JACOBIANS}, got {jacobian!r}")
    if isinstance(max_steps, bool) or int(max_steps) != max_steps or int(max_steps) < 1:  # 0 "converged" at cost 0
        raise FitError(f"max_steps must be a positive integer, got {max_steps}")
    params = _resolve(system, names, initial, transforms)
    preps = prepare(system, experiments, observables, jacobian)
    _check_overrides(system, params, [p.exp for p in preps])
    n_samples = sum(p.exp.n_samples for p in preps)
    P = sum(p.size for p in params)
    if n_samples < P:
        raise FitError(f"{n_samples} samples cannot determine {P} parameter entries")
    return params, preps, estimator(params, preps, rtol=rtol, atol=atol, max_steps=max_steps, jacobian=jacobian)


def make_estimator(system: System, names, experiments, *, observables: Mapping[str, Callable] | None = None,
                   initial: Mapping | None = None, transforms: Mapping | None = None, rtol: float = 1e-8,
                   atol: float = 1e-10, max_steps: int = 100, jacobian: str = "fwd") -> Estimator:
    """The fit as a pure function of the data (:class:`~diffsim.identify.estimator.Estimator`),
    for batches of data sets or starts under ``vmap`` and for derivatives of the fitted values
    with respect to the data (implicit function theorem). Arguments as in :func:`fit`."""
    return _build(system, names, experiments, observables, initial, transforms, rtol, atol, max_steps, jacobian)[2]


# The compiled steps of :func:`fit`, module-level functions of the estimator: a fit whose
# parameters, observables and solver settings equal an earlier one's (other data, σ or starting
# values) reuses its programs (:class:`~.estimator.Residuals`).
@eqx.filter_jit
def _search(est: Estimator, theta0):
    return est.solve(theta0=theta0)


@eqx.filter_jit
def _search_starts(est: Estimator, starts):
    """Every start's search in one program, one after another: under ``vmap`` diffrax's event root
    find raises (lineax, non-finite operator) when batch members locate different events."""
    return jax.lax.map(lambda th: est.solve(theta0=th), starts)


@eqx.filter_jit
def _at_solution(est: Estimator, theta, jacobian: bool):
    """Each experiment's weighted residuals and predictions, the Jacobian (``jacobian``) and
    ``G = ∂p/∂θ``: one evaluation gives the report of a search that did not return them (reverse-
    mode and finite-difference Jacobians) and a holdout's residuals."""
    def with_aux(th):
        return est.residuals.predictions(th, est.data)
    if jacobian:
        J, aux = (jax.jacrev if est.residuals.jacobian == "bwd" else jax.jacfwd)(with_aux, has_aux=True)(theta)
    else:
        J, aux = None, with_aux(theta)[1]
    return J, aux, _physical_jacobian(est, theta)


@eqx.filter_jit
def _physical_jacobian(est: Estimator, theta):
    """``G = ∂p/∂θ`` (the transforms' Jacobian)."""
    return jax.jacfwd(est.layout.physical_flat)(theta)


@eqx.filter_jit
def _intervals(est: Estimator, theta, J, noise_scale):
    return est.intervals_from_jacobian(theta, J, noise_scale)


@full_precision
def fit(system: System, names, experiments, *, observables: Mapping[str, Callable] | None = None,
        initial: Mapping | None = None, transforms: Mapping | None = None, holdout: Experiment | None = None,
        rtol: float = 1e-8, atol: float = 1e-10, max_steps: int = 100, n_starts: int = 1, spread: float = 0.5,
        key=None, jacobian: str = "fwd") -> FitResult:
    """Fit the named parameters of ``system`` to one or several experiments.

    Args:
        system: the :class:`~diffsim.System` (its values are the starting point unless
            ``initial`` says otherwise).
        names: parameter names from :func:`diffsim.param_names` (``contact.K``,
            ``joint.j1.damping``, ``beam.arm.kelvin_voigt`` …) and ``body.<b>.inertial`` for a
            body's ten inertial parameters through the log-Cholesky pseudo-inertia.
        experiments: :class:`Experiment` or a list of them (fitted jointly). A name that repeats
            is made unique with the suffixes ``#2``, ``#3``, … in order (the keys of
            ``cost_per_experiment`` and ``predictions``, the figures' names); an experiment's
            ``overrides`` may not set a fitted parameter (:class:`FitError`).
        observables: extra observable functions ``traj -> [T, ...]`` by channel name.
        initial, transforms: per-name starting values / :mod:`.transforms` (defaults by name: log
            for a positive quantity, which must then start above 0 — a start at exactly 0 is refused
            unless a transform is given). Two names that set the same entry (``body.b.mass`` and
            ``body.b.inertial``) are refused.
        holdout: a validation experiment: its weighted rms residual at the fitted values
            (``holdout_rms``; ``None``, with a warning, when its simulation fails there). Named like a
            training experiment, it is renamed ``<name>#holdout``.
        rtol, atol: Levenberg–Marquardt tolerances on the cost decrease and the step.
        max_steps: iteration limit (status ``max_steps`` when hit).
        n_starts: multi-start count: ``n_starts − 1`` extra starts at ``θ0 + spread·N(0, 1)``
            (unconstrained space), solved in one compiled program (``lax.map``); the lowest cost
            wins.
        spread: the standard deviation of those extra starts around ``θ0``, in the unconstrained
            space (0.5: ±65 % of a log-transformed value at one σ).
        key: ``jax.random`` key of the extra starts (default ``PRNGKey(0)``).
        jacobian: ``"fwd"`` (forward mode through diffrax, default), ``"bwd"`` (reverse mode) or
            ``"fd"`` (central finite differences, for comparison) in the search. The report
            (covariance, intervals, identifiability) uses one exact Jacobian at the solution:
            with ``"fwd"`` the one the search computed there, otherwise forward mode (reverse
            mode with ``"bwd"``) computed once after the search.

    A trial point's cost is one simulation when the trust region rejects it, one sensitivity
    solve when it can be accepted (``"fwd"``). Trials far from the data can be stiff (the ball's
    K at 1e16 N/m^1.5 with its tangents runs into the step budget): the system's ``max_steps``
    (per contact segment) bounds what such a trial costs, and a run that exceeds it counts as a
    failed point, which the search rejects. ``experiments/identify_ball.py`` sets it to 5000
    (the optimum needs ~200 per segment; one of its starts took 150 s with the default 100 000,
    11 s with 5000).
    """
    if int(n_starts) < 1:
        raise FitError(f"n_starts must be >= 1, got {n_starts}")
    params, preps, est = _build(system, names, experiments, observables, initial, transforms, rtol, atol, max_steps,
                                jacobian)
    hp = None
    if holdout is not None:  # prepared (and checked) before the search
        if not isinstance(holdout, Experiment):
            raise FitError(f"holdout must be a diffsim.identify.Experiment, got {type(holdout).__name__}")
        taken = {p.exp.name for p in preps}
        if holdout.name in taken:  # its predictions and figure would replace the training experiment's
            holdout = copy.copy(holdout)
            base, k = holdout.name, 1
            holdout.name = f"{base}#holdout"
            while holdout.name in taken:
                k += 1
                holdout.name = f"{base}#holdout{k}"
        hp = prepare(system, [holdout], observables, jacobian)[0]
        _check_overrides(system, params, [hp.exp])
    layout, n_samples, P = est.layout, sum(p.exp.n_samples for p in preps), est.layout.size

    theta0 = est.theta0
    if n_starts == 1:
        sol = _search(est, theta0)
    else:
        key = jax.random.PRNGKey(0) if key is None else key
        starts = jnp.concatenate([theta0[None], theta0 + spread * jax.random.normal(key, (int(n_starts) - 1, P),
                                                                                      theta0.dtype)])
        sols = _search_starts(est, starts)
        costs = jnp.where(sols.ok, sols.cost, jnp.inf)
        best = int(jnp.argmin(jnp.where(jnp.isfinite(costs), costs, jnp.inf)))
        sol = jax.tree_util.tree_map(lambda a: a[best], sols)
    theta, ok, steps = jnp.asarray(sol.theta), sol.ok, sol.steps

    # with "fwd" the search's evaluation at θ̂ gave the Jacobian and each experiment's residuals
    # and predictions: the report runs no simulation (and compiles none)
    if sol.jacobian is None:
        J, aux, G = _at_solution(est, theta, True)
    else:
        J, aux, G = sol.jacobian, sol.per_experiment, _physical_jacobian(est, theta)
    J, G = np.asarray(J), np.asarray(G)
    r = np.concatenate([np.asarray(rr) for rr, _ in aux])
    cost = float(0.5 * np.sum(r**2))
    failed = bool(np.any(r == FAILED_RESIDUAL))
    sigma_given = all(all(p.exp.sigma_given.values()) for p in preps)
    dof = n_samples - P
    warns = wrapped_angle_warnings(preps, observables)
    if sigma_given:  # χ²/dof: 1 ± √(2/dof) for a right model and noise; dof = 0 at N = P, where the cost is 0
        noise_scale, chi2_dof, dof = 1.0, 2.0 * cost / max(dof, 1), max(dof, 1)
    elif dof > 0:  # the noise level from the residuals (no χ² without a stated σ)
        noise_scale, chi2_dof = float(np.sqrt(2.0 * cost / dof)), float("nan")
        if dof < FEW_DOF:
            warns.append(f"the noise level is estimated from {dof} degrees of freedom (samples minus parameter "
                         "entries) and no stated σ: the 95 % intervals (±1.96 std, the normal quantile) are too "
                         "narrow for so few (Student's t quantile is larger); give sigma or more samples")
    else:  # N = P: the fit interpolates the data, the residuals say nothing of the noise
        noise_scale, chi2_dof = float("inf"), float("nan")
        warns.append(f"{n_samples} samples for {P} parameter entries and no stated σ: the noise level cannot be "
                     "estimated from the residuals (0 degrees of freedom), so std and intervals are infinite; give "
                     "sigma (the measurement noise) or more samples")
    if sigma_given and chi2_dof > 1.0 + 5.0 * np.sqrt(2.0 / dof):
        warns.append(f"the cost is {chi2_dof:.3g}× what the stated noise predicts (χ²/dof = 1 ± {np.sqrt(2 / dof):.2g}):"
                     " a local minimum (try n_starts / --starts, or another start) or a model that cannot produce"
                     " the data; the intervals assume neither")

    # nothing known of the noise (N = P, no σ): every direction is one without information (std = inf)
    known = np.isfinite(noise_scale)
    std_flat, lo_flat, hi_flat, cov_p = (np.asarray(a) for a in _intervals(  # the scale an array: no new program
        est, theta, J if known else np.zeros_like(J), jnp.asarray(noise_scale if known else 1.0, theta.dtype)))
    d = np.where(np.isfinite(std_flat) & (std_flat > 0), std_flat, np.nan)
    with np.errstate(invalid="ignore"):
        corr = cov_p / np.outer(d, d)
    p_flat = np.asarray(layout.physical_flat(theta))
    J_p = J @ np.linalg.pinv(G)
    scale = _relative_scale(params, p_flat)
    flat_names = _flat_names(params)
    ident = identifiability(J_p * scale, flat_names, noise_scale)

    value, std, ci, init, trn = {}, {}, {}, {}, {}
    o = layout.offsets
    for i, p in enumerate(params):
        sl = slice(o[i], o[i + 1])
        value[p.name], std[p.name], init[p.name] = p_flat[sl].reshape(p.shape), std_flat[sl].reshape(p.shape), p.initial
        ci[p.name] = (lo_flat[sl].reshape(p.shape), hi_flat[sl].reshape(p.shape))
        trn[p.name] = p.transform.describe()

    per_exp = {p.exp.name: float(0.5 * np.sum(np.asarray(rr) ** 2)) for p, (rr, _) in zip(preps, aux)}
    preds = {p.exp.name: {ch: np.asarray(y) for ch, y in pr.items()} for p, (_, pr) in zip(preps, aux)}
    hold = None
    if hp is not None:
        warns += wrapped_angle_warnings([hp], observables)
        hest = estimator(params, [hp], jacobian=jacobian)
        _, aux, _ = _at_solution(hest, theta, False)
        rr, pred = aux[0]
        rr = np.asarray(rr)
        pred = {ch: np.asarray(y) for ch, y in pred.items()}
        if np.any(rr == FAILED_RESIDUAL):
            why = ("its predictions are not finite" if not all(np.all(np.isfinite(y)) for y in pred.values()) else
                   "the solver did not succeed (step budget, a non-finite state or the event limit)")
            warns.append(f"the holdout experiment {holdout.name!r} could not be simulated at the fitted values: {why};"
                         " holdout_rms is None")
        else:
            hold = float(np.sqrt(np.mean(rr ** 2)))
        preds[holdout.name] = pred

    converged = bool(ok) and not failed and bool(np.all(np.isfinite(p_flat)))
    status = "success" if converged else ("simulation failed at the solution" if failed else
                                          "did not converge (max_steps reached or no decrease)")
    return FitResult(
        names=[p.name for p in params], value=value, initial=init, std=std, ci95=ci, flat_names=flat_names,
        covariance=cov_p, correlation=corr, cost=cost, cost_per_experiment=per_exp, n_samples=n_samples,
        noise_scale=noise_scale, iterations=int(steps), status=status, converged=converged, identifiable=ident,
        holdout_rms=hold, transforms=trn, chi2_per_dof=chi2_dof, warnings=warns, predictions=preds,
        experiments=[p.exp for p in preps], holdout=holdout,
        quaternion_blocks={p.exp.name: dict(p.quats) for p in [*preps, *([hp] if hp is not None else [])] if p.quats})
