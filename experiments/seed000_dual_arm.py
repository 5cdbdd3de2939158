"""S0 experiment: the dual-arm space robot of seed 000 with its follower forces, checked three
independent ways.

1. ``diffsim run seed000-dual-arm`` (ABA + adaptive Dopri8 at 1e-13) — the product's path.
2. The same 10 s with the paper's own formulation, the recursive Boltzmann–Hamel equations
   (``diffsim.formulations.forward_dynamics_bh``) in place of ABA.
3. MuJoCo (C) as the external reference in place of the paper's ADAMS: ``mj_forward`` supplies
   the accelerations (follower forces re-applied through ``xfrc_applied`` at every stage) and a
   classical RK4 with h = 1e-3 s and 5e-4 s advances the state (quaternions embedded in R⁴,
   so RK4 keeps order 4); the difference falls with h⁴, i.e. it is the reference's truncation.

Writes ``experiments/results/seed000/``: the scenario's outputs plus ``summary.json`` with the
agreement figures and ``crosscheck.png``. Run: ``python experiments/seed000_dual_arm.py``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim.formulations import forward_dynamics_bh  # noqa: E402
from diffsim.scenarios import SCENARIOS, run_scenario  # noqa: E402
from diffsim.scenarios import seed000  # noqa: E402
from diffsim.scenarios.base import write_json  # noqa: E402


def mujoco_reference(ts, h=1e-3, F1=(1.0, -1.0, 1.0), F2=(2.0, -2.0, -2.0)):
    """World COMs of every body at times ``ts`` from MuJoCo's ``mj_forward`` + RK4."""
    import mujoco

    m = mujoco.MjModel.from_xml_path(str(seed000.DATA))
    d = mujoco.MjData(m)
    sites = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, s) for s in ("a1tip", "a2tip")]
    forces = [np.asarray(F1, float), np.asarray(F2, float)]

    def accel(qpos, qvel):
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_kinematics(m, d)
        d.xfrc_applied[:] = 0.0
        for s, F in zip(sites, forces):
            b = m.site_bodyid[s]
            Fw = d.site_xmat[s].reshape(3, 3) @ F
            d.xfrc_applied[b, :3] += Fw
            d.xfrc_applied[b, 3:] += np.cross(d.site_xpos[s] - d.xipos[b], Fw)
        mujoco.mj_forward(m, d)
        return d.qacc.copy()

    def qpos_rate(qpos, qvel):
        """ẋ of qpos embedded in Rⁿ (quaternions as 4-vectors, q̇ = ½ q ⊗ [0, ω]) so that
        RK4 keeps its 4th order (tangent-space RK4 without a dexp correction is 2nd order)."""
        out = np.zeros(m.nq)
        for j in range(m.njnt):
            a, b = m.jnt_qposadr[j], m.jnt_dofadr[j]
            kind = int(m.jnt_type[j])  # mjtJoint: 0 free, 1 ball, 2 slide, 3 hinge
            if kind == 0:
                out[a:a + 3] = qvel[b:b + 3]
                a, b = a + 3, b + 3
            if kind in (0, 1):
                w, x, y, z = qpos[a:a + 4]
                ox, oy, oz = qvel[b:b + 3]
                out[a:a + 4] = 0.5 * np.array([-x * ox - y * oy - z * oz, w * ox + y * oz - z * oy,
                                               w * oy + z * ox - x * oz, w * oz + x * oy - y * ox])
            else:
                out[a] = qvel[b]
        return out

    def step(qpos, qvel, dt):
        k1 = qpos_rate(qpos, qvel), accel(qpos, qvel)
        k2 = qpos_rate(qpos + 0.5 * dt * k1[0], qvel + 0.5 * dt * k1[1]), accel(qpos + 0.5 * dt * k1[0], qvel + 0.5 * dt * k1[1])
        k3 = qpos_rate(qpos + 0.5 * dt * k2[0], qvel + 0.5 * dt * k2[1]), accel(qpos + 0.5 * dt * k2[0], qvel + 0.5 * dt * k2[1])
        k4 = qpos_rate(qpos + dt * k3[0], qvel + dt * k3[1]), accel(qpos + dt * k3[0], qvel + dt * k3[1])
        qpos = qpos + dt * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) / 6.0
        qvel = qvel + dt * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]) / 6.0
        return qpos, qvel

    qpos, qvel = m.qpos0.copy(), np.zeros(m.nv)
    out, t, k = [], 0.0, 0
    n_steps = int(round(ts[-1] / h))
    save_every = int(round((ts[1] - ts[0]) / h))
    for i in range(n_steps + 1):
        if i % save_every == 0:
            d.qpos[:], d.qvel[:] = qpos, qvel
            mujoco.mj_kinematics(m, d)
            out.append(d.xipos[1:].copy())
            k += 1
        if i < n_steps:
            qpos, qvel = step(qpos, qvel, h)
            t += h
    return np.asarray(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "seed000"))
    args = ap.parse_args()
    out = Path(args.out)
    summary = run_scenario(SCENARIOS["seed000-dual-arm"], out, ["n_save=101"])
    data = np.load(out / "trajectory.npz")
    ts, com = data["t"], data["body_com"]

    m = seed000.model()
    ld = seed000.loads(m)
    t0 = time.perf_counter()
    bh = ds.simulate(m, ds.neutral_configuration(m), jnp.zeros(m.nv), 10.0, loads=ld, solver="dopri8",
                     rtol=1e-13, atol=1e-13, saveat=jnp.asarray(ts), dynamics=forward_dynamics_bh)
    com_bh = np.asarray(bh.body_com())
    t_bh = time.perf_counter() - t0
    t0 = time.perf_counter()
    com_mj = mujoco_reference(ts)
    t_mj = time.perf_counter() - t0
    com_mj_half = mujoco_reference(ts, h=5e-4)  # RK4 truncation error should fall ~16x

    scale = np.abs(com - com[:1]).max()
    cross = {
        "boltzmann_hamel_max_com_diff_m": float(np.abs(com_bh - com).max()),
        "mujoco_rk4_h1e-3_max_com_diff_m": float(np.abs(com_mj - com).max()),
        "mujoco_rk4_h5e-4_max_com_diff_m": float(np.abs(com_mj_half - com).max()),
        "max_com_displacement_m": float(scale),
        "boltzmann_hamel_wall_s": t_bh,
        "mujoco_reference_wall_s": t_mj,
    }
    fig, axs = plt.subplots(1, 2, figsize=(11, 4))
    for k, name in enumerate(data["body_names"]):
        axs[0].plot(ts, np.linalg.norm(com[:, k] - com[0, k], axis=1), label=str(name))
        axs[1].semilogy(ts[1:], np.abs(com_mj - com)[1:, k].max(axis=1) + 1e-18, label=f"{name} vs MuJoCo")
        axs[1].semilogy(ts[1:], np.abs(com_bh - com)[1:, k].max(axis=1) + 1e-18, "--", label=f"{name} vs B–H")
    axs[0].set(xlabel="t [s]", ylabel="|COM displacement| [m]", title="S0: COM displacement (ABA)")
    axs[1].set(xlabel="t [s]", ylabel="max |Δ COM| [m]", title="agreement: MuJoCo RK4 h=1e-3 and Boltzmann–Hamel")
    axs[0].legend(fontsize=7)
    axs[1].legend(fontsize=6, ncol=2)
    for ax in axs:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "crosscheck.png", dpi=120)
    summary["crosscheck"] = cross
    write_json(out / "summary.json", summary)
    print(json.dumps({"momentum_check": summary["momentum_check"], "energy_check": summary["energy_check"], **cross}, indent=2))


if __name__ == "__main__":
    main()
