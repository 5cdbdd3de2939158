"""Test configuration.

* float64 everywhere (an explicit choice, see STYLE.md); float32 is tested where stated.
* XLA's CPU backend runs without its new fusion emitters unless XLA_FLAGS says otherwise:
  measured here, that roughly halves compile time (which dominates this suite) and does not
  slow the compiled code; arithmetic is unchanged (see README, "Performance"). Small dots run on
  the calling thread (``--xla_cpu_multi_thread_eigen=false``), as in the CLI and the benchmarks.
* The tests compile with LLVM's optimisation level 0 (``--xla_backend_optimization_level=0``;
  XLA's own HLO passes still run): compiling is most of this suite's time, and the tests run
  each program a few times. Measured on the 2 shared cores, same commit: fast subset 3m35 ->
  2m34, full suite 21m36 -> 17m48 (CPU 42 -> 32 min), all tests passing unchanged — LLVM's
  passes preserve IEEE semantics (XLA's fast math is off), so values change at most by the
  fused multiply-adds that the optimiser forms. The library, its CLI, the benchmarks and the
  experiments keep XLA's default (optimised code for long runs); the CLI's subprocesses in
  the tests inherit the test setting. The level is set through JAX's
  ``jax_disable_most_optimizations`` (read at each compile), so a test whose time is in running
  its programs is marked ``optimized`` and compiles at level 1: measured on the 10-s energy
  balance of a flexible arm, compile 25 -> 22 s, run 33 -> 12.5 s; on a compile-bound module
  (tests/simulation/test_system.py) level 1 costs ~25 % more compile, so it is not the default.
* One OpenBLAS thread per process (``OPENBLAS_NUM_THREADS=1``): with both cores busy (the two
  workers), OpenBLAS's own threads wait on each other — the matrix-pencil test (42 SVDs of
  1401 x 234) took 55 s beside two busy cores and 1.6 s with one thread.
* Compiled programs are released at the end of a test module once the worker holds more than
  20 000 memory mappings (``jax.clear_caches``). XLA's CPU
  backend maps ~3 memory regions per compiled executable (measured: 300 small programs add 970
  maps, ``jax.clear_caches`` returns them); a worker that kept every executable of the suite
  reached Linux's ``vm.max_map_count`` (65530) late in the run, LLVM then failed ("LLVM
  compilation error: Cannot allocate memory") and the worker died with a segmentation fault or
  an abort inside ``backend_compile_and_load`` (reproduced with ``vm.max_map_count`` lowered to
  3000: the crash comes at ~2900 maps). With the release a worker peaked at 28.6k maps and
  6.5 GB in a full run (it grew to 8.4 GB and crashed before).
* Python's cyclic garbage collector runs its young generation every 50 000 allocations instead
  of 700 (``gc.set_threshold``): tracing allocates millions of short-lived objects, and in a
  process that holds many traced programs each collection that reaches the oldest generation
  walks all of them. Measured on tests/simulation/test_system.py (one process): 19 full
  collections, 6.6-8.0 s of 150 s, with the default thresholds; 1.1 s with these. Cycles are still
  collected (the old generations follow the young one's count), later.
* ``--dist loadfile`` keeps a module's tests on one worker (they share compiled functions through
  module fixtures), except the notebooks: each end-to-end notebook run is its own unit, so the
  ~7 minutes of notebooks are shared by the workers (:func:`pytest_xdist_make_scheduler`), and
  the units start longest first (:data:`UNIT_SECONDS`).
"""

import contextlib
import gc
import json
import logging
import os
import pathlib

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false "
                      "--xla_backend_optimization_level=1")
# LLVM level 0 unless a test is marked ``optimized`` (:func:`pytest_runtest_protocol`); inherited by
# the CLI subprocesses and the notebook kernels
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
# one OpenBLAS thread per process (workers, subprocesses, kernels: they inherit it; this process
# loaded numpy before this file, its own setting comes from its environment)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
#: Level 0 by default (JAX_DISABLE_MOST_OPTIMIZATIONS=0 compiles every test at level 1)
LEVEL_0 = os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"].lower() not in ("0", "false", "no", "off", "n", "f")
jax.config.update("jax_disable_most_optimizations", LEVEL_0)

import pytest  # noqa: E402

gc.set_threshold(50_000, 10, 10)


#: Release compiled programs once the process holds this many memory mappings (a third of
#: Linux's default vm.max_map_count; the heaviest module adds ~14k).
MAX_MAPS = 20_000


def _memory_maps() -> int | None:
    try:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)
    except OSError:  # not Linux: no such limit to guard
        return None


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """When a test module ends with the process above :data:`MAX_MAPS` memory mappings, drop
    JAX's compiled programs and traces (below it, later modules may reuse them)."""
    yield
    n = _memory_maps()
    if n is not None and n > MAX_MAPS:
        jax.clear_caches()
        gc.collect()


@pytest.fixture
def compile_log(caplog):
    """``with compile_log() as log: ...`` — afterwards ``log`` holds JAX's "Compiling ..." message of
    every program compiled inside the block (``jax.log_compiles``): a test of what must not compile
    again asserts ``log == []``."""

    @contextlib.contextmanager
    def record():
        caplog.clear()
        log = []
        with jax.log_compiles(), caplog.at_level(logging.DEBUG):
            yield log
        log += [r.getMessage() for r in caplog.records if "Compiling" in r.getMessage()]

    return record


#: Measured seconds of the longest scheduling units (a test module, or one notebook run) on the
#: 2-core machine (``pytest --durations=0``, summed per unit); :func:`pytest_collection_modifyitems`
#: starts them first so that the two workers finish together (xdist otherwise orders units by
#: their number of tests, which left a 100-second notebook for the end). Only the order depends
#: on it: a stale or missing entry costs balance, never a test.
UNIT_SECONDS = pathlib.Path(__file__).with_name("unit_seconds.json")


def _unit(item) -> str:
    """The scheduling unit of a test (:func:`pytest_xdist_make_scheduler`)."""
    nodeid = item.nodeid
    return nodeid if "::test_notebook_runs_end_to_end[" in nodeid else nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    """Tests under tests/seeds/ reproduce the source papers: mark them ``seed`` (and ``slow``:
    each integrates a paper's system over seconds; the fast subset leaves them to the full run).
    Units are ordered longest first (:data:`UNIT_SECONDS`), keeping each unit's own order."""
    for item in items:
        if "seeds" in item.path.parts:
            item.add_marker("seed")
            item.add_marker("slow")
    try:
        seconds = json.loads(UNIT_SECONDS.read_text())
    except (OSError, ValueError):
        return
    first = {}
    for k, item in enumerate(items):
        first.setdefault(_unit(item), k)
    items.sort(key=lambda it: (-float(seconds.get(_unit(it), 0.0)), first[_unit(it)]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test marked ``optimized`` (its time is in running programs, not in compiling them)
    compiles with LLVM's optimisation level 1 (``XLA_FLAGS``) instead of level 0, through setup,
    call and teardown, and so do the subprocesses it starts. Programs compiled before it (module
    fixtures of earlier tests) are reused as they are: the level changes speed, not results."""
    if item.get_closest_marker("optimized") is None or not LEVEL_0:
        yield
        return
    env = os.environ.get("JAX_DISABLE_MOST_OPTIMIZATIONS")
    jax.config.update("jax_disable_most_optimizations", False)
    os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "0"
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", True)
        os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] = env


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown when it is not loaded
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's ``loadfile`` scheduling, with every end-to-end notebook run
    (tests/test_notebooks.py, one fresh kernel each, nothing shared) scheduled on its own."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False  # keep the longest-first order of the collection

    class LoadFileNotebooksApart(LoadFileScheduling):
        def _split_scope(self, nodeid):
            if "::test_notebook_runs_end_to_end[" in nodeid:
                return nodeid
            return super()._split_scope(nodeid)

    return LoadFileNotebooksApart(config, log)
