"""Comparison helpers shared by the tests of diffsim.io against the peers (MuJoCo, Pinocchio):
random states, MuJoCo's free-joint velocity frame, Pinocchio's joint layout, errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import diffsim as ds


def random_state(mm, rng):
    """Random (qpos, qvel) for a MuJoCo model: unit quaternions, angles in (−π, π)."""
    qpos = np.zeros(mm.nq)
    for j in range(mm.njnt):
        a, t = mm.jnt_qposadr[j], mm.jnt_type[j]
        if t == 0:  # mjtJoint: 0 free, 1 ball, 2 slide, 3 hinge
            q = rng.normal(size=4)
            qpos[a : a + 3], qpos[a + 3 : a + 7] = rng.uniform(-1, 1, 3), q / np.linalg.norm(q)
        elif t == 1:
            q = rng.normal(size=4)
            qpos[a : a + 4] = q / np.linalg.norm(q)
        elif t == 2:
            qpos[a] = rng.uniform(-0.5, 0.5)
        else:
            qpos[a] = rng.uniform(-np.pi, np.pi)
    return qpos, rng.normal(size=mm.nv)


def free_velocity_map(model, q, v):
    """``T(q)`` with ``qvel = T v`` and ``Ṫ v`` (free blocks: ``R`` and ``R (ω × v_lin)``)."""
    t = model.topology
    T, Tdv = np.eye(model.nv), np.zeros(model.nv)
    for i, jt in enumerate(t.joint_types):
        if jt is ds.JointType.FREE:
            s, qs = t.v_start[i], t.q_start[i]
            R = np.asarray(ds.spatial.quat_to_rot(jnp.asarray(q[qs + 3 : qs + 7])))
            T[s : s + 3, s : s + 3] = R
            Tdv[s : s + 3] = R @ np.cross(v[s + 3 : s + 6], v[s : s + 3])
    return T, Tdv


def release_compiled_programs(max_maps: int = 20_000) -> None:
    """Drop JAX's compiled programs once the process holds ``max_maps`` memory mappings: a loop
    over many models compiles a few programs per model, and XLA's CPU backend maps ~3 regions
    per executable; at Linux's ``vm.max_map_count`` (65530) LLVM fails ("Cannot allocate
    memory") and the process dies (tests/conftest.py releases between modules; a corpus loop
    needs it inside)."""
    try:
        with open("/proc/self/maps") as f:
            n = sum(1 for _ in f)
    except OSError:  # not Linux: no such limit
        return
    if n > max_maps:
        jax.clear_caches()


def rel_err(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def pin_maps(model, pm):
    """Pinocchio configuration from ours, and the permutation of velocity indices
    (``x_pin = x[perm]``; with Pinocchio's mimic joints, ``pm.nv < model.nv``: the mimic
    coordinates, which follow their masters, have no Pinocchio index)."""
    t = model.topology
    perm = np.zeros(pm.nv, int)
    for jid in range(1, pm.njoints):
        if pm.nvs[jid] == 0:  # a mimic joint (Pinocchio >= 3.4, mimic=True)
            continue
        i = t.joint_index(pm.names[jid])
        perm[pm.idx_vs[jid] : pm.idx_vs[jid] + pm.nvs[jid]] = np.arange(t.v_start[i], t.v_start[i] + t.nv_joint[i])

    def q_pin(q):
        out = np.zeros(pm.nq)
        for jid in range(1, pm.njoints):
            i = t.joint_index(pm.names[jid])
            qi, a = np.asarray(q[t.q_slice(i)]), pm.idx_qs[jid]
            if t.joint_types[i] is ds.JointType.FREE:
                out[a : a + 7] = np.concatenate([qi[:3], qi[4:7], qi[3:4]])  # pinocchio quaternion: xyzw
            elif pm.nqs[jid] == 2:  # continuous joint: (cos, sin)
                out[a : a + 2] = np.cos(qi[0]), np.sin(qi[0])
            else:
                out[a : a + pm.nqs[jid]] = qi
        return out

    return q_pin, perm


def assert_same_model(a, b, atol=1e-12):
    assert a.topology == b.topology
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=atol)


def mujoco_forward(mujoco, mm, md, model, qpos, qvel, tau_mj):
    """MuJoCo's ``qacc`` at ``(qpos, qvel, qfrc_applied = tau_mj)`` and diffsim's acceleration at the
    same state, converted to MuJoCo's velocity frame (``qacc = T v̇ + Ṫ v``)."""
    md.qpos[:], md.qvel[:], md.qfrc_applied[:] = qpos, qvel, tau_mj
    mujoco.mj_forward(mm, md)
    q, v = ds.from_mujoco(model, qpos, qvel)
    q, v = np.asarray(q), np.asarray(v)
    T, Tdv = free_velocity_map(model, q, v)
    a = np.asarray(ds.forward_dynamics(model, jnp.asarray(q), jnp.asarray(v), jnp.asarray(T.T @ tau_mj)))
    return T @ a + Tdv, md.qacc.copy()


def mujoco_coupled_forward(mujoco, mm, md, model, qpos, qvel, tau_mj):
    """As :func:`mujoco_forward` for a model whose mimic joints come from MuJoCo equality
    constraints (linear couplings ``a_f = m a_master``, constraint rows ``J``): the state is made
    consistent with the couplings, and MuJoCo's side is its unconstrained ``qacc₀`` (constraints
    disabled) projected by Gauss's principle with its own mass matrix,
    ``a = qacc₀ − M⁻¹Jᵀ (J M⁻¹ Jᵀ)⁻¹ J qacc₀`` — the hard coupling that MuJoCo's soft equality
    approximates (its own ``qacc`` with the equality on keeps a stiff spring's residual)."""
    mim = model.mimic
    J = np.zeros((len(mim), mm.nv))
    for k, (f, master) in enumerate(zip(mim.joints, mim.masters)):
        jf, jm = (mujoco.mj_name2id(mm, mujoco.mjtObj.mjOBJ_JOINT, n) for n in (f, master))
        qpos[mm.jnt_qposadr[jf]] = float(mim.multiplier[k]) * qpos[mm.jnt_qposadr[jm]] + float(mim.offset[k])
        qvel[mm.jnt_dofadr[jf]] = float(mim.multiplier[k]) * qvel[mm.jnt_dofadr[jm]]
        J[k, mm.jnt_dofadr[jf]], J[k, mm.jnt_dofadr[jm]] = 1.0, -float(mim.multiplier[k])
    a, qacc0 = mujoco_forward(mujoco, mm, md, model, qpos, qvel, tau_mj)
    M = np.zeros((mm.nv, mm.nv))
    mujoco.mj_fullM(mm, md, M)
    MiJt = np.linalg.solve(M, J.T)
    return a, qacc0 - MiJt @ np.linalg.solve(J @ MiJt, J @ qacc0)
