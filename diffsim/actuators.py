"""Actuators: controls ``u`` [nu] to generalised forces ``τ`` [nv] (``ds.actuation(model)``).

MuJoCo's actuator model without activation dynamics (MuJoCo documentation, "Actuation model"),
on joint, fixed-tendon and site transmissions:

* length and velocity of actuator ``i`` on joints or a fixed tendon: ``l_i = Σ_j g_i c_ij q_j``,
  ``l̇_i = Σ_j g_i c_ij v_j`` (``g_i`` the first entry of its ``gear``; ``c_ij`` = 1 for its
  joint, the tendon's coefficients for a fixed tendon), so the moment arm is ``∂l_i/∂q_j = g_i c_ij``;
* on a site ``s`` without ``refsite``: the actuator pushes along its 6-vector ``gear`` expressed
  in the site frame, ``l_i = 0`` and ``l̇_i = g_i · [v_s; ω_s]`` with the site's linear and angular
  velocity in its own frame, so its moment arm is the configuration-dependent row
  ``∂l̇_i/∂v = g_iᵀ J_s(q)`` (the site Jacobian in the site frame; MuJoCo's ``mj_transmission``);
* with a reference site ``r`` (Cartesian end-effector control): the length is the site's pose
  relative to ``r`` in ``r``'s frame, ``l_i = g_i · [R_rᵀ (p_s − p_r); log(R_rᵀ R_s)]`` (the
  rotation vector of the shortest rotation), and the moment arm MuJoCo's: the translation's
  exact derivative ``R_rᵀ (ṗ_s − ṗ_r − ω_r × (p_s − p_r))`` (the reference body's velocity taken
  at the site), the rotation's ``R_rᵀ (ω_s − ω_r)`` — the rotation vector's rate only to first
  order in its angle (MuJoCo's choice, kept so that the forces are MuJoCo's);
* control clamped to ``ctrlrange`` when limited; force
  ``f_i = (a_0 + a_1 l_i + a_2 l̇_i) u_i + b_0 + b_1 l_i + b_2 l̇_i`` (``gainprm`` a, ``biasprm`` b;
  a fixed gain keeps ``a_0`` only, bias ``none`` is zero), clamped to ``forcerange`` when limited;
* generalised force ``τ_j = Σ_i (∂l̇_i/∂v_j) f_i``, clamped on a joint with an actuator force
  range (MuJoCo's joint ``actuatorfrcrange``; MuJoCo's URDF import puts effort limits there).

``motor`` is ``a = (1, 0, 0)``, ``b = 0``; ``position`` ``a = (k_p, 0, 0)``, ``b = (0, −k_p, −k_v)``;
``velocity`` ``a = (k_v, 0, 0)``, ``b = (0, 0, −k_v)``; a URDF ``effort`` limit is a motor whose force
is clamped to ``±effort``. An :class:`~diffsim.model.model.Actuator` built by hand carries these
gains too: a ``position`` / ``velocity`` one without them, or with other ones, is refused (it was
applied as a motor; other gains are kind ``general``), and so is an empty ``gear``. Everything else (activation dynamics, ball/free-joint, slider-crank,
body and spatial-tendon transmissions, user gains) is refused by :func:`actuation`, naming the
actuator.

The arrays of :class:`Actuation` are differentiable leaves (gains, biases, gears, ranges).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import spatial as sp
from .dynamics.kinematics import body_velocities, forward_kinematics, site_poses
from .model.joints import JointType
from .model.model import SERVO_GAINS, Actuator, Model, actuator_data_problem

#: Actuator kinds applied (MJCF element names, ``effort`` for a URDF effort limit); the readers
#: store each kind's gain and bias (module docstring).
KINDS = ("motor", "position", "velocity", "general", "effort")


class ActuationError(ValueError):
    """An actuator diffsim cannot apply (the message names it)."""


class Actuation(eqx.Module):
    """``u`` [nu] → ``τ`` [nv] for a model's actuators (module docstring): ``actuation(u, q, v)``
    (``actuation(u, q, v, model)`` when an actuator drives a site).

    Fields: ``moment`` [nu, nv] (``∂l/∂q`` in velocity coordinates of the joint and tendon
    transmissions; zero rows for site ones), ``moment_q`` [nu, nq] (the same on the configuration
    rows of the actuated 1-DoF joints), ``site_gear`` [nu, 6] (the gear of site transmissions, in
    the site frame; zero rows elsewhere), ``gain`` [nu, 3], ``bias`` [nu, 3], ``ctrl_lo/hi`` and
    ``force_lo/hi`` [nu], ``tau_lo/hi`` [nv] (±inf when unlimited), ``names``, ``sites`` and
    ``refsites`` (static: the site and reference-site index of each actuator, -1 where none)."""

    moment: jax.Array
    moment_q: jax.Array
    site_gear: jax.Array
    gain: jax.Array
    bias: jax.Array
    ctrl_lo: jax.Array
    ctrl_hi: jax.Array
    force_lo: jax.Array
    force_hi: jax.Array
    tau_lo: jax.Array
    tau_hi: jax.Array
    names: tuple = eqx.field(static=True)
    sites: tuple = eqx.field(static=True, default=())
    refsites: tuple = eqx.field(static=True, default=())

    @property
    def nu(self) -> int:
        return len(self.names)

    def _on_sites(self, model):
        on_site = [i for i, s in enumerate(self.sites) if s >= 0]
        if on_site and model is None:
            raise ValueError(f"actuators {[self.names[i] for i in on_site]} drive sites: their moment arms depend on "
                             "the configuration, call actuation(u, q, v, model)")
        return on_site

    def _site_terms(self, q, model: Model, on_site):
        """Site transmissions' moment rows ``∂l̇/∂v`` [k, nv] and lengths [k] (module docstring)."""
        idx = np.asarray(on_site)
        site = np.asarray([self.sites[i] for i in on_site])
        ref = np.asarray([self.refsites[i] if self.refsites else -1 for i in on_site])
        has_ref = ref >= 0
        frame = np.where(has_ref, ref, site)  # the frame the gear is expressed in
        body = np.asarray(model.topology.site_body)
        kin = forward_kinematics(model, q)  # one kinematics pass for the site poses and body rotations
        R_site, p_site = site_poses(model, q, kin)
        R_body = kin.R[body]
        g = self.site_gear[idx]
        R_f = R_site[frame]

        def rates(v):  # g · R_fᵀ [v_s − v_ref; ω_s − ω_ref] (world velocities; no reference: zero)
            V = body_velocities(model, q, v)[body]
            w_b, v_b = V[:, :3], V[:, 3:] + jnp.cross(V[:, :3], model.site_pos)
            vw, ww = jnp.einsum("sij,sj->si", R_body, v_b), jnp.einsum("sij,sj->si", R_body, w_b)
            # the reference body's velocity at the site's position
            v_ref = vw[frame] + jnp.cross(ww[frame], p_site[site] - p_site[frame])
            dv = vw[site] - jnp.where(has_ref[:, None], v_ref, 0.0)
            dw = ww[site] - jnp.where(has_ref[:, None], ww[frame], 0.0)
            return jnp.sum(g[:, :3] * jnp.einsum("kji,kj->ki", R_f, dv) + g[:, 3:] * jnp.einsum("kji,kj->ki", R_f, dw),
                           -1)

        rows = jax.jacfwd(rates)(jnp.zeros(model.nv, self.moment.dtype))  # exact: linear in v
        dp = jnp.einsum("kji,kj->ki", R_f, p_site[site] - p_site[frame])
        rot = jax.vmap(lambda Rf, Rs: sp.quat_log(sp.rot_to_quat(Rf.T @ Rs)))(R_f, R_site[site])
        lengths = jnp.where(has_ref, jnp.sum(g[:, :3] * dp + g[:, 3:] * rot, -1), 0.0)
        return idx, rows, lengths

    def _transmission(self, q, model: Model | None):
        """``(l [nu], ∂l̇/∂v [nu, nv])`` at ``q``: the joint and tendon rows plus the site ones."""
        lq, M = self.moment_q @ q, self.moment
        on_site = self._on_sites(model)
        if on_site:
            idx, rows, lengths = self._site_terms(q, model, on_site)
            lq, M = lq.at[idx].add(lengths), M.at[idx].add(rows)
        return lq, M

    def moments(self, q, model: Model | None = None):
        """Moment arms ``∂l̇/∂v`` [nu, nv] at ``q`` (site transmissions need the ``model``)."""
        return self._transmission(q, model)[1]

    def length(self, q, v, model: Model | None = None):
        """Actuator lengths ``l`` and velocities ``l̇`` [nu] (a site transmission without
        reference site has length 0)."""
        lq, M = self._transmission(q, model)
        return lq, M @ v

    def force(self, u, q, v, model: Model | None = None):
        """Actuator forces ``f`` [nu] (N or N m along the transmission), clamped as the ranges say."""
        return self._force(u, *self.length(q, v, model))

    def _force(self, u, lq, lv):
        u = jnp.asarray(u)
        if u.shape != (self.nu,):
            raise ValueError(f"ctrl must have shape ({self.nu},) (actuators {list(self.names)}), got {u.shape}")
        u = jnp.clip(u, self.ctrl_lo, self.ctrl_hi)
        f = (self.gain[:, 0] + self.gain[:, 1] * lq + self.gain[:, 2] * lv) * u
        f = f + self.bias[:, 0] + self.bias[:, 1] * lq + self.bias[:, 2] * lv
        return jnp.clip(f, self.force_lo, self.force_hi)

    def __call__(self, u, q, v, model: Model | None = None):
        """Generalised force ``τ = (∂l̇/∂v)ᵀ f(u, q, v)`` [nv], clamped per joint (``tau_lo/hi``)."""
        lq, M = self._transmission(q, model)
        f = self._force(u, lq, M @ v)
        return jnp.clip(M.T @ f, self.tau_lo, self.tau_hi)


def _refuse(a: Actuator, why: str):
    raise ActuationError(f"actuator {a.name or '(unnamed)'!r} ({a.kind} on {a.trntype} {a.target!r}): {why}")


#: ``(gainprm, biasprm)`` of a servo kind (MJCF ``<position kp kv>``, ``<velocity kv>``) for its
#: gain ``a_0`` and velocity bias ``b_2``.
_SERVO = {"position": lambda a0, b2: ((a0, 0.0, 0.0), (0.0, -a0, b2)),
          "velocity": lambda a0, b2: ((a0, 0.0, 0.0), (0.0, 0.0, -a0))}


def _check(a: Actuator):
    """Refuse what :func:`actuation` does not apply: an unknown kind, activation dynamics, data
    short of saying what the actuator does (:func:`~diffsim.model.model.actuator_data_problem`:
    an empty gear, a servo kind without gains), and ``position`` / ``velocity`` gains that are not
    that kind's (``position``: ``a = (k_p, 0, 0)``, ``b = (0, −k_p, −k_v)``; ``velocity``:
    ``a = (k_v, 0, 0)``, ``b = (0, 0, −k_v)``; a fixed gain and an affine bias)."""
    if a.kind not in KINDS:
        _refuse(a, f"unknown kind (use one of {KINDS})")
    if a.dyntype != "none":
        _refuse(a, f"activation dynamics or actuator-side terms ({a.dyntype}) are not modelled; only dyntype none")
    problem = actuator_data_problem(a)
    if problem is not None:
        _refuse(a, problem)
    if a.kind in _SERVO:
        g = tuple(float(x) for x in (tuple(a.gainprm) + (0.0, 0.0, 0.0))[:3])
        b = tuple(float(x) for x in (tuple(a.biasprm) + (0.0, 0.0, 0.0))[:3])
        if a.gaintype != "fixed" or a.biastype != "affine" or (g, b) != _SERVO[a.kind](g[0], b[2]):
            _refuse(a, f"gainprm {g} and biasprm {b} (gaintype {a.gaintype!r}, biastype {a.biastype!r}) are not a "
                       f"{a.kind} actuator's: {SERVO_GAINS[a.kind]}, a fixed gain and an affine bias (for other "
                       "gains use kind 'general')")


def _rows(model: Model, a: Actuator, gear: float):
    """``(moment row [nv], moment row in q [nq])`` of one actuator's transmission."""
    t = model.topology
    mv, mq = np.zeros(model.nv), np.zeros(model.nq)
    if a.trntype == "site":
        return mv, mq
    if a.trntype in ("joint", "jointinparent"):
        joints = ((a.target, 1.0),)
    elif a.trntype == "tendon":
        tendon = next((td for td in model.tendons if td.name == a.target), None)
        if tendon is None or tendon.kind != "fixed":
            _refuse(a, "only fixed tendons (length Σ coef·q) are applied; a spatial tendon's length needs its "
                       "path geometry")
        joints = tendon.joints
    else:
        _refuse(a, f"{a.trntype} transmissions are not applied yet (joint, fixed-tendon and site transmissions are)")
    for name, coef in joints:
        try:
            i = t.joint_index(name)
        except KeyError:
            _refuse(a, f"its joint {name!r} is not in the model (merged into a fixed joint?)")
        if t.joint_types[i] not in (JointType.REVOLUTE, JointType.PRISMATIC):
            _refuse(a, f"joint {name!r} is a {t.joint_types[i].name.lower()} joint; only hinge and slide "
                       "joints are actuated (a ball or free joint's gear is a 6-vector)")
        mv[t.v_slice(i).start] += gear * coef
        mq[t.q_slice(i).start] += gear * coef
    return mv, mq


def actuation(model: Model, dtype=None) -> Actuation:
    """The :class:`Actuation` of ``model.actuators`` (read from MJCF ``<actuator>``, an MjModel,
    or URDF effort limits), in their order. Raises :class:`ActuationError` for an actuator it
    cannot apply and ``ValueError`` when the model has none."""
    acts = tuple(model.actuators)
    if not acts:
        raise ValueError("this model has no actuators (MJCF <actuator>, URDF <limit effort>, or "
                         "ModelBuilder.add_actuator); apply generalised forces with tau= instead")
    rows, rows_q, gains, biases, clo, chi, flo, fhi, sites, refs, site_gears = [], [], [], [], [], [], [], [], [], [], []
    for a in acts:
        _check(a)
        gear = tuple(float(x) for x in a.gear) + (0.0,) * (6 - len(a.gear))
        if a.trntype == "site":
            try:
                sites.append(model.topology.site_index(a.target))
                refs.append(-1 if a.refsite is None else model.topology.site_index(a.refsite))
            except KeyError as e:
                _refuse(a, str(e.args[0]))
            site_gears.append(gear)
        else:
            sites.append(-1)
            refs.append(-1)
            site_gears.append((0.0,) * 6)
        if a.trntype != "site" and any(gear[1:]):
            _refuse(a, f"gear {gear} acts on more than one axis; a hinge or slide transmission takes gear[0] only")
        mv, mq = _rows(model, a, gear[0])
        rows.append(mv)
        rows_q.append(mq)
        g = (tuple(a.gainprm) + (0.0, 0.0, 0.0))[:3] if a.gainprm else (1.0, 0.0, 0.0)
        b = (tuple(a.biasprm) + (0.0, 0.0, 0.0))[:3] if a.biasprm else (0.0, 0.0, 0.0)
        gaintype, biastype = a.gaintype, a.biastype
        if gaintype == "fixed":
            g = (g[0], 0.0, 0.0)
        elif gaintype != "affine":
            _refuse(a, f"gaintype {gaintype!r} is not supported (fixed, affine)")
        if biastype == "none":
            b = (0.0, 0.0, 0.0)
        elif biastype != "affine":
            _refuse(a, f"biastype {biastype!r} is not supported (none, affine)")
        gains.append(g)
        biases.append(b)
        lo, hi = a.ctrlrange if a.ctrlrange is not None else (-np.inf, np.inf)
        if not lo <= hi:  # a reversed range clamped every control to one end (MuJoCo refuses it too)
            _refuse(a, f"ctrlrange ({lo}, {hi}) has lower > upper")
        clo.append(lo)
        chi.append(hi)
        lo, hi = a.forcerange if a.forcerange is not None else (-np.inf, np.inf)
        if not lo <= hi:
            _refuse(a, f"forcerange ({lo}, {hi}) has lower > upper")
        flo.append(lo)
        fhi.append(hi)
    tlo, thi = np.full(model.nv, -np.inf), np.full(model.nv, np.inf)
    for r in model.actuator_force_ranges:
        i = model.topology.joint_index(r.joint)
        tlo[model.topology.v_slice(i)], thi[model.topology.v_slice(i)] = r.lower, r.upper
    dt = model.dtype if dtype is None else dtype

    def f(x):
        return jnp.asarray(np.asarray(x, float), dt)

    names = tuple(a.name or f"actuator{k}" for k, a in enumerate(acts))
    return Actuation(f(rows), f(rows_q), f(site_gears), f(gains), f(biases), f(clo), f(chi), f(flo), f(fhi), f(tlo),
                     f(thi), names, tuple(sites), tuple(refs))
