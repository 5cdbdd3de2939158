"""Weighted nonlinear least squares over named system parameters, with calibrated uncertainty
and an identifiability verdict.

Cost (one or several experiments ``e``, channels ``c``, samples ``k``)::

    C(p) = ½ Σ_e Σ_c Σ_k ((y_ec(t_k; p) − ȳ_eck) / σ_ec)²

minimised over the unconstrained ``θ`` (``p = forward(θ)``, :mod:`.transforms`) by optimistix's
Levenberg–Marquardt with the exact Jacobian: forward mode through diffrax
(``diffrax.ForwardMode``), through located impact events included.

Uncertainty (Gauss–Newton / Laplace at the optimum): ``Cov(θ) = s² (JᵀJ)⁻¹`` with ``s² = 1``
when every channel's σ is given (absolute noise) and ``s² = 2C/(N − P)`` otherwise; ``Cov(p) =
G Cov(θ) Gᵀ`` with ``G = ∂p/∂θ``. The 95 % interval is ``forward(θ ± 1.96 σ_θ)`` per entry for the
elementwise transforms (asymmetric for log/logit, always inside the domain) and ``p ± 1.96 σ_p``
otherwise.

Identifiability: the singular values ``s_i`` of the Jacobian in relative parameters
(``J_p diag(|p|)``, columns for zero-valued entries unscaled). A right singular vector ``v_i``
whose relative standard deviation ``s/s_i`` exceeds 1 (the data do not pin that combination to
within 100 %), or with ``s_i < 1e-9 s_max`` (numerically null), is reported as a direction with no
information, by the parameter combination it names.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Sequence

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from ..loads import as_loads
from ..model.params import ParamError
from ..simulation.simulate import simulate
from ..simulation.system import System, get_param, param_names, set_params
from ..simulation.trajectory import Status
from .experiment import Experiment, ExperimentError, observable
from .report import save_fit
from .transforms import AbstractTransform, Identity, Log, Logit, LogCholeskyInertia, TransformError, default_transform

Z95 = 1.959963984540054
_FAILED_RESIDUAL = 1e12  # weighted residual of every sample of a failed run: LM always rejects that step


class FitError(ValueError):
    """Bad input to :func:`fit` (unknown or duplicate names, values outside a transform's domain)."""


@dataclasses.dataclass
class _Param:
    name: str
    shape: tuple
    transform: AbstractTransform
    initial: np.ndarray

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=int))


def _inertial_get(system, body):
    m = get_param(system, f"body.{body}.mass")
    c = get_param(system, f"body.{body}.com")
    I = get_param(system, f"body.{body}.inertia")
    return jnp.concatenate([jnp.reshape(m, (1,)), c, jnp.array([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])])


def _inertial_values(body, p):
    xx, yy, zz, xy, xz, yz = (p[4 + k] for k in range(6))
    I = jnp.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    return {f"body.{body}.mass": p[0], f"body.{body}.com": p[1:4], f"body.{body}.inertia": I}


def _is_inertial(name):
    parts = name.split(".")
    return len(parts) == 3 and parts[0] == "body" and parts[2] == "inertial"


def _value(system, name):
    return _inertial_get(system, name.split(".")[1]) if _is_inertial(name) else get_param(system, name)


def _as_system_values(name, value):
    return _inertial_values(name.split(".")[1], value) if _is_inertial(name) else {name: value}


def _resolve(system, names, initial, transforms) -> list[_Param]:
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
    out = []
    for n in names:
        if _is_inertial(n):
            if f"body.{n.split('.')[1]}.mass" not in known:
                raise FitError(f"{n!r}: no rigid body {n.split('.')[1]!r}")
        else:
            try:
                get_param(system, n)
            except ParamError as e:
                raise FitError(str(e)) from None
        v = np.asarray(initial.get(n, _value(system, n)), dtype=float)
        default_shape = np.shape(_value(system, n))
        if v.shape != default_shape:
            if v.ndim == 0:
                v = np.broadcast_to(v, default_shape).copy()
            else:
                raise FitError(f"initial value of {n!r} has shape {v.shape}, the parameter {default_shape}")
        tr = transforms.get(n) or (LogCholeskyInertia() if _is_inertial(n) else default_transform(n, v))
        if not isinstance(tr, AbstractTransform):
            raise FitError(f"transform of {n!r} must be a diffsim.identify transform, got {type(tr).__name__}")
        try:
            th = np.asarray(tr.inverse(jnp.asarray(v)))
        except TransformError as e:
            raise FitError(f"{n!r}: {e}") from None
        if not np.all(np.isfinite(th)):
            raise FitError(f"{n!r}: initial value {v.tolist()} maps to a non-finite unconstrained value")
        out.append(_Param(n, v.shape, tr, v))
    return out


def _flat_names(params: Sequence[_Param]) -> list[str]:
    out = []
    for p in params:
        if _is_inertial(p.name):
            b = p.name.split(".")[1]
            out += [f"body.{b}.mass"] + [f"body.{b}.com[{k}]" for k in range(3)] + \
                   [f"body.{b}.inertia[{ij}]" for ij in ("0,0", "1,1", "2,2", "0,1", "0,2", "1,2")]
        elif p.size == 1 and p.shape == ():
            out.append(p.name)
        else:
            out += [f"{p.name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*p.shape)]
    return out


class _Layout:
    """θ (flat, unconstrained) ↔ named physical values."""

    def __init__(self, params: Sequence[_Param]):
        self.params = list(params)
        self.offsets = np.cumsum([0] + [p.size for p in params])

    def split(self, theta):
        return [theta[self.offsets[i]:self.offsets[i + 1]] for i in range(len(self.params))]

    def physical(self, theta) -> list:
        return [jnp.reshape(p.transform.forward(jnp.reshape(th, p.shape) if p.shape else th[0]), p.shape)
                for p, th in zip(self.params, self.split(theta))]

    def physical_flat(self, theta):
        return jnp.concatenate([jnp.ravel(v) for v in self.physical(theta)])

    def values(self, theta) -> dict:
        out = {}
        for p, v in zip(self.params, self.physical(theta)):
            out.update(_as_system_values(p.name, v))
        return out

    def theta0(self):
        return jnp.concatenate([jnp.ravel(p.transform.inverse(jnp.asarray(p.initial))) for p in self.params])


@dataclasses.dataclass
class _Prepared:
    system: System  # with this experiment's overrides, grid and solver settings
    exp: Experiment
    fns: dict


def _prepare(system, experiments, observables, jacobian) -> list[_Prepared]:
    if isinstance(experiments, Experiment):
        experiments = [experiments]
    experiments = list(experiments)
    if not experiments:
        raise FitError("give at least one experiment")
    out = []
    for e in experiments:
        if not isinstance(e, Experiment):
            raise FitError(f"experiments must be diffsim.identify.Experiment, got {type(e).__name__}")
        try:
            s = set_params(system, e.overrides) if e.overrides else system
        except ParamError as err:
            raise FitError(f"experiment {e.name!r}: {err}") from None
        if e.tau is not None or e.loads is not None:
            s = s.replace(loads=as_loads(e.tau, (), e.loads))
        t0 = float(np.asarray(s.t0))
        if e.t[0] < t0 - 1e-12:
            raise FitError(f"experiment {e.name!r} starts at t = {e.t[0]} before the system's t0 = {t0}")
        opts = dataclasses.replace(s.options, throw=False,
                                   adjoint=diffrax.ForwardMode() if jacobian == "fwd" else s.options.adjoint)
        s = s.replace(t1=float(e.t[-1]), saveat=jnp.asarray(e.t, s.model.dtype), options=opts)
        try:
            fns = {ch: observable(s.model, ch, observables) for ch in e.data}
        except ExperimentError as err:
            raise FitError(f"experiment {e.name!r}: {err}") from None
        out.append(_Prepared(s, e, fns))
    return out


def _weighted_residuals(prep: _Prepared, values: Mapping):
    """Weighted residuals of one experiment (flat), a failed run's set to a large constant."""
    traj = simulate(set_params(prep.system, values))
    ok = traj.status == Status.SUCCESS
    rs = []
    for ch, y in prep.exp.data.items():
        pred = jnp.asarray(prep.fns[ch](traj))
        if pred.shape != y.shape:
            raise ExperimentError(f"experiment {prep.exp.name!r}: observable {ch!r} predicts shape {pred.shape}, "
                                  f"the data have {y.shape}")
        r = ((pred - y) / prep.exp.sigma[ch]).ravel()
        rs.append(jnp.where(ok & jnp.isfinite(r), r, _FAILED_RESIDUAL))
    return jnp.concatenate(rs), traj


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
    predictions: dict = dataclasses.field(repr=False, default_factory=dict)
    experiments: list = dataclasses.field(repr=False, default_factory=list)
    holdout: object = dataclasses.field(repr=False, default=None)

    def to_json(self) -> dict:
        """The ``fit.json`` contract: ``params`` {NAME: {value, std, ci95, initial}}, ``cost``,
        ``status``, ``iterations``, ``identifiable``, ``holdout_rms`` (+ details)."""
        params = {n: {"value": self.value[n], "std": self.std[n], "ci95": list(self.ci95[n]),
                      "initial": self.initial[n], "transform": self.transforms[n]} for n in self.names}
        return {"params": params, "cost": self.cost, "status": self.status, "iterations": self.iterations,
                "identifiable": self.identifiable, "holdout_rms": self.holdout_rms,
                "converged": self.converged, "cost_per_experiment": self.cost_per_experiment,
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
            lines.append(f"  {n:<28} {np.array2string(v, precision=6)} ± {np.array2string(s, precision=2)}  "
                         f"95 % [{np.array2string(np.asarray(lo), precision=6)}, {np.array2string(np.asarray(hi), precision=6)}]")
        ident = self.identifiable
        lines.append("  identifiable" if ident["identifiable"] else
                     "  NOT identifiable: " + "; ".join(d["combination_text"] for d in ident["directions"]))
        if self.holdout_rms is not None:
            lines.append(f"  holdout rms (weighted) {self.holdout_rms:.4g}")
        return "\n".join(lines)


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
        experiments: :class:`Experiment` or a list of them (fitted jointly).
        observables: extra observable functions ``traj -> [T, ...]`` by channel name.
        initial, transforms: per-name starting values / :mod:`.transforms` (defaults by name).
        holdout: a validation experiment: its weighted rms residual at the fitted values.
        rtol, atol: Levenberg–Marquardt tolerances on the cost decrease and the step.
        max_steps: iteration limit (status ``max_steps`` when hit).
        n_starts: multi-start count: ``n_starts − 1`` extra starts at ``θ0 + spread·N(0, 1)``
            (unconstrained space), solved together under ``vmap``; the lowest cost wins.
        jacobian: ``"fwd"`` (forward mode through diffrax, default) or ``"bwd"``.
    """
    if jacobian not in ("fwd", "bwd"):
        raise FitError(f"jacobian must be 'fwd' or 'bwd', got {jacobian!r}")
    if int(n_starts) < 1:
        raise FitError(f"n_starts must be >= 1, got {n_starts}")
    params = _resolve(system, names, initial, transforms)
    layout = _Layout(params)
    preps = _prepare(system, experiments, observables, jacobian)
    n_samples = sum(p.exp.n_samples for p in preps)
    P = int(layout.offsets[-1])
    if n_samples < P:
        raise FitError(f"{n_samples} samples cannot determine {P} parameter entries")

    def residuals(theta, _=None):
        values = layout.values(theta)
        return jnp.concatenate([_weighted_residuals(p, values)[0] for p in preps])

    solver = optx.BestSoFarLeastSquares(optx.LevenbergMarquardt(rtol=rtol, atol=atol))

    def solve(theta0):
        sol = optx.least_squares(residuals, solver, theta0, options={"jac": jacobian}, max_steps=int(max_steps),
                                 throw=False)
        r = residuals(sol.value)
        return sol.value, 0.5 * jnp.sum(r**2), sol.result == optx.RESULTS.successful, sol.stats["num_steps"]

    theta0 = layout.theta0()
    if n_starts == 1:
        theta, cost, ok, steps = jax.jit(solve)(theta0)
    else:
        key = jax.random.PRNGKey(0) if key is None else key
        starts = jnp.concatenate([theta0[None], theta0 + spread * jax.random.normal(key, (int(n_starts) - 1, P),
                                                                                      theta0.dtype)])
        thetas, costs, oks, stepss = jax.jit(jax.vmap(solve))(starts)
        costs = jnp.where(oks, costs, jnp.inf)
        best = int(jnp.argmin(jnp.where(jnp.isfinite(costs), costs, jnp.inf)))
        theta, cost, ok, steps = thetas[best], costs[best], oks[best], stepss[best]
    theta = jnp.asarray(theta)

    def at_solution(theta):
        """Weighted residuals with, as auxiliary output, each experiment's residuals and
        predictions: one evaluation gives the Jacobian, the cost and the report's curves."""
        values = layout.values(theta)
        per = [_weighted_residuals(p, values) for p in preps]
        aux = [(rr, {ch: p.fns[ch](traj) for ch in p.exp.data}) for p, (rr, traj) in zip(preps, per)]
        return jnp.concatenate([rr for rr, _ in per]), aux

    jac = jax.jacfwd if jacobian == "fwd" else jax.jacrev
    J, aux = jax.jit(jac(at_solution, has_aux=True))(theta)
    J = np.asarray(J)
    r = np.concatenate([np.asarray(rr) for rr, _ in aux])
    cost = float(0.5 * np.sum(r**2))
    failed = bool(np.any(r == _FAILED_RESIDUAL))
    sigma_given = all(all(p.exp.sigma_given.values()) for p in preps)
    dof = max(n_samples - P, 1)
    noise_scale = 1.0 if sigma_given else float(np.sqrt(2.0 * cost / dof))

    G = np.asarray(jax.jacfwd(layout.physical_flat)(theta))  # ∂p/∂θ [P, P]
    JtJ = J.T @ J
    cov_theta = noise_scale**2 * np.linalg.pinv(JtJ, rcond=1e-14, hermitian=True)
    cov_p = G @ cov_theta @ G.T
    std_flat = np.sqrt(np.clip(np.diag(cov_p), 0.0, None))
    d = np.where(std_flat > 0, std_flat, 1.0)
    corr = cov_p / np.outer(d, d)
    p_flat = np.asarray(layout.physical_flat(theta))
    J_p = J @ np.linalg.pinv(G)
    scale = np.where(np.abs(p_flat) > 0, np.abs(p_flat), 1.0)
    flat_names = _flat_names(params)
    ident = identifiability(J_p * scale, flat_names, noise_scale)

    value, std, ci, init, trn = {}, {}, {}, {}, {}
    sd_theta = np.sqrt(np.clip(np.diag(cov_theta), 0.0, None))
    for i, p in enumerate(params):
        sl = slice(layout.offsets[i], layout.offsets[i + 1])
        v = p_flat[sl].reshape(p.shape)
        value[p.name], std[p.name], init[p.name] = v, std_flat[sl].reshape(p.shape), p.initial
        if isinstance(p.transform, (Identity, Log, Logit)):
            th = np.asarray(theta[sl])
            lo = np.asarray(p.transform.forward(jnp.asarray(th - Z95 * sd_theta[sl]))).reshape(p.shape)
            hi = np.asarray(p.transform.forward(jnp.asarray(th + Z95 * sd_theta[sl]))).reshape(p.shape)
        else:
            lo, hi = v - Z95 * std[p.name], v + Z95 * std[p.name]
        ci[p.name] = (lo, hi)
        trn[p.name] = p.transform.describe()

    per_exp = {p.exp.name: float(0.5 * np.sum(np.asarray(rr) ** 2)) for p, (rr, _) in zip(preps, aux)}
    preds = {p.exp.name: {ch: np.asarray(y) for ch, y in pr.items()} for p, (_, pr) in zip(preps, aux)}
    hold = None
    if holdout is not None:
        hp = _prepare(system, [holdout], observables, jacobian)[0]
        rr, traj = _weighted_residuals(hp, layout.values(theta))
        hold = float(np.sqrt(np.mean(np.asarray(rr) ** 2)))
        preds[holdout.name] = {ch: np.asarray(hp.fns[ch](traj)) for ch in holdout.data}

    converged = bool(ok) and not failed and np.all(np.isfinite(p_flat))
    status = "success" if converged else ("simulation failed at the solution" if failed else
                                          "did not converge (max_steps reached or no decrease)")
    return FitResult(
        names=[p.name for p in params], value=value, initial=init, std=std, ci95=ci, flat_names=flat_names,
        covariance=cov_p, correlation=corr, cost=cost, cost_per_experiment=per_exp, n_samples=n_samples,
        noise_scale=noise_scale, iterations=int(steps), status=status, converged=converged, identifiable=ident,
        holdout_rms=hold, transforms=trn, predictions=preds, experiments=[p.exp for p in preps], holdout=holdout)
