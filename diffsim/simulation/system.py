"""``System``: every input of a run in one Module — model, initial state, loads, contact,
prescribed motion, and the solver settings as strategies — with named parameters over all of it.

::

    sys = ds.System(model, q0, v0, t1=1.5, contact=ds.compliant_contact(model, ...),
                    solver="tsit5", rtol=1e-9, atol=1e-9, saveat=1501)
    traj = ds.simulate(sys)
    ds.param_names(sys)                      # body.*, joint.*, beam.*, contact.*, q0.*, v0.* ...
    sys2 = ds.set_params(sys, {"contact.K": 2e8, "q0.base[1]": 1.0})   # under jit / grad / vmap

Strategies (each an ``eqx.Module`` whose class is the choice and whose fields are its
parameters): ``dynamics`` (:class:`diffsim.dynamics.AbstractDynamics`: the default dispatch, ABA,
the flexible sweep, the papers' formulations), ``solver`` (a diffrax solver, or for complementarity
contact an LCP time stepper, :class:`AccelerationLCP` / :class:`VelocityLCP`), ``controller`` (a
diffrax step-size controller), the contact model's own formulation
(:class:`diffsim.contact.Events` / :class:`~diffsim.contact.Smooth`).

Named parameters of a system: the model's (:mod:`diffsim.model.params`), ``contact.<name>``
(law constants, geometry; :func:`diffsim.contact.model.contact_param_refs`), ``limits.<name>``
(enforced joint limits: ``limits.K``, ``limits.c``, ``limits.<joint>.lower``), ``q0.<joint>`` /
``v0.<joint>`` (a joint's initial coordinates / rates) and ``q0.modes.<body>`` /
``v0.modes.<body>`` (a flexible link's initial modal coordinates / rates). Append ``[k]`` for one
element: ``q0.base[1]``.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Callable, Mapping

import diffrax
import equinox as eqx
import jax.numpy as jnp
import numpy as np
import optimistix as optx

from .._util import is_concrete
from ..actuators import actuation
from ..complementarity.rigid import RigidContact, rigid_contact_param_refs
from ..contact.limits import JointLimitGeometry, joint_limits
from ..contact.model import Contact, ContactSet, contact_param_refs
from ..dynamics.dispatch import AbstractDynamics, Default, as_dynamics
from ..loads import Loads, as_loads
from ..model.model import Model, neutral_configuration
from ..model.params import ParamRef, apply_params, conform, lookup, model_param_refs, nested_refs
from .lcp import AbstractLCPStepper, AccelerationLCP
from .newmark import AbstractNewmarkFamily
from .prescribed import Prescribed
from .solvers import FIXED, make_solver


class Options(eqx.Module):
    """How a solve runs (not what it solves).

    dt0: initial step (adaptive) or the fixed step (fixed-step solvers) [s].
    dtmax: cap on adaptive steps [s] (contact runs default to 1 % of the span).
    max_steps: step budget of a solve (per contact segment with events).
    max_events: bound on located contact events (onsets + separations).
    throw: raise on failure (``False``: report it in ``Trajectory.status``).
    progress: a progress bar (works under ``jit``).
    adjoint: diffrax adjoint (default: recursive checkpointing, reverse-mode exact).
    """

    dt0: float | None = None
    dtmax: float | None = None
    max_steps: int = eqx.field(static=True, default=100_000)
    max_events: int = eqx.field(static=True, default=64)
    throw: bool = eqx.field(static=True, default=True)
    progress: bool = eqx.field(static=True, default=False)
    adjoint: diffrax.AbstractAdjoint | None = None


def rms_norm_fail_fast(x):
    """RMS error norm that lets a non-finite step through (as error 0), so that the non-finite
    state ends the solve through the non-finite event instead of an endless cascade of rejected
    steps. Explicit solvers only: an implicit solver signals a diverged Newton iteration with an
    infinite error, which a smaller step cures, so it keeps the plain norm."""
    n = optx.rms_norm(x)
    return jnp.where(jnp.isfinite(n), n, 0.0)


def default_controller(solver, contact, rtol, atol, dtmax, t0, t1):
    """The step-size controller a solve uses unless one is given: a PID controller on the
    fail-fast norm for explicit solvers, on the plain norm for implicit ones and for compliant
    contact (a step that overshoots deep into a contact overflows and must be rejected, and
    ``dtmax`` defaults to 1 % of the span: a longer step could jump over a whole short contact);
    a constant step for fixed-step solvers; none for complementarity time stepping."""
    if isinstance(solver, AbstractLCPStepper):
        return None
    if not isinstance(solver, diffrax.AbstractAdaptiveSolver) or isinstance(solver, tuple(FIXED.values())):
        return diffrax.ConstantStepSize()  # RK4 is a diffrax ERK with a zero error estimate: never adaptive
    if isinstance(contact, (Contact, ContactSet)):
        if dtmax is None:  # traced spans too (a caller's jit over t1 ran with no cap and stepped over contacts)
            dtmax = (float(t1) - float(t0)) / 100.0 if is_concrete(t0, t1) else (jnp.asarray(t1) - jnp.asarray(t0)) / 100.0
        return diffrax.PIDController(rtol=rtol, atol=atol, dtmax=dtmax, norm=optx.rms_norm)
    implicit = isinstance(solver, (diffrax.AbstractImplicitSolver, AbstractNewmarkFamily))
    return diffrax.PIDController(rtol=rtol, atol=atol, dtmax=dtmax, norm=optx.rms_norm if implicit else rms_norm_fail_fast)


class System(eqx.Module):
    """Everything one run needs (module docstring). Build with the constructor; every float is a
    differentiable leaf; :func:`diffsim.simulate` runs it.

    Args:
        model: the multibody model.
        q0, v0: initial configuration [nq] and velocity [nv] (default: the neutral configuration
            and rest).
        loads: a :class:`diffsim.Loads` (or give ``tau=`` / ``forces=`` / ``ctrl=``: the controls
            [nu] of the model's actuators, a signal like ``tau``, applied through
            :func:`diffsim.actuation`).
        contact: a compliant :class:`diffsim.contact.Contact` or a rigid
            :class:`diffsim.complementarity.RigidContact`.
        limits: joint limits (:mod:`diffsim.contact.limits`): ``'auto'`` (default) enforces the
            ranges the model's file asks for with the default law (a critically damped limit of
            time constant 0.02 s), ``False`` none, ``True`` every 1-DoF range, or
            :func:`diffsim.joint_limits` for another law. Simulated with the compliant-contact
            loop (events located, their work in the energy bookkeeping).
        prescribed: joints with imposed motion (:func:`diffsim.prescribe`).
        dynamics: a dynamics strategy (default :class:`diffsim.dynamics.Default`) or a function
            ``f(model, q, v, tau, f_ext) -> v̇``.
        solver: a diffrax solver or its name (``'tsit5'`` default, ``'dopri5'``, ``'dopri8'``,
            ``'kvaerno5'``, ``'rk4'``, ``'newmark'``, ``'hht'``, ``'generalized-alpha'``); with rigid
            contact an LCP time stepper (default :class:`AccelerationLCP` at ``dt0``).
        controller: a diffrax step-size controller (default ``None``: built from ``rtol``/``atol``
            by :func:`default_controller` when the system runs, see :meth:`step_controller`).
        rtol, atol: tolerances of the default controller (and of an implicit solver's Newton
            iteration when the solver is given by name).
        t0, t1: the time span [s].
        saveat: number of evenly spaced output times or an array of times (default ``None``: 101
            times; with rigid contact every step, or every ``save_every``-th of the LCP stepper — a
            fixed-step run saves on its step grid, so a count ``N`` needs ``N − 1`` to divide its
            number of steps).
        integrals: ``f(t, q, v) -> [k]`` whose running time integral the trajectory carries.
        options: :class:`Options` (or give its fields as keywords: ``dt0``, ``dtmax``,
            ``max_steps``, ``max_events``, ``throw``, ``progress``, ``adjoint``).
    """

    model: Model
    q0: object
    v0: object
    loads: Loads
    contact: Contact | RigidContact | None
    limits: Contact | None
    prescribed: Prescribed | None
    dynamics: AbstractDynamics
    solver: diffrax.AbstractSolver | AbstractLCPStepper
    controller: diffrax.AbstractStepSizeController | None
    rtol: object
    atol: object
    t0: object
    t1: object
    saveat: object
    integrals: Callable | None = eqx.field(static=True)
    options: Options

    def __init__(self, model: Model, q0=None, v0=None, *, loads: Loads | None = None, tau=None, forces=(), ctrl=None,
                 contact=None, limits="auto", prescribed=None, dynamics=None, solver="tsit5", controller=None,
                 rtol: float = 1e-8, atol: float = 1e-8, t0=0.0, t1=1.0, saveat=None, integrals=None,
                 options: Options | None = None, **option_fields):
        if not isinstance(model, Model):
            raise TypeError(f"System expects a diffsim Model, got {type(model).__name__}")
        dtype = model.dtype
        self.model = model
        self.q0 = neutral_configuration(model) if q0 is None else jnp.asarray(q0, dtype)
        self.v0 = jnp.zeros(model.nv, dtype) if v0 is None else jnp.asarray(v0, dtype)
        if self.q0.shape != (model.nq,):
            raise ValueError(f"q0 must have shape ({model.nq},) for this model, got {self.q0.shape}")
        if self.v0.shape != (model.nv,):
            raise ValueError(f"v0 must have shape ({model.nv},) for this model, got {self.v0.shape}")
        if is_concrete(self.q0, self.v0) and not (np.all(np.isfinite(self.q0)) and np.all(np.isfinite(self.v0))):
            raise ValueError("q0/v0 are not finite")
        self.loads = as_loads(tau, forces, loads, ctrl, model)
        if contact is not None and not isinstance(contact, (Contact, RigidContact)):
            raise TypeError("contact must be a compliant contact (diffsim.compliant_contact(...)) or rigid contacts "
                            f"(diffsim.rigid_contact(...)), got {type(contact).__name__}")
        if prescribed is not None and contact is not None:
            raise ValueError("prescribed motion together with contact is not supported yet")
        self.contact = contact
        self.prescribed = prescribed
        self.dynamics = as_dynamics(dynamics)
        if model.fluid is not None and not isinstance(self.dynamics, Default):
            raise ValueError("fluid forces (model.fluid) are applied by the default dynamics only, not by "
                             f"{type(self.dynamics).__name__}")
        if options is not None and option_fields:
            raise ValueError("give options= or its fields as keywords, not both")
        try:
            self.options = options if options is not None else Options(**option_fields)
        except TypeError as e:
            raise TypeError(f"System: {e}") from None
        if int(self.options.max_events) < 1:
            raise ValueError(f"max_events must be >= 1, got {self.options.max_events}")
        if int(self.options.max_steps) < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.options.max_steps}")
        for k in ("dt0", "dtmax"):
            x = getattr(self.options, k)
            if x is not None and is_concrete(x) and not float(x) > 0:
                raise ValueError(f"{k} must be > 0, got {x}")
        if isinstance(contact, RigidContact):
            if isinstance(solver, str) and solver == "tsit5":  # the default: the seed 002 stepper
                solver = AccelerationLCP(self.options.dt0) if self.options.dt0 is not None else None
            if not isinstance(solver, AbstractLCPStepper):
                raise ValueError("rigid (complementarity) contact is simulated by an LCP time stepper: give "
                                 "solver=diffsim.AccelerationLCP(dt) or diffsim.VelocityLCP(dt)")
            unused = [k for k, x in (("controller", controller), ("integrals", integrals),
                                     ("dtmax", self.options.dtmax), ("adjoint", self.options.adjoint)) if x is not None]
            if unused:  # the LCP stepper takes fixed steps of its own dt
                raise ValueError(f"{', '.join(unused)} do(es) not apply to rigid-contact time stepping (fixed steps of "
                                 "the stepper's dt, saved on that grid): leave them unset")
            self.solver = solver
        else:
            if isinstance(solver, AbstractLCPStepper):
                raise ValueError("an LCP time stepper needs rigid contacts (contact=diffsim.rigid_contact(...))")
            self.solver, adaptive = make_solver(solver, rtol, atol)
            if not adaptive and self.options.dt0 is None and controller is None:
                raise ValueError(f"the fixed-step solver {solver!r} needs dt0")
            if not adaptive and self.options.dtmax is not None:
                raise ValueError(f"dtmax caps adaptive steps; the fixed-step solver {solver!r} takes dt0 steps")
            if isinstance(contact, Contact) and isinstance(self.solver, AbstractNewmarkFamily):
                raise ValueError("contact simulation supports the diffrax solvers (tsit5, dopri5/8, kvaerno5, rk4), "
                                 "not Newmark")
        self.limits = _resolve_limits(limits, model, self.q0, contact, prescribed, self.solver)
        self.t0 = t0
        self.t1 = t1
        if is_concrete(t0, t1) and not float(t1) > float(t0):
            raise ValueError(f"t1 must be greater than t0, got t0 = {t0}, t1 = {t1}")
        self.controller = controller
        if is_concrete(rtol, atol) and not (float(rtol) >= 0 and float(atol) >= 0 and float(rtol) + float(atol) > 0):
            raise ValueError(f"rtol and atol must be >= 0 and not both 0, got rtol = {rtol}, atol = {atol}")
        self.rtol, self.atol = rtol, atol
        _check_saveat(saveat, t0, t1)
        self.saveat = saveat
        self.integrals = integrals
        self.dynamics.check(model)

    def compliant_contacts(self) -> Contact | ContactSet | None:
        """What the compliant-contact loop simulates: the compliant contact, the enforced joint
        limits, or both as a :class:`~diffsim.contact.model.ContactSet` (contact pairs first)."""
        parts = [c for c in (self.contact, self.limits) if isinstance(c, Contact)]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else ContactSet(parts)

    def step_controller(self):
        """The step-size controller this run uses: ``controller`` if given, else
        :func:`default_controller` for this solver, contact, tolerances and span."""
        if self.controller is not None:
            return self.controller
        return default_controller(self.solver, self.compliant_contacts(), self.rtol, self.atol, self.options.dtmax, self.t0, self.t1)

    def replace(self, **changes) -> "System":
        """A copy with some fields replaced (``sys.replace(t1=2.0, q0=q)``; ``tau=`` / ``forces=`` /
        ``ctrl=`` replace that load and keep the others, and :class:`Options` fields
        (``max_steps=``, ``adjoint=`` …) the options' fields, as in the constructor)."""
        if {"tau", "forces", "ctrl"} & set(changes):  # the named loads replaced, the others kept
            if "loads" in changes:
                raise ValueError("give either loads= or tau=/forces=/ctrl=, not both")
            old = self.loads
            ctrl = changes.pop("ctrl", old.ctrl)
            changes["loads"] = Loads(tau=changes.pop("tau", old.tau), forces=changes.pop("forces", old.forces), ctrl=ctrl,
                                     actuation=None if ctrl is None else
                                     old.actuation if old.actuation is not None else actuation(self.model))
        option_fields = {k: changes.pop(k) for k in [k for k in changes if k in Options.__dataclass_fields__]}
        if option_fields:
            if "options" in changes:
                raise ValueError("give options= or its fields as keywords, not both")
            changes["options"] = dataclasses.replace(self.options, **option_fields)
        fields = {k: getattr(self, k) for k in ("model", "q0", "v0", "loads", "contact", "limits", "prescribed", "dynamics",
                                                 "solver", "controller", "rtol", "atol", "t0", "t1", "saveat", "integrals",
                                                 "options")}
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"System has no field(s) {sorted(unknown)}")
        fields.update(changes)
        return System(**fields)


def _check_saveat(saveat, t0, t1):
    """Output times: a count >= 2, or concrete times increasing within ``[t0, t1]`` (a contact run
    returned the final state at times past t1, and inf before t0); ``None`` for the default."""
    if saveat is None:
        return
    if isinstance(saveat, (int, np.integer)) and not isinstance(saveat, bool):
        if saveat < 2:
            raise ValueError(f"saveat must be a number of output times >= 2 or an array of times, got {saveat}")
        return
    if not is_concrete(saveat, t0, t1):
        return
    ts = np.asarray(saveat, float)
    if ts.ndim != 1 or ts.size == 0 or not np.all(np.isfinite(ts)):
        raise ValueError(f"saveat times must be a non-empty 1-D array of finite times, got shape {ts.shape}")
    if np.any(np.diff(ts) < 0) or ts[0] < float(t0) or ts[-1] > float(t1):
        raise ValueError(f"saveat times must be increasing within [t0, t1] = [{t0}, {t1}]; got {ts[0]} .. {ts[-1]}")


def _resolve_limits(limits, model: Model, q0, contact, prescribed, solver) -> Contact | None:
    """The joint limits a system enforces. ``'auto'`` (default): the ranges the model's file asks
    for (``JointLimit.enforced``, 1-DoF joints) with the default law of
    :func:`diffsim.contact.limits.joint_limits` at ``q0``, in the contact's formulation — none
    where the run cannot enforce them (rigid contact, prescribed motion, Newmark solvers; a
    warning says so); ``True``: every 1-DoF range, an error where it cannot; ``False`` / ``None``:
    none; or limits built with :func:`diffsim.joint_limits` (any law)."""
    if limits is None or limits is False:
        return None
    why = ("rigid (complementarity) contact" if isinstance(contact, RigidContact) else
           "prescribed motion" if prescribed is not None else
           "a Newmark-family solver" if isinstance(solver, AbstractNewmarkFamily) else None)
    formulation = contact.formulation if isinstance(contact, Contact) else None
    if isinstance(limits, Contact):
        if not isinstance(limits.geometry, JointLimitGeometry):
            raise TypeError("limits= takes joint limits (diffsim.joint_limits(model, ...)); contact goes in contact=")
        if why:
            raise ValueError(f"joint limits are not enforced together with {why}: give limits=False")
        if formulation is not None and type(formulation) is not type(limits.formulation):
            raise ValueError("contact and joint limits need one formulation (both events or both smooth)")
        return limits
    if isinstance(limits, str) and limits == "auto":
        if not any(lim.enforced for lim in model.joint_limits):
            return None
        if why:
            warnings.warn(f"the model's joint limits are not enforced with {why} (limits=False silences this)",
                          stacklevel=4)
            return None
        return joint_limits(model, q0, formulation=formulation)
    if limits is True:
        if not model.joint_limits:
            raise ValueError("limits=True, but the model has no joint ranges (model.joint_limits)")
        if why:
            raise ValueError(f"joint limits are not enforced together with {why}")
        enforced = joint_limits(model, q0, joints="all", formulation=formulation)
        if enforced is None:  # e.g. only ball joints' cone limits, which stay data
            raise ValueError("limits=True, but none of the model's joint ranges is on a 1-DoF (revolute / "
                             "prismatic) joint, the ranges diffsim enforces")
        return enforced
    raise TypeError(f"limits must be 'auto', True, False or diffsim.joint_limits(...), got {limits!r}")


# ------------------------------------------------------------------------------------------
# Named parameters over a whole system
# ------------------------------------------------------------------------------------------


def _state_refs(model: Model) -> dict[str, ParamRef]:
    t = model.topology
    refs = {}
    for i, j in enumerate(t.joint_names):
        if t.nq_joint[i]:
            refs[f"q0.{j}"] = _slice_ref(f"q0.{j}", "q0", t.q_slice(i))
        if t.nv_joint[i]:
            refs[f"v0.{j}"] = _slice_ref(f"v0.{j}", "v0", t.v_slice(i))
    for i, b in enumerate(t.body_names):
        if t.modes[i]:
            refs[f"q0.modes.{b}"] = _slice_ref(f"q0.modes.{b}", "q0", t.e_q_slice(i))
            refs[f"v0.modes.{b}"] = _slice_ref(f"v0.modes.{b}", "v0", t.e_v_slice(i))
    return refs


def _slice_ref(name: str, field: str, sl: slice) -> ParamRef:
    """A slice of the initial state ``q0`` / ``v0``."""

    def set_(s, value):
        x = getattr(s, field)
        return eqx.tree_at(lambda ss: getattr(ss, field), s, x.at[sl].set(conform(name, value, x[sl])))

    return ParamRef(lambda s: getattr(s, field)[sl], set_)


def system_param_refs(system: System) -> dict[str, ParamRef]:
    """Every named parameter of a system (module docstring), in a stable order."""
    refs = nested_refs(model_param_refs(system.model), "model")
    if isinstance(system.contact, Contact):
        refs.update(nested_refs(contact_param_refs(system.contact), "contact", "contact."))
    elif isinstance(system.contact, RigidContact):
        refs.update(nested_refs(rigid_contact_param_refs(system.contact), "contact", "contact."))
    if system.limits is not None:
        refs.update(nested_refs(contact_param_refs(system.limits), "limits", "limits."))
    refs.update(_state_refs(system.model))
    return refs


_HINT = ("names look like 'body.<body>.mass', 'joint.<joint>.damping', 'beam.<body>.EI_z', 'contact.K', "
         "'q0.<joint>', 'gravity'; see diffsim.param_names(system)")


def _refs(obj):
    if isinstance(obj, System):
        return system_param_refs(obj)
    if isinstance(obj, Model):
        return model_param_refs(obj)
    raise TypeError(f"named parameters live on a diffsim System or Model, got {type(obj).__name__}")


def param_names(obj) -> list[str]:
    """Every named parameter of a :class:`System` or :class:`~diffsim.model.Model`, in a stable
    order (``name[k]`` also reaches one element of each)."""
    return list(_refs(obj))


def get_param(obj, name: str):
    """The value of a named parameter of a system or model (a traced array inside ``jit``)."""
    return lookup(_refs(obj), name, _HINT).get(obj)


def set_params(obj, values: Mapping[str, object]):
    """A new system (or model) with the named parameters replaced (functional; differentiable;
    works under ``jit``, ``grad`` and ``vmap``). A scalar given for a vector or matrix parameter is
    broadcast to its shape (``{"joint.j1.damping": 0.1}`` on every entry); a concrete value outside
    its quantity's physical domain (a negative mass or stiffness, a restitution outside (0, 1],
    non-finite) raises :class:`ParamError` (:func:`diffsim.model.params.check_value`)."""
    return apply_params(obj, _refs(obj), values, _HINT)
