"""The scenarios' declarations: name, description, options (type, range or choices, unit,
description), the jobs each supports, and where its implementation lives.

Pure Python (imports only :mod:`diffsim.options`): ``diffsim --help``, ``diffsim list`` and
``diffsim run <scenario> --help`` read this catalog without importing JAX, and ``--set`` values
are parsed and checked here before anything is computed or written. The implementation of a
scenario (``diffsim/scenarios/<module>.py``, which imports JAX) attaches to its entry:
``Scenario(CATALOG["ball-drop"], run=_run, system=system, ...)``.

Adding a scenario: add a :class:`ScenarioInfo` to ``CATALOG`` below (options from the shared
factories :func:`t1`, :func:`rtol`, ... where the meaning is the same, so the same name means
the same thing in every scenario), write its module, and register the module in
``diffsim/scenarios/__init__.py``. ``tests/scenarios/test_catalog.py`` checks that every option
has a unit or is unitless by nature, a description and a default that fits, and that the
catalog and the implementations agree.
"""

from __future__ import annotations

import dataclasses
import difflib
import math

from .options import Option, OptionError, defaults, parse_assignment

#: the integrator names of :func:`diffsim.simulation.solvers.make_solver` (checked by a test)
SOLVERS = ("tsit5", "dopri5", "dopri8", "kvaerno5", "rk4", "newmark", "hht", "generalized-alpha")
#: the compliant normal-force laws of :func:`diffsim.normal_law` (checked by a test)
NORMAL_LAWS = ("linear", "hertz", "hunt-crossley", "lankarani-nikravesh", "gonthier", "flores", "hu-guo")

#: the commands a scenario can serve
JOBS = ("run", "fit", "montecarlo", "plan")


# -- options that mean the same in every scenario ---------------------------------------------
def t1(default: float, help: str = "end time of the simulation (it starts at t = 0)") -> Option:
    return Option(float(default), help, unit="s", gt=0.0)


def rtol(default: float) -> Option:
    return Option(default, "relative tolerance of the adaptive step-size control", unit="1", gt=0.0, lt=1.0)


def atol(default: float) -> Option:
    return Option(default, "absolute tolerance of the adaptive step-size control, in each state entry's unit",
                  gt=0.0)


def solver(default: str) -> Option:
    return Option(default, "integrator (diffsim.simulate's solver names)", choices=SOLVERS)


def n_save(default: int) -> Option:
    return Option(default, "number of saved time points, evenly spaced from 0 to t1", ge=2)


def max_steps(default: int) -> Option:
    return Option(default, "step limit of the integrator (the run stops there and says so)", ge=1)


def max_events(default: int) -> Option:
    return Option(default, "limit on located contact onsets and separations", ge=1)


def plots() -> Option:
    return Option(True, "write the figures (PNG files)")


def progress() -> Option:
    return Option(False, "show progress while simulating (also: --progress)")


@dataclasses.dataclass(frozen=True)
class ScenarioInfo:
    """The declaration of a scenario.

    Attributes:
        name: the command-line name (``diffsim run <name>``).
        description: one line.
        module: the module of ``diffsim.scenarios`` that implements it.
        options: ``{name: Option}``, in the order of the help text.
        jobs: the commands it serves (``run``; ``fit`` and ``montecarlo`` need a System).
        aliases: option name → the System parameter name of the same quantity
            (``K`` → ``contact.K``), for ``fit --params`` and ``montecarlo --vary``.
        observables: data channel name → its description with unit (the columns of ``fit --data``).
        run_only: options that only ``diffsim run`` uses (the noise of the data it writes, its
            seed): they do not shape the System, and ``diffsim montecarlo`` refuses them.
    """

    name: str
    description: str
    module: str
    options: dict
    jobs: tuple = ("run",)
    aliases: dict = dataclasses.field(default_factory=dict)
    observables: dict = dataclasses.field(default_factory=dict)
    run_only: tuple = ()

    def __post_init__(self):
        bad = [j for j in self.jobs if j not in JOBS]
        if bad:
            raise ValueError(f"scenario {self.name}: unknown jobs {bad}; known: {JOBS}")
        unknown = [k for k in self.run_only if k not in self.options]
        if unknown:
            raise ValueError(f"scenario {self.name}: run_only names {unknown}, which are not options")
        for k, o in self.options.items():
            if not isinstance(o, Option):
                raise TypeError(f"scenario {self.name}: option {k!r} must be declared as an Option, got {o!r}")


_SEED000 = ScenarioInfo(
    name="seed000-dual-arm",
    description="S0: dual-arm free-floating space robot with follower forces (seed 000, 10 s)",
    module="seed000",
    jobs=("run", "fit", "montecarlo"),
    options={
        "t1": t1(10.0),
        "solver": solver("dopri8"),
        "rtol": rtol(1e-13),
        "atol": atol(1e-13),
        "n_save": n_save(1001),
        "max_steps": max_steps(200_000),
        "F1": Option([1.0, -1.0, 1.0], "follower force at arm 1's tip, components in link 2's frame", unit="N",
                     length=3),
        "F2": Option([2.0, -2.0, -2.0], "follower force at arm 2's tip, components in link 2's frame", unit="N",
                     length=3),
        "plots": plots(),
        "progress": progress(),
    },
)

_SEED001 = ScenarioInfo(
    name="seed001-falling-chain",
    description="S1: three Timoshenko links falling on the ground with Hu–Guo impacts and Ambrosio friction "
    "(seed 001)",
    module="seed001",
    options={
        "modes": Option("ss-ss-ss", "boundary conditions of the links' modes (all: the four sets in turn)",
                        choices=("ss-ss-ss", "cc-cc-cc", "cs-ss-sc", "sc-cc-cs", "all")),
        "t1": t1(1.5),
        "n_save": n_save(1501),
        "rtol": rtol(1e-9),
        "atol": atol(1e-9),
        "solver": solver("tsit5"),
        "max_events": max_events(160),
        "height": Option(0.9, "height X2 of joint O1 at release (eq 30)", unit="m", ge=0.0),
        "stiffening": Option(False, "keep the foreshortening (geometric stiffening) term; the paper has none"),
        "n_quad": Option(12, "Gauss–Legendre points per link for the modal integrals", ge=2),
        "plots": plots(),
        "progress": progress(),
    },
)

_SEED002 = ScenarioInfo(
    name="seed002-space-contact",
    description="S2: planar space robot whose tip slides on a plane; rigid contact as an LCP solved by Lemke "
    "(seed 002)",
    module="seed002",
    options={
        "dt": Option(0.01, "time step of the LCP stepper (t1 must be a whole number of steps)", unit="s", gt=0.0),
        "t1": t1(5.0),
        "method": Option("acceleration", "LCP stepper: acceleration level (the paper's) or velocity level",
                         choices=("acceleration", "velocity")),
        "mu": Option(0.3, "Coulomb friction coefficient (static = kinetic)", unit="1", ge=0.0),
        "formulation": Option("planar", "contact formulation", choices=("planar", "polyhedral")),
        "plots": plots(),
        "progress": progress(),
    },
)

_SEED003 = ScenarioInfo(
    name="seed003-two-link",
    description="S3: planar two-link flexible arm, prescribed motion, one revolution (seed 003)",
    module="seed003",
    options={
        "case": Option("both", "which arm: link 1 rigid, both elastic, or both cases",
                       choices=("both", "rigid-elastic", "elastic-elastic")),
        "n_modes": Option(1, "assumed modes per flexible link", ge=1),
        "shapes": Option("cf", "mode shapes: clamped–free eigenfunctions or polynomials η², η³, …",
                         choices=("cf", "poly")),
        "stiffening": Option(True, "keep the foreshortening (geometric stiffening) term"),
        "t1": t1(2 * math.pi / 10.0, "end time (default one revolution of link 1, 2π/ω with ω = 10 rad/s)"),
        "solver": solver("tsit5"),
        "rtol": rtol(1e-10),
        "atol": atol(1e-12),
        "n_save": n_save(1001),
        "plots": plots(),
        "progress": progress(),
    },
)

_SEED004 = ScenarioInfo(
    name="seed004-canadarm2",
    description="S4: Canadarm2 (SSRMS) 5-link arm, flexible booms (3 bending + 3 torsion modes), free release "
    "under gravity; rigid vs flexible joint rates and lower-boom tip deformation (seed 004)",
    module="seed004",
    options={
        "t1": t1(1.5),
        "flexible": Option(True, "flexible booms (false: rigid booms of the same mass properties)"),
        "compare": Option(True, "run both the flexible and the rigid arm"),
        "n_bend": Option(3, "bending modes per plane per boom", ge=1),
        "n_tors": Option(3, "torsion modes per boom", ge=1),
        "gravity": Option(9.81, "gravitational acceleration, along −z", unit="m/s²", ge=0.0),
        "q0_deg": Option([-30.0, 75.0, 30.0, 45.0, 30.0], "release angles of the five joints", unit="deg", length=5),
        "solver": solver("tsit5"),
        "rtol": rtol(1e-8),
        "atol": atol(1e-8),
        "n_save": n_save(601),
        "max_steps": max_steps(400_000),
        "plots": plots(),
        "progress": progress(),
    },
)

_SPINUP = ScenarioInfo(
    name="spin-up-beam",
    description="rotating cantilever spin-up (Kane, Ryan & Banerjee 1987), with/without geometric stiffening",
    module="spinup",
    options={
        "n_modes": Option(4, "clamped–free bending modes of the beam", ge=1),
        "omega_s": Option(6.0, "final hub rate ωs of the spin-up manoeuvre", unit="rad/s"),
        "Ts": Option(15.0, "duration Ts of the spin-up", unit="s", gt=0.0),
        "t1": t1(30.0),
        "stiffening": Option(True, "keep the foreshortening (geometric stiffening) term"),
        "compare": Option(True, "run both with and without stiffening"),
        "axial_modes": Option(0, "fixed–free axial modes (0: inextensible)", ge=0),
        "solver": solver("tsit5"),
        "rtol": rtol(1e-9),
        "atol": atol(1e-9),
        "n_save": n_save(601),
        "plots": plots(),
        "progress": progress(),
    },
)

_BALL_DROP = ScenarioInfo(
    name="ball-drop",
    description="a sphere dropped on a plane (compliant normal law, located impacts); the fitting benchmark",
    module="ball_drop",
    jobs=("run", "fit", "montecarlo"),
    options={
        "mass": Option(0.05, "mass of the sphere", unit="kg", gt=0.0),
        "radius": Option(0.02, "radius of the sphere", unit="m", gt=0.0),
        "height": Option(0.25, "gap between the sphere's lowest point and the plane at t = 0", unit="m", ge=0.0),
        "t1": t1(1.2),
        "g": Option(9.81, "gravitational acceleration, along −z", unit="m/s²", ge=0.0),
        "law": Option("hu-guo", "normal-force law (diffsim.normal_law)", choices=NORMAL_LAWS),
        "K": Option(1e6, "contact stiffness of the law, F = K δⁿ", unit="N/m^n", gt=0.0),
        "c_r": Option(0.8, "coefficient of restitution of the law", unit="1", gt=0.0, le=1.0),
        "n_save": n_save(241),
        "noise": Option(0.0, "standard deviation of the noise added to data.csv", unit="m", ge=0.0),
        "seed": Option(0, "seed of the noise", ge=0),
        "rtol": rtol(1e-10),
        "atol": atol(1e-10),
        "max_events": max_events(64),
        "plots": plots(),
        "progress": progress(),
    },
    aliases={"K": "contact.K", "c_r": "contact.c_r", "mass": "body.ball.mass", "radius": "contact.p0.radius"},
    observables={"z": "height of the sphere's centre above the plane [m]"},
    run_only=("noise", "seed"),
)

def check_options(info: ScenarioInfo, options, bounds: bool = True) -> dict:
    """The scenario's options with ``options`` (a mapping of Python values: a script's
    ``scenario.system({...})``) checked against their declarations and the rest at their
    defaults: an unknown name is refused with the closest declared ones, a value that does not
    fit (type, choices, length and, with ``bounds``, range: ``n_save=2.5``, ``rtol=2``) raises
    :class:`~diffsim.options.OptionError` (one line)."""
    if options is None:
        options = {}
    if not hasattr(options, "items"):
        raise OptionError(f"options of scenario {info.name!r} are a mapping {{name: value}}, got "
                          f"{type(options).__name__}")
    out = defaults(info.options)
    for key, value in options.items():
        if key not in info.options:
            close = difflib.get_close_matches(str(key), list(info.options), n=3)
            did = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            hint = (" (model parameters are set on the System: diffsim.set_params(system, {name: value}))"
                    if "." in str(key) else "")
            raise OptionError(f"unknown option {key!r} for scenario {info.name!r}{did}; options: "
                              f"{', '.join(info.options)}{hint}")
        out[key] = info.options[key].check(value, key, bounds=bounds)
    return out


def parse_sets(info: ScenarioInfo, items: list[str]) -> tuple[dict, dict]:
    """Split ``--set`` items ``name=value`` into the scenario's options (every value parsed and
    checked against its declaration; the rest keep their defaults) and model parameters (names
    with a dot, or ``gravity`` where that is no option; value: a number or a list of numbers, finite;
    ``gravity`` three of them; their physical domains are checked by ``set_params``).
    Raises :class:`~diffsim.options.OptionError` (one line) for a bad value or an unknown name."""
    options, params = defaults(info.options), {}
    for item in items:
        key, text = parse_assignment(item)
        if key in info.options:
            options[key] = info.options[key].parse(text, key)
        elif "." in key or key == "gravity":
            parts = text.strip().strip("[]").replace(",", " ").split()
            try:
                values = [float(x) for x in parts]
            except ValueError:
                values = []
            if not values:
                raise OptionError(f"model parameter {key} expects a number or numbers, got {text!r}")
            if not all(math.isfinite(x) for x in values):
                raise OptionError(f"model parameter {key} must be finite, got {text!r}")
            if key == "gravity" and len(values) != 3:  # a single number would be spread over x, y and z
                raise OptionError(f"gravity expects 3 numbers (x, y, z in m/s²), e.g. gravity=0,0,-9.81; got {text!r}")
            params[key] = values[0] if len(values) == 1 and "," not in text and "[" not in text else values
        else:
            close = difflib.get_close_matches(key, list(info.options), n=3)
            did = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            raise OptionError(
                f"unknown option {key!r} for scenario {info.name!r}{did}; options: {', '.join(info.options)} "
                f"(diffsim run {info.name} --help); model parameters look like body.<name>.mass"
            )
    return options, params


_FLEXIBLE_HUB = ScenarioInfo(
    name="flexible-hub",
    description="massless hub turning one flexible link with a root spring and a tip mass (cycloid move); "
    "the mode-shape fitting benchmark",
    module="flexible_hub",
    jobs=("run", "fit"),
    options={
        "L": Option(1.0, "length of the link", unit="m", gt=0.0),
        "rhoA": Option(1.2, "mass per unit length of the link", unit="kg/m", gt=0.0),
        "EI": Option(35.0, "bending stiffness of the link", unit="N m²", gt=0.0),
        "k_root": Option(80.0, "rotational spring between hub and link root (inf: clamped)", unit="N m/rad", ge=0.0,
                         allow_inf=True),
        "tip_mass": Option(0.25, "point mass at the tip", unit="kg", ge=0.0),
        "tip_inertia": Option(1e-3, "rotary inertia of the tip mass about z", unit="kg m²", ge=0.0),
        "n_modes": Option(3, "elastic-boundary modes of the link", ge=1),
        "theta_max": Option(1.0, "hub rotation of the rest-to-rest cycloid", unit="rad"),
        "T_move": Option(0.6, "duration of the cycloid move (then the hub is held)", unit="s", gt=0.0),
        "t1": t1(2.0),
        "sensors": Option([0.2, 0.4, 0.6, 0.8, 1.0], "positions of the deflection sensors along the link, in [0, L]",
                          unit="m", ge=0.0),
        "air_damping": Option(0.0, "air damping γ of the link (force per length per velocity)", unit="kg/(m s)",
                              ge=0.0),
        "n_save": n_save(1001),
        "noise": Option(0.0, "standard deviation of the noise added to the deflections in data.csv", unit="m", ge=0.0),
        "noise_torque": Option(0.0, "standard deviation of the noise added to hub_torque in data.csv", unit="N m",
                               ge=0.0),
        "seed": Option(0, "seed of the noise", ge=0),
        "rtol": rtol(1e-9),
        "atol": atol(1e-9),
        "n_quad": Option(24, "Gauss–Legendre points of the link's modal integrals", ge=2),
        "stiffening": Option(True, "keep the foreshortening term (geometric stiffening) of the link's kinematics"),
        "progress": progress(),
        "plots": plots(),
    },
    aliases={"EI": "beam.link.EI_z", "rhoA": "beam.link.mu", "k_root": "beam.link.modes_y.k_rot_root",
             "tip_mass": "beam.link.tip_mass", "tip_inertia": "beam.link.tip_inertia[2]",
             "air_damping": "beam.link.air_damping"},
    run_only=("noise", "noise_torque", "seed"),
    observables={**{f"w_{x:g}": f"transverse deflection of the link's centre line at x = {x:g} m in the hub frame [m] "
                                  "(one channel w_<x> per entry of sensors, x written with {:g})"
                    for x in (0.2, 0.4, 0.6, 0.8, 1.0)},
                 "hub_torque": "torque that drives the prescribed hub [N m]"},
)  # fmt: skip


_UR5_REACH = ScenarioInfo(
    name="ur5-reach",
    description="plan: a UR5 (URDF) moves its tool 0.43 m in 1 s and stops (the Crocoddyl comparison problem)",
    module="ur5_reach",
    jobs=("plan",),
    options={
        "dt": Option(0.01, "step of the RK4 discretisation (torques held over each step)", unit="s", gt=0.0),
        "horizon": Option(100, "number of steps", ge=1),
        "w_u": Option(1e-3, "weight of the running effort cost w_u |tau - g(q)|^2", unit="1/(N² m² s)", ge=0.0),
        "w_p": Option(1e3, "weight of the final tool-position error w_p |p - p*|^2", unit="1/m²", ge=0.0),
        "w_v": Option(1.0, "weight of the final joint speed w_v |v|^2", unit="s²/rad²", ge=0.0),
        "effort": Option("above-gravity", "running cost of tau - g(q) or of tau", choices=("above-gravity", "total")),
        "quadrature": Option("rk4", "running-cost rule: RK4 stage average (Crocoddyl's) or the knot value",
                             choices=("rk4", "knot")),
        "limits": Option(False, "plan within the torque box TAU_BOX"),
        "method": Option("ddp", "planner (diffsim.plan.solve's method)", choices=("ddp", "shooting", "cem")),
        "max_iter": Option(200, "iteration budget of the planner", ge=0),
        "timing": Option(False, "solve twice, to report compile and solve time apart"),
        "plots": plots(),
    },
)


#: every scenario, by command-line name
CATALOG: dict[str, ScenarioInfo] = {
    s.name: s for s in (_SEED000, _SEED001, _SEED002, _SEED003, _SEED004, _SPINUP, _BALL_DROP, _FLEXIBLE_HUB, _UR5_REACH)
}

__all__ = ["CATALOG", "JOBS", "NORMAL_LAWS", "SOLVERS", "ScenarioInfo", "atol", "check_options", "max_events",
           "max_steps", "n_save", "parse_sets", "plots", "progress", "rtol", "solver", "t1"]
