"""Enforced joint limits (diffsim.contact.limits): a pendulum falling onto its limit, checked
against MuJoCo's own run of the same MJCF file, with the difference between the two limit models
accounted for by a second implementation of each (a 1-DoF pendulum integrated here), the energy
bookkeeping, the gradients, and the switch."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.contact import ContactError

mujoco = pytest.importorskip("mujoco")

# a uniform rod of 0.5 m, 1 kg, hinged at one end (axis y), released horizontal; gravity turns it
# towards +q, and the range stops it at 30°
L, MASS, G, HI = 0.5, 1.0, 9.81, np.deg2rad(30.0)
I_C = MASS * L**2 / 12
XML = f"""<mujoco><option timestep="1e-5" integrator="RK4" gravity="0 0 -{G}"/>
<worldbody><body name="rod"><joint name="hinge" type="hinge" axis="0 1 0" range="-90 30"/>
<inertial pos="{L / 2} 0 0" mass="{MASS}" diaginertia="1e-4 {I_C!r} {I_C!r}"/></body>
<body name="ball" pos="0 1 0"><joint name="ball" type="ball" range="0 40"/>
<inertial pos="0 0 -0.1" mass="1" diaginertia="0.01 0.01 0.01"/></body></worldbody></mujoco>"""
I = I_C + MASS * (L / 2) ** 2  # about the hinge
TAU = 0.02  # MuJoCo's default solref time constant = the default limit's
T1, EVERY = 0.6, 100  # 0.6 s, saved every 100 MuJoCo steps (1 ms)
DMIN, DMAX, WIDTH = 0.9, 0.95, 0.001  # MuJoCo's default solimp (midpoint 0.5, power 2)


def torque_g(th):
    """Gravity torque about the hinge [N m] (towards +q)."""
    return MASS * G * (L / 2) * np.cos(th)


def a_ours(th, w):
    """diffsim's default limit: I θ̈ = τ_g − max(K Δ + c Δ̇, 0), K = I/τ², c = 2I/τ (Δ ≥ 0: the
    located onset is at Δ = 0, in contact)."""
    D = th - HI
    f = max(I / TAU**2 * D + 2 * I / TAU * w, 0.0) if D >= 0 else 0.0
    return (torque_g(th) - f) / I


def impedance(r):
    """MuJoCo's solimp sigmoid d(r) (midpoint 0.5, power 2)."""
    x = min(abs(r) / WIDTH, 1.0)
    y = 2 * x**2 if x <= 0.5 else 1 - 2 * (1 - x) ** 2
    return DMIN + y * (DMAX - DMIN)


def a_mujoco(th, w):
    """MuJoCo's soft limit (its documented model): in constraint space (r = q_hi − q, ṙ = −q̇)
    a₁ = (1 − d) a₀ + d a_ref, a_ref = −b ṙ − k r, b = 2/(d_max τ), k = d(r)/(d_max² τ²), and a
    unilateral force (a₁ ≥ a₀)."""
    a0 = torque_g(th) / I
    r = HI - th
    if r >= 0:
        return a0
    d = impedance(r)
    a1 = (1 - d) * -a0 + d * (-2 / (DMAX * TAU) * -w - d / (DMAX**2 * TAU**2) * r)
    return -max(a1, -a0)


def _rk4_step(f, s, h):
    F = lambda s: np.array([s[1], f(s[0], s[1])])  # noqa: E731
    k1 = F(s)
    k2 = F(s + h / 2 * k1)
    k3 = F(s + h / 2 * k2)
    k4 = F(s + h * k3)
    return s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def pendulum(f, dt, n, locate_onset: bool):
    """The rod integrated with RK4 at ``dt`` (θ saved every EVERY steps); ``locate_onset``: the
    step that crosses the limit is split at the crossing (bisection to round-off), as diffsim's
    event does; otherwise the limit switches on at a step boundary, as in MuJoCo."""
    s, out = np.zeros(2), [0.0]
    for k in range(n):
        nxt = _rk4_step(f, s, dt)
        if locate_onset and s[0] < HI <= nxt[0]:
            free = lambda th, w: torque_g(th) / I  # noqa: E731
            lo, hi = 0.0, dt
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if _rk4_step(free, s, mid)[0] < HI else (lo, mid)
            s_on = _rk4_step(free, s, hi)
            nxt = _rk4_step(f, s_on, dt - hi)
        s = nxt
        if (k + 1) % EVERY == 0:
            out.append(s[0])
    return np.asarray(out)


@pytest.fixture(scope="module")
def runs():
    m = mujoco.MjModel.from_xml_string(XML)
    d = mujoco.MjData(m)
    n = int(round(T1 / m.opt.timestep))
    q_mj = [0.0]
    for k in range(n):
        mujoco.mj_step(m, d)
        if (k + 1) % EVERY == 0:
            q_mj.append(d.qpos[0])
    t = np.arange(len(q_mj)) * m.opt.timestep * EVERY
    model = ds.load_mjcf(XML)
    sys = ds.System(model, t1=T1, saveat=jnp.asarray(t), rtol=1e-11, atol=1e-11)
    tr = ds.simulate(sys)
    return dict(t=t, mj=np.asarray(q_mj), tr=tr, sys=sys, model=model, n=n)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_pendulum_falls_onto_its_limit_as_mujoco_does_up_to_the_limit_models_difference(runs):
    """Before the impact the two agree to the integrators' accuracy; after it each follows its
    own limit model — diffsim's to 1e-7 rad of the 1-DoF pendulum integrated here with the onset
    located, MuJoCo's to 1e-10 rad of its documented soft-constraint model on its own step grid —
    and the 1e-2 rad between them is that difference: MuJoCo passes (1 − d) of the free
    acceleration through the limit (the rod rests 0.65 mrad inside it, where the impedance ramp
    gives d = 0.94), diffsim's spring carries the whole gravity torque (10.1 mrad = τ_g/K)."""
    t, mj, tr = runs["t"], runs["mj"], runs["tr"]
    q = np.asarray(tr.q[:, 0])
    assert int(tr.status) == 0 and int(tr.contact.n_events) == 1  # onset, then resting (critically damped)
    t_on = float(tr.contact.event_t[0])
    flight = t < t_on - 1e-3
    assert np.max(np.abs(q[flight] - mj[flight])) < 1e-8
    ref_ours = pendulum(a_ours, 1e-5, runs["n"], locate_onset=True)
    ref_mj = pendulum(a_mujoco, 1e-5, runs["n"], locate_onset=False)
    assert np.max(np.abs(q - ref_ours)) < 1e-7
    assert np.max(np.abs(mj - ref_mj)) < 1e-10
    assert 5e-3 < np.max(np.abs(q - mj)) < 2e-2  # the models differ; each matches its own
    # resting on the limit (0.4 s = 20 τ after the impact: settled)
    rest_ours, r = 0.0, 0.0
    for _ in range(200):  # rests: K Δ = τ_g(q_hi + Δ) here; (1 − d) a₀ = d k r in MuJoCo (fixed points)
        rest_ours = torque_g(HI + rest_ours) / (I / TAU**2)
        d = impedance(r)
        r = (1 - d) * torque_g(HI + r) / I * DMAX**2 * TAU**2 / d**2
    np.testing.assert_allclose(q[-1] - HI, rest_ours, rtol=1e-6)
    np.testing.assert_allclose(mj[-1] - HI, r, rtol=1e-4)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_energy_bookkeeping_closes_and_the_limit_force_is_reported(runs):
    """T + V − W (the limit's work is the ``normal`` work) is constant to the solver tolerance;
    the limit pairs are in the contact record (hinge lower, upper; the ball joint's cone stays data)."""
    tr = runs["tr"]
    E = np.asarray(tr.energy() - jnp.sum(tr.contact.work, axis=-1))
    drop = MASS * G * L / 2 * np.sin(HI)
    assert np.max(np.abs(E - E[0])) < 1e-8 * drop
    W = np.asarray(tr.contact.work[-1])
    assert W[1] < -0.5 * drop  # the limit took the kinetic energy of the fall
    cf = tr.contact_forces()
    assert cf.f_n.shape == (len(tr.t), 2)
    np.testing.assert_allclose(cf.f_n[-1, 1], torque_g(q_end := float(tr.q[-1, 0])), rtol=1e-6)
    assert float(jnp.max(jnp.abs(cf.f_n[:, 0]))) == 0.0 and q_end > HI
    assert runs["sys"].limits.geometry.pair_names == ("hinge/lower", "hinge/upper")


@pytest.mark.slow  # reverse mode through the event loop: one long compile
def test_gradients_through_the_impact_match_central_differences(runs):
    """∂θ(t)/∂(K, c, q_hi) during the contact, reverse mode through the located onset event,
    against central differences."""
    sys = runs["sys"].replace(t1=0.3, saveat=jnp.asarray([0.22, 0.3]), rtol=1e-12, atol=1e-12)
    K0, c0 = sys.limits.normal.K[1], sys.limits.normal.c[1]
    x0 = jnp.asarray([float(K0), float(c0), HI])

    def f(x):
        s = ds.set_params(sys, {"limits.K[1]": x[0], "limits.c[1]": x[1], "limits.hinge.upper": x[2]})
        return ds.simulate(s).q[:, 0]

    J = np.asarray(jax.jit(jax.jacrev(f))(x0))
    fj = jax.jit(f)
    for i, h in enumerate([1e-3 * float(K0), 1e-3 * float(c0), 1e-6]):
        e = np.zeros(3)
        e[i] = h
        fd = (np.asarray(fj(x0 + e)) - np.asarray(fj(x0 - e))) / (2 * h)
        np.testing.assert_allclose(J[:, i], fd, rtol=2e-5, atol=1e-9 * np.max(np.abs(fd)))


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_switch_law_and_bad_input(runs):
    model = runs["model"]
    free = ds.simulate(ds.System(model, t1=0.3, limits=False, saveat=31))
    assert free.contact is None and float(jnp.max(free.q[:, 0])) > HI + 0.1  # swings through
    hc = ds.joint_limits(model, law=ds.normal_law("hunt-crossley", K=2e3, c_r=0.5, n=1.0))
    s = ds.System(model, t1=0.3, limits=hc, saveat=31)
    assert "limits.c_r" in ds.param_names(s) and s.limits.n_pairs == 2
    with pytest.raises(ContactError, match="no joint range"):
        ds.joint_limits(model, joints=["nope"])
    with pytest.raises(ContactError, match="1-DoF"):
        ds.joint_limits(model, joints=["ball"])
    with pytest.raises(TypeError, match="limits must be"):
        ds.System(model, limits="yes")
    with pytest.raises(ValueError, match="Newmark"):
        ds.System(model, limits=True, solver="newmark", dt0=1e-3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = ds.System(model, solver="newmark", dt0=1e-3)
    assert s.limits is None and any("not enforced" in str(x.message) for x in w)
    bare = ds.load_mjcf(XML.replace('range="-90 30"', ""))
    assert ds.System(bare).limits is None
    with pytest.raises(ValueError, match="no joint ranges"):
        ds.System(ds.load_mjcf(XML.replace('range="-90 30"', "").replace(' range="0 40"', "")), limits=True)
