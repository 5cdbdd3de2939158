"""Mimic joints (issue 18): ``q_mimic = multiplier · q_master + offset`` on a tiny hand-written
URDF, checked against Pinocchio's mimic joints (``buildModelFromUrdf(..., mimic=True)``:
``crba`` and ``rnea`` in the independent coordinates; its ``aba`` refuses mimic joints, so its
forward dynamics is ``M_r⁻¹ (τ_r − h_r)``), against a second route of our own (ABA on the free
tree projected by Gauss's principle), chains against the same file with the chain composed by
hand, gradients against central finite differences, and every refusal with its line.
Tolerances: agreement with a peer that solves the same equations in float64 to 1e-12
relative; central differences with step 1e-6 to 1e-7 (truncation ``h² f'''``, round-off
``ε/h``)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from io_peers import pin_maps, rel_err

import diffsim as ds
from diffsim.dynamics import (
    reduced_forward_dynamics,
    reduced_inverse_dynamics,
    reduced_mass_matrix,
)
from diffsim.dynamics.coupled import coupled_inverse_inertia
from diffsim.model import ModelError
from diffsim.model.mimic import (
    couple,
    coupling_matrix,
    expand_q,
    independent_v,
    reduce_q,
    reduce_v,
)

_LINK = '<link name="{n}"><inertial><origin xyz="{c}"/><mass value="{m}"/>' \
        '<inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="{x}" ixz="0" iyz="0"/></inertial></link>'


def _joint(name, jtype, parent, child, xyz, axis, mimic=""):
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="0.1 0.2 0.3"/><axis xyz="{axis}"/>{mimic}'
            '<limit lower="-3" upper="3" effort="10" velocity="1"/></joint>')


def tiny_urdf(chain: str = "", extra: str = "") -> str:
    """base -j1 (revolute z)- l1 -j2 (revolute y)- l2 -j3 (revolute x, mimics j2: 0.7, 0.2)- l3
    -j4 (revolute z)- l4; fingers fa (f1, prismatic y) and fb (f2, prismatic y, mimics f1: −1).
    ``chain`` is j4's mimic element; ``extra`` more XML."""
    links = "".join(_LINK.format(n=n, c=c, m=m, i=i, x=i / 10) for n, c, m, i in (
        ("base", "0 0 0", 2.0, 0.02), ("l1", "0.1 0 0.05", 1.0, 0.01), ("l2", "0.2 0.01 0", 0.5, 0.004),
        ("l3", "0.05 0 0.1", 0.4, 0.003), ("l4", "0 0.1 0", 0.3, 0.002), ("fa", "0 0.01 0.02", 0.1, 1e-4),
        ("fb", "0 -0.01 0.02", 0.1, 1e-4)))
    joints = "".join((
        _joint("j1", "revolute", "base", "l1", "0 0 0.1", "0 0 1"),
        _joint("j2", "revolute", "l1", "l2", "0.2 0 0", "0 1 0"),
        _joint("j3", "revolute", "l2", "l3", "0.3 0 0", "1 0 0", '<mimic joint="j2" multiplier="0.7" offset="0.2"/>'),
        _joint("j4", "revolute", "l3", "l4", "0 0 0.2", "0 0 1", chain),
        _joint("f1", "prismatic", "l1", "fa", "0 0.05 0", "0 1 0"),
        _joint("f2", "prismatic", "l1", "fb", "0 -0.05 0", "0 1 0", '<mimic joint="f1" multiplier="-1"/>'),
    ))
    return f'<robot name="tiny">{links}{joints}{extra}</robot>'


CHAIN = '<mimic joint="j3" multiplier="2.0" offset="-0.1"/>'  # q4 = 2 (0.7 q2 + 0.2) − 0.1
COMPOSED = '<mimic joint="j2" multiplier="1.4" offset="0.3"/>'


@pytest.fixture(scope="module")
def model():
    return ds.load_urdf(tiny_urdf(), floating_base=True)


@pytest.fixture(scope="module")
def fd_r():
    return jax.jit(reduced_forward_dynamics)


@pytest.fixture(scope="module")
def fd():
    return jax.jit(ds.forward_dynamics)


_random_q = jax.jit(ds.random_configuration)


def _state(model, seed):
    rng = np.random.default_rng(seed)
    nr = len(independent_v(model))
    q_r = reduce_q(model, _random_q(model, jax.random.PRNGKey(seed)))
    return q_r, jnp.asarray(rng.normal(size=nr)), jnp.asarray(rng.normal(size=nr))


def test_loaded_coupling(model):
    m = model.mimic
    assert m.joints == ("j3", "f2") and m.masters == ("j2", "f1")
    np.testing.assert_array_equal(m.multiplier, [0.7, -1.0])
    np.testing.assert_array_equal(m.offset, [0.2, 0.0])
    q = _random_q(model, jax.random.PRNGKey(3))
    t = model.topology
    qj = lambda n: q[t.q_start[t.joint_index(n)]]
    assert abs(qj("j3") - (0.7 * qj("j2") + 0.2)) < 1e-15 and abs(qj("f2") + qj("f1")) < 1e-15
    assert abs(ds.neutral_configuration(model)[t.q_start[t.joint_index("j3")]] - 0.2) < 1e-15
    G = coupling_matrix(model)
    assert G.shape == (model.nv, model.nv - 2)
    np.testing.assert_allclose(expand_q(model, reduce_q(model, q)), q, atol=0)


def test_matches_pinocchio_mimic(model, fd_r, tmp_path):
    """``M_r``, ``τ_r`` and ``v̇_r`` equal Pinocchio's with ``mimic=True`` to round-off, ``M_r``
    from columns of its RNEA (``rnea(q, 0, e_k) − rnea(q, 0, 0)``, cancellation ~1e-15): its
    ``crba`` (4.1.0) differs by up to 1.4e-2 on this model, where j4 moves below the mimic
    joint j3, while its RNEA and its non-mimic tree projected with ``G`` agree with ours to
    1e-15 (below, a check that does not depend on Pinocchio's mimic code)."""
    pin = pytest.importorskip("pinocchio")
    path = tmp_path / "tiny.urdf"
    path.write_text(tiny_urdf())
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer(), mimic=True)
    pd = pm.createData()
    assert pm.nv == model.nv - 2 and pm.nq == model.nq - 2
    q_pin, perm = pin_maps(model, pm)  # Pinocchio's velocity k is our v[perm[k]]
    p = np.asarray([independent_v(model).index(k) for k in perm])  # … and our v_r[p[k]]
    ours = jax.jit(lambda m, q_r, v_r, a_r: (reduced_mass_matrix(m, q_r), reduced_inverse_dynamics(m, q_r, v_r, a_r),
                                             fd_r(m, q_r, v_r, a_r, None)))  # one compile
    for seed in range(2):
        q_r, v_r, a_r = _state(model, seed)
        M_r, tau_r, vdot_r = (np.asarray(x) for x in ours(model, q_r, v_r, a_r))
        qp, vp, ap = q_pin(expand_q(model, q_r)), np.asarray(v_r)[p], np.asarray(a_r)[p]
        z = np.zeros(pm.nv)
        g = pin.rnea(pm, pd, qp, z, z)
        M = np.stack([pin.rnea(pm, pd, qp, z, e) - g for e in np.eye(pm.nv)], axis=1)  # see docstring
        assert rel_err(M_r[np.ix_(p, p)], M) < 1e-13
        tau_p = pin.rnea(pm, pd, qp, vp, ap)
        assert rel_err(tau_r[p], tau_p) < 1e-13
        a_p = np.linalg.solve(M, ap - pin.rnea(pm, pd, qp, vp, np.zeros(pm.nv)))  # τ_r = a_r here
        assert rel_err(vdot_r[p], a_p) < 1e-12
    # Pinocchio's tree without mimics, projected: Gᵀ M G
    pf = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    q_full, perm_f = pin_maps(model, pf)
    Gp = np.asarray(coupling_matrix(model))[perm_f]
    M = pin.crba(pf, pf.createData(), q_full(expand_q(model, q_r)))
    M = Gp.T @ (np.triu(M) + np.triu(M, 1).T) @ Gp
    assert rel_err(M_r, M) < 1e-14


@pytest.mark.slow  # 9 s on the loaded 2-core machine (compile-bound)
def test_full_coordinates_and_second_route(model, fd, fd_r):
    """``forward_dynamics`` in the tree's coordinates is ``G v̇_r`` (a torque on a mimic joint acts
    through ``Gᵀ``), and ABA on the free tree projected by Gauss's principle gives the same."""
    q_r, v_r, _ = _state(model, 5)
    q = expand_q(model, q_r)
    v = coupling_matrix(model) @ v_r
    tau = jnp.asarray(np.random.default_rng(5).normal(size=model.nv))
    G = coupling_matrix(model)
    a = fd(model, q, v, tau)
    np.testing.assert_allclose(a, G @ fd_r(model, q_r, v_r, G.T @ tau, None), rtol=0, atol=1e-13)
    assert rel_err(jax.jit(ds.dynamics.ABA())(model, q, v, tau), a) < 1e-12
    # the mimic entries of q and v are not read
    bad_q, bad_v = q.at[-1].add(0.3), v.at[-1].add(0.3)
    np.testing.assert_array_equal(fd(model, bad_q, bad_v, tau), a)
    # impulse response (for contact steppers): forward dynamics is affine in τ with slope G M_r⁻¹ Gᵀ
    dv = coupled_inverse_inertia(model, q, tau[:, None])[:, 0]
    np.testing.assert_allclose(dv, a - fd(model, q, v, jnp.zeros_like(tau)), rtol=0, atol=1e-11)
    # round trip through the reduced inverse dynamics
    np.testing.assert_allclose(reduced_inverse_dynamics(model, q_r, v_r, reduce_v(model, a)), G.T @ tau, atol=1e-12)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_chain_equals_composed():
    """A mimic of a mimic is the composed coupling (q4 = 2 (0.7 q2 + 0.2) − 0.1 = 1.4 q2 + 0.3)."""
    chain = ds.load_urdf(tiny_urdf(CHAIN))
    composed = ds.load_urdf(tiny_urdf(COMPOSED))
    mim = chain.mimic
    assert [[mim.joints[k] for k in lv] for lv in mim.levels] == [["j3", "f2"], ["j4"]]  # j4 after its master
    q = jnp.linspace(-1, 1, chain.nq)
    np.testing.assert_allclose(couple(chain, q), couple(composed, q), rtol=0, atol=1e-15)
    # the dynamics sees the coupling only through the coupled state and G
    np.testing.assert_allclose(coupling_matrix(chain), coupling_matrix(composed), rtol=0, atol=1e-15)


@pytest.mark.slow  # 17 s on the loaded 2-core machine (compile-bound)
def test_gradients_match_central_differences(model, fd_r):
    """``∂v̇_r/∂(q_r, v_r, τ_r, multiplier, offset)`` by reverse mode (the implicit-function
    derivative of :func:`~diffsim.dynamics.coupled.reduced_forward_dynamics`) vs central
    differences (quaternion entries of ``q_r`` perturbed in the tangent space is not needed
    here: the root is perturbed only in its position entries and the joint angles)."""
    q_r, v_r, tau_r = _state(model, 7)
    w = jnp.asarray(np.random.default_rng(8).normal(size=v_r.shape))

    def f(q_r, v_r, tau_r, mult, off):
        m = eqx.tree_at(lambda m: (m.mimic.multiplier, m.mimic.offset), model, (mult, off))
        return w @ fd_r(m, q_r, v_r, tau_r, None)

    args = (q_r, v_r, tau_r, model.mimic.multiplier, model.mimic.offset)
    grads = jax.jit(jax.grad(f, argnums=range(5)))(*args)
    f = jax.jit(f)
    h = 1e-6
    for k, (x, g) in enumerate(zip(args, grads)):
        idx = [i for i in range(x.size) if not (k == 0 and 3 <= i < 7)]  # quaternion: see docstring
        for i in idx:
            e = jnp.zeros_like(x).at[i].set(h)
            hi = list(args)
            lo = list(args)
            hi[k], lo[k] = x + e, x - e
            fd = (f(*hi) - f(*lo)) / (2 * h)
            assert abs(g[i] - fd) <= 1e-7 * max(1.0, abs(fd)), (k, i, float(g[i]), float(fd))


@pytest.mark.slow  # 14 s on the loaded 2-core machine (compile-bound)
def test_jit_vmap_float32_and_params(model, fd):
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    qs = jax.vmap(lambda k: ds.random_configuration(model, k))(keys)
    vs, taus = jnp.ones((3, model.nv)), jnp.zeros((3, model.nv))
    a = jax.jit(jax.vmap(ds.forward_dynamics, in_axes=(None, 0, 0, 0)))(model, qs, vs, taus)
    np.testing.assert_allclose(a[1], fd(model, qs[1], vs[1], taus[1]), rtol=1e-13, atol=1e-12)
    m32 = model.astype(jnp.float32)
    a32 = fd(m32, qs[0].astype(jnp.float32), vs[0].astype(jnp.float32), taus[0].astype(jnp.float32))
    assert a32.dtype == jnp.float32 and rel_err(a32, a[0]) < 1e-3
    assert ds.get_param(model, "mimic.j3.multiplier") == 0.7
    m2 = ds.set_params(model, {"mimic.j3.offset": 0.5})
    assert ds.get_param(m2, "mimic.j3.offset") == 0.5 and ds.neutral_configuration(m2)[model.topology.q_start[3]] == 0.5


@pytest.mark.slow  # 46 s on the loaded 2-core machine (the simulate compile)
def test_rollout_keeps_the_coupling_and_energy(model):
    """A frictionless mimic model under gravity: the coupling is ideal (no work), so ``T + V``
    is conserved (RK4, dt = 1 ms, 0.2 s: the drift is the integrator's, O(dt⁴)), and the mimic
    coordinates stay on their masters; ``simulate`` (adaptive, tolerance 1e-10) agrees with the
    RK4 rollout to its O(dt⁴) error."""
    m = eqx.tree_at(lambda m: m.damping, model, jnp.zeros_like(model.damping))
    q0 = ds.random_configuration(m, jax.random.PRNGKey(2))
    v0 = couple(m, q0, jnp.linspace(-0.5, 0.5, m.nv))[1]
    traj = ds.rollout(m, q0, v0, 1e-3, 200)
    q, v = traj.q, traj.v
    E = jax.vmap(lambda q, v: ds.total_energy(m, q, v))(q, v)
    assert float(jnp.abs(E - E[0]).max()) < 1e-8
    qc = jax.vmap(lambda q: couple(m, q))(q)
    assert float(jnp.abs(q - qc).max()) < 1e-12
    # diffrax (Tsit5, adaptive) over the same 0.2 s lands on the same state
    traj = ds.simulate(m, q0, v0, 0.2, rtol=1e-10, atol=1e-10)
    assert float(jnp.abs(traj.q[-1] - q[-1]).max()) < 1e-7
    assert float(jnp.abs(traj.q[-1] - couple(m, traj.q[-1])).max()) < 1e-12


# --------------------------------------------------------------------------------------
# refusals: each names the element and its line
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mimic_el, jtype, message", [
    ('<mimic joint="nope"/>', "revolute", "unknown master joint 'nope'"),
    ('<mimic joint="j4"/>', "revolute", "a joint cannot mimic itself"),
    ('<mimic joint="root"/>', "revolute", "the master joint 'root' is free"),
    ('<mimic multiplier="2"/>', "revolute", "<mimic joint=...> is required"),
    ('<mimic joint="j2" multiplier="x"/>', "revolute", "multiplier='x' is not a list of numbers"),
    ('<mimic joint="j2"/>', "planar", "a <mimic> joint must be revolute, continuous or prismatic, not planar"),
])
def test_refusals(mimic_el, jtype, message):
    src = tiny_urdf().replace(_joint("j4", "revolute", "l3", "l4", "0 0 0.2", "0 0 1"),
                              _joint("j4", jtype, "l3", "l4", "0 0 0.2", "0 0 1", mimic_el))
    src = src.replace('<robot name="tiny">', '<robot name="tiny"><link name="w"/>'
                      '<joint name="root" type="floating"><parent link="w"/><child link="base"/></joint>')
    with pytest.raises(ModelError, match="line ") as e:
        ds.load_urdf(src)
    assert message in str(e.value), str(e.value)


def test_cycle_refused():
    src = tiny_urdf('<mimic joint="j3"/>').replace('<mimic joint="j2" multiplier="0.7" offset="0.2"/>',
                                                  '<mimic joint="j4"/>')
    with pytest.raises(ModelError, match=r"cycle \(j3 -> j4 -> j3\)|cycle \(j4 -> j3 -> j4\)") as e:
        ds.load_urdf(src)
    assert "line " in str(e.value)


def test_mimic_on_fixed_joint_ignored():
    src = tiny_urdf().replace(_joint("j4", "revolute", "l3", "l4", "0 0 0.2", "0 0 1"),
                              _joint("j4", "fixed", "l3", "l4", "0 0 0.2", "0 0 1", '<mimic joint="j2"/>'))
    assert ds.load_urdf(src).mimic.joints == ("j3", "f2")


def test_massless_mimic_subtree_accepted_when_the_group_moves_mass():
    """Romeo's hands: a master whose own subtree is massless, coupled to fingers that are not."""
    src = tiny_urdf().replace('<link name="fa"><inertial><origin xyz="0 0.01 0.02"/><mass value="0.1"/>'
                              '<inertia ixx="0.0001" iyy="0.0001" izz="0.0001" ixy="1e-05" ixz="0" iyz="0"/>'
                              '</inertial></link>', '<link name="fa"/>')
    assert '<link name="fa"/>' in src
    assert ds.load_urdf(src).mimic.joints == ("j3", "f2")
    uncoupled = src.replace('<mimic joint="f1" multiplier="-1"/>', "")
    with pytest.raises(ModelError, match="zero mass"):  # without the coupling, f1 moves no mass
        ds.load_urdf(uncoupled, massless="error")
    with pytest.warns(UserWarning, match="1 joints move only massless links .*: f1;"):
        held = ds.load_urdf(uncoupled)  # by default it is held at its reference position
    assert held.topology.joint_types[held.topology.joint_index("f1")] is ds.JointType.FIXED


@pytest.mark.slow  # 12 s here (compiles the Lagrange formulations)
def test_papers_formulations_honour_the_coupling():
    """The papers' formulations on a mimic model (the tiny arm on a fixed base) give the coupled
    acceleration (Gauss's principle applied to their free-tree result), equal to the default's;
    those that refuse the model's joint types refuse it as before."""
    model = ds.load_urdf(tiny_urdf())
    q_r, v_r, _ = _state(model, 3)
    q, v = expand_q(model, q_r), coupling_matrix(model) @ v_r
    tau = jnp.asarray(np.random.default_rng(1).normal(size=model.nv))
    ref = ds.forward_dynamics(model, q, v, tau)
    ran = 0
    for strategy in (ds.formulations.LagrangeAutodiff(), ds.formulations.RecursiveLagrange(),
                     ds.formulations.BoltzmannHamel(), ds.formulations.GibbsAppell()):
        try:
            strategy.check(model)
        except (ModelError, ValueError):
            continue
        assert rel_err(jax.jit(strategy)(model, q, v, tau), ref) < 1e-12, type(strategy).__name__
        ran += 1
    assert ran >= 2


@pytest.mark.slow  # 8 s here (compiles an LCP step)
def test_lcp_impulse_keeps_the_coupling():
    """A velocity-level LCP step with an impact on a two-link arm whose second joint mimics the
    first: the impulse acts through ``G (Gᵀ M G)⁻¹ Gᵀ Wᵀ``, so after the step the mimic rate is
    still ``multiplier ×`` the master's, and the contact point leaves with ``ġ⁺ = −e ġ⁻`` (Newton)."""
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("l1", None, joint="revolute", axis=(0, 1, 0), pos=(0.0, 0.0, 0.0), mass=1.0, com=(0.2, 0, 0),
               inertia=(0.001, 0.015, 0.015))
    b.add_body("l2", "l1", joint="revolute", axis=(0, 1, 0), pos=(0.4, 0.0, 0.0), mass=0.5, com=(0.2, 0, 0),
               inertia=(0.0005, 0.007, 0.007))
    b.add_mimic("l2", "l1", multiplier=-0.5, offset=0.1)
    m = b.build()
    e = 0.5
    rc = ds.rigid_contact(m, [ds.ContactPoint("l2", (0.4, 0.0, 0.0))], [ds.Plane((0, 0, 1), -0.2)], restitution=e,
                          formulation="planar", plane_of_motion=(0.0, 1.0, 0.0))
    # θ1 such that the tip is 1e-6 m into the plane (z_tip = −0.4 sin θ1 − 0.4 sin(θ1 + θ2)), moving down
    from scipy.optimize import brentq
    z_tip = lambda t: -0.4 * np.sin(t) - 0.4 * np.sin(t + (-0.5 * t + 0.1))
    th = brentq(lambda t: z_tip(t) + 0.2 + 1e-6, 0.0, 1.2)
    q, v = jnp.array([th, -0.5 * th + 0.1]), jnp.array([2.0, -1.0])
    kin = rc.kinematics(m, q, v, drift=False)
    assert float(kin.g[0]) < 0 and float(kin.g_dot[0]) < 0
    _, v1, info = ds.simulation.lcp_step(m, rc, q, v, jnp.zeros(2), 1e-4, method="velocity")
    assert float(info["lambda_N"][0]) > 0
    np.testing.assert_allclose(float(v1[1]), -0.5 * float(v1[0]), rtol=1e-12)
    np.testing.assert_allclose(float(kin.W_N[0] @ v1), -e * float(kin.g_dot[0]), rtol=1e-12)
