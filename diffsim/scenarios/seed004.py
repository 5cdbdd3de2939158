"""S4 — Canadarm2 (SSRMS) as a 5-link spatial arm with flexible booms (seed 004, SPEC S4).

Zhang Dingguo (2009), *Recursive Lagrange dynamic modelling and simulation of multi-link
spatial flexible robots*, Appl. Math. Mech. 30(10):1202–1212, §3: the SSRMS (7 revolute
joints; shoulder and wrist short and rigid, upper and lower booms long and flexible) is
reduced to a **5-link spatial arm with an elbow offset** — the shoulder pitch joint is kept,
shoulder roll and yaw are frozen — with **3 bending + 3 torsion modes** per flexible boom; it
is *released from a configuration and falls freely* ("在某构型位置释放, 自由下落"), i.e. under
gravity (the paper's potential includes ``V_g = −gᵀ Σ W_i r_i``, eq 44; from rest on orbit
nothing would move). Results: joint rates ω1…ω5 for rigid vs flexible booms (Figs 2–6) and
bending/torsion deflection and rate at the tip of the second flexible link (Figs 7–10).

The paper gives neither the link data, the release configuration nor the duration. diffsim's
choices (``DATA``, ``Q0``, ``t1``) are documented in ``SOURCES``:

* joints and geometry, link masses and inertias: Nguyen & Hughes (1994), *Teleoperation: from
  the Space Shuttle to the Space Station*, Progress in Astronautics and Aeronautics 161 —
  as transcribed in the URDF ``SSRMS_Canadarm2/SSRMS_Canadarm2.urdf`` of
  github.com/vyas-shubham/TraceableRobotModels (links B4…B8 there are links 1…5 here);
* boom diameter 0.35 m, 17.6 m, 1 800 kg (NASA/CSA fact sheets), boom laminate "19 layers of
  high-strength carbon fibre–thermoplastic", 1 641 kg as built (CSA, "The nuts and bolts of
  Canadarm2", asc-csa.gc.ca/eng/iss/canadarm2/nuts_bolts.asp);
* **engineering estimates** (no public source found): the laminate moduli ``E``, ``G`` and
  ply thickness (hence ``EI``, ``GJ``), the split of each boom link into a uniform tube plus
  two equal lumped joint masses (fitted to the link's mass and transverse inertia, read as
  about the COM), the COMs of the wrist links at their segment mid-points, the lumped masses'
  inertias, the release configuration and the duration.

Model (world frame = the shoulder-pitch frame at zero, ``z`` up, gravity ``−9.81 e_z``):
shoulder pitch (``y``) → upper boom (flexible, 7.11 m along ``x``) → elbow offset 0.475 m
along ``−y`` → elbow pitch (``y``) → lower boom (flexible, 7.11 m) → wrist pitch (``y``) →
0.5692 m along ``−y`` → wrist yaw (``z``) → 0.7026 m along ``−z`` → wrist roll (``x``) → LEE
(1.3589 m). Each boom: Euler–Bernoulli clamped–free bending modes in both planes (``n_bend``
per plane) and clamped–free torsion modes ``sin((k − ½)πη)`` (``n_tors``), no damping,
geometric stiffening kept. The rigid variant replaces each boom by one rigid body with the
undeformed boom's exact mass, COM and inertia (sections + lumped masses), so the two arms
differ only by the modal freedom.

Duration (diffsim's choice): 1.5 s. Under 1 g the free arm folds at the elbow and the free
wrist whips up after ≈ 1.2 s; run longer (``t1=5``) and the wrist spins at > 20 rad/s while
the boom tips deflect by ~0.4 m, outside the small-deformation assumption of the paper.

Outputs: ``trajectory.npz`` with ``t``, ``q0``, ``joint_rates_rigid`` / ``joint_rates_flexible``
[T, 5] (``joint_rates`` = flexible), ``joint_angles_*``, the full state ``q_*``/``v_*``, and for the lower boom (the second
flexible link) in its body frame: ``tip_bending`` [T, 2] (end displacement along ``y`` and
``z``), ``tip_torsion`` [T] (end twist about ``x``) and their rates; the upper boom's too.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..beams import TrigHyperbolicModes, euler_bernoulli_modes
from ..dynamics.dispatch import total_energy
from ..model.beam import beam
from ..model.builder import ModelBuilder
from ..model.params import set_params
from ..simulation.simulate import simulate
from ..viz import new_figure, plot_series, save_figure
from ..catalog import CATALOG
from .base import Scenario

# ---------------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------------

#: Nguyen & Hughes (1994) link data (URDF transcription, see module docstring). Inertias are
#: (Ixx, Iyy, Izz) in the link frame [kg m²]; the small products of the boom links (Ixy = 49.5
#: and −40.0 kg m², from the elbow offset) are dropped.
NGUYEN_HUGHES = dict(
    upper_boom=dict(mass=314.88, inertia=(15.41, 2094.71, 2103.19), length=7.11, elbow_offset=0.475),
    lower_boom=dict(mass=279.2, inertia=(9.522, 1966.28, 1966.28), length=7.11),
    wrist_pitch=dict(mass=105.98, inertia=(8.305, 3.061, 8.0386), offset=0.5692),
    wrist_yaw=dict(mass=105.98, inertia=(12.13, 12.13, 3.061), offset=0.7026),
    lee=dict(mass=243.66, inertia=(9.336, 44.41, 44.41), length=1.3589),
)

#: Boom tube and laminate (engineering estimates except the diameter and ply count).
TUBE = dict(
    diameter=0.35,  # m — NASA/CSA fact sheets ("diameter of 35 cm")
    plies=19,  # CSA "nuts and bolts": 19 layers of carbon fibre–thermoplastic
    ply_thickness=0.14e-3,  # m — engineering estimate (typical carbon/PEEK prepreg ply)
    E=80e9,  # Pa — engineering estimate (axial modulus of a mixed 0/±45 carbon layup)
    G=25e9,  # Pa — engineering estimate (in-plane shear modulus of the same layup)
)


def _tube_section():
    r = 0.5 * TUBE["diameter"]
    t = TUBE["plies"] * TUBE["ply_thickness"]
    I = np.pi * r**3 * t  # thin-walled tube, second moment about a diameter
    return r, t, I, 2.0 * I


def _boom_split(mass, I_transverse, L):
    """Uniform tube ``m_b`` + two equal lumped masses ``m_j`` at its ends, fitted to the link's
    mass and transverse inertia about its COM: ``m_b L²/12 + 2 m_j (L/2)² = I``."""
    m_j = (I_transverse - mass * L**2 / 12.0) / (L**2 / 2.0 - L**2 / 6.0)
    return mass - 2.0 * m_j, m_j


def boom_data(which):
    d = NGUYEN_HUGHES[which]
    L = d["length"]
    m_b, m_j = _boom_split(d["mass"], d["inertia"][1], L)
    r, t, I, J = _tube_section()
    mu = m_b / L
    # lumped joint mass: inertia scaled from a single SSRMS joint (wrist pitch link, 105.98 kg),
    # axial direction = boom axis (engineering estimate)
    s = m_j / NGUYEN_HUGHES["wrist_pitch"]["mass"]
    Jj = (s * 3.061, s * 8.17, s * 8.17)
    return dict(L=L, mu=mu, m_tube=m_b, m_joint=m_j, joint_inertia=Jj, EI=TUBE["E"] * I, GJ=TUBE["G"] * J,
                rotary_inertia=(mu * r**2, 0.5 * mu * r**2, 0.5 * mu * r**2))


#: Release configuration [rad] (the paper gives none; diffsim's choice): shoulder pitch −30°
#: (upper boom raised), elbow +75°, wrist pitch +30°, wrist yaw +45°, wrist roll +30°; the arm
#: starts at rest and undeformed.
Q0 = np.radians([-30.0, 75.0, 30.0, 45.0, 30.0])
JOINTS = ("shoulder_pitch", "elbow_pitch", "wrist_pitch", "wrist_yaw", "wrist_roll")

SOURCES = {
    "paper": "Zhang D.-G. (2009) Appl. Math. Mech. 30(10):1202-1212, section 3 (Canadarm2 example, Figs 2-10)",
    "link_masses_inertias_geometry": "Nguyen P.K., Hughes P.C. (1994) Teleoperation: from the Space Shuttle to the Space "
    "Station, Prog. Astronaut. Aeronaut. 161; URDF transcription github.com/vyas-shubham/TraceableRobotModels "
    "SSRMS_Canadarm2/SSRMS_Canadarm2.urdf (links B4-B8, joints 3-7)",
    "boom_diameter_0.35m_length_17.6m_mass_1800kg": "NASA/CSA Canadarm2 fact sheets (e.g. Wikipedia 'Mobile Servicing System')",
    "boom_laminate_19_plies_mass_1641kg": "CSA 'The nuts and bolts of Canadarm2' (asc-csa.gc.ca/eng/iss/canadarm2/nuts_bolts.asp)",
    "engineering_estimates": [
        "laminate E = 80 GPa, G = 25 GPa, ply 0.14 mm (wall 2.66 mm) -> EI, GJ",
        "boom link = uniform tube + two equal lumped end masses fitted to N&H mass and Iyy (read as about the COM)",
        "lumped-mass inertias scaled from one SSRMS joint; boom rotary inertia of a thin-walled tube",
        "wrist-link COMs at segment mid-points; products of inertia dropped",
        "release configuration Q0 (deg: -30, 75, 30, 45, 30), duration 1.5 s, gravity 9.81 m/s^2 along -z of the shoulder-pitch frame",
    ],
}


def _torsion_modes(n):
    """Clamped–free torsion modes ``sin((k − ½)πη)``."""
    k = np.arange(1, n + 1)
    al = (k - 0.5) * np.pi
    z = np.zeros(n)
    return TrigHyperbolicModes(a=np.ones(n), b=z, c=z, d=z, alpha=al, beta=al, ta=z, tb=z, tc=z, td=z)


def boom_beam(which, n_bend=3, n_tors=3, n_quad=24, stiffening=True, EI_scale=1.0):
    b = boom_data(which)
    kw = {}
    if n_bend:
        kw.update(EI_z=b["EI"] * EI_scale, EI_y=b["EI"] * EI_scale, modes_y=euler_bernoulli_modes("cf", n_bend),
                  modes_z=euler_bernoulli_modes("cf", n_bend))
    if n_tors:
        kw.update(GJ=b["GJ"] * EI_scale, modes_torsion=_torsion_modes(n_tors))
    return beam(b["L"], b["mu"], rotary_inertia=b["rotary_inertia"], tip_mass=b["m_joint"],
                tip_inertia=b["joint_inertia"], n_quad=n_quad, stiffening=stiffening, **kw)


def rigid_equivalent(fb, hub_mass=0.0, hub_inertia=(0.0, 0.0, 0.0)):
    """``(mass, com, inertia about the COM)`` of an undeformed flexible link (its sections plus a
    rigid hub part at the origin)."""
    x = np.asarray(fb.x)
    m = np.asarray(fb.m)
    J = np.asarray(fb.J)
    M = m.sum() + hub_mass
    c = (m * x).sum() / M
    I = J.sum(0) + np.diag(hub_inertia)
    d = x - c
    I = I + np.diag([0.0, (m * d**2).sum() + hub_mass * c**2, (m * d**2).sum() + hub_mass * c**2])
    return float(M), np.array([c, 0.0, 0.0]), I


def model(flexible=True, n_bend=3, n_tors=3, gravity=9.81, n_quad=24, stiffening=True, EI_scale=1.0, dtype=None):
    """The 5-link arm; ``flexible=False`` gives rigid booms with identical mass properties."""
    b = ModelBuilder(gravity=(0.0, 0.0, -float(gravity)))
    up, lo = boom_data("upper_boom"), boom_data("lower_boom")
    nh = NGUYEN_HUGHES

    def add_boom(name, parent, joint_name, pos, data, which):
        # a flex body is always built: it defines the rigid equivalent too
        fb = boom_beam(which, max(n_bend, 1), n_tors, n_quad, stiffening, EI_scale)
        if not flexible or (n_bend == 0 and n_tors == 0):
            mass, com, inertia = rigid_equivalent(fb, data["m_joint"], data["joint_inertia"])
            b.add_body(name, parent, joint="revolute", joint_name=joint_name, axis=(0.0, 1.0, 0.0), pos=pos,
                       mass=mass, com=com, inertia=inertia)
            return (data["L"], 0.0, 0.0)
        if n_bend == 0:
            fb = boom_beam(which, 0, n_tors, n_quad, stiffening, EI_scale)
        b.add_body(name, parent, joint="revolute", joint_name=joint_name, axis=(0.0, 1.0, 0.0), pos=pos,
                   mass=data["m_joint"], inertia=data["joint_inertia"], flex=fb)
        return (0.0, 0.0, 0.0)

    end_up = add_boom("upper_boom", None, "shoulder_pitch", (0.0, 0.0, 0.0), up, "upper_boom")
    pos = (end_up[0], -nh["upper_boom"]["elbow_offset"], 0.0)
    end_lo = add_boom("lower_boom", "upper_boom", "elbow_pitch", pos, lo, "lower_boom")
    w = nh["wrist_pitch"]
    b.add_body("wrist_pitch_link", "lower_boom", joint="revolute", joint_name="wrist_pitch", axis=(0.0, 1.0, 0.0),
               pos=end_lo, mass=w["mass"], com=(0.0, -0.5 * w["offset"], 0.0), inertia=w["inertia"])
    y = nh["wrist_yaw"]
    b.add_body("wrist_yaw_link", "wrist_pitch_link", joint="revolute", joint_name="wrist_yaw", axis=(0.0, 0.0, 1.0),
               pos=(0.0, -w["offset"], 0.0), mass=y["mass"], com=(0.0, 0.0, -0.5 * y["offset"]), inertia=y["inertia"])
    e = nh["lee"]
    b.add_body("lee", "wrist_yaw_link", joint="revolute", joint_name="wrist_roll", axis=(1.0, 0.0, 0.0),
               pos=(0.0, 0.0, -y["offset"]), mass=e["mass"], com=(0.5 * e["length"], 0.0, 0.0), inertia=e["inertia"])
    return b.build(dtype)


def initial_state(m, q_joints=Q0):
    q0 = jnp.zeros(m.nq, m.dtype).at[:5].set(jnp.asarray(q_joints, m.dtype))
    return q0, jnp.zeros(m.nv, m.dtype)


def boom_tip(m, q, v, body=1):
    """End displacement ``[y, z]``, twist ``θx`` and their rates of flexible ``body`` (body frame)."""
    fb = m.flex[body]
    d = q[:, m.topology.e_q_slice(body)]
    dd = v[:, m.topology.e_v_slice(body)]
    return dict(bending=d @ fb.end_phi_d[1:].T, bending_rate=dd @ fb.end_phi_d[1:].T,
                torsion=d @ fb.end_phi_r[0], torsion_rate=dd @ fb.end_phi_r[0])


def modal_frequencies(m):
    """Natural frequencies [Hz] of the arm linearised about ``Q0`` with the joints locked (per
    boom: its own clamped modes with the lumped tip mass; diagnostic only)."""
    out = {}
    for i in range(2):
        if m.flex[i] is None:
            continue
        fb = m.flex[i]
        Mee = np.einsum("g,gai,gaj->ij", np.asarray(fb.m), np.asarray(fb.phi_d), np.asarray(fb.phi_d)) + np.einsum(
            "gai,gab,gbj->ij", np.asarray(fb.phi_r), np.asarray(fb.J), np.asarray(fb.phi_r))
        w2 = np.linalg.eigvals(np.linalg.solve(Mee, np.asarray(fb.K)))
        out[m.topology.body_names[i]] = np.sort(np.sqrt(np.abs(w2.real)) / (2 * np.pi)).tolist()
    return out


def run_arm(flexible=True, n_bend=3, n_tors=3, t1=1.5, rtol=1e-8, atol=1e-8, n_save=501, solver="tsit5",
            gravity=9.81, max_steps=400_000, q_joints=Q0, EI_scale=1.0, progress=False):
    """Simulate the free release; returns ``(model, traj, wall_s)``."""
    m = model(flexible, n_bend, n_tors, gravity, EI_scale=EI_scale)
    q0, v0 = initial_state(m, q_joints)
    t = time.perf_counter()
    traj = simulate(m, q0, v0, t1, solver=solver, rtol=rtol, atol=atol, saveat=n_save, max_steps=max_steps,
                    progress=progress)
    traj.q.block_until_ready()
    return m, traj, time.perf_counter() - t


def energy_drift(m, traj):
    E = np.asarray(jax.jit(jax.vmap(lambda q, v: total_energy(m, q, v)))(traj.q, traj.v))
    T0 = float(np.max(np.abs(E - E[0])))
    scale = float(np.max(np.abs(E))) or 1.0
    return E, T0 / scale


def _run(options, params, out: Path) -> dict:

    t0 = time.perf_counter()
    cases = ["flexible", "rigid"] if options["compare"] else (["flexible"] if options["flexible"] else ["rigid"])
    res = {}
    for case in cases:
        m = model(case == "flexible", options["n_bend"], options["n_tors"], options["gravity"])
        if params:
            m = set_params(m, params)
        q0, v0 = initial_state(m, options["q0_deg"] and np.radians(options["q0_deg"]))
        ts = time.perf_counter()
        # the rigid arm is cheap (tens of steps): it runs 100x tighter so that the comparison
        # measures the booms' flexibility, not the rigid run's truncation error
        tol = 1.0 if case == "flexible" else 1e-2
        traj = simulate(m, q0, v0, options["t1"], solver=options["solver"], rtol=options["rtol"] * tol,
                        atol=options["atol"] * tol,
                        saveat=options["n_save"], max_steps=options["max_steps"], progress=options["progress"])
        traj.q.block_until_ready()
        wall = time.perf_counter() - ts
        E, drift = energy_drift(m, traj)
        r = dict(m=m, traj=traj, t=np.asarray(traj.t), w=np.asarray(traj.v[:, :5]), q=np.asarray(traj.q[:, :5]),
                 status=traj.message, steps=int(traj.num_steps), wall=wall, energy=E, drift=drift)
        if case == "flexible":
            r["tip"] = {k: np.asarray(v) for k, v in boom_tip(m, traj.q, traj.v, 1).items()}
            r["tip_upper"] = {k: np.asarray(v) for k, v in boom_tip(m, traj.q, traj.v, 0).items()}
            r["freq"] = modal_frequencies(m)
        res[case] = r
    main = res[cases[0]]
    t = main["t"]
    arrays = dict(t=t, q0=np.asarray(initial_state(main["m"], np.radians(options["q0_deg"]))[0][:5]),
                  joint_names=np.array(JOINTS))
    for k, r in res.items():
        arrays[f"joint_rates_{k}"] = r["w"]
        arrays[f"joint_angles_{k}"] = r["q"]
        arrays[f"total_energy_{k}"] = r["energy"]
        arrays[f"q_{k}"] = np.asarray(r["traj"].q)
        arrays[f"v_{k}"] = np.asarray(r["traj"].v)
    arrays["joint_rates"] = main["w"]
    if "flexible" in res:
        f = res["flexible"]
        arrays.update(tip_bending=f["tip"]["bending"], tip_bending_rate=f["tip"]["bending_rate"],
                      tip_torsion=f["tip"]["torsion"], tip_torsion_rate=f["tip"]["torsion_rate"],
                      upper_tip_bending=f["tip_upper"]["bending"], upper_tip_torsion=f["tip_upper"]["torsion"])
    np.savez_compressed(out / "trajectory.npz", **arrays)

    figs = []
    if options["plots"]:
        fig, axs = new_figure(5, 1, figsize=(7.5, 11), sharex=True)
        for j in range(5):
            for k, r in res.items():
                axs[j].plot(r["t"], r["w"][:, j], "-" if k == "flexible" else "--", label=f"{k} booms",
                            color="C0" if k == "flexible" else "C3")
            axs[j].set_ylabel(f"ω{j + 1} [rad/s]")
            axs[j].set_title(JOINTS[j], fontsize=9)
            axs[j].grid(alpha=0.3)
        handles, labels = axs[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper right", fontsize=8)  # the same two curves in every panel
        axs[-1].set_xlabel("t [s]")
        fig.suptitle("S4 Canadarm2 free release: joint rates, flexible (solid) vs rigid (dashed) booms")
        figs.append(save_figure(fig, out / "joint_rates.png", dpi=110))
        if "flexible" in res:
            tip = res["flexible"]["tip"]
            fig, axs = new_figure(2, 2, figsize=(11, 6), sharex=True)
            axs[0, 0].plot(t, tip["bending"][:, 0] * 1e3, label="y (lateral, along the pitch axes)")
            axs[0, 0].plot(t, tip["bending"][:, 1] * 1e3, label="z (in the pitch plane)")
            axs[0, 0].set(ylabel="tip bending [mm]", title="lower boom tip bending (Fig. 7)")
            axs[0, 0].legend(fontsize=8)
            axs[1, 0].plot(t, tip["bending_rate"][:, 0] * 1e3, label="y")
            axs[1, 0].plot(t, tip["bending_rate"][:, 1] * 1e3, label="z")
            axs[1, 0].legend(fontsize=8)
            axs[1, 0].set(ylabel="tip bending rate [mm/s]", xlabel="t [s]", title="bending rate (Fig. 8)")
            axs[0, 1].plot(t, np.degrees(tip["torsion"]), color="C2")
            axs[0, 1].set(ylabel="tip twist [deg]", title="lower boom tip torsion (Fig. 9)")
            axs[1, 1].plot(t, np.degrees(tip["torsion_rate"]), color="C2")
            axs[1, 1].set(ylabel="tip twist rate [deg/s]", xlabel="t [s]", title="torsion rate (Fig. 10)")
            for ax in axs.flat:
                ax.grid(alpha=0.3)
            fig.suptitle("S4: deformation at the tip of the second flexible link (lower boom), body frame")
            figs.append(save_figure(fig, out / "tip_deformation.png", dpi=110))
        figs.append(plot_series({k: (r["t"], (r["energy"] - r["energy"][0])) for k, r in res.items()},
                                out / "energy.png", ylabel="E(t) − E(0) [J]", title="S4: total energy drift"))

    summary = {
        "status": "success" if all(r["status"] == "success" for r in res.values()) else main["status"],
        "wall_time_s": time.perf_counter() - t0,
        "data_sources": SOURCES,
        "data": {
            "upper_boom": boom_data("upper_boom"),
            "lower_boom": boom_data("lower_boom"),
            "wrist_and_lee": {k: NGUYEN_HUGHES[k] for k in ("wrist_pitch", "wrist_yaw", "lee")},
            "tube": TUBE,
            "total_arm_mass_kg": float(np.sum(np.asarray(main["m"].mass)) + sum(
                float(np.sum(np.asarray(fb.m))) for fb in main["m"].flex if fb is not None)),
        },
        "release_configuration_deg": dict(zip(JOINTS, np.asarray(options["q0_deg"], float).tolist())),
        "cases": {},
        "figures": [Path(f).name for f in figs],
    }
    for k, r in res.items():
        c = {"status": r["status"], "num_steps": r["steps"], "rtol": options["rtol"] * (1.0 if k == "flexible" else 1e-2), "sim_wall_time_s": r["wall"],
             "energy_rel_drift": r["drift"],
             "max_abs_joint_rate_rad_s": dict(zip(JOINTS, np.abs(r["w"]).max(0).tolist())),
             "final_joint_angles_deg": dict(zip(JOINTS, np.degrees(r["q"][-1]).tolist()))}
        if k == "flexible":
            tip = r["tip"]
            c.update(lower_boom_tip_bending_max_m=np.abs(tip["bending"]).max(0).tolist(),
                     lower_boom_tip_bending_rate_max_m_s=np.abs(tip["bending_rate"]).max(0).tolist(),
                     lower_boom_tip_torsion_max_rad=float(np.abs(tip["torsion"]).max()),
                     lower_boom_tip_torsion_rate_max_rad_s=float(np.abs(tip["torsion_rate"]).max()),
                     upper_boom_tip_bending_max_m=np.abs(r["tip_upper"]["bending"]).max(0).tolist(),
                     clamped_boom_frequencies_hz=r["freq"])
        summary["cases"][k] = c
    if len(res) == 2:
        d = np.abs(res["flexible"]["w"] - res["rigid"]["w"]).max(0)
        summary["max_abs_rate_difference_flexible_minus_rigid"] = dict(zip(JOINTS, d.tolist()))
    return summary


SEED004 = Scenario(CATALOG["seed004-canadarm2"], run=_run)
