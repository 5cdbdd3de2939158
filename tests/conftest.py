"""Test configuration: every test runs in float64 (an explicit choice, see STYLE.md)."""

import jax

jax.config.update("jax_enable_x64", True)
