"""Test configuration.

* float64 everywhere (an explicit choice, see STYLE.md); float32 is tested where stated.
* XLA's CPU backend runs without its new fusion emitters unless XLA_FLAGS says otherwise:
  measured here, that roughly halves compile time (which dominates this suite) and does not
  slow the compiled code; arithmetic is unchanged (see README, "Performance").
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


def pytest_collection_modifyitems(config, items):
    """Tests under tests/seeds/ reproduce the source papers: mark them ``seed`` (and ``slow``:
    each integrates a paper's system over seconds; the fast subset leaves them to the full run)."""
    for item in items:
        if "seeds" in item.path.parts:
            item.add_marker("seed")
            item.add_marker("slow")
