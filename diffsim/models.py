"""The model files shipped with diffsim, by name.

``diffsim.load_mjcf(models.path("seed000_dual_arm"))`` loads the S0 dual-arm robot from any
working directory (the files are installed with the package, in ``diffsim/scenarios/data/``).
Pure Python: no JAX.
"""

from __future__ import annotations

from pathlib import Path

#: where the packaged model files are
DATA_DIR = Path(__file__).resolve().parent / "scenarios" / "data"
#: the file types that are models
SUFFIXES = (".xml", ".urdf")


def names() -> list[str]:
    """The names of the packaged model files (file names without extension)."""
    return sorted(p.stem for p in DATA_DIR.iterdir() if p.is_file() and p.suffix in SUFFIXES)


def path(name: str) -> Path:
    """The absolute path of the packaged model file ``name`` (with or without its extension),
    e.g. ``path("seed000_dual_arm")`` → ``.../diffsim/scenarios/data/seed000_dual_arm.xml``.

    Raises:
        FileNotFoundError: no such model; the message lists the available names.
    """
    for p in sorted(DATA_DIR.iterdir()):
        if p.is_file() and p.suffix in SUFFIXES and name in (p.name, p.stem):
            return p
    raise FileNotFoundError(f"no model {name!r} is shipped with diffsim; available: {', '.join(names())}")


__all__ = ["DATA_DIR", "names", "path"]
