"""Batched Monte Carlo studies of a :class:`diffsim.System` (:func:`run`).

Sample ``i`` draws every uncertain name ``j`` (in sorted name order) from
``fold_in(fold_in(key, i), j)``: a sample's draws, and hence its result, depend on ``(key, i)``
only — not on the chunk size, the device count or which chunks were resumed. Each chunk of
samples is one compiled program of ``draw → set_params → simulate → statistics``, sharded over the
local devices along the batch axis (``jax.sharding.Mesh``/``NamedSharding``); only the per-sample
statistics (and the status) travel back to the host. On CPU devices (``batch_size="auto"``) each
device runs its share as ``lax.map`` over blocks of :data:`CPU_BLOCK` samples (``shard_map``), the
share padded to whole blocks. That is faster than one ``vmap`` of thousands of samples, the more so
the larger the chunk, as if the large ``vmap``'s intermediates left the cache (S0, RK4, two CPU
devices: 1.3× less time per sample-step at a chunk of 1024, 1.7× at 4096;
``benchmarks/results/montecarlo_cpu_blocks.json``). Elsewhere a device's share is one ``vmap``.

The simulated results are bit-identical across chunkings: every sample is computed by the same
compiled block whatever the chunk size or the device count (tested on S0 with chunks of 1024 and
256, whose single ``vmap`` — ``batch_size=None`` — differed in the last bit for 79 % of the samples:
XLA's code for a ``vmap`` depends on its size). A share no larger than a block is one ``vmap`` of
the share; shares that are multiples of 8 gave the bits of the blocks where measured (pendulum;
S0 with shares of 16 … 64); otherwise XLA's CPU code computes the lanes beyond the last full SIMD
vector with scalar instructions and results agree to an ulp or so (measured: ≤ 9e-16 relative on
the pendulum of ``tests/montecarlo/test_run.py``). A resumed study reuses its chunk and block sizes, so it is
always bit-identical to an uninterrupted one.

Several processes (hosts), after ``jax.distributed.initialize``: process ``p`` of ``P`` runs the
chunks ``k ≡ p (mod P)`` on its own devices into the shared ``out`` directory; after a barrier
(``multihost_utils.sync_global_devices``) every process reads all chunks back, so each returns the
whole study (process 0 writes ``samples.npz``/``summary.json``). On CPU the barrier needs the gloo
collectives (``jax.config.update("jax_cpu_collectives_implementation", "gloo")`` before
initialising).

With ``out=DIR`` every finished chunk is written (``chunks/chunk_<k>.npz``, by write-then-rename)
after ``manifest.json`` (the study's identity: names, distributions, sample count, key, chunk and block
sizes, the statistics' names, shapes, dtypes and traced program, a fingerprint of the System — every
array leaf's dtype, shape and bytes and its static structure without per-process noise —, the traced
program of one sample's simulation (the numbers its Python functions read are literals there), the
precision, the caller's ``context`` such as the CLI's scenario and options; code versions); a rerun of
the same study skips the chunks on disk (each checked: readable, its sample indices, names and shapes
those expected), and a different study in the same directory is refused, naming what differs. Another
diffsim or JAX version only warns. With the chunk size left to ``run``, a resume reuses the study's
own when the current devices can split it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata as md
import json
import math
import os
import re
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from tqdm.auto import tqdm

from ..io.results import jsonable, provenance
from ..model.joints import QUAT_OFFSET
from ..model.params import ParamError, outside_domain, split_index
from ..precision import full_precision
from ..simulation.simulate import simulate
from ..simulation.system import System, get_param, set_params
from ..simulation.trajectory import STATUS_MESSAGES, Status
from .distributions import AbstractDistribution, DistributionError, Samples, _sha1
from .report import RESERVED, MonteCarloWarning, finite_values, save_result

PROBE = 64  # samples compiled once to measure the memory per sample when no chunk size is given
#: samples vectorised together on each CPU device (``run(batch_size="auto")``): faster than one
#: ``vmap`` of a large chunk (S0, RK4, two devices: 1.3× / 1.7× less time per sample-step at chunks
#: of 1024 / 4096; ``benchmarks/bench_montecarlo.py``)
CPU_BLOCK = 128
SIMD = 8  # lanes: a share no larger than a block gives the blocks' bits when a multiple of it (module doc)


class MonteCarloError(ValueError):
    """Bad input to :func:`run` or an output directory that holds another study."""


def final_state(traj) -> dict:
    """The default statistics: the state at ``t1`` (``q_final`` [nq], ``v_final`` [nv])."""
    return {"q_final": traj.q[-1], "v_final": traj.v[-1]}


def _no_statistics(traj) -> dict:
    return {}


#: names a statistic cannot take: the other arrays of samples.npz (and of the chunk files)


def _user_statistics(statistics, traj) -> dict:
    """``statistics(traj)`` checked: a dict of arrays (numbers become arrays); a failure inside
    the user's function is reported as that, not as a bad return value."""
    try:
        out = statistics(traj)
    except MonteCarloError:
        raise
    except Exception as e:
        msg = str(e).strip().splitlines()
        raise MonteCarloError(f"statistics(traj) raised {type(e).__name__}: {msg[0] if msg else ''}") from e
    if not isinstance(out, Mapping):
        got = f"an array of shape {tuple(out.shape)}" if hasattr(out, "shape") else type(out).__name__
        raise MonteCarloError(f"statistics must return a dict of arrays {{name: array}}, got {got}")
    arrays = {}
    for k, v in out.items():
        if not isinstance(k, str):
            raise MonteCarloError(f"statistics must return a dict of arrays with string names, got the name {k!r}")
        numeric = isinstance(v, (int, float, np.number, np.bool_)) or (
            isinstance(v, (jax.Array, np.ndarray)) and np.dtype(v.dtype).kind in "biuf")
        if not numeric:
            raise MonteCarloError(f"statistics must return a dict of arrays: statistic {k!r} is {v!r:.60} "
                                  f"({type(v).__name__}), not a valid JAX type")
        arrays[k] = jnp.asarray(v)
    return arrays


class _Study(eqx.Module):
    """One study: the nominal system, the distributions and the key are pytree leaves (a rerun with
    the same structure reuses the compiled chunk); names, shapes and the statistics are static."""

    system: System
    dists: dict
    key: jax.Array
    names: tuple = eqx.field(static=True)
    shapes: tuple = eqx.field(static=True)
    statistics: Callable = eqx.field(static=True)

    def draws(self, i):
        ki = jax.random.fold_in(self.key, i)
        dtype = self.system.model.dtype
        out = {}
        for j, (n, shape) in enumerate(zip(self.names, self.shapes)):
            d = self.dists[n]
            if isinstance(d, Samples):
                out[n] = jnp.asarray(d.values, dtype)[i].reshape(shape)
            else:
                out[n] = jnp.broadcast_to(d.sample(jax.random.fold_in(ki, j), shape, dtype), shape)
        return out

    def trajectory(self, i):
        return simulate(set_params(self.system, self.draws(i)))

    def one(self, i):
        draws = self.draws(i)
        traj = simulate(set_params(self.system, draws))
        stats = {**final_state(traj), **_user_statistics(self.statistics, traj)}
        return draws, stats, traj.status


@eqx.filter_jit
def _run_chunk(study: _Study, idx, block=None, mesh=None):
    """Every sample of a chunk, compiled once: one ``vmap`` sharded like ``idx``; with ``block``
    (static), each device's share runs as ``lax.map`` over blocks of ``block`` samples
    (``shard_map`` over ``mesh``)."""
    if block is None:
        return jax.vmap(study.one)(idx)
    dyn, static = eqx.partition(study, eqx.is_array)

    def share(dyn, ix):
        one = eqx.combine(dyn, static).one
        return jax.vmap(one)(ix) if ix.shape[0] <= block else jax.lax.map(one, ix, batch_size=block)

    if mesh is None:
        return share(dyn, idx)
    # check_vma=False: every device runs its own samples (nothing is reduced across devices), and
    # the solvers' loops carry values that start replicated and become per-device
    return jax.shard_map(share, mesh=mesh, in_specs=(PartitionSpec(), PartitionSpec("batch")),
                         out_specs=PartitionSpec("batch"), check_vma=False)(dyn, idx)


def _block(batch_size, devices):
    """The samples vectorised together per device: ``"auto"`` is :data:`CPU_BLOCK` on CPU devices
    and the whole share elsewhere (``None``)."""
    if batch_size == "auto":
        return CPU_BLOCK if all(d.platform == "cpu" for d in devices) else None
    if batch_size is None:
        return None
    if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) or batch_size < 1:
        raise MonteCarloError(f"batch_size must be a positive integer, None or 'auto', got {batch_size!r}")
    return int(batch_size)


def _padded_length(chunk_size, n_dev, block):
    """A chunk's length on the devices: ``chunk_size``, or with blocks, each device's share rounded
    up to a multiple of ``block`` (so that every sample runs in a block of exactly that size)."""
    share = chunk_size // n_dev
    if block is None or share <= block:
        return chunk_size
    return n_dev * -(-share // block) * block


def _integer(value, what: str, minimum: int = 1) -> int:
    """``value`` as an int: an integer (Python or NumPy, not bool) ``>= minimum``; 5.5 is refused,
    not truncated."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise MonteCarloError(f"{what} must be an integer, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise MonteCarloError(f"{what} must be >= {minimum}, got {value}")
    return int(value)


def _check_key(key):
    """A ``jax.random`` key: a typed key (``jax.random.key(seed)``) or raw key data
    (``jax.random.PRNGKey(seed)``), one key, not a seed or a batch of keys."""
    hint = "give key=jax.random.key(SEED) or jax.random.PRNGKey(SEED)"
    if not isinstance(key, (jax.Array, np.ndarray)) or isinstance(key, jax.core.Tracer):
        raise MonteCarloError(f"key must be a jax.random key, got {key!r} ({type(key).__name__}); {hint}")
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.shape != ():
            raise MonteCarloError(f"key must be one jax.random key, got keys of shape {key.shape}; {hint}")
        return key
    try:
        jax.random.wrap_key_data(jnp.asarray(key))
        ok = key.dtype == np.uint32 and key.ndim == 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise MonteCarloError(f"key must be a jax.random key, got an array of shape {key.shape} and dtype "
                              f"{key.dtype}; {hint}")
    return key


def _quaternion_entries(system, name):
    """``(joint, entries, quat)`` when ``name`` is (an entry of) the ``q0`` of a joint with an
    orientation quaternion: the entries of the joint's coordinates it covers and the quaternion's
    positions among them; ``None`` otherwise."""
    base, idx = split_index(name)
    t = system.model.topology
    if not base.startswith("q0.") or base[3:] not in t.joint_names:
        return None
    i = t.joint_names.index(base[3:])
    if t.joint_types[i] not in QUAT_OFFSET:
        return None
    off = QUAT_OFFSET[t.joint_types[i]]
    entries = range(t.nq_joint[i]) if idx is None else idx[:1]
    return base[3:], tuple(entries), tuple(range(off, off + 4))


def _check_quaternions(system, name, d, shape, n_samples):
    """Quaternion coordinates of ``q0`` (free / spherical joints) are unit: the simulation normalises
    them, so a parametric law over them would record orientations that were not simulated.
    ``Samples`` are accepted when every sample's quaternion has unit norm (to ``√eps`` of the dtype)."""
    found = _quaternion_entries(system, name)
    if found is None:
        return
    joint, entries, quat = found
    if not set(entries) & set(quat):
        return
    where = f"entries {quat[0]}–{quat[-1]} of q0.{joint}"
    if not isinstance(d, Samples):
        raise MonteCarloError(
            f"{name!r}: a {type(d).__name__} over the orientation quaternion of joint {joint!r} ({where}) would draw "
            "quaternions that are not unit, which the simulation normalises (samples.npz would record "
            f"orientations that were not simulated); vary the position entries by index (q0.{joint}[0] …) or give "
            "unit quaternions as Samples")
    whole = np.asarray(get_param(system, f"q0.{joint}"), dtype=float)
    v = np.asarray(d.values, dtype=float)[:n_samples].reshape((n_samples, *shape))
    full = np.array(np.broadcast_to(whole, (n_samples, *whole.shape)))
    full[:, list(entries)] = v.reshape(n_samples, -1)
    norm = np.linalg.norm(full[:, list(quat)], axis=1)
    tol = float(np.sqrt(jnp.finfo(system.model.dtype).eps))
    bad = np.flatnonzero(~(np.abs(norm - 1.0) <= tol))
    if bad.size:
        k = int(bad[0])
        raise MonteCarloError(
            f"{name!r}: Samples must keep the orientation quaternion of joint {joint!r} ({where}) unit; sample {k}'s "
            f"has norm {norm[k]:.6g} ({bad.size} of {n_samples} samples off by more than {tol:.1g}): normalise them "
            "(the simulation would, and samples.npz would record orientations that were not simulated)")


def _resolve(system, distributions, n_samples):
    if not isinstance(system, System):
        raise MonteCarloError(f"run needs a diffsim.System, got {type(system).__name__}")
    _integer(n_samples, "n_samples")
    if not isinstance(distributions, Mapping) or not distributions:
        raise MonteCarloError("give at least one uncertain name (distributions = {name: distribution})")
    dtype = system.model.dtype
    shapes = {}
    for n, d in distributions.items():
        try:
            shapes[n] = tuple(np.shape(get_param(system, n)))
        except ParamError as e:
            raise MonteCarloError(str(e)) from None
        if not isinstance(d, AbstractDistribution):
            raise MonteCarloError(f"{n!r}: give a diffsim.montecarlo distribution (Normal, LogNormal, Uniform, "
                                  f"TruncatedNormal, Samples), got {type(d).__name__}")
        if isinstance(d, Samples):
            v = np.asarray(d.values)
            size = int(np.prod(shapes[n]))
            # a row per sample with the parameter's entries: [N, *shape] or the same entries in another
            # layout ([N] for a parameter of one entry); a scalar per sample for a vector is refused, not
            # broadcast (write the rows out, e.g. np.repeat(v[:, None], 3, axis=1))
            per_sample = int(np.prod(v.shape[1:]))
            if v.ndim < 1 or v.shape[0] < n_samples or (v.shape[1:] != shapes[n] and per_sample != size):
                raise MonteCarloError(f"{n!r}: Samples has shape {v.shape}; need [{n_samples}, *{shapes[n]}] (a row of "
                                      f"{size} entries per sample)")
        else:  # each parameter of the law broadcasts to the named parameter's shape (the draws have it)
            for field, value in vars(d).items():
                if not _fits(value, shapes[n]):
                    raise MonteCarloError(f"{n!r} has shape {shapes[n]}; its {type(d).__name__}'s {field} has shape "
                                          f"{np.shape(value)}, which does not broadcast to it")
            try:
                d.check_dtype(dtype)
            except DistributionError as e:
                raise MonteCarloError(f"{n!r}: {e}") from None
        _check_quaternions(system, n, d, shapes[n], int(n_samples))
    return sorted(distributions), shapes


def _fits(value, shape) -> bool:
    """Whether ``value`` broadcasts to ``shape`` (and not beyond it)."""
    try:
        return np.broadcast_shapes(np.shape(value), shape) == tuple(shape)
    except ValueError:
        return False


def _sorted_by_cost(study, order, n_samples, idx):
    """Positions that sort ``idx`` by ``order(draws of all samples)`` (stable)."""
    draws = jax.device_get(jax.jit(jax.vmap(study.draws))(jnp.arange(int(n_samples))))
    cost = np.asarray(order(draws))
    if cost.shape != (int(n_samples),) or not np.all(np.isfinite(cost)):
        raise MonteCarloError(f"order must map the draws to one finite cost per sample ([{n_samples}]), "
                              f"got shape {cost.shape}")
    return np.argsort(cost[idx], kind="stable")


def _check_statistics(study):
    """``({name: ShapeDtypeStruct}, programs)`` of the per-sample statistics (``q_final``,
    ``v_final`` and the user's), traced once on one sample's abstract trajectory; ``programs``
    hashes the statistics' traced program and that of one sample's simulation (and the arrays they
    close over; :func:`_program_hash`), so that a resume with another function of the same names,
    or a system whose functions compute something else, is refused. Names that would overwrite another array of
    ``samples.npz`` (``status``, ``index``, a varied name) are refused."""
    sim, traj_dyn, traj_static = eqx.filter_make_jaxpr(lambda st: st.trajectory(jnp.asarray(0)))(study)
    traj = eqx.combine(traj_dyn, traj_static)
    closed, user, _ = eqx.filter_make_jaxpr(lambda tr: _user_statistics(study.statistics, tr))(traj)
    taken = [k for k in user if k in RESERVED or k in study.names]
    if taken:
        what = ", ".join(f"{k!r} ({'a varied name' if k in study.names else 'an array samples.npz holds'})"
                         for k in taken)
        raise MonteCarloError(f"statistics would overwrite {what} in samples.npz: rename them (a statistic cannot "
                              f"be named {', '.join(map(repr, RESERVED))} or like a varied name, {list(study.names)})")
    shapes = {**eqx.filter_eval_shape(final_state, traj), **user}
    return shapes, {"statistics": _program_hash(closed), "sample": _program_hash(sim)}


def _program_hash(closed) -> str:
    """A traced program's identity: its jaxpr's text (without memory addresses or source lines) and
    the arrays it closes over. Python numbers that the traced functions read (a closure's ``A`` in
    ``lambda t: A * sin(t)``, a callable object's attribute, a module-level constant) are literals
    of the jaxpr, so a function that computes something else is another program."""
    h = hashlib.sha1(_stable(str(closed.jaxpr)).encode())
    for c in closed.consts:
        h.update(_leaf_text(c).encode())
    return h.hexdigest()


def _stable(text: str) -> str:
    """A structure's text without memory addresses (``<function f at 0x7f…>``): the same in every process."""
    return re.sub(r"0x[0-9a-fA-F]+", "0x", re.sub(r" at 0x[0-9a-fA-F]+", "", text))


def _leaf_text(x, depth: int = 0) -> str:
    """A pytree leaf as text: an array's dtype, shape and a hash of its bytes; a Python scalar's
    repr; anything else by type, name and (a function) its code, defaults and the numbers and
    arrays it closes over."""
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        a = np.ascontiguousarray(np.asarray(x))
        return f"{a.dtype}{list(a.shape)}:{hashlib.sha1(a.tobytes()).hexdigest()}"
    if x is None or isinstance(x, (bool, int, float, complex, str)):
        return repr(x)
    text = f"{type(x).__module__}.{type(x).__qualname__}:{getattr(x, '__qualname__', '')}"
    code = getattr(x, "__code__", None)
    if code is not None:
        text += f":{_code_text(code)}"
        if depth < 2:  # what it closes over (a lambda t: A * sin(t) with another A is another function)
            cells = []
            for cell in getattr(x, "__closure__", None) or ():
                try:
                    cells.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    cells.append(None)
            text += "".join(f"|{_leaf_text(c, depth + 1)}" for c in [*cells, *(getattr(x, "__defaults__", None) or ())])
    return _stable(text)


def _code_text(code) -> str:
    """A code object's bytecode and constants, nested code objects (lambdas, comprehensions) by
    their own, never by their file or line: the same function in another file is the same."""
    consts = [_code_text(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts]
    return f"{hashlib.sha1(code.co_code).hexdigest()}:{_stable(repr(consts))}:{code.co_names}"


def _fingerprint(system: System) -> dict:
    """The System's identity, field by field: ``structure`` (its static structure — types, static
    field values — as text without memory addresses) and ``values`` (every leaf: an array's dtype,
    shape and bytes). A fresh process that rebuilds the same system gets the same fingerprint."""
    structure, values = {}, {}
    for f in dataclasses.fields(system):
        leaves, treedef = jax.tree_util.tree_flatten(getattr(system, f.name))
        structure[f.name] = hashlib.sha1(_stable(str(treedef)).encode()).hexdigest()[:16]
        h = hashlib.sha1()
        for leaf in leaves:
            h.update(_leaf_text(leaf).encode())
        values[f.name] = h.hexdigest()[:16]
    return {"type": type(system).__qualname__, "structure": structure, "values": values}


def _precision(system: System) -> dict:
    return {"dtype": np.dtype(system.model.dtype).name, "x64": bool(jax.config.jax_enable_x64)}


def _indices(idx, mesh):
    """The chunk's sample indices, split over the devices along the batch axis (the computation
    follows them: XLA partitions the ``vmap`` accordingly)."""
    idx = jnp.asarray(idx)
    return idx if mesh is None else jax.device_put(idx, NamedSharding(mesh, PartitionSpec("batch")))


def _choose_chunk(study, mesh, n_samples, n_dev, budget, block=None):
    """Chunk size from the compiled memory of a probe chunk (temporaries + outputs per sample; an
    upper bound with blocks, whose temporaries are those of one block); with blocks, a multiple of
    ``n_dev × block`` when larger."""
    probe = min(PROBE, n_samples)
    probe = max(n_dev, probe - probe % n_dev)
    # with the run's block and mesh: for a study no larger than the probe, the program it will run
    compiled = _run_chunk.lower(study, _indices(np.arange(probe), mesh), block, mesh).compile()
    ma = compiled.compiled.memory_analysis()  # equinox's Compiled wraps jax's
    per = None
    if ma is not None:
        per = (ma.temp_size_in_bytes + ma.output_size_in_bytes + ma.argument_size_in_bytes) / probe
    if not per:
        return probe, None
    c = int(budget // per)
    c = max(n_dev, min(c, n_samples + (-n_samples) % n_dev))
    lanes = SIMD * n_dev // math.gcd(SIMD, n_dev)  # bit-identical results across chunkings (module doc)
    if block is not None and c >= n_dev * block:
        lanes = n_dev * block  # no padding to whole blocks
    return (c - c % lanes if c >= lanes else c - c % n_dev), per


def _identity(names, dists, n_samples, key, chunk_size, stat_shapes, program, block=None, system=None,
              context=None):
    return {"names": names, "distributions": {n: dists[n].describe() for n in names}, "n_samples": int(n_samples),
            "key": np.asarray(jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
                              else key).tolist(),
            "chunk_size": int(chunk_size),
            "statistics": {"outputs": {k: [list(v.shape), np.dtype(v.dtype).name] for k, v in stat_shapes.items()},
                           "program": program["statistics"]},
            "sample_program": program["sample"],
            "batch_size": block,
            "system": None if system is None else _fingerprint(system),
            "precision": None if system is None else _precision(system),
            "context": None if context is None else jsonable(context)}


def _atomic_write(path: Path, write):
    """Write through a temporary file and rename: a reader sees the whole file or none; a failed
    write (disk full, interrupted) leaves no partial file and raises a clear error."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise MonteCarloError(f"could not write {path} ({e.strerror or e}); the finished chunks on disk are intact: "
                              "free space and rerun with the same arguments to resume") from e


@dataclasses.dataclass
class MonteCarloResult:
    """Draws (``draws[name]`` [N, *shape]), statistics (``statistics[name]`` [N, ...]) and status
    [N] of every sample (:class:`diffsim.Status`; 0 = success)."""

    draws: dict
    statistics: dict
    status: np.ndarray
    wall_time_s: float
    chunk_size: int
    n_devices: int
    chunks_run: int  # in this call, by this process (``totals``: every process's)
    chunks_resumed: int
    bytes_per_sample: float | None = None
    samples_run: int | None = None  # simulated in this call by this process (not read back from disk)
    n_processes: int = 1
    totals: tuple | None = None  # (chunks_run, chunks_resumed, samples_run) over every process of a multi-process run
    sample_index: np.ndarray | None = None  # each row's sample number, for a rerun of chosen indices (else 0..N-1)

    @property
    def n_samples(self) -> int:
        return int(self.status.shape[0])

    @property
    def samples_per_s(self) -> float:
        """Samples simulated per second of this call (resumed chunks do not count; in a
        multi-process run, the samples of every process over this process's wall time)."""
        n = self._counts[2]
        return n / self.wall_time_s if self.wall_time_s > 0 else float("inf")

    @property
    def _counts(self) -> tuple:
        """``(chunks_run, chunks_resumed, samples_run)`` of the study in this call (every process's)."""
        if self.totals is not None:
            return self.totals
        return self.chunks_run, self.chunks_resumed, self.n_samples if self.samples_run is None else self.samples_run

    @property
    def failed(self) -> np.ndarray:
        """Sample numbers of the samples that did not succeed (rerun them with ``run(...,
        indices=...)``; for such a rerun, its own sample numbers, not row positions)."""
        rows = np.flatnonzero(self.status != Status.SUCCESS)
        return rows if self.sample_index is None else self.sample_index[rows]

    @property
    def status_counts(self) -> dict:
        vals, counts = np.unique(self.status, return_counts=True)
        return {Status(int(v)).name.lower(): int(c) for v, c in zip(vals, counts)}

    def quantiles(self, name, q=(0.05, 0.5, 0.95), successful_only=True):
        """Quantiles of a statistic over the (successful) samples, per component, over its finite
        values (a statistic can be NaN for a sample it does not apply to, e.g. ball-drop's
        ``rebound_max_z`` without an impact; NaN for a component with no finite value).
        :class:`MonteCarloError` when no sample succeeded."""
        if name not in self.statistics:
            raise MonteCarloError(f"no statistic {name!r} (have {sorted(self.statistics)})")
        x = self.statistics[name]
        if successful_only:
            x = x[self.status == Status.SUCCESS]
            if x.shape[0] == 0:
                raise MonteCarloError(f"no successful sample to take quantiles of {name!r} over (status "
                                      f"{self.status_counts}); successful_only=False takes them over every sample")
        return _finite_quantiles(x, q)

    def summary_json(self) -> dict:
        """``summary.json``'s content: per statistic, over the finite values of the successful
        samples and per component, the mean, the sample standard deviation (``ddof=1``; null with
        fewer than two finite values), quantiles and ``non_finite`` (how many samples have a
        non-finite value there; ``non_finite_samples``: in any component); the draws' mean and std
        over every sample (``populations`` says which samples each block covers)."""
        ok = self.status == Status.SUCCESS
        stats = {}
        qs = (0.05, 0.25, 0.5, 0.75, 0.95)
        for k, x in self.statistics.items():
            xs = x[ok]
            if not xs.size:
                stats[k] = {"shape": list(x.shape[1:]), "mean": None, "std": None, "quantiles": None,
                            "non_finite": np.zeros(x.shape[1:], int), "non_finite_samples": 0}
                continue
            v = finite_values(xs)
            bad = np.isnan(v)
            stats[k] = {"shape": list(x.shape[1:]), "mean": _nanmean(v), "std": _sample_std(v),
                        "quantiles": {str(q): c for q, c in zip(qs, _finite_quantiles(xs, qs))},
                        "non_finite": bad.sum(axis=0),
                        "non_finite_samples": int(bad.reshape(bad.shape[0], -1).any(axis=1).sum())}
        failed = self.failed
        out = {"n_samples": self.n_samples, "status_counts": self.status_counts, "n_failed": int(failed.size),
               "failed_indices": failed[:MAX_FAILED_LISTED],
               "failed_indices_truncated": bool(failed.size > MAX_FAILED_LISTED),
               "failure_messages": {
                   Status(int(s)).name.lower(): STATUS_MESSAGES[Status(int(s))] for s in np.unique(self.status)
                   if s != Status.SUCCESS},
               "samples_per_s": self.samples_per_s, "wall_time_s": self.wall_time_s,
               **dict(zip(("chunks_run", "chunks_resumed", "samples_run"), self._counts)), "n_processes": self.n_processes,
               "chunk_size": self.chunk_size, "n_devices": self.n_devices, "bytes_per_sample": self.bytes_per_sample,
               "populations": {"inputs": "every sample (failed and invalid-parameter ones included)",
                               "statistics": "the successful samples, finite values only"},
               "inputs": {n: {"mean": v.mean(axis=0), "std": _sample_std(np.asarray(v, float))}
                          for n, v in self.draws.items()},
               "statistics": stats, "provenance": provenance()}
        if self.sample_index is not None:  # a rerun of chosen samples: row k is sample sample_index[k]
            out["sample_index"] = self.sample_index
        return out

    def save(self, out_dir, plots: bool = True, bands=None) -> list:
        """``samples.npz`` (one array per varied name, ``status``, every statistic), ``summary.json``
        and figures (histograms of the statistics, outputs against inputs; with
        ``bands={name: t}``, quantile bands over the times ``t`` of each such time-series statistic,
        ``bands_<name>.png``); summaries and figures over the finite values of the successful
        samples (``report`` module docstring); returns the paths."""
        return save_result(self, Path(out_dir), plots, bands)


#: ``summary.json`` lists the first this many failed sample numbers (``n_failed`` counts them all;
#: ``samples.npz``'s ``status`` marks every one)
MAX_FAILED_LISTED = 1000


def _nanmean(v) -> np.ndarray:
    with warnings.catch_warnings():  # a component without a finite value: NaN (null in JSON)
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(v, axis=0)


def _sample_std(v) -> np.ndarray:
    """Per component, the sample standard deviation (``ddof=1``) of the non-NaN values; NaN
    (null in JSON) with fewer than two."""
    n = np.sum(~np.isnan(v), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(v, axis=0, ddof=1)
    return np.where(n >= 2, sd, np.nan)


def _finite_quantiles(x, q) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(finite_values(x), np.asarray(q), axis=0)


@full_precision
def run(system: System, distributions: Mapping[str, AbstractDistribution], n_samples: int,
        statistics: Callable | None = None, *, key=None, chunk_size: int | None = None, devices=None, out=None,
        progress: bool = True, memory_budget: float = 2.0**30, indices=None, order=None,
        batch_size: int | str | None = "auto", context: Mapping | None = None) -> MonteCarloResult:
    """Run ``n_samples`` simulations of ``system`` with the named parameters drawn from
    ``distributions`` (module docstring).

    Args:
        system: the :class:`~diffsim.System` (its values are the nominal ones).
        distributions: ``{name: distribution}`` over :func:`diffsim.param_names` (``q0.*``,
            ``v0.*`` included).
        statistics: ``traj -> {name: array}`` reduced on the device per sample; ``q_final`` and
            ``v_final`` (the state at ``t1``) are always added.
        key: a ``jax.random`` key (default ``PRNGKey(0)``).
        chunk_size: samples per compiled call; default: from ``memory_budget`` [bytes] and the
            compiled memory of a probe chunk.
        devices: the local devices to shard each chunk over (default: all of
            ``jax.local_devices()``); the chunk size is a multiple of their count.
        out: directory for a resumable run (module docstring).
        progress: a progress bar (samples/s, ETA) per chunk.
        indices: run only these sample indices (e.g. ``result.failed`` of an earlier run);
            their draws are those of the full study.
        order: ``draws -> cost [N]`` (``draws[name]`` [N, *shape], all samples): the samples run
            in chunks sorted by this expected cost, so that a chunk's ``vmap`` — which runs until
            its slowest sample is done (adaptive steps, events) — groups samples of similar cost
            (e.g. ``lambda d: -d["q0.base"][:, 1]`` by drop height on S1:
            ``experiments/montecarlo_s1_drop.py`` measured the step efficiency 0.74 → 0.86).
            Results come back in sample order and do not depend on it beyond rounding
            (bit-identical on CPU with blocks; module docstring).
        batch_size: samples vectorised together on each device: each device's share of a chunk
            runs as ``lax.map`` over blocks of this many (padded to a multiple; the results do
            not depend on the chunk size or the device count, module docstring). ``"auto"``:
            :data:`CPU_BLOCK` (128) on CPU devices, where one ``vmap`` of a large share is slower
            (module docstring); the whole share (``None``) on GPUs.
        context: a JSON-able description of where ``system`` came from, part of the study's
            identity with ``out=`` (``diffsim montecarlo`` gives the scenario and its options): a
            resume with another context is refused.

    Refused with a :class:`MonteCarloError` that says why: non-integer ``n_samples`` /
    ``chunk_size`` / ``indices`` (not truncated), a ``key`` that is not a ``jax.random`` key,
    ``Samples`` that do not have a row of the parameter's entries per sample, a law over the
    orientation quaternion of a free or spherical joint's ``q0`` (``Samples`` of unit
    quaternions are accepted), a statistic named ``status``, ``index``, ``sample_index`` or like a varied name, and
    with ``out=``: a directory that holds another study, or a chunk file that is not one of this
    study's (named: delete it to recompute its samples).
    """
    key = _check_key(jax.random.PRNGKey(0) if key is None else key)
    names, shapes = _resolve(system, distributions, n_samples)
    n_samples = int(n_samples)
    # a failed sample keeps its status (no exception for the whole chunk)
    system = system.replace(throw=False)
    study = _Study(system, {n: distributions[n] for n in names}, key, tuple(names), tuple(shapes[n] for n in names),
                   statistics or _no_statistics)
    stat_shapes, program = _check_statistics(study)
    devices = list(jax.local_devices() if devices is None else devices)
    n_dev = len(devices)
    mesh = Mesh(np.array(devices), ("batch",)) if n_dev > 1 else None
    block = _block(batch_size, devices)
    per = None
    out = None if out is None else Path(out)
    auto_chunk = chunk_size is None
    if auto_chunk and out is not None and indices is None:
        # a resume reuses the study's own chunk size when these devices can split it (another device
        # count would size another chunk, and the chunks on disk would not be this study's)
        doc = _read_manifest(out)
        was = None if doc is None else doc["study"].get("chunk_size")
        if isinstance(was, int) and was >= 1 and was % n_dev == 0:
            chunk_size = was
    if chunk_size is None:
        chunk_size, per = _choose_chunk(study, mesh, n_samples, n_dev, memory_budget, block)
    chunk_size = _integer(chunk_size, "chunk_size")
    if chunk_size % n_dev:
        raise MonteCarloError(f"chunk_size must be a positive multiple of the device count {n_dev}, got {chunk_size}")
    if indices is None:
        all_idx = np.arange(n_samples)
    else:
        all_idx = np.asarray(indices)
        if all_idx.size and (all_idx.dtype.kind not in "iu" or all_idx.dtype == bool):
            raise MonteCarloError(f"indices must be integers (sample numbers), got {all_idx.ravel()[:5].tolist()} "
                                  f"(dtype {all_idx.dtype})")
        all_idx = all_idx.astype(np.int64).ravel() if all_idx.ndim <= 1 else all_idx
        if all_idx.ndim != 1:
            raise MonteCarloError(f"indices must be a list of sample numbers, got an array of shape {all_idx.shape}")
    if all_idx.size == 0 or all_idx.min() < 0 or all_idx.max() >= n_samples:
        raise MonteCarloError(f"indices must lie in [0, {n_samples}), got {all_idx[:5]}...")
    if order is not None:
        all_idx = all_idx[_sorted_by_cost(study, order, n_samples, all_idx)]
    chunks = [all_idx[k:k + chunk_size] for k in range(0, all_idx.size, chunk_size)]
    n_pad = _padded_length(chunk_size, n_dev, block)

    n_proc, proc = jax.process_count(), jax.process_index()
    if n_proc > 1 and out is None:
        raise MonteCarloError(f"{n_proc} processes share a study through its output directory: give out= "
                              "(a directory all processes can read and write)")
    if out is not None and indices is not None:
        raise MonteCarloError("indices (a rerun of chosen samples) runs in memory: leave out= unset")
    if out is not None:
        ident = _identity(names, distributions, n_samples, key, chunk_size, stat_shapes, program, block, system,
                          context)
        if order is not None:
            ident["order"] = _sha1(all_idx)
        _open_dir(out, ident, auto_chunk, n_dev)
    dtype = system.model.dtype
    spec = {**{f"draw:{n}": (shapes[n], dtype) for n in names},
            **{f"stat:{k}": (tuple(v.shape), v.dtype) for k, v in stat_shapes.items()}}

    results, n_run, n_resumed, n_simulated = [], 0, 0, 0
    t_start = time.perf_counter()
    mine = sum(c.size for k, c in enumerate(chunks) if k % n_proc == proc)
    # resumed chunks count as done from the start: the rate and the ETA are those of the run ones
    on_disk = 0 if out is None else sum(c.size for k, c in enumerate(chunks) if k % n_proc == proc
                                        and (out / "chunks" / f"chunk_{k:06d}.npz").exists())
    bar = tqdm(total=mine, initial=on_disk, unit="sample", disable=not progress, desc="montecarlo")
    for k, idx in enumerate(chunks):
        path = None if out is None else out / "chunks" / f"chunk_{k:06d}.npz"
        if k % n_proc != proc:  # another process's chunk: read back after the barrier
            continue
        if path is not None and path.exists():
            results.append(_read_chunk(path, idx, spec))
            n_resumed += 1
        else:
            padded = np.concatenate([idx, np.full(n_pad - idx.size, idx[-1])]) if idx.size < n_pad else idx
            draws, stats, status = jax.device_get(_run_chunk(study, _indices(padded, mesh), block, mesh))
            n = idx.size
            res = ({k2: np.asarray(v)[:n] for k2, v in draws.items()},
                   {k2: np.asarray(v)[:n] for k2, v in stats.items()}, np.asarray(status)[:n], idx)
            if path is not None:
                _write_chunk(path, *res)
            results.append(res)
            n_run += 1
            n_simulated += idx.size
            bar.update(idx.size)
        el = time.perf_counter() - t_start
        bar.set_postfix(samples_per_s=f"{n_simulated / el:.3g}" if el > 0 else "-")
    bar.close()
    if n_proc > 1:
        multihost_utils.sync_global_devices("diffsim.montecarlo: all chunks written")
        results = [_read_chunk(out / "chunks" / f"chunk_{k:06d}.npz", chunks[k], spec) for k in range(len(chunks))]
        # the study's counts: every process's chunks and samples (summary.json's, and the rate's)
        counts = np.asarray(multihost_utils.process_allgather(np.array([n_run, n_resumed, n_simulated], np.int64)))
        totals = tuple(int(c) for c in counts.reshape(-1, 3).sum(axis=0))
    else:
        totals = None
    wall = time.perf_counter() - t_start
    draws = {n: np.concatenate([r[0][n] for r in results]) for n in names}
    stats = {s: np.concatenate([r[1][s] for r in results]) for s in results[0][1]}
    status = np.concatenate([r[2] for r in results]).astype(np.int32)
    # a draw outside its quantity's domain (Normal over a mass drew -0.5 kg) ran, and may have "succeeded":
    # its sample is marked, not counted as a success
    status = np.where(_outside_domain(system, names, draws), np.int32(Status.INVALID_PARAMETER), status)
    ran = np.concatenate([np.asarray(r[3]) for r in results]).astype(np.int64)
    if order is not None:  # back to sample order
        back = np.argsort(ran, kind="stable")
        draws, stats = ({k: v[back] for k, v in d.items()} for d in (draws, stats))
        status, ran = status[back], ran[back]
    res = MonteCarloResult(draws, stats, status, wall, chunk_size, n_dev, n_run, n_resumed, per, n_simulated,
                           sample_index=None if indices is None else ran, n_processes=n_proc, totals=totals)
    if out is not None and indices is None and proc == 0:
        res.save(out, plots=False)
    return res


def _outside_domain(system, names, draws) -> np.ndarray:
    """Per sample, whether a draw puts a parameter outside its physical domain, checked on the
    whole parameter: the entries drawn by index (``body.b.inertia[0]``) assembled with the nominal
    others, in the order ``set_params`` applies them (sorted names)."""
    n = next(iter(draws.values())).shape[0]
    bad = np.zeros(n, bool)
    groups = {}
    for name in names:
        groups.setdefault(split_index(name)[0], []).append(name)
    for base, members in groups.items():
        whole = np.asarray(get_param(system, base), dtype=float)
        full = np.array(np.broadcast_to(whole, (n, *whole.shape)))
        for name in members:
            idx = split_index(name)[1]
            v = np.asarray(draws[name], dtype=float)
            if idx is None:
                full = v.reshape(full.shape).copy()
            else:
                full[(slice(None), *idx)] = v.reshape(full[(slice(None), *idx)].shape)
        bad |= outside_domain(base, full)[0]
    return bad


def _read_manifest(out: Path):
    """The manifest of ``out`` (``None`` if there is none)."""
    man = out / "manifest.json"
    if not man.exists():
        return None
    try:
        doc = json.loads(man.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as e:
        raise MonteCarloError(f"{man} is not readable JSON ({e}); remove it to start over") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("study"), dict):
        raise MonteCarloError(f"{man} is not a diffsim.montecarlo manifest (no 'study'); remove it to start over")
    return doc


def _versions() -> dict:
    out = {}
    for dist in ("diffsim", "jax", "equinox", "diffrax"):  # the last three make the traced programs and pytrees
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def _divisors_up_to(c: int, n: int) -> list:
    return [k for k in range(1, n + 1) if c % k == 0]


def _differences(old: dict, new: dict, auto_chunk: bool, n_dev: int, versions_differ: bool):
    """``(refusals, warnings)``: what differs between the manifest's study and this one, in words."""
    refuse, warn = [], []
    older = " (not recorded: manifest.json was written by an older diffsim)"
    first = ("precision", "context", "system")  # the causes first: another precision changes every array too
    keys = [*new, *(k for k in old if k not in new)]
    for k in sorted(keys, key=lambda k: first.index(k) if k in first else len(first)):
        was, v = old.get(k), new.get(k)
        if was == v:
            continue
        if k == "order":
            refuse.append("the order of the samples (order=) differs")
        elif k not in old:
            refuse.append(f"{k}{older}")
        elif k == "system":
            was_s, was_v = (was or {}).get("structure", {}), (was or {}).get("values", {})
            fields = sorted(f for f in set(v["values"]) | set(was_v) if was_v.get(f) != v["values"].get(f))
            shape_only = sorted(f for f in set(v["structure"]) | set(was_s) if was_s.get(f) != v["structure"].get(f)
                                and f not in fields)
            if fields:
                refuse.append(f"the system differs in {', '.join(fields)} (a parameter value, a setting or an "
                              "array's shape)")
            if shape_only:
                text = f"the system's structure differs in {', '.join(shape_only)} (a static setting or a type)"
                (warn if versions_differ else refuse).append(text)
        elif k == "sample_program":
            text = ("one sample's simulation computes something else (its traced program differs: a function the "
                    "system calls — dynamics, loads, torques, statistics' inputs — or a Python number it reads "
                    "changed)")
            (warn if versions_differ else refuse).append(text)
        elif k == "precision":
            a, b = (was or {}).get("dtype"), (v or {}).get("dtype")
            cli = "with --float32" if a == "float32" else "without --float32"
            refuse.append(f"precision {a} vs {b}: the study was run in {a}; resume it in {a} (CLI: {cli}; "
                          "Python: jax_enable_x64 as then)" if a != b else f"precision {was} vs {v}")
        elif k == "statistics":
            a, b = (was or {}).get("outputs"), v["outputs"]
            if a != b:
                diff = sorted(n for n in set(a or {}) | set(b) if (a or {}).get(n) != b.get(n))
                refuse.append(f"the statistics differ: {', '.join(diff)} (name, shape, dtype: was "
                              f"{ {n: (a or {}).get(n) for n in diff} }, now { {n: b.get(n) for n in diff} })")
            elif (was or {}).get("program") != v["program"]:
                text = "the statistics function computes something else (its traced program differs)"
                (warn if versions_differ else refuse).append(text)
        elif k == "chunk_size":
            if auto_chunk:
                refuse.append(f"the study's chunks hold {was} samples (sized automatically when it started), which "
                              f"the {n_dev} devices of this run cannot split evenly: resume on a device count that "
                              f"divides {was} (devices=jax.local_devices()[:k], CLI --cpu-devices k; k in "
                              f"{_divisors_up_to(int(was), max(n_dev, 8))})")
            else:
                refuse.append(f"the chunk size differs ({was} vs {v}): leave it unset (chunk_size / --chunk) to reuse "
                              f"{was}, or pass {was}")
        elif k == "batch_size":
            refuse.append(f"the block size differs ({was} vs {v}): pass batch_size={was!r}")
        elif k == "n_samples":
            refuse.append(f"the sample count differs ({was} vs {v})")
        elif k == "key":
            refuse.append("the key (seed) differs")
        elif k == "names":
            refuse.append(f"the varied names differ ({was} vs {v})")
        elif k == "distributions":
            diff = sorted(n for n in set(was or {}) | set(v) if (was or {}).get(n) != v.get(n))
            refuse.append(f"the distributions differ ({', '.join(diff)})")
        elif k == "context":
            a, b = was or {}, v or {}
            diff = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
            detail = []
            for n in diff:
                if isinstance(a.get(n), dict) and isinstance(b.get(n), dict):
                    sub = sorted(m for m in set(a[n]) | set(b[n]) if a[n].get(m) != b[n].get(m))
                    detail += [f"{m}: {a[n].get(m)!r} vs {b[n].get(m)!r}" for m in sub]
                else:
                    detail.append(f"{n}: {a.get(n)!r} vs {b.get(n)!r}")
            refuse.append(f"the scenario or its options differ ({'; '.join(detail)})")
        else:
            refuse.append(f"{k} differs")
    return refuse, warn


def _open_dir(out: Path, ident: dict, auto_chunk: bool = False, n_dev: int = 1):
    doc = _read_manifest(out)
    if doc is not None:
        old = doc["study"]
        now = _versions()
        was = {k: (doc.get("provenance") or {}).get("versions", {}).get(k) for k in now}
        changed = {k: (was[k], now[k]) for k in now if was[k] != now[k]}
        refuse, warn = _differences(old, jsonable(ident), auto_chunk, n_dev, bool(changed))
        if refuse:
            raise MonteCarloError(f"{out} holds a different study: {'; '.join(refuse)}. Use another directory "
                                  "(or delete it to start over)")
        if changed:
            warn.insert(0, "it was started with " + ", ".join(f"{k} {a} (now {b})" for k, (a, b) in changed.items())
                        + ": its finished chunks are kept, the rest is computed by this version")
        for w in warn:
            warnings.warn(f"resuming the study in {out}: {w}", MonteCarloWarning, stacklevel=3)
        return
    sub = out / "chunks"
    if sub.exists() and any(sub.iterdir()):
        raise MonteCarloError(f"{out} has chunks but no manifest: remove it or choose another directory")
    (out / "chunks").mkdir(parents=True, exist_ok=True)
    doc = {"study": jsonable(ident), "provenance": provenance()}
    _atomic_write(out / "manifest.json", lambda p: p.write_text(json.dumps(doc, indent=2) + "\n"))


def _write_chunk(path, draws, stats, status, idx):
    arrays = {"index": idx, "status": status}
    arrays.update({f"draw:{k}": v for k, v in draws.items()})
    arrays.update({f"stat:{k}": v for k, v in stats.items()})

    def write(tmp):
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
    _atomic_write(path, write)


def _read_chunk(path, idx, spec):
    """A finished chunk read back and checked against what this study writes there: readable, its
    sample indices ``idx``, the draws and statistics of ``spec`` (``{"draw:<name>": (shape, dtype),
    "stat:<name>": ...}``) with one row per sample. Anything else is a :class:`MonteCarloError` that
    names the file (delete it and rerun: its samples are recomputed)."""
    fix = "delete it and rerun with the same arguments to recompute its samples"
    try:
        z = np.load(path, allow_pickle=False)
        if not hasattr(z, "files"):
            raise ValueError("not an .npz archive")
        with z:
            data = {k: z[k] for k in z.files}
    except Exception as e:  # truncated, empty, foreign: numpy raises BadZipFile, EOFError, ValueError, OSError ...
        raise MonteCarloError(f"chunk file {path} cannot be read ({type(e).__name__}: {e}); {fix}") from None
    idx = np.asarray(idx)
    n = idx.size
    problems = []
    index = data.get("index")
    if index is None or index.shape != idx.shape or not np.array_equal(index, idx):
        got = "none" if index is None else f"{np.asarray(index).ravel()[:8].tolist()} ({np.size(index)} rows)"
        problems.append(f"its sample indices are {got}, expected {idx[:8].tolist()} ({n} rows)")
    status = data.get("status")
    if status is None or status.shape != (n,) or np.dtype(status.dtype).kind not in "iu":
        problems.append(f"its status is {'missing' if status is None else f'of shape {status.shape}'}, expected "
                        f"[{n}] integers")
    missing = sorted(set(spec) - set(data))
    extra = sorted(k for k in set(data) - set(spec) - {"index", "status"})
    if missing or extra:
        problems.append(f"its arrays differ (missing {missing}, unexpected {extra})")
    for k, (shape, dtype) in spec.items():
        if k in data and (data[k].shape != (n, *shape) or np.dtype(data[k].dtype) != np.dtype(dtype)):
            problems.append(f"{k} has shape {data[k].shape} and dtype {data[k].dtype}, expected "
                            f"{(n, *shape)} {np.dtype(dtype).name}")
    if problems:
        raise MonteCarloError(f"chunk file {path} is not a chunk of this study: {'; '.join(problems)}; {fix}")
    draws = {k[5:]: v for k, v in data.items() if k.startswith("draw:")}
    stats = {k[5:]: v for k, v in data.items() if k.startswith("stat:")}
    return draws, stats, status, index
