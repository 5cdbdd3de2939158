#!/usr/bin/env python
"""Contact timing: S1 (the falling three-link Timoshenko chain) and a sphere bouncing on a plane,
diffsim vs MuJoCo (C), side by side in one run.

(1) S1 ``ss-ss-ss`` (``diffsim.scenarios.seed001``), rtol = atol = 1e-8 by default:

  * events formulation (located onset/separation events, Hu–Guo + Ambrosio friction) vs the
    smooth formulation (``mode='smooth'``, softplus onset of width ``--smooth-width`` m,
    smooth-Coulomb friction of width ``--friction-width`` m/s), both Tsit5, ``--s1-t1`` s;
  * events formulation with Dopri8 (8th order: a quarter of Tsit5's steps at this tolerance, two
    times the stages) and with Tsit5 on the O(n) flexible sweep instead of ``ds.simulate``'s
    default for small trees (the mass-matrix form batched over links), ``--s1-t1`` s;
  * explicit Tsit5 vs implicit Kvaerno5, events formulation, on the shorter window
    ``--implicit-t1`` s (the first impact burst; Kvaerno5 is very slow on this problem);

  each: compile time (first call minus the median steady call, with JAX's stage split), wall time
  after compile, accepted steps, contact events, impacts per joint and the work–energy error.

(2) A sphere (m = 1 kg, r = 0.1 m, frictionless) dropped from ``--h0`` on a plane for ``--ball-t1``
s (several bounces):

  * diffsim: Hu–Guo law (K = ``--K`` N/m^1.5, c_r = ``--c-r``), events mode, Tsit5, adaptive;
    also the smooth formulation (``mode='smooth'``, no events) at ``--tol`` (skip: ``ball-smooth``);
  * MuJoCo: the same sphere and plane (condim 1), soft contact ``solref = (timeconst,
    dampratio)`` with a constant impedance (``solimp = d d ...``). (timeconst, dampratio) are
    fitted at the fine step ``--mj-ref-dt`` so that the first bounce matches diffsim's effective
    restitution sqrt(h1/h0) (bisection on dampratio) and its first contact duration (timeconst);
    at every timed step (``--mj-dts``) dampratio is bisected again (timeconst kept) so that the
    restitution matches within 1e-4 relative (well inside 1 %).

  Apex heights of the first ``--bounces`` bounces (diffsim: the ballistic invariant
  h + v_z²/2g on the saved flight samples; MuJoCo: the discrete maximum over its steps) are
  compared with the analytic sequence h_k = h0 e^(2k) (e = diffsim's effective restitution),
  with each program's own converged reference (diffsim rtol 1e-12, MuJoCo ``--mj-ref-dt``) and
  with each other. Timing: µs per simulated second, diffsim after compile (one jitted call)
  vs ``mujoco.rollout`` (C loop), interleaved rounds; then a batch of ``--batch`` drop heights:
  ``jit(vmap(simulate))`` vs ``mujoco.rollout`` over the same initial states (1 thread and
  ``os.cpu_count()`` threads).

Usage::

    python benchmarks/bench_contact.py           # full run (~10 min on 2 cores; ~4 min of it Kvaerno5) -> results/bench_contact.json
    python benchmarks/bench_contact.py --quick   # S1 0.45 s, no Kvaerno5, batch 64, ~3 min -> results/bench_contact_quick.json
    python benchmarks/bench_contact.py --skip implicit,batch

Every compile is measured as the first call minus the median of the steady calls; wall times are
medians over interleaved rounds (the machine may be shared: compare ratios within one run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

SECTIONS = ("s1", "smooth", "dopri8", "sweep", "implicit", "ball", "ball-smooth", "batch", "mujoco")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="S1 over --implicit-t1 only, no Kvaerno5, batch 64, fewer rounds")
    p.add_argument("--skip", default="", help=f"comma list of sections to skip: {','.join(SECTIONS)}")
    # S1
    p.add_argument("--s1-t1", type=float, default=None, help="S1 simulated time [s] (default 1.5; quick 0.45)")
    p.add_argument("--implicit-t1", type=float, default=0.45, help="window of the tsit5-vs-kvaerno5 comparison [s]")
    p.add_argument("--tol", type=float, default=1e-8, help="rtol = atol of the S1 runs")
    p.add_argument("--smooth-width", type=float, default=1e-6, help="softplus width of the smooth normal law [m]")
    p.add_argument("--friction-width", type=float, default=1e-3, help="smooth-Coulomb width [m/s]")
    p.add_argument("--s1-save", type=int, default=1501, help="saved points of the S1 runs")
    p.add_argument("--s1-max-events", type=int, default=160)
    p.add_argument("--repeats", type=int, default=None, help="steady S1 calls per configuration (default 2; quick 1)")
    p.add_argument("--implicit-repeats", type=int, default=1, help="steady Kvaerno5 calls")
    # ball
    p.add_argument("--h0", type=float, default=0.5, help="drop height of the sphere's bottom [m]")
    p.add_argument("--ball-t1", type=float, default=2.0, help="simulated time of the sphere [s]")
    p.add_argument("--K", type=float, default=1e7, help="Hu–Guo stiffness [N/m^1.5]")
    p.add_argument("--c-r", type=float, default=0.8, help="Hu–Guo nominal restitution")
    p.add_argument("--ball-tols", default="1e-6,1e-8", help="diffsim tolerances timed (rtol = atol)")
    p.add_argument("--ball-ref-tol", type=float, default=1e-12, help="diffsim reference tolerance")
    p.add_argument("--ball-save", type=int, default=401, help="saved points of the sphere runs")
    p.add_argument("--ball-max-events", type=int, default=32)
    p.add_argument("--mj-dts", default="1e-4,1e-3", help="MuJoCo timesteps timed")
    p.add_argument("--mj-ref-dt", type=float, default=1e-5, help="MuJoCo reference timestep (fit and accuracy reference)")
    p.add_argument("--mj-impedance", type=float, default=0.99, help="constant MuJoCo impedance d (solimp = d d ...)")
    p.add_argument("--bounces", type=int, default=4, help="apexes compared")
    p.add_argument("--batch", type=int, default=None, help="batch of drop heights (default 256; quick 64)")
    p.add_argument("--batch-heights", default="0.3,0.7", help="drop-height range of the batch [m]")
    p.add_argument("--batch-rounds", type=int, default=None, help="interleaved rounds of the batch (default 2)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds of the single-sphere timing (default 5; quick 3)")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per timed loop (single sphere)")
    p.add_argument("--out", default=None, help="output JSON path")
    a = p.parse_args(argv)
    a.skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    bad = a.skip - set(SECTIONS)
    if bad:
        p.error(f"unknown sections in --skip: {sorted(bad)}")
    if a.quick:
        a.skip.add("implicit")
    a.s1_t1 = a.s1_t1 if a.s1_t1 is not None else (a.implicit_t1 if a.quick else 1.5)
    a.repeats = a.repeats or (1 if a.quick else 2)
    a.batch = a.batch if a.batch is not None else (64 if a.quick else 256)
    a.batch_rounds = a.batch_rounds or 2
    a.rounds = a.rounds or (3 if a.quick else 5)
    a.ball_tols = [float(s) for s in a.ball_tols.split(",") if s.strip()]
    a.mj_dts = [float(s) for s in a.mj_dts.split(",") if s.strip()]
    a.batch_heights = [float(s) for s in a.batch_heights.split(",")]
    return a


ARGS = parse_args()
sys.path.insert(0, str(HERE))  # the shared benchmark helpers (benchmarks/harness.py)
from harness import CompileEvents, interleave, loadavg, machine_info, setup_jax  # noqa: E402

jax = setup_jax()  # CPU, the tests' XLA flags, float64 — before anything imports JAX
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import diffsim as ds  # noqa: E402
from diffsim.scenarios import seed001 as s1  # noqa: E402


G = 9.81
R_BALL, M_BALL = 0.1, 1.0
I_BALL = 0.4 * M_BALL * R_BALL**2


def block(tr):
    return jax.block_until_ready(tr.q)


# ======================================================================================
# (1) S1
# ======================================================================================

DYNAMICS = {"composite": None,  # ds.simulate's default for this small tree (the mass-matrix form batched over links)
            "sweep": "forward_dynamics_flexible"}  # the O(n) sweep, the default before


def s1_runner(solver: str, t1: float, args, dynamics: str = "composite"):
    """One jitted S1 solve. ``t1`` is a Python float, as in a user's call (the contact
    controller derives its default ``dtmax`` from a concrete span), so every window compiles
    separately; the tolerance is traced (a Python float would be static under filter_jit)."""
    import diffsim.flexible as flex

    kw = {} if DYNAMICS[dynamics] is None else {"dynamics": getattr(flex, DYNAMICS[dynamics])}

    @eqx.filter_jit
    def run(m, c, q0, v0, tol):
        return ds.simulate(m, q0, v0, t1, contact=c, solver=solver, rtol=tol, atol=tol, saveat=args.s1_save,
                           max_events=args.s1_max_events, max_steps=200_000, throw=False, **kw)

    return run


def s1_summary(tr) -> dict:
    _, err = tr.energy_balance()
    ev_t = np.asarray(tr.contact.event_t)
    return {
        "status": tr.message,
        "steps": int(tr.num_steps),
        "events": int(tr.contact.n_events),
        "impacts_per_joint": dict(zip(s1.JOINTS, np.asarray(tr.contact.impacts).astype(int).tolist())),
        "impacts_total": int(np.sum(np.asarray(tr.contact.impacts))),
        "first_event_t": float(ev_t[0]) if np.isfinite(ev_t[0]) else None,
        "last_event_t": float(ev_t[np.isfinite(ev_t)][-1]) if np.any(np.isfinite(ev_t)) else None,
        "energy_error_max_abs_pct": float(jnp.max(jnp.abs(err))),
        # (t, flips per joint O1..O4: +1 onset, -1 separation); mirror contacts within
        # event_time_tol share one event, otherwise they are two events nanoseconds apart
        "event_list": [[float(t)] + f.tolist() for t, f in zip(ev_t[np.isfinite(ev_t)],
                                                               np.asarray(tr.contact.event_flip)[np.isfinite(ev_t)])],
    }


def s1_section(args, ev) -> dict:
    m = s1.model("ss-ss-ss")
    q0, v0 = s1.initial_state(m)
    tol = jnp.asarray(args.tol, m.dtype)
    forms = {"events": s1.contact_model(m)}
    if "smooth" not in args.skip:
        forms["smooth"] = s1.contact_model(m, mode="smooth", smooth=args.smooth_width, friction="smooth-coulomb",
                                           friction_width=args.friction_width)
    # configurations: name -> (formulation, solver, t1, dynamics)
    cfg = {f"{f}/tsit5/t1={args.s1_t1:g}": (f, "tsit5", args.s1_t1, "composite") for f in forms}
    if "dopri8" not in args.skip:
        cfg[f"events/dopri8/t1={args.s1_t1:g}"] = ("events", "dopri8", args.s1_t1, "composite")
    if "sweep" not in args.skip:
        cfg[f"events/tsit5/t1={args.s1_t1:g}/sweep"] = ("events", "tsit5", args.s1_t1, "sweep")
    if "implicit" not in args.skip:
        ti = args.implicit_t1
        if abs(ti - args.s1_t1) > 1e-12:
            cfg[f"events/tsit5/t1={ti:g}"] = ("events", "tsit5", ti, "composite")
        cfg[f"events/kvaerno5/t1={ti:g}"] = ("events", "kvaerno5", ti, "composite")
    runners = {(solver, t1, dyn): s1_runner(solver, t1, args, dyn) for _, solver, t1, dyn in cfg.values()}
    out = {"settings": {"modes": "ss-ss-ss", "rtol": args.tol, "atol": args.tol, "saveat": args.s1_save,
                        "max_events": args.s1_max_events, "smooth_width_m": args.smooth_width,
                        "smooth_friction": "smooth-coulomb", "friction_width_m_per_s": args.friction_width,
                        "memory_tau_s": float(forms["smooth"].memory_tau) if "smooth" in forms else None},
           "runs": {}}
    calls = {}
    for name, (f, solver, t1, dyn) in cfg.items():
        fn = runners[(solver, t1, dyn)]
        c = forms[f]
        call = (lambda fn=fn, c=c: block(fn(m, c, q0, v0, tol)))
        print(f"  S1 {name}: first call ...", flush=True)
        t_first, stages, tr = ev.first_call(fn, m, c, q0, v0, tol)
        r = {"formulation": f, "solver": solver, "t1": t1, "dynamics": dyn, "first_call_s": t_first,
             "compile_stages_s": stages}
        r.update(s1_summary(tr))
        out["runs"][name] = r
        calls[name] = call
        print(f"    first {t_first:.1f} s, {r['steps']} steps, {r['events']} events, status {r['status']}", flush=True)
    # steady calls, interleaved (the long Kvaerno5 runs separately, fewer repeats)
    fast = {k: (calls[k], 1.0) for k in cfg if cfg[k][1] != "kvaerno5"}
    slow = {k: (calls[k], 1.0) for k in cfg if cfg[k][1] == "kvaerno5"}
    timing = interleave(fast, args.repeats, 0.0, seed=1)
    if slow:
        timing.update(interleave(slow, args.implicit_repeats, 0.0, seed=2))
    for name, st in timing.items():
        r = out["runs"][name]
        wall = st["median"] / 1e6
        r["wall_s"] = wall
        r["wall_min_s"] = st["min"] / 1e6
        r["wall_repeats"] = st["rounds"]
        r["us_per_step"] = 1e6 * wall / max(r["steps"], 1)
        r["wall_per_simulated_s"] = wall / r["t1"]
        r["compile_s"] = r["first_call_s"] - wall
    # the targets, for the fastest events configuration over the full window
    full = {k: r for k, r in out["runs"].items()
            if r["formulation"] == "events" and r["t1"] == args.s1_t1 and r["status"] == "success" and "wall_s" in r}
    if full:
        ref = min(full, key=lambda k: full[k]["wall_s"])
        main = full[ref]
        out["targets"] = {
            "wall_le_2s_for_1p5s": {"definition": f"{ref}, 1.5 s simulated, wall after compile <= 2 s",
                                    "value_s": main["wall_s"] * (1.5 / main["t1"]), "target_s": 2.0,
                                    "met": main["wall_s"] * (1.5 / main["t1"]) <= 2.0,
                                    "note": None if main["t1"] == 1.5 else f"scaled from t1 = {main['t1']:g} s"},
            "compile_le_30s": {"definition": f"{ref} first call minus steady call <= 30 s",
                               "value_s": main["compile_s"], "target_s": 30.0, "met": main["compile_s"] <= 30.0},
        }
        sweep = out["runs"].get(f"events/tsit5/t1={args.s1_t1:g}/sweep")
        comp = out["runs"].get(f"events/tsit5/t1={args.s1_t1:g}")
        if sweep and comp and "wall_s" in sweep and "wall_s" in comp:
            out["composite_over_sweep_us_per_step"] = comp["us_per_step"] / sweep["us_per_step"]
    return out


# ======================================================================================
# (2) the bouncing sphere
# ======================================================================================

def ball_model():
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -G))
    b.add_body("ball", None, joint="free", mass=M_BALL, inertia=(I_BALL,) * 3)
    return b.build()


def ball_contact(m, args, mode="events"):
    smooth = args.smooth_width if mode == "smooth" else 0.0
    return ds.compliant_contact(m, [ds.ContactPoint("ball", radius=R_BALL)], [ds.Plane((0.0, 0.0, 1.0), 0.0)],
                       normal=ds.normal_law("hu-guo", K=args.K, c_r=args.c_r, smooth=smooth), friction=None,
                       mode=mode)


def ball_q0(h, dtype=jnp.float64):
    """Free joint: [x, y, z, qw, qx, qy, qz]; the bottom of the sphere ``h`` above the plane."""
    return jnp.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], dtype).at[2].set(R_BALL + h)


def ball_runner(args):
    @eqx.filter_jit
    def run(m, c, q0, v0, tol):
        return ds.simulate(m, q0, v0, args.ball_t1, contact=c, rtol=tol, atol=tol, saveat=args.ball_save,
                           max_events=args.ball_max_events, throw=False)

    return run


def _quat_rotate(q, v):
    """Rotate [T, 3] vectors by [T, 4] unit quaternions (w, x, y, z)."""
    w, u = q[:, :1], q[:, 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def ds_ball_analysis(tr, h0, n_bounces) -> dict:
    """Apexes from the ballistic invariant H = h + v_z²/2g on the saved flight samples (h > 0):
    consecutive flight samples belong to one flight while H stays constant (a bounce drops it by
    ~1 − e² ≈ 36 %); the apex of a flight is the median of its H, kept if the flight's samples
    straddle the apex (v_z changes sign). Works for both formulations; contact durations from
    the located events (events mode)."""
    t = np.asarray(tr.t)
    q, v = np.asarray(tr.q), np.asarray(tr.v)
    h = q[:, 2] - R_BALL
    vz = _quat_rotate(q[:, 3:7], v[:, :3])[:, 2]  # free-joint linear velocity is in the body frame
    H = h + vz**2 / (2 * G)
    flights, cur = [], []
    for i in range(len(t)):
        if h[i] > 0 and cur and abs(H[i] - H[cur[-1]]) <= 1e-4 * H[cur[-1]] and i == cur[-1] + 1:
            cur.append(i)
            continue
        if cur:
            flights.append(cur)
        cur = [i] if h[i] > 0 else []
    if cur:
        flights.append(cur)
    apex, spread = [], []
    for f in flights[1:]:  # flights[0]: the initial fall
        if not (np.any(vz[f] > 0) and np.any(vz[f] < 0)):
            break
        apex.append(float(np.median(H[f])))
        spread.append(float(H[f].max() - H[f].min()))
        if len(apex) == n_bounces:
            break
    out = {"apex_m": apex, "apex_invariant_spread_m": spread, "steps": int(tr.num_steps), "status": tr.message,
           "energy_error_max_abs_pct": float(jnp.max(jnp.abs(tr.energy_balance()[1])))}
    if tr.contact.contact.mode == "events":
        ev_t = np.asarray(tr.contact.event_t)
        flip = np.asarray(tr.contact.event_flip)[:, 0]
        ok = np.isfinite(ev_t)
        on, off = ev_t[ok & (flip == 1)], ev_t[ok & (flip == -1)]
        n = min(len(on), len(off))
        out.update({"onsets_s": on.tolist(), "separations_s": off.tolist(),
                    "contact_durations_s": (off[:n] - on[:n]).tolist(), "impacts": int(len(on)),
                    "events": int(tr.contact.n_events)})
    return out


# ---- MuJoCo ----

def mj_xml(dt, tc, zeta, d):
    dt, tc, zeta, d = (float(x) for x in (dt, tc, zeta, d))
    sol = f'condim="1" solref="{tc!r} {zeta!r}" solimp="{d!r} {d!r} 0.001 0.5 2"'
    return f"""<mujoco model="ball">
  <option timestep="{dt!r}" gravity="0 0 {-G!r}" integrator="Euler"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" {sol}/>
    <body name="ball" pos="0 0 1">
      <freejoint/>
      <geom type="sphere" size="{R_BALL!r}" {sol}/>
      <inertial pos="0 0 0" mass="{M_BALL!r}" diaginertia="{I_BALL!r} {I_BALL!r} {I_BALL!r}"/>
    </body>
  </worldbody>
</mujoco>"""


class MjBall:
    """A MuJoCo sphere-on-plane model at timestep ``dt`` with soft contact (tc, zeta, d)."""

    def __init__(self, dt, tc, zeta, d):
        import mujoco
        from mujoco import rollout

        self.mujoco, self.rollout = mujoco, rollout
        self.dt, self.tc, self.zeta, self.d = dt, tc, zeta, d
        self.m = mujoco.MjModel.from_xml_string(mj_xml(dt, tc, zeta, d))
        self.data = mujoco.MjData(self.m)
        self.spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        self.nstate = mujoco.mj_stateSize(self.m, self.spec)
        self.i_qpos = mujoco.mj_stateSize(self.m, mujoco.mjtState.mjSTATE_TIME)
        self._bufs = {}

    def initial_states(self, heights):
        mj = self.mujoco
        out = np.empty((len(heights), self.nstate))
        d = mj.MjData(self.m)
        for i, h in enumerate(heights):
            mj.mj_resetData(self.m, d)
            d.qpos[:] = [0.0, 0.0, R_BALL + h, 1.0, 0.0, 0.0, 0.0]
            mj.mj_forward(self.m, d)
            mj.mj_getState(self.m, d, out[i], self.spec)
        return out

    def nstep(self, T):
        return int(round(T / self.dt))

    def run(self, s0, T, datas=None, chunk=None):
        """``mujoco.rollout`` (C loop) from initial states ``s0`` [B, nstate] for ``T`` s; returns
        the state buffer of the last chunk (every chunk reuses one preallocated buffer)."""
        n = self.nstep(T)
        B = s0.shape[0]
        datas = datas or self.data
        chunk = chunk or B
        key = (min(chunk, B), n)
        if key not in self._bufs:
            self._bufs[key] = np.empty((key[0], n, self.nstate))
        buf = self._bufs[key]
        for i in range(0, B, chunk):
            s = s0[i:i + chunk]
            out = buf[: s.shape[0]]
            self.rollout.rollout(self.m, datas, s, nstep=n, state=out, skip_checks=False)
        return out

    def heights(self, s0, T):
        st = self.run(s0[None] if s0.ndim == 1 else s0[:1], T)[0]
        return st[:, self.i_qpos + 2] - R_BALL


def mj_analysis(h, dt, n_bounces) -> dict:
    """Apexes = discrete maxima of the flight phases (h > 0) after each contact; contact
    durations = steps with h <= 0 (geometric penetration) per contact."""
    fl = h > 0
    idx = np.flatnonzero(np.diff(fl.astype(np.int8)) != 0) + 1
    segs = np.split(np.arange(len(h)), idx)
    apex, dur = [], []
    seen_contact = False
    for s in segs:
        if not fl[s[0]]:
            seen_contact = True
            dur.append(len(s) * dt)
            continue
        if not seen_contact:
            continue  # the initial fall
        k = s[np.argmax(h[s])]
        if k == s[0] or k == s[-1]:
            break  # apex not reached inside the segment (end of run)
        apex.append(float(h[k]))
        if len(apex) == n_bounces:
            break
    return {"apex_m": apex, "contact_durations_s": dur}


def mj_first_bounce(dt, tc, zeta, d, h0):
    """Restitution sqrt(h1/h0) and first contact duration of a MuJoCo drop (short run)."""
    v_imp = math.sqrt(2 * G * h0)
    T = math.sqrt(2 * h0 / G) + 1.3 * v_imp / G + 0.05
    mb = MjBall(dt, tc, zeta, d)
    a = mj_analysis(mb.heights(mb.initial_states([h0])[0], T), dt, 1)
    if not a["apex_m"]:  # no bounce (overdamped): restitution 0
        return 0.0, (a["contact_durations_s"] or [float("nan")])[0]
    return math.sqrt(a["apex_m"][0] / h0), a["contact_durations_s"][0]


def bisect_zeta(dt, tc, d, h0, e_target, rtol=1e-4, lo=1e-3, hi=0.7, grid=24, iters=60):
    """Dampratio with restitution ``e_target``. The restitution falls with dampratio where the
    contact is resolved, but not for the stiff (small-dampratio) springs a coarse step cannot
    resolve; so scan a log grid down from ``hi`` to the first grid point at or above the target
    and bisect (geometric mean) inside that bracket."""
    zs = np.geomspace(hi, lo, grid)
    z_hi, e_prev = zs[0], mj_first_bounce(dt, tc, zs[0], d, h0)[0]
    if e_prev > e_target:
        raise RuntimeError(f"MuJoCo restitution {e_prev} > target {e_target} already at dampratio {hi} (dt={dt}, tc={tc})")
    for z in zs[1:]:
        e = mj_first_bounce(dt, tc, z, d, h0)[0]
        if e >= e_target:
            z_lo = z
            break
        z_hi = z
    else:
        raise RuntimeError(f"MuJoCo restitution never reaches {e_target} for dampratio in [{lo}, {hi}] (dt={dt}, tc={tc})")
    zeta = z_lo
    if abs(e - e_target) > rtol * e_target:
        for _ in range(iters):
            zeta = math.sqrt(z_lo * z_hi)
            e = mj_first_bounce(dt, tc, zeta, d, h0)[0]
            if abs(e - e_target) <= rtol * e_target:
                break
            if e > e_target:
                z_lo = zeta
            else:
                z_hi = zeta
    return float(zeta), e


def fit_mujoco(args, e_target, dur_target) -> dict:
    """(tc, zeta) at the reference step: zeta by bisection for the restitution, tc rescaled for
    the first contact duration (duration ∝ tc at fixed zeta); then zeta re-bisected at every
    timed step with tc kept."""
    d, h0, dt = args.mj_impedance, args.h0, args.mj_ref_dt
    e_lin = e_target
    z0 = -math.log(e_lin) / math.sqrt(math.pi**2 + math.log(e_lin) ** 2)  # linear oscillator guess
    tc = dur_target / (math.pi * z0 * d)
    hist = []
    for _ in range(4):
        zeta, e = bisect_zeta(dt, tc, d, h0, e_target)
        _, dur = mj_first_bounce(dt, tc, zeta, d, h0)
        hist.append({"tc": tc, "zeta": zeta, "e": e, "duration_s": dur})
        if abs(dur - dur_target) <= 0.01 * dur_target:
            break
        tc *= dur_target / dur
    fit = {"impedance_d": d, "timeconst_s": tc, "reference_dt": dt, "reference_dampratio": zeta,
           "reference_restitution": e, "reference_first_contact_s": dur, "fit_history": hist, "per_dt": {}}
    for dti in args.mj_dts:
        e_untuned, dur_u = mj_first_bounce(dti, tc, zeta, d, h0)
        z_i, e_i = bisect_zeta(dti, tc, d, h0, e_target)
        _, dur_i = mj_first_bounce(dti, tc, z_i, d, h0)
        fit["per_dt"][repr(dti)] = {"dampratio": z_i, "restitution": e_i,
                                    "restitution_rel_err": abs(e_i - e_target) / e_target,
                                    "first_contact_s": dur_i,
                                    "restitution_with_reference_params": e_untuned,
                                    "refsafe_ok": tc >= 2 * dti}
    return fit


def apex_errors(apex, ref):
    n = min(len(apex), len(ref))
    if n == 0:
        return None
    a, r = np.asarray(apex[:n]), np.asarray(ref[:n])
    rel = np.abs(a - r) / r
    return {"per_bounce_rel": rel.tolist(), "max_rel": float(rel.max())}


def ball_section(args, ev) -> dict:
    m = ball_model()
    c = ball_contact(m, args)
    run = ball_runner(args)
    v0 = jnp.zeros(m.nv, m.dtype)
    q0 = ball_q0(args.h0)
    T = args.ball_t1
    out = {"settings": {"mass_kg": M_BALL, "radius_m": R_BALL, "inertia": I_BALL, "h0_m": args.h0, "t1_s": T,
                        "law": "hu-guo", "K": args.K, "n": 1.5, "c_r": args.c_r, "friction": None,
                        "saveat": args.ball_save, "max_events": args.ball_max_events,
                        "mj_integrator": "Euler", "mj_condim": 1}}
    # --- diffsim runs: compile once (tolerance traced), reference + timed tolerances
    tols = sorted(set(args.ball_tols + [args.ball_ref_tol]), reverse=True)
    print("  sphere: diffsim first call ...", flush=True)
    t_first, stages, _ = ev.first_call(run, m, c, q0, v0, jnp.asarray(tols[0]))
    dsr = {}
    for tol in tols:
        tr = run(m, c, q0, v0, jnp.asarray(tol))
        block(tr)
        dsr[tol] = ds_ball_analysis(tr, args.h0, args.bounces)
    ref = dsr[args.ball_ref_tol]
    if len(ref["apex_m"]) < 1:
        raise RuntimeError("diffsim sphere: no complete bounce (increase --ball-t1)")
    e = math.sqrt(ref["apex_m"][0] / args.h0)
    dur = ref["contact_durations_s"][0]
    analytic = [args.h0 * e ** (2 * k) for k in range(1, args.bounces + 1)]
    out["diffsim_effective_restitution"] = e
    out["diffsim_first_contact_s"] = dur
    out["analytic_apex_m"] = analytic
    out["analytic_apex_nominal_c_r_m"] = [args.h0 * args.c_r ** (2 * k) for k in range(1, args.bounces + 1)]
    out["diffsim"] = {}
    for tol, a in dsr.items():
        a["apex_rel_err_vs_analytic"] = apex_errors(a["apex_m"], analytic)
        a["apex_rel_err_vs_reference"] = apex_errors(a["apex_m"], ref["apex_m"])
        out["diffsim"][f"events rtol=atol={tol:g}"] = a
    entries = {f"diffsim events tsit5 rtol=atol={tol:g}": (
        (lambda tol=tol: block(run(m, c, q0, v0, jnp.asarray(tol)))), T) for tol in tols}
    cs = None
    if "ball-smooth" not in args.skip:
        # the smooth formulation (no events; memory state, softplus onset): rtol = atol = --tol
        cs = ball_contact(m, args, "smooth")
        tol_s = jnp.asarray(args.tol)
        print("  sphere: diffsim smooth first call ...", flush=True)
        t_first_s, stages_s, tr = ev.first_call(run, m, cs, q0, v0, tol_s)
        a = ds_ball_analysis(tr, args.h0, args.bounces)
        a["apex_rel_err_vs_analytic"] = apex_errors(a["apex_m"], analytic)
        a["apex_rel_err_vs_reference"] = apex_errors(a["apex_m"], ref["apex_m"])
        a["note"] = "reference = the events-mode reference (rtol 1e-12)"
        a["first_call_s"] = t_first_s
        a["compile_stages_s"] = stages_s
        out["diffsim"][f"smooth rtol=atol={args.tol:g}"] = a
        entries[f"diffsim smooth tsit5 rtol=atol={args.tol:g}"] = ((lambda: block(run(m, cs, q0, v0, tol_s))), T)
    # --- MuJoCo: fit, accuracy runs, timing entries
    mjs = {}
    if "mujoco" not in args.skip:
        print("  sphere: fitting MuJoCo solref ...", flush=True)
        fit = fit_mujoco(args, e, dur)
        out["mujoco_fit"] = fit
        out["mujoco"] = {}
        ref_mb = MjBall(args.mj_ref_dt, fit["timeconst_s"], fit["reference_dampratio"], args.mj_impedance)
        s0 = ref_mb.initial_states([args.h0])
        mj_ref = mj_analysis(ref_mb.heights(s0[0], T), args.mj_ref_dt, args.bounces)
        for dti in args.mj_dts:
            p = fit["per_dt"][repr(dti)]
            mb = MjBall(dti, fit["timeconst_s"], p["dampratio"], args.mj_impedance)
            mjs[dti] = mb
            a = mj_analysis(mb.heights(s0[0], T), dti, args.bounces)
            a["steps"] = mb.nstep(T)
            a["apex_rel_err_vs_analytic"] = apex_errors(a["apex_m"], analytic)
            a["apex_rel_err_vs_reference"] = apex_errors(a["apex_m"], mj_ref["apex_m"])
            a["apex_rel_err_vs_diffsim_reference"] = apex_errors(a["apex_m"], ref["apex_m"])
            out["mujoco"][f"dt={dti:g}"] = a
            entries[f"mujoco rollout dt={dti:g}"] = ((lambda mb=mb: mb.run(s0, T)), T)
        # the reference's own uncertainty: half its step, dampratio re-fitted (the restitution of a
        # fixed-step soft contact depends on where in a step the contact starts, so the apexes
        # converge slowly and not monotonically)
        dth = args.mj_ref_dt / 2
        z_h, e_h = bisect_zeta(dth, fit["timeconst_s"], args.mj_impedance, args.h0, e)
        mb_h = MjBall(dth, fit["timeconst_s"], z_h, args.mj_impedance)
        half = mj_analysis(mb_h.heights(s0[0], T), dth, args.bounces)
        half.update({"dampratio": z_h, "restitution": e_h})
        mj_ref["half_step_check"] = half
        mj_ref["apex_rel_diff_half_step"] = apex_errors(half["apex_m"], mj_ref["apex_m"])
        mj_ref["steps"] = ref_mb.nstep(T)
        mj_ref["apex_rel_err_vs_analytic"] = apex_errors(mj_ref["apex_m"], analytic)
        entries[f"mujoco rollout dt={args.mj_ref_dt:g}"] = ((lambda: ref_mb.run(s0, T)), T)
        mj_ref["apex_rel_err_vs_diffsim_reference"] = apex_errors(mj_ref["apex_m"], ref["apex_m"])
        out["mujoco"][f"dt={args.mj_ref_dt:g} (reference)"] = mj_ref
    print("  sphere: timing (single trajectory) ...", flush=True)
    t = interleave(entries, args.rounds, args.min_time, seed=3)
    out["single_us_per_simulated_s"] = t
    steady = t[f"diffsim events tsit5 rtol=atol={tols[0]:g}"]["median"] * T / 1e6
    out["diffsim_compile_s"] = t_first - steady
    out["diffsim_compile_stages_s"] = stages
    if cs is not None:
        k = f"smooth rtol=atol={args.tol:g}"
        out["diffsim"][k]["compile_s"] = out["diffsim"][k]["first_call_s"] - t[f"diffsim smooth tsit5 rtol=atol={args.tol:g}"]["median"] * T / 1e6
    # --- batch
    if "batch" not in args.skip and args.batch > 0:
        out["batch"] = ball_batch(args, m, c, cs, run, v0, mjs, ev)
    return out


def ball_batch(args, m, c, cs, run, v0, mjs, ev) -> dict:
    B, T = args.batch, args.ball_t1
    hs = np.linspace(args.batch_heights[0], args.batch_heights[1], B)
    Q = jax.vmap(ball_q0)(jnp.asarray(hs))
    tol = jnp.asarray(args.tol)
    vrun = eqx.filter_jit(jax.vmap(lambda m, c, q, tol: run(m, c, q, v0, tol), in_axes=(None, None, 0, None)))
    print(f"  sphere batch {B}: diffsim first call ...", flush=True)
    t_first, stages, tr = ev.first_call(vrun, m, c, Q, tol)
    res = {"B": B, "heights_m": [float(hs[0]), float(hs[-1])], "diffsim_rtol_atol": args.tol,
           "diffsim_status": tr.status, "diffsim_steps_max": int(np.max(np.asarray(tr.num_steps))),
           "diffsim_steps_mean": float(np.mean(np.asarray(tr.num_steps))),
           "diffsim_events_max": int(np.max(np.asarray(tr.contact.n_events))),
           "diffsim_compile_stages_s": stages}
    if res["diffsim_events_max"] >= args.ball_max_events:
        res["warning"] = "some batch members hit max_events"
    entries = {f"diffsim events jit(vmap) B={B}": ((lambda: block(vrun(m, c, Q, tol))), B * T)}
    if cs is not None:
        print(f"  sphere batch {B}: diffsim smooth first call ...", flush=True)
        t_first_s, _, trs = ev.first_call(vrun, m, cs, Q, tol)
        res["diffsim_smooth_status"] = trs.status
        res["diffsim_smooth_steps_max"] = int(np.max(np.asarray(trs.num_steps)))
        entries[f"diffsim smooth jit(vmap) B={B}"] = ((lambda: block(vrun(m, cs, Q, tol))), B * T)
    nthr = os.cpu_count() or 1
    import mujoco

    for dti, mb in mjs.items():
        s0 = mb.initial_states(hs)
        chunk = max(1, min(B, int(64e6 // (mb.nstep(T) * mb.nstate * 8))))  # <= 64 MB of output per chunk
        for n in sorted({1, nthr}):
            datas = [mujoco.MjData(mb.m) for _ in range(n)]
            entries[f"mujoco rollout dt={dti:g} B={B} threads={n}"] = (
                (lambda mb=mb, s0=s0, datas=datas, chunk=chunk: mb.run(s0, T, datas, chunk)), B * T)
    print(f"  sphere batch {B}: timing ...", flush=True)
    t = interleave(entries, args.batch_rounds, 0.0, seed=4)
    res["per_sample_us_per_simulated_s"] = t
    res["diffsim_compile_s"] = t_first - t[f"diffsim events jit(vmap) B={B}"]["median"] * B * T / 1e6
    if cs is not None:
        res["diffsim_smooth_compile_s"] = t_first_s - t[f"diffsim smooth jit(vmap) B={B}"]["median"] * B * T / 1e6
    return res


# ======================================================================================
# output
# ======================================================================================

def summary(res) -> dict:
    """Headline ratios."""
    s = {}
    b = res.get("ball")
    if b and "single_us_per_simulated_s" in b:
        t = b["single_us_per_simulated_s"]
        ds_keys = [k for k in t if k.startswith("diffsim")]
        mj_keys = [k for k in t if k.startswith("mujoco")]
        for dk in ds_keys:
            for mk in mj_keys:
                s[f"single: ({dk}) / ({mk})"] = t[dk]["median"] / t[mk]["median"]
    if b and "batch" in b:
        t = b["batch"]["per_sample_us_per_simulated_s"]
        for dk in [k for k in t if k.startswith("diffsim")]:
            for mk in [k for k in t if k.startswith("mujoco")]:
                s[f"batch: ({dk}) / ({mk})"] = t[dk]["median"] / t[mk]["median"]
            form = dk.split()[1]
            single = b.get("single_us_per_simulated_s", {}).get(f"diffsim {form} tsit5 rtol=atol={ARGS.tol:g}")
            if single:
                s[f"diffsim {form}: vmap per sample / single call"] = t[dk]["median"] / single["median"]
    r = res.get("s1", {}).get("runs", {})
    ev, sm = f"events/tsit5/t1={ARGS.s1_t1:g}", f"smooth/tsit5/t1={ARGS.s1_t1:g}"
    if ev in r and sm in r:
        s["S1 smooth / events wall"] = r[sm]["wall_s"] / r[ev]["wall_s"]
    ti = ARGS.implicit_t1
    ke, kt = f"events/kvaerno5/t1={ti:g}", f"events/tsit5/t1={ti:g}"
    if ke in r and kt in r:
        s["S1 kvaerno5 / tsit5 wall (short window)"] = r[ke]["wall_s"] / r[kt]["wall_s"]
    return s


def _g(x, f="{:.3g}"):
    return "-" if x is None else f.format(x)


def print_table(res):
    la0, la1 = res["meta"]["load_average_start"], res["meta"]["load_average_end"]
    print(f"\ncontact benchmark, float64, CPU ({res['meta']['nproc']} cores), load average start {la0} end {la1}")
    if "s1" in res:
        print("\n(1) S1 ss-ss-ss, rtol = atol = %g" % ARGS.tol)
        print(f"  {'configuration':30s}{'compile s':>10s}{'wall s':>9s}{'steps':>7s}{'us/step':>9s}{'events':>7s}"
              f"{'impacts':>8s}{'E err %':>10s}  status")
        for k, r in res["s1"]["runs"].items():
            cs = _g(r.get("compile_s"), "{:.1f}")
            print(f"  {k:30s}{cs:>10s}{_g(r.get('wall_s'), '{:.2f}'):>9s}{r['steps']:>7d}"
                  f"{_g(r.get('us_per_step'), '{:.0f}'):>9s}{r['events']:>7d}{r['impacts_total']:>8d}"
                  f"{r['energy_error_max_abs_pct']:>10.1e}  {r['status']}")
        for k, v in res["s1"].get("targets", {}).items():
            note = f" ({v['note']})" if v.get("note") else ""
            print(f"  target {k}: {v['value_s']:.2f} s vs {v['target_s']:g} s -> {'MET' if v['met'] else 'missed'}{note}")
    b = res.get("ball")
    if b:
        print(f"\n(2) sphere on a plane, h0 = {ARGS.h0} m, {ARGS.ball_t1} s, Hu–Guo K = {ARGS.K:g}, c_r = {ARGS.c_r}")
        print(f"  diffsim effective restitution sqrt(h1/h0) = {b['diffsim_effective_restitution']:.5f} "
              f"(nominal c_r {ARGS.c_r}); first contact {1e3 * b['diffsim_first_contact_s']:.3f} ms")
        if "mujoco_fit" in b:
            f = b["mujoco_fit"]
            print(f"  MuJoCo fit: timeconst {f['timeconst_s']:.5g} s, impedance {f['impedance_d']}, "
                  f"at dt {f['reference_dt']:g}: dampratio {f['reference_dampratio']:.5g}, "
                  f"e {f['reference_restitution']:.5f}, first contact {1e3 * f['reference_first_contact_s']:.3f} ms")
            for k, p in f["per_dt"].items():
                print(f"    dt {float(k):g}: dampratio {p['dampratio']:.5g}, e {p['restitution']:.5f} "
                      f"(rel err {p['restitution_rel_err']:.1e}; with the reference dampratio e = "
                      f"{p['restitution_with_reference_params']:.4f})")
        print("  apex heights [m] and relative errors (vs analytic h0 e^2k | vs own reference):")
        rows = [(f"diffsim {k}", v) for k, v in b["diffsim"].items()] + [(f"MuJoCo {k}", v) for k, v in b.get("mujoco", {}).items()]
        print(f"  {'':34s}" + "".join(f"{'h' + str(i + 1):>10s}" for i in range(ARGS.bounces))
              + f"{'max err analytic':>18s}{'max err ref':>13s}{'steps':>8s}")
        print(f"  {'analytic':34s}" + "".join(f"{x:10.5f}" for x in b["analytic_apex_m"]))
        for name, v in rows:
            ea, er = v.get("apex_rel_err_vs_analytic"), v.get("apex_rel_err_vs_reference")
            print(f"  {name:34s}" + "".join(f"{x:10.5f}" for x in v["apex_m"])
                  + " " * 10 * (ARGS.bounces - len(v["apex_m"]))
                  + f"{_g(ea and ea['max_rel'], '{:.2e}'):>18s}{_g(er and er['max_rel'], '{:.2e}'):>13s}"
                  f"{str(v.get('steps', '-')):>8s}")
        for k, v in b.get("mujoco", {}).items():
            if "apex_rel_diff_half_step" in v and v["apex_rel_diff_half_step"]:
                print(f"  MuJoCo reference {k}: apexes at half its step differ by up to "
                      f"{v['apex_rel_diff_half_step']['max_rel']:.1e} (relative)")
        print("  timing, single trajectory: microseconds per simulated second, median [min]")
        for k, v in b["single_us_per_simulated_s"].items():
            print(f"    {k:52s}{v['median']:12.1f}  [{v['min']:.1f}]")
        print(f"  diffsim compile (sphere): {b['diffsim_compile_s']:.1f} s")
        if "batch" in b:
            bb = b["batch"]
            print(f"  timing, batch of {bb['B']} drop heights {bb['heights_m']}: per-sample microseconds per simulated second")
            for k, v in bb["per_sample_us_per_simulated_s"].items():
                print(f"    {k:52s}{v['median']:12.1f}  [{v['min']:.1f}]")
            print(f"  diffsim batch compile: {bb['diffsim_compile_s']:.1f} s; status {bb['diffsim_status']}, "
                  f"max steps {bb['diffsim_steps_max']}, max events {bb['diffsim_events_max']}")
    print("\nratios:")
    for k, v in res.get("summary", {}).items():
        print(f"  {k:90s}{v:10.3g}")


def main():
    args = ARGS
    res = {"meta": {"load_average_start": loadavg(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "argv": sys.argv[1:], "args": {k: (sorted(v) if isinstance(v, set) else v) for k, v in vars(args).items()}}}
    res["meta"].update(machine_info(modules=("jaxlib", "equinox", "diffrax", "mujoco")))
    ev = CompileEvents()
    t0 = time.perf_counter()
    if "s1" not in args.skip:
        print("(1) S1 ...", flush=True)
        res["s1"] = s1_section(args, ev)
    if "ball" not in args.skip:
        print("(2) sphere ...", flush=True)
        res["ball"] = ball_section(args, ev)
    res["summary"] = summary(res)
    res["meta"]["load_average_end"] = loadavg()
    res["meta"]["wall_s"] = time.perf_counter() - t0
    out = Path(args.out) if args.out else HERE / "results" / ("bench_contact_quick.json" if args.quick else "bench_contact.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
    print_table(res)
    print(f"\nwrote {out}  ({res['meta']['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
