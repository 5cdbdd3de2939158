"""Bridge to MuJoCo: compiled ``mujoco.MjModel`` -> diffsim model, and state conversions.

:func:`from_mjmodel` reads MuJoCo's *compiled* model (exact compiler semantics: default
classes, frames, inertia from geoms, …) with the same body naming and joint-insertion rules as
:func:`diffsim.io.load_mjcf` (see :mod:`diffsim.io.mjcf`), and refuses what it refuses.

State conventions. ``q`` equals MuJoCo's ``qpos`` (hinge 1, slide 1, ball 4 ``[w,x,y,z]``,
free 7 = world position + ``[w,x,y,z]``). ``v`` equals ``qvel`` except for free joints:

* MuJoCo ``qvel`` (free) = ``[ṗ (world frame), ω (body frame)]``,
* diffsim ``v`` (free)    = ``[R(q)ᵀ ṗ (body frame), ω (body frame)]``.

Generalised forces transform with the transpose (``τ = Tᵀ τ_mj`` with ``v_mj = T(q) v``,
``T = blockdiag(R, I)`` on each free block), and accelerations as
``qacc_lin = R (v̇_lin + ω × v_lin)``. Scalar joint damping and armature are unchanged by
this change of coordinates.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import spatial as sp
from ..model.builder import ModelError
from ..model.joints import JointType
from ..model.model import Model
from ..model.rotations import quat_to_rot
from ..model.model import Actuator, Tendon
from ..precision import full_precision
from .assemble import RawBody, RawGeom, RawJoint, RawSite, assemble, equality_coupling
from .xml import warn_unsimulated

_MJ_KIND = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}  # mjtJoint
_GEOM_TYPES = {0: "plane", 1: "hfield", 2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box",
               7: "mesh", 8: "sdf"}  # mjtGeom
_TRN = {0: "joint", 1: "jointinparent", 2: "slidercrank", 3: "tendon", 4: "site", 5: "body"}  # mjtTrn
_GAIN = {0: "fixed", 1: "affine", 2: "muscle", 3: "user"}  # mjtGain
_BIAS = {0: "none", 1: "affine", 2: "muscle", 3: "user"}  # mjtBias
_DYN = {0: "none", 1: "integrator", 2: "filter", 3: "filterexact", 4: "muscle", 5: "user"}  # mjtDyn


def _actuator_joint_terms(m, awhere) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo 4's actuator-side ``armature`` and ``damping`` per joint: ``Σ value · gear[0]²`` over
    the actuators with a joint or jointinparent transmission on it (MuJoCo's
    ``mj_actuatorArmature``/``mj_actuatorDamping``: added to the joint's, on each of its DOFs).
    Refused (:class:`ModelError` naming the actuator): these terms on other transmissions,
    polynomial actuator damping, and a ``delay``."""
    arm, damp = np.zeros(m.njnt), np.zeros(m.njnt)
    for a in range(m.nu):
        if getattr(m, "actuator_delay", np.zeros(m.nu))[a] != 0:
            raise ModelError(f"MjModel {awhere(a)}: delay {float(m.actuator_delay[a])} (a delayed control) is not "
                             "supported")
        if hasattr(m, "actuator_dampingpoly") and np.any(m.actuator_dampingpoly[a] != 0):
            raise ModelError(f"MjModel {awhere(a)}: polynomial actuator damping is not supported (linear only)")
        terms = {k: float(getattr(m, "actuator_" + k)[a]) for k in ("armature", "damping") if hasattr(m, "actuator_" + k)}
        if not any(terms.values()):
            continue
        if int(m.actuator_trntype[a]) not in (0, 1):  # mjTRN_JOINT, mjTRN_JOINTINPARENT
            raise ModelError(f"MjModel {awhere(a)}: actuator-side {', '.join(k for k, v in terms.items() if v)} on a "
                             f"{_TRN.get(int(m.actuator_trntype[a]), '?')} transmission is not supported (on a joint "
                             "transmission it is added to the joint's)")
        g2 = float(m.actuator_gear[a][0]) ** 2
        j = int(m.actuator_trnid[a][0])
        arm[j] += terms.get("armature", 0.0) * g2
        damp[j] += terms.get("damping", 0.0) * g2
    return arm, damp


def _name(mujoco, m, objtype, i):
    n = mujoco.mj_id2name(m, objtype, i)
    return n if n else None


def from_mjmodel(mjmodel, *, friction_width: float = 1e-3, dtype=None) -> Model:
    """Convert a compiled ``mujoco.MjModel`` (rigid subset) to a diffsim :class:`Model`.

    Uses ``body_pos/quat``, ``body_ipos/iquat/mass/inertia``, ``jnt_type/axis/pos``,
    ``jnt_stiffness``/``qpos_spring`` (joint springs; zero with the spring disable flag),
    ``qpos0`` of hinge/slide joints (``ref``: bodies are placed at ``q = 0``),
    ``dof_damping/armature/frictionloss`` (Coulomb friction smoothed over ``friction_width``,
    zero when MuJoCo's frictionloss or constraints are disabled) plus MuJoCo 4's actuator-side
    ``actuator_armature``/``actuator_damping`` of joint transmissions (times ``gear[0]²``, as
    :func:`load_mjcf` reads them), ``opt.gravity`` (and the gravity/damper disable flags; the
    limit, equality and constraint flags drop joint ranges and equalities) and the
    sites. Geoms, joint ranges (``jnt_limited``; free joints' are ignored) and actuators are kept
    as data (``model.geoms``, ``model.joint_limits``, ``model.actuators``; one
    :class:`~diffsim.io.xml.UnsimulatedWarning`), as are tendons without passive forces or limits
    (``model.tendons``). Equalities that couple two 1-DoF joints linearly (joint, or a fixed
    tendon over two joints) become mimic joints (:func:`~diffsim.io.assemble.equality_coupling`).
    Raises :class:`~diffsim.model.ModelError` for other tendons and equality constraints, springs
    on ball/free joints,
    gravity compensation, wind and the ellipsoid fluid model, flex objects and plugins (the
    inertia-box fluid model of ``opt.density``/``viscosity`` is simulated).
    """
    import mujoco  # optional dependency (the test extra): only this function needs it

    m = mjmodel
    OBJ = mujoco.mjtObj
    trn_obj = {"joint": OBJ.mjOBJ_JOINT, "jointinparent": OBJ.mjOBJ_JOINT, "tendon": OBJ.mjOBJ_TENDON,
                "site": OBJ.mjOBJ_SITE, "body": OBJ.mjOBJ_BODY, "slidercrank": OBJ.mjOBJ_SITE}
    refuse = [
        (m.nflex, "flexible (flex) objects are not supported"),
        (m.nplugin, "engine plugins are not supported"),
    ]
    for count, msg in refuse:
        if count:
            raise ModelError(f"MjModel: {msg} (model has {count})")
    if np.any(m.opt.wind != 0):
        raise ModelError("MjModel: opt.wind != 0 is not supported (fluid at rest only)")
    if np.any(m.geom_fluid[:, 0] != 0):
        raise ModelError("MjModel: the ellipsoid fluid model (geom fluidshape) is not supported (the inertia-box model is)")

    def jwhere(j):
        return f"joint {_name(mujoco, m, OBJ.mjOBJ_JOINT, j)!r} (id {j})"

    for j in range(m.njnt):
        kind = _MJ_KIND.get(int(m.jnt_type[j]))
        if kind is None:
            raise ModelError(f"MjModel {jwhere(j)}: unknown joint type {int(m.jnt_type[j])}")
        d0, nd = int(m.jnt_dofadr[j]), {"free": 6, "ball": 3}.get(kind, 1)
        if np.any(m.jnt_stiffnesspoly[j] != 0):
            raise ModelError(f"MjModel {jwhere(j)}: polynomial joint stiffness is not supported (linear springs only)")
        if m.jnt_stiffness[j] != 0 and kind in ("ball", "free"):
            raise ModelError(f"MjModel {jwhere(j)}: a spring (stiffness) on a {kind} joint is not supported")
        if np.any(m.dof_dampingpoly[d0:d0 + nd] != 0):
            raise ModelError(f"MjModel {jwhere(j)}: polynomial damping is not supported")
        if np.any(m.dof_damping[d0:d0 + nd] != m.dof_damping[d0]) or np.any(
            m.dof_armature[d0:d0 + nd] != m.dof_armature[d0]
        ) or np.any(m.dof_frictionloss[d0:d0 + nd] != m.dof_frictionloss[d0]):
            raise ModelError(f"MjModel {jwhere(j)}: damping/armature/frictionloss must be equal on all dofs of a joint")

    DSBL = mujoco.mjtDisableBit
    no_damper = bool(m.opt.disableflags & DSBL.mjDSBL_DAMPER)
    no_spring = bool(m.opt.disableflags & DSBL.mjDSBL_SPRING)
    no_friction = bool(m.opt.disableflags & (DSBL.mjDSBL_FRICTIONLOSS | DSBL.mjDSBL_CONSTRAINT))
    no_limits = bool(m.opt.disableflags & (DSBL.mjDSBL_LIMIT | DSBL.mjDSBL_CONSTRAINT))
    no_equality = bool(m.opt.disableflags & (DSBL.mjDSBL_EQUALITY | DSBL.mjDSBL_CONSTRAINT))
    for j in range(m.njnt):
        if getattr(m, "jnt_springyield", np.zeros(m.njnt))[j] != 0:
            raise ModelError(f"MjModel {jwhere(j)}: a spring yield (springyield, plasticity) is not supported")
    act_armature, act_damping = _actuator_joint_terms(
        m, lambda a: f"actuator {_name(mujoco, m, OBJ.mjOBJ_ACTUATOR, a)!r} (id {a})")
    bodies = []
    for b in range(1, m.nbody):
        bname = _name(mujoco, m, OBJ.mjOBJ_BODY, b)
        where = f"body {bname!r} (id {b})"
        if m.body_gravcomp[b] != 0:
            raise ModelError(f"MjModel {where}: gravity compensation (gravcomp) is not supported")
        joints = []
        for j in range(int(m.body_jntadr[b]), int(m.body_jntadr[b]) + int(m.body_jntnum[b])):
            kind = _MJ_KIND[int(m.jnt_type[j])]
            d0 = int(m.jnt_dofadr[j])
            pos = np.zeros(3) if kind == "free" else np.array(m.jnt_pos[j], float)
            limited = m.jnt_limited[j] and kind != "free" and not no_limits
            jrange = (float(m.jnt_range[j][0]), float(m.jnt_range[j][1])) if limited else None
            joints.append(RawJoint(
                kind, _name(mujoco, m, OBJ.mjOBJ_JOINT, j), pos, np.array(m.jnt_axis[j], float),
                0.0 if no_damper else float(m.dof_damping[d0]) + act_damping[j],
                float(m.dof_armature[d0]) + act_armature[j], jwhere(j), jrange,
                0.0 if no_friction else float(m.dof_frictionloss[d0]),
                0.0 if no_spring else float(m.jnt_stiffness[j]),
                float(m.qpos_spring[int(m.jnt_qposadr[j])]) if kind in ("hinge", "slide") else 0.0,
                float(m.qpos0[int(m.jnt_qposadr[j])]) if kind in ("hinge", "slide") else 0.0,
                tuple(float(x) for x in m.jnt_actfrcrange[j]) if m.jnt_actfrclimited[j] else None))
        Ri = quat_to_rot(m.body_iquat[b])
        mass = float(m.body_mass[b])
        # MuJoCo copies the body pos into ipos when a body has no mass at all: meaningless
        com = np.array(m.body_ipos[b], float) if mass > 0 else np.zeros(3)
        bodies.append(RawBody(
            bname, int(m.body_parentid[b]) - 1, np.array(m.body_pos[b], float), quat_to_rot(m.body_quat[b]),
            joints, mass, com, Ri @ np.diag(np.asarray(m.body_inertia[b], float)) @ Ri.T, [], where))
    for s in range(m.nsite):
        b = int(m.site_bodyid[s])
        if b > 0:
            bodies[b - 1].sites.append(RawSite(
                _name(mujoco, m, OBJ.mjOBJ_SITE, s), s, np.array(m.site_pos[s], float), quat_to_rot(m.site_quat[s])))
    world_geoms = []
    for g in range(m.ngeom):
        gt = _GEOM_TYPES.get(int(m.geom_type[g]), str(int(m.geom_type[g])))
        mesh = _name(mujoco, m, OBJ.mjOBJ_MESH, int(m.geom_dataid[g])) if gt == "mesh" else None
        raw = RawGeom(_name(mujoco, m, OBJ.mjOBJ_GEOM, g), gt, np.array(m.geom_size[g], float),
                      np.array(m.geom_pos[g], float), quat_to_rot(m.geom_quat[g]), mesh)
        b = int(m.geom_bodyid[g])
        (bodies[b - 1].geoms if b > 0 else world_geoms).append(raw)
    tendons, springs = [], []
    for k in range(m.ntendon):
        tname = _name(mujoco, m, OBJ.mjOBJ_TENDON, k)
        where = f"tendon {tname!r} (id {k})"
        wraps = range(int(m.tendon_adr[k]), int(m.tendon_adr[k]) + int(m.tendon_num[k]))
        fixed = all(int(m.wrap_type[i]) == 1 for i in wraps)  # mjWRAP_JOINT: a fixed tendon
        spring = bool(m.tendon_stiffness[k] or m.tendon_damping[k])
        if (m.tendon_frictionloss[k] and not no_friction) or (m.tendon_limited[k] and not no_limits) or (
                spring and not fixed):
            raise ModelError(f"MjModel {where}: tendons with friction loss or limits, and springs or dampers on spatial "
                             "tendons, are not supported")
        for attr, what in (("tendon_armature", "armature"), ("tendon_springyield", "a spring yield (springyield)"),
                           ("tendon_stiffnesspoly", "polynomial stiffness"), ("tendon_dampingpoly", "polynomial damping")):
            if hasattr(m, attr) and np.any(getattr(m, attr)[k] != 0):
                raise ModelError(f"MjModel {where}: tendon {what} is not supported")
        if spring and m.tendon_lengthspring[k][0] != m.tendon_lengthspring[k][1]:
            raise ModelError(f"MjModel {where}: a tendon spring's deadband is not supported")
        if fixed:
            tendons.append(Tendon(tname, "fixed", tuple(
                (_name(mujoco, m, OBJ.mjOBJ_JOINT, int(m.wrap_objid[i])), float(m.wrap_prm[i])) for i in wraps)))
            if spring:
                springs.append((tname, tendons[-1].joints, float(m.tendon_stiffness[k]), float(m.tendon_damping[k]),
                                float(m.tendon_lengthspring[k][0])))
        else:
            tendons.append(Tendon(_name(mujoco, m, OBJ.mjOBJ_TENDON, k), "spatial", (), tuple(
                _name(mujoco, m, OBJ.mjOBJ_SITE if int(m.wrap_type[i]) == 3 else OBJ.mjOBJ_GEOM, int(m.wrap_objid[i]))
                or "pulley" for i in wraps)))
    actuators = []
    no_clamp = bool(m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL)
    for a in range(m.nu):
        trn = _TRN.get(int(m.actuator_trntype[a]), str(int(m.actuator_trntype[a])))
        tid = int(m.actuator_trnid[a][0])
        target = _name(mujoco, m, trn_obj[trn], tid) if trn in trn_obj else None
        actuators.append(Actuator(
            _name(mujoco, m, OBJ.mjOBJ_ACTUATOR, a), "general", trn, target, tuple(float(x) for x in m.actuator_gear[a]),
            tuple(float(x) for x in m.actuator_ctrlrange[a]) if m.actuator_ctrllimited[a] and not no_clamp else None,
            tuple(float(x) for x in m.actuator_forcerange[a]) if m.actuator_forcelimited[a] else None,
            tuple(float(x) for x in m.actuator_gainprm[a][:3]), tuple(float(x) for x in m.actuator_biasprm[a][:3]),
            _GAIN.get(int(m.actuator_gaintype[a]), "user"), _BIAS.get(int(m.actuator_biastype[a]), "user"),
            _DYN.get(int(m.actuator_dyntype[a]), "user"),
            _name(mujoco, m, OBJ.mjOBJ_SITE, int(m.actuator_trnid[a][1]))
            if trn == "site" and int(m.actuator_trnid[a][1]) >= 0 else None))
    gravity = np.zeros(3) if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY else np.array(m.opt.gravity, float)
    refs = {_name(mujoco, m, OBJ.mjOBJ_JOINT, j): float(m.qpos0[int(m.jnt_qposadr[j])]) for j in range(m.njnt)}
    mimics = []
    eq_kind = {0: "connect", 1: "weld", 2: "joint", 3: "tendon", 4: "flex"}  # mjtEq
    for k in range(m.neq if not no_equality else 0):  # <flag equality/constraint="disable"/>: none
        if not m.eq_active0[k]:
            continue
        kind = eq_kind.get(int(m.eq_type[k]), str(int(m.eq_type[k])))
        o1, o2 = int(m.eq_obj1id[k]), int(m.eq_obj2id[k])
        jn = lambda j: _name(mujoco, m, OBJ.mjOBJ_JOINT, j) if j >= 0 else None  # noqa: E731
        mimics.append(equality_coupling(
            f"MjModel equality {_name(mujoco, m, OBJ.mjOBJ_EQUALITY, k)!r} (id {k})", kind, np.asarray(m.eq_data[k][:5]),
            refs, joints=(jn(o1), jn(o2)) if kind == "joint" else (None, None),
            tendon=tendons[o1] if kind == "tendon" else None, two_tendons=kind == "tendon" and o2 >= 0))
    model = assemble(bodies, gravity, dtype, world_geoms=world_geoms, actuators=actuators, what="MjModel",
                     friction_width=friction_width, tendons=tendons, mimics=mimics, tendon_springs=springs,
                     fluid=(float(m.opt.density), float(m.opt.viscosity)) if m.opt.density or m.opt.viscosity else None)
    warn_unsimulated(model, "MjModel", stacklevel=3)
    return model


def _convert_free_velocities(model: Model, q, v, to_mj: bool):
    t = model.topology
    q, v = jnp.asarray(q), jnp.asarray(v)
    parts = []
    for i, jtype in enumerate(t.joint_types):
        vi = v[t.v_slice(i)]
        if jtype is JointType.FREE:
            R = sp.quat_to_rot(q[t.q_slice(i)][3:7])
            lin = R @ vi[:3] if to_mj else R.T @ vi[:3]
            vi = jnp.concatenate([lin, vi[3:]])
        parts.append(vi)
    return jnp.concatenate(parts) if parts else v


@full_precision
def to_mujoco(model: Model, q, v):
    """``(qpos, qvel)`` of MuJoCo for a diffsim state ``(q, v)`` of an MJCF-loaded model.

    ``qpos = q``; ``qvel = v`` except that each free joint's linear velocity is rotated from
    the body frame to the world frame (``R(q) v_lin``). Pure ``jax.numpy``: works under
    ``jit``/``vmap``/``grad``. Only the topology (joint types) is used, so the result is
    MuJoCo's state only for models whose free joints are children of the world with an
    identity tree placement — true for every model from :func:`load_mjcf`/:func:`from_mjmodel`.
    """
    return jnp.asarray(q), _convert_free_velocities(model, q, v, to_mj=True)


@full_precision
def from_mujoco(model: Model, qpos, qvel):
    """``(q, v)`` of diffsim for MuJoCo's ``(qpos, qvel)``: the inverse of :func:`to_mujoco`
    (free-joint linear velocities rotated from the world frame to the body frame). Pure
    ``jax.numpy``; uses only the topology (see :func:`to_mujoco`)."""
    return jnp.asarray(qpos), _convert_free_velocities(model, qpos, qvel, to_mj=False)
