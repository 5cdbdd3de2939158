"""Tiny models and costs shared by the planning tests (module-level functions, so that every
test that solves the same problem reuses one compiled program)."""

import math

import jax.numpy as jnp

import diffsim as ds

UP = -math.pi / 2  # the pendulum's angle with its centre of mass above the joint (gravity −z, axis +y)


def pendulum(dtype=None):
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=[0.01, 0.03, 0.03],
               damping=0.05)
    return b.build(dtype)


def two_link():
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=[0.01, 0.03, 0.03],
               damping=0.05)
    b.add_body("l2", parent="l1", joint="revolute", axis=[0, 1, 0], pos=[0.6, 0, 0], mass=0.8,
               com=[0.25, 0, 0], inertia=[0.01, 0.02, 0.02])
    b.add_site("tip", "l2", pos=[0.5, 0, 0])
    return b.build()


def floating_arm():
    """A free-floating base with a two-joint arm, no gravity (a small space robot)."""
    b = ds.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("base", joint="free", mass=10.0, inertia=[0.4, 0.5, 0.6])
    b.add_body("a1", parent="base", joint="revolute", axis=[0, 0, 1], pos=[0.3, 0, 0], mass=1.0, com=[0.25, 0, 0],
               inertia=[0.005, 0.03, 0.03])
    b.add_body("a2", parent="a1", joint="revolute", axis=[0, 1, 0], pos=[0.5, 0, 0], mass=0.5, com=[0.2, 0, 0],
               inertia=[0.003, 0.015, 0.015])
    b.add_site("tip", "a2", pos=[0.4, 0, 0])
    return b.build()


def swing_running(q, v, tau):
    return 1e-2 * jnp.sum(tau**2) + 0.1 * jnp.sum((q - UP) ** 2)


def swing_terminal(q, v):
    return 100.0 * (jnp.sum((q - UP) ** 2) + 0.1 * jnp.sum(v**2))
