"""Joint limits enforced as compliant contact in joint space.

A limited 1-DoF joint (revolute or prismatic, coordinate ``q_j``, range ``[q_lo, q_hi]``) gives
two one-sided "pairs" with penetrations

    Δ_lo = q_lo − q_j,    Δ_hi = q_j − q_hi,    Δ̇ = ∓ v_j,

and the generalised force ``Q_j = ∓ F_N(Δ, Δ̇, Δ̇⁽⁻⁾)`` (pushing the joint back into its range).
``F_N`` is any normal-force law of :mod:`.laws` with constants in joint units (N m/radⁿ or
N/mⁿ), and the pairs go through the same machinery as spatial contact: onsets and separations
located by events (or the smooth memory), the impact memory, and the work of the limit forces in
the work–energy bookkeeping (seed 001 eq 31; its ``normal`` work).

Default law (:func:`joint_limits`): the linear spring–damper ``F = K Δ + c Δ̇`` (never pulling)
with ``K = I_j/τ²`` and ``c = 2 I_j/τ`` — a critically damped limit whose time constant ``τ``
is MuJoCo's default ``solref`` time constant (0.02 s) — where ``I_j = M_jj(q0)`` is the joint's
own inertia (armature included) at the initial configuration. This is the spring–damper that
MuJoCo's soft limit constraint reduces to at full impedance (``d = d_max``): its reference
acceleration ``−b v − k r`` with ``b = 2/(d_max τ)``, ``k = d/(d_max² τ² ζ²)`` mixed as
``a = (1 − d) a₀ + d a_ref``. The two differ by the ``(1 − d) a₀`` part (MuJoCo lets 5 % of the
free acceleration through, so the gravity load on a resting limit is carried by ``d k`` there and
by ``K`` here) and by MuJoCo's impedance ramp ``d(r)`` over the first ``solimp`` width.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics.dispatch import mass_matrix
from ..model.model import Model, neutral_configuration
from ..model.params import ParamRef, conform
from .geometry import ContactError
from .laws import AbstractNormalLaw, LinearSpringDamper
from .model import Contact, Events, Smooth

#: MuJoCo's default ``solref`` time constant [s]: the default limit's time constant.
TIMECONST = 0.02


class JointLimitGeometry(eqx.Module):
    """Joint-space "pairs" of the enforced limits (module docstring): per pair the joint's name,
    the side (``'lower'`` / ``'upper'``), its coordinate index in ``q`` and ``v``, and the limit
    position ``bound`` [rad or m] (a differentiable leaf)."""

    joints: tuple = eqx.field(static=True)
    sides: tuple = eqx.field(static=True)
    iq: tuple = eqx.field(static=True)
    iv: tuple = eqx.field(static=True)
    bound: jax.Array  # [nc]

    @property
    def n_pairs(self) -> int:
        return len(self.joints)

    @property
    def pair_names(self) -> tuple:
        return tuple(f"{j}/{s}" for j, s in zip(self.joints, self.sides))

    def _sign(self, dtype):
        """+1 for an upper limit (Δ = q − q_hi), −1 for a lower one (Δ = q_lo − q)."""
        return jnp.asarray([1.0 if s == "upper" else -1.0 for s in self.sides], dtype)

    def penetration(self, model: Model, q):
        """``Δ`` [nc] (module docstring)."""
        return self._sign(q.dtype) * (q[np.asarray(self.iq, np.int32)] - self.bound)

    def surface_velocity(self, dtype):
        """No moving surfaces in joint space: zeros [nc, 3]."""
        return jnp.zeros((self.n_pairs, 3), dtype)

    def evaluate(self, model: Model, q, v):
        """The interface of :meth:`ContactGeometry.evaluate` in joint space: the "normal" is the
        first axis, so that ``F = F_N n`` carries the scalar limit force and ``apply`` maps it to
        ``Q_j = ∓ F_N``; no tangential motion (a limit has no friction)."""
        s = self._sign(q.dtype)
        iv = np.asarray(self.iv, np.int32)
        delta = self.penetration(model, q)
        ddot = s * v[iv]
        nc = self.n_pairs
        n = jnp.zeros((nc, 3), q.dtype).at[:, 0].set(1.0)
        zeros = jnp.zeros((nc, 3), q.dtype)

        def apply(F):
            return jnp.zeros(model.nv, F.dtype).at[iv].add(-s * F[:, 0])

        return delta, ddot, n, zeros, zeros, apply

    def param_refs(self) -> dict[str, ParamRef]:
        """``<joint>.lower`` / ``<joint>.upper``: the limit positions [rad or m]."""
        return {f"{j}.{side}": _bound_ref(f"{j}.{side}", k) for k, (j, side) in enumerate(zip(self.joints, self.sides))}


def _bound_ref(name: str, k: int) -> ParamRef:
    def set_(g, value):
        return eqx.tree_at(lambda gg: gg.bound, g, g.bound.at[k].set(conform(name, value, g.bound[k])))

    return ParamRef(lambda g: g.bound[k], set_)


def limited_joints(model: Model, joints=None) -> list:
    """The model's joint ranges (``Model.joint_limits``) to enforce, with their ``q`` and ``v``
    indices: those on 1-DoF joints the file asks to enforce (``JointLimit.enforced``; ball joints'
    cone limits stay data), every 1-DoF range with ``joints='all'``, or, with ``joints`` (names),
    exactly those (1-DoF joints only)."""
    t = model.topology
    by_name = {lim.joint: lim for lim in model.joint_limits}
    if joints is None or joints == "all":
        chosen = [lim for lim in model.joint_limits if lim.enforced or joints == "all"]
    else:
        unknown = [j for j in joints if j not in by_name]
        if unknown:
            raise ContactError(f"no joint range for {unknown} in this model (model.joint_limits has "
                               f"{sorted(by_name) or 'none'})")
        chosen = [by_name[j] for j in joints]
    out = []
    for lim in chosen:
        i = t.joint_names.index(lim.joint)
        if t.nq_joint[i] != 1 or t.nv_joint[i] != 1:
            if joints is None or joints == "all":  # a ball joint's cone limit: kept as data
                continue
            raise ContactError(f"joint {lim.joint!r}: only ranges of 1-DoF (revolute / prismatic) joints are enforced")
        out.append((lim, t.q_slice(i).start, t.v_slice(i).start))
    return out


def joint_limits(model: Model, q0=None, *, joints=None, law: AbstractNormalLaw | None = None,
                 timeconst: float = TIMECONST, formulation: Events | Smooth | None = None,
                 v_impact_min: float = 1e-4) -> Contact | None:
    """Enforced joint limits as a compliant :class:`~.model.Contact` in joint space (module
    docstring); ``None`` when the model has no range to enforce.

    Args:
        model: a model with joint ranges (``model.joint_limits``, read from URDF ``<limit>`` or
            MJCF ``range``/``limited``, or added with ``ModelBuilder.add_joint_limit``).
        q0: configuration at which the joints' inertias set the default law (default neutral).
        joints: names of the limited joints to enforce (default: those the file asks for;
            ``'all'``: every range of a 1-DoF joint).
        law: a normal-force law in joint units (:func:`diffsim.contact.normal_law`); its
            constants may be arrays with one entry per pair (lower, upper per joint in order).
            Default: the critically damped spring–damper of time constant ``timeconst``.
        timeconst: ``τ`` [s] of the default law.
        formulation: :class:`~.model.Events` (default) or :class:`~.model.Smooth`.
        v_impact_min: floor of the impact memory [rad/s or m/s].
    """
    rows = limited_joints(model, joints)
    if not rows:
        return None
    if not float(timeconst) > 0:
        raise ContactError(f"timeconst must be > 0, got {timeconst}")
    dtype = model.dtype
    names, sides, iq, iv, bound = [], [], [], [], []
    for lim, kq, kv in rows:
        for side, value in (("lower", lim.lower), ("upper", lim.upper)):
            names.append(lim.joint)
            sides.append(side)
            iq.append(kq)
            iv.append(kv)
            bound.append(value)
    geom = JointLimitGeometry(tuple(names), tuple(sides), tuple(iq), tuple(iv), jnp.asarray(bound, dtype))
    if law is None:
        q = neutral_configuration(model) if q0 is None else jnp.asarray(q0, dtype)
        inertia = jnp.diagonal(mass_matrix(model, q))[np.asarray(iv, np.int32)]
        law = LinearSpringDamper(K=inertia / timeconst**2, c=2.0 * inertia / timeconst)
    elif not isinstance(law, AbstractNormalLaw):
        raise ContactError(f"law must be a normal-force law (diffsim.contact.normal_law), got {type(law).__name__}")
    formulation = Events() if formulation is None else formulation
    if not isinstance(formulation, (Events, Smooth)):
        raise ContactError(f"formulation must be diffsim.contact.Events or Smooth, got {type(formulation).__name__}")
    if not float(v_impact_min) > 0:
        raise ContactError("v_impact_min must be > 0")
    return Contact(geometry=geom, normal=law, friction=None, formulation=formulation,
                   v_impact_min=jnp.asarray(v_impact_min, dtype))
