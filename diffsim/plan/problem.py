"""The discretised optimal-control problem every planner in :mod:`diffsim.plan` solves.

A :class:`Problem` is Crocoddyl's action-model split written once: a dynamics step
``x_{k+1} = F(x_k, u_k)`` and a cost, independent of the solver.

* State ``x = (q, v)`` on the configuration manifold (``nq ≠ nv`` with quaternions); deviations
  live in the tangent space, ``δx = (q ⊖ q̄, v − v̄)`` [2 nv] (:func:`diffsim.difference`,
  :func:`diffsim.integrate`), so free-floating bases plan like fixed ones.
* Controls ``u`` [nu]: the driven coordinates only; the generalised force is ``τ = B u`` with
  ``B`` [nv, nu] the selection of the actuated coordinates (an unactuated free base gets τ = 0).
  Or (``act``, planning ``ctrl``) the controls of the model's actuators, ``τ = act(u, q, v)``
  (:func:`diffsim.actuation`: gears, gains, biases, ranges; state-dependent for servos), the
  costs then taking ``u`` as their third argument.
* ``F``: one classical RK4 step of length ``dt`` with the torque held over the step (zero-order
  hold) — :func:`diffsim.simulation.rk4_step`, the step of :func:`diffsim.rollout`, quaternions
  projected back onto the manifold.
* Compliant contact (``contact``, optional): the generalised contact force ``Q(q, v)`` of a
  memoryless normal law (spring–damper, Hertz) and a stateless friction law is added to ``τ``
  at every RK4 stage — smooth in the state with smoothed laws, so the step's derivatives exist
  through contact; the fixed step must resolve the contact's time scale (``dt`` well below
  ``2π√(m/K)``), it does not locate impacts.
* Cost ``J = Σ_{k<N} dt · ℓ(q_k, v_k, τ_k) + ℓ_f(q_N, v_N)`` with ``N = horizon``
  (``quadrature="knot"``, the default), or with the running cost integrated over each step by the
  RK4 weights at the step's own stage states, ``dt Σ_i b_i ℓ(x_i, τ_k)`` (``quadrature="rk4"``:
  Crocoddyl's ``IntegratedActionModelRK``; the stage states come from the step that computes
  them anyway, and so do their Jacobians in DDP's local models).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..actuators import Actuation
from ..contact.model import Contact, ContactSet
from ..dynamics.configuration import difference, integrate, normalize
from ..dynamics.dispatch import AbstractDynamics, AnalyticTangents, Default
from ..loads import Loads
from ..model.model import Model
from ..simulation.rollout import RK4_WEIGHTS, rk4_step_stages
from . import costs


class Problem(eqx.Module):
    """A planning problem (module docstring). Build it with :func:`make_problem` (which checks
    the input); every float is a differentiable leaf, the horizon, the actuated coordinates and
    the cost callables are static.

    Fields: ``model``; ``q0`` [nq], ``v0`` [nv] the initial state; ``dt`` [s] the step;
    ``t0`` [s] the initial time; ``lo``, ``hi`` [nu] the torque box (``±inf`` where free);
    ``forces`` the point forces applied besides ``τ``; ``dynamics`` the dynamics strategy;
    ``horizon`` (N), ``actuated`` (indices of the driven velocity coordinates), ``running_cost``
    ``ℓ(q, v, τ)`` and ``terminal_cost`` ``ℓ_f(q, v)``; ``act`` the actuators (planning
    controls) and ``contact`` a compliant contact model (module docstring), or ``None``;
    ``quadrature`` the running cost's rule over a step, ``"knot"`` or ``"rk4"`` (module docstring)."""

    model: Model
    q0: jax.Array
    v0: jax.Array
    dt: jax.Array
    t0: jax.Array
    lo: jax.Array
    hi: jax.Array
    forces: tuple
    dynamics: AbstractDynamics
    horizon: int = eqx.field(static=True)
    actuated: tuple = eqx.field(static=True)
    running_cost: Callable = eqx.field(static=True)
    terminal_cost: Callable = eqx.field(static=True)
    bounded: bool = eqx.field(static=True)
    act: Actuation | None = None
    contact: Contact | ContactSet | None = None
    quadrature: str = eqx.field(static=True, default="knot")

    @property
    def nu(self) -> int:
        return self.act.nu if self.act is not None else len(self.actuated)

    @property
    def nv(self) -> int:
        return self.model.nv

    def tau(self, u):
        """``τ = B u`` [..., nv] from the driven torques ``u`` [..., nu]."""
        out = jnp.zeros(u.shape[:-1] + (self.nv,), u.dtype)
        return out.at[..., np.asarray(self.actuated, dtype=np.int32)].set(u)

    def cost_input(self, u):
        """The costs' third argument: ``τ = B u`` [..., nv], or the controls ``u`` with ``act``."""
        return u if self.act is not None else self.tau(u)

    def generalized(self, qs, vs, us):
        """The generalised forces [N, nv] at the knots: ``B u_k``, or ``act(u_k, q_k, v_k)``."""
        if self.act is None:
            return self.tau(us)
        return jax.vmap(lambda u, q, v: self.act(u, q, v, self.model))(us, qs[:-1], vs[:-1])

    def step(self, k, q, v, u):
        """``(q_{k+1}, v_{k+1}) = F(q_k, v_k, u_k)``: one RK4 step with ``τ = B u`` (or the
        actuators' force of the controls ``u``, evaluated at every stage) held, and the contact
        forces ``Q(q, v)`` at every stage."""
        q1, v1, _ = self.step_stages(k, q, v, u)
        return q1, v1

    def step_stages(self, k, q, v, u):
        """:meth:`step` and its stage states ``(q_s [4, nq], v_s [4, nv])``
        (:func:`diffsim.simulation.rollout.rk4_step_stages`)."""
        tau = self.tau(u) if self.act is None else None
        if self.contact is not None:
            tau = self._with_contact(tau)
        if self.act is None:
            loads = Loads(tau=tau, forces=self.forces)
        else:
            loads = Loads(tau=tau, forces=self.forces, ctrl=u, actuation=self.act)
        return rk4_step_stages(self.model, loads, self.t0 + k * self.dt, q, v, self.dt, self.dynamics)

    def step_cost(self, k, q, v, u):
        """``((q_{k+1}, v_{k+1}), dt ℓ̄_k)``: one step and its running cost, ``ℓ̄ = ℓ(q_k, v_k, τ_k)``
        (``"knot"``) or ``Σ_i b_i ℓ(x_i, τ_k)`` over the step's stage states (``"rk4"``)."""
        c = self.cost_input(u)
        if self.quadrature == "knot":
            return self.step(k, q, v, u), self.dt * self.running_cost(q, v, c)
        q1, v1, (sq, sv) = self.step_stages(k, q, v, u)
        ell = jax.vmap(self.running_cost, (0, 0, None))(sq, sv, c)
        return (q1, v1), self.dt * (jnp.asarray(RK4_WEIGHTS, ell.dtype) @ ell)

    def _with_contact(self, tau):
        """The signal ``(t, q, v) ↦ τ + Q(q, v)``: the contact's generalised force (its laws take no
        impact memory: a constant is passed, see :func:`diffsim.plan.solve`)."""
        contact, model = self.contact, self.model
        memory = jnp.full(contact.n_pairs, contact.v_impact_min, model.dtype)

        def total(t, q, v):
            Q = contact.forces(model, q, v, memory).Q
            return Q if tau is None else tau + Q

        return total

    @eqx.filter_jit  # eagerly (a plan's result, a user's check) one compile per problem structure
    def rollout(self, us):
        """States ``q`` [N+1, nq], ``v`` [N+1, nv] under the open-loop controls ``us`` [N, nu]."""

        def body(x, ku):
            k, u = ku
            x = self.step(k, *x, u)
            return x, x

        ks = jnp.arange(self.horizon, dtype=self.dt.dtype)
        q0 = normalize(self.model, self.q0)
        _, (qs, vs) = jax.lax.scan(body, (q0, self.v0), (ks, us))
        return jnp.concatenate([q0[None], qs]), jnp.concatenate([self.v0[None], vs])

    def trajectory_cost(self, qs, vs, us):
        """``J = Σ_k dt ℓ(q_k, v_k, B u_k) + ℓ_f(q_N, v_N)`` of a trajectory (``ℓ(q_k, v_k, u_k)``
        with ``act``; with ``quadrature="rk4"`` the stage average of each step, recomputing the
        steps' stage states: :meth:`rollout_cost` has them already)."""
        if self.quadrature == "knot":
            run = jax.vmap(self.running_cost)(qs[:-1], vs[:-1], self.cost_input(us))
            return self.dt * jnp.sum(run) + self.terminal_cost(qs[-1], vs[-1])
        ks = jnp.arange(self.horizon, dtype=self.dt.dtype)
        run = jax.vmap(lambda k, q, v, u: self.step_cost(k, q, v, u)[1])(ks, qs[:-1], vs[:-1], us)
        return jnp.sum(run) + self.terminal_cost(qs[-1], vs[-1])

    @eqx.filter_jit  # eagerly (a plan's result, a user's check) one compile per problem structure
    def rollout_cost(self, us):
        """``(q [N+1, nq], v [N+1, nv], J)``: :meth:`rollout` and :meth:`trajectory_cost` in one pass
        (each step's running cost from the step itself)."""
        if self.quadrature == "knot":
            qs, vs = self.rollout(us)
            return qs, vs, self.trajectory_cost(qs, vs, us)

        def body(x, ku):
            k, u = ku
            x, c = self.step_cost(k, *x, u)
            return x, (x, c)

        ks = jnp.arange(self.horizon, dtype=self.dt.dtype)
        q0 = normalize(self.model, self.q0)
        (qN, vN), ((qs, vs), run) = jax.lax.scan(body, (q0, self.v0), (ks, us))
        return (jnp.concatenate([q0[None], qs]), jnp.concatenate([self.v0[None], vs]),
                jnp.sum(run) + self.terminal_cost(qN, vN))

    def objective(self, us):
        """``J(u)``: the cost of the open-loop controls ``us`` [N, nu] (single shooting)."""
        return self.rollout_cost(us)[2]

    def clip(self, u):
        return jnp.clip(u, self.lo, self.hi) if self.bounded else u

    # -- tangent-space local models (for DDP) -------------------------------------------------

    def retract(self, q, v, dx):
        """``x ⊕ δx``."""
        nv = self.nv
        return integrate(self.model, q, dx[:nv]), v + dx[nv:]

    def deviation(self, q_ref, v_ref, q, v):
        """``x ⊖ x̄`` [2 nv]."""
        return jnp.concatenate([difference(self.model, q_ref, q), v - v_ref])

    def for_jacobians(self) -> Problem:
        """This problem with the dynamics whose forward-mode derivatives apply the analytical
        ``∂v̇/∂(q, q̇)`` and ``M⁻¹`` to all tangents at once
        (:class:`~diffsim.dynamics.dispatch.AnalyticTangents`) when it uses the default dynamics:
        the same values and derivatives, cheaper for the ``2nv + nu`` tangents of a step's
        Jacobians (``ur5-reach``: local models 2.6–3.3× faster, ``benchmarks/bench_ddp_parts.py``)."""
        if type(self.dynamics) is not Default:
            return self
        return dataclasses.replace(self, dynamics=AnalyticTangents())

    def step_jacobians(self, qs, vs, us):
        """``A_k = ∂δx_{k+1}/∂δx_k`` [N, 2nv, 2nv] and ``B_k = ∂δx_{k+1}/∂u_k`` [N, 2nv, nu] of the
        RK4 step at the trajectory (forward mode, vmapped over the horizon)."""
        self = self.for_jacobians()
        nx = 2 * self.nv

        def local(k, q, v, q1, v1, u):
            def f(z):
                qn, vn = self.step(k, *self.retract(q, v, z[:nx]), z[nx:])
                return self.deviation(q1, v1, qn, vn)

            J = jax.jacfwd(f)(jnp.concatenate([jnp.zeros(nx, u.dtype), u]))
            return J[:, :nx], J[:, nx:]

        ks = jnp.arange(self.horizon, dtype=self.dt.dtype)
        return jax.vmap(local)(ks, qs[:-1], vs[:-1], qs[1:], vs[1:], us)

    def local_models(self, qs, vs, us):
        """DDP's local models at a trajectory: ``(A, B, g, H, g_f, H_f)`` of :meth:`step_jacobians`
        and :meth:`cost_derivatives`. With ``quadrature="rk4"`` one forward-mode pass per knot gives
        the step's Jacobians and its stage states' ``∂x_i/∂(δx, u)``; a least-squares term's residuals
        at the stages are differentiated through those by the chain rule (each argument's partial in
        its own pass); a plain running term gets its exact, PSD-projected Hessian through the stages."""
        if self.quadrature == "knot":
            return (*self.step_jacobians(qs, vs, us), *self.cost_derivatives(qs, vs, us))
        self = self.for_jacobians()
        nx = 2 * self.nv
        terms = costs.terms(self.running_cost)
        ls = [t for t in terms if isinstance(t, costs.LeastSquares)]
        plain = [t for t in terms if not isinstance(t, costs.LeastSquares)]

        def local(k, q, v, q1, v1, u):
            b = jnp.asarray(RK4_WEIGHTS, u.dtype)

            def stages(z):
                return self.step_stages(k, *self.retract(q, v, z[:nx]), z[nx:]), self.cost_input(z[nx:])

            def f(z):  # the step's deviation, its stage states and the cost input, flat
                (qn, vn, (sq, sv)), c = stages(z)
                return jnp.concatenate([self.deviation(q1, v1, qn, vn), sq.ravel(), sv.ravel(), c]), (sq, sv, c)

            z0 = jnp.concatenate([jnp.zeros(nx, u.dtype), u])
            J, (sq, sv, c) = jax.jacfwd(f, has_aux=True)(z0)
            # the stage states' Jacobians ∂x_i/∂z (from the same pass as the step's)
            nq, nv = sq.shape[1], sv.shape[1]
            Jq = J[nx:nx + 4 * nq].reshape(4, nq, -1)
            Jv = J[nx + 4 * nq:nx + 4 * (nq + nv)].reshape(4, nv, -1)
            Jc = J[nx + 4 * (nq + nv):]
            g, H = jnp.zeros_like(z0), jnp.zeros((z0.size, z0.size), u.dtype)
            for t in ls:  # Gauss–Newton on √b_i r(x_i, c): 2 dt Jᵀ W r, 2 dt Jᵀ W J
                r, w = jax.vmap(t.residual_and_weights, (0, 0, None))(sq, sv, c)
                # ∂r/∂z by the chain rule through the stage states, each partial in its own forward
                # pass: a residual that ignores an argument (or is linear in it) costs nothing there
                dr = [jax.vmap(jax.jacfwd(t.residual, argnums=i), (0, 0, None))(sq, sv, c) for i in range(3)]
                Jr = dr[0] @ Jq + dr[1] @ Jv + dr[2] @ Jc
                Jr = (jnp.sqrt(b)[:, None, None] * Jr).reshape(-1, z0.size)
                r, w = (jnp.sqrt(b)[:, None] * r).ravel(), w.ravel()
                WJ = (2 * self.dt) * w[:, None] * Jr
                g, H = g + WJ.T @ r, H + _sym(Jr.T @ WJ)
            for t in plain:
                def averaged(z, t=t):
                    (_, _, (sq, sv)), c = stages(z)
                    return b @ jax.vmap(t, (0, 0, None))(sq, sv, c)

                gt, Ht = quadratic_model(averaged, lambda z: (z,), z0, self.dt)
                g, H = g + gt, H + Ht
            return J[:nx, :nx], J[:nx, nx:], g, H

        ks = jnp.arange(self.horizon, dtype=self.dt.dtype)
        A, B, g, H = jax.vmap(local)(ks, qs[:-1], vs[:-1], qs[1:], vs[1:], us)
        return (A, B, g, H, *self._terminal_model(qs[-1], vs[-1]))

    def cost_derivatives(self, qs, vs, us):
        """DDP's local quadratic models of the stage costs in ``(δx, u)`` (:func:`quadratic_model`:
        exact gradients; Gauss–Newton Hessians for :class:`~.costs.LeastSquares` terms, exact
        PSD-projected ones for the others): running ``(g [N, nz], H [N, nz, nz])`` with
        ``nz = 2nv + nu`` (weighted by ``dt``) and terminal ``(g_f [2nv], H_f [2nv, 2nv])``."""
        if self.quadrature != "knot":
            return self.local_models(qs, vs, us)[2:]
        nx = 2 * self.nv

        def run(q, v, u):
            def lift(z):
                qq, vv = self.retract(q, v, z[:nx])
                return qq, vv, self.cost_input(z[nx:])

            return quadratic_model(self.running_cost, lift, jnp.concatenate([jnp.zeros(nx, u.dtype), u]), self.dt)

        g, H = jax.vmap(run)(qs[:-1], vs[:-1], us)
        return (g, H, *self._terminal_model(qs[-1], vs[-1]))

    def _terminal_model(self, q, v):
        """``(g_f, H_f)`` of the terminal cost at ``(q, v)`` in ``δx``."""
        return quadratic_model(self.terminal_cost, lambda dx: self.retract(q, v, dx), jnp.zeros(2 * self.nv, q.dtype))


def _sym(X):
    return 0.5 * (X + X.T)


def psd_projection(H):
    """The nearest positive semidefinite matrix to the symmetric ``H`` (Frobenius norm): its
    eigen-decomposition with the negative eigenvalues set to zero."""
    w, V = jnp.linalg.eigh(_sym(H))
    return _sym((V * jnp.maximum(w, 0.0)) @ V.T)


def quadratic_model(cost, lift, z, scale=1.0):
    """Gradient ``g`` and Hessian model ``H`` of ``c(z) = scale · cost(*lift(z))`` at ``z``, term by
    term (:func:`.costs.terms`):

    * :class:`~.costs.LeastSquares` ``Σ w_i r_i²``: ``g = 2 s Jᵀ W r``, ``H = 2 s Jᵀ W J`` with
      ``J = ∂r/∂z`` by forward mode (Gauss–Newton: the residual curvature ``Σ w_i r_i ∇²r_i`` is
      dropped; positive semidefinite by construction);
    * any other scalar callable: ``g = ∇c``, ``H = Π(∇²c)``, the exact Hessian (forward over
      reverse) projected onto the positive semidefinite cone (:func:`psd_projection`).

    The gradient is exact either way, so a fixed point of DDP is a stationary point of ``J``."""
    scale = jnp.asarray(scale, z.dtype)
    g = jnp.zeros_like(z)
    H = jnp.zeros((z.size, z.size), z.dtype)
    for t in costs.terms(cost):
        if isinstance(t, costs.LeastSquares):
            def res(y, t=t):
                r, w = t.residual_and_weights(*lift(y))
                return r, (r, w)

            J, (r, w) = jax.jacfwd(res, has_aux=True)(z)
            WJ = (2 * scale) * w[:, None] * J
            g = g + WJ.T @ r
            H = H + _sym(J.T @ WJ)
        else:
            def c(y, t=t):
                return scale * t(*lift(y))

            g = g + jax.grad(c)(z)
            H = H + psd_projection(jax.hessian(c)(z))
    return g, H


def actuated_indices(model: Model, actuation) -> tuple:
    """The driven velocity coordinates: ``None`` (every joint coordinate: all ``nv`` of a rigid
    model; a flexible link's modal coordinates are not driven — no actuator applies forces to a
    link's elastic modes), a boolean mask [nv], integer indices (each once), or joint names (every
    coordinate of each named joint)."""
    nv = model.nv
    if actuation is None:
        t = model.topology
        joints = [k for i in range(len(t.joint_names)) for k in range(t.v_slice(i).start, t.v_slice(i).stop)]
        return tuple(sorted(joints))
    if isinstance(actuation, str):
        actuation = [actuation]
    items = list(np.asarray(actuation).ravel()) if not isinstance(actuation, (list, tuple)) else list(actuation)
    if items and all(isinstance(a, str) for a in items):
        t = model.topology
        idx = []
        for name in items:
            if name not in t.joint_names:
                raise ValueError(f"actuation: no joint named {name!r} (joints: {list(t.joint_names)})")
            sl = t.v_slice(t.joint_names.index(name))
            idx.extend(range(sl.start, sl.stop))
        return tuple(sorted(set(idx)))
    arr = np.asarray(items)
    if arr.dtype == bool:
        if arr.shape != (nv,):
            raise ValueError(f"actuation mask must have shape ({nv},), got {arr.shape}")
        return tuple(int(i) for i in np.flatnonzero(arr))
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"actuation must be a boolean mask, integer indices or joint names, got dtype {arr.dtype}")
    raw = [int(i) for i in arr.ravel()]
    if len(set(raw)) != len(raw):
        raise ValueError(f"actuation indices must be distinct, got {raw} (for a mask over the {nv} coordinates give "
                         "booleans)")
    idx = sorted(raw)
    if idx and (idx[0] < 0 or idx[-1] >= nv):
        raise ValueError(f"actuation indices must lie in [0, {nv}), got {idx}")
    return tuple(idx)
