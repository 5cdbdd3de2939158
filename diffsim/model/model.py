"""The model: static topology plus differentiable parameters with a leading body axis."""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import joints as jt
from .fluid import Fluid
from .mimic import Mimic, couple
from .topology import Topology


class Geom(NamedTuple):
    """A geom read from a file and kept as data (``Model.geoms``); not simulated by the model
    itself (contacts are added with :mod:`diffsim.contact`). ``body`` is ``None`` for the world;
    ``pos``/``quat`` ``[w,x,y,z]`` in the diffsim body frame; ``size`` as MuJoCo's (3 numbers);
    ``mesh`` names the mesh of a mesh geom."""

    name: str | None
    body: str | None
    type: str
    size: tuple
    pos: tuple
    quat: tuple
    mesh: str | None = None


class JointLimit(NamedTuple):
    """A joint range (``Model.joint_limits``): ``lower``/``upper`` in the joint's coordinate
    (rad or m); ``enforced``: the file asks for it to be enforced, and a :class:`diffsim.System`
    does by default on 1-DoF joints (:mod:`diffsim.contact.limits`; ``limits=False`` turns it off)."""

    joint: str
    lower: float
    upper: float
    enforced: bool = True


class ActuatorForceRange(NamedTuple):
    """MuJoCo's joint ``actuatorfrcrange`` (``Model.actuator_force_ranges``; URDF effort limits as
    MuJoCo imports them): the actuators' total generalised force on the joint is clamped to
    ``[lower, upper]`` (N m or N) by :func:`diffsim.actuation`."""

    joint: str
    lower: float
    upper: float


class Actuator(NamedTuple):
    """An actuator read from a file (``Model.actuators``), kept as data: MuJoCo's ``kind``
    (``motor``/``position``/``velocity``/``general``/… or ``effort`` for a URDF effort limit),
    transmission ``trntype`` (``joint``/``tendon``/``site``/…) and its ``target`` name,
    ``gear`` (6), ``ctrlrange``/``forcerange`` (``None`` when unlimited), MuJoCo's
    ``gainprm``/``biasprm`` (the first 3 entries) and its ``gaintype``/``biastype``/``dyntype``;
    ``refsite`` the reference site of a site transmission (``None``: none).
    Applied by :func:`diffsim.actuation` (controls to generalised forces)."""

    name: str | None
    kind: str
    trntype: str
    target: str | None
    gear: tuple
    ctrlrange: tuple | None
    forcerange: tuple | None
    gainprm: tuple = ()
    biasprm: tuple = ()
    gaintype: str = "fixed"
    biastype: str = "affine"
    dyntype: str = "none"
    refsite: str | None = None


#: The gains each MJCF servo kind carries (the readers write them out as gainprm / biasprm).
SERVO_GAINS = {"position": "gainprm=(kp,), biasprm=(0, -kp, -kv) (MuJoCo's defaults: kp = 1, kv = 0)",
               "velocity": "gainprm=(kv,), biasprm=(0, 0, -kv) (MuJoCo's default: kv = 1)"}


def actuator_data_problem(a: Actuator) -> str | None:
    """What leaves an :class:`Actuator`'s data short of saying what it does, or ``None``: a
    ``gear`` with no entry (it gave a zero force, silently) or more than 6, and a ``position`` /
    ``velocity`` actuator without its ``gainprm`` and ``biasprm`` (:data:`SERVO_GAINS`; without
    them it was applied as a motor of gain 1). :meth:`diffsim.ModelBuilder.add_actuator` and
    :func:`diffsim.actuation` refuse these; what a file may hold but diffsim does not apply
    (activation dynamics, other transmissions) is kept as data and refused by the latter."""
    if not 1 <= len(a.gear) <= 6:
        return (f"gear {tuple(a.gear)} must have 1 to 6 entries (the transmission's gain, e.g. (1.0,); a hinge or "
                "slide takes gear[0], a site the 6-vector)")
    if a.kind in SERVO_GAINS and (not a.gainprm or not a.biasprm):
        return (f"a {a.kind} actuator needs its gains, as MJCF <{a.kind}> gives them: {SERVO_GAINS[a.kind]}; "
                "without them it acted as a motor")
    return None


class Tendon(NamedTuple):
    """A tendon read from a file and kept as data (``Model.tendons``): MuJoCo's ``fixed`` tendon
    (length ``Σ coef · q_joint``, ``joints`` = ((joint, coef), …)) or ``spatial`` (its path
    elements' names). Only tendons without passive forces or limits are accepted: their sole
    use is as an actuator transmission, which diffsim does not apply either."""

    name: str | None
    kind: str
    joints: tuple = ()
    path: tuple = ()


class TendonSprings(eqx.Module):
    """Fixed tendons with passive forces (MuJoCo's tendon ``stiffness``, ``damping`` and
    ``springlength``; no deadband): length ``L = C q`` over the joints' coordinates (``coef``
    [nt, nv_rigid], each tendon's coefficients at its joints' DOFs), force along the tendon
    ``−k (L − L_ref) − b L̇``, on the joints ``Cᵀ`` of it (:func:`joint_passive_forces`)."""

    names: tuple = eqx.field(static=True)
    coef: jax.Array  # [nt, nv_rigid]
    stiffness: jax.Array  # [nt] N/m (N m/rad per unit coefficient)
    damping: jax.Array  # [nt]
    length_ref: jax.Array  # [nt] the spring's rest length


class Model(eqx.Module):
    """A rigid multibody tree. Every float is a differentiable leaf.

    Frames: body ``i``'s frame is placed in its parent's frame at ``tree_pos[i]`` with
    orientation ``tree_rot[i]`` (body coords -> parent coords) when its joint is at the neutral
    configuration; the joint acts at the body-frame origin, its axis in body coordinates.
    """

    topology: Topology = eqx.field(static=True)
    mass: jax.Array  # [nb] kg
    com: jax.Array  # [nb, 3] m, centre of mass in the body frame
    inertia: jax.Array  # [nb, 3, 3] kg m², about the COM, body axes
    tree_pos: jax.Array  # [nb, 3] m
    tree_rot: jax.Array  # [nb, 3, 3]
    axis: jax.Array  # [nb, 3] unit joint axis (revolute / prismatic; unused otherwise)
    damping: jax.Array  # [nv_rigid] viscous joint damping, N m s/rad or N s/m
    armature: jax.Array  # [nv_rigid] rotor inertia added to the mass-matrix diagonal, kg m² or kg
    frictionloss: jax.Array  # [nv_rigid] Coulomb joint friction F_s, N m or N (MuJoCo's frictionloss)
    friction_width: jax.Array  # [nv_rigid] smoothing width ε of its sign, rad/s or m/s
    gravity: jax.Array  # [3] m/s², world frame
    site_pos: jax.Array  # [ns, 3] m, in the site's body frame
    site_rot: jax.Array  # [ns, 3, 3] site coords -> body coords
    # flexible links (diffsim.flexible.FlexBody) per body, None for a rigid body; () = all rigid.
    # A flexible body's children attach to its deformed distal end (tree_pos/rot relative to it).
    flex: tuple = ()
    # read from a file and kept as data, not simulated (static: no derivatives): geoms (contact
    # geometry), joint ranges, actuators; see Geom, JointLimit, Actuator
    # joint springs K (q − q_ref) on revolute/prismatic joints (MuJoCo's stiffness/springref);
    # None: no springs (zero on other joints' DOFs)
    stiffness: jax.Array | None = None  # [nv_rigid] N m/rad or N/m
    springref: jax.Array | None = None  # [nv_rigid] rest position q_ref, rad or m
    # mimic joints q_m = multiplier · q_master + offset (diffsim.model.mimic); None: none
    mimic: Mimic | None = None
    # a fluid medium (MuJoCo's inertia-based model, diffsim.model.fluid); None: none
    fluid: Fluid | None = None
    # springs and dampers along fixed tendons (TendonSprings); None: none
    tendon_springs: TendonSprings | None = None
    geoms: tuple = eqx.field(static=True, default=())
    joint_limits: tuple = eqx.field(static=True, default=())
    actuator_force_ranges: tuple = eqx.field(static=True, default=())
    actuators: tuple = eqx.field(static=True, default=())
    tendons: tuple = eqx.field(static=True, default=())

    # convenience views of the topology
    @property
    def nb(self) -> int:
        return self.topology.nb

    @property
    def nq(self) -> int:
        return self.topology.nq

    @property
    def nv(self) -> int:
        return self.topology.nv

    @property
    def dtype(self):
        return self.mass.dtype

    def astype(self, dtype) -> "Model":
        """The same model with every float leaf cast to ``dtype`` (float32 / float64)."""
        return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), self)

    def without_gravity(self) -> "Model":
        """The same model with zero gravity."""
        return eqx.tree_at(lambda m: m.gravity, self, jnp.zeros_like(self.gravity))

    def at_rest_unloaded(self) -> "Model":
        """The same model with zero gravity and without joint or tendon springs: at zero
        velocity its bias forces vanish (modal stiffness aside), so that a forward-dynamics pass
        at rest applies ``M⁻¹`` (the springs' ``K (q − q_ref)`` is a force at rest too)."""
        return eqx.tree_at(lambda m: (m.gravity, m.stiffness, m.tendon_springs), self,
                           (jnp.zeros_like(self.gravity), None, None), is_leaf=lambda x: x is None)


def _spring_coordinates(model: Model, q):
    """The coordinate of each rigid DOF that carries a spring (revolute/prismatic: its ``q``;
    zero with a zero mask elsewhere)."""
    t = model.topology
    idx, mask = np.zeros(t.nv_rigid, int), np.zeros(t.nv_rigid)
    for i, jtype in enumerate(t.joint_types):
        if jtype in (jt.JointType.REVOLUTE, jt.JointType.PRISMATIC):
            idx[t.v_start[i]], mask[t.v_start[i]] = t.q_start[i], 1.0
    return q[idx] * mask


def joint_passive_forces(model: Model, v_rigid, q=None):
    """The joints' own passive forces [nv_rigid]: viscous damping, smoothed Coulomb friction and
    (with ``q``) joint springs, ``D q̇ + F_s tanh(q̇/ε) + K (q − q_ref)`` (seed 003's joint friction
    ``F_s sgn(q̇) + F_v q̇`` with the sign smoothed over ``ε`` = ``friction_width``; MuJoCo's
    ``stiffness``/``springref`` on revolute and prismatic joints). Every formulation moves them
    to the right-hand side: ``M v̇ + h = τ − joint_passive_forces``. Springs and dampers along
    fixed tendons (``model.tendon_springs``) add ``Cᵀ (b L̇ + k (L − L_ref))``."""
    f = model.damping * v_rigid + model.frictionloss * jnp.tanh(v_rigid / model.friction_width)
    if q is not None and model.stiffness is not None:
        f = f + model.stiffness * (_spring_coordinates(model, q) - model.springref)
    ts = model.tendon_springs
    if ts is not None:  # along fixed tendons: Cᵀ (b L̇ + k (L − L_ref))
        t = ts.damping * (ts.coef @ v_rigid)
        if q is not None:
            t = t + ts.stiffness * (ts.coef @ _spring_coordinates(model, q) - ts.length_ref)
        f = f + ts.coef.T @ t
    return f


def joint_spring_energy(model: Model, q):
    """``½ Σ K (q − q_ref)²`` [J], the potential of the joint springs, and ``½ Σ k (L − L_ref)²``
    of the fixed tendons' (zero without springs)."""
    E = jnp.zeros((), model.dtype)
    if model.stiffness is not None:
        d = _spring_coordinates(model, q) - model.springref
        E = E + 0.5 * jnp.sum(model.stiffness * d * d)
    ts = model.tendon_springs
    if ts is not None:
        e = ts.coef @ _spring_coordinates(model, q) - ts.length_ref
        E = E + 0.5 * jnp.sum(ts.stiffness * e * e)
    return E


def body_names(model: Model) -> tuple[str, ...]:
    return model.topology.body_names


def neutral_configuration(model: Model):
    """``q`` with every independent joint at its zero (identity quaternions) and each mimic
    joint at ``multiplier · 0 + offset``."""
    t = model.topology
    parts = [jt.neutral(j, model.dtype) for j in t.joint_types]
    if t.ne:
        parts.append(jnp.zeros(t.ne, model.dtype))
    q = jnp.concatenate(parts) if parts else jnp.zeros(0, model.dtype)
    return q if model.mimic is None else couple(model, q)
