"""Model import/export (MJCF, URDF, MuJoCo). The parsers are plain Python (no JAX): they fill a
:class:`~diffsim.model.ModelBuilder` and return its validated :class:`~diffsim.model.Model`.
Contacts are not part of this release: geoms are read for inertia only."""

from .mjcf import load_mjcf
from .mujoco_bridge import from_mjmodel, from_mujoco, to_mujoco
from .urdf import load_urdf

__all__ = ["from_mjmodel", "from_mujoco", "load_mjcf", "load_urdf", "to_mujoco"]
