"""S2 (seed 002): a planar space robot — a floating base (x0, y0, θ0) with a three-link arm —
whose tip P slides on an infinite plane, contact as a complementarity problem solved by Lemke.

**Reconstruction.** The paper's parameter table is an image that did not survive; this module
defines and documents one (every value is in ``DATA``):

* base: a 1 m square plate, m0 = 200 kg, I0 = m0 (1² + 1²)/12; the shoulder J1 sits at the
  middle of its right face, (0.5, 0) m in the base frame; no gravity (orbit);
* arm: three uniform slender links, L = 1 m, m = 10 kg, I = m L²/12 about their centres;
  joint angles are relative (θ_i measured from link i−1), so q0 = [0, L, 0, π/3, −π/3,
  arccos(3/5)] puts the links at absolute angles 60°, 0°, 53.13° and the tip at (2.6, 2.666) m;
* target: the plane y = y_P(q0) through that tip, free space below (normal −y), μ = 0.3
  (static = kinetic); the tangent is +x, so λ_T < 0 while the tip slides toward +x, as in the
  paper's fig 8.

**Control inputs.** The paper's base forces/torque and joint torques came from a constrained QP
that is not given. Here the base thrusters and joint motors realise a commanded tip force
``F = (F_x, F_y)`` as the generalised force ``S_Bᵀ F_B + S_Jᵀ τ = J_Pᵀ F`` (the base wrench and
the joint torques that hold F at the tip). The schedule follows the paper's account:

* 0 – 0.08 s: press with F_y = 4 N (sticking);
* 0.08 – 0.66 s and 1.89 – 2.43 s: lift the tip ``h_lift`` = 5 mm off the plane and put it
  back (a PD tip tracker on a sin² lift profile that returns with zero velocity);
* 0.66 – 1.89 s: press (ramped from 1 N to 5 N over 0.05 s) and push F_x = +2.6 N > μ·5 N —
  sliding toward +x;
* from 2.43 s: press the same way and pull F_x = −2.7 N: the tip, still moving toward +x,
  slides on, stops (≈ 3 s) and slides back toward −x until 5 s.

``push`` and ``pull`` were chosen (a handful of trial runs) so that the tip's travel is near the
paper's 0.2786 m; the mode sequence does not depend on them.

Results (modes, forces, tip travel) are this reconstruction's; the comparison with the paper
(mode sequence and order of magnitude) is in ``experiments/seed002_space_contact.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..complementarity import OPEN, STICK, LCPStatus, rigid_contact
from ..contact import ContactPoint, Plane
from ..dynamics.kinematics import forward_kinematics, point_jacobian
from ..model.builder import ModelBuilder
from ..simulation.lcp import STEPPERS
from ..simulation.simulate import simulate
from ..simulation.system import System
from ..viz.plots import new_figure, plot_series, save_figure
from ..catalog import CATALOG
from .base import Scenario, stages

DATA = dict(
    m0=200.0, a0=1.0, b0=0.5,  # base mass [kg], side [m], shoulder offset along the base x [m]
    L=1.0, m=10.0,  # link length [m] and mass [kg]
    mu=0.3,
    # control schedule
    t_lift=(0.08, 0.66, 1.89, 2.43), h_lift=5e-3, kp=800.0, kd=80.0,
    press0=4.0, press=5.0, preload=1.0, push=2.6, pull=-2.7, ramp=0.05,
)
PAPER = dict(
    separated=((0.08, 0.66), (1.89, 2.43)),
    sliding_plus_x=((0.66, 1.89), (2.43, 2.80)),
    sliding_minus_x=((2.81, 5.00),),
    normal_force_max_N=8.0,
    tip_travel_m=0.2786,
)
TIP_BODY = "link3"


def model(dtype=None, **overrides):
    """The planar base + three-link arm (gravity off); ``overrides`` replace ``DATA`` values."""
    d = {**DATA, **overrides}
    b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
    a0, m0, L, m = d["a0"], d["m0"], d["L"], d["m"]
    i0 = m0 * (a0**2 + a0**2) / 12.0
    b.add_body("base", None, joint="planar", joint_name="base", mass=m0, inertia=(i0, i0, i0))
    il = m * L**2 / 12.0
    parent, pos = "base", (d["b0"], 0.0, 0.0)
    for i in range(1, 4):
        b.add_body(f"link{i}", parent, joint="revolute", joint_name=f"theta{i}", axis=(0, 0, 1), pos=pos,
                   mass=m, com=(L / 2, 0.0, 0.0), inertia=(il, il, il))
        parent, pos = f"link{i}", (L, 0.0, 0.0)
    return b.build(dtype)


def initial_state(m):
    """q0 = [0, L, 0, π/3, −π/3, arccos(3/5)], q̇0 = 0."""
    L = DATA["L"]
    q0 = jnp.array([0.0, L, 0.0, np.pi / 3, -np.pi / 3, np.arccos(3.0 / 5.0)], m.dtype)
    return q0, jnp.zeros(6, m.dtype)


def tip(m, q, v=None):
    """Tip position [2] (and velocity [2] with ``v``) in the world x–y plane."""
    k = forward_kinematics(m, q)
    b = m.topology.body_index(TIP_BODY)
    p = k.p[b] + k.R[b] @ jnp.array([DATA["L"], 0.0, 0.0], m.dtype)
    if v is None:
        return p[:2]
    J = point_jacobian(m, q, b, jnp.array([DATA["L"], 0.0, 0.0], m.dtype))
    return p[:2], (J @ v)[:2], J[:2]


def plane_height(m):
    return tip(m, initial_state(m)[0])[1]


def contact_model(m, mu=None, formulation="planar"):
    """Rigid contact of the tip with the plane y = y_P (free space below), Coulomb μ."""
    yP = plane_height(m)
    pt = [ContactPoint(TIP_BODY, (DATA["L"], 0.0, 0.0), name="P")]
    pl = [Plane((0.0, -1.0, 0.0), -yP)]
    return rigid_contact(m, pt, pl, mu=DATA["mu"] if mu is None else mu, formulation=formulation,
                          plane_of_motion=(0.0, 0.0, -1.0))


def _smoothstep(t, a, b):
    s = jnp.clip((t - a) / (b - a), 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


def commanded_tip_force(m, t, q, v, yP, d=None):
    """The tip force schedule ``F(t, q, v)`` [2] (module doc)."""
    d = DATA if d is None else d
    t0, t1, t2, t3 = d["t_lift"]
    (px, py), (vx, vy), _ = tip(m, q, v)

    def lift(ta, tb):
        s = jnp.clip((t - ta) / (tb - ta), 0.0, 1.0)
        y_des = yP - d["h_lift"] * jnp.sin(np.pi * s) ** 2
        vy_des = -d["h_lift"] * np.pi / (tb - ta) * jnp.sin(2 * np.pi * s) * ((t > ta) & (t < tb))
        return d["kp"] * (y_des - py) + d["kd"] * (vy_des - vy)

    in1 = (t >= t0) & (t < t1)
    in2 = (t >= t2) & (t < t3)
    t_land = jnp.where(t < t2, t1, t3)
    press = jnp.where(t < t0, d["press0"], d["preload"] + (d["press"] - d["preload"]) * _smoothstep(t, t_land, t_land + d["ramp"]))
    Fy = jnp.where(in1, lift(t0, t1), jnp.where(in2, lift(t2, t3), press))
    Fx = jnp.where(t < t1, 0.0, jnp.where(t < t2, d["push"] * _smoothstep(t, t1, t1 + d["ramp"]),
                                          jnp.where(t < t3, 0.0, d["pull"] * _smoothstep(t, t3, t3 + d["ramp"]))))
    return jnp.stack([Fx, Fy])


def controls(m, yP):
    """Generalised control forces ``J_Pᵀ F(t)``: base wrench (F_Bx, F_By, F_Bθ) and joint torques."""

    def tau(t, q, v):
        F = commanded_tip_force(m, t, q, v, yP)
        J = tip(m, q, v)[2]
        return J.T @ F

    return tau


@eqx.filter_jit
def _simulate(m, rc, q0, v0, yP, t1, dt, method):
    return simulate(System(m, q0, v0, contact=rc, tau=controls(m, yP), t1=t1, solver=STEPPERS[method](dt)))


def run(dt=0.01, t1=5.0, method="acceleration", mu=None, formulation="planar"):
    """Simulate S2; returns ``(model, contact, trajectory)``."""
    m = model()
    rc = contact_model(m, mu, formulation)
    q0, v0 = initial_state(m)
    tr = _simulate(m, rc, q0, v0, plane_height(m), t1, dt, method)
    return m, rc, tr


def results(m, rc, tr) -> dict:
    """Plain arrays for ``trajectory.npz`` (forces are per step, at ``t[:-1]``)."""
    q, v = np.asarray(tr.q), np.asarray(tr.v)
    tipv = jax.vmap(lambda q, v: tip(m, q, v)[:2])(tr.q, tr.v)
    yP = float(plane_height(m))
    tau = jax.vmap(controls(m, yP))(tr.t, tr.q, tr.v)
    F = jax.vmap(lambda t, q, v: commanded_tip_force(m, t, q, v, yP))(tr.t, tr.q, tr.v)
    return dict(
        t=np.asarray(tr.t), q=q, v=v, joint_angles=q[:, 3:], base_xy=q[:, :2], base_theta=q[:, 2],
        tip_xy=np.asarray(tipv[0]), tip_vxy=np.asarray(tipv[1]),
        lambda_N=np.asarray(tr.contact.lambda_N)[:, 0], lambda_T=np.asarray(tr.contact.lambda_T)[:, 0],
        gap=np.asarray(tr.contact.gap)[:, 0], slip=np.asarray(tr.contact.slip)[:, 0],
        mode=np.asarray(tr.contact.mode)[:, 0], lcp_status=np.asarray(tr.contact.lcp_status), controls=np.asarray(tau), tip_force_command=np.asarray(F),
        plane_y=yP,
    )


def contact_intervals(a, min_len=0.0) -> dict:
    """Maximal time intervals of each contact mode: ``separated`` (open or zero normal force),
    ``sticking``, ``sliding_plus_x``, ``sliding_minus_x`` (by the slip direction), each a list of
    ``[start, end]`` in seconds (a step's mode holds over ``[t_k, t_k+1)``)."""
    t = a["t"]
    lam, mode, slip = a["lambda_N"], a["mode"], a["slip"]
    label = np.where((mode == OPEN) | (lam <= 0.0), 0, np.where(mode == STICK, 1, np.where(slip > 0, 2, 3)))
    names = ("separated", "sticking", "sliding_plus_x", "sliding_minus_x")
    out = {n: [] for n in names}
    start = 0
    for k in range(1, len(label) + 1):
        if k == len(label) or label[k] != label[start]:
            if t[k] - t[start] >= min_len:
                out[names[label[start]]].append([float(t[start]), float(t[k])])
            start = k
    return out


def summarize(a) -> dict:
    contact = a["mode"] != OPEN
    return dict(
        intervals=contact_intervals(a),
        tip_travel_m=float(np.ptp(a["tip_xy"][:, 0])),
        tip_path_length_m=float(np.sum(np.linalg.norm(np.diff(a["tip_xy"], axis=0), axis=1))),
        normal_force_max_N=float(a["lambda_N"].max()),
        friction_force_max_abs_N=float(np.abs(a["lambda_T"]).max()),
        penetration_max_m=float(max(0.0, -a["gap"][contact].min())) if contact.any() else 0.0,
        lcp_failures=int(np.sum(a["lcp_status"] != 0)),
    )


def _run(options, params, out: Path) -> dict:
    if params:
        raise ValueError("seed002-space-contact takes no model-parameter overrides; set mu / dt / t1 / method")
    ts = time.perf_counter()
    for _ in stages([options["method"]], options["progress"], "S2 LCP solve"):  # no per-step meter
        m, rc, tr = run(options["dt"], options["t1"], options["method"], options["mu"], options["formulation"])
        jax.block_until_ready(tr.q)
    wall = time.perf_counter() - ts
    a = results(m, rc, tr)
    np.savez_compressed(out / "trajectory.npz", **a)
    s = summarize(a)
    code = int(tr.contact.first_failure)
    s.update(status="success" if code == 0 else LCPStatus(code).name.lower(), lcp_status_code=code,
             sim_wall_time_s=wall, paper=PAPER, data=DATA)
    if options["plots"]:
        _figures(a, out, plot_series)
        s["figures"] = sorted(p.name for p in out.glob("*.png"))
    return s


def _figures(a, out: Path, plot_series):
    t, tf = a["t"], a["t"][:-1]
    plot_series({f"F_B{c}": (t, a["controls"][:, k]) for k, c in enumerate("xyθ")}, out / "fig04_base_controls.png",
                ylabel="F_B [N], [N m]", title="S2: base control forces and torque (paper fig 4)")
    plot_series({f"τ{k + 1}": (t, a["controls"][:, 3 + k]) for k in range(3)}, out / "fig05_joint_torques.png",
                ylabel="τ [N m]", title="S2: joint control torques (paper fig 5)")
    plot_series({f"θ{k + 1}": (t, a["joint_angles"][:, k]) for k in range(3)}, out / "fig06_joint_angles.png",
                ylabel="θ [rad]", title="S2: joint angles (paper fig 6)")
    plot_series({"λ_N": (tf, a["lambda_N"])}, out / "fig07_normal_force.png", ylabel="λ_N [N]",
                title="S2: normal contact force (paper fig 7)")
    plot_series({"λ_T": (tf, a["lambda_T"])}, out / "fig08_tangential_force.png", ylabel="λ_T [N]",
                title="S2: tangential contact force (paper fig 8; < 0 while sliding toward +x)")
    _paths(a, out / "fig09_paths.png")


def _paths(a, path):
    fig, ax = new_figure(figsize=(7.0, 5.0))
    m = model()
    for k in np.linspace(0, len(a["t"]) - 1, 6).astype(int):
        kin = forward_kinematics(m, jnp.asarray(a["q"][k]))
        pts = np.asarray(kin.p)[:, :2]
        tipk = a["tip_xy"][k]
        ax.plot(np.r_[pts[1:, 0], tipk[0]], np.r_[pts[1:, 1], tipk[1]], "-o", color="0.6", ms=3, lw=1)
        ax.plot(*pts[0], "s", color="0.4", ms=6)
    ax.plot(*a["base_xy"].T, label="base centre of mass")
    ax.plot(*a["tip_xy"].T, label="tip P")
    ax.axhline(a["plane_y"], color="k", lw=2, label="target plane")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title("S2: base and tip paths, arm at six instants (paper fig 9)")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    save_figure(fig, path)


SEED002 = Scenario(CATALOG["seed002-space-contact"], run=_run)
