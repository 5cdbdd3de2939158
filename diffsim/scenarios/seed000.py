"""S0 — dual-arm free-floating space robot (seed 000, Table 1; SPEC S0).

Geometry from ``data/seed000_dual_arm.xml`` (base 400 kg, two arms of two 61.27 kg links on
spherical joints, no gravity). Loads: the paper's follower forces F2(1) = [1, −1, 1] N and
F2(2) = [2, −2, −2] N at the distal ends of the second links, components in the link-2 frame.
Zero initial state, 10 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from .. import spatial as sp
from ..dynamics.dispatch import kinetic_energy
from ..dynamics.energy import spatial_momentum
from ..io import load_mjcf
from ..loads import Loads, site_force
from ..model.model import neutral_configuration
from ..model.params import set_params
from ..simulation.simulate import simulate
from ..simulation.system import System
from ..viz import plot_attitudes, plot_body_com_displacement, plot_conservation
from ..catalog import CATALOG
from .base import Scenario, scenario_options

DATA = Path(__file__).parent / "data" / "seed000_dual_arm.xml"


def model():
    """The S0 model (float64 when x64 is enabled)."""
    return load_mjcf(DATA)


def loads(m, F1=(1.0, -1.0, 1.0), F2=(2.0, -2.0, -2.0)) -> Loads:
    """The paper's follower forces at the tips of link 2 of each arm."""
    return Loads(
        forces=(
            site_force(m, "a1tip", jnp.asarray(F1, m.dtype), frame="local"),
            site_force(m, "a2tip", jnp.asarray(F2, m.dtype), frame="local"),
        )
    )


def balance_integrand(m, ld: Loads):
    """``[angular impulse rate (6: [x×F; F]), power]`` for momentum and work bookkeeping."""

    def f(t, q, v):
        return jnp.concatenate([ld.impulse_rate(m, t, q, v), ld.power(m, t, q, v)[None]])

    return f


def _run(options, params, out: Path) -> dict:
    m = set_params(model(), params) if params else model()
    ld = loads(m, options["F1"], options["F2"])
    q0 = neutral_configuration(m)
    v0 = jnp.zeros(m.nv, m.dtype)
    t0 = time.perf_counter()
    traj = simulate(
        m,
        q0,
        v0,
        options["t1"],
        loads=ld,
        solver=options["solver"],
        rtol=options["rtol"],
        atol=options["atol"],
        saveat=options["n_save"],
        max_steps=options["max_steps"],
        progress=options["progress"],
        integrals=balance_integrand(m, ld),
    )
    traj.q.block_until_ready()
    sim_time = time.perf_counter() - t0
    names = list(m.topology.body_names)
    com = np.asarray(traj.body_com())
    R, p = traj.body_poses()
    quat = np.asarray(jax.vmap(jax.vmap(sp.rot_to_quat))(R))
    # attitude relative to the start, R(0)ᵀ R(t), as intrinsic x-y-z angles: the links start
    # pitched by ±90° in the world frame, where absolute x-y-z angles are singular
    R_rel = jnp.einsum("bji,tbjk->tbik", R[0], R)
    euler = np.asarray(jax.vmap(jax.vmap(sp.rot_to_euler_xyz))(R_rel))
    h = np.asarray(jax.vmap(lambda q, v: spatial_momentum(m, q, v))(traj.q, traj.v))
    T = np.asarray(jax.vmap(lambda q, v: kinetic_energy(m, q, v))(traj.q, traj.v))
    imp = np.asarray(traj.integrals)
    dh = h - h[:1]
    scale_L = max(np.abs(imp[:, :3]).max(), 1e-300)
    scale_P = max(np.abs(imp[:, 3:6]).max(), 1e-300)
    err_L = np.abs(dh[:, :3] - imp[:, :3]).max() / scale_L
    err_P = np.abs(dh[:, 3:] - imp[:, 3:6]).max() / scale_P
    err_W = np.abs((T - T[0]) - imp[:, 6]).max() / max(np.abs(imp[:, 6]).max(), 1e-300)
    t = np.asarray(traj.t)
    np.savez_compressed(
        out / "trajectory.npz",
        t=t,
        q=np.asarray(traj.q),
        v=np.asarray(traj.v),
        body_names=np.array(names),
        body_com=com,
        body_pos=np.asarray(p),
        body_quat=quat,
        attitude_euler_xyz=euler,
        linear_momentum=h[:, 3:],
        angular_momentum=h[:, :3],
        linear_impulse=imp[:, 3:6],
        angular_impulse=imp[:, :3],
        kinetic_energy=T,
        work=imp[:, 6],
    )
    figs = []
    if options["plots"]:
        figs.append(plot_body_com_displacement(t, com, names, out / "com_displacement.png",
                                               title="S0: centre-of-mass displacement of base and links"))
        figs.append(plot_attitudes(t, euler, names, out / "attitudes.png",
                                   title="S0: attitude of base and links relative to t = 0 (intrinsic x-y-z angles)"))
        figs.append(plot_conservation(
            t,
            {
                "linear momentum vs impulse [N s]": (dh[:, 3:], imp[:, 3:6]),
                "angular momentum vs angular impulse [N m s]": (dh[:, :3], imp[:, :3]),
                "kinetic energy vs work [J]": (T - T[0], imp[:, 6]),
            },
            out / "balance.png",
            title="S0: momentum and energy balance",
        ))
    return {
        "status": traj.message,
        "num_steps": int(traj.num_steps),
        "sim_wall_time_s": sim_time,
        "t1": float(t[-1]),
        "body_names": names,
        "final_com_displacement_m": {n: (com[-1, k] - com[0, k]).tolist() for k, n in enumerate(names)},
        "final_attitude_euler_xyz_deg": {n: np.degrees(euler[-1, k]).tolist() for k, n in enumerate(names)},
        "momentum_check": {
            "linear_rel_error": err_P,
            "angular_rel_error": err_L,
            "final_linear_impulse_Ns": imp[-1, 3:6].tolist(),
            "final_angular_impulse_Nms": imp[-1, :3].tolist(),
        },
        "energy_check": {"work_rel_error": err_W, "final_work_J": float(imp[-1, 6])},
        "figures": [str(f.name) for f in figs],
    }


def system(options: dict | None = None) -> System:
    """The S0 :class:`~diffsim.System` the options describe (for ``diffsim montecarlo`` / ``fit``;
    checked against their declarations, :func:`~diffsim.scenarios.scenario_options`)."""
    o = scenario_options(CATALOG["seed000-dual-arm"], options)
    m = model()
    return System(m, neutral_configuration(m), jnp.zeros(m.nv, m.dtype), loads=loads(m, o["F1"], o["F2"]),
                  t1=float(o["t1"]), solver=o["solver"], rtol=float(o["rtol"]), atol=float(o["atol"]),
                  saveat=int(o["n_save"]), max_steps=int(o["max_steps"]))


def statistics(traj) -> dict:
    """Per sample: the base's centre-of-mass drift at ``t1`` and its largest distance [m]."""
    c = traj.body_com()[:, 0]
    d = c - c[0]
    return {"base_drift": d[-1], "base_drift_max": jnp.max(jnp.linalg.norm(d, axis=-1))}


SEED000 = Scenario(CATALOG["seed000-dual-arm"], run=_run, system=system, statistics=statistics)
