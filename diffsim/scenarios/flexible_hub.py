"""Flexible hub: a massless planar hub turning about z (no gravity) with one flexible link whose
modes have an elastic root (a rotational spring between hub and link) and a tip mass with rotary
inertia — the mode-shape fitting benchmark of issue 17.

The link is a uniform Euler–Bernoulli beam (``L`` [m], ``rhoA`` [kg/m], ``EI`` [N m²]) pinned
laterally at the hub axis, joined to the hub by a rotational spring ``k_root`` [N m/rad], carrying
a point mass ``tip_mass`` [kg] with rotary inertia ``tip_inertia`` [kg m²] (about z) at ``x = L``.
Its ``n_modes`` assumed modes are the elastic-boundary modes of :func:`diffsim.beams.elastic_modes`
(root spring, lateral root rigid, tip free with the mass): Hamilton's principle with
``U = ½∫EI w''² dx + ½ k_root w'(0)²`` and the tip in the kinetic energy. The link is an
:class:`ElasticBeam`: its modes are derived from its own physical data every time its modal
integrals are (inside the traced function), so the System's named parameters ``beam.link.EI_z``,
``beam.link.mu``, ``beam.link.tip_mass``, ``beam.link.tip_inertia[2]`` and
``beam.link.modes_y.k_rot_root`` each exist once and a fit that moves them moves the shapes
(implicit-function derivatives of the roots). The root spring enters the link's stiffness as
strain energy (``ElasticModes.boundary_stiffness``, added by :func:`diffsim.model.beam`).

The hub angle is prescribed as the rest-to-rest cycloid ``θ(t) = θmax (t/T − sin(2πt/T)/(2π))``
for ``t ≤ T`` (``T = T_move``), then held (``θ̇ = θ̈ = 0`` at both ends).

Observables (channels of the data files, :func:`observables`): ``w_<x>`` the transverse deflection
of the centre line at sensor ``x`` [m] in the hub's rotating frame (``y`` body axis; ``x``
formatted with ``{:g}``: ``w_0.2 … w_1``), and ``hub_torque`` [N m], the torque that drives the
prescribed hub (the inverse dynamics of the mixed problem, :func:`diffsim.joint_torques`).

Options: ``L``, ``rhoA``, ``EI``, ``k_root``, ``tip_mass``, ``tip_inertia``, ``n_modes``,
``theta_max`` [rad], ``T_move`` [s], ``t1`` [s], ``sensors`` [m] (issue 17's values by default),
``air_damping`` [kg/(m s)], ``n_save`` samples on ``[0, t1]``, ``progress``, ``noise`` (σ [m] added to the
deflections written to ``data.csv``) and ``noise_torque`` [N m], ``seed``, tolerances, ``plots``.

``diffsim run flexible-hub`` writes ``trajectory.npz`` (``t``, ``w`` [T, n_sensors], ``sensors``,
``hub_torque``, ``theta``), ``data.csv`` (``t, w_0.2, …, w_1, hub_torque``, noise as chosen),
``summary.json`` (with ``frequencies_hz``, the hub-locked natural frequencies) and figures.
For ``diffsim fit``: :meth:`FlexibleHubScenario.observables_for` gives the observables of given
options (sensors, motion) and :meth:`FlexibleHubScenario.fit_extras` the ``frequencies_hz`` /
``mode_shapes`` entries of ``fit.json`` and the mode-shape figures.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Callable
from pathlib import Path

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..beams import elastic_modes
from ..catalog import CATALOG
from ..identify.modal import modal_report
from ..model.beam import Beam
from ..model.builder import ModelBuilder
from ..options import defaults
from ..simulation.prescribed import joint_torques, prescribe
from ..simulation.simulate import simulate
from ..simulation.system import System, set_params
from ..viz.plots import new_figure, plot_series, save_figure
from .base import Scenario, scenario_options

#: the declaration (name, options with units and ranges, jobs, shorthands, observables)
INFO = CATALOG["flexible-hub"]
#: the option defaults
OPTIONS = defaults(INFO.options)
#: the option names that are System parameters (``diffsim fit flexible-hub --params EI,k_root,…``)
ALIASES = dict(INFO.aliases)

BODY, JOINT = "link", "hub"


# --------------------------------------------------------------------------------------------
# The link: a beam whose modes are derived from its own data
# --------------------------------------------------------------------------------------------


class ElasticSupport(eqx.Module):
    """The boundary springs of an :class:`ElasticBeam` (its ``modes_y``): ``k_rot_root``
    [N m/rad], ``k_lat_root`` [N/m], ``k_rot_tip``, ``k_lat_tip`` (``inf`` rigid, 0 free), and
    the number of modes. The shapes themselves are solved by :meth:`ElasticBeam.families`."""

    k_rot_root: object
    k_lat_root: object
    k_rot_tip: object
    k_lat_tip: object
    n_modes: int = eqx.field(static=True)


class ElasticBeam(Beam):
    """A :class:`~diffsim.model.beam.Beam` bending in the x–y plane whose modes are the
    elastic-boundary modes (:func:`diffsim.beams.elastic_modes`, ``parametric=True``) of its own
    ``L``, ``EI_z``, ``mu``, ``tip_mass``, ``tip_inertia[2]`` and the springs of its
    ``modes_y`` (:class:`ElasticSupport`): one value per physical quantity, the shapes re-solved
    whenever the modal integrals are re-derived (``set_params``, inside ``jit``/``grad``)."""

    def elastic_modes(self):
        """The link's :class:`~diffsim.beams.ElasticModes` at its current data."""
        s = self.modes_y
        J = jnp.asarray(self.tip_inertia)
        return elastic_modes(s.n_modes, L=self.L, EI=self.EI_z, rhoA=self.mu, k_rot_root=s.k_rot_root,
                             k_lat_root=s.k_lat_root, k_rot_tip=s.k_rot_tip, k_lat_tip=s.k_lat_tip,
                             tip_mass=self.tip_mass, tip_inertia=J[2], parametric=True)  # fmt: skip

    def families(self):
        return [("y", self.elastic_modes(), self.EI_z, None)]


def elastic_beam(n_modes, *, L, rhoA, EI, k_root, tip_mass, tip_inertia, air_damping=0.0, n_quad=24,
                 stiffening=True):  # fmt: skip
    """The flexible-hub link as a :class:`~diffsim.flexible.FlexBody` (validated: non-negative
    springs and masses, positive ``L``, ``rhoA``, ``EI``; a mode count the frequency equation
    supplies)."""
    for name, v, positive in (("L", L, True), ("rhoA", rhoA, True), ("EI", EI, True), ("k_root", k_root, False),
                              ("tip_mass", tip_mass, False), ("tip_inertia", tip_inertia, False),
                              ("air_damping", air_damping, False)):  # fmt: skip
        a = float(v)
        if not (a > 0 if positive else a >= 0) or np.isnan(a) or (np.isinf(a) and name != "k_root"):
            raise ValueError(f"flexible-hub: {name} must be {'positive' if positive else 'non-negative'} and finite"
                             f"{' (k_root may be inf: clamped)' if name == 'k_root' else ''}, got {v!r}")
    n = int(n_modes)
    if n != n_modes or n < 1:
        raise ValueError(f"flexible-hub: n_modes must be a positive integer, got {n_modes!r}")
    # errors (the frequency equation is checked on the host; the traceable solve is not compiled for it)
    elastic_modes(n, L=L, EI=EI, rhoA=rhoA, k_rot_root=k_root, tip_mass=tip_mass, tip_inertia=tip_inertia,
                  parametric=True)  # fmt: skip
    f = lambda v: jnp.asarray(v, float)
    support = ElasticSupport(k_rot_root=f(k_root), k_lat_root=f(np.inf), k_rot_tip=f(0.0), k_lat_tip=f(0.0), n_modes=n)
    spec = ElasticBeam(L=f(L), mu=f(rhoA), EI_z=f(EI), modes_y=support, air_damping=f(air_damping),
                       kelvin_voigt=f(0.0), tip_mass=f(tip_mass), tip_inertia=f([0.0, 0.0, tip_inertia]),
                       rotary_inertia=f([0.0, 0.0, 0.0]), n_quad=int(n_quad), stiffening=bool(stiffening))  # fmt: skip
    fb = spec.flex_body()
    # the modes are mass-orthonormal (beam + tip, rhoA L · I): the Gauss rule must resolve them
    m, phi_d, phi_r, J = (np.asarray(a) for a in (fb.m, fb.phi_d, fb.phi_r, fb.J))  # a check on the host
    M = np.einsum("g,gki,gkj->ij", m, phi_d, phi_d) + np.einsum("gki,gkl,glj->ij", phi_r, J, phi_r)
    err = float(np.max(np.abs(M / (float(rhoA) * float(L)) - np.eye(n))))
    if err > 1e-6:
        raise ValueError(f"flexible-hub: n_quad = {n_quad} Gauss points do not resolve {n} modes (modal mass off "
                         f"the identity by {err:.2g}); raise n_quad or lower n_modes")  # fmt: skip
    return fb


class Cycloid(eqx.Module):
    """Rest-to-rest cycloid ``θ = θmax (t/T − sin(2πt/T)/(2π))`` for ``t ≤ T``, then ``θmax``:
    ``(θ, θ̇, θ̈)`` [1] at ``t`` (``θ̇ = θmax/T (1 − cos 2πt/T)``, ``θ̈ = 2π θmax/T² sin 2πt/T``)."""

    theta_max: object
    T: object

    def __call__(self, t):
        T, a = jnp.asarray(self.T), jnp.asarray(self.theta_max)
        ph = 2 * jnp.pi * jnp.minimum(t, T) / T
        moving = t <= T
        th = a * (ph - jnp.sin(ph)) / (2 * jnp.pi)
        thd = jnp.where(moving, a / T * (1 - jnp.cos(ph)), 0.0)
        thdd = jnp.where(moving, 2 * jnp.pi * a / T**2 * jnp.sin(ph), 0.0)
        return th[None], thd[None], thdd[None]


def _check(o):
    s = np.asarray(o["sensors"], dtype=float)
    if s.ndim != 1 or s.size < 1:
        raise ValueError(f"flexible-hub: sensors must be a non-empty list of positions [m], got {o['sensors']!r}")
    bad = s[(s < 0) | (s > float(o["L"])) | ~np.isfinite(s)]
    if bad.size:
        raise ValueError(f"flexible-hub: sensor positions must lie on the link, in [0, L] = [0, {o['L']:g}] m; "
                         f"got {bad.tolist()}")  # fmt: skip
    if len({f"{x:g}" for x in s}) != s.size:
        raise ValueError(f"flexible-hub: sensor positions must be distinct (as written with {{:g}}), got {s.tolist()}")
    if not float(o["T_move"]) > 0 or not float(o["t1"]) > 0:
        raise ValueError("flexible-hub: T_move and t1 must be positive")
    return s


def sensor_channels(sensors) -> list[str]:
    """Channel names ``w_<x>`` with ``x`` written by ``{:g}`` (``w_0.2``, ``w_1``)."""
    return [f"w_{float(x):g}" for x in sensors]


def model(options: dict | None = None, dtype=None):
    """The hub + link model of the options (body ``link`` on the revolute joint ``hub`` about z)."""
    o = scenario_options(INFO, options, bounds=False)  # names and types; the link's own checks say more
    fb = elastic_beam(o["n_modes"], L=o["L"], rhoA=o["rhoA"], EI=o["EI"], k_root=o["k_root"], tip_mass=o["tip_mass"],
                      tip_inertia=o["tip_inertia"], air_damping=o["air_damping"], n_quad=o["n_quad"],
                      stiffening=o["stiffening"])  # fmt: skip
    b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body(BODY, None, joint="revolute", joint_name=JOINT, axis=(0.0, 0.0, 1.0), flex=fb)
    return b.build(dtype)


def system(options: dict) -> System:
    """The :class:`~diffsim.System` the options describe: the hub prescribed by the cycloid, the
    link at rest, saved on ``n_save`` even samples of ``[0, t1]``. The options are checked against
    their declarations (:func:`~diffsim.scenarios.scenario_options`; the link's data by the
    link's own checks first, which say what the numbers mean)."""
    o = scenario_options(INFO, options, bounds=False)
    _check(o)
    m = model(o)
    o = scenario_options(INFO, o)  # every range (n_save >= 2, rtol < 1, ...)
    pres = prescribe(m, [JOINT], Cycloid(jnp.asarray(float(o["theta_max"])), jnp.asarray(float(o["T_move"]))))
    return System(m, prescribed=pres, t1=float(o["t1"]), rtol=float(o["rtol"]), atol=float(o["atol"]),
                  saveat=int(o["n_save"]), throw=False, progress=bool(o["progress"]))  # fmt: skip


# --------------------------------------------------------------------------------------------
# Observables
# --------------------------------------------------------------------------------------------


def deflection(traj, sensors):
    """``w`` [T, n_sensors]: transverse (body ``y``) deflection of the centre line at the sensor
    positions [m], in the hub's rotating frame: ``w(x) = Σ_i W_i(x/L) δ_i``."""
    m = traj.model
    i = list(m.topology.body_names).index(BODY)
    W = m.flex[i].deflection(jnp.asarray(sensors, traj.q.dtype))[:, 1, :]  # [n_s, n]: y row
    return traj.q[:, m.topology.e_q_slice(i)] @ W.T


def _length(traj) -> float:
    """The link's length L [m] in the simulated model (an option, or a fitted value)."""
    m = traj.model
    return float(m.flex[list(m.topology.body_names).index(BODY)].spec.L)


def hub_torque(traj, prescribed):
    """Driving torque of the prescribed hub [T] N m (inverse dynamics of the mixed problem)."""
    return joint_torques(traj, prescribed)[:, 0]


def observables(options: dict | None = None) -> dict[str, Callable]:
    """Channel name → ``traj -> [T]`` for the options' sensors and hub motion."""
    o = scenario_options(INFO, options, bounds=False)
    s = _check(o)
    out = {ch: (lambda tr, x=float(x): deflection(tr, [x])[:, 0]) for ch, x in zip(sensor_channels(s), s)}
    pres = Cycloid(jnp.asarray(float(o["theta_max"])), jnp.asarray(float(o["T_move"])))

    def torque(tr):
        return hub_torque(tr, prescribe(tr.model, [JOINT], pres))

    out["hub_torque"] = torque
    return out


def require_deflections(channels, sensors=None):
    """ValueError unless the data have at least one ``w_<x>`` deflection channel (the shapes are
    fitted from deflections; a torque alone does not determine them)."""
    w = [c for c in channels if str(c).startswith("w_")]
    if not w:
        want = sensor_channels(OPTIONS["sensors"] if sensors is None else sensors)
        raise ValueError(f"flexible-hub: the data have no deflection channels (w_<x>, e.g. {want}); got "
                         f"{sorted(channels)}")  # fmt: skip
    return w


# --------------------------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------------------------


def write_csv(path, t, w, sensors, torque) -> Path:
    cols = ["t", *sensor_channels(sensors), "hub_torque"]
    with Path(path).open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(cols)
        for k in range(len(t)):
            out.writerow([repr(float(t[k])), *(repr(float(x)) for x in w[k]), repr(float(torque[k]))])
    return Path(path)


def simulate_options(options: dict, params: dict | None = None):
    """``(system, traj, w [T, n_s], hub_torque [T], theta [T])`` of the options (+ named
    parameters by System name or alias)."""
    o = {**OPTIONS, **options}
    s = system(o)
    if params:
        s = set_params(s, {ALIASES.get(k, k): v for k, v in params.items()})
    traj = simulate(s)
    sensors = _check(o)
    w = deflection(traj, sensors)
    tau = hub_torque(traj, s.prescribed)
    theta = traj.q[:, 0]
    return s, traj, np.asarray(w), np.asarray(tau), np.asarray(theta)


def _run(options, params, out: Path) -> dict:
    s, traj, w, tau, theta = simulate_options(options, params)
    t = np.asarray(traj.t)
    sensors = _check(options)
    rng = np.random.default_rng(int(options["seed"]))
    wn = w + float(options["noise"]) * rng.standard_normal(w.shape)
    taun = tau + float(options["noise_torque"]) * rng.standard_normal(tau.shape)
    np.savez_compressed(out / "trajectory.npz", t=t, w=w, sensors=sensors, hub_torque=tau, theta=theta)
    write_csv(out / "data.csv", t, wn, sensors, taun)
    rep = modal_report(s, BODY)
    figs = []
    if options["plots"]:
        figs.append(plot_series({f"x = {x:g} m": (t, w[:, k]) for k, x in enumerate(sensors)}, out / "deflection.png",
                                xlabel="t [s]", ylabel="deflection in the hub frame [m]",
                                title=f"flexible hub: θmax = {options['theta_max']:g} rad in T = {options['T_move']:g} s"))
        fig, (a1, a2) = new_figure(2, 1, figsize=(7.0, 5.0), sharex=True)
        a1.plot(t, theta, color="C0")
        a1.set_ylabel("hub angle θ [rad]")
        a2.plot(t, tau, color="C3")
        a2.set_ylabel("hub torque [N m]")
        a2.set_xlabel("t [s]")
        fig.suptitle("prescribed hub motion and its driving torque")
        figs.append(save_figure(fig, out / "hub.png"))
        figs += rep.save(out, figures_only=True)
    return {"status": traj.message, "steps": int(traj.num_steps), "frequencies_hz": rep.frequencies_hz.tolist(),
            "sensors_m": sensors.tolist(), "w_rms_m": float(np.sqrt(np.mean(w**2))),
            # at x = L whatever the sensors (it was the last sensor's: 0.075 m for sensors 1.0, 0.2, tip 0.525)
            "w_tip_max_m": float(np.max(np.abs(np.asarray(deflection(traj, [_length(traj)]))[:, 0]))),
            "hub_torque_max_Nm": float(np.max(np.abs(tau))),
            "figures": [Path(p).name for p in figs]}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class FlexibleHubScenario(Scenario):
    """:class:`Scenario` with the two hooks ``diffsim fit`` needs for this scenario: the
    observables of the given options (sensor positions, hub motion) and the modal entries of
    ``fit.json``."""

    def observables_for(self, options: dict) -> dict[str, Callable]:
        return observables(options)

    def check_data(self, experiments, options: dict) -> None:
        for e in experiments:
            require_deflections(e.data, {**OPTIONS, **options}["sensors"])

    def fit_extras(self, fitted: System, start: System, out_dir=None) -> dict:
        """``{"frequencies_hz": [n_modes], "mode_shapes": {"x": [101], "w": [n_modes][101]}}`` of
        the fitted link (hub locked; shapes normalised to w(L) = 1), with the figures (fitted vs
        initial shapes) written to ``out_dir``."""
        rep = modal_report(fitted, BODY)
        if out_dir is not None:
            rep.save(out_dir, initial=modal_report(start, BODY), figures_only=True)
        doc = rep.to_json()
        return {"frequencies_hz": doc["frequencies_hz"], "mode_shapes": doc["mode_shapes"]}


FLEXIBLE_HUB = FlexibleHubScenario(INFO, run=_run, system=system, observables=observables(OPTIONS))
