"""Test configuration.

* float64 everywhere (an explicit choice, see STYLE.md); float32 is tested where stated.
* XLA's CPU backend runs without its new fusion emitters unless XLA_FLAGS says otherwise:
  measured here, that roughly halves compile time (which dominates this suite) and does not
  slow the compiled code; arithmetic is unchanged (see README, "Performance").
* Compiled programs are released after every test module (``jax.clear_caches``): a worker
  that keeps every executable of the suite grew by ~0.4 GB a minute (7.3 GB after 16 min,
  measured with ``ps`` during ``pytest -n 2``), and two such workers exhausted the 24 GB
  machine: XLA then crashed inside compilation (segmentation faults and aborts in
  ``backend_compile_and_load``), which took the worker and the CI run down.
"""

import gc
import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs and traces when a test module ends (module fixtures share
    compiled functions within a module; nothing is shared across modules)."""
    yield
    jax.clear_caches()
    gc.collect()


def pytest_collection_modifyitems(config, items):
    """Tests under tests/seeds/ reproduce the source papers: mark them ``seed`` (and ``slow``:
    each integrates a paper's system over seconds; the fast subset leaves them to the full run)."""
    for item in items:
        if "seeds" in item.path.parts:
            item.add_marker("seed")
            item.add_marker("slow")
