"""Random trees for testing (in the spirit of spatial_v2's ``autoTree``)."""

from __future__ import annotations

import numpy as np

from .builder import ModelBuilder
from .model import Model
from .rotations import quat_to_rot


def _random_rotation(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _random_inertia(rng, mass):
    # a random box-like mass distribution: guaranteed physical (triangle inequality)
    dims = rng.uniform(0.1, 1.0, size=3)
    d = mass / 12.0 * np.array([dims[1] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[1] ** 2])
    R = quat_to_rot(_random_rotation(rng))
    return R @ np.diag(d) @ R.T


def random_tree(
    seed: int,
    n_bodies: int = 6,
    joint_types=("revolute", "prismatic", "spherical"),
    base: str | None = "free",
    n_arms: int | None = None,
    gravity=(0.0, 0.0, -9.81),
    damping: bool = False,
    planar_base: bool = False,
) -> Model:
    """A random multi-arm tree: a base (``'free'``, ``'planar'``, ``None`` = a fixed root link)
    and ``n_bodies`` more bodies with joints drawn from ``joint_types``; parents are drawn so
    the tree branches (``n_arms`` chains when given)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder(gravity=gravity)
    names = ["base"]
    b.add_body(
        "base",
        joint=base or "revolute",
        axis=[0, 0, 1],
        mass=rng.uniform(1.0, 5.0),
        com=rng.uniform(-0.2, 0.2, 3),
        inertia=_random_inertia(rng, 3.0),
        damping=rng.uniform(0, 0.5) if (damping and base is None) else 0.0,
    )
    heads = ["base"] * (n_arms or 0)
    for k in range(n_bodies):
        if n_arms:
            a = k % n_arms
            parent = heads[a]
        else:
            parent = names[rng.integers(0, len(names))]
        jtype = joint_types[rng.integers(0, len(joint_types))]
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        mass = rng.uniform(0.5, 3.0)
        name = f"b{k + 1}"
        b.add_body(
            name,
            parent=parent,
            joint=jtype,
            axis=axis,
            pos=rng.uniform(-0.6, 0.6, 3),
            quat=_random_rotation(rng),
            mass=mass,
            com=rng.uniform(-0.3, 0.3, 3),
            inertia=_random_inertia(rng, mass),
            damping=rng.uniform(0, 0.5) if damping else 0.0,
            armature=rng.uniform(0, 0.1) if damping else 0.0,
        )
        names.append(name)
        if n_arms:
            heads[a] = name
    return b.build()
