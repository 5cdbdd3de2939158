"""The least-squares estimate as a pure JAX function of the data: ``θ̂(ȳ)``.

:class:`Estimator` holds the prepared experiments (their systems, observables and σ) and the
parameter layout; calling it solves

    θ̂(ȳ) = argmin_θ ½ Σ_e Σ_c Σ_k ((y_ec(t_k; p(θ)) − ȳ_eck) / σ_ec)²

with optimistix's Levenberg–Marquardt. It works under ``jit``, under ``vmap`` for systems without
located events (a batch of data sets or of starting points solved in one call) and ``lax.map``
for any system (with events under ``vmap``, diffrax's event root find raises a lineax
"non-finite output" error when the batch members' iterates locate different events; the
multi-start of :func:`~diffsim.identify.fit` and the ball's calibration study use ``lax.map``), and under
forward-mode differentiation with respect to the data (and any other traced input), by the
implicit function theorem on the optimality condition (``optimistix.internal.implicit_jvp``, the
function behind optimistix's own ``ImplicitAdjoint``)

    g(θ, ȳ) = J(θ)ᵀ r(θ, ȳ) = 0,   dθ̂ = −(∂g/∂θ)⁻¹ (∂g/∂ȳ) dȳ,   ∂g/∂θ = JᵀJ + Σ_i r_i ∇²r_i,

where every derivative is taken in forward mode (the sensitivity solve does not run in reverse),
so the solver's iterations are never differentiated.

Jacobians of the residuals: ``"fwd"`` (exact, forward mode: the sensitivity equations solved under
the step controller, with the event-time corrections where contact events are located,
:class:`~diffsim.simulation.sensitivity.ForwardSensitivity`; evaluated by the solver's step, which
then linearises a matrix product, :func:`linear_model`), ``"bwd"`` (reverse mode, the system's
adjoint) or ``"fd"`` (central differences with step ``h = ε^(1/3) ≈ 6e-6`` in θ, two simulations
per parameter: the approach of ``mujoco.sysid``, kept for comparison in
``benchmarks/bench_identify.py``).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx
import optimistix.internal as optxi

from ..model.joints import QUAT_OFFSET, JointType
from ..model.params import ParamError
from ..simulation.sensitivity import ForwardSensitivity
from ..simulation.simulate import simulate
from ..simulation.system import System, set_params
from ..simulation.trajectory import Status
from .experiment import Experiment, ExperimentError, observable, predict
from .transforms import AbstractTransform, Identity, Log, Logit

Z95 = 1.959963984540054
FAILED_RESIDUAL = 1e12  # weighted residual of every sample of a failed run: LM always rejects that step
JACOBIANS = ("fwd", "bwd", "fd")
def _fd_step(dtype) -> float:
    """The central-difference step in θ: ``eps^(1/3)`` of the fit's dtype (truncation ~ h², round-off
    ~ eps/h balance there: 6.1e-6 in float64, 4.9e-3 in float32, where float64's step gave
    derivatives 38 % off)."""
    return float(np.finfo(dtype).eps ** (1 / 3))


class FitError(ValueError):
    """Bad input to :func:`diffsim.identify.fit` (unknown or duplicate names, values outside a
    transform's domain, too few samples)."""


@dataclasses.dataclass(frozen=True)
class Param:
    """One fitted name: its shape, transform and starting value (physical). Equal parameters are
    equal by name, shape and transform: the starting value enters the solve as data (``θ0``), so a
    fit from another start reuses the compiled search."""

    name: str
    shape: tuple
    transform: AbstractTransform
    initial: np.ndarray = dataclasses.field(compare=False)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=int))

    @property
    def elementwise(self) -> bool:
        return isinstance(self.transform, (Identity, Log, Logit))


def inertial_values(body, p):
    """The ten inertial parameters ``[m, c, Ī (xx yy zz xy xz yz)]`` as the system's names."""
    xx, yy, zz, xy, xz, yz = (p[4 + k] for k in range(6))
    I = jnp.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    return {f"body.{body}.mass": p[0], f"body.{body}.com": p[1:4], f"body.{body}.inertia": I}


def is_inertial(name):
    parts = name.split(".")
    return len(parts) == 3 and parts[0] == "body" and parts[2] == "inertial"


@dataclasses.dataclass(frozen=True)
class Layout:
    """θ (flat, unconstrained) ↔ named physical values (equal for equal parameters)."""

    params: tuple

    @property
    def offsets(self):
        return np.cumsum([0] + [p.size for p in self.params])

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def split(self, theta):
        o = self.offsets
        return [theta[o[i]:o[i + 1]] for i in range(len(self.params))]

    def physical(self, theta) -> list:
        return [jnp.reshape(p.transform.forward(jnp.reshape(th, p.shape) if p.shape else th[0]), p.shape)
                for p, th in zip(self.params, self.split(theta))]

    def physical_flat(self, theta):
        return jnp.concatenate([jnp.ravel(v) for v in self.physical(theta)])

    def values(self, theta) -> dict:
        out = {}
        for p, v in zip(self.params, self.physical(theta)):
            out.update(inertial_values(p.name.split(".")[1], v) if is_inertial(p.name) else {p.name: v})
        return out

    def named(self, theta) -> dict:
        """``{fitted name: physical value}`` (``body.<b>.inertial`` as its ten entries)."""
        return {p.name: v for p, v in zip(self.params, self.physical(theta))}

    def theta0(self):
        return jnp.concatenate([jnp.ravel(p.transform.inverse(jnp.asarray(p.initial))) for p in self.params])


@dataclasses.dataclass(frozen=True, eq=False)
class Prepared:
    """One experiment made ready: its system (overrides, inputs, grid, solver settings), the
    observable of every channel, the channel order."""

    system: System
    exp: Experiment
    fns: dict
    quats: dict = dataclasses.field(default_factory=dict)  #: channel → offsets of its quaternion blocks

    @property
    def channels(self) -> tuple:
        return tuple(self.exp.data)

    @property
    def observed(self) -> Observed:
        return Observed(self.channels, tuple(self.fns[ch] for ch in self.channels), self.exp.name,
                        tuple(tuple(self.exp.data[ch].shape) for ch in self.channels),
                        tuple(tuple(self.quats.get(ch, ())) for ch in self.channels))


@dataclasses.dataclass(frozen=True)
class Observed:
    """What the residuals of one experiment need while they are traced: its channels and their
    observables. Equal for equal channels and observable functions (the built-in observables are
    one function per model structure and name, :func:`~.experiment.observable`), whatever the
    data, σ, starting values or the experiment's name: a refit reuses the compiled programs."""

    channels: tuple
    fns: tuple  #: the observable of each channel, ``traj -> [T, ...]``
    name: str = dataclasses.field(compare=False)  #: the experiment's, for error messages
    shapes: tuple = ()  #: each channel's data shape (a prediction that differs by a trailing 1 is reshaped)
    quats: tuple = ()  #: per channel, the offsets of the quaternion blocks of its columns (q of ball/free joints)

    def predict(self, traj) -> dict:
        """Each channel's prediction, shaped like its data (:func:`conform`)."""
        out = predict(traj, self.channels, dict(zip(self.channels, self.fns)))
        if not self.shapes:
            return out
        return {ch: conform(out[ch], shape, ch, self.name) for ch, shape in zip(self.channels, self.shapes)}


def conform(pred, shape, channel, name):
    """``pred`` shaped as the data (``shape``): the same, or reshaped where the two differ only by
    a trailing 1 (a column ``q.arm`` loads as [T], the hinge's ``q.arm`` predicts [T, 1]);
    otherwise :class:`ExperimentError`."""
    shape = tuple(shape)
    if pred.shape == shape:
        return pred
    if pred.shape == (*shape, 1) or (*pred.shape, 1) == shape:
        return jnp.reshape(pred, shape)
    raise ExperimentError(f"experiment {name!r}: observable {channel!r} predicts shape {pred.shape}, "
                          f"the data have {shape}")


def align_quaternions(y, pred, offsets):
    """``y`` [T, k] with each quaternion block ``y[:, o:o+4]`` (``o`` in ``offsets``) multiplied by
    ``sign(<y_block, pred_block>)`` per sample: ``q`` and ``−q`` are one rotation (a logger's
    convention, e.g. ``w >= 0``, picks either), so the data are compared with the prediction's
    sign. Piecewise constant in the prediction: derivatives flow through ``y`` and ``pred`` as
    usual (``±1`` times the data's tangent)."""
    for o in offsets:
        dot = jnp.sum(y[:, o:o + 4] * pred[:, o:o + 4], axis=-1, keepdims=True)
        sign = jax.lax.stop_gradient(jnp.where(dot < 0, -1.0, 1.0)).astype(y.dtype)
        y = y.at[:, o:o + 4].multiply(sign)
    return y


def _quaternion_offsets(model, channel, observables) -> tuple:
    """The offsets of the quaternion blocks in the columns of a built-in ``q.<joint>`` channel of a
    spherical or free joint (empty for any other channel, and for a channel given its own
    observable function)."""
    parts = channel.split(".")
    if (observables and channel in observables) or len(parts) != 2 or parts[0] != "q":
        return ()
    t = model.topology
    joints = list(t.joint_names)
    if parts[1] not in joints:
        return ()
    jt = t.joint_types[joints.index(parts[1])]
    return (QUAT_OFFSET[jt],) if jt in QUAT_OFFSET else ()


def wrapped_angle_warnings(preps, observables=None) -> list[str]:
    """Warnings for the ``q.<joint>`` data of revolute joints that jump by close to 2π between
    consecutive samples (angles wrapped to (−π, π] by a logger: the model's angle is continuous,
    so the residual there is ~2π/σ; ``np.unwrap`` the data)."""
    out = []
    for p in preps:
        t = p.system.model.topology
        joints = list(t.joint_names)
        for ch, y in p.exp.data.items():
            parts = ch.split(".")
            if (observables and ch in observables) or len(parts) != 2 or parts[0] != "q" or parts[1] not in joints:
                continue
            if t.joint_types[joints.index(parts[1])] != JointType.REVOLUTE:
                continue
            d = np.diff(np.asarray(y, dtype=float).reshape(y.shape[0], -1), axis=0)
            jumps = np.abs(np.abs(d) - 2 * np.pi) < 0.5 * np.pi
            if np.any(jumps):
                k = int(np.argwhere(jumps.any(axis=1))[0, 0])
                out.append(f"experiment {p.exp.name!r}: the hinge angle {ch!r} jumps by {float(d[k].flat[0]):.3g} rad "
                           f"between t = {p.exp.t[k]:g} and {p.exp.t[k + 1]:g} s ({int(jumps.any(axis=1).sum())} "
                           "such jumps): angles wrapped to (−π, π]? The model's angle is continuous; unwrap the data "
                           "(np.unwrap) before fitting")
    return out


def unique_names(experiments, taken=()) -> list[Experiment]:
    """The experiments with unique names: a repeated name gets ``#2``, ``#3``, … in order (a copy
    of that experiment, renamed); ``taken``: names already in use."""
    used = set(taken)
    given = {e.name for e in experiments}
    out, count = [], {}
    for e in experiments:
        name = e.name
        if name in used:
            k = count.get(name, 1)
            while True:
                k += 1
                new = f"{name}#{k}"
                if new not in used and new not in given:
                    break
            count[name] = k
            e = copy.copy(e)
            e.name = new
        used.add(e.name)
        out.append(e)
    return out


def prepare(system, experiments, observables, jacobian, taken=()) -> list[Prepared]:
    """Each experiment's system (its overrides and inputs: ``tau=`` replaces the joint torques
    only, ``loads=`` all loads; output grid = its sample times; events that do not throw;
    :class:`ForwardSensitivity` for forward-mode Jacobians) and observables. Names are made unique
    (:func:`unique_names`; ``taken``: names already in use)."""
    if isinstance(experiments, Experiment):
        experiments = [experiments]
    experiments = list(experiments)
    if not experiments:
        raise FitError("give at least one experiment")
    for e in experiments:
        if not isinstance(e, Experiment):
            raise FitError(f"experiments must be diffsim.identify.Experiment, got {type(e).__name__}")
    out = []
    for e in unique_names(experiments, taken):
        try:
            s = set_params(system, e.overrides) if e.overrides else system
        except ParamError as err:
            raise FitError(f"experiment {e.name!r}: {err}") from None
        if e.tau is not None and e.loads is not None:
            raise FitError(f"experiment {e.name!r}: give either tau= or loads=, not both")
        if e.loads is not None:  # all of the system's loads replaced
            s = s.replace(loads=e.loads)
        elif e.tau is not None:  # the joint torques replaced; point forces and ctrl kept
            s = s.replace(tau=e.tau)
        t0 = float(np.asarray(s.t0))
        if e.t[0] < t0 - 1e-12:
            raise FitError(f"experiment {e.name!r} starts at t = {e.t[0]} before the system's t0 = {t0}")
        adjoint = s.options.adjoint if jacobian == "bwd" else ForwardSensitivity()
        saveat = jnp.asarray(e.t, s.model.dtype)  # t1 from the same grid: float32 rounds 1.2 up past float64's 1.2
        s = s.replace(t1=float(saveat[-1]), saveat=saveat, throw=False, adjoint=adjoint)
        try:
            fns = {ch: observable(s.model, ch, observables) for ch in e.data}
        except ExperimentError as err:
            raise FitError(f"experiment {e.name!r}: {err}") from None
        quats = {ch: q for ch in e.data if (q := _quaternion_offsets(s.model, ch, observables))}
        out.append(Prepared(s, e, fns, quats))
    return out


def experiment_residuals(obs: Observed, system: System, values, data: dict, sigma: dict):
    """Weighted residuals of one experiment (flat; a failed run's all set to
    :data:`FAILED_RESIDUAL`) and its trajectory. A prediction that differs from its data's shape
    by a trailing 1 is reshaped (:func:`conform`); the measured quaternions of a ball or free
    joint's ``q`` take the prediction's sign per sample (:func:`align_quaternions`)."""
    traj = simulate(set_params(system, values))
    ok = traj.status == Status.SUCCESS
    rs = []
    quats = obs.quats or ((),) * len(obs.channels)
    for ch, fn, q in zip(obs.channels, obs.fns, quats):
        y = data[ch]
        pred = conform(jnp.asarray(fn(traj)), y.shape, ch, obs.name)
        if q:  # q and −q: one rotation (align_quaternions)
            y = align_quaternions(y, pred, q)
        r = ((pred - y) / sigma[ch]).ravel()
        rs.append(jnp.where(ok & jnp.isfinite(r), r, FAILED_RESIDUAL))
    return jnp.concatenate(rs), traj


class Residuals(eqx.Module):
    """``r(θ, ȳ)``: the weighted residuals of every experiment (flat). The systems and σ are
    pytree leaves (differentiable inputs); layout, observables and the Jacobian mode are static,
    and equal for equal structure (a refit with other data, σ or start compiles nothing new)."""

    systems: list
    sigma: list
    observed: tuple = eqx.field(static=True)  #: :class:`Observed` per experiment
    layout: Layout = eqx.field(static=True)
    jacobian: str = eqx.field(static=True)

    def __call__(self, theta, data):
        if self.jacobian == "fd":
            return _fd_residuals(theta, self, data)
        return self.evaluate(theta, data)[0]

    def evaluate(self, theta, data):
        """Residuals (flat) and, per experiment, ``(residuals, trajectory)``."""
        values = self.layout.values(theta)
        per = [experiment_residuals(p, s, values, d, sg)
               for p, s, d, sg in zip(self.observed, self.systems, data, self.sigma)]
        return jnp.concatenate([r for r, _ in per]), per

    def predictions(self, theta, data):
        """Residuals (flat) and, per experiment, ``(residuals, {channel: prediction})``: what a
        fit's report shows."""
        r, per = self.evaluate(theta, data)
        return r, [(rr, obs.predict(traj)) for obs, (rr, traj) in zip(self.observed, per)]


def _data_tangent(res: Residuals, theta, data, t_data):
    """``(∂r/∂ȳ) t_ȳ`` — the data enter the residuals linearly; absent tangents are zeros."""
    zero = jax.tree_util.tree_map(jnp.zeros_like, data)
    t_data = jax.tree_util.tree_map(lambda z, t: z if t is None else t, zero, t_data, is_leaf=lambda x: x is None)
    return jax.jvp(lambda d: res.evaluate(theta, d)[0], (data,), (t_data,))[1]


@eqx.filter_custom_jvp
def _fd_residuals(theta, res: Residuals, data):
    return res.evaluate(theta, data)[0]


@_fd_residuals.def_jvp
def _fd_residuals_jvp(primals, tangents):
    """Central differences along the tangent of θ: ``(r(θ + h t) − r(θ − h t)) / 2h`` (the data
    enter linearly: their tangent is exact)."""
    theta, res, data = primals
    t_theta, _, t_data = tangents
    r = res.evaluate(theta, data)[0]
    t_r = jnp.zeros_like(r)
    if t_theta is not None:
        h = _fd_step(theta.dtype)
        up, down = res.evaluate(theta + h * t_theta, data)[0], res.evaluate(theta - h * t_theta, data)[0]
        t_r = t_r + (up - down) / (2.0 * h)
    if t_data is not None:
        t_r = t_r + _data_tangent(res, theta, data, t_data)
    return r, t_r


def gated_jacobian(r_primal, bound, jacobian, n_params):
    """``(J, r)``: when the cost ``½‖r_primal‖²`` is at most ``bound``, the Jacobian of
    ``jacobian() -> (J, r_J)`` and ``r_primal`` — or, when that run failed (entries of ``r_J`` equal
    to :data:`FAILED_RESIDUAL`, or a non-finite ``J``), ``r_J`` and zeros; above ``bound`` zeros and
    ``r_primal`` (a point the trust region rejects: its Jacobian is never read). See
    :func:`_dense_residuals`."""
    def with_jacobian():
        J, r = jacobian()
        run_failed = jnp.any(r == FAILED_RESIDUAL)
        failed = run_failed | ~jnp.all(jnp.isfinite(J))
        return jnp.where(failed, 0.0, J), jnp.where(run_failed, r, jnp.where(failed, FAILED_RESIDUAL, r_primal))

    def without():
        return jnp.zeros((r_primal.size, n_params), r_primal.dtype), r_primal
    return jax.lax.cond(0.5 * jnp.sum(r_primal**2) <= bound, with_jacobian, without)


def _dense_residuals(inputs, theta, bound):
    """``(r, J, per)`` at ``θ`` for :class:`LevenbergMarquardt` (``inputs = (residuals, data)``): the
    residuals of the primal solve, each experiment's residuals and predictions from that solve
    (``per``: ``[(r_e, {channel: prediction})]``, for the report at ``θ̂``), and ``J = ∂r/∂θ``
    from ``jax.jacfwd`` (one sensitivity solve with a batch of ``P`` tangents) where the trust
    region can accept the point — when the cost ``½‖r‖²`` is at most ``bound``
    (:meth:`LevenbergMarquardt.step`: the accepted cost plus the reduction the search asks for);
    zeros elsewhere, after the primal solve alone. A rejected trial then costs one simulation
    instead of the sensitivity solve (~13 simulations on the ball drop, more where a trial is
    stiff). The residuals are always the primal solve's, so the search sees one function whether
    or not the Jacobian was computed (the sensitivity run takes other steps: its residuals
    differ at the solver's round-off, and mixing the two took the ball fit of
    ``benchmarks/bench_identify.py`` from 9 to 26 iterations at the noise floor). Only when the
    sensitivity solve fails (its error control covers the tangents too: a trial with the ball's
    K at 1e19 N/m^1.5 solves alone in 0.03 s and with its tangents reaches max_steps) are they
    :data:`FAILED_RESIDUAL`, and the search rejects the point, instead of accepting it with a
    zero Jacobian (a zero step, taken for convergence)."""
    res, data = inputs

    def r_of(th):
        r = res.evaluate(th, data)[0]
        return r, r

    r, per = res.predictions(theta, data)
    J, r = gated_jacobian(r, bound, lambda: jax.jacfwd(r_of, has_aux=True)(theta), theta.size)
    return r, J, per


def linear_model(theta, args):
    """The residual function a :class:`LevenbergMarquardt` with ``dense`` linearises: ``r + J (θ −
    θ_ref)`` and, as the auxiliary output, ``(J, extra)``, where ``args = (inputs, (θ_ref, r, J,
    extra))`` holds what the solver's ``dense`` function evaluated at the point the step
    linearises (``θ = θ_ref``: the residuals there, their Jacobian and anything else).
    optimistix then linearises a matrix product instead of the simulation: JAX's linearisation
    of the simulation partially evaluates every loop of the primal and sensitivity solves to
    split known from unknown values (ball fit: trace and lowering 10.5 → 6 s, compile 13 → 7 s
    without it; README, "Where the suite's time goes"), and its linear function would hold the
    JVP of the whole simulation, which the Levenberg–Marquardt descent re-runs for every column
    it materialises (README, mode-shape fitting). With ``(J, extra)`` the auxiliary output the
    solve returns them at ``θ̂`` (``BestSoFarLeastSquares`` keeps the aux of the point it
    keeps)."""
    _, (theta_ref, r, J, extra) = args
    return r + J @ (theta - theta_ref), (J, extra)


def _solver_residuals(residuals: Residuals):
    """The residual function the solver linearises, of ``(θ, args)``, returning ``(r, aux)``: with
    ``"fwd"`` Jacobians :func:`linear_model` (``args = ((residuals, data), (θ_ref, r, J, per))``;
    the solver evaluates them, :func:`_dense_residuals`); otherwise the residuals (``args = data``)
    and no aux."""
    if residuals.jacobian == "fwd":
        return linear_model
    return lambda theta, args: (residuals(theta, args), None)


def _solver_args(residuals: Residuals, data, theta0):
    """The solve's ``args`` (:func:`_solver_residuals`); with ``"fwd"`` Jacobians the evaluated
    point starts as zeros of its shapes (``r`` [N], ``J`` [N, P], each experiment's residuals and
    predictions shaped like its data; the solver's first step evaluates ``θ0``)."""
    if residuals.jacobian != "fwd":
        return data
    dtype = theta0.dtype
    per = [(jnp.zeros((sum(int(np.prod(jnp.shape(d[ch]))) for ch in obs.channels),), dtype),
            {ch: jnp.zeros(jnp.shape(d[ch]), dtype) for ch in obs.channels})
           for obs, d in zip(residuals.observed, data)]
    n = sum(rr.size for rr, _ in per)
    return (residuals, data), (theta0, jnp.zeros((n,), dtype), jnp.zeros((n, theta0.size), dtype), per)


def _solve(inputs):
    """Primal of the implicit function: the Levenberg–Marquardt solve (keeps the best iterate)."""
    residuals, data, theta0, solver, max_steps, jacobian = inputs
    jac = "bwd" if jacobian == "bwd" else "fwd"
    sol = optx.least_squares(_solver_residuals(residuals), solver, theta0, args=_solver_args(residuals, data, theta0),
                             options={"jac": jac}, has_aux=True, max_steps=max_steps, throw=False)
    # BestSoFarLeastSquares keeps ‖r‖² and the aux of the point it returns (each step pairs its
    # input θ with the residuals and aux there): the cost, and with "fwd" the Jacobian and each
    # experiment's residuals and predictions, at θ̂ without another simulation
    cost = 0.5 * sol.state.best_loss
    J, per = (None, None) if sol.aux is None else sol.aux
    return sol.value, (sol.result == optx.RESULTS.successful, sol.stats["num_steps"], cost, J, per)


def _stationarity(theta, _, inputs):
    """``g(θ, ȳ) = J(θ)ᵀ r(θ, ȳ)`` with the forward-mode Jacobian (module docstring)."""
    residuals, data = inputs[0], inputs[1]
    r, J = _residuals_and_jacobian(residuals, theta, data)
    return J.T @ r


def _residuals_and_jacobian(residuals, theta, data):
    def r_of(th):
        return residuals(th, data)
    jac = jax.jacrev if residuals.jacobian == "bwd" else jax.jacfwd
    return r_of(theta), jac(r_of)(theta)


class Solution(NamedTuple):
    """:meth:`Estimator.solve`'s result at the fitted point ``θ̂``."""

    theta: jax.Array  #: θ̂ (unconstrained)
    cost: jax.Array  #: ½‖r(θ̂)‖² (a failed simulation's residuals make it huge)
    jacobian: jax.Array | None  #: ∂r/∂θ at θ̂ from the search's last sensitivity solve there ("fwd"); else None
    ok: jax.Array  #: the solver reports success
    steps: jax.Array  #: Levenberg–Marquardt steps taken
    #: ``[(r_e, {channel: prediction})]`` per experiment at θ̂, from the search's primal solve there ("fwd"); else None
    per_experiment: list | None = None


class Estimator(eqx.Module):
    """``θ̂`` as a function of the data (module docstring). Build it with :func:`estimator`.

    ``est(data=None, theta0=None)`` → ``(θ̂, ok, iterations)``; ``data`` is a list (one dict
    ``channel → array`` per experiment, shaped like :attr:`data`); ``None`` uses the experiments'
    own. :meth:`values` maps ``θ`` to ``{name: physical value}``; :meth:`intervals` gives the
    standard deviations and 95 % intervals from the Gauss–Newton covariance, traceable (``vmap``
    over a batch of fits)."""

    residuals: Residuals
    data: list
    theta0: jax.Array
    solver: optx.AbstractLeastSquaresSolver
    max_steps: int = eqx.field(static=True)

    @property
    def layout(self) -> Layout:
        return self.residuals.layout

    def __call__(self, data=None, theta0=None):
        sol = self.solve(data, theta0)
        return sol.theta, sol.ok, sol.steps

    def solve(self, data=None, theta0=None) -> Solution:
        """:meth:`__call__` with what the solve has already evaluated at ``θ̂``
        (:class:`Solution`): the cost, and with ``"fwd"`` Jacobians the Jacobian and each
        experiment's residuals and predictions."""
        data = self.data if data is None else data
        theta0 = self.theta0 if theta0 is None else theta0
        inputs = (self.residuals, data, theta0, self.solver, self.max_steps, self.residuals.jacobian)
        theta, (ok, steps, cost, J, per) = optxi.implicit_jvp(_solve, _stationarity, inputs, frozenset(),
                                                              lx.AutoLinearSolver(well_posed=None))
        return Solution(theta, cost, J, ok, steps, per)

    def values(self, theta) -> dict:
        return self.layout.named(theta)

    def jacobian(self, theta, data=None):
        """Weighted residuals ``r`` [N] and their Jacobian ``J = ∂r/∂θ`` [N, P]."""
        return _residuals_and_jacobian(self.residuals, theta, self.data if data is None else data)

    def intervals(self, theta, data=None, noise_scale=1.0):
        """``(std_p, lo, hi, cov_p)`` of the flat physical parameters at ``θ``: ``Cov(θ) = s² (JᵀJ)⁻¹``
        from the SVD of ``J`` (:func:`gauss_newton_covariance`), ``Cov(p) = G Cov(θ) Gᵀ``; 95 %
        intervals ``forward(θ ± 1.96 σ_θ)`` for elementwise transforms (the transform's whole range
        for an undetermined entry), percentiles of ``forward(θ)`` over draws of ``θ`` otherwise
        (:func:`_sampled_interval`): every interval lies in the parameter's domain. Entries that a direction without
        information reaches get ``std = inf`` (and NaN covariances), never a spuriously tight value."""
        _, J = self.jacobian(theta, data)
        return self.intervals_from_jacobian(theta, J, noise_scale)

    def intervals_from_jacobian(self, theta, J, noise_scale=1.0):
        """:meth:`intervals` from a Jacobian ``J = ∂r/∂θ`` [N, P] at ``θ`` that the caller already
        has (:func:`~diffsim.identify.fit` computes it once for the report: a second sensitivity
        solve, and its compile, would give the same matrix)."""
        cov_t, free_t = gauss_newton_covariance(J)
        cov_t = noise_scale**2 * cov_t
        G = jax.jacfwd(self.layout.physical_flat)(theta)
        free_p = (jnp.abs(G) > 0).astype(G.dtype) @ free_t.astype(G.dtype) > 0  # entries a null direction reaches
        cov_p = G @ cov_t @ G.T
        cov_p = jnp.where(free_p[:, None] | free_p[None, :], jnp.nan, cov_p)
        std_p = jnp.where(free_p, jnp.inf, jnp.sqrt(jnp.clip(jnp.diag(cov_p), 0.0, None)))
        sd_t = jnp.where(free_t, jnp.inf, jnp.sqrt(jnp.clip(jnp.diag(cov_t), 0.0, None)))
        p = self.layout.physical_flat(theta)
        lo, hi, o = [], [], self.layout.offsets
        for k, prm in enumerate(self.layout.params):
            i = slice(int(o[k]), int(o[k + 1]))
            if prm.elementwise:
                lo.append(jnp.ravel(prm.transform.forward(theta[i] - Z95 * sd_t[i])))
                hi.append(jnp.ravel(prm.transform.forward(theta[i] + Z95 * sd_t[i])))
            else:
                a, b = _sampled_interval(prm, theta[i], cov_t[i, i], p[i], free_p[i])
                lo.append(a)
                hi.append(b)
        return std_p, jnp.concatenate(lo), jnp.concatenate(hi), cov_p


#: draws of θ behind the 95 % interval of a parameter whose transform is not elementwise
#: (:func:`_sampled_interval`; Monte Carlo error of each end ≈ 0.04 σ)
N_INTERVAL_DRAWS = 4000


def _sampled_interval(prm: Param, theta, cov_t, p, free):
    """The 95 % interval of a parameter whose transform is not elementwise (``body.<b>.inertial``'s
    log-Cholesky): the 2.5 and 97.5 percentiles, entry by entry, of ``forward(θ)`` over
    :data:`N_INTERVAL_DRAWS` draws ``θ ~ N(θ̂, Cov(θ))`` (fixed key: the same fit gives the same
    interval), widened to contain the estimate. Every draw is a value of the transform's range (a
    positive mass, a physically consistent inertia), so both ends lie in the parameter's domain;
    entries a direction without information reaches get the whole range of their kind (:func:`_domain`)."""
    w, V = jnp.linalg.eigh(0.5 * (cov_t + cov_t.T))
    root = V * jnp.sqrt(jnp.clip(w, 0.0, None))
    z = jax.random.normal(jax.random.PRNGKey(0), (N_INTERVAL_DRAWS, theta.size), theta.dtype)
    draws = jax.vmap(lambda u: jnp.ravel(prm.transform.forward(jnp.reshape(u, prm.shape) if prm.shape else u[0])))(
        theta + z @ root.T)
    lo, hi = jnp.percentile(draws, jnp.array([2.5, 97.5], theta.dtype), axis=0)
    lo, hi = jnp.minimum(lo, p), jnp.maximum(hi, p)
    dlo, dhi = _domain(prm, p.size, theta.dtype)
    return jnp.where(free, dlo, lo), jnp.where(free, dhi, hi)


def _domain(prm: Param, size, dtype):
    """The range of each flat entry of a non-elementwise parameter: ``[0, ∞]`` for the mass and the
    principal moments of ``body.<b>.inertial``, the real line otherwise."""
    lo = np.full(size, -np.inf)
    if is_inertial(prm.name) and size == 10:
        lo[[0, 4, 5, 6]] = 0.0
    return jnp.asarray(lo, dtype), jnp.full((size,), jnp.inf, dtype)


def gauss_newton_covariance(J):
    """``((JᵀJ)⁻¹ on the determined subspace, free)``: the SVD ``J = U S Vᵀ``; singular values at
    round-off level (``s_i ≤ N ε s_max``) are directions without information, excluded from the
    sum ``Σ v_i v_iᵀ / s_i²``; ``free`` [P] marks the θ entries those directions reach (components
    above ``√ε``: round-off components of a null vector do not make a determined entry free)."""
    _, s, Vt = jnp.linalg.svd(J, full_matrices=False)
    eps = jnp.finfo(J.dtype).eps
    null = s <= J.shape[0] * eps * s[0]
    inv_s2 = jnp.where(null, 0.0, 1.0 / jnp.where(null, 1.0, s) ** 2)
    cov = (Vt.T * inv_s2) @ Vt
    free = jnp.any(null[:, None] & (jnp.abs(Vt) > jnp.sqrt(eps)), axis=0)
    return cov, free


class LevenbergMarquardt(optx.LevenbergMarquardt):
    """optimistix's Levenberg–Marquardt with MINPACK's kind of stopping test (``lmder``'s ``xtol``
    and ``ftol``, Moré 1978): stop when the step just tried moved every entry of ``θ`` by at
    most ``atol + rtol |θ_i|`` and it was either rejected (the model has nothing left to offer
    that the cost can resolve) or accepted with the cost ``C = ½‖r‖²`` changed by at most
    ``atol + rtol C``.

    optimistix's own test (after accepted steps only) asks every weighted residual to change by
    less than ``atol + rtol |r_i|``. A simulated residual carries the adaptive solver's round-off
    (about its tolerance / σ per sample), so near the optimum that test holds only once the trust
    region has shrunk until a step changes nothing: the ball fit of
    ``benchmarks/bench_identify.py`` reached its optimum (cost to 1e-10) at step 8 and then took
    33 more steps, most of them rejected.

    ``dense`` (the estimator's forward-mode fits): a function ``dense(inputs, θ, bound) -> (r, J,
    extra)`` (:func:`_dense_residuals`), the residual function is :func:`linear_model` and ``args``
    is ``(inputs, (θ_ref, r, J, extra))``: every step evaluates ``dense`` at the point it linearises with the
    acceptance bound of that point (so the Jacobian is computed only where the step can be
    accepted, :func:`gated_jacobian`) and hands the result to optimistix's step through ``args``."""

    dense: object = eqx.field(static=True, default=None)

    def __init__(self, rtol, atol, dense=None, **kwargs):
        super().__init__(rtol, atol, **kwargs)
        self.dense = dense

    def step(self, fn, y, args, options, state, tags):
        c = 0.5 * jnp.sum(state.f_info.residual ** 2)
        if self.dense is not None:
            # the point this step evaluates is accepted iff its cost is at most ``bound``
            # (optimistix's ClassicalTrustRegion: C_eval − C ≤ low_cutoff · predicted reduction;
            # always on the first step); ``dense`` skips the Jacobian above it. The margin
            # 1e-10 C covers a different rounding of the same sums there.
            search = self.search
            bound = c + search.low_cutoff * search.predict_reduction(state.y_eval - y, state.f_info) + 1e-10 * c
            bound = jnp.where(state.first_step, jnp.inf, bound)
            args = (args[0], (state.y_eval, *self.dense(args[0], state.y_eval, bound)))
        y_new, new_state, aux = super().step(fn, y, args, options, state, tags)
        # θ and r are flat arrays here; state.y_eval is the point this step evaluated. A rejected
        # step leaves the accepted residuals as they were, so its cost change is zero.
        step_small = self.norm(jnp.abs(state.y_eval - y) / (self.atol + self.rtol * jnp.abs(y))) <= 1
        cost = 0.5 * jnp.sum(new_state.f_info.residual ** 2)
        cost_small = jnp.abs(c - cost) <= self.atol + self.rtol * c
        stop = ~state.first_step & step_small & cost_small
        return y_new, eqx.tree_at(lambda s: s.terminate, new_state, stop), aux


def estimator(params: Sequence[Param], preps: Sequence[Prepared], *, rtol=1e-8, atol=1e-10, max_steps=100,
              jacobian="fwd") -> Estimator:
    """The :class:`Estimator` of resolved parameters over prepared experiments."""
    if jacobian not in JACOBIANS:
        raise FitError(f"jacobian must be one of {JACOBIANS}, got {jacobian!r}")
    layout = Layout(tuple(params))
    dtype = preps[0].system.model.dtype
    res = Residuals(systems=[p.system for p in preps],
                    sigma=[{ch: jnp.asarray(p.exp.sigma[ch], dtype) for ch in p.channels} for p in preps],
                    observed=tuple(p.observed for p in preps), layout=layout, jacobian=jacobian)
    data = [{ch: jnp.asarray(p.exp.data[ch], dtype) for ch in p.channels} for p in preps]
    solver = optx.BestSoFarLeastSquares(LevenbergMarquardt(rtol=rtol, atol=atol,
                                                         dense=_dense_residuals if jacobian == "fwd" else None))
    return Estimator(res, data, jnp.asarray(layout.theta0(), dtype), solver, int(max_steps))
