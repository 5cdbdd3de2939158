"""MJCF (MuJoCo XML) import for the rigid-body subset, parsed with ``xml.etree`` (no JAX here).

:func:`load_mjcf` reads a file path or an XML string and returns a validated
:class:`~diffsim.model.Model` built with :class:`~diffsim.model.ModelBuilder`.

Supported: the ``<worldbody>`` body tree (``<frame>`` included); ``<include file>`` (a
relative path is looked up as MuJoCo does: in the main file's directory first, then in the
including file's; the included file's root element is dropped whatever its tag, as MuJoCo does;
errors name the included file and line; a file included twice is refused); body
``pos`` and orientation (``quat``/``euler``/``axisangle``/``xyaxes``/``zaxis``, honouring
``<compiler angle eulerseq>``; MJCF's default angle unit is the degree); ``<inertial>``
(``diaginertia`` or ``fullinertia``); ``hinge``/``slide``/``ball``/``free`` joints and
``<freejoint>`` with ``axis``, ``pos``, ``damping``, ``armature``, ``stiffness`` and
``springref`` (joint springs ``K (q − q_ref)`` on hinge and slide joints), ``ref`` (the body is
placed at ``q = 0`` rather than at ``q = ref``, so that ``q`` is MuJoCo's ``qpos``), ``frictionloss`` (Coulomb
friction, its sign smoothed over ``friction_width``: MuJoCo's is a constraint with a soft
regularisation instead, so the two agree away from stiction only; not on free joints); ``<default>`` classes with
``class``/``childclass`` (repeated top-level ``<default>`` blocks are merged into the main class,
as MuJoCo does; a class's multi-value attribute such as ``size`` or ``gear`` overrides only the
values it gives, and its orientation replaces the inherited one; one actuator default per class,
shared by all actuator types, :func:`_apply_actuator`); ``<option gravity>``, ``<flag>``
``gravity``, ``damper``, ``spring``, ``frictionloss``, ``limit`` (no joint limits),
``equality`` (no couplings), ``constraint`` (the last three) and ``clampctrl`` (no
``ctrlrange``) ``="disable"``; MuJoCo 4's actuator-side ``armature`` and ``damping`` on joint
transmissions (added to the joint's, times ``gear[0]²``); ``inheritrange``; sites; inertia inferred from primitive geoms
(``<compiler inertiafromgeom>``, MuJoCo's formulas), ``boundmass``/``boundinertia``/
``balanceinertia``/``settotalmass``. Inertias are checked on each body merged with its
fixed children, with tolerances relative to the body (:func:`diffsim.model.builder.validate_inertia`).

Kept as data, not simulated (one :class:`~diffsim.io.xml.UnsimulatedWarning` per load): every
geom in ``model.geoms`` (contact geometry; contacts are not made from file geometry), ball
joints' cone ranges, ``<actuator>`` elements in
``model.actuators`` (applied with ``ctrl=``: :func:`diffsim.actuation`) and tendons in
``model.tendons`` (actuator transmissions; springs and dampers on fixed tendons are simulated,
``model.tendon_springs``). ``springdamper`` sets a joint's stiffness and damping as MuJoCo's
compiler does (:func:`_springdampers`).

Joint ranges (``limited="true"``, or ``range`` with ``autolimits``) of hinge and slide joints go
to ``model.joint_limits`` and a :class:`diffsim.System` enforces them by default
(:mod:`diffsim.contact.limits`); limits on free joints are ignored, as MuJoCo does.

Ignored (no effect on the smooth dynamics): ``visual``, ``asset``, ``statistic``, ``size``,
``custom``, cameras, lights, sensors, ``contact`` (pairs/excludes), keyframes, ``<skin>`` (drawn
only), ``option`` timestep/integrator/solver settings.

Refused with a :class:`~diffsim.model.ModelError` naming the element and its line: elements and
attributes outside MuJoCo's schema (:mod:`diffsim.io.mjcf_schema`: a misspelt attribute, with the
closest names), and what MuJoCo's compiler refuses (a renamed top-level default class, attributes
on ``<worldbody>``, a ``group`` that is not an integer, a limited joint without ``lower <
upper``, geoms without the positive sizes their type needs, a plane in a moving body, an
actuator whose target is not in the file, an adhesion actuator's negative gain or control range,
an empty included file); negative masses and inertias (MuJoCo clamps them);
actuator-side ``armature``/``damping`` on other transmissions, actuator ``delay``, actuators that
MuJoCo switches off (``<flag actuation="disable"/>``, a group in ``actuatorgroupdisable``); tendons
with friction loss or length limits, springs on spatial tendons, spring deadbands, equality constraints other than linear
couplings of two joints (``<equality><joint>`` and ``<tendon>`` over a fixed tendon of two joints
become mimic joints), springs on ball/free joints, polynomial stiffness,
polynomial damping, ``gravcomp``, wind and the ellipsoid fluid model (``fluidshape``; the
inertia-box model of ``density``/``viscosity`` is simulated, :mod:`diffsim.model.fluid`), mesh / height-field
/ SDF geoms where inertia must be inferred, composite/flex/replicate/attach, plugins, unknown
joint types, unreadable or cyclic includes.

Conventions (shared with :func:`diffsim.io.from_mjmodel`):

* **one joint per diffsim body.** A MuJoCo body with joints ``j1 … jk`` (k > 1) becomes the
  massless bodies ``<body>__<j1> … <body>__<j(k-1)>`` followed by the real ``<body>``, which
  keeps its name, mass, sites, children and the last joint ``jk``. Unnamed joints appear as
  ``j<index in body>`` in these names. ``q``/``v`` therefore keep MuJoCo's qpos/qvel layout.
* **joint anchors.** diffsim joints act at the body-frame origin, so a body whose (last) joint
  has ``pos = p`` gets its frame moved to the anchor: its COM, sites and child placements are
  shifted by ``−p`` (orientation unchanged). World COMs and sites are unchanged; the body
  *origin* is the joint anchor (MuJoCo's ``xanchor``), not MuJoCo's ``xpos``.
* **joints of one body**: at most 6 DOFs and no hinge or ball after a ball joint (MuJoCo's rules,
  refused as MuJoCo refuses them).
* **free joints** must belong to children of the world and be alone in their body; they get an
  identity tree placement, so ``q`` equals MuJoCo's ``qpos`` (the world pose). The body's
  ``pos``/``quat`` in the file only define MuJoCo's ``qpos0``. Velocities differ, see
  :func:`diffsim.io.to_mujoco`.
* unnamed bodies are called ``body<id>``, unnamed sites ``site<id>`` (MuJoCo ids). A joint
  keeps its MJCF name; an unnamed one is named after its body (``<body>__j<k>`` for inserted
  bodies); a body without joints gets a ``fixed`` joint named after the body (``__fixed``
  appended on a name clash). Sites of the world body are dropped.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..actuators import ActuationError
from ..dynamics.dispatch import mass_matrix
from ..model.builder import ModelError
from ..model.model import Actuator, Model, Tendon, neutral_configuration
from ..model.rotations import axis_angle_to_rot, quat_mul, quat_to_rot, z_to_rot
from . import mjcf_schema
from .assemble import KIND_TO_JOINT, RawBody, RawGeom, RawJoint, RawSite, assemble, equality_coupling
from .xml import XmlDoc, boolean, floats, warn_unsimulated

_MJEPS = 1e-14  # MuJoCo's mjEPS

def _principal_fix(mass, inertia, boundmass, boundinertia, balance, where):
    """MuJoCo's per-body mass/inertia corrections (boundmass, boundinertia, balanceinertia)."""
    mass = max(mass, boundmass)
    if boundinertia > 0 or balance:
        ev, V = np.linalg.eigh(0.5 * (inertia + inertia.T))
        ev = np.maximum(ev, boundinertia)
        if balance and (ev[0] + ev[1] < ev[2] or ev[0] + ev[2] < ev[1] or ev[1] + ev[2] < ev[0]):
            ev = np.full(3, ev.sum() / 3.0)
        inertia = V @ np.diag(ev) @ V.T
    return mass, inertia


# ======================================================================================
# MJCF parser
# ======================================================================================

_REFUSED_ANYWHERE = {
    "composite": "composite objects are not supported (rigid bodies only)",
    "flexcomp": "flexible (flex) objects are not supported (rigid bodies only)",
    "flex": "flexible (flex) objects are not supported (rigid bodies only)",
    "replicate": "<replicate> is not supported: write the bodies out explicitly",
    "attach": "<attach> is not supported: write the bodies out explicitly",
    "plugin": "engine plugins are not supported",
}
_REFUSED_SECTIONS = {
    "deformable": "deformable objects are not supported (rigid bodies only)",
    "extension": "engine plugins are not supported",
}
_IGNORED_SECTIONS = {"visual", "asset", "statistic", "size", "custom", "contact", "sensor", "keyframe"}
_KNOWN_SECTIONS = set(_REFUSED_SECTIONS) | _IGNORED_SECTIONS | {"compiler", "option", "default", "worldbody", "actuator",
                                                                  "tendon", "equality"}
_TENDON_PASSIVE = ("stiffness", "damping", "frictionloss", "springlength")
_RENDERING_ONLY = {"skin"}  # children of <deformable> that MuJoCo only draws
_ACTUATORS = {"motor", "position", "velocity", "general", "intvelocity", "damper", "cylinder", "muscle", "adhesion"}
_TRANSMISSIONS = ("joint", "jointinparent", "tendon", "site", "slidersite", "cranksite", "body")
_ORIENT_KEYS = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
#: attributes of several numbers of which an element or a default class may give the first few only:
#: MuJoCo overwrites the values given and keeps the rest inherited (its schema's ``double[1..n]``)
_PARTIAL = frozenset({"size", "gear", "damping", "stiffness", "friction", "solref", "solimp", "solreflimit",
                      "solimplimit", "solreffriction", "solimpfriction", "polycoef", "gainprm", "biasprm", "dynprm",
                      "fluidcoef", "surfacevel", "interval"})
#: the actuator elements a default class may hold: one actuator default per class, which each of them
#: updates in document order (MuJoCo's ``mjsDefault::actuator``)
_ACTUATOR_DEFAULTS = _ACTUATORS | {"pid", "orientation", "dcmotor"}
#: sizes a primitive geom needs, all positive (MuJoCo's ``mjGEOMINFO``; a plane needs its third)
_GEOM_NSIZE = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3}


class UnknownTargetError(ModelError, ActuationError):
    """An actuator whose transmission target (joint, tendon, site, body) or reference site is not
    in the file: refused when the file is read, as MuJoCo refuses it (also an
    :class:`~diffsim.actuators.ActuationError`, which :func:`diffsim.actuation` raised for it before)."""


def _merge_attrs(inherited: dict, own: dict, where: str) -> dict:
    """``own`` attributes over ``inherited`` ones as MuJoCo merges them, for an element over its
    class and for a class over its parent: a multi-value attribute of :data:`_PARTIAL` overwrites
    only the values it gives, and an orientation (one of ``quat``/``axisangle``/``euler``/
    ``xyaxes``/``zaxis``) replaces the inherited one whichever it is (``fromto`` is separate: it
    overrides the orientation when the geom or site is compiled)."""
    given = [k for k in _ORIENT_KEYS if k in own]
    if len(given) > 1:
        raise ModelError(f"MJCF {where}: give only one orientation, got {given}")
    merged = dict(inherited)
    if given:
        for k in _ORIENT_KEYS:
            merged.pop(k, None)
    for k, v in own.items():
        if k in _PARTIAL and k in merged:
            mine, old = v.split(), merged[k].split()
            v = " ".join(mine + old[len(mine):])
        merged[k] = v
    return merged


#: MuJoCo's actuator before any default (``mjs_defaultActuator``): the raw gain, bias and dynamics
#: parameters, and the mechanical attributes that every default class passes on
_ACTUATOR0 = {"type": "general", "gainprm": [1.0] + [0.0] * 9, "biasprm": [0.0] * 10, "dynprm": [1.0] + [0.0] * 9,
              "gaintype": "fixed", "biastype": "none", "dyntype": "none",
              "gear": [1.0, 0.0, 0.0, 0.0, 0.0, 0.0], "damping": [0.0, 0.0, 0.0], "armature": 0.0, "delay": 0.0,
              "ctrlrange": [0.0, 0.0], "forcerange": [0.0, 0.0], "ctrllimited": "auto", "forcelimited": "auto",
              "inheritrange": 0.0, "group": 0}
#: the gain type of a <general> default from which each shortcut reads its parameters
_SHORTCUT_GAIN = {"position": "fixed", "intvelocity": "fixed", "velocity": "fixed", "cylinder": "fixed",
                  "adhesion": "fixed", "damper": "affine", "muscle": "muscle"}


def _integer(text: str, w: str, attr: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ModelError(f"MJCF {w}: {attr}={text!r} must be an integer") from None


_DOFS = {"free": 6, "ball": 3, "hinge": 1, "slide": 1}


def _check_body_joints(joints, w: str) -> None:
    """MuJoCo's compiler rules for the joints of one body (``mjCBody::Compile``): at most 6 DOFs,
    and no rotation (hinge or ball) after a ball joint, whose 3 rotations already span them."""
    if sum(_DOFS[j.kind] for j in joints) > 6:
        raise ModelError(f"MJCF {w}: more than 6 DOFs in one body (MuJoCo refuses it)")
    if joints[-1].kind in ("hinge", "ball") and any(j.kind == "ball" for j in joints[:-1]):
        raise ModelError(f"MJCF {w}: a ball joint followed by a rotation ({joints[-1].kind}) in one body "
                         "(MuJoCo refuses it)")


def _copy_actuator(state: dict) -> dict:
    return {k: list(v) if isinstance(v, list) else v for k, v in state.items()}


def _apply_actuator(state: dict, tag: str, a: dict, w: str, ancestors=()) -> dict:
    """One actuator element (in a default class or in ``<actuator>``) applied to the actuator
    ``state`` it starts from, as MuJoCo 4 reads it (its documentation, "Actuator shortcuts"):

    * a class keeps one actuator default, written with ``<general>`` or a shortcut; the mechanical
      attributes (``gear``, ``ctrlrange``, ``ctrllimited``, ``forcerange``, ``forcelimited``,
      ``armature``, ``damping``, ``delay``, ``inheritrange``) pass on from any default, in document
      order, a multi-value one overwriting only the values it gives;
    * ``<general>`` keeps the raw gain, bias and dynamics parameters (and types) of the state and
      sets those it gives;
    * a shortcut resets them to its own table (``motor``: gain 1, no bias; ``position``
      ``gainprm = (kp, 0, 0)``, ``biasprm = (0, −kp, −kv)``, ``dampratio`` as ``+dampratio``;
      ``velocity`` ``(kv, 0, 0)``, ``(0, 0, −kv)`` …) from its parameters (``kp``, ``kv`` …): those
      given, else those of the nearest default (this state, then the ``ancestors`` classes') written
      with the same shortcut or with a ``<general>`` of the shortcut's gain type, read from its raw
      parameters, else the shortcut's documented defaults (``kp = 1``, ``kv = 0`` for ``position``,
      ``kv = 1`` for ``velocity``).

    Verified against MuJoCo 4.0 (tests/io/test_loader_input.py). Returns the new state."""
    def opt(key):
        return float(floats(a[key], 1, w, key)[0]) if key in a else None

    def fail(why):
        raise ModelError(f"MJCF {w}: {why}")

    st = _copy_actuator(state)
    if "group" in a:
        st["group"] = _integer(a["group"], w, "group")
    for key in ("ctrlrange", "forcerange"):
        if key in a:
            st[key] = [float(x) for x in floats(a[key], 2, w, key)]
    for key in ("ctrllimited", "forcelimited"):
        if key in a:
            if a[key] not in ("true", "false", "auto"):
                fail(f"{key} must be true, false or auto, got {a[key]!r}")
            st[key] = a[key]
    for key in ("armature", "delay", "inheritrange"):
        if key in a:
            st[key] = opt(key)
    for key, n in (("gear", 6), ("damping", 3)):
        if key in a:
            v = floats(a[key], n, w, key, allow_fewer=True)
            st[key][: len(v)] = [float(x) for x in v]
    if tag == "general":
        for key, n in (("gainprm", 10), ("biasprm", 10), ("dynprm", 10)):
            if key in a:
                v = floats(a[key], n, w, key, allow_fewer=True)
                st[key][: len(v)] = [float(x) for x in v]
        for key in ("gaintype", "biastype", "dyntype"):
            if key in a:
                st[key] = a[key]
        st["type"] = "general"
        return st
    if tag not in _SHORTCUT_GAIN and tag != "motor":  # pid, orientation, dcmotor: not modelled, marked
        st.update(type=tag, gaintype=tag, biastype=tag, dyntype=tag)
        return st
    src = next((x for x in (st, *ancestors) if x["type"] == tag
                or (x["type"] == "general" and x["gaintype"] == _SHORTCUT_GAIN.get(tag))), None)
    g, b, d = [0.0] * 10, [0.0] * 10, [1.0] + [0.0] * 9
    if tag == "motor":
        g[0] = 1.0
        st.update(dyntype="none", gaintype="fixed", biastype="none")
    elif tag in ("position", "intvelocity"):
        kp, kv, ratio, tc = 1.0, 0.0, None, 0.0
        if src is not None:
            kp, tc = src["gainprm"][0], (src["dynprm"][0] if src["dyntype"] == "filterexact" else 0.0)
            kv, ratio = (None, src["biasprm"][2]) if src["biasprm"][2] > 0 else (-src["biasprm"][2], None)
        own = {k: opt(k) for k in ("kp", "kv", "dampratio", "timeconst")}
        if own["kv"] is not None and own["dampratio"] is not None:
            fail("kv and dampratio cannot both be given")
        for key, value in own.items():
            if value is not None and value < 0 and key != "kp":
                fail(f"{key}={value} cannot be negative")
        kp = kp if own["kp"] is None else own["kp"]
        tc = tc if own["timeconst"] is None else own["timeconst"]
        if own["kv"] is not None or own["dampratio"] is not None:
            kv, ratio = own["kv"], own["dampratio"]
        g[0], b[1], b[2] = kp, -kp, (ratio if ratio is not None else -kv)
        if tc > 0:
            d[0] = tc
        # position: refused whenever both are set, also through classes (a superset of MuJoCo's
        # refusals, whose rule for classes was not pinned down); an intvelocity's inheritrange sets its
        # activation range (not kept), so MuJoCo accepts it with a ctrlrange and refuses an actrange
        if tag == "position" and st["inheritrange"] > 0 and any(st["ctrlrange"]):
            fail("ctrlrange and inheritrange cannot both be given")
        if tag == "intvelocity" and "actrange" in a and st["inheritrange"] > 0:
            fail("actrange and inheritrange cannot both be given")
        st.update(gaintype="fixed", biastype="affine",
                  dyntype="integrator" if tag == "intvelocity" else ("filterexact" if tc > 0 else "none"))
    elif tag == "velocity":
        kv = opt("kv")
        g[0] = (src["gainprm"][0] if src is not None else 1.0) if kv is None else kv
        b[2] = -g[0]
        st.update(dyntype="none", gaintype="fixed", biastype="affine")
    elif tag == "damper":
        kv = opt("kv")
        kv = (-src["gainprm"][2] if src is not None else 0.0) if kv is None else kv
        if kv < 0 or min(st["ctrlrange"]) < 0:
            fail("a damper's kv and control range cannot be negative")
        g[2] = -kv
        st.update(ctrllimited="true", dyntype="none", gaintype="affine", biastype="none")
    elif tag == "cylinder":
        tc, area, diameter = opt("timeconst"), opt("area"), opt("diameter")
        bias = src["biasprm"][:3] if src is not None else [0.0, 0.0, 0.0]
        d[0] = (src["dynprm"][0] if src is not None else 1.0) if tc is None else tc
        g[0] = (src["gainprm"][0] if src is not None else 1.0) if area is None else area
        if diameter is not None and diameter >= 0:
            g[0] = math.pi / 4 * diameter * diameter
        b[0:3] = [float(x) for x in floats(a["bias"], 3, w, "bias")] if "bias" in a else bias
        st.update(dyntype="filter", gaintype="fixed", biastype="affine")
    elif tag == "adhesion":
        gain = opt("gain")
        g[0] = (src["gainprm"][0] if src is not None else 1.0) if gain is None else gain
        if min(st["ctrlrange"]) < 0 or g[0] < 0:
            fail("an adhesion actuator's gain and control range cannot be negative (it pulls only)")
        st.update(ctrllimited="true", dyntype="none", gaintype="fixed", biastype="none")
    else:  # muscle: MuJoCo's muscle parameters (not applied by diffsim; kept as data)
        g[:9] = src["gainprm"][:9] if src is not None else [0.75, 1.05, -1.0, 200.0, 0.5, 1.6, 1.5, 1.3, 1.2]
        d[:3] = src["dynprm"][:3] if src is not None else [0.01, 0.04, 0.0]
        if "timeconst" in a:
            d[0], d[1] = (float(x) for x in floats(a["timeconst"], 2, w, "timeconst"))
        if "range" in a:
            g[0], g[1] = (float(x) for x in floats(a["range"], 2, w, "range"))
        for i, key in enumerate(("force", "scale", "lmin", "lmax", "vmax", "fpmax", "fvmax"), start=2):
            g[i] = g[i] if key not in a else opt(key)
        d[2] = d[2] if "tausmooth" not in a else opt("tausmooth")
        b[:9] = g[:9]
        st.update(dyntype="muscle", gaintype="muscle", biastype="muscle")
    st.update(type=tag, gainprm=g, biasprm=b, dynprm=d)
    return st


def _spec_range(spec, which, autolimits, w):
    """MuJoCo's ``ctrlrange``/``forcerange`` of an actuator: the range when limited (``true``, or
    ``auto`` and lower < upper), else ``None``; refused as MuJoCo refuses them: limited with
    lower >= upper, a range without ``limited`` under ``autolimits="false"``."""
    lim, rng = spec[which + "limited"], spec[which + "range"]
    if lim == "auto" and not autolimits and any(rng):
        raise ModelError(f"MJCF {w}: {which}range {rng} but no {which}limited with <compiler autolimits=\"false\"/> "
                         "(MuJoCo refuses it)")
    if lim == "true" or (lim == "auto" and rng[0] < rng[1]):
        if rng[0] >= rng[1]:
            raise ModelError(f"MJCF {w}: {which}range {rng} must have lower < upper when {which}limited (MuJoCo "
                             "refuses it)")
        return (float(rng[0]), float(rng[1]))
    return None


class _Frame:
    """Accumulated ``<frame>`` placement (position, rotation) and childclass."""

    def __init__(self, pos=None, rot=None, childclass="main"):
        self.pos = np.zeros(3) if pos is None else pos
        self.rot = np.eye(3) if rot is None else rot
        self.childclass = childclass


def _springdampers(model: Model, bodies, *, spring: bool, damper: bool, extra_damping=None) -> Model:
    """MuJoCo's ``springdamper = (τ, ζ)`` of hinge/slide joints, as its compiler sets them: the
    joint's stiffness ``1/(τ² ζ² w)`` and damping ``2/(τ w)``, with ``w = (M⁻¹)_jj`` at qpos0
    (MuJoCo's ``dof_invweight0``: the joints at their ``ref``, armature included) — the soft
    constraint's reference spring (``solref``) per unit of the joint's effective inverse inertia."""
    chosen = [j for bd in bodies for j in bd.joints if j.springdamper is not None]
    if not chosen:
        return model
    t = model.topology
    q0 = np.array(neutral_configuration(model))
    for bd in bodies:
        for j in bd.joints:
            if j.kind in ("hinge", "slide") and j.name:
                q0[t.q_slice(t.joint_index(j.name))] = j.ref
    w = np.diag(np.linalg.inv(np.asarray(mass_matrix(model, jnp.asarray(q0)))))
    k = np.zeros(model.damping.shape) if model.stiffness is None else np.asarray(model.stiffness).copy()
    c = np.asarray(model.damping).copy()
    for j in chosen:
        i = t.v_slice(t.joint_index(j.name)).start
        tc, dr = j.springdamper
        if spring:
            k[i] = 1.0 / (tc**2 * dr**2 * w[i])
        if damper:  # MuJoCo's actuator-side damping on the joint still adds to it
            c[i] = 2.0 / (tc * w[i]) + (extra_damping or {}).get(j.name, 0.0)
    model = eqx.tree_at(lambda m: m.damping, model, jnp.asarray(c, model.dtype))
    return eqx.tree_at(lambda m: m.stiffness, model, jnp.asarray(k, model.dtype), is_leaf=lambda x: x is None)


class _MJCFParser:
    def __init__(self, source, friction_width=1e-3):
        self.friction_width = friction_width
        self.doc = XmlDoc(source, "MJCF")
        root = self.doc.root
        if root.tag != "mujoco":
            raise ModelError(f"MJCF: the root element must be <mujoco>, got {self.doc.where(root)}")
        self.doc.expand_includes("include")
        for el in root.iter():
            if el.tag in _REFUSED_ANYWHERE:
                raise ModelError(f"MJCF {self.doc.where(el)}: {_REFUSED_ANYWHERE[el.tag]}")
            if el.tag == "geom" and el.get("fluidshape", "none") != "none":
                raise ModelError(f"MJCF {self.doc.where(el)}: fluidshape={el.get('fluidshape')!r}: the ellipsoid fluid "
                                 "model is not supported (the inertia-box model is)")
        mjcf_schema.check(self.doc, root)  # unknown elements and attributes (misspellings), as MuJoCo refuses them
        # compiler settings
        self.degree, self.eulerseq, self.autolimits = True, "xyz", True
        self.inertiafromgeom, self.igroup = "auto", (0, 5)
        self.boundmass = self.boundinertia = self.settotalmass = 0.0
        self.balanceinertia = False
        for el in root.findall("compiler"):
            self._compiler(el)
        self.gravity = np.array([0.0, 0.0, -9.81])
        self.disabled: set[str] = set()  # <flag name="disable"/> of every <option>, later ones winning
        self.actuator_groups_off: set[int] = set()  # <option actuatorgroupdisable>
        self.fluid = {"density": 0.0, "viscosity": 0.0}
        for el in root.findall("option"):
            self._option(el)
        off = self.disabled
        if "gravity" in off:  # applied after every <option>: a later gravity= does not bring it back
            self.gravity = np.zeros(3)
        self.damper, self.spring, self.clampctrl = ("damper" not in off, "spring" not in off, "clampctrl" not in off)
        self.frictionloss, self.limits, self.equalities = (
            not off & {flag, "constraint"} for flag in ("frictionloss", "limit", "equality"))
        self._check_default_names(root)
        self.defaults: dict[str, dict[str, dict]] = {}
        self.actuator_defaults: dict[str, dict] = {}  # per class: its actuator default (_apply_actuator)
        self.default_parent: dict[str, str | None] = {}
        for el in root.findall("default"):
            self._defaults(el, None)
        if "main" not in self.defaults:
            self.defaults["main"] = {}
            self.actuator_defaults["main"] = _copy_actuator(_ACTUATOR0)
            self.default_parent["main"] = None
        for el in root:
            kids = [c for c in el if not (el.tag == "deformable" and c.tag in _RENDERING_ONLY)]
            if el.tag in _REFUSED_SECTIONS and kids:
                raise ModelError(f"MJCF {self.doc.where(kids[0])} in <{el.tag}>: {_REFUSED_SECTIONS[el.tag]}")
            if el.tag not in _KNOWN_SECTIONS:
                raise ModelError(f"MJCF {self.doc.where(el)}: unknown or unsupported element")

    # ---- top-level sections ----
    def _compiler(self, el):
        w = self.doc.where(el)
        if "angle" in el.attrib:
            if el.get("angle") not in ("degree", "radian"):
                raise ModelError(f"MJCF {w}: angle must be 'degree' or 'radian'")
            self.degree = el.get("angle") == "degree"
        if "eulerseq" in el.attrib:
            seq = el.get("eulerseq")
            if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
                raise ModelError(f"MJCF {w}: eulerseq must be 3 letters among x, y, z, X, Y, Z; got {seq!r}")
            self.eulerseq = seq
        if "autolimits" in el.attrib:
            self.autolimits = boolean(el.get("autolimits"), w, "autolimits")
        if "inertiafromgeom" in el.attrib:
            v = el.get("inertiafromgeom")
            if v not in ("auto", "true", "false"):
                raise ModelError(f"MJCF {w}: inertiafromgeom must be auto, true or false")
            self.inertiafromgeom = v
        if "inertiagrouprange" in el.attrib:
            g = floats(el.get("inertiagrouprange"), 2, w, "inertiagrouprange")
            self.igroup = (int(g[0]), int(g[1]))
        if el.get("coordinate", "local") != "local":
            raise ModelError(f"MJCF {w}: coordinate={el.get('coordinate')!r} is not supported (only 'local')")
        if "alignfree" in el.attrib and boolean(el.get("alignfree"), w, "alignfree"):
            raise ModelError(f"MJCF {w}: alignfree='true' moves body frames and is not supported")
        for attr in ("boundmass", "boundinertia", "settotalmass"):
            if attr in el.attrib:
                setattr(self, attr, float(floats(el.get(attr), 1, w, attr)[0]))
        if "balanceinertia" in el.attrib:
            self.balanceinertia = boolean(el.get("balanceinertia"), w, "balanceinertia")

    def _option(self, el):
        w = self.doc.where(el)
        if "gravity" in el.attrib:
            self.gravity = floats(el.get("gravity"), 3, w, "gravity")
        for attr in ("density", "viscosity"):
            if attr in el.attrib:
                self.fluid[attr] = float(floats(el.get(attr), 1, w, attr)[0])
        if "wind" in el.attrib and np.any(floats(el.get("wind"), 3, w, "wind") != 0.0):
            raise ModelError(f"MJCF {w}: wind={el.get('wind')!r} is not supported (fluid at rest only)")
        for flag in el.findall("flag"):
            wf = self.doc.where(flag)
            for attr, value in flag.attrib.items():
                if value not in ("enable", "disable"):
                    raise ModelError(f"MJCF {wf}: flag {attr} must be 'enable' or 'disable'")
                (self.disabled.add if value == "disable" else self.disabled.discard)(attr)
            if flag.get("actuation") == "disable":
                raise ModelError(f"MJCF {wf}: flag actuation='disable' (MuJoCo then applies no actuator force) is not "
                                 "supported: remove the flag, or the <actuator> section, or pass no ctrl=")
        if "actuatorgroupdisable" in el.attrib:
            self.actuator_groups_off = {_integer(g, w, "actuatorgroupdisable")
                                        for g in el.get("actuatorgroupdisable").split()}

    def _check_default_names(self, root):
        """Default class names are unique (MuJoCo: "repeated default class name"; a repeated
        top-level <default> is the main class again), checked before the classes are read."""
        seen = {}

        def walk(el, top):
            name = el.get("class")
            if name is not None and not (top and name == "main"):
                if name in seen:
                    raise ModelError(f"MJCF {self.doc.where(el)}: repeated default class {name!r} (first at "
                                     f"{seen[name]})")
                seen[name] = self.doc.where(el)
            for child in el:
                if child.tag == "default":
                    walk(child, False)

        for el in root.findall("default"):
            walk(el, True)

    def _defaults(self, el, parent):
        w = self.doc.where(el)
        name = el.get("class", "main" if parent is None else None)
        if name is None:
            raise ModelError(f"MJCF {w}: a nested <default> needs a class name")
        if parent is None and name != "main":
            raise ModelError(f"MJCF {w}: the top-level default class is 'main' and cannot be renamed (MuJoCo refuses "
                             f"class={name!r} there); nest <default class={name!r}> inside it")
        if name in self.defaults and not (parent is None and name == "main"):
            raise ModelError(f"MJCF {w}: repeated default class {name!r}")
        # a repeated top-level <default> adds to the main class (as MuJoCo merges them); a class
        # starts from its parent as the parent is when the class is read
        inherited = self.defaults[parent] if parent is not None else self.defaults.get("main", {})
        mine = {tag: dict(attrs) for tag, attrs in inherited.items()}
        self.default_parent[name] = parent
        act = self.actuator_defaults[parent] if parent is not None else self.actuator_defaults.get("main", _ACTUATOR0)
        ancestors = self._actuator_ancestors(parent)
        for child in el:
            if child.tag == "default":
                continue
            if child.tag in _ACTUATOR_DEFAULTS:
                act = _apply_actuator(act, child.tag, dict(child.attrib), self.doc.where(child), ancestors)
            else:
                mine[child.tag] = _merge_attrs(mine.get(child.tag, {}), dict(child.attrib), self.doc.where(child))
        self.defaults[name] = mine
        self.actuator_defaults[name] = _copy_actuator(act)
        for child in el:
            if child.tag == "default":
                self._defaults(child, name)

    def _actuator_ancestors(self, cname):
        """The actuator defaults of class ``cname`` and its ancestors, nearest first."""
        out = []
        while cname is not None:
            out.append(self.actuator_defaults[cname])
            cname = self.default_parent[cname]
        return tuple(out)

    # ---- attribute access with default classes ----
    def _attrs(self, el, cls):
        """Element attributes over its default class (``class`` beats ``childclass``)."""
        cname = el.get("class", cls)
        if cname not in self.defaults:
            raise ModelError(f"MJCF {self.doc.where(el)}: unknown default class {cname!r}")
        return _merge_attrs(self.defaults[cname].get(el.tag, {}), dict(el.attrib), self.doc.where(el))

    def _rotation(self, attrs, where):
        given = [k for k in _ORIENT_KEYS if k in attrs]
        if len(given) > 1:
            raise ModelError(f"MJCF {where}: give only one orientation, got {given}")
        if not given:
            return np.eye(3)
        key = given[0]
        if key == "quat":
            q = floats(attrs["quat"], 4, where, "quat")
            if np.linalg.norm(q) < _MJEPS:
                raise ModelError(f"MJCF {where}: zero quaternion")
            return quat_to_rot(q)
        if key == "axisangle":
            a = floats(attrs["axisangle"], 4, where, "axisangle")
            n = np.linalg.norm(a[:3])
            if n < _MJEPS:
                raise ModelError(f"MJCF {where}: axisangle axis is zero")
            ang = a[3] * math.pi / 180.0 if self.degree else a[3]
            return axis_angle_to_rot(a[:3] / n, ang)
        if key == "euler":
            e = floats(attrs["euler"], 3, where, "euler")
            if self.degree:
                e = e * math.pi / 180.0
            q = np.array([1.0, 0.0, 0.0, 0.0])
            for c, angle in zip(self.eulerseq, e):
                r = np.array([math.cos(angle / 2), 0.0, 0.0, 0.0])
                r[1 + "xyz".index(c.lower())] = math.sin(angle / 2)
                q = quat_mul(q, r) if c.islower() else quat_mul(r, q)
            return quat_to_rot(q)
        if key == "xyaxes":
            a = floats(attrs["xyaxes"], 6, where, "xyaxes")
            x, y = a[:3], a[3:]
            if np.linalg.norm(x) < _MJEPS:
                raise ModelError(f"MJCF {where}: xyaxes x axis is zero")
            x = x / np.linalg.norm(x)
            y = y - x * (x @ y)
            if np.linalg.norm(y) < _MJEPS:
                raise ModelError(f"MJCF {where}: xyaxes y axis is parallel to x")
            y = y / np.linalg.norm(y)
            z = np.cross(x, y)
            return np.column_stack([x, y, z / np.linalg.norm(z)])
        z = floats(attrs["zaxis"], 3, where, "zaxis")
        if np.linalg.norm(z) < _MJEPS:
            raise ModelError(f"MJCF {where}: zaxis is zero")
        return z_to_rot(z / np.linalg.norm(z))

    def _placement(self, attrs, where, frame: _Frame):
        pos = floats(attrs.get("pos", "0 0 0"), 3, where, "pos")
        R = self._rotation(attrs, where)
        return frame.pos + frame.rot @ pos, frame.rot @ R

    # ---- the body tree ----
    def parse(self, dtype=None) -> Model:
        bodies: list[RawBody] = []
        self._geoms: list[list] = []  # per body: (geom element, frame)
        self._explicit: list = []  # per body: (mass, com, inertia) of its <inertial>, or None
        self._world_geoms: list[RawGeom] = []
        self._joint_ranges: dict = {}  # joint name -> (kind, lower, upper) as MuJoCo keeps them (inheritrange)
        self._tendon_ranges: dict = {}
        site_lists: list[list] = [[]]  # index 0: the world body's sites
        for wb in self.doc.root.findall("worldbody"):
            self._children(wb, -1, _Frame(), bodies, site_lists, world=True)
        if not bodies:
            wb = self.doc.root.find("worldbody")
            raise ModelError(f"MJCF {self.doc.where(wb) if wb is not None else '<mujoco>'}: <worldbody> has no bodies")
        sid = len(site_lists[0])
        for bd, sites in zip(bodies, site_lists[1:]):
            for s in sites:
                s.id = sid
                sid += 1
            bd.sites = sites
        for i, bd in enumerate(bodies):
            label = f"body {bd.name or f'body{i + 1}'!r}"
            self._body_inertia(bd, self._geoms[i], self._explicit[i], label)
            bd.geoms = [self._raw_geom(el, frame, label) for el, frame in self._geoms[i]]
            moving = any(bodies[k].joints for k in self._ancestry(bodies, i))
            for g, (el, _) in zip(bd.geoms, self._geoms[i]):
                if g.type == "plane" and moving:
                    raise ModelError(f"MJCF {self.doc.where(el)} in {label}: a plane geom is "
                                     "allowed only in static bodies (welded to the world), as in MuJoCo")
        if self.settotalmass > 0:
            total = sum(bd.mass for bd in bodies)
            if total > 0:
                for bd in bodies:
                    bd.mass *= self.settotalmass / total
                    bd.inertia = bd.inertia * (self.settotalmass / total)
        tendons = self._tendons()
        joint_names = {j.name for bd in bodies for j in bd.joints if j.name}
        names = {"joint": joint_names, "jointinparent": joint_names, "tendon": {t.name for t in tendons if t.name},
                 "site": {x.name for sites in site_lists for x in sites if x.name},
                 "body": {bd.name for bd in bodies if bd.name} | {"world"}}
        actuators = self._actuators(bodies, names)  # adds actuator-side armature and damping to the joints
        if not self.damper:
            for bd in bodies:
                for j in bd.joints:
                    j.damping = 0.0
        for flag, attr in ((self.frictionloss, "frictionloss"), (self.spring, "stiffness")):
            if not flag:
                for bd in bodies:
                    for j in bd.joints:
                        setattr(j, attr, 0.0)
        refs = {j.name: j.ref for bd in bodies for j in bd.joints if j.name}
        fluid = (self.fluid["density"], self.fluid["viscosity"]) if any(self.fluid.values()) else None
        mimics = self._equalities(tendons, refs) if self.equalities else []  # <flag equality="disable"/>: none
        model = assemble(bodies, self.gravity, dtype, world_geoms=self._world_geoms, actuators=actuators,
                         friction_width=self.friction_width, tendons=tendons,
                         mimics=mimics, fluid=fluid, tendon_springs=self._tendon_springs)
        model = _springdampers(model, bodies, spring=self.spring, damper=self.damper,
                               extra_damping=self._actuator_damping)
        warn_unsimulated(model, "MJCF", stacklevel=4)
        return model

    def _equalities(self, tendons, refs):
        """``<equality>`` elements as mimic couplings (:func:`~.assemble.equality_coupling`);
        ``active="false"`` ones are skipped."""
        by_name = {t.name: t for t in tendons if t.name}
        out = []
        for sec in self.doc.root.findall("equality"):
            for el in sec:
                w = self.doc.where(el)
                cname = el.get("class", "main")
                if cname not in self.defaults:
                    raise ModelError(f"MJCF {w}: unknown default class {cname!r}")
                a = _merge_attrs(self.defaults[cname].get("equality", {}), dict(el.attrib), w)
                if not boolean(a.get("active", "true"), w, "active"):
                    continue
                poly = floats(a.get("polycoef", "0 1 0 0 0"), 5, w, "polycoef", allow_fewer=True)
                poly = np.concatenate([poly, [0.0, 1.0, 0.0, 0.0, 0.0][len(poly):]])
                if el.tag == "tendon" and a.get("tendon1") not in by_name:
                    raise ModelError(f"MJCF {w} in <equality>: unknown tendon {a.get('tendon1')!r}")
                out.append(equality_coupling(f"MJCF {w} in <equality>", el.tag, poly, refs,
                                             joints=(a.get("joint1"), a.get("joint2")),
                                             tendon=by_name.get(a.get("tendon1")), two_tendons=bool(a.get("tendon2"))))
        return out

    def _tendons(self):
        """``<tendon>`` elements as data (:class:`~diffsim.model.model.Tendon`); springs and
        dampers on fixed tendons in ``self._tendon_springs`` (``springlength`` −1: the length with
        the joints at their ``springref``); refused: friction loss, a length range (limits), a spring's deadband, and springs
        or dampers on spatial tendons."""
        self._tendon_springs = []
        out = []
        for sec in self.doc.root.findall("tendon"):
            for el in sec:
                w = self.doc.where(el)
                if el.tag not in ("fixed", "spatial"):
                    raise ModelError(f"MJCF {w}: unknown tendon type <{el.tag}>")
                cname = el.get("class", "main")
                if cname not in self.defaults:
                    raise ModelError(f"MJCF {w}: unknown default class {cname!r}")
                a = _merge_attrs(self.defaults[cname].get("tendon", {}), dict(el.attrib), w)
                if not self.frictionloss:  # <flag frictionloss/constraint="disable"/>: no tendon friction either
                    a.pop("frictionloss", None)
                passive = {attr: floats(a[attr], 3 if attr in ("stiffness", "damping") else 2, w, attr,
                                        allow_fewer=True) for attr in _TENDON_PASSIVE if attr in a}
                for attr, val in passive.items():
                    fixed_spring = el.tag == "fixed" and attr in ("stiffness", "damping", "springlength")
                    if np.any(val != 0) and not fixed_spring:
                        raise ModelError(f"MJCF {w}: tendon {attr}={a[attr]!r} is not supported (springs and dampers "
                                         "on fixed tendons only; other tendons are kept as actuator transmissions)")
                    if attr in ("stiffness", "damping") and np.any(val[1:] != 0):
                        raise ModelError(f"MJCF {w}: a polynomial tendon {attr}={a[attr]!r} is not supported (linear "
                                         "only)")
                if any(float(floats(a[k], 1, w, k)[0]) != 0 for k in ("armature", "springyield") if k in a):
                    raise ModelError(f"MJCF {w}: tendon armature (an inertia along the tendon) and springyield are not "
                                     "supported")
                sl = passive.get("springlength", np.array([-1.0]))
                if len(sl) == 2 and sl[0] != sl[1]:
                    raise ModelError(f"MJCF {w}: a tendon spring's deadband (springlength={a['springlength']!r}) is not "
                                     "supported")
                limited, raw = self._limits(a, w, "limited", "range")
                if limited is not None and limited[0] >= limited[1]:
                    raise ModelError(f"MJCF {w}: a limited tendon needs range lower < upper (MuJoCo refuses it)")
                if limited is not None and self.limits:
                    raise ModelError(f"MJCF {w}: tendon length limits are not supported (range={a.get('range')!r})")
                if a.get("name"):
                    self._tendon_ranges[a["name"]] = (float(raw[0]), float(raw[1]))
                if el.tag == "fixed":
                    joints = tuple((j.get("joint"), float(floats(j.get("coef", "1"), 1, self.doc.where(j), "coef")[0]))
                                   for j in el if j.tag == "joint")
                    out.append(Tendon(a.get("name"), "fixed", joints))
                    k, b = (float(passive.get(x, [0.0])[0]) for x in ("stiffness", "damping"))
                    k, b = k * self.spring, b * self.damper  # <flag spring/damper="disable"/>: tendons' too
                    if k or b:
                        if not a.get("name"):
                            raise ModelError(f"MJCF {w}: a tendon with a spring or damper needs a name")
                        self._tendon_springs.append((a["name"], joints, k, b, float(sl[0]) if sl[0] >= 0 else None))
                else:
                    path = tuple(c.get("site") or c.get("geom") or c.tag for c in el)
                    out.append(Tendon(a.get("name"), "spatial", (), path))
        return out

    def _actuators(self, bodies, names):
        """``<actuator>`` elements as data (:class:`~diffsim.model.model.Actuator`), read as MuJoCo
        reads them (:func:`_apply_actuator`: the class's actuator default, then the element;
        shortcut parameters written as gainprm/biasprm, ``position``: ``kp, −kp, −kv``), with
        MuJoCo's ``inheritrange`` and range rules. MuJoCo 4's actuator-side ``armature`` and
        ``damping`` on a joint (or jointinparent) transmission are added to the joint's, times
        ``gear[0]²`` (as MuJoCo adds them to the mass matrix and the joint damping; several
        actuators add up); refused elsewhere, and so is a ``delay``. ``names``: ``{transmission
        kind: names in the model}``: each target is checked (:class:`UnknownTargetError`)."""
        out = []
        joints = {j.name: j for bd in bodies for j in bd.joints if j.name}
        self._actuator_damping = {}  # joint -> the actuator-side damping added to it
        for sec in self.doc.root.findall("actuator"):
            for el in sec:
                w = self.doc.where(el)
                if el.tag not in _ACTUATORS:
                    raise ModelError(f"MJCF {w}: unsupported actuator type <{el.tag}> (supported: {sorted(_ACTUATORS)})")
                cname = el.get("class", "main")
                if cname not in self.defaults:
                    raise ModelError(f"MJCF {w}: unknown default class {cname!r}")
                a = dict(el.attrib)
                trn = [t for t in _TRANSMISSIONS if t in a and t not in ("slidersite", "cranksite")]
                if len(trn) != 1:
                    raise ModelError(f"MJCF {w}: an actuator needs exactly one transmission target, got {trn}")
                trn, target = trn[0], a[trn[0]]
                if ("cranklength" in a or "slidersite" in a) and "cranksite" not in a:
                    raise ModelError(f"MJCF {w}: cranklength and slidersite belong to a slider-crank transmission "
                                     "(cranksite), as MuJoCo requires")
                for key, kind in ((trn, trn), ("refsite", "site")):
                    if key in a and a[key] not in names[kind]:
                        what = "joint" if kind == "jointinparent" else kind
                        raise UnknownTargetError(
                            f"MJCF {w}: actuator {a.get('name', '(unnamed)')!r}: {key}={a[key]!r}: no {what} named "
                            f"{a[key]!r} in the model (MuJoCo refuses it){mjcf_schema.suggest(a[key], names[kind])}")
                spec = _apply_actuator(self.actuator_defaults[cname], el.tag, a, w,
                                       self._actuator_ancestors(self.default_parent[cname]))
                label = f"MJCF {w}"
                if spec["group"] in self.actuator_groups_off:
                    raise ModelError(f"{label}: the actuator is in group {spec['group']}, which actuatorgroupdisable switches "
                                     "off (MuJoCo then applies no force from it): not supported; remove it or the "
                                     "option")
                if spec["delay"] != 0:
                    raise ModelError(f"{label}: delay={spec['delay']} (a delayed control) is not supported")
                gear0 = spec["gear"][0]
                for attr in ("armature", "damping"):
                    value = spec[attr] if attr == "armature" else spec[attr][0]
                    if attr == "damping" and any(spec[attr][1:]):
                        raise ModelError(f"{label}: polynomial actuator damping {spec[attr]} is not supported (linear "
                                         "only)")
                    if value == 0:
                        continue
                    if value < 0:
                        raise ModelError(f"{label}: actuator {attr}={value} must be non-negative")
                    if trn not in ("joint", "jointinparent"):
                        raise ModelError(f"{label}: actuator {attr}={value} on a {trn} transmission is not supported "
                                         "(on a joint transmission it is added to the joint's)")
                    j = joints[target]
                    setattr(j, attr, getattr(j, attr) + value * gear0 * gear0)
                    if attr == "damping":
                        self._actuator_damping[target] = self._actuator_damping.get(target, 0.0) + value * gear0 * gear0
                self._inherit_range(spec, trn, target, w)
                ctrl = _spec_range(spec, "ctrl", self.autolimits, w)
                force = _spec_range(spec, "force", self.autolimits, w)
                g, b = spec["gainprm"], spec["biasprm"]
                biastype = spec["biastype"]
                if g[0] == -b[1] and b[2] > 0:  # MuJoCo reads biasprm[2] > 0 of a position-like actuator as dampratio
                    biastype = "dampratio (kv from the joint's reflected inertia)"
                out.append(Actuator(a.get("name"), el.tag, trn, target, tuple(float(x) for x in spec["gear"]),
                                    ctrl if self.clampctrl else None, force, tuple(float(x) for x in g[:3]),
                                    tuple(float(x) for x in b[:3]), spec["gaintype"], biastype, spec["dyntype"],
                                    refsite=a.get("refsite")))
        return out

    def _inherit_range(self, spec, trn, target, w):
        """MuJoCo's ``inheritrange = r`` of a position-like actuator: its ``ctrlrange`` is the target
        joint's or tendon's range scaled about its midpoint, ``mid ± r · half-range``."""
        ir = spec["inheritrange"]
        g, b = spec["gainprm"], spec["biasprm"]
        if not (ir > 0 and spec["biastype"] == "affine" and (spec["gaintype"] == "fixed" and g[0] == -b[1])):
            return
        if spec["dyntype"] == "integrator":  # intvelocity: the range is the activation's (not kept)
            return
        if spec["dyntype"] not in ("none", "filterexact"):
            raise ModelError(f"MJCF {w}: inheritrange is available for position and intvelocity actuators only")
        if trn == "joint":
            kind, lo, hi = self._joint_ranges[target]
            if kind not in ("hinge", "slide"):
                raise ModelError(f"MJCF {w}: inheritrange needs a hinge or slide joint, {target!r} is a {kind} joint")
        elif trn == "tendon":
            lo, hi = self._tendon_ranges.get(target, (0.0, 0.0))
        else:
            raise ModelError(f"MJCF {w}: inheritrange needs a joint or tendon transmission, not {trn}")
        if lo == hi:
            raise ModelError(f"MJCF {w}: inheritrange={ir} but {trn} {target!r} has no range")
        mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo) * ir
        spec["ctrlrange"] = [mid - half, mid + half]

    def _children(self, el, index, frame, bodies, site_lists, world=False):
        """Walk the children of a body (``index``; -1 = world) or of a frame inside it."""
        for child in el:
            w = self.doc.where(child)
            tag = child.tag
            if tag == "body":
                self._body(child, index, frame, bodies, site_lists)
            elif tag == "frame":
                attrs = dict(child.attrib)
                pos, rot = self._placement(attrs, w, frame)
                sub = _Frame(pos, rot, child.get("childclass", frame.childclass))
                self._check_class(sub.childclass, child)
                self._children(child, index, sub, bodies, site_lists, world)
            elif tag == "geom" and world:
                self._world_geoms.append(self._raw_geom(child, frame, "the world body"))
            elif tag in ("camera", "light") and world:
                continue
            elif tag == "site":
                attrs = self._attrs(child, frame.childclass)
                pos, rot = self._site_placement(attrs, w, frame)
                site_lists[index + 1].append(RawSite(attrs.get("name"), -1, pos, rot))
            elif world:
                raise ModelError(f"MJCF {w}: unsupported element in <worldbody>")
            elif tag in ("joint", "freejoint"):
                bodies[index].joints.append(self._joint(child, frame))
                _check_body_joints(bodies[index].joints, w)
            elif tag == "inertial":
                if self._explicit[index] is not None:
                    raise ModelError(f"MJCF {w}: a body has at most one <inertial>")
                self._explicit[index] = self._inertial(child, frame)
            elif tag == "geom":
                self._geoms[index].append((child, frame))
            elif tag in ("camera", "light"):
                continue
            else:
                raise ModelError(f"MJCF {w}: unknown or unsupported element inside a body")

    def _check_class(self, cname, el):
        if cname not in self.defaults:
            raise ModelError(f"MJCF {self.doc.where(el)}: unknown default class {cname!r}")

    def _body(self, el, parent, frame, bodies, site_lists):
        w = self.doc.where(el)
        attrs = dict(el.attrib)
        pos, rot = self._placement(attrs, w, frame)
        if "gravcomp" in attrs and float(floats(attrs["gravcomp"], 1, w, "gravcomp")[0]) != 0.0:
            raise ModelError(f"MJCF {w}: gravity compensation (gravcomp) is not supported")
        childclass = el.get("childclass", frame.childclass)
        self._check_class(childclass, el)
        bd = RawBody(el.get("name"), parent, pos, rot, [], 0.0, np.zeros(3), np.zeros((3, 3)), [], w)
        bodies.append(bd)
        self._geoms.append([])
        self._explicit.append(None)
        site_lists.append([])
        self._children(el, len(bodies) - 1, _Frame(np.zeros(3), np.eye(3), childclass), bodies, site_lists)

    def _joint(self, el, frame) -> RawJoint:
        w = self.doc.where(el)
        if el.tag == "freejoint":  # MuJoCo applies no default class to <freejoint>
            if "align" in el.attrib and el.get("align") not in ("false", "auto"):
                raise ModelError(f"MJCF {w}: align='true' moves the body frame and is not supported")
            return RawJoint("free", el.get("name"), np.zeros(3), np.array([0.0, 0.0, 1.0]), 0.0, 0.0, w)
        a = self._attrs(el, frame.childclass)
        kind = a.get("type", "hinge")
        if kind == "free":  # MuJoCo ignores limits on free joints
            a.pop("limited", None)
            a.pop("range", None)
        if kind not in KIND_TO_JOINT:
            raise ModelError(f"MJCF {w}: unknown joint type {kind!r} (supported: hinge, slide, ball, free)")

        def nonzero(attr, n=1):
            return attr in a and np.any(floats(a[attr], n, w, attr, allow_fewer=True) != 0.0)

        stiff = floats(a.get("stiffness", "0"), 3, w, "stiffness", allow_fewer=True)
        if np.any(stiff[1:] != 0.0):
            raise ModelError(f"MJCF {w}: polynomial stiffness {a['stiffness']!r} is not supported (linear springs only)")
        if stiff[0] < 0:
            raise ModelError(f"MJCF {w}: stiffness={a['stiffness']!r} must be non-negative")
        springref = float(floats(a.get("springref", "0"), 1, w, "springref")[0])
        if nonzero("springyield"):
            raise ModelError(f"MJCF {w}: springyield={a['springyield']!r} (a plastic spring) is not supported")
        if kind == "hinge" and self.degree:
            springref = springref * math.pi / 180.0
        springdamper = None
        if nonzero("springdamper", 2):
            springdamper = tuple(float(x) for x in floats(a["springdamper"], 2, w, "springdamper"))
            if kind not in ("hinge", "slide") or min(springdamper) <= 0 or not a.get("name"):
                raise ModelError(f"MJCF {w}: springdamper={a['springdamper']!r} is supported with two positive numbers "
                                 "on named hinge and slide joints")
        ref = float(floats(a.get("ref", "0"), 1, w, "ref")[0]) if kind in ("hinge", "slide") else 0.0
        if kind == "hinge" and self.degree:
            ref = ref * math.pi / 180.0
        jrange, raw = (None, np.zeros(2)) if kind == "free" else self._limits(a, w, "limited", "range")
        if jrange is not None:
            if kind != "ball" and jrange[0] >= jrange[1]:
                raise ModelError(f"MJCF {w}: a limited joint needs range lower < upper (MuJoCo refuses it), got "
                                 + (f"range={a['range']!r}" if "range" in a else "no range"))
            if kind == "ball" and jrange[0] != 0:
                raise ModelError(f"MJCF {w}: the range of a ball joint must start at 0, got range={a.get('range')!r}")
            if kind in ("hinge", "ball") and self.degree:
                jrange = jrange * math.pi / 180.0
            raw = jrange
            jrange = (float(jrange[0]), float(jrange[1]))
        if a.get("name"):  # the range an actuator's inheritrange takes (MuJoCo's, converted when limited)
            self._joint_ranges[a["name"]] = (kind, float(raw[0]), float(raw[1]))
        if not self.limits:  # <flag limit="disable"/>: checked as MuJoCo does, not enforced
            jrange = None
        damping = floats(a.get("damping", "0"), 3, w, "damping", allow_fewer=True)
        if np.any(damping[1:] != 0.0):
            raise ModelError(f"MJCF {w}: polynomial damping {a['damping']!r} is not supported (linear damping only)")
        armature = float(floats(a.get("armature", "0"), 1, w, "armature")[0])
        frictionloss = float(floats(a.get("frictionloss", "0"), 1, w, "frictionloss")[0])
        if frictionloss < 0:
            raise ModelError(f"MJCF {w}: frictionloss={a['frictionloss']!r} must be non-negative")
        if kind == "free":
            return RawJoint("free", a.get("name"), np.zeros(3), np.array([0.0, 0.0, 1.0]), float(damping[0]), armature, w,
                            None, frictionloss, float(stiff[0]))
        pos = frame.pos + frame.rot @ floats(a.get("pos", "0 0 0"), 3, w, "pos")
        axis = frame.rot @ floats(a.get("axis", "0 0 1"), 3, w, "axis")
        if kind in ("hinge", "slide"):
            n = np.linalg.norm(axis)
            if n < _MJEPS:
                raise ModelError(f"MJCF {w}: joint axis is zero")
            axis = axis / n
        afr = None if kind == "ball" else self._limits(a, w, "actuatorfrclimited", "actuatorfrcrange")[0]
        if afr is not None:
            if afr[0] >= afr[1]:
                raise ModelError(f"MJCF {w}: actuatorfrcrange {a.get('actuatorfrcrange', '0 0')!r} needs lower < upper "
                                 "when limited (MuJoCo refuses it)")
            afr = (float(afr[0]), float(afr[1]))
        return RawJoint(kind, a.get("name"), pos, axis, float(damping[0]), armature, w, jrange, frictionloss,
                        float(stiff[0]), springref if kind in ("hinge", "slide") else 0.0, ref, afr, springdamper)

    def _limits(self, a, w, flag, key):
        """MuJoCo's ``limited``/``range`` pairs (joints, actuators): ``(range if limited else None,
        range)``; ``limited="auto"`` limits when ``lower < upper``, and a range without ``limited``
        is refused when ``<compiler autolimits="false"/>``, as MuJoCo refuses it."""
        lim = a.get(flag, "auto")
        if lim not in ("true", "false", "auto"):
            raise ModelError(f"MJCF {w}: {flag} must be true, false or auto, got {lim!r}")
        rng = floats(a.get(key, "0 0"), 2, w, key)
        if lim == "auto" and not self.autolimits and np.any(rng != 0):
            raise ModelError(f"MJCF {w}: {key}={a[key]!r} but no {flag} with <compiler autolimits=\"false\"/>: give "
                             f"{flag} explicitly (MuJoCo refuses it)")
        on = lim == "true" or (lim == "auto" and rng[0] < rng[1])
        return (rng if on else None), rng

    def _inertial(self, el, frame):
        w = self.doc.where(el)
        a = dict(el.attrib)
        if "pos" not in a or "mass" not in a:
            raise ModelError(f"MJCF {w}: <inertial> needs pos and mass")
        com, R = self._placement(a, w, frame)
        mass = float(floats(a["mass"], 1, w, "mass")[0])
        if mass < 0:  # MuJoCo clamps it to boundmass silently: a sign error in the file, refused
            raise ModelError(f"MJCF {w}: negative mass={a['mass']!r}")
        if "fullinertia" in a:
            if "diaginertia" in a or any(k in a for k in _ORIENT_KEYS):
                raise ModelError(f"MJCF {w}: fullinertia excludes diaginertia and an inertial orientation")
            ixx, iyy, izz, ixy, ixz, iyz = floats(a["fullinertia"], 6, w, "fullinertia")
            if min(ixx, iyy, izz) < 0:
                raise ModelError(f"MJCF {w}: fullinertia={a['fullinertia']!r} has a negative moment (ixx, iyy, izz)")
            I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
            I = frame.rot @ I @ frame.rot.T
        elif "diaginertia" in a:
            d = floats(a["diaginertia"], 3, w, "diaginertia")
            if np.any(d < 0):
                raise ModelError(f"MJCF {w}: diaginertia={a['diaginertia']!r} has a negative principal moment")
            I = R @ np.diag(d) @ R.T
        else:
            raise ModelError(f"MJCF {w}: <inertial> needs diaginertia or fullinertia")
        return mass, com, I

    def _site_placement(self, attrs, w, frame):
        if "fromto" in attrs:
            self._no_pos_with_fromto(attrs, w, "site")
            ft = floats(attrs["fromto"], 6, w, "fromto")
            vec = ft[:3] - ft[3:]
            if np.linalg.norm(vec) < _MJEPS:
                raise ModelError(f"MJCF {w}: fromto points coincide")
            pos, R = 0.5 * (ft[:3] + ft[3:]), z_to_rot(vec / np.linalg.norm(vec))
            return frame.pos + frame.rot @ pos, frame.rot @ R
        return self._placement(attrs, w, frame)

    @staticmethod
    def _no_pos_with_fromto(attrs, w, what):
        if "pos" in attrs and np.any(floats(attrs["pos"], 3, w, "pos") != 0):
            raise ModelError(f"MJCF {w}: both pos and fromto are given (in the {what} or its default class); fromto "
                             f"places the {what}, and MuJoCo refuses the two together")

    # ---- mass properties ----
    @staticmethod
    def _ancestry(bodies, i):
        while i >= 0:
            yield i
            i = bodies[i].parent

    def _body_inertia(self, bd, geoms, explicit, label):
        where = bd.where
        use_geoms = self.inertiafromgeom == "true" or (self.inertiafromgeom == "auto" and explicit is None)
        sel = []
        if use_geoms:
            for el, frame in geoms:
                a = self._attrs(el, frame.childclass)
                group = int(a.get("group", "0"))
                if self.igroup[0] <= group <= self.igroup[1]:
                    sel.append(self._geom_mass(el, a, frame, label))
        if sel:
            if len(sel) == 1:
                mass, com, I = sel[0]
            else:
                mass = sum(m for m, _, _ in sel)
                if mass < _MJEPS:
                    raise ModelError(f"MJCF {where}: body mass from its geoms is too small to define a centre of mass")
                com = sum(m * c for m, c, _ in sel) / mass
                I = np.zeros((3, 3))
                for m, c, Ig in sel:
                    d = c - com
                    I = I + Ig + m * (d @ d * np.eye(3) - np.outer(d, d))
        elif explicit is not None:
            mass, com, I = explicit
        else:
            mass, com, I = 0.0, np.zeros(3), np.zeros((3, 3))
        bd.mass, bd.inertia = _principal_fix(mass, I, self.boundmass, self.boundinertia, self.balanceinertia, where)
        bd.com = com

    def _geom_shape(self, el, a, frame, body):
        """Type, MuJoCo's 3 sizes, centre and axes (body frame) of a geom (``fromto`` resolved;
        ``fromto`` wins over an orientation, as in MuJoCo). Refused as MuJoCo refuses them: sizes
        that the type needs and that are missing or not positive, and ``pos`` with ``fromto``."""
        w = self.doc.where(el)
        gtype = a.get("type", "sphere")
        if gtype not in ("sphere", "capsule", "cylinder", "ellipsoid", "box", "plane", "mesh", "sdf", "hfield"):
            raise ModelError(f"MJCF {w}: unknown geom type {gtype!r}")
        size = np.zeros(3)
        if "size" in a:
            s = floats(a["size"], 3, w, "size", allow_fewer=True)
            size[: len(s)] = s
        if "fromto" in a:
            if gtype not in ("capsule", "cylinder", "ellipsoid", "box"):
                raise ModelError(f"MJCF {w}: fromto needs a capsule, cylinder, ellipsoid or box geom")
            self._no_pos_with_fromto(a, w, "geom")
            ft = floats(a["fromto"], 6, w, "fromto")
            vec = ft[:3] - ft[3:]
            half = np.linalg.norm(vec) / 2
            if half < _MJEPS:
                raise ModelError(f"MJCF {w}: fromto points coincide")
            size[1] = half
            if gtype in ("ellipsoid", "box"):
                size[2], size[1] = size[1], size[0]
            pos, R = 0.5 * (ft[:3] + ft[3:]), z_to_rot(vec / (2 * half))
            pos, R = frame.pos + frame.rot @ pos, frame.rot @ R
        else:
            pos, R = self._placement(a, w, frame)
        need = 0 if "mesh" in a else _GEOM_NSIZE.get(gtype, 0)  # a mesh sizes the geom (fitted)
        if np.any(size[:need] <= 0) or (gtype == "plane" and size[2] <= 0):
            names = {"sphere": "its radius", "capsule": "its radius and half-length (or fromto)",
                     "cylinder": "its radius and half-length (or fromto)", "ellipsoid": "its 3 semi-axes",
                     "box": "its 3 half-sizes", "plane": "its third size"}
            raise ModelError(f"MJCF {w} in {body}: a {gtype} geom needs {names[gtype]} positive, got "
                             f"size={a.get('size', '(none)')!r} (MuJoCo refuses it)")
        return gtype, size, pos, R

    def _raw_geom(self, el, frame, body):
        a = self._attrs(el, frame.childclass)
        gtype, size, pos, R = self._geom_shape(el, a, frame, body)
        return RawGeom(a.get("name"), gtype, size, pos, R, a.get("mesh"))

    def _geom_mass(self, el, a, frame, body):
        """Mass, centre and inertia (body axes) of a primitive geom (MuJoCo's ``mjCGeom``)."""
        w = self.doc.where(el)
        gtype = a.get("type", "sphere")
        if gtype in ("mesh", "sdf", "hfield") or "mesh" in a:
            raise ModelError(
                f"MJCF {w}: cannot infer inertia from a {gtype} geom (meshes are not supported); "
                "give the body an explicit <inertial>"
            )
        if "shellinertia" in a and boolean(a["shellinertia"], w, "shellinertia"):
            raise ModelError(f"MJCF {w}: shellinertia is not supported; give the body an explicit <inertial>")
        gtype, size, pos, R = self._geom_shape(el, a, frame, body)
        r = size[0]
        if gtype == "sphere":
            vol = 4 * math.pi * r**3 / 3
        elif gtype == "capsule":
            vol = math.pi * (r * r * 2 * size[1] + 4 * r**3 / 3)
        elif gtype == "cylinder":
            vol = math.pi * r * r * 2 * size[1]
        elif gtype == "ellipsoid":
            vol = 4 * math.pi * size[0] * size[1] * size[2] / 3
        elif gtype == "box":
            vol = 8 * size[0] * size[1] * size[2]
        else:
            vol = 0.0
        if "mass" in a:
            gm = float(floats(a["mass"], 1, w, "mass")[0])
            mass = gm if (gm == 0 or vol > _MJEPS) else 0.0
        else:
            density = float(floats(a.get("density", "1000"), 1, w, "density")[0])
            mass = density * vol
        if mass < 0:
            raise ModelError(f"MJCF {w}: negative geom mass or density")
        d = self._geom_diag_inertia(gtype, mass, size) if mass > 0 else np.zeros(3)
        return mass, pos, R @ np.diag(d) @ R.T

    @staticmethod
    def _geom_diag_inertia(gtype, m, size):
        r, h = size[0], 2 * size[1]
        if gtype == "sphere":
            return np.full(3, 2 * m * r * r / 5)
        if gtype == "capsule":
            ms = m * 4 * r / (4 * r + 3 * h)
            mc = m - ms
            ixy = mc * (3 * r * r + h * h) / 12 + 2 * ms * r * r / 5 + ms * h * (3 * r + 2 * h) / 8
            return np.array([ixy, ixy, mc * r * r / 2 + 2 * ms * r * r / 5])
        if gtype == "cylinder":
            ixy = m * (3 * r * r + h * h) / 12
            return np.array([ixy, ixy, m * r * r / 2])
        s = size**2
        if gtype == "ellipsoid":
            return m / 5 * np.array([s[1] + s[2], s[0] + s[2], s[0] + s[1]])
        if gtype == "box":
            return m / 3 * np.array([s[1] + s[2], s[0] + s[2], s[0] + s[1]])
        return np.zeros(3)


def load_mjcf(source, *, friction_width: float = 1e-3, dtype=None) -> Model:
    """Load the rigid-body subset of an MJCF model (file path or XML string).

    Returns a :class:`~diffsim.model.Model` whose ``q``/``v`` layout equals MuJoCo's
    qpos/qvel except for the free-joint velocity frame (see :func:`diffsim.io.to_mujoco`).
    Bodies with several joints become chains of massless bodies ``<body>__<joint>``; joint
    anchors become body origins (see this module's docstring for every convention).
    Unsupported features raise :class:`~diffsim.model.ModelError` naming the element and
    its line. ``friction_width`` [rad/s | m/s] is the smoothing width ``ε`` of the Coulomb joint
    friction ``frictionloss`` (``F_s tanh(q̇/ε)``, see :func:`diffsim.model.joint_passive_forces`;
    per joint afterwards as the named parameter ``joint.<j>.friction_width``). ``dtype`` is
    passed to :meth:`ModelBuilder.build`.
    """
    return _MJCFParser(source, friction_width).parse(dtype)
