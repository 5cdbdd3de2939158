"""Named access to model parameters: ``body.<name>.mass`` and friends.

Names are static strings resolved in Python, so :func:`get_param` and :func:`set_params` work
unchanged under ``jit``, ``grad`` and ``vmap`` (the values are traced, the names are not). A name
may end in an index, ``body.link.com[2]`` or ``body.link.inertia[0, 1]``, to read or set one
element of a parameter.

==================================  =========  ===============================================
name                                shape      meaning
==================================  =========  ===============================================
``body.<b>.mass``                   ()         kg
``body.<b>.com``                    (3,)       m, centre of mass in the body frame
``body.<b>.inertia``                (3, 3)     kg m², about the COM, body axes
``body.<b>.pos``                    (3,)       m, body frame origin in the parent frame
``body.<b>.rot``                    (3, 3)     body frame orientation in the parent frame
``joint.<j>.axis``                  (3,)       unit axis (revolute / prismatic joints)
``joint.<j>.damping``               (nv_j,)    viscous damping per joint DOF, N m s/rad | N s/m
``joint.<j>.armature``              (nv_j,)    rotor inertia per joint DOF, kg m² | kg
``joint.<j>.frictionloss``          (nv_j,)    Coulomb friction per joint DOF, N m | N
``joint.<j>.friction_width``        (nv_j,)    smoothing width of its sign, rad/s | m/s
``joint.<j>.stiffness``             (nv_j,)    joint spring K, N m/rad | N/m (models with springs)
``joint.<j>.springref``             (nv_j,)    its rest position, rad | m (models with springs)
``mimic.<j>.multiplier``            ()         a mimic joint's coupling ``q_j = m q_master + o``
``mimic.<j>.offset``                ()         its offset ``o``, rad | m
``site.<s>.pos`` / ``.rot``         (3,) / 3x3 site placement on its body
``beam.<b>.<field>``                varies     a flexible link's physical data (:class:`Beam`:
                                               ``L``, ``mu``, ``EI_z``, ``EI_y``, ``GJ``, ``EA``,
                                               ``kAG_y``, ``kAG_z``, ``air_damping``,
                                               ``kelvin_voigt``, ``I_y``, ``I_z``,
                                               ``rotary_inertia``, ``tip_mass``, ``tip_inertia``)
                                               and its mode-shape arrays
                                               (``beam.<b>.modes_y.<field>``, free-form ones
                                               ``beam.<b>.modes_y.shapes.coeffs``); setting one
                                               re-derives the modal integrals (traced)
``gravity``                         (3,)       m/s², world frame
==================================  =========  ===============================================
"""

from __future__ import annotations

import difflib
import re
from typing import Callable, Mapping, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .beam import Beam
from .joints import USES_AXIS
from .model import Model

_BODY_FIELDS = {"mass": "mass", "com": "com", "inertia": "inertia", "pos": "tree_pos", "rot": "tree_rot"}
_JOINT_FIELDS = ("damping", "armature", "frictionloss", "friction_width")
_SITE_FIELDS = {"pos": "site_pos", "rot": "site_rot"}
_BEAM_FIELDS = ("L", "mu", "EI_z", "EI_y", "GJ", "EA", "kAG_y", "kAG_z", "air_damping", "kelvin_voigt", "I_y", "I_z",
                "rotary_inertia", "tip_mass", "tip_inertia")
_MODE_FAMILIES = ("modes_y", "modes_z", "modes_torsion", "modes_axial")
_INDEX = re.compile(r"^(?P<base>.+?)\[(?P<index>[-0-9 ,]+)\]$")


class ParamRef(NamedTuple):
    """How to read and replace one named parameter of an object (a model, a contact, a system)."""

    get: Callable
    set: Callable  # (obj, value) -> new obj


class ParamError(KeyError, ValueError):
    """An unknown or malformed parameter name, or a value of the wrong shape."""

    def __str__(self):  # KeyError's str() quotes the message; show it as written
        return str(self.args[0]) if self.args else ""


#: Name fragments of quantities that cannot be negative (stiffness, damping, masses, lengths, ...);
#: ``identify``'s default transforms fit them in log space.
POSITIVE = ("mass", ".K", "stiffness", "EI", "GJ", "EA", "kAG", ".mu", "damping", "armature", "frictionloss",
            "friction_width", "kelvin_voigt", "air_damping", "tip_mass", "tip_inertia", "k_rot", "k_lat", "radius",
            "mu_k", "mu_s", "sigma", ".c", ".L", "v0", "v1", "vs", "v_s", "width", "viscous", "zeta", "exponent", ".n")
#: The physical fields of a mode family (``beams.ElasticModes``, the springs of ``beams.SupportedModes``).
MODE_PHYSICAL = ("EI", "rhoA", "L", "k_rot_root", "k_lat_root", "k_rot_tip", "k_lat_tip", "tip_mass", "tip_inertia",
                 "kAG", "rhoI")


def is_restitution(name: str) -> bool:
    """A coefficient of restitution: a compliant law's ``c_r`` in (0, 1], a rigid contact's Newton
    ``restitution`` in [0, 1] (0: a plastic impact, ``rigid_contact``'s default)."""
    return name.split("[")[0].endswith((".c_r", "restitution"))


def is_nonnegative(name: str) -> bool:
    """Whether the named quantity cannot be negative (by its name: :data:`POSITIVE`; positions,
    axes, rotations, centres of mass, the initial state, gravity and mode-shape coefficients are
    signed)."""
    base = name.split("[")[0]  # an entry (body.b.com[2]) is what its parameter is
    if base.startswith(("q0.", "v0.", "gravity")) or base.endswith((".pos", ".rot", ".axis", ".com", ".offset")):
        return False
    if ".modes_" in base:
        return base.rsplit(".", 1)[1] in MODE_PHYSICAL
    if is_restitution(base):
        return True
    # the field's own name, not the element's ("joint.mass_arm.springref" is signed; ".c" matched ".com[2]")
    field = base.rsplit(".", 1)[-1]
    return any(field == key[1:] if key.startswith(".") else key in field for key in POSITIVE)


def outside_domain(name: str, values) -> tuple[np.ndarray, str]:
    """``(bad, what)``: for ``values`` [N, *shape] (N values of the named parameter), which of the N
    lie outside the quantity's physical domain, and the domain in words. NaN or infinite (``+inf``
    is allowed for a beam's boundary springs, ``k_rot_*`` / ``k_lat_*``: a clamped end), a
    negative stiffness / damping / length / smoothing width, a body mass <= 0, a restitution outside
    (0, 1] (a rigid contact's: [0, 1]), an
    inertia matrix whose symmetric part is not positive semi-definite.

    The domain is that of the whole parameter: for an indexed name (``body.b.inertia[0]``) check
    the assembled values of its base, as :func:`apply_params` and :func:`diffsim.montecarlo.run`
    do; an entry alone cannot tell whether the matrix it belongs to stays an inertia."""
    v = np.asarray(values, dtype=float)
    flat = v.reshape(v.shape[0], -1)
    base = name.split("[")[0]
    mass = base.startswith("body.") and base.endswith(".mass")
    inf_ok = "k_rot" in base or "k_lat" in base  # a boundary spring: +inf clamps the end
    bad = ~np.all(np.isfinite(flat) | ((flat == np.inf) & inf_ok), axis=1)
    if is_restitution(name) and base.endswith("restitution"):
        return bad | ~np.all((flat >= 0) & (flat <= 1), axis=1), "a restitution coefficient, in [0, 1]"
    if is_restitution(name):
        return bad | ~np.all((flat > 0) & (flat <= 1), axis=1), "a restitution coefficient, in (0, 1]"
    if base.endswith(".inertia") and v.shape[1:] == (3, 3):
        finite = np.where(np.isfinite(v), v, 0.0)
        sym = 0.5 * (finite + np.swapaxes(finite, 1, 2))
        scale = np.maximum(1.0, np.abs(finite).reshape(v.shape[0], -1).max(axis=1))
        eig = np.linalg.eigvalsh(sym)[:, 0]
        # its symmetric part (finite differences perturb one entry at a time: an asymmetric matrix is a
        # legitimate probe of the derivative; the dynamics read it as given)
        return bad | (eig < -1e-12 * scale), "a rotational inertia, positive semi-definite"
    if mass:
        return bad | ~np.all(flat > 0, axis=1), "a body's mass, > 0"
    if is_nonnegative(name):
        return bad | ~np.all(flat >= 0, axis=1), "a quantity that cannot be negative"
    return bad, "finite"


def check_value(name: str, value) -> None:
    """A concrete value outside its quantity's physical domain (:func:`outside_domain`) raises
    :class:`ParamError`; traced values (inside ``jit``, ``grad``, ``vmap``) are not checked."""
    if isinstance(value, jax.core.Tracer):
        return
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return  # not numbers: conform() says so
    bad, what = outside_domain(name, v[None])
    if bad[0]:
        what = "a number, not NaN" if np.any(np.isnan(v)) else what
        raise ParamError(f"parameter {name!r} must be {what}; got {v.tolist()}")


def conform(name: str, value, like):
    """``value`` as an array of ``like``'s dtype and shape (a scalar is broadcast); a clear error
    for a wrong shape."""
    like = jnp.asarray(like)
    value = jnp.asarray(value, dtype=like.dtype)
    if value.shape != like.shape:
        if value.ndim == 0:
            return jnp.broadcast_to(value, like.shape)
        raise ParamError(f"parameter {name!r} has shape {like.shape}, got a value of shape {value.shape}")
    return value


def attribute_ref(name: str, path: tuple, after_set: Callable | None = None) -> ParamRef:
    """A :class:`ParamRef` for the leaf at the attribute ``path`` of an object; ``after_set(obj)``
    re-derives what depends on it (e.g. a link's modal integrals)."""

    def read(obj):
        for a in path:
            obj = getattr(obj, a)
        return obj

    def get(obj):
        return jnp.asarray(read(obj))

    def set_(obj, value):
        new = eqx.tree_at(read, obj, conform(name, value, read(obj)))
        return new if after_set is None else after_set(new)

    return ParamRef(get, set_)


def nested_refs(refs: Mapping[str, ParamRef], attr: str, prefix: str = "") -> dict[str, ParamRef]:
    """The parameters of the object at ``obj.<attr>`` as parameters of ``obj`` (names prefixed)."""

    def wrap(r):
        return ParamRef(lambda o: r.get(getattr(o, attr)),
                        lambda o, v: eqx.tree_at(lambda oo: getattr(oo, attr), o, r.set(getattr(o, attr), v)))

    return {prefix + name: wrap(r) for name, r in refs.items()}


def _field_ref(name: str, field: str, idx) -> ParamRef:
    def get(m):
        arr = getattr(m, field)
        return arr if idx is None else arr[idx]

    def set_(m, value):
        old = getattr(m, field)
        value = conform(name, value, get(m))
        return eqx.tree_at(lambda mm: getattr(mm, field), m, value if idx is None else old.at[idx].set(value))

    return ParamRef(get, set_)


def _element_ref(name: str, path: tuple, k: int) -> ParamRef:
    """Element ``k`` of the array at the attribute ``path`` of a model."""

    def read(m):
        for a in path:
            m = getattr(m, a)
        return m

    def set_(m, value):
        return eqx.tree_at(read, m, read(m).at[k].set(conform(name, value, read(m)[k])))

    return ParamRef(lambda m: read(m)[k], set_)


def _beam_ref(name: str, body: int, path: tuple) -> ParamRef:
    """``beam.<b>.<path>``: set on the link's :class:`Beam`, then its integrals re-derived."""

    def get(m):
        x = m.flex[body].spec
        for a in path:
            x = getattr(x, a)
        return jnp.asarray(x)

    def set_(m, value):
        spec = m.flex[body].spec
        new_spec = attribute_ref(name, path).set(spec, conform(name, value, get(m)))
        flex = list(m.flex)
        flex[body] = new_spec.flex_body(m.dtype)
        return eqx.tree_at(lambda mm: mm.flex, m, tuple(flex))

    return ParamRef(get, set_)


def array_fields(module) -> list[str]:
    """The non-static fields of a Module that hold numbers or arrays (its fittable leaves)."""
    out = []
    for f in getattr(module, "__dataclass_fields__", {}).values():
        if f.metadata.get("static", False):
            continue
        v = getattr(module, f.name, None)
        if isinstance(v, (jax.Array, np.ndarray, float, int)) and not isinstance(v, bool):
            out.append(f.name)
    return out


def leaf_paths(module, prefix: tuple = ()) -> list[tuple]:
    """Attribute paths of a Module's fittable leaves (:func:`array_fields`), descending into the
    Modules it holds (a :class:`~diffsim.beams.SupportedModes`' ``shapes``)."""
    out = [prefix + (k,) for k in array_fields(module)]
    for f in getattr(module, "__dataclass_fields__", {}).values():
        v = getattr(module, f.name, None)
        if not f.metadata.get("static", False) and isinstance(v, eqx.Module):
            out += leaf_paths(v, prefix + (f.name,))
    return out


def model_param_refs(model: Model) -> dict[str, ParamRef]:
    """Every named parameter of the model, in a stable order, with its reader and writer."""
    t = model.topology
    refs: dict[str, ParamRef] = {}
    for i, b in enumerate(t.body_names):
        for k, field in _BODY_FIELDS.items():
            refs[f"body.{b}.{k}"] = _field_ref(f"body.{b}.{k}", field, i)
    for i, j in enumerate(t.joint_names):
        if t.joint_types[i] in USES_AXIS:
            refs[f"joint.{j}.axis"] = _field_ref(f"joint.{j}.axis", "axis", i)
        if t.nv_joint[i]:
            for k in _JOINT_FIELDS + (("stiffness", "springref") if model.stiffness is not None else ()):
                refs[f"joint.{j}.{k}"] = _field_ref(f"joint.{j}.{k}", k, t.v_slice(i))
    for k, j in enumerate(() if model.mimic is None else model.mimic.joints):
        for f in ("multiplier", "offset"):
            refs[f"mimic.{j}.{f}"] = _element_ref(f"mimic.{j}.{f}", ("mimic", f), k)
    for i, s in enumerate(t.site_names):
        for k, field in _SITE_FIELDS.items():
            refs[f"site.{s}.{k}"] = _field_ref(f"site.{s}.{k}", field, i)
    for i, b in enumerate(t.body_names):
        fb = model.flex[i] if model.flex else None
        spec = None if fb is None else fb.spec
        if not isinstance(spec, Beam):
            continue
        for k in _BEAM_FIELDS:
            if getattr(spec, k) is not None and not (k in ("tip_mass", "tip_inertia") and not spec.has_tip):
                refs[f"beam.{b}.{k}"] = _beam_ref(f"beam.{b}.{k}", i, (k,))
        for fam in _MODE_FAMILIES:
            modes = getattr(spec, fam)
            if modes is not None:
                for path in leaf_paths(modes):
                    name = f"beam.{b}.{fam}." + ".".join(path)
                    refs[name] = _beam_ref(name, i, (fam, *path))
    for k, n in enumerate(() if model.tendon_springs is None else model.tendon_springs.names):
        for f in ("stiffness", "damping", "length_ref"):
            refs[f"tendon.{n}.{f}"] = _element_ref(f"tendon.{n}.{f}", ("tendon_springs", f), k)
    if model.fluid is not None:
        for f in ("density", "viscosity"):
            refs[f"fluid.{f}"] = attribute_ref(f"fluid.{f}", ("fluid", f))
    refs["gravity"] = _field_ref("gravity", "gravity", None)
    return refs


def split_index(name: str):
    """``("body.a.com", (2,))`` from ``"body.a.com[2]"``; ``(name, None)`` without an index."""
    m = _INDEX.match(name)
    if m is None:
        return name, None
    try:
        idx = tuple(int(x) for x in m.group("index").split(",") if x.strip())
    except ValueError:
        raise ParamError(f"bad index in parameter name {name!r}") from None
    if any(k < 0 for k in idx):  # one name per entry: com[2], not also com[-1]
        raise ParamError(f"parameter {name!r}: indices count from 0 (no negative indices)")
    return m.group("base"), idx


def lookup(refs: Mapping[str, ParamRef], name: str, hint: str) -> ParamRef:
    """The :class:`ParamRef` of ``name`` (with an optional trailing index) among ``refs``."""
    if not isinstance(name, str):
        raise ParamError(f"parameter names are strings, got {name!r}")
    base, idx = split_index(name)
    if base not in refs:
        close = difflib.get_close_matches(base, list(refs), n=3)
        did = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ParamError(f"unknown parameter {name!r}{did} ({hint})")
    ref = refs[base]
    if idx is None:
        return ref

    def get(obj):
        arr = ref.get(obj)
        if len(idx) > arr.ndim or any(not -n <= k < n for k, n in zip(idx, arr.shape)):
            raise ParamError(f"index {list(idx)} is out of range for parameter {base!r} of shape {arr.shape}")
        return arr[idx]

    def set_(obj, value):
        whole = ref.get(obj)
        return ref.set(obj, whole.at[idx].set(conform(name, value, get(obj))))

    return ParamRef(get, set_)


_MODEL_HINT = "names look like 'body.<body>.mass', 'joint.<joint>.damping', 'gravity'; see diffsim.param_names(model)"


def param_names(model: Model) -> list[str]:
    """Every named parameter of the model, in a stable order."""
    return list(model_param_refs(model))


def get_param(model: Model, name: str):
    """The value of a named parameter (a traced array inside ``jit``)."""
    return lookup(model_param_refs(model), name, _MODEL_HINT).get(model)


def set_params(model: Model, values: Mapping[str, object]) -> Model:
    """A new model with the named parameters replaced (functional; differentiable)."""
    return apply_params(model, model_param_refs(model), values, _MODEL_HINT)


def apply_params(obj, refs: Mapping[str, ParamRef], values: Mapping[str, object], hint: str):
    """``obj`` with each named value set through its :class:`ParamRef` among ``refs``, each concrete
    value checked against its physical domain first (:func:`check_value`)."""
    if not isinstance(values, Mapping):  # e.g. a list of (name, value) pairs
        raise TypeError(f"set_params takes a mapping {{name: value}}, got {type(values).__name__}")
    for name, value in values.items():
        ref = lookup(refs, name, hint)
        check_value(name, value)
        obj = ref.set(obj, value)
        base, idx = split_index(name)
        if idx is not None and not isinstance(value, jax.core.Tracer):
            # one entry set: the domain is that of the assembled parameter (an inertia entry can make
            # the matrix asymmetric or indefinite)
            whole = refs[base].get(obj)
            if not isinstance(whole, jax.core.Tracer):
                try:
                    check_value(base, whole)
                except ParamError as e:
                    raise ParamError(f"setting {name!r} to {np.asarray(value).tolist()}: {e}") from None
    return obj
