"""Models and helpers shared by the flexible-link tests (test_flexible*.py, test_contact.py)."""

import jax
import jax.numpy as jnp
import numpy as np

import diffsim as ds
from diffsim.beams import PolynomialModes
from diffsim.flexible import beam


def _poly(powers, theta_shift=0.0):
    """Shapes W_k = η^p_k (clamped root for p ≥ 2); Θ = W′ (+ a Timoshenko-like shift)."""
    n = len(powers)
    deg = max(powers) + 1
    c = np.zeros((n, deg))
    for k, p in enumerate(powers):
        c[k, p] = 1.0
    th = None
    if theta_shift:
        th = np.zeros((n, deg))
        for k, p in enumerate(powers):
            th[k, p - 1] = p
            th[k, 2] += theta_shift
    return PolynomialModes(c, th) if th is not None else PolynomialModes(c)


def _link(stiffening=True, **kw):
    args = dict(
        EI_z=50.0, EI_y=60.0, GJ=30.0, modes_y=_poly([2, 3]), modes_z=_poly([2]), modes_torsion=_poly([1]),
        rotary_inertia=(1e-3, 5e-4, 5e-4), air_damping=0.1, kelvin_voigt=0.01, I_z=1e-3, I_y=1e-3,
        tip_mass=0.3, tip_inertia=(1e-3, 2e-3, 3e-3), n_quad=12, stiffening=stiffening,
    )
    args.update(kw)
    return beam(1.0, 2.0, **args)


def _mixed_tree(base="planar", stiffening=True):
    b = ds.ModelBuilder(gravity=(0.3, -9.81, 0.2))
    b.add_body("l1", None, joint=base, axis=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1), flex=_link(stiffening), damping=0.2)
    b.add_body("l2", "l1", joint="revolute", axis=(0, 1, 0), pos=(0.1, 0.05, 0), mass=0.5, com=(0.3, 0.01, 0),
               inertia=(0.01, 0.02, 0.03), flex=_link(stiffening))
    b.add_body("l3", "l2", joint="prismatic", axis=(1, 0, 0), mass=0.7, com=(0.1, 0, 0.02), inertia=(0.01, 0.02, 0.03))
    b.add_body("l4", "l1", joint="revolute", axis=(1, 0, 0), pos=(0.0, 0.1, 0), mass=0.7, com=(0.1, 0, 0.02),
               inertia=(0.01, 0.02, 0.03), armature=0.05)
    return b.build()


def _state(m, seed, scale=0.3):
    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    q = ds.random_configuration(m, k[0], scale)
    return q, jax.random.normal(k[1], (m.nv,)), jax.random.normal(k[2], (m.nv,))


def _rel(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))


def _energy_arm(damped):
    b = ds.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    kw = dict(EI_z=40.0, EI_y=40.0, GJ=20.0, modes_y=_poly([2]), modes_z=_poly([2]), modes_torsion=_poly([1]),
              rotary_inertia=(1e-3, 5e-4, 5e-4), I_z=1e-3, I_y=1e-3, n_quad=8, tip_mass=0.2)
    if damped:
        kw.update(air_damping=0.05, kelvin_voigt=20.0)
    b.add_body("l1", None, joint="revolute", axis=(0, 0, 1), flex=beam(1.0, 1.0, **kw), damping=0.1 if damped else 0.0)
    b.add_body("l2", "l1", joint="revolute", axis=(0, 1, 0), mass=0.3, com=(0.2, 0, 0), inertia=(1e-3, 2e-3, 2e-3),
               flex=beam(0.8, 1.0, **kw))
    return b.build()
