"""Forward sensitivities under the step controller: the tangent of a solve integrated with it.

Forward-mode AD through an adaptive solve (diffrax ``ForwardMode``) differentiates the discrete
solution whose *steps the primal state chose*: the tangents ride along uncontrolled, and where
the tangent equation is rougher than the state's (a contact onset, where ``∂F/∂δ ∝ δ^0.5``) their
error is not bounded by the tolerances. :class:`ForwardSensitivity` integrates the forward
sensitivity system instead (Hairer–Nørsett–Wanner I §I.14; CVODES with ``errconS``)::

    ẏ = f(t, y, a),        Ṡ_j = ∂f/∂y · S_j + ∂f/∂a · ȧ_j,       S_j(t_s) = ẏ_s,j − f(t_s, y_s) ṫ_s,j

as one augmented state ``(y, S)`` under the same controller, whose error norm is the larger of
the state's and every direction's (the tangents are held to the state's ``rtol`` / ``atol``, so
parametrise so that they are of the state's size, e.g. log-parameters, as CVODES' ``pbar``
does). A solve that ends on an event ``g(t, y, a) = 0`` moves its end time with the parameters
(implicit function theorem)::

    ṫ_e = −(∂g/∂y · S_j + ∂g/∂a · ȧ_j) / (∂g/∂t + ∂g/∂y · f),      ẏ_e = S_j(t_e) + f(t_e, y_e) ṫ_e,

and the next solve starts from ``(t_e, y_e)`` with those tangents, so ``S⁺ = S⁻ + (f⁻ − f⁺) ṫ_e``
(the event-time correction of a switched vector field) follows from the initial condition above.

The rule is a ``custom_jvp`` of the solve; under ``jax.jacfwd`` (a ``vmap`` of the JVP) a
``custom_vmap`` gathers all ``P`` tangent directions into one augmented solve, so the state is
integrated once for all of them. Forward mode only: the augmented solve is one ``while_loop``
over state and tangents, which reverse mode cannot split (use the system's default adjoint for
``grad``).
"""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from .trajectory import status_from_diffrax


class ForwardSensitivity(diffrax.ForwardMode):
    """Adjoint option (``Options(adjoint=ForwardSensitivity())``): forward-mode derivatives
    (``jax.jvp`` / ``jax.jacfwd``) of a run integrated by diffrax — without contact, or with
    compliant contact and its located events — from the sensitivity equations integrated with the
    state under the step controller, with the event-time corrections (module docstring). Without
    differentiation the run is the same as with the default adjoint; reverse mode is refused
    (JAX: "Linearization failed ..."). The fits of :mod:`diffsim.identify` use it. LCP time
    stepping and :func:`~diffsim.rollout` (fixed steps) differentiate their steps exactly and do
    not use it."""


class SegmentSolution(eqx.Module):
    """What the event loop needs from one solve: the saves at ``ts`` (``inf`` after the end),
    the end time and state, its :class:`~.trajectory.Status` (an event is a success), whether an
    event ended it and which, the accepted steps."""

    ys: object
    t_end: jax.Array
    y_end: object
    status: jax.Array
    hit: jax.Array
    event_mask: list
    num_accepted_steps: jax.Array


class SegmentProblem(eqx.Module):
    """The static part of one solve (vector field ``f(t, y, args)``, solver, controller, event,
    step budget)."""

    f: object = eqx.field(static=True)
    solver: object
    controller: object
    event: diffrax.Event | None
    max_steps: int = eqx.field(static=True)
    adjoint: diffrax.AbstractAdjoint | None = None  # default: recursive checkpointing

    def solve(self, t0, t1, dt0, y0, args, ts, *, sensitivities: bool = False) -> SegmentSolution:
        """The solve from ``(t0, y0)`` to ``t1`` (or the first event), saved at ``ts``; with
        ``sensitivities`` its forward-mode derivative is the controlled sensitivity solve."""
        if sensitivities:
            return _solve_with_sensitivities(t0, t1, y0, args, ts, problem=self, dt0=dt0)
        return _solve(self, t0, t1, dt0, y0, args, ts)


def _solve(problem: SegmentProblem, t0, t1, dt0, y0, args, ts):
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(problem.f),
        problem.solver,
        t0,
        t1,
        dt0,
        y0,
        args=args,
        saveat=diffrax.SaveAt(subs=[diffrax.SubSaveAt(ts=ts), diffrax.SubSaveAt(t1=True)]),
        stepsize_controller=problem.controller,
        max_steps=problem.max_steps,
        throw=False,
        adjoint=diffrax.RecursiveCheckpointAdjoint() if problem.adjoint is None else problem.adjoint,
        event=problem.event,
    )
    ys, y_end = sol.ys
    y_end = jax.tree_util.tree_map(lambda a: a[0], y_end)
    mask = sol.event_mask
    mask = [] if mask is None else list(mask) if isinstance(mask, (list, tuple)) else [mask]
    located = problem.event is not None and problem.event.root_finder is not None
    return SegmentSolution(ys, sol.ts[1][0], y_end, status_from_diffrax(sol.result, root_find=located),
                           sol.result == diffrax.RESULTS.event_occurred, mask, sol.stats["num_accepted_steps"])


@eqx.filter_custom_jvp
def _solve_with_sensitivities(t0, t1, y0, args, ts, *, problem, dt0):
    return _solve(problem, t0, t1, dt0, y0, args, ts)


def _is_float(x):
    return eqx.is_array(x) and jnp.issubdtype(x.dtype, jnp.inexact)


def _split(tree):
    """(inexact array leaves, the rest): the differentiable part and what is held fixed."""
    return eqx.partition(tree, _is_float)


@_solve_with_sensitivities.def_jvp
def _solve_jvp(primals, tangents, *, problem, dt0):
    """``(solution, tangent of solution)`` from one augmented solve (module docstring); the
    tangent directions of a ``jax.jacfwd`` are gathered by :func:`custom_vmap` into one solve."""
    dyn, static = eqx.partition((primals, dt0), eqx.is_array)
    # symbolic zeros (None) stay absent: only the inputs with a tangent are linearised in the
    # vector field; the state's tangent S is part of the solve, so it starts from zeros
    y_float, _ = _split(primals[2])
    t_y0 = jax.tree_util.tree_map(lambda d, t: None if d is None else (jnp.zeros_like(d) if t is None else t), y_float,
                                  tangents[2], is_leaf=lambda x: x is None)
    tan = (tangents[0], tangents[1], t_y0, tangents[3], tangents[4])
    tan = jax.tree_util.tree_map(lambda t: t[None], tan)

    def impl(dyn, tan):
        (t0, t1, y0, args, ts), dt0_ = eqx.combine(dyn, static)
        return _augmented(problem, dt0_, t0, t1, y0, args, ts, tan)

    aug = custom_vmap(impl)

    @aug.def_vmap
    def _rule(axis_size, in_batched, dyn, tan):
        b_dyn, b_tan = in_batched
        tan = jax.tree_util.tree_map(lambda t, b: t if b else jnp.broadcast_to(t, (axis_size,) + t.shape), tan, b_tan)
        if any(jax.tree_util.tree_leaves(b_dyn)):  # primals batched too: one solve per batch entry
            dyn = jax.tree_util.tree_map(lambda d, b: d if b else jnp.broadcast_to(d, (axis_size,) + d.shape), dyn, b_dyn)
            out = jax.vmap(impl)(dyn, tan)
            return out, jax.tree_util.tree_map(lambda _: True, out)
        # directions batched: [B, J, ...] → one solve with B·J directions
        J = jax.tree_util.tree_leaves(tan)[0].shape[1]
        flat = jax.tree_util.tree_map(lambda t: t.reshape((axis_size * J,) + t.shape[2:]), tan)
        sol, t_sol = impl(dyn, flat)
        t_sol = jax.tree_util.tree_map(lambda t: t.reshape((axis_size, J) + t.shape[1:]), t_sol)
        return (sol, t_sol), (jax.tree_util.tree_map(lambda _: False, sol), jax.tree_util.tree_map(lambda _: True, t_sol))

    sol, t_sol = aug(dyn, tan)
    t_sol = jax.tree_util.tree_map(lambda t: t[0], t_sol)
    return sol, t_sol


def _augmented(problem: SegmentProblem, dt0, t0, t1, y0, args, ts, tan):
    """The augmented solve: ``sol`` and its tangents [J, ...] for the directions ``tan`` (the
    tangents of ``(t0, t1, y0, args, ts)``, each with a leading J; ``None`` where zero)."""
    f = problem.f
    dt_s, dt_1, dy0, dargs, dts = tan
    J = jax.tree_util.tree_leaves(dy0)[0].shape[0]
    # the args with a tangent (a_diff) and the rest, held fixed
    a_diff, a_rest = eqx.partition(args, jax.tree_util.tree_map(lambda t: t is not None, dargs, is_leaf=lambda x: x is None))
    dt_s = jnp.zeros((J,), jnp.result_type(t0)) if dt_s is None else dt_s
    dt_1 = jnp.zeros((J,), jnp.result_type(t1)) if dt_1 is None else dt_1

    def f_lin(t, y, ad):
        """``f(t, y, a)`` and its linearisation in ``(y, a)``."""
        return jax.linearize(lambda yy, aa: f(t, yy, eqx.combine(aa, a_rest)), y, ad)

    def F(t, Y, pair):
        y, S = Y
        ad, dad = pair
        fy, lin = f_lin(t, y, ad)
        return fy, jax.vmap(lin)(S, dad)

    # S(t_s) = ẏ_s − f(t_s, y_s) ṫ_s
    f0 = f(t0, y0, args)
    S0 = jax.vmap(lambda dy, dt: jax.tree_util.tree_map(lambda a, b: a - b * dt.astype(b.dtype), dy, f0))(dy0, dt_s)
    base = problem.controller
    if isinstance(base, diffrax.PIDController):  # the larger of the state's and each direction's error
        controller = eqx.tree_at(lambda c: c.norm, base, _max_norm(base.norm))
    else:
        controller = base
    conds = [] if problem.event is None else list(jax.tree_util.tree_leaves(problem.event.cond_fn, is_leaf=callable))
    event = None
    if problem.event is not None:
        event = diffrax.Event([(lambda c: lambda t, y, args, **kw: c(t, y[0], eqx.combine(args[0], a_rest), **kw))(c)
                               for c in conds], root_finder=problem.event.root_finder, direction=problem.event.direction)
    aug_problem = SegmentProblem(F, problem.solver, controller, event, problem.max_steps, diffrax.ForwardMode())
    sol = _solve(aug_problem, t0, t1, dt0, (y0, S0), (a_diff, dargs), ts)
    (ys, Ss), (y_end, S_end) = sol.ys, sol.y_end
    Ss = jax.tree_util.tree_map(lambda a: jnp.moveaxis(a, 1, 0), Ss)  # [T, J, ...] → [J, T, ...]
    t_end = sol.t_end
    f_end = f(t_end, y_end, args)
    # end time: the event's, moved by the implicit function theorem; else t1 (and its tangent)
    dt_end = dt_1
    hit = sol.hit
    for k in reversed(range(len(conds))):
        c = conds[k]
        if not jnp.issubdtype(jax.eval_shape(lambda: c(t_end, y_end, args)).dtype, jnp.inexact):  # a flag (non-finite state)
            continue
        g = lambda t, y, ad, c=c: c(t, y, eqx.combine(ad, a_rest))
        num = jax.vmap(lambda S, dad: jax.jvp(lambda y, ad: g(t_end, y, ad), (y_end, a_diff), (S, dad))[1])(S_end, dargs)
        den = jax.jvp(lambda t, y: g(t, y, a_diff), (t_end, y_end), (jnp.ones_like(t_end), f_end))[1]
        ok = hit & sol.event_mask[k] & (den != 0)
        dt_end = jnp.where(ok, -num / jnp.where(ok, den, 1.0), dt_end)
    dy_end = jax.vmap(lambda S, dt: jax.tree_util.tree_map(lambda s, fe: s + fe * dt.astype(fe.dtype), S, f_end))(S_end, dt_end)
    # saves: ẏ(t_k) = S(t_k) + f(t_k, y_k) ṫ_k (ṫ_k ≠ 0 only where a save time moves, e.g. clipped to t_s)
    if dts is not None:
        reached = jnp.all(jnp.stack([jnp.all(jnp.isfinite(a).reshape(a.shape[0], -1), axis=1)
                                     for a in jax.tree_util.tree_leaves(ys)]), axis=0)
        # saves after an event are inf: evaluate f there at y0 instead (those rows are not kept)
        safe = jax.tree_util.tree_map(lambda a, a0: jnp.where(reached.reshape((-1,) + (1,) * (a.ndim - 1)), a, a0), ys, y0)
        fs = jax.vmap(lambda t, y: f(t, y, args))(ts, safe)
        Ss = jax.vmap(lambda S, dt: jax.tree_util.tree_map(lambda s, fk: s + fk * dt.reshape((-1,) + (1,) * (fk.ndim - 1)).astype(fk.dtype),
                                                           S, fs))(Ss, dts)
    out = SegmentSolution(ys, t_end, y_end, sol.status, sol.hit, sol.event_mask, sol.num_accepted_steps)
    t_out = SegmentSolution(Ss, dt_end, dy_end, None, None, [None] * len(sol.event_mask), None)
    return out, t_out


def _max_norm(norm):
    """Error norm of ``(y, S)``: ``max(‖y‖, max_j ‖S_j‖)`` in the controller's own norm."""

    def fn(tree):
        y, S = tree
        return jnp.maximum(norm(y), jnp.max(jax.vmap(norm)(S)))

    return fn
