#!/usr/bin/env python
"""S0 (seed-000 dual-arm space robot) timing: diffsim vs MuJoCo (C), Pinocchio and MJX.

One script, one run, side by side, on the same MJCF (``diffsim/scenarios/data/seed000_dual_arm.xml``):

  (a) one forward-dynamics call        (b) per evaluation inside an RK4 rollout (4 per step)
  (c) per sample under ``jax.vmap``    (+) compile time of the rollout, gradient / forward cost

The follower forces of S0 are applied in every peer: diffsim through ``seed000.loads`` (site
forces re-evaluated from the state at every evaluation), MuJoCo/MJX through two site-transmission
actuators (``gear`` = the force in the site frame, ``ctrl = 1``) appended to the same MJCF,
Pinocchio as constant wrenches in the link-2 joint frames (exact for follower forces).

Usage (see ``benchmarks/README.md``)::

    python benchmarks/bench_s0.py                 # full CPU float64 run -> results/s0_cpu.json
    python benchmarks/bench_s0.py --quick         # shorter run       -> results/s0_cpu_quick.json
    python benchmarks/bench_s0.py --device gpu --dtype float32 --batch 1048576   # throughput mode

The timing harness interleaves the peers round by round (shuffled order) and reports the median
over rounds of each round's median; the machine may be shared, so the load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer steps, batches and rounds")
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--dtype", choices=("float64", "float32"), default=None,
                   help="float64 (default on cpu) or float32 (default on gpu)")
    p.add_argument("--batch", type=int, default=None,
                   help="throughput mode: vmapped forward dynamics at this batch (default 1048576 on gpu)")
    p.add_argument("--steps", type=int, default=None, help="RK4 steps of the rollout (default 1000; quick 200)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds per section")
    p.add_argument("--batches", default=None, help="comma list for (c); default 1,64,1024,16384")
    p.add_argument("--skip", default="", help="comma list of peers to skip: mujoco,pinocchio,mjx")
    p.add_argument("--no-profile", action="store_true", help="skip the profiling experiments (implied by --quick)")
    p.add_argument("--sync-dispatch", action="store_true",
                   help="set jax_cpu_enable_async_dispatch=False (lower single-call latency on CPU)")
    p.add_argument("--out", default=None, help="output JSON path")
    p.add_argument("--probe-single-call", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.throughput = (a.device == "gpu" or a.batch is not None) and not a.probe_single_call
    if a.dtype is None:
        a.dtype = "float32" if a.device == "gpu" else "float64"
    if a.throughput and a.batch is None:
        a.batch = 1_048_576
    if not a.throughput and not a.probe_single_call and (a.dtype != "float64" or a.device != "cpu"):
        p.error("the side-by-side benchmark is float64 on cpu; use --batch N for throughput mode")
    a.skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    a.no_profile = a.no_profile or a.quick
    return a


ARGS = parse_args()
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
if ARGS.device == "cpu":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    # the same XLA CPU setting as diffsim's CLI and tests (faster compiles and code, see the
    # main README); it applies to every JAX peer here (diffsim and MJX) alike
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", ARGS.dtype == "float64")
if ARGS.sync_dispatch:
    jax.config.update("jax_cpu_enable_async_dispatch", False)
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim.dynamics import configuration as _cfg  # noqa: E402
from diffsim.scenarios import seed000  # noqa: E402

sys.path.insert(0, str(HERE))  # the shared benchmark helpers (benchmarks/harness.py)
from harness import CompileEvents, loadavg, machine_info, mj_set, mj_state, s0_mujoco_models, s0_mujoco_xml  # noqa: E402

# ``ds.integrate`` is shadowed by the ``diffsim.integrate`` subpackage in ``diffsim/__init__``,
# so the configuration-manifold functions are taken from their module.
integrate_q = _cfg.integrate

XML = seed000.DATA
FOLLOWER = (("a1tip", "a1j2", (1.0, -1.0, 1.0)), ("a2tip", "a2j2", (2.0, -2.0, -2.0)))
SITE_IN_LINK2 = np.array([0.0, 0.0, 1.0])  # a1tip / a2tip in the link-2 frame (the MJCF)
DT = 1e-3
# library versions recorded in the meta block (machine_info)
VERSIONS_REPORTED = dict(modules=("mujoco", "pinocchio", "equinox", "diffrax"), distributions=("mujoco-mjx",))


# ======================================================================================
# timing harness
# ======================================================================================

def _stats(xs, scale=1e6):
    xs = sorted(x * scale for x in xs)
    n = len(xs)
    return {
        "median": statistics.median(xs),
        "min": xs[0],
        "q25": xs[max(0, (n - 1) // 4)],
        "q75": xs[min(n - 1, (3 * (n - 1) + 3) // 4)],
        "rounds": n,
    }


def interleave(entries: dict, rounds: int, seed: int = 0) -> dict:
    """``entries[name] = (fn, n_inner, divisor)``: per round (peers in shuffled order) call
    ``fn`` ``n_inner`` times, timing each call; keep the round's median / divisor. Returns
    microsecond statistics over rounds."""
    samples = {k: [] for k in entries}
    rng = random.Random(seed)
    for _ in range(rounds):
        order = list(entries)
        rng.shuffle(order)
        for k in order:
            fn, n, div = entries[k]
            ts = []
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            samples[k].append(statistics.median(ts) / div)
    return {k: _stats(v) for k, v in samples.items()}


def hlo_stats(compiled) -> dict:
    txt = compiled.as_text()
    lines = [ln for ln in txt.splitlines() if " = " in ln and not ln.lstrip().startswith(("ROOT %", "HloModule"))]
    out = {
        "instructions": len(lines) + txt.count("ROOT "),
        "fusions": txt.count(" fusion("),
        "dots": txt.count(" dot("),
        "slices": txt.count(" slice("),
        "concatenates": txt.count(" concatenate("),
        "whiles": txt.count(" while("),
    }
    try:
        ca = compiled.cost_analysis()
        ca = ca[0] if isinstance(ca, (list, tuple)) else ca
        out["flops"] = float(ca.get("flops", float("nan")))
        out["bytes_accessed"] = float(ca.get("bytes accessed", float("nan")))
    except Exception as e:  # pragma: no cover - backend dependent
        out["cost_analysis_error"] = repr(e)
    return out


# ======================================================================================
# the model in each peer
# ======================================================================================

def ds_model(dtype=None):
    m = seed000.model()
    if dtype is not None:
        m = m.astype(dtype)
    return m, seed000.loads(m)


@jax.custom_vjp
def forward_dynamics_ift(m, q, v, tau, f_ext):
    """``ds.forward_dynamics`` with a hand-written reverse mode (profile experiment).

    ``a`` solves ``r = ID(θ, q, v, a, f_ext) − τ = 0`` with ``∂r/∂a = M``, so for a cotangent
    ``ā``: ``λ = M⁻¹ ā`` (ABA with v = 0 and no gravity), ``τ̄ = λ`` and
    ``(θ̄, q̄, v̄, f̄) = −(∂ID/∂(θ, q, v, f))ᵀ λ`` (one VJP of RNEA instead of the transpose of ABA).
    """
    return ds.forward_dynamics(m, q, v, tau, f_ext)


def _fd_ift_fwd(m, q, v, tau, f_ext):
    a = ds.forward_dynamics(m, q, v, tau, f_ext)
    return a, (m, q, v, f_ext, a)


def _fd_ift_bwd(res, a_bar):
    m, q, v, f_ext, a = res
    m0 = eqx.tree_at(lambda x: x.gravity, m, jnp.zeros_like(m.gravity))
    lam = ds.forward_dynamics(m0, q, jnp.zeros_like(v), a_bar)  # M(q)^-1 a_bar
    _, vjp = jax.vjp(lambda m, q, v, f: ds.inverse_dynamics(m, q, v, a, f), m, q, v, f_ext)
    m_bar, q_bar, v_bar, f_bar = vjp(lam)
    return jax.tree_util.tree_map(jnp.negative, m_bar), -q_bar, -v_bar, lam, -f_bar


forward_dynamics_ift.defvjp(_fd_ift_fwd, _fd_ift_bwd)


def make_ds_fns(m, ld, fd_impl=None):
    fd_impl = ds.forward_dynamics if fd_impl is None else fd_impl

    def fd(m, t, q, v):
        """S0 forward dynamics: follower forces from the state, then ABA."""
        tau, f_ext = ld.evaluate(m, t, q, v)
        return fd_impl(m, q, v, tau, f_ext)

    def rk4_step(m, q, v, t, dt):
        """Classical RK4 on the manifold: stage configurations by ``integrate`` (as MuJoCo's
        mjINT_RK4), the step by the weighted mean of the stage velocities."""
        a1 = fd(m, t, q, v)
        v1 = v
        v2 = v + 0.5 * dt * a1
        a2 = fd(m, t + 0.5 * dt, integrate_q(m, q, v1, 0.5 * dt), v2)
        v3 = v + 0.5 * dt * a2
        a3 = fd(m, t + 0.5 * dt, integrate_q(m, q, v2, 0.5 * dt), v3)
        v4 = v + dt * a3
        a4 = fd(m, t + dt, integrate_q(m, q, v3, dt), v4)
        q_next = integrate_q(m, q, (v1 + 2 * v2 + 2 * v3 + v4) / 6.0, dt)
        return q_next, v + dt * (a1 + 2 * a2 + 2 * a3 + a4) / 6.0

    def rk4_step_scanned(m, q, v, t, dt):
        """The same RK4 step with the four stages in a ``lax.scan`` (forward dynamics traced
        and compiled once instead of four times)."""
        dtp = q.dtype
        c = jnp.array([0.0, 0.5, 0.5, 1.0], dtp)
        b = jnp.array([1.0, 2.0, 2.0, 1.0], dtp) / 6.0

        def stage(carry, cb):
            v_prev, a_prev, sv, sa = carry
            ci, bi = cb
            vi = v + ci * dt * a_prev
            ai = fd(m, t + ci * dt, integrate_q(m, q, v_prev, ci * dt), vi)
            return (vi, ai, sv + bi * vi, sa + bi * ai), None

        z = jnp.zeros_like(v)
        (_, _, sv, sa), _ = jax.lax.scan(stage, (v, z, z, z), (c, b))
        return integrate_q(m, q, sv, dt), v + dt * sa

    def make_rollout(step_fn, n):
        def rollout(m, q0, v0):
            def body(carry, k):
                q, v = carry
                return step_fn(m, q, v, k * DT, DT), None

            (q, v), _ = jax.lax.scan(body, (q0, v0), jnp.arange(n, dtype=q0.dtype))
            return q, v

        return rollout

    return fd, rk4_step, rk4_step_scanned, make_rollout


def random_states(m, n, seed=0, vscale=0.5):
    kq, kv = jax.random.split(jax.random.PRNGKey(seed))
    Q = jax.vmap(lambda k: ds.random_configuration(m, k))(jax.random.split(kq, n))
    V = vscale * jax.random.normal(kv, (n, m.nv), m.dtype)
    return Q, V


def mj_xml_with_follower_actuators() -> str:
    return s0_mujoco_xml(XML, FOLLOWER)


def mj_models():
    return s0_mujoco_models(XML, FOLLOWER, DT)


def pin_q(q):
    """MuJoCo/diffsim ``q`` ([w,x,y,z] quaternions) -> Pinocchio ``q`` ([x,y,z,w])."""
    q = np.asarray(q, float)
    out = q.copy()
    for s in (3, 7, 11, 15, 19):  # base quaternion, then the four ball joints
        out[s:s + 4] = q[[s + 1, s + 2, s + 3, s]]
    return out


def pin_model():
    import pinocchio as pin

    pm = pin.buildModelFromMJCF(str(XML))
    # Pinocchio's MJCF parser keeps its default gravity (-9.81 z); S0 has <option gravity="0 0 0">.
    pm.gravity = pin.Motion.Zero()
    F = pin.StdVec_Force()
    for _ in range(pm.njoints):
        F.append(pin.Force.Zero())
    for _, joint, f in FOLLOWER:
        f = np.array(f)
        F[pm.getJointId(joint)] = pin.Force(f, np.cross(SITE_IN_LINK2, f))  # constant in the link frame
    return pm, F


def pin_floor_model():
    """A 1-DoF Pinocchio model: ``aba`` on it measures the Python->C++ binding-call floor."""
    import pinocchio as pin

    pm = pin.Model()
    j = pm.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "j")
    pm.appendBodyToJoint(j, pin.Inertia.FromSphere(1.0, 0.1), pin.SE3.Identity())
    F = pin.StdVec_Force()
    for _ in range(pm.njoints):
        F.append(pin.Force.Zero())
    return pm, F


def mj_to_ds_qacc(q, v, a):
    """diffsim ``v̇`` -> MuJoCo ``qacc`` (free joint: ``R (v̇_lin + ω × v_lin)``)."""
    a = np.asarray(a, float).copy()
    R = np.asarray(ds.spatial.quat_to_rot(jnp.asarray(q[3:7])))
    v = np.asarray(v, float)
    a[:3] = R @ (a[:3] + np.cross(v[3:6], v[:3]))
    return a


# ======================================================================================
# the side-by-side benchmark (float64, CPU)
# ======================================================================================

def bench(args) -> dict:
    quick = args.quick
    steps = args.steps or (200 if quick else 1000)
    rounds = args.rounds or (5 if quick else 9)
    batches = [int(b) for b in args.batches.split(",")] if args.batches else ([1, 1024] if quick else [1, 64, 1024, 16384])
    use_mj = "mujoco" not in args.skip
    use_pin = "pinocchio" not in args.skip
    use_mjx = "mjx" not in args.skip
    res: dict = {"meta": {"load_average_start": loadavg(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                          "mode": "quick" if quick else "full", "steps": steps, "dt": DT, "rounds": rounds,
                          "batches": batches, "dtype": "float64", "device": "cpu"}}
    res["meta"].update(machine_info(**VERSIONS_REPORTED))
    notes = res["notes"] = []
    t_start = time.perf_counter()
    ev = CompileEvents()

    def log(*a):
        print(f"[{time.perf_counter() - t_start:7.1f}s]", *a, flush=True)

    # ---- peers -------------------------------------------------------------------
    m, ld = ds_model()
    fd, rk4_step, rk4_step_scanned, make_rollout = make_ds_fns(m, ld)
    Qb, Vb = random_states(m, max(batches + [8]), seed=0)
    q1, v1 = Qb[0], Vb[0]
    tau1, fext1 = ld.evaluate(m, 0.0, q1, v1)
    q0s0 = ds.neutral_configuration(m)  # S0: zero initial state
    v0s0 = jnp.zeros(m.nv, m.dtype)
    a_ds = np.asarray(ds.forward_dynamics(m, q1, v1, tau1, fext1))
    qpos1, qvel1 = (np.asarray(x) for x in ds.to_mujoco(m, q1, v1))

    mjx = pin = None
    if use_mj or use_mjx:
        try:
            import mujoco
            from mujoco import rollout as mj_rollout

            mjm = mj_models()
            mjd = mujoco.MjData(mjm["rk4"])
            mj_set(mujoco, mjm["rk4"], mjd, qpos1, qvel1)
            mujoco.mj_forward(mjm["rk4"], mjd)
            res.setdefault("correctness", {})["mujoco_max_abs_qacc_diff"] = float(
                np.max(np.abs(mjd.qacc - mj_to_ds_qacc(q1, v1, a_ds))))
        except Exception as e:
            notes.append(f"MuJoCo unavailable: {e!r}")
            use_mj = use_mjx = False
    if use_mjx:
        try:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from mujoco import mjx
            mjx_m = mjx.put_model(mjm["rk4"])
            mjx_d = mjx.put_data(mjm["rk4"], mjd)
        except Exception as e:
            notes.append(f"MJX unavailable ({e!r}); no MJX numbers")
            use_mjx = False
    if use_pin:
        try:
            import pinocchio

            pin = pinocchio
            pm, pF = pin_model()
            pdat = pm.createData()
            pm1, pF1 = pin_floor_model()
            pdat1 = pm1.createData()
            pq1, pv1, ptau = pin_q(q1), np.asarray(v1, float), np.zeros(pm.nv)
            a_pin = pin.aba(pm, pdat, pq1, pv1, ptau, pF)
            res.setdefault("correctness", {})["pinocchio_max_abs_ddq_diff"] = float(np.max(np.abs(a_pin - a_ds)))
        except Exception as e:
            notes.append(f"Pinocchio unavailable: {e!r}")
            use_pin = False
    notes.append("State conventions: q = MuJoCo qpos (Pinocchio: quaternions reordered to [x,y,z,w]); diffsim v and "
                 "Pinocchio v have the free-joint linear velocity in the base frame, MuJoCo qvel in the world frame "
                 "(converted with diffsim.to_mujoco). Pinocchio's MJCF parser ignores <option gravity>: set to zero.")

    # ---- (a) one forward-dynamics call ---------------------------------------------
    log("(a) compile")
    fd_jit = jax.jit(ds.forward_dynamics)
    t_first, stages, _ = ev.first_call(fd_jit, m, q1, v1, tau1, fext1)
    res["compile_s"] = {"diffsim_forward_dynamics_first_call": t_first, "diffsim_forward_dynamics_stages": stages}
    noop = jax.jit(lambda m, q, v, tau, f: v + 0.0)
    noop(m, q1, v1, tau1, fext1).block_until_ready()
    ent = {
        "diffsim jit(forward_dynamics)": (lambda: fd_jit(m, q1, v1, tau1, fext1).block_until_ready(), 200, 1),
        "diffsim jit dispatch floor (no-op with same args)": (lambda: noop(m, q1, v1, tau1, fext1).block_until_ready(), 200, 1),
    }
    if use_mj:
        mjd_a = mujoco.MjData(mjm["rk4"])
        mj_set(mujoco, mjm["rk4"], mjd_a, qpos1, qvel1)
        n_c = 2000 if not quick else 500
        s1 = mj_state(mujoco, mjm["euler"], mjd_a)[None]
        ctrl_c = np.ones((1, n_c, mjm["euler"].nu))
        out_c = np.empty((1, n_c, s1.shape[1]))
        ro0 = mj_rollout.Rollout(nthread=0)
        datas_c = [mujoco.MjData(mjm["euler"])]
        ent["mujoco mj_forward (from Python)"] = (lambda: mujoco.mj_forward(mjm["rk4"], mjd_a), 2000, 1)
        ent["mujoco mj_step Euler in C rollout (per step)"] = (
            lambda: ro0.rollout(mjm["euler"], datas_c, s1, ctrl_c, nstep=n_c, state=out_c), 1, n_c)
    if use_pin:
        ent["pinocchio aba (from Python)"] = (lambda: pin.aba(pm, pdat, pq1, pv1, ptau, pF), 2000, 1)
        ent["pinocchio aba on a 1-DoF model (binding-call floor)"] = (
            lambda: pin.aba(pm1, pdat1, np.zeros(1), np.zeros(1), np.zeros(1), pF1), 2000, 1)
    if use_mjx:
        log("(a) MJX compile")
        mjx_fwd = jax.jit(mjx.forward)
        t_first, stages, out = ev.first_call(mjx_fwd, mjx_m, mjx_d)
        res["compile_s"]["mjx_forward_first_call"] = t_first
        res.setdefault("correctness", {})["mjx_max_abs_qacc_diff"] = float(np.max(np.abs(np.asarray(out.qacc) - mjd.qacc)))
        ent["mjx jit(mjx.forward)"] = (lambda: mjx_fwd(mjx_m, mjx_d).qacc.block_until_ready(), 20, 1)
    log("(a) timing")
    res["a_single_call_us"] = interleave(ent, rounds=max(rounds, 9), seed=1)

    # ---- (b) RK4 rollout, per evaluation -----------------------------------------
    log("(b) diffsim rollout compile")
    roll = jax.jit(make_rollout(rk4_step, steps))
    t_first_roll, stages_roll, (qT, vT) = ev.first_call(roll, m, q0s0, v0s0)
    res["compile_s"]["diffsim_rollout_first_call"] = t_first_roll
    res["compile_s"]["diffsim_rollout_stages"] = stages_roll
    ent = {"diffsim lax.scan RK4 (jit)": (lambda: jax.block_until_ready(roll(m, q0s0, v0s0)), 1, 4 * steps)}
    # the library's own fixed-step integrator: RK4 with quaternions embedded (order 4 on SO(3)),
    # stages in an inner scan, all steps saved
    ds_roll = jax.jit(lambda m, q0, v0: (lambda tr: (tr.q, tr.v))(ds.rollout(m, q0, v0, DT, steps, loads=ld)))
    t_first_dr, stages_dr, _ = ev.first_call(ds_roll, m, q0s0, v0s0)
    res["compile_s"]["diffsim_ds_rollout_first_call"] = t_first_dr
    ent["diffsim ds.rollout (library RK4, stages in a scan)"] = (
        lambda: jax.block_until_ready(ds_roll(m, q0s0, v0s0)), 1, 4 * steps)
    roll_s = None
    if not args.no_profile:
        log("(b) diffsim rollout with scanned stages, compile")
        roll_s = jax.jit(make_rollout(rk4_step_scanned, steps))
        t_first_s, stages_s, (qTs, vTs) = ev.first_call(roll_s, m, q0s0, v0s0)
        res["compile_s"]["diffsim_rollout_scanned_stages_first_call"] = t_first_s
        res["compile_s"]["diffsim_rollout_scanned_stages_stages"] = stages_s
        res.setdefault("correctness", {})["rk4_scanned_vs_unrolled_max_abs_diff"] = float(
            max(jnp.max(jnp.abs(qTs - qT)), jnp.max(jnp.abs(vTs - vT))))
        ent["diffsim lax.scan RK4, stages in a scan (profile variant)"] = (
            lambda: jax.block_until_ready(roll_s(m, q0s0, v0s0)), 1, 4 * steps)
    if use_mj:
        mjd_b = mujoco.MjData(mjm["rk4"])
        mj_set(mujoco, mjm["rk4"], mjd_b, np.asarray(q0s0), np.zeros(mjm["rk4"].nv))
        s0 = mj_state(mujoco, mjm["rk4"], mjd_b)[None]
        ctrl_b = np.ones((1, steps, mjm["rk4"].nu))
        out_b = np.empty((1, steps, s0.shape[1]))
        datas_b = [mujoco.MjData(mjm["rk4"])]
        ro0.rollout(mjm["rk4"], datas_b, s0, ctrl_b, nstep=steps, state=out_b)
        # final state vs diffsim's rollout (same RK4 scheme; a consistency check, not a timing)
        qpos_T = out_b[0, -1, 1:1 + mjm["rk4"].nq]
        qvel_T = out_b[0, -1, 1 + mjm["rk4"].nq:1 + mjm["rk4"].nq + mjm["rk4"].nv]
        q_ds_T, v_ds_T = ds.to_mujoco(m, qT, vT)
        res.setdefault("correctness", {})["rk4_rollout_final_state_vs_mujoco_max_abs_diff"] = float(
            max(np.max(np.abs(qpos_T - np.asarray(q_ds_T))), np.max(np.abs(qvel_T - np.asarray(v_ds_T)))))

        def mj_py_loop():
            mj_set(mujoco, mjm["rk4"], mjd_b, np.asarray(q0s0), np.zeros(mjm["rk4"].nv))
            for _ in range(steps):
                mujoco.mj_step(mjm["rk4"], mjd_b)

        ent["mujoco mjINT_RK4 in C rollout"] = (
            lambda: ro0.rollout(mjm["rk4"], datas_b, s0, ctrl_b, nstep=steps, state=out_b), 1, 4 * steps)
        ent["mujoco mj_step RK4 loop from Python"] = (mj_py_loop, 1, 4 * steps)
    if use_pin:
        n_pin = max(steps // 5, 50)

        def pin_loop():
            q, v = pin_q(q0s0), np.zeros(pm.nv)
            for _ in range(n_pin):
                a1 = pin.aba(pm, pdat, q, v, ptau, pF).copy()  # aba returns a view of data.ddq
                v2 = v + 0.5 * DT * a1
                a2 = pin.aba(pm, pdat, pin.integrate(pm, q, 0.5 * DT * v), v2, ptau, pF).copy()
                v3 = v + 0.5 * DT * a2
                a3 = pin.aba(pm, pdat, pin.integrate(pm, q, 0.5 * DT * v2), v3, ptau, pF).copy()
                v4 = v + DT * a3
                a4 = pin.aba(pm, pdat, pin.integrate(pm, q, DT * v3), v4, ptau, pF)
                q = pin.integrate(pm, q, DT * (v + 2 * v2 + 2 * v3 + v4) / 6.0)
                v = v + DT * (a1 + 2 * a2 + 2 * a3 + a4) / 6.0
            return q

        ent["pinocchio RK4 loop from Python (aba + integrate)"] = (pin_loop, 1, 4 * n_pin)
    if use_mjx:
        log("(b) MJX rollout compile")

        def mjx_rollout(mx, dx):
            def body(d, _):
                return mjx.step(mx, d), None

            return jax.lax.scan(body, dx, None, length=steps)[0]

        mjx_d0 = mjx.put_data(mjm["rk4"], mjd_b)
        mjx_roll = jax.jit(mjx_rollout)
        t_first_mjx, stages_mjx, _ = ev.first_call(mjx_roll, mjx_m, mjx_d0)
        res["compile_s"]["mjx_rollout_first_call"] = t_first_mjx
        res["compile_s"]["mjx_rollout_stages"] = stages_mjx
        ent["mjx lax.scan mjx.step (mjINT_RK4)"] = (lambda: mjx_roll(mjx_m, mjx_d0).qpos.block_until_ready(), 1, 4 * steps)
    log("(b) timing")
    res["b_rk4_per_eval_us"] = interleave(ent, rounds=rounds, seed=2)
    steady_roll = res["b_rk4_per_eval_us"]["diffsim lax.scan RK4 (jit)"]["median"] * 1e-6 * 4 * steps
    res["compile_s"]["diffsim_rollout_first_minus_steady"] = t_first_roll - steady_roll
    if roll_s is not None:
        st = res["b_rk4_per_eval_us"]["diffsim lax.scan RK4, stages in a scan (profile variant)"]["median"] * 1e-6 * 4 * steps
        res["compile_s"]["diffsim_rollout_scanned_stages_first_minus_steady"] = t_first_s - st
    if use_mjx:
        st = res["b_rk4_per_eval_us"]["mjx lax.scan mjx.step (mjINT_RK4)"]["median"] * 1e-6 * 4 * steps
        res["compile_s"]["mjx_rollout_first_minus_steady"] = t_first_mjx - st

    # ---- gradient / forward --------------------------------------------------------
    # The rollout with RK4 stages in a scan (identical numbers, see correctness): its reverse
    # mode compiles ~3x faster than the unrolled one's (~160 s here), the rest is the same.
    log("(grad) compile")
    v0g = 0.01 * jnp.ones(m.nv, m.dtype)

    def make_loss(step_fn):
        rollout_fn = make_rollout(step_fn, steps)

        def loss(mass, v0):
            mm = eqx.tree_at(lambda x: x.mass, m, mass)
            qT_, vT_ = rollout_fn(mm, q0s0, v0)
            return jnp.sum(vT_ ** 2) + jnp.sum((qT_ - q0s0) ** 2)

        return loss

    grad_variants = {"autodiff": rk4_step_scanned}
    if not args.no_profile:
        grad_variants["custom_vjp forward dynamics (IFT + RNEA VJP, profile variant)"] = \
            make_ds_fns(m, ld, forward_dynamics_ift)[2]
    ent, grads = {}, {}
    res["gradient"] = {"steps": steps, "rollout": "RK4, stages in a lax.scan, S0 initial state, v0 = 0.01",
                       "loss": "sum(v_T^2) + sum((q_T - q_0)^2)", "wrt": "model.mass [nb], v0 [nv]"}
    for name, step_fn in grad_variants.items():
        loss = make_loss(step_fn)
        loss_f = jax.jit(loss)
        loss_g = jax.jit(jax.grad(loss, argnums=(0, 1)))
        t_lf, _, _ = ev.first_call(loss_f, m.mass, v0g)
        t_lg, stages_g, g = ev.first_call(loss_g, m.mass, v0g)
        res["compile_s"][f"loss_forward_first_call [{name}]"] = t_lf
        res["compile_s"][f"loss_grad_first_call [{name}]"] = t_lg
        res["compile_s"][f"loss_grad_stages [{name}]"] = stages_g
        grads[name] = g
        ent[f"forward: jit(loss) [{name}]"] = (lambda f=loss_f: jax.block_until_ready(f(m.mass, v0g)), 1, 1)
        ent[f"reverse: jit(grad(loss)) [{name}]"] = (lambda f=loss_g: jax.block_until_ready(f(m.mass, v0g)), 1, 1)
        if name == "autodiff":
            # central finite difference on one mass: the gradient being timed is the right one
            h = 1e-4 * float(m.mass[2])
            e2 = jnp.zeros_like(m.mass).at[2].set(h)
            fdiff = (float(loss_f(m.mass + e2, v0g)) - float(loss_f(m.mass - e2, v0g))) / (2 * h)
            res.setdefault("correctness", {})["grad_mass2_rel_err_vs_central_fd"] = \
                abs(float(g[0][2]) - fdiff) / max(abs(fdiff), 1e-300)
    if len(grads) > 1:
        g0, g1 = list(grads.values())[:2]
        res.setdefault("correctness", {})["grad_custom_vjp_vs_autodiff_max_rel_diff"] = max(
            float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(a))) for a, b in zip(g0, g1))
    log("(grad) timing")
    gr = interleave(ent, rounds=rounds, seed=3)
    res["gradient"]["times_ms"] = {k: {kk: (vv / 1e3 if kk != "rounds" else vv) for kk, vv in st.items()}
                                   for k, st in gr.items()}
    for name in grad_variants:
        key = "grad_over_forward" if name == "autodiff" else f"grad_over_forward [{name}]"
        res["gradient"][key] = (gr[f"reverse: jit(grad(loss)) [{name}]"]["median"]
                                / gr[f"forward: jit(loss) [{name}]"]["median"])
        if name != "autodiff":
            res["gradient"][f"grad_speedup [{name}]"] = (gr["reverse: jit(grad(loss)) [autodiff]"]["median"]
                                                         / gr[f"reverse: jit(grad(loss)) [{name}]"]["median"])

    # ---- (c) vmap, per sample ------------------------------------------------------
    res["c_vmap_per_sample_us"] = {}
    fd_v = jax.jit(jax.vmap(fd, in_axes=(None, None, 0, 0)))
    if use_mjx:
        def mjx_qacc(mx, qpos, qvel):
            return mjx.forward(mx, mjx_d.replace(qpos=qpos, qvel=qvel)).qacc

        mjx_v = jax.jit(jax.vmap(mjx_qacc, in_axes=(None, 0, 0)))
    if use_mj:
        nthread = os.cpu_count() or 1
        ro_mt = mj_rollout.Rollout(nthread=nthread)
        datas_mt = [mujoco.MjData(mjm["euler"]) for _ in range(nthread)]
        Qmj, Vmj = jax.vmap(lambda q, v: ds.to_mujoco(m, q, v))(Qb, Vb)
        Qmj, Vmj = np.asarray(Qmj), np.asarray(Vmj)
        d_tmp = mujoco.MjData(mjm["euler"])
        S_all = []
        for i in range(Qmj.shape[0]):
            mj_set(mujoco, mjm["euler"], d_tmp, Qmj[i], Vmj[i])
            S_all.append(mj_state(mujoco, mjm["euler"], d_tmp))
        S_all = np.stack(S_all)
    for B in batches:
        log(f"(c) batch {B}: compile")
        Q, V = Qb[:B], Vb[:B]
        t_first_v, _, out = ev.first_call(fd_v, m, 0.0, Q, V)
        res["compile_s"][f"diffsim_vmap_fd_first_call_B{B}"] = t_first_v
        ent = {"diffsim jit(vmap(fd))": (lambda Q=Q, V=V: fd_v(m, 0.0, Q, V).block_until_ready(), 1, B)}
        if use_mjx:
            Qm, Vm = jnp.asarray(Qmj[:B]), jnp.asarray(Vmj[:B])
            t_first_m, _, out_m = ev.first_call(mjx_v, mjx_m, Qm, Vm)
            res["compile_s"][f"mjx_vmap_forward_first_call_B{B}"] = t_first_m
            ent["mjx jit(vmap(mjx.forward))"] = (lambda Qm=Qm, Vm=Vm: mjx_v(mjx_m, Qm, Vm).block_until_ready(), 1, B)
        if use_mj:
            S = S_all[:B]
            ctrl1 = np.ones((B, 1, mjm["euler"].nu))
            out1 = np.empty((B, 1, S.shape[1]))
            ent[f"mujoco rollout, {nthread} threads, 1 Euler step"] = (
                lambda S=S, ctrl1=ctrl1, out1=out1: ro_mt.rollout(mjm["euler"], datas_mt, S, ctrl1, nstep=1, state=out1), 1, B)
        if B <= 64:  # short calls: several per round
            ent = {k: (f, 20 if B == 1 else 5, d) for k, (f, n, d) in ent.items()}
        inner_rounds = rounds if B <= 1024 else max(3, rounds // 2)
        log(f"(c) batch {B}: timing")
        r = interleave(ent, rounds=inner_rounds, seed=10 + B)
        res["c_vmap_per_sample_us"][str(B)] = r
    if use_mj:
        notes.append(f"(c) MuJoCo: mujoco.rollout with a {nthread}-thread pool, one mjINT_EULER step per sample "
                     "(mj_forward + Euler update + state copy); the single-thread per-call cost x batch is (a)'s "
                     "'mj_step Euler in C rollout'.")

    # ---- profile ---------------------------------------------------------------------
    if not args.no_profile:
        log("profile")
        prof = res["profile"] = {}
        # AOT lower/compile hits the in-memory cache of the calls above: no recompilation
        try:
            prof["forward_dynamics_hlo"] = hlo_stats(fd_jit.lower(m, q1, v1, tau1, fext1).compile())
            prof["fd_with_loads_vmap_B1024_hlo"] = hlo_stats(fd_v.lower(m, 0.0, Qb[:1024], Vb[:1024]).compile()) if Qb.shape[0] >= 1024 else None
            prof["rk4_rollout_hlo"] = hlo_stats(roll.lower(m, q0s0, v0s0).compile())
            if roll_s is not None:
                prof["rk4_rollout_scanned_stages_hlo"] = hlo_stats(roll_s.lower(m, q0s0, v0s0).compile())
        except Exception as e:
            prof["hlo_error"] = repr(e)
        from _dot_rewrite import without_dots

        fd_nodot = without_dots(lambda m, q, v: fd(m, 0.0, q, v), m, q1, v1)
        # batched variants: dots unrolled (B = 1024) and chunking with lax.map (largest batch)
        log("profile: batched variants")
        ent = {}
        if Qb.shape[0] >= 1024:
            fd_v_nodot = jax.jit(jax.vmap(fd_nodot, in_axes=(None, 0, 0)))
            ev.first_call(fd_v_nodot, m, Qb[:1024], Vb[:1024])
            ent["jit(vmap(fd)) B=1024"] = (lambda: fd_v(m, 0.0, Qb[:1024], Vb[:1024]).block_until_ready(), 1, 1024)
            ent["jit(vmap(fd)), dots unrolled (jaxpr rewrite) B=1024"] = (
                lambda: fd_v_nodot(m, Qb[:1024], Vb[:1024]).block_until_ready(), 1, 1024)
        Bmax = max(batches)
        if Bmax >= 4096:
            chunk = 256
            fd_chunk = jax.jit(lambda m, Q, V: jax.lax.map(lambda x: fd(m, 0.0, *x), (Q, V), batch_size=chunk))
            ev.first_call(fd_chunk, m, Qb[:Bmax], Vb[:Bmax])
            ent[f"jit(vmap(fd)) B={Bmax}"] = (lambda: fd_v(m, 0.0, Qb[:Bmax], Vb[:Bmax]).block_until_ready(), 1, Bmax)
            ent[f"jit(lax.map(fd, batch_size={chunk})) B={Bmax}"] = (
                lambda: fd_chunk(m, Qb[:Bmax], Vb[:Bmax]).block_until_ready(), 1, Bmax)
        if ent:
            prof["batched_variants_per_sample_us"] = interleave(ent, rounds=rounds, seed=99)
        # in-scan cost of the pieces of one evaluation (loads vs ABA)
        log("profile: pieces in a scan")
        Nscan = 2000 if not quick else 500

        def scan_of(f):
            def run(m, q, v):
                def body(c, _):
                    q, v = c
                    return f(m, q, v), None

                return jax.lax.scan(body, (q, v), None, length=Nscan)[0]

            return jax.jit(run)

        # q changes every iteration (else XLA hoists the q-only half of ABA out of the loop)
        pieces = {
            "integrate only": scan_of(lambda m, q, v: (integrate_q(m, q, v, 1e-6), v)),
            "integrate + forward_dynamics (tau, f_ext fixed)": scan_of(
                lambda m, q, v: (integrate_q(m, q, v, 1e-9), v + 1e-9 * ds.forward_dynamics(m, q, v, tau1, fext1))),
            "integrate + loads.evaluate + forward_dynamics": scan_of(
                lambda m, q, v: (integrate_q(m, q, v, 1e-9), v + 1e-9 * fd(m, 0.0, q, v))),
            "integrate + loads.evaluate + forward_dynamics, dots unrolled (jaxpr rewrite)": scan_of(
                lambda m, q, v: (integrate_q(m, q, v, 1e-9), v + 1e-9 * fd_nodot(m, q, v))),
        }
        ent = {}
        for k, f in pieces.items():
            ev.first_call(f, m, q1, v1)
            ent[k] = (lambda f=f: jax.block_until_ready(f(m, q1, v1)), 1, Nscan)
        prof["in_scan_per_iteration_us"] = interleave(ent, rounds=rounds, seed=7)
        prof["in_scan_hlo"] = {k: hlo_stats(f.lower(m, q1, v1).compile()) for k, f in pieces.items()}
        # single-call latency with JAX's asynchronous CPU dispatch on (default) and off: the
        # flag is read when the CPU client starts, hence fresh processes
        log("profile: single-call probes (subprocesses)")
        prof["single_call_us"] = {}
        for label, extra in (("async dispatch (default)", []), ("sync dispatch", ["--sync-dispatch"])):
            try:
                cp = subprocess.run([sys.executable, __file__, "--probe-single-call", *extra],
                                    capture_output=True, text=True, timeout=300)
                prof["single_call_us"][label] = json.loads(cp.stdout.strip().splitlines()[-1])
            except Exception as e:
                prof["single_call_us"][label] = {"error": repr(e)}

    # ---- targets ---------------------------------------------------------------------
    res["targets"] = targets(res, use_mj, use_mjx)
    res["meta"]["load_average_end"] = loadavg()
    res["meta"]["wall_s"] = time.perf_counter() - t_start
    if use_mj:
        ro0.close()
        ro_mt.close()
    return res


def probe_single_call() -> dict:
    """(a)'s diffsim rows only, in this process's dispatch mode (used by the profile)."""
    m, ld = ds_model()
    Q, V = random_states(m, 1)
    q, v = Q[0], V[0]
    tau, f_ext = ld.evaluate(m, 0.0, q, v)
    fd_jit = jax.jit(ds.forward_dynamics)
    noop = jax.jit(lambda m, q, v, tau, f: v + 0.0)
    jax.block_until_ready((fd_jit(m, q, v, tau, f_ext), noop(m, q, v, tau, f_ext)))
    r = interleave({
        "jit(forward_dynamics)": (lambda: fd_jit(m, q, v, tau, f_ext).block_until_ready(), 300, 1),
        "jit no-op (dispatch floor)": (lambda: noop(m, q, v, tau, f_ext).block_until_ready(), 300, 1),
    }, rounds=7)
    return {k: x["median"] for k, x in r.items()}


def targets(res, use_mj, use_mjx) -> dict:
    out = {}
    a, b, c = res["a_single_call_us"], res["b_rk4_per_eval_us"], res["c_vmap_per_sample_us"]
    ds_b = b["diffsim lax.scan RK4 (jit)"]["median"]
    if use_mj:
        # MuJoCo reference = the smaller of its two estimates (the stricter target for diffsim)
        mj_eval = min(b["mujoco mjINT_RK4 in C rollout"]["median"], b["mujoco mj_step RK4 loop from Python"]["median"])
        mj_fwd = min(a["mujoco mj_step Euler in C rollout (per step)"]["median"], a["mujoco mj_forward (from Python)"]["median"])
        out["b_le_2x_mj_forward"] = {
            "definition": "diffsim per evaluation in its RK4 scan / MuJoCo per evaluation in mjINT_RK4 "
                          "(min of: C rollout, mj_step loop from Python; each step / 4) <= 2",
            "ratio": ds_b / mj_eval, "target": 2.0, "met": ds_b / mj_eval <= 2.0, "mujoco_reference_us": mj_eval}
        if "diffsim lax.scan RK4, stages in a scan (profile variant)" in b:
            out["b_le_2x_mj_forward"]["ratio_scanned_stages_variant"] = \
                b["diffsim lax.scan RK4, stages in a scan (profile variant)"]["median"] / mj_eval
        for B, r in c.items():
            if int(B) >= 1024:
                v = r["diffsim jit(vmap(fd))"]["median"] / mj_fwd
                out[f"c_B{B}_le_0.5x_mj_forward"] = {
                    "definition": "diffsim per sample / single mj_forward (min of: mj_forward from Python, "
                                  "mj_step Euler per step in a C rollout) <= 0.5",
                    "ratio": v, "target": 0.5, "met": v <= 0.5, "mujoco_reference_us": mj_fwd}
    if use_mjx:
        v = b["mjx lax.scan mjx.step (mjINT_RK4)"]["median"] / ds_b
        out["b_10x_faster_than_mjx"] = {"definition": "MJX / diffsim per evaluation in (b) >= 10", "ratio": v,
                                        "target": 10.0, "met": v >= 10.0}
        for B, r in c.items():
            v = r["mjx jit(vmap(mjx.forward))"]["median"] / r["diffsim jit(vmap(fd))"]["median"]
            out[f"c_B{B}_10x_faster_than_mjx"] = {"definition": "MJX / diffsim per sample >= 10", "ratio": v,
                                                  "target": 10.0, "met": v >= 10.0}
    comp = res["compile_s"]["diffsim_rollout_first_minus_steady"]
    out["compile_rollout_le_10s"] = {"definition": "(first call - steady state of jit(RK4 rollout)) / 10 s <= 1",
                                     "value_s": comp, "ratio": comp / 10.0, "target": 1.0, "met": comp <= 10.0}
    sc = res["compile_s"].get("diffsim_rollout_scanned_stages_first_minus_steady")
    if sc is not None:
        out["compile_rollout_le_10s"]["value_s_scanned_stages_variant"] = sc
    g = res["gradient"]["grad_over_forward"]
    out["grad_le_4x_forward"] = {"definition": "jit(grad(loss)) / jit(loss) <= 4", "ratio": g, "target": 4.0, "met": g <= 4.0}
    return out


# ======================================================================================
# throughput mode (GPU float32)
# ======================================================================================

def throughput(args) -> dict:
    dtype = jnp.float32 if args.dtype == "float32" else jnp.float64
    try:
        dev = jax.devices("gpu" if args.device == "gpu" else "cpu")[0]
    except RuntimeError as e:
        raise SystemExit(f"--device {args.device}: JAX sees no such device ({e}); on a GPU machine install "
                         "jax with CUDA support (pip install 'jax[cuda12]')") from e
    B = args.batch
    rounds = args.rounds or 7
    res = {"meta": {"load_average_start": loadavg(), "mode": "throughput", "device": str(dev), "dtype": args.dtype,
                    "batch": B, "started": time.strftime("%Y-%m-%d %H:%M:%S")}}
    res["meta"].update(machine_info(**VERSIONS_REPORTED))
    ev = CompileEvents()
    t0 = time.perf_counter()
    with jax.default_device(dev):
        m, ld = ds_model(dtype)
        fd, rk4_step, rk4_step_scanned, make_rollout = make_ds_fns(m, ld)
        Q, V = random_states(m, B, seed=0)
        m, Q, V = jax.device_put((m, Q, V), dev)
        fd_v = jax.jit(jax.vmap(fd, in_axes=(None, None, 0, 0)))
        t_first, stages, out = ev.first_call(fd_v, m, 0.0, Q, V)
        res["compile_s"] = {"diffsim_vmap_fd_first_call": t_first, "stages": stages}
        res["finite_fraction"] = float(jnp.mean(jnp.isfinite(out).all(axis=-1)))
        ent = {"diffsim jit(vmap(fd))": (lambda: fd_v(m, 0.0, Q, V).block_until_ready(), 1, B)}
        n_roll = 10
        roll_v = jax.jit(jax.vmap(make_rollout(rk4_step, n_roll), in_axes=(None, 0, 0)))
        try:
            t_first_r, _, _ = ev.first_call(roll_v, m, Q, V)
            res["compile_s"]["diffsim_vmap_rk4_rollout_first_call"] = t_first_r
            ent[f"diffsim jit(vmap(RK4 rollout, {n_roll} steps)) per evaluation"] = (
                lambda: jax.block_until_ready(roll_v(m, Q, V)), 1, B * 4 * n_roll)
        except Exception as e:  # e.g. out of memory
            res.setdefault("notes", []).append(f"vmapped rollout failed: {e!r}")
        if "mjx" not in args.skip:
            try:
                import warnings

                import mujoco

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    from mujoco import mjx
                mjm = mj_models()["rk4"]
                d = mujoco.MjData(mjm)
                d.ctrl[:] = 1.0
                mx = jax.device_put(mjx.put_model(mjm), dev)
                dx = jax.device_put(mjx.put_data(mjm, d), dev)
                Qm, Vm = jax.vmap(lambda q, v: ds.to_mujoco(m, q, v))(Q, V)
                mjx_v = jax.jit(jax.vmap(lambda mx, qp, qv: mjx.forward(mx, dx.replace(qpos=qp, qvel=qv)).qacc,
                                         in_axes=(None, 0, 0)))
                t_first_m, _, _ = ev.first_call(mjx_v, mx, Qm, Vm)
                res["compile_s"]["mjx_vmap_forward_first_call"] = t_first_m
                ent["mjx jit(vmap(mjx.forward))"] = (lambda: mjx_v(mx, Qm, Vm).block_until_ready(), 1, B)
            except Exception as e:
                res.setdefault("notes", []).append(f"MJX skipped: {e!r}")
        r = interleave(ent, rounds=rounds, seed=5)
    res["per_evaluation_us"] = r
    res["evaluations_per_second"] = {k: 1e6 / v["median"] for k, v in r.items()}
    res["meta"]["load_average_end"] = loadavg()
    res["meta"]["wall_s"] = time.perf_counter() - t0
    return res


# ======================================================================================
# output
# ======================================================================================

def _fmt(x):
    if x is None:
        return "-"
    return f"{x:10.3f}" if x < 1e4 else f"{x:10.4g}"


def print_table(res):
    if res["meta"]["mode"] == "throughput":
        print(f"\nthroughput, {res['meta']['device']}, {res['meta']['dtype']}, batch {res['meta']['batch']}")
        for k, v in res["per_evaluation_us"].items():
            print(f"  {k:60s} {v['median']:10.4f} us/eval  {res['evaluations_per_second'][k]:12.4g} eval/s")
        print("  compile:", {k: round(v, 2) for k, v in res["compile_s"].items() if isinstance(v, float)})
        return
    la0, la1 = res["meta"]["load_average_start"], res["meta"]["load_average_end"]
    print(f"\nS0 dual-arm, float64, CPU ({res['meta']['nproc']} cores), load average start {la0} end {la1}")
    print("times in microseconds: median over interleaved rounds [min]")
    for title, key in (("(a) one forward-dynamics call", "a_single_call_us"),
                       (f"(b) per evaluation, RK4 rollout ({res['meta']['steps']} steps x 4)", "b_rk4_per_eval_us")):
        print(title)
        for k, v in res[key].items():
            print(f"  {k:62s}{_fmt(v['median'])}  [{_fmt(v['min']).strip()}]")
    print("(c) per sample, vmap / batched")
    rows = sorted({k for r in res["c_vmap_per_sample_us"].values() for k in r})
    bs = list(res["c_vmap_per_sample_us"])
    print("  " + f"{'batch':50s}" + "".join(f"{b:>12s}" for b in bs))
    for k in rows:
        vals = [res["c_vmap_per_sample_us"][b].get(k, {}).get("median") for b in bs]
        print(f"  {k:50s}" + "".join(f"{_fmt(v):>12s}" for v in vals))
    cs = res["compile_s"]
    print("compile [s]: rollout first-minus-steady %.1f (stages %s); single forward_dynamics first call %.1f"
          % (cs["diffsim_rollout_first_minus_steady"],
             {k: round(v, 1) for k, v in cs.get("diffsim_rollout_stages", {}).items()},
             cs["diffsim_forward_dynamics_first_call"]))
    if "diffsim_rollout_scanned_stages_first_minus_steady" in cs:
        print("             rollout with RK4 stages in a scan: %.1f" % cs["diffsim_rollout_scanned_stages_first_minus_steady"])
    if "mjx_rollout_first_minus_steady" in cs:
        print("             MJX rollout: %.1f" % cs["mjx_rollout_first_minus_steady"])
    for k, v in res["gradient"].items():
        if k.startswith("grad_"):
            print(f"{k}: {v:.2f}")
    prof = res.get("profile", {})
    for title, key in (("profile: per iteration inside a lax.scan", "in_scan_per_iteration_us"),
                       ("profile: batched variants, per sample", "batched_variants_per_sample_us")):
        if key in prof:
            print(title)
            for k, v in prof[key].items():
                print(f"  {k:78s}{_fmt(v['median'])}")
    if "single_call_us" in prof:
        print("profile: single call (fresh processes):", prof["single_call_us"])
    for k in ("forward_dynamics_hlo", "rk4_rollout_hlo", "rk4_rollout_scanned_stages_hlo"):
        if k in prof:
            print(f"profile: {k}:", {kk: prof[k][kk] for kk in ("instructions", "fusions", "dots", "flops", "bytes_accessed") if kk in prof[k]})
    print("targets:")
    for k, v in res["targets"].items():
        print(f"  {k:32s} ratio {v['ratio']:8.3g}  target {v['target']:6g}  {'MET' if v['met'] else 'missed'}")
    if "correctness" in res:
        print("correctness:", {k: float(f"{v:.2e}") for k, v in res["correctness"].items()})


def main():
    args = ARGS
    if args.probe_single_call:
        print(json.dumps(probe_single_call()))
        return
    res = throughput(args) if args.throughput else bench(args)
    if args.out:
        out = Path(args.out)
    elif args.throughput:
        out = HERE / "results" / f"s0_{args.device}_{args.dtype}_throughput.json"
    else:
        out = HERE / "results" / ("s0_cpu_quick.json" if args.quick else "s0_cpu.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    print_table(res)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
