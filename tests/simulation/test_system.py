"""ds.System: one value holding a run's every input.

* ``simulate(system)`` gives bit-identical results to the call style ``simulate(model, q0, v0,
  t1, **kw)`` (plain, compliant contact, rigid contact) and ``rollout(system, dt, n)`` to
  ``rollout(model, ...)``;
* every formulation runs through the same dynamics strategy slot;
* named parameters over the whole system (model, ``contact.*``, ``beam.<body>.*``, ``q0.*``)
  under ``jit``, ``grad`` and ``vmap``, with gradients against central differences;
* joint Coulomb friction (``frictionloss``) dissipates exactly ``Σ f_c tanh(v/w) v``;
* a trajectory's derived quantities: the energy balance's relative error when E(t0) = 0, and
  every method on a batched (vmapped) run, member by member.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.formulations import BoltzmannHamel, GibbsAppell, LagrangeAutodiff, RecursiveLagrange
from diffsim.model.model import Actuator
from diffsim.contact import friction_law, normal_law
from flex_models import _link, _poly


def pendulum_arm(frictionloss=0.0):
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=[0.01, 0.03, 0.03],
               damping=0.05, frictionloss=frictionloss)
    b.add_body("l2", parent="l1", joint="revolute", axis=[0, 1, 0], pos=[0.6, 0, 0], mass=0.8,
               com=[0.25, 0, 0], inertia=[0.01, 0.02, 0.02], frictionloss=frictionloss)
    return b.build()


def ball():
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("ball", joint="free", mass=1.0, inertia=(0.004,) * 3)
    m = b.build()
    c = ds.compliant_contact(m, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0, 0, 1), 0.0)],
                             normal=ds.normal_law("hunt-crossley", K=1e5, c_r=0.7))
    return m, c, jnp.array([0, 0, 0.3, 1, 0, 0, 0.0]), jnp.array([0.5, 0, 0, 0, 0, 0.0])


def planar_flexible_chain():
    """A planar two-link chain (revolute about z), the first link a flexible beam: the model
    every formulation of the seeds accepts."""
    b = ds.ModelBuilder(gravity=(0, -9.81, 0))
    b.add_body("l1", joint="revolute", axis=(0, 0, 1), mass=0.5, inertia=(1e-3, 5e-3, 5e-3),
               flex=ds.beam(0.8, 1.5, EI_z=40.0, modes_y=_poly([2, 3]), tip_mass=0.1, n_quad=8))
    b.add_body("l2", "l1", joint="revolute", axis=(0, 0, 1), pos=(0.8, 0, 0), mass=0.4, com=(0.2, 0, 0),
               inertia=(1e-3, 3e-3, 3e-3))
    return b.build()


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a.t), np.asarray(b.t))
    np.testing.assert_array_equal(np.asarray(a.q), np.asarray(b.q))
    np.testing.assert_array_equal(np.asarray(a.v), np.asarray(b.v))
    assert int(a.status) == int(b.status)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_simulate_system_equals_the_call_style():
    m = pendulum_arm()
    q0, v0 = jnp.array([0.3, -0.2]), jnp.array([0.0, 0.5])
    tau = lambda t, q, v: jnp.array([0.2 * jnp.sin(t), 0.0])  # noqa: E731
    system = ds.System(m, q0, v0, tau=tau, t1=0.5, rtol=1e-10, atol=1e-10, saveat=11)
    same(ds.simulate(system), ds.simulate(m, q0, v0, 0.5, tau=tau, rtol=1e-10, atol=1e-10, saveat=11))
    same(ds.rollout(system, 0.01, 20), ds.rollout(m, q0, v0, 0.01, 20, tau=tau))
    # replace() keeps everything else
    same(ds.simulate(system.replace(t1=0.3)), ds.simulate(m, q0, v0, 0.3, tau=tau, rtol=1e-10, atol=1e-10, saveat=11))
    with pytest.warns(DeprecationWarning, match="unpacking"):  # the previous release's tuple result
        t, q, v = ds.rollout(system, 0.01, 20)
    with pytest.warns(DeprecationWarning, match="result is deprecated"):
        assert int(ds.simulate(system).result) == int(ds.Status.SUCCESS)
    with pytest.raises(TypeError, match="no further arguments"):
        ds.simulate(system, q0)
    with pytest.raises(TypeError, match="no field"):
        system.replace(t2=1.0)


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_simulate_system_with_contact_equals_the_call_style():
    m, c, q0, v0 = ball()
    system = ds.System(m, q0, v0, contact=c, t1=0.35, saveat=8)
    a = ds.simulate(system)
    same(a, ds.simulate(m, q0, v0, 0.35, contact=c, saveat=8))
    assert a.ok and a.contact is not None and int(a.contact.n_events) >= 1  # it did hit the plane


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_rigid_contact_system_equals_the_deprecated_entry_point():
    m, _, q0, v0 = ball()
    rc = ds.rigid_contact(m, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0, 0, 1), 0.0)], mu=0.3,
                          plane_of_motion=(0, 1, 0))  # the ball moves in the x–z plane
    new = ds.simulate(ds.System(m, q0, v0, contact=rc, solver=ds.AccelerationLCP(1e-3), t1=0.3))
    with pytest.warns(DeprecationWarning):
        old = ds.simulate_lcp(m, q0, v0, rc, t1=0.3, dt=1e-3)
    same(new, old)
    # resting on the plane: the impact step (2 m/s, dt = 1 ms) may leave at most v dt of penetration
    assert new.ok and float(new.q[-1, 2]) == pytest.approx(0.1, abs=2e-3)


def test_bad_system_input():
    m = pendulum_arm()
    with pytest.raises(ValueError, match=r"q0 must have shape \(2,\)"):
        ds.System(m, jnp.zeros(3))
    with pytest.raises(ValueError, match="t1 must be greater"):
        ds.System(m, t1=0.0)
    with pytest.raises(TypeError, match="System: .*unexpected"):
        ds.System(m, max_stepz=10)
    with pytest.raises(TypeError, match="Model"):
        ds.System("arm")
    with pytest.raises(ValueError, match="not both"):
        ds.System(m).replace(options=ds.System(m).options, max_steps=10)
    with pytest.raises(TypeError, match="no field"):
        ds.System(m).replace(max_stepz=10)


def test_replace_takes_option_fields_as_the_constructor_does():
    s = ds.System(pendulum_arm(), t1=0.5, max_events=7)
    r = s.replace(max_steps=123, throw=False)
    assert (r.options.max_steps, r.options.throw, r.options.max_events) == (123, False, 7)
    assert (s.options.max_steps, s.options.throw) == (100_000, True)
    assert r.options == ds.System(pendulum_arm(), t1=0.5, max_events=7, max_steps=123, throw=False).options


@pytest.mark.slow
@pytest.mark.parametrize("strategy", [ds.dynamics.ABA(), ds.dynamics.Sweep(), ds.dynamics.Composite(),
                                      ds.dynamics.MassMatrix(), GibbsAppell(), RecursiveLagrange(),
                                      LagrangeAutodiff()], ids=lambda s: type(s).__name__)
def test_every_formulation_runs_through_the_dynamics_strategy(strategy):
    """Each seed formulation in the ``dynamics=`` slot gives the default's trajectory (round-off
    of two different algorithms, amplified over the run: 1e-9)."""
    m = planar_flexible_chain()
    q0 = ds.neutral_configuration(m).at[0].set(0.3)
    sys0 = ds.System(m, q0, t1=0.2, rtol=1e-12, atol=1e-12, saveat=3)
    if isinstance(strategy, ds.dynamics.ABA):  # rigid-only: refused with the reason
        with pytest.raises(ValueError, match="flexible"):
            sys0.replace(dynamics=strategy)
        return
    ref = ds.simulate(sys0)
    tr = ds.simulate(sys0.replace(dynamics=strategy))
    np.testing.assert_allclose(tr.q, ref.q, atol=1e-9, rtol=0)
    np.testing.assert_allclose(tr.v, ref.v, atol=1e-8, rtol=0)


@pytest.mark.slow
def test_boltzmann_hamel_runs_through_the_dynamics_strategy():
    b = ds.ModelBuilder(gravity=(0, 0, 0))
    b.add_body("base", joint="free", mass=10.0, inertia=(1.0, 1.2, 0.8))
    b.add_body("arm", "base", joint="revolute", axis=(0, 0, 1), pos=(0.5, 0, 0), mass=2.0, com=(0.3, 0, 0),
               inertia=(0.01, 0.1, 0.1))
    m = b.build()
    v0 = jnp.array([0.1, 0.0, 0.0, 0.0, 0.2, 0.1, 0.5])
    sys0 = ds.System(m, v0=v0, t1=0.5, rtol=1e-12, atol=1e-12, saveat=3)
    np.testing.assert_allclose(ds.simulate(sys0.replace(dynamics=BoltzmannHamel())).q, ds.simulate(sys0).q,
                               atol=1e-10, rtol=0)


def test_system_parameter_names_cover_contact_beams_and_initial_state():
    m, c, q0, v0 = ball()
    names = ds.param_names(ds.System(m, q0, v0, contact=c))
    for n in ("body.ball.mass", "contact.K", "contact.c_r", "contact.p0.radius", "q0.ball", "v0.ball", "gravity"):
        assert n in names
    b = ds.ModelBuilder()
    b.add_body("arm", joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(0.1,) * 3, flex=_link())
    names = ds.param_names(ds.System(b.build()))
    for n in ("beam.arm.EI_z", "beam.arm.GJ", "beam.arm.mu", "beam.arm.kelvin_voigt", "beam.arm.air_damping",
              "beam.arm.tip_mass", "q0.modes.arm", "joint.arm.frictionloss"):
        assert n in names
    with pytest.raises(KeyError, match="did you mean 'contact.K'"):
        ds.get_param(ds.System(m, q0, v0, contact=c), "contact.k")


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_beam_parameters_rederive_the_modal_integrals():
    """Setting ``beam.<b>.EI_z`` equals building the beam with that EI (the integrals are derived
    inside the traced function), and the derivative through a simulation matches central
    differences."""
    def model(EI):
        b = ds.ModelBuilder(gravity=(0, -9.81, 0))
        b.add_body("arm", joint="revolute", axis=(0, 0, 1), mass=0.2, inertia=(1e-3,) * 3,
                   flex=ds.beam(1.0, 2.0, EI_z=EI, modes_y=_poly([2, 3]), n_quad=8))
        return b.build()

    m = model(30.0)
    m2 = ds.set_params(m, {"beam.arm.EI_z": 45.0})
    np.testing.assert_allclose(m2.flex[0].K, model(45.0).flex[0].K, rtol=1e-13)
    system = ds.System(m, ds.neutral_configuration(m).at[0].set(0.4), t1=0.3, rtol=1e-11, atol=1e-11, saveat=2)

    def tip(EI):
        tr = ds.simulate(ds.set_params(system, {"beam.arm.EI_z": EI}))
        return tr.q[-1, 1]  # first modal coordinate at t1

    g = jax.jit(jax.grad(tip))(30.0)
    h = 1e-3
    fd = (tip(30.0 + h) - tip(30.0 - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5)
    assert abs(float(g)) > 1e-6  # stiffness does change the deflection


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_contact_and_initial_state_parameters_under_jit_grad_vmap(compile_log):
    """... and eager runs with new parameter values reuse the first run's program (the contact
    loop's scan was compiled again on every eager call)."""
    m, c, q0, v0 = ball()
    system = ds.System(m, q0, v0, contact=c, t1=0.35, saveat=2, rtol=1e-12, atol=1e-12)

    def final_height(K, z0):
        s = ds.set_params(system, {"contact.K": K, "q0.ball": system.q0.at[2].set(z0)})
        return ds.simulate(s).q[-1, 2]

    Ks = jnp.array([5e4, 1e5, 2e5])
    batched = jax.jit(jax.vmap(final_height, in_axes=(0, None)))(Ks, 0.3)
    K0, *others = list(Ks)
    looped = [final_height(K0, 0.3)]
    with compile_log() as compiles:
        looped += [final_height(K, 0.3) for K in others]
    looped = jnp.stack(looped)
    assert not compiles, compiles
    np.testing.assert_allclose(batched, looped, rtol=1e-9)
    gK, gz = jax.jit(jax.grad(final_height, argnums=(0, 1)))(1e5, 0.3)
    fdK = (final_height(1e5 * (1 + 1e-3), 0.3) - final_height(1e5 * (1 - 1e-3), 0.3)) / (2e-3 * 1e5)
    fdz = (final_height(1e5, 0.3 + 1e-6) - final_height(1e5, 0.3 - 1e-6)) / 2e-6
    np.testing.assert_allclose(gK, fdK, rtol=1e-4)
    np.testing.assert_allclose(gz, fdz, rtol=1e-4)


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_joint_coulomb_friction_dissipates_what_it_should():
    """With ``frictionloss`` f_c (and width w), the joint force is ``f_c tanh(v/w)``: the energy
    lost equals its work ``∫ Σ f_c tanh(v/w) v dt + ∫ Σ d v² dt`` (an independent integral along the
    run), and the pendulum comes to rest sooner than without it. The inverse dynamics contains
    the force exactly."""
    fc = 0.3
    m, m0 = pendulum_arm(frictionloss=fc), pendulum_arm()
    w = m.friction_width
    q, v, a = jnp.array([0.2, -0.4]), jnp.array([0.7, -0.3]), jnp.array([0.1, 0.2])
    np.testing.assert_allclose(ds.inverse_dynamics(m, q, v, a) - ds.inverse_dynamics(m0, q, v, a),
                               fc * jnp.tanh(v / w), rtol=1e-13)

    def dissipation(t, q, v):
        return jnp.atleast_1d(jnp.sum(fc * jnp.tanh(v / w) * v + m.damping * v**2))

    tr = ds.simulate(ds.System(m, jnp.array([1.0, 0.0]), t1=2.0, rtol=1e-11, atol=1e-11, saveat=21,
                               integrals=dissipation))
    E = jax.vmap(lambda q, v: ds.total_energy(m, q, v))(tr.q, tr.v)
    np.testing.assert_allclose(E[0] - E, tr.integrals[:, 0], atol=1e-8)
    assert float(tr.integrals[-1, 0]) > 0.5  # a substantial share of the initial energy

    # The derivative is taken with a friction width of 0.05 rad/s. At w = 1e-3 the friction near
    # rest is a damper of f_c/w = 300 N m s/rad, stiff for the explicit solver; its step-size
    # controller (whose inputs diffrax does not differentiate) bounds the error of the state,
    # not of its sensitivity, and the reverse-mode derivative of the discrete solution is then
    # erratic: measured vs central differences 0.522, 0.522 at rtol 1e-11 but -1329 at
    # 1.3e-11 and 3.1e6 at 1e-9, with either rigid schedule (per_body, levels). At w = 0.05 it
    # agrees with central differences to 3e-8 from rtol 1e-8 to 7e-12, with both schedules.
    def speed(fc):
        s = ds.set_params(ds.System(m, jnp.array([1.0, 0.0]), t1=1.0, rtol=1e-11, atol=1e-11, saveat=2),
                          {"joint.l1.frictionloss": fc, "joint.l1.friction_width": 0.05,
                           "joint.l2.friction_width": 0.05})
        return ds.simulate(s).v[-1, 0]

    g = jax.grad(speed)(fc)
    np.testing.assert_allclose(g, (speed(fc + 1e-5) - speed(fc - 1e-5)) / 2e-5, rtol=1e-5)


def test_inputs_that_ran_to_a_wrong_success_are_refused():
    """Found by a review of the API's bad input: each of these ran and reported success."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=[0.01, 0.03, 0.03])
    b.add_actuator(Actuator("m", "motor", "joint", "arm", (1.0, 0, 0, 0, 0, 0), (-1.0, 1.0), None))
    m = b.build()
    push = ds.point_force(m, "arm", jnp.array([0.0, 0.0, 1.0]), point=(0.6, 0, 0))
    s = ds.System(m, jnp.array([0.3]), forces=[push], ctrl=jnp.array([0.5]), t1=0.4)
    # replace(tau=) kept only tau (the tip force and the controls were dropped)
    r = s.replace(tau=jnp.array([0.1]))
    assert r.loads.forces == s.loads.forces and r.loads.ctrl is s.loads.ctrl and r.loads.tau is not None
    assert s.replace(ctrl=None).loads.forces == s.loads.forces and s.replace(ctrl=None).loads.ctrl is None
    # tolerances <= 0: the fail-fast norm took three steps and called it converged
    for rtol, atol in ((0.0, 0.0), (-1e-3, 1e-8), (1e-8, -1.0)):
        with pytest.raises(ValueError, match="rtol and atol must be >= 0 and not both 0"):
            ds.System(m, rtol=rtol, atol=atol)
    ds.System(m, rtol=0.0, atol=1e-9)  # a pure absolute tolerance is a tolerance
    # output times outside [t0, t1] (a contact run returned the final state past t1, inf before t0)
    for saveat in ([0.0, 0.2, 0.6], [-0.5, 0.0, 0.2], [0.0, 0.3, 0.2], 1):
        with pytest.raises(ValueError, match="saveat"):
            ds.System(m, t1=0.4, saveat=saveat)
    # step options that diffrax or equinox refused with an internal message, or ignored
    for kw, msg in (({"max_steps": 0}, "max_steps must be >= 1"), ({"dt0": -0.01}, "dt0 must be > 0"),
                    ({"dtmax": 0.0}, "dtmax must be > 0"), ({"solver": "rk4", "dt0": 0.01, "dtmax": 1e-3}, "dtmax caps")):
        with pytest.raises(ValueError, match=msg):
            ds.System(m, **kw)
    # limits=True on a model whose only range is a ball joint's cone (kept as data): it vanished
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("head", joint="spherical", mass=1.0, com=[0, 0, 0.2], inertia=[0.01, 0.01, 0.01])
    b.add_joint_limit("head", 0.0, 0.5)
    with pytest.raises(ValueError, match="none of the model's joint ranges is on a 1-DoF"):
        ds.System(b.build(), limits=True)
    # options of adaptive solves, silently dropped by rigid-contact time stepping
    mb, _, qb, vb = ball()
    rc = ds.rigid_contact(mb, [ds.ContactPoint("ball", radius=0.1)], [ds.Plane((0, 0, 1), 0.0)], mu=0.3,
                          plane_of_motion=(0, 1, 0))
    for kw in ({"integrals": lambda t, q, v: v[:1]}, {"dtmax": 0.01}):
        with pytest.raises(ValueError, match="do.es. not apply to rigid-contact time stepping"):
            ds.System(mb, qb, vb, contact=rc, solver=ds.AccelerationLCP(1e-3), **kw)
    # samples out of time order were interpolated as if sorted by index
    with pytest.raises(ValueError, match="strictly increasing"):
        ds.TimeSeries([0.2, 0.0, 0.1], [[2.0], [0.0], [1.0]])
    # a reversed ctrlrange clamped every control to one end
    b = ds.ModelBuilder()
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=1.0, inertia=[0.01, 0.03, 0.03])
    b.add_actuator(Actuator("m", "motor", "joint", "arm", (1.0, 0, 0, 0, 0, 0), (1.0, -1.0), None))
    with pytest.raises(ValueError, match="ctrlrange .1.0, -1.0. has lower > upper"):
        ds.actuation(b.build())


def test_set_params_domains_of_a_rigid_restitution_and_a_friction_width():
    """A review found set_params refusing rigid_contact's own default restitution 0 (a plastic
    impact: the (0, 1] of a compliant law's c_r was applied) and accepting a negative friction
    width, with which a block sliding on a plane sped up from 1 to 1.6 m/s in 0.2 s."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("blk", None, joint="free", mass=1.0, inertia=(0.01,) * 3)
    m = b.build()
    q0 = jnp.array([0, 0, 0.5, 1, 0, 0, 0.0])
    rc = ds.rigid_contact(m, [ds.ContactPoint("blk")], [ds.Plane()], mu=0.3, plane_of_motion=(0.0, 1.0, 0.0))
    sr = ds.System(m, q0, contact=rc, solver=ds.VelocityLCP(1e-3), t1=0.1)
    for e in (0.0, 1.0):
        assert float(ds.get_param(ds.set_params(sr, {"contact.restitution": e}), "contact.restitution")[0]) == e
    for e in (-0.1, 1.1):
        with pytest.raises(ds.ParamError, match=r"restitution coefficient, in \[0, 1\]"):
            ds.set_params(sr, {"contact.restitution": e})
    c = ds.compliant_contact(m, [ds.ContactPoint("blk")], [ds.Plane()], normal=normal_law("linear", K=1e5, c=600.0),
                             friction=friction_law("smooth-coulomb", mu_k=0.3, width=1e-4))
    s = ds.System(m, q0, contact=c, t1=0.1)
    with pytest.raises(ds.ParamError, match="cannot be negative"):
        ds.set_params(s, {"contact.width": -1e-4})
    assert float(ds.get_param(ds.set_params(s, {"contact.width": 2e-4}), "contact.width")) == 2e-4


def test_set_params_refuses_concrete_values_outside_their_physical_domain():
    """The constructors refuse these, and set_params let them through to a run that called itself
    a success (c_r = 1.5 made a ball gain height, K < 0 let it fall through its plane); traced
    values (jit, grad, vmap) are not checked."""
    m, c, q0, v0 = ball()
    s = ds.System(m, q0, v0, contact=c, t1=0.3)
    for values, msg in (({"contact.c_r": 1.5}, "restitution coefficient, in .0, 1.."),
                        ({"contact.c_r": -1.0}, "restitution"), ({"contact.K": -1e6}, "cannot be negative"),
                        ({"body.ball.mass": -1.0}, "a body's mass, > 0"), ({"body.ball.mass": 0.0}, "mass, > 0"),
                        ({"body.ball.inertia": -jnp.eye(3)}, "positive semi-definite"),
                        ({"contact.p0.radius": -0.05}, "cannot be negative"), ({"gravity": [0, 0, jnp.nan]}, "not NaN"),
                        ({"gravity": [0, 0, jnp.inf]}, "must be finite")):
        with pytest.raises(ds.ParamError, match=msg):
            ds.set_params(s, values)
    ok = ds.set_params(s, {"contact.K": 2e5, "body.ball.com": [-0.01, 0, 0], "gravity": [0, 0, 9.81], "q0.ball": -q0})
    assert float(ok.contact.normal.K) == 2e5
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("l1", joint="revolute", axis=[0, 1, 0], mass=1.0, inertia=[0.01, 0.03, 0.03])
    with pytest.raises(ds.ParamError, match="cannot be negative"):
        ds.set_params(b.build(), {"joint.l1.damping": -5.0})  # the model form too
    assert float(ds.set_params(b.build(), {"joint.l1.damping": 0.0}).damping[0]) == 0.0
    assert float(jax.jit(lambda x: ds.set_params(s, {"body.ball.mass": x}).model.mass[0])(-1.0)) == -1.0
    with pytest.raises(TypeError, match="set_params takes a mapping"):  # was an AttributeError on .items
        ds.set_params(s, [("contact.K", 2e5)])
    with pytest.raises(ds.ParamError, match="indices count from 0"):  # was "unknown parameter"
        ds.set_params(s, {"body.ball.com[-1]": 0.1})


@pytest.fixture(scope="module")
def released_ball():
    """A point ball released at rest at z = 0 (where its potential is zero: E(t0) = 0) onto a plane
    at z = −0.2 (Hunt–Crossley, K = 1e7): the run alone (K = 1e7) and a vmap over K = (1e7, 2e7)."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("ball", joint="free", mass=1.0, inertia=(4e-4,) * 3)
    m = b.build()
    c = ds.compliant_contact(m, [ds.ContactPoint("ball")], [ds.Plane((0, 0, 1), offset=-0.2)],
                             normal=ds.normal_law("hunt-crossley", K=1e7, c_r=0.9))
    s = ds.System(m, jnp.array([0, 0, 0, 1, 0, 0, 0.0]), jnp.zeros(6), contact=c, t1=0.3, rtol=1e-9, atol=1e-9,
                  saveat=[0.0, 0.1, 0.2025, 0.204, 0.3])  # onset at 0.2019 s, 3-5 ms of contact
    tr = ds.simulate(s)
    batched = jax.jit(jax.vmap(lambda K: ds.simulate(ds.set_params(s, {"contact.K": K}))))(jnp.array([1e7, 2e7]))
    assert tr.ok and batched.ok, (tr.message, batched.message)
    return tr, batched


@pytest.mark.slow  # compiles a contact run (over 4 s)
def test_energy_balance_is_relative_to_the_balance_scale_not_to_E_t0(released_ball):
    """E(t0) = 0: the error in percent of |E(t0)| was NaN then ±inf for a drift of ~1e-10 J. It is
    now relative to S = max_t (T + |V| + Σ|W|) (≥ |E(t0)|), and the absolute drift is kept."""
    tr, _ = released_ball
    E, err = tr.energy_balance()
    assert float(E[0]) == 0.0
    assert np.all(np.isfinite(np.asarray(err))), err
    drift, S = tr.energy_drift()
    np.testing.assert_array_equal(drift, E - E[0])
    T, V, W = tr.kinetic_energy(), tr.potential_energy(), tr.contact.work
    np.testing.assert_allclose(S, jnp.max(T + jnp.abs(V) + jnp.sum(jnp.abs(W), -1)), rtol=1e-15)
    assert 1.0 < float(S) < 10.0  # m g 0.2 m fallen and more (T and |V| near impact; the contact's work)
    np.testing.assert_allclose(err, 100.0 * drift / S, rtol=1e-15, atol=0)
    assert 0.0 < float(jnp.max(jnp.abs(drift))) < 1e-7 and float(jnp.max(jnp.abs(err))) < 1e-6


@pytest.mark.slow  # compiles a contact run and its vmap (over 4 s)
def test_derived_quantities_of_a_batched_trajectory_are_each_members(released_ball):
    """They raised "Cannot broadcast to shape with fewer dimensions" on a vmapped run; now each
    member's is what the member's own trajectory gives (the batch slice; the unbatched run of the
    same K to the solver's round-off), with the batch axis in front."""
    tr, batched = released_ball
    member = [jax.tree.map(lambda x, i=i: x[i], batched) for i in range(2)]
    for name in ("body_com", "energy", "contact_forces", "energy_balance", "energy_drift"):
        out = getattr(batched, name)()
        for i in range(2):
            # bit for bit but for energy_balance's division (one ulp: vmap's program fuses it differently)
            jax.tree.map(lambda a, r, i=i: np.testing.assert_allclose(a[i], r, rtol=1e-15, atol=1e-300), out,
                         getattr(member[i], name)())
        jax.tree.map(lambda a, r: np.testing.assert_allclose(a[0], r, rtol=1e-6, atol=1e-9), out, getattr(tr, name)())
    assert batched.batch_shape == (2,) and tr.batch_shape == ()
    f_n = np.asarray(batched.contact_forces().f_n)[:, 2:4, 0]  # in contact at both times
    assert np.all(f_n > 1.0) and not np.array_equal(f_n[0], f_n[1])
    stacked = eqx.tree_at(lambda t: t.model, batched, tr.model)  # an unbatched model in a batched trajectory
    with pytest.raises(ValueError, match="call the method inside the vmap"):
        stacked.energy()
