"""Applied loads: joint torques / base wrenches and point forces on bodies.

A *signal* is any of: an array (constant), a callable ``f(t, q, v) -> array``, or a
:class:`TimeSeries` (linear interpolation of samples). Loads are ``eqx.Module``s, so their
arrays are differentiable leaves like the model's.
"""

from __future__ import annotations

from typing import Any, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import spatial as sp
from ._util import is_concrete
from .dynamics.kinematics import body_velocities, forward_kinematics
from .actuators import Actuation, actuation
from .model.model import Model


class TimeSeries(eqx.Module):
    """Samples ``values[k]`` at times ``ts[k]`` (strictly increasing), linearly interpolated,
    held constant outside ``[ts[0], ts[-1]]``."""

    ts: jax.Array
    values: jax.Array

    def __init__(self, ts, values):
        self.ts = jnp.asarray(ts)
        self.values = jnp.asarray(values)
        if self.ts.ndim != 1 or self.values.shape[:1] != self.ts.shape:
            raise ValueError(
                f"TimeSeries needs ts [T] and values [T, ...]; got {self.ts.shape} and {self.values.shape}"
            )
        if is_concrete(self.ts) and not np.all(np.diff(np.asarray(self.ts)) > 0):  # interp would mix samples up
            raise ValueError("TimeSeries times ts must be strictly increasing")

    def __call__(self, t):
        flat = self.values.reshape(self.ts.shape[0], -1)
        out = jax.vmap(lambda col: jnp.interp(t, self.ts, col), in_axes=1)(flat)
        return out.reshape(self.values.shape[1:])


def evaluate_signal(signal, t, q, v):
    """Value of a signal at ``(t, q, v)``."""
    if isinstance(signal, TimeSeries):
        return signal(t)
    if callable(signal):
        return jnp.asarray(signal(t, q, v))
    return jnp.asarray(signal)


class PointForce(eqx.Module):
    """A force ``F`` [N] applied at a point of a body.

    ``frame='world'``: ``F`` has world components; ``frame='local'``: ``F`` has components in
    the body frame — or in the site frame when the point is a site — and turns with it (a
    follower force, seed 000's F in the link-2 frame). The point is ``point`` [m] in body
    coordinates, or the site's position when ``site`` is set (read from the model, so site
    placements stay differentiable).
    """

    force: Any
    point: jax.Array
    body: int = eqx.field(static=True)
    site: int = eqx.field(static=True, default=-1)
    frame: str = eqx.field(static=True, default="world")

    def __check_init__(self):
        if self.frame not in ("world", "local"):
            raise ValueError(f"PointForce frame must be 'world' or 'local', got {self.frame!r}")

    def body_force(self, model: Model, t, q, v, R_body=None):
        """Force ``f_b`` and application point ``x_b`` in body coordinates. ``R_body`` (body ->
        world) is needed only for ``frame='world'``: a follower force needs no kinematics."""
        F = evaluate_signal(self.force, t, q, v)
        if F.shape != (3,):
            raise ValueError(f"point force must evaluate to shape (3,), got {F.shape}")
        if self.site >= 0:
            x_b = model.site_pos[self.site]
            f_b = sp.mv(model.site_rot[self.site], F) if self.frame == "local" else None
        else:
            x_b = self.point
            f_b = F if self.frame == "local" else None
        if f_b is None:
            f_b = sp.mv(R_body.T, F)
        return f_b, x_b

    def resolve(self, model: Model, t, q, v, R_body, p_body):
        """World force ``F_w``, world application point ``x_w`` and the body-frame force and
        point (``f_b``, ``x_b``)."""
        f_b, x_b = self.body_force(model, t, q, v, R_body)
        return sp.mv(R_body, f_b), p_body + sp.mv(R_body, x_b), f_b, x_b


def point_force(model: Model, body: str, force, point=(0.0, 0.0, 0.0), frame: str = "world") -> PointForce:
    """A force on body ``body`` at ``point`` [3] (body coordinates)."""
    point = jnp.asarray(point, model.dtype)
    if point.shape != (3,):  # (0.1, 0.0) broadcast as (0.1, 0, 0) in the moment
        raise ValueError(f"point_force: point must have shape (3,) (body coordinates), got {point.shape}")
    return PointForce(force=force, point=point, body=model.topology.body_index(body), frame=frame)


def site_force(model: Model, site: str, force, frame: str = "local") -> PointForce:
    """A force at a site; ``frame='local'`` means site coordinates (a follower force)."""
    s = model.topology.site_index(site)
    return PointForce(
        force=force, point=jnp.zeros(3, model.dtype), body=model.topology.site_body[s], site=s, frame=frame
    )


class Loads(eqx.Module):
    """Everything applied to the model: generalised forces ``tau`` (a signal, [nv]: joint
    torques, and for a free joint the base wrench ``[F; M]`` in the base frame), point forces,
    and the controls ``ctrl`` (a signal, [nu]) of the model's actuators through ``actuation``
    (:func:`diffsim.actuation`; added to ``tau``)."""

    tau: Any = None
    forces: tuple = ()
    ctrl: Any = None
    actuation: Actuation | None = None

    def __init__(self, tau=None, forces: Sequence[PointForce] = (), ctrl=None, actuation: Actuation | None = None):
        self.tau = tau
        self.forces = tuple(forces)
        if ctrl is not None and actuation is None:
            raise ValueError("ctrl needs the model's actuation (diffsim.actuation(model)); System and rollout "
                             "build it from the model when given ctrl=")
        self.ctrl = ctrl
        self.actuation = actuation if ctrl is not None else None

    @property
    def active(self) -> bool:
        """Whether anything is applied (static)."""
        return self.tau is not None or bool(self.forces) or self.ctrl is not None

    def generalized(self, model: Model, t, q, v):
        """``tau`` plus the actuators' generalised force of ``ctrl`` [nv], in the model's dtype (a
        list or a NumPy-built signal is float64 under x64; a float32 model's state stays float32)."""
        tau = jnp.zeros(model.nv, model.dtype)
        if self.tau is not None:
            u = evaluate_signal(self.tau, t, q, v)
            if u.shape != (model.nv,):
                raise ValueError(f"tau must evaluate to shape ({model.nv},) (one entry per velocity), got {u.shape}")
            tau = tau + u.astype(model.dtype)
        if self.ctrl is not None:
            tau = tau + self.actuation(evaluate_signal(self.ctrl, t, q, v), q, v, model).astype(model.dtype)
        return tau

    def evaluate(self, model: Model, t, q, v):
        """``(tau [nv], f_ext [nb, 6])`` with ``f_ext`` in body coordinates at body origins."""
        tau = self.generalized(model, t, q, v)
        if not self.forces:
            return tau, None
        kin = forward_kinematics(model, q) if any(pf.frame == "world" for pf in self.forces) else None
        f_ext = jnp.zeros((model.nb, 6), model.dtype)
        for pf in self.forces:
            f_b, x_b = pf.body_force(model, t, q, v, None if kin is None else kin.R[pf.body])
            f_ext = f_ext.at[pf.body].add(jnp.concatenate([jnp.cross(x_b, f_b), f_b]).astype(model.dtype))
        return tau, f_ext

    def impulse_rate(self, model: Model, t, q, v):
        """``[Σ x × F; Σ F]`` in world coordinates: the rate of the angular (about the world
        origin) and linear impulse of the point forces — for momentum bookkeeping."""
        out = jnp.zeros(6, model.dtype)
        if not self.forces:
            return out
        kin = forward_kinematics(model, q)
        for pf in self.forces:
            F_w, x_w, _, _ = pf.resolve(model, t, q, v, kin.R[pf.body], kin.p[pf.body])
            out = out + jnp.concatenate([jnp.cross(x_w, F_w), F_w]).astype(model.dtype)
        return out


    def power(self, model: Model, t, q, v):
        """Mechanical power ``Σ F · ẋ`` of the point forces plus ``τ · v`` [W] (τ with the actuators')."""
        P = jnp.zeros((), model.dtype)
        if self.tau is not None or self.ctrl is not None:
            P = P + jnp.dot(self.generalized(model, t, q, v), v)
        if not self.forces:
            return P
        kin = forward_kinematics(model, q) if any(pf.frame == "world" for pf in self.forces) else None
        vel = body_velocities(model, q, v)
        for pf in self.forces:
            f_b, x_b = pf.body_force(model, t, q, v, None if kin is None else kin.R[pf.body])
            w, vb = vel[pf.body][:3], vel[pf.body][3:]
            P = P + jnp.dot(f_b, vb + jnp.cross(w, x_b))
        return P


def as_loads(tau=None, forces=(), loads: Loads | None = None, ctrl=None, model: Model | None = None) -> Loads:
    """``loads``, or the loads of ``tau``/``forces``/``ctrl`` (``ctrl`` through ``actuation(model)``)."""
    if loads is not None:
        if tau is not None or forces or ctrl is not None:
            raise ValueError("give either loads= or tau=/forces=/ctrl=, not both")
        return loads
    return Loads(tau=tau, forces=forces, ctrl=ctrl, actuation=None if ctrl is None else actuation(model))


