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
sizes, statistics, code versions); a rerun of the same study skips the chunks on disk, and a different
study in the same directory is refused.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
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
from ..model.params import ParamError, outside_domain
from ..precision import full_precision
from ..simulation.simulate import simulate
from ..simulation.system import System, get_param, set_params
from ..simulation.trajectory import STATUS_MESSAGES, Status
from .distributions import AbstractDistribution, Samples, _sha1
from .report import save_result

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

    def one(self, i):
        draws = self.draws(i)
        traj = simulate(set_params(self.system, draws))
        stats = {**final_state(traj), **self.statistics(traj)}
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


def _resolve(system, distributions, n_samples):
    if not isinstance(system, System):
        raise MonteCarloError(f"run needs a diffsim.System, got {type(system).__name__}")
    if int(n_samples) < 1:
        raise MonteCarloError(f"n_samples must be >= 1, got {n_samples}")
    if not distributions:
        raise MonteCarloError("give at least one uncertain name (distributions = {name: distribution})")
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
            if v.shape[0] < n_samples or v.shape[1:] not in (shapes[n], ()) and v[0].size != int(np.prod(shapes[n])):
                raise MonteCarloError(f"{n!r}: Samples has shape {v.shape}; need [{n_samples}, *{shapes[n]}]")
        else:  # each parameter of the law broadcasts to the named parameter's shape (the draws have it)
            for field, value in vars(d).items():
                if not _fits(value, shapes[n]):
                    raise MonteCarloError(f"{n!r} has shape {shapes[n]}; its {type(d).__name__}'s {field} has shape "
                                          f"{np.shape(value)}, which does not broadcast to it")
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
    try:
        shapes = jax.eval_shape(lambda: study.one(jnp.asarray(0))[1])
    except TypeError as e:
        raise MonteCarloError(f"statistics must return a dict of arrays: {str(e).splitlines()[0]}") from None
    if not isinstance(shapes, dict):
        raise MonteCarloError(f"statistics must return a dict of arrays, got {type(shapes).__name__}")
    for k, v in shapes.items():
        if not isinstance(v, jax.ShapeDtypeStruct):
            raise MonteCarloError(f"statistic {k!r} is not an array (got {type(v).__name__})")
    return shapes


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


def _identity(names, dists, n_samples, key, chunk_size, statistics, block=None):
    return {"names": names, "distributions": {n: dists[n].describe() for n in names}, "n_samples": int(n_samples),
            "key": np.asarray(jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
                              else key).tolist(),
            "chunk_size": int(chunk_size),
            "statistics": getattr(statistics, "__qualname__", repr(statistics)), "batch_size": block}


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
    chunks_run: int
    chunks_resumed: int
    bytes_per_sample: float | None = None
    samples_run: int | None = None  # simulated in this call by this process (not read back from disk)
    sample_index: np.ndarray | None = None  # each row's sample number, for a rerun of chosen indices (else 0..N-1)

    @property
    def n_samples(self) -> int:
        return int(self.status.shape[0])

    @property
    def samples_per_s(self) -> float:
        """Samples simulated per second of this call (resumed chunks do not count)."""
        n = self.n_samples if self.samples_run is None else self.samples_run
        return n / self.wall_time_s if self.wall_time_s > 0 else float("inf")

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
        """Quantiles of a statistic over the (successful) samples, per component."""
        x = self.statistics[name]
        if successful_only:
            x = x[self.status == Status.SUCCESS]
        return np.quantile(x, np.asarray(q), axis=0)

    def summary_json(self) -> dict:
        ok = self.status == Status.SUCCESS
        stats = {}
        for k, x in self.statistics.items():
            xs = x[ok]
            stats[k] = {"shape": list(x.shape[1:]), "mean": xs.mean(axis=0) if xs.size else None,
                        "std": xs.std(axis=0) if xs.size else None,
                        "quantiles": {str(q): v for q, v in zip((0.05, 0.25, 0.5, 0.75, 0.95),
                                                                 np.quantile(xs, [0.05, 0.25, 0.5, 0.75, 0.95],
                                                                             axis=0))} if xs.size else None}
        return {"n_samples": self.n_samples, "status_counts": self.status_counts,
                "failed_indices": self.failed[:1000], "failure_messages": {
                    Status(int(s)).name.lower(): STATUS_MESSAGES[Status(int(s))] for s in np.unique(self.status)
                    if s != Status.SUCCESS},
                "samples_per_s": self.samples_per_s, "wall_time_s": self.wall_time_s, "chunk_size": self.chunk_size,
                "n_devices": self.n_devices, "bytes_per_sample": self.bytes_per_sample,
                "inputs": {n: {"mean": v.mean(axis=0), "std": v.std(axis=0)} for n, v in self.draws.items()},
                "statistics": stats, "provenance": provenance()}

    def save(self, out_dir, plots: bool = True, bands=None) -> list:
        """``samples.npz`` (one array per varied name, ``status``, every statistic), ``summary.json``
        and figures (histograms of the statistics, outputs against inputs; with
        ``bands={name: t}``, quantile bands over the times ``t`` of each such time-series statistic,
        ``bands_<name>.png``); returns the paths."""
        return save_result(self, Path(out_dir), plots, bands)


@full_precision
def run(system: System, distributions: Mapping[str, AbstractDistribution], n_samples: int,
        statistics: Callable | None = None, *, key=None, chunk_size: int | None = None, devices=None, out=None,
        progress: bool = True, memory_budget: float = 2.0**30, indices=None, order=None,
        batch_size: int | str | None = "auto") -> MonteCarloResult:
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
    """
    key = jax.random.PRNGKey(0) if key is None else key
    names, shapes = _resolve(system, distributions, n_samples)
    # a failed sample keeps its status (no exception for the whole chunk)
    system = system.replace(throw=False)
    study = _Study(system, {n: distributions[n] for n in names}, key, tuple(names), tuple(shapes[n] for n in names),
                   statistics or _no_statistics)
    _check_statistics(study)
    devices = list(jax.local_devices() if devices is None else devices)
    n_dev = len(devices)
    mesh = Mesh(np.array(devices), ("batch",)) if n_dev > 1 else None
    block = _block(batch_size, devices)
    per = None
    if chunk_size is None:
        chunk_size, per = _choose_chunk(study, mesh, n_samples, n_dev, memory_budget, block)
    chunk_size = int(chunk_size)
    if chunk_size < 1 or chunk_size % n_dev:
        raise MonteCarloError(f"chunk_size must be a positive multiple of the device count {n_dev}, got {chunk_size}")
    all_idx = np.arange(int(n_samples)) if indices is None else np.asarray(indices, dtype=np.int64)
    if all_idx.size == 0 or all_idx.min() < 0 or all_idx.max() >= n_samples:
        raise MonteCarloError(f"indices must lie in [0, {n_samples}), got {all_idx[:5]}...")
    if order is not None:
        all_idx = all_idx[_sorted_by_cost(study, order, n_samples, all_idx)]
    chunks = [all_idx[k:k + chunk_size] for k in range(0, all_idx.size, chunk_size)]
    n_pad = _padded_length(chunk_size, n_dev, block)

    out = None if out is None else Path(out)
    n_proc, proc = jax.process_count(), jax.process_index()
    if n_proc > 1 and out is None:
        raise MonteCarloError(f"{n_proc} processes share a study through its output directory: give out= "
                              "(a directory all processes can read and write)")
    if out is not None and indices is not None:
        raise MonteCarloError("indices (a rerun of chosen samples) runs in memory: leave out= unset")
    if out is not None:
        ident = _identity(names, distributions, n_samples, key, chunk_size, statistics, block)
        if order is not None:
            ident["order"] = _sha1(all_idx)
        _open_dir(out, ident)

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
            results.append(_read_chunk(path))
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
        results = [_read_chunk(out / "chunks" / f"chunk_{k:06d}.npz") for k in range(len(chunks))]
    wall = time.perf_counter() - t_start
    draws = {n: np.concatenate([r[0][n] for r in results]) for n in names}
    stats = {s: np.concatenate([r[1][s] for r in results]) for s in results[0][1]}
    status = np.concatenate([r[2] for r in results]).astype(np.int32)
    # a draw outside its quantity's domain (Normal over a mass drew -0.5 kg) ran, and may have "succeeded":
    # its sample is marked, not counted as a success
    for n in names:
        if draws[n].shape[0]:
            status = np.where(outside_domain(n, draws[n])[0], np.int32(Status.INVALID_PARAMETER), status)
    ran = np.concatenate([np.asarray(r[3]) for r in results]).astype(np.int64)
    if order is not None:  # back to sample order
        back = np.argsort(ran, kind="stable")
        draws, stats = ({k: v[back] for k, v in d.items()} for d in (draws, stats))
        status, ran = status[back], ran[back]
    res = MonteCarloResult(draws, stats, status, wall, chunk_size, n_dev, n_run, n_resumed, per, n_simulated,
                           sample_index=None if indices is None else ran)
    if out is not None and indices is None and proc == 0:
        res.save(out, plots=False)
    return res


def _open_dir(out: Path, ident: dict):
    man = out / "manifest.json"
    if man.exists():
        try:
            old = json.loads(man.read_text())
        except json.JSONDecodeError as e:
            raise MonteCarloError(f"{man} is not readable JSON ({e}); remove it to start over") from None
        if old.get("study") != jsonable(ident):
            raise MonteCarloError(f"{out} holds a different study (manifest.json differs in "
                                  f"{sorted(k for k in ident if old.get('study', {}).get(k) != jsonable(ident[k]))}); "
                                  "use another directory")
        return
    sub = out / "chunks"
    if sub.exists() and any(sub.iterdir()):
        raise MonteCarloError(f"{out} has chunks but no manifest: remove it or choose another directory")
    (out / "chunks").mkdir(parents=True, exist_ok=True)
    doc = {"study": jsonable(ident), "provenance": provenance()}
    _atomic_write(man, lambda p: p.write_text(json.dumps(doc, indent=2) + "\n"))


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


def _read_chunk(path):
    with np.load(path) as z:
        draws = {k[5:]: z[k] for k in z.files if k.startswith("draw:")}
        stats = {k[5:]: z[k] for k in z.files if k.startswith("stat:")}
        return draws, stats, z["status"], z["index"]
