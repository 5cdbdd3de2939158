"""Ball drop: a sphere released from rest above a plane, bouncing under a compliant normal law in
event mode (located impacts, the law's impact memory exact). The identification benchmark of
``diffsim fit``: its observable ``z`` is the height of the sphere's centre above the plane.

Options: ``mass`` [kg], ``radius`` [m], ``height`` [m] = the gap between the sphere's lowest point
and the plane at ``t = 0``, ``t1`` [s], ``g`` [m/s²], ``law`` (a :func:`diffsim.normal_law` name,
default ``hu-guo``) with ``K`` [N/m^n] and ``c_r``, ``n_save`` samples, ``noise`` (standard
deviation [m] added to the written data, seeded by ``seed``), tolerances.

``diffsim run ball-drop`` writes ``trajectory.npz`` (``t``, ``z``), ``data.csv`` (columns
``t, z``: the heights with the chosen noise, ready for ``diffsim fit ball-drop --data``),
``summary.json`` and ``height.png``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from ..contact.geometry import ContactPoint, Plane
from ..contact.laws import normal_law
from ..contact.model import compliant_contact
from ..model.builder import ModelBuilder
from ..simulation.simulate import simulate
from ..simulation.system import System, set_params
from ..viz.plots import plot_series
from ..catalog import CATALOG
from ..options import defaults
from .base import Scenario, scenario_options, stages

INFO = CATALOG["ball-drop"]
#: the option defaults (declared in diffsim.catalog)
OPTIONS = defaults(INFO.options)

#: the option names that are System parameters (``diffsim fit ball-drop --params K,c_r``)
ALIASES = dict(INFO.aliases)


def height(traj):
    """``z`` [T]: the centre's height above the plane (the plane is z = 0)."""
    return traj.q[:, 2]


OBSERVABLES = {"z": height}


def statistics(traj) -> dict:
    """Per sample for ``diffsim montecarlo``: the number of impacts, the highest rebound (the
    centre's highest saved height after the first impact; NaN when no impact happened before
    ``t1``, or none of the saved times follows it — the summaries and figures leave NaN out and
    count it) and the lowest centre height."""
    first = traj.contact.event_t[0]
    later = traj.t > first
    rebound = jnp.max(jnp.where(later, height(traj), -jnp.inf))
    return {"impacts": traj.contact.impacts[0], "rebound_max_z": jnp.where(jnp.any(later), rebound, jnp.nan),
            "z_min": jnp.min(height(traj))}


def system(options: dict | None = None) -> System:
    """The :class:`~diffsim.System` the options describe (saved on ``n_save`` even samples); the
    options are checked against their declarations (:func:`~diffsim.scenarios.scenario_options`)."""
    o = scenario_options(INFO, options)
    b = ModelBuilder(gravity=(0.0, 0.0, -float(o["g"])))
    r, m = float(o["radius"]), float(o["mass"])
    b.add_body("ball", None, joint="free", mass=m, inertia=(0.4 * m * r * r,) * 3)
    model = b.build()
    law = normal_law(o["law"], K=float(o["K"]), **({} if o["law"] == "linear" else {"c_r": float(o["c_r"])}))
    c = compliant_contact(model, [ContactPoint("ball", radius=r)], [Plane((0.0, 0.0, 1.0), 0.0)], normal=law)
    q0 = jnp.array([0.0, 0.0, r + float(o["height"]), 1.0, 0.0, 0.0, 0.0])
    return System(model, q0, contact=c, t1=float(o["t1"]), rtol=float(o["rtol"]), atol=float(o["atol"]),
                  saveat=int(o["n_save"]), max_events=int(o["max_events"]), throw=False)


def write_csv(path, t, z) -> Path:
    with Path(path).open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "z"])
        for a, b in zip(np.asarray(t), np.asarray(z)):
            w.writerow([repr(float(a)), repr(float(b))])
    return Path(path)


def _run(options, params, out: Path) -> dict:
    s = system(options)
    if params:
        s = set_params(s, {ALIASES.get(k, k): v for k, v in params.items()})
    for _ in stages([options["law"]], options["progress"], "ball drop"):  # compliant contact: no per-step meter
        traj = simulate(s)
        traj.q.block_until_ready()
    t, z = np.asarray(traj.t), np.asarray(height(traj))
    rng = np.random.default_rng(int(options["seed"]))
    zn = z + float(options["noise"]) * rng.standard_normal(z.shape)
    np.savez_compressed(out / "trajectory.npz", t=t, z=z)
    write_csv(out / "data.csv", t, zn)
    figs = []
    if options["plots"]:
        figs.append(plot_series({"z (model)": (t, z)} | ({"data": (t, zn)} if options["noise"] else {}),
                                out / "height.png", xlabel="t [s]", ylabel="height of the centre [m]",
                                title=f"ball drop, {options['law']} K = {options['K']:g}, c_r = {options['c_r']}"))
    ev_t = np.asarray(traj.contact.event_t)
    onsets = [float(x) for x in ev_t[np.isfinite(ev_t)]][::2]
    return {"status": traj.message, "steps": int(traj.num_steps), "events": int(traj.contact.n_events),
            "impact_times_s": onsets, "z_min_m": float(z.min()), "figures": [p.name for p in figs]}


BALL_DROP = Scenario(INFO, run=_run, system=system, observables=OBSERVABLES,
                     statistics=statistics)
