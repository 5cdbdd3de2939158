"""Named access to model parameters: ``body.<name>.mass`` and friends.

Names are static strings resolved in Python, so :func:`get_param` and :func:`set_params` work
unchanged under ``jit``, ``grad`` and ``vmap`` (the values are traced, the names are not).

=============================  =========  ===============================================
name                           shape      meaning
=============================  =========  ===============================================
``body.<b>.mass``              ()         kg
``body.<b>.com``               (3,)       m, centre of mass in the body frame
``body.<b>.inertia``           (3, 3)     kg m², about the COM, body axes
``body.<b>.pos``               (3,)       m, body frame origin in the parent frame
``body.<b>.rot``               (3, 3)     body frame orientation in the parent frame
``joint.<j>.axis``             (3,)       unit axis (revolute / prismatic joints)
``joint.<j>.damping``          (nv_j,)    viscous damping per joint DOF
``joint.<j>.armature``         (nv_j,)    rotor inertia per joint DOF
``site.<s>.pos`` / ``.rot``    (3,) / 3x3 site placement on its body
``gravity``                    (3,)       m/s², world frame
=============================  =========  ===============================================
"""

from __future__ import annotations

from typing import Mapping

import equinox as eqx
import jax.numpy as jnp

from .joints import USES_AXIS
from .model import Model

_BODY_FIELDS = {"mass": "mass", "com": "com", "inertia": "inertia", "pos": "tree_pos", "rot": "tree_rot"}
_SITE_FIELDS = {"pos": "site_pos", "rot": "site_rot"}


def param_names(model: Model) -> list[str]:
    """Every named parameter of the model, in a stable order."""
    t = model.topology
    names = []
    for b in t.body_names:
        names += [f"body.{b}.{k}" for k in _BODY_FIELDS]
    for i, j in enumerate(t.joint_names):
        if t.joint_types[i] in USES_AXIS:
            names.append(f"joint.{j}.axis")
        if t.nv_joint[i]:
            names += [f"joint.{j}.damping", f"joint.{j}.armature"]
    for s in t.site_names:
        names += [f"site.{s}.{k}" for k in _SITE_FIELDS]
    names.append("gravity")
    return names


def _resolve(model: Model, name: str):
    """``(field, index)`` of a named parameter; ``index`` is an int, slice or ``None``."""
    t = model.topology
    if name == "gravity":
        return "gravity", None
    kind, _, rest = name.partition(".")
    elem, _, attr = rest.rpartition(".")
    try:
        if kind == "body" and attr in _BODY_FIELDS:
            return _BODY_FIELDS[attr], t.body_index(elem)
        if kind == "site" and attr in _SITE_FIELDS:
            return _SITE_FIELDS[attr], t.site_index(elem)
        if kind == "joint":
            i = t.joint_index(elem)
            if attr == "axis" and t.joint_types[i] in USES_AXIS:
                return "axis", i
            if attr in ("damping", "armature") and t.nv_joint[i]:
                return attr, t.v_slice(i)
    except KeyError as e:
        raise KeyError(f"unknown parameter {name!r}: {e.args[0]}") from None
    raise KeyError(
        f"unknown parameter {name!r}; names look like 'body.<body>.mass', 'joint.<joint>.damping', "
        "'gravity' (see diffsim.param_names(model))"
    )


def get_param(model: Model, name: str):
    """The value of a named parameter (a traced array inside ``jit``)."""
    field, idx = _resolve(model, name)
    arr = getattr(model, field)
    return arr if idx is None else arr[idx]


def set_params(model: Model, values: Mapping[str, object]) -> Model:
    """A new model with the named parameters replaced (functional; differentiable)."""
    for name, value in values.items():
        field, idx = _resolve(model, name)
        old = getattr(model, field)
        value = jnp.asarray(value, dtype=old.dtype)
        target = old[idx] if idx is not None else old
        if value.shape != target.shape:
            value = jnp.broadcast_to(value, target.shape) if value.ndim == 0 else value
            if value.shape != target.shape:
                raise ValueError(f"parameter {name!r} has shape {target.shape}, got {value.shape}")
        new = value if idx is None else old.at[idx].set(value)
        model = eqx.tree_at(lambda m: getattr(m, field), model, new)
    return model
