"""Shared timing and bookkeeping helpers of the benchmark scripts.

``bench_s0.py``, ``bench_flexible.py``, ``bench_contact.py`` and ``bench_lcp.py`` import from here:

  * :class:`CompileEvents` — first-call timing with JAX's own compile-stage split (trace,
    lowering to MLIR, XLA compile);
  * :func:`calibrate` and :func:`interleave` — interleaved timing rounds (shuffled order), each
    round a loop of calls calibrated to last >= ``min_time`` s; microsecond statistics by
    :func:`_stats` (``bench_s0.py`` keeps its own per-call-median ``interleave``);
  * :func:`setup_jax` — the environment every script sets before JAX starts;
  * :func:`loadavg` and :func:`machine_info` — the ``meta`` block of the result JSON (CPU,
    library versions, git revision, JAX devices).

The scripts are run as ``python benchmarks/bench_x.py``; they put this directory on
``sys.path`` and ``from harness import ...``. JAX is imported here only inside the functions
that need it, so that importing this module never initialises JAX before a script has set
``JAX_PLATFORMS`` / ``XLA_FLAGS``.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def setup_jax(x64: bool = True):
    """Every benchmark's JAX set-up, before JAX is first imported: CPU only, no GPU memory
    preallocation, the same XLA CPU flags as diffsim's CLI and tests, float64. Returns ``jax``."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")
    import jax

    jax.config.update("jax_enable_x64", x64)
    return jax


class CompileEvents:
    """Collects JAX's own compile-stage durations (trace, lowering to MLIR, XLA compile)."""

    NAMES = {
        "/jax/core/compile/jaxpr_trace_duration": "trace_s",
        "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
        "/jax/core/compile/backend_compile_duration": "xla_compile_s",
    }

    def __init__(self):
        import jax

        self.active = None
        jax.monitoring.register_event_duration_secs_listener(self._cb)

    def _cb(self, event, duration, **kw):
        if self.active is not None and event in self.NAMES:
            k = self.NAMES[event]
            self.active[k] = self.active.get(k, 0.0) + duration

    def first_call(self, fn, *args):
        """Time the first call of a fresh jitted ``fn``; returns (seconds, stage breakdown, out)."""
        import jax

        self.active = {}
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        dt = time.perf_counter() - t0
        stages, self.active = self.active, None
        return dt, stages, out


def _stats(xs, scale=1e6):
    xs = sorted(x * scale for x in xs)
    return {"median": statistics.median(xs), "min": xs[0], "max": xs[-1], "rounds": len(xs)}


def calibrate(fn, min_time):
    """Number of calls so that one timed loop takes >= ``min_time`` seconds."""
    t0 = time.perf_counter()
    fn()
    t1 = time.perf_counter() - t0
    n = max(1, int(np.ceil(min_time / max(t1, 1e-7))))
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return n
        n = max(n + 1, int(np.ceil(n * 1.2 * min_time / max(dt, 1e-9))))


def interleave(entries: dict, rounds: int, min_time: float, seed: int = 0) -> dict:
    """``entries[name] = (fn, divisor)``; per round (shuffled order) time a loop of ``n`` calls
    (``n`` calibrated for >= ``min_time`` s; ``min_time = 0`` means one call) and keep
    loop / (n · divisor). Microsecond stats."""
    ns = {k: (calibrate(fn, min_time) if min_time > 0 else 1) for k, (fn, _) in entries.items()}
    samples = {k: [] for k in entries}
    rng = random.Random(seed)
    for _ in range(rounds):
        order = list(entries)
        rng.shuffle(order)
        for k in order:
            fn, div = entries[k]
            n = ns[k]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[k].append((time.perf_counter() - t0) / (n * div))
    out = {k: _stats(v) for k, v in samples.items()}
    for k in out:
        out[k]["calls_per_round"] = ns[k]
    return out


def loadavg():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def machine_info(modules=(), optional_modules=(), distributions=()):
    """CPU, core count, platform, library versions, ``XLA_FLAGS``, git revision (``+dirty(diffsim)``
    when ``diffsim/`` has uncommitted changes) and JAX devices.

    ``versions`` holds python, jax and numpy, then, in this order: each of ``modules``
    (``module.__version__``, or ``"unavailable: <error>"``), each importable one of
    ``optional_modules`` (left out when the import fails) and each installed one of
    ``distributions`` (``importlib.metadata.version``, left out when not installed)."""
    import jax

    cpu = platform.processor()
    try:
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    vers = {"python": platform.python_version(), "jax": jax.__version__, "numpy": np.__version__}
    for mod in modules:
        try:
            vers[mod] = __import__(mod).__version__
        except Exception as e:
            vers[mod] = f"unavailable: {e!r}"
    for mod in optional_modules:
        try:
            vers[mod] = __import__(mod).__version__
        except Exception:
            pass
    for dist in distributions:
        try:
            from importlib.metadata import version

            vers[dist] = version(dist)
        except Exception:
            pass
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "diffsim"], capture_output=True, text=True).stdout.strip()
    except Exception:
        rev, dirty = "?", ""
    return {"cpu": cpu, "nproc": os.cpu_count(), "platform": platform.platform(), "versions": vers,
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
            "git": rev + ("+dirty(diffsim)" if dirty else ""), "jax_devices": [str(d) for d in jax.devices()]}


# --------------------------------------------------------------------------------------
# the S0 robot in MuJoCo (bench_s0.py, bench_montecarlo.py)
# --------------------------------------------------------------------------------------


def s0_mujoco_xml(xml_path, follower) -> str:
    """The S0 MJCF plus two site actuators whose ``gear`` is the follower force in the site
    frame (MuJoCo applies a site transmission's force in the site frame at the site);
    ``follower`` = ``((site, joint, F), ...)``."""
    xml = Path(xml_path).read_text()
    acts = "".join(f'<general name="F_{site}" site="{site}" gear="{F[0]} {F[1]} {F[2]} 0 0 0"/>'
                   for site, _, F in follower)
    return xml.replace("</mujoco>", f"<actuator>{acts}</actuator></mujoco>")


def s0_mujoco_models(xml_path, follower, dt) -> dict:
    """``{"rk4": MjModel, "euler": MjModel}`` of :func:`s0_mujoco_xml` with time step ``dt``."""
    import mujoco

    xml = s0_mujoco_xml(xml_path, follower)
    out = {}
    for name, integ in (("rk4", mujoco.mjtIntegrator.mjINT_RK4), ("euler", mujoco.mjtIntegrator.mjINT_EULER)):
        mm = mujoco.MjModel.from_xml_string(xml)
        mm.opt.timestep = dt
        mm.opt.integrator = integ
        out[name] = mm
    return out


def mj_set(mujoco, mm, d, q, v_mj):
    """Set a MuJoCo state (controls 1: the follower actuators at full force, time 0)."""
    d.qpos[:] = q
    d.qvel[:] = v_mj
    d.ctrl[:] = 1.0
    d.time = 0.0


def mj_state(mujoco, mm, d):
    """The full physics state vector of ``d`` (``mujoco.rollout``'s initial-state format)."""
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    s = np.empty(mujoco.mj_stateSize(mm, spec))
    mujoco.mj_getState(mm, d, s, spec)
    return s
