"""Flexible links in the tree: agreement of the formulations, gradients, the mixed problem, and
the errors for bad input (frequencies, energy and Newmark: test_flexible_vibration.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.dynamics.sections import relative_twist_autodiff, section_motion
from diffsim.beams import PolynomialModes, euler_bernoulli_modes
from diffsim.flexible import (
    BeamError,
    articulated_flexible,
    beam,
    forward_dynamics_composite,
    forward_dynamics_flexible,
    forward_dynamics_mm,
    inverse_dynamics_flexible,
    mass_matrix_flexible,
)
from diffsim.formulations import forward_dynamics_lagrange
from flex_models import _energy_arm, _link, _mixed_tree, _poly, _rel, _state


@pytest.mark.slow
def test_sweep_mass_matrix_and_lagrange_agree():
    """O(n) sweep == mass-matrix form == Lagrange by autodiff, on a planar-based tree of
    flexible (bending in two planes, torsion, tip mass, geometric stiffening) and rigid links,
    with gravity, joint/modal damping, armature and random τ. (Without stiffening:
    tests/test_gibbs_appell.py and tests/test_recursive_lagrange.py.)"""
    m = _mixed_tree("planar", True)
    fns = jax.jit(lambda q, v, u: (articulated_flexible(m, q, v, u)[0], forward_dynamics_mm(m, q, v, u),
                                   forward_dynamics_lagrange(m, q, v, u)))
    for seed in range(2):
        a1, a2, a3 = fns(*_state(m, seed))
        assert _rel(a2, a1) < 1e-10
        assert _rel(a3, a1) < 1e-10
    q, v, u = _state(m, 5)
    a = fns(q, v, u)[0]
    # compiled, as the public entry points are (op by op, each primitive is a program of its own)
    np.testing.assert_allclose(jax.jit(inverse_dynamics_flexible)(m, q, v, a), u, atol=1e-10 * float(jnp.max(jnp.abs(u))))
    M = jax.jit(mass_matrix_flexible)(m, q)
    np.testing.assert_allclose(M, M.T, atol=1e-13)
    assert float(jnp.min(jnp.linalg.eigvalsh(M))) > 0


@pytest.mark.slow
def test_composite_mass_matrix_form_equals_sweep():
    """The mass-matrix form batched over links (ds.forward_dynamics' choice below
    COMPOSITE_MAX_NV coordinates) equals the O(n) sweep to round-off: body wrenches f_ext, rigid
    children of flexible links, armature, damping, stiffening (the mixed tree), and links of
    different section data — one batched group each — with a rigid link between them. (Free
    base: the next test, through ds.forward_dynamics.)"""
    m = _mixed_tree("planar", True)
    b = ds.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("a", None, joint="planar", flex=_link(False, modes_z=None, modes_torsion=None, EI_y=None, GJ=None))
    b.add_body("r", "a", joint="revolute", axis=(0, 0, 1), mass=0.4, com=(0.2, 0, 0), inertia=(0.01, 0.01, 0.02))
    b.add_body("c", "r", joint="revolute", axis=(0, 0, 1), pos=(0.4, 0, 0),
               flex=beam(0.8, 1.5, EI_z=20.0, modes_y=_poly([2, 3, 4]), n_quad=7, stiffening=False))
    m2 = b.build()
    fns = jax.jit(lambda m, q, v, u, f: (forward_dynamics_composite(m, q, v, u, f), forward_dynamics_flexible(m, q, v, u, f)))
    for mm, seed in ((m, 4), (m2, 6)):
        q, v, u = _state(mm, seed)
        f_ext = jax.random.normal(jax.random.PRNGKey(seed), (mm.nb, 6))
        a1, a2 = fns(mm, q, v, u, f_ext)
        assert _rel(a1, a2) < 1e-11


@pytest.mark.slow
def test_free_floating_flexible_tree_sweep_vs_mass_matrix():
    """Free base (quaternion joint) with flexible children: ds.forward_dynamics (the batched
    mass-matrix form at this size) == the mass-matrix form from the inverse dynamics, and the
    public ds.mass_matrix / ds.inverse_dynamics dispatch to the flexible path."""
    m = _mixed_tree("free")
    q, v, u = _state(m, 3)
    a1 = ds.forward_dynamics(m, q, v, u)
    a2 = jax.jit(forward_dynamics_mm)(m, q, v, u)
    assert _rel(a2, a1) < 1e-10
    a3 = jnp.linalg.solve(ds.mass_matrix(m, q), u - ds.inverse_dynamics(m, q, v, jnp.zeros(m.nv)))
    assert _rel(a3, a1) < 1e-10


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_closed_form_section_kinematics_match_autodiff():
    """``section_motion``'s closed forms (right Jacobian of SO(3), Ṡδ̇ with foreshortening) equal
    the derivatives of ``section_pose`` by autodiff, including at the undeformed state."""
    k = jax.random.split(jax.random.PRNGKey(3), 6)
    ng, ne = 5, 4
    x = jax.random.uniform(k[0], (ng,))
    pd, pr = jax.random.normal(k[1], (ng, 3, ne)), jax.random.normal(k[2], (ng, 3, ne))
    G = jax.random.normal(k[3], (ng, ne, ne))
    G = G + jnp.swapaxes(G, -1, -2)
    for scale in (0.3, 1e-5, 0.0):
        d, dd = scale * jax.random.normal(k[4], (ne,)), jax.random.normal(k[5], (ne,))
        _, S, Sd = section_motion(x, pd, pr, G, d, dd)
        S_ref = jax.vmap(lambda e: relative_twist_autodiff(x, pd, pr, G, d, e), out_axes=-1)(jnp.eye(ne))
        Sd_ref = jax.jvp(lambda z: relative_twist_autodiff(x, pd, pr, G, z, dd), (d,), (dd,))[1]
        np.testing.assert_allclose(S, S_ref, atol=1e-13)
        np.testing.assert_allclose(Sd, Sd_ref, atol=1e-12)


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_rigid_tree_through_the_flexible_sweep_matches_aba():
    from diffsim.model.random import random_tree

    m = random_tree(7, n_bodies=5, joint_types=("revolute", "prismatic", "spherical"), base="free", damping=True)
    q, v, u = _state(m, 1)
    assert _rel(jax.jit(articulated_flexible)(m, q, v, u)[0], ds.forward_dynamics(m, q, v, u)) < 1e-12


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
def test_mixed_problem_torques_and_consistency():
    """Prescribing a joint's free-motion acceleration needs no driving torque beyond the
    applied one; prescribing another acceleration returns the inverse-dynamics torque minus the
    applied load, and the other joints follow."""
    m = _mixed_tree("revolute")
    q, v, u = _state(m, 2)
    a, _ = articulated_flexible(m, q, v, u)
    nvr = m.topology.nv_rigid
    i = m.topology.joint_index("l2")
    vi = m.topology.v_start[i]
    _, tau = articulated_flexible(m, q, v, u, prescribed=(i,), qdd_prescribed=a[:nvr])
    assert abs(float(tau[vi])) < 1e-10 * float(jnp.max(jnp.abs(u)))
    qdd = a[:nvr].at[vi].add(1.7)
    a2, tau2 = articulated_flexible(m, q, v, u, prescribed=(i,), qdd_prescribed=qdd)
    assert float(a2[vi]) == pytest.approx(float(qdd[vi]))
    full = u.at[vi].add(tau2[vi])
    np.testing.assert_allclose(inverse_dynamics_flexible(m, q, v, a2), full, atol=1e-10)


@pytest.mark.slow
def test_prescribed_simulation_with_joint_friction_and_driving_torques():
    """Joint 1 prescribed, joint 2 free, smoothed Coulomb + viscous friction on both: the
    trajectory holds the imposed motion exactly, and the driving torques plus the friction
    reproduce the imposed acceleration through the free dynamics."""
    m = _energy_arm(False)
    fric = ds.joint_friction(m, coulomb=0.3, viscous=0.1, width=1e-2)
    pres = ds.prescribe(m, ["l1"], lambda t: 0.5 * jnp.sin(2.0 * t)[None])
    tr = ds.simulate(m, jnp.zeros(m.nq), jnp.zeros(m.nv).at[0].set(1.0), 1.0, tau=fric, prescribed=pres, saveat=11,
                     rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tr.q[:, 0], 0.5 * np.sin(2.0 * np.asarray(tr.t)), atol=1e-12)
    drive = ds.joint_torques(tr, pres, tau=fric)
    assert drive.shape == (11, m.topology.nv_rigid)
    total = jax.vmap(lambda t, q, v, d: fric(t, q, v).at[0].add(d[0]))(tr.t, tr.q, tr.v, drive)
    acc = jax.vmap(lambda q, v, u: ds.forward_dynamics(m, q, v, u))(tr.q, tr.v, total)
    np.testing.assert_allclose(acc[:, 0], -2.0 * np.sin(2.0 * np.asarray(tr.t)), atol=1e-9)
    no_drive = jax.vmap(lambda t, q, v: ds.forward_dynamics(m, q, v, fric(t, q, v)))(tr.t, tr.q, tr.v)
    assert not np.allclose(no_drive[:, 0], acc[:, 0])
    with pytest.raises(ValueError, match="only revolute and prismatic"):
        ds.prescribe(_mixed_tree("free"), ["l1"], lambda t: t)
    with pytest.raises(ValueError, match="width must be positive"):
        ds.joint_friction(m, coulomb=0.3, width=0.0)


def _tip_loss(E, I, gamma, tip, coef, t1=0.3):
    modes = PolynomialModes(coef[None])  # one mode: its shape (not just its span) moves with coef
    fb = beam(1.0, 1.2, EI_z=E * I, modes_y=modes, air_damping=gamma, kelvin_voigt=1e-3 * E, I_z=I, tip_mass=tip,
              n_quad=8)
    b = ds.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("arm", None, joint="revolute", axis=(0, 0, 1), flex=fb)
    m = b.build()
    tr = ds.simulate(m, jnp.zeros(m.nq), jnp.zeros(m.nv).at[0].set(2.0), t1, tau=jnp.zeros(m.nv).at[0].set(1.0),
                     solver="rk4", dt0=t1 / 100, saveat=jnp.array([t1]))
    d = tr.q[-1, 1:]
    return m.flex[0].end_phi_d[1] @ d  # tip deflection (sensitive to every parameter)


@pytest.mark.slow
def test_gradients_match_finite_differences():
    """d(loss)/d(E, I, γ, tip mass, mode-shape coefficients) by reverse mode through simulate
    vs five-point central differences (relative step 1e-4: truncation O(h⁴) ~1e-12, while the
    round-off of a ~1e-3 m deflection would already reach 1e-6 at a step of 1e-6). Fixed-step RK4, so that both differentiate the
    same discrete map (an adaptive solver's step choices move with the parameters, which the
    finite differences see and the exact derivative of the solution does not)."""
    x0 = (jnp.asarray(70.0), jnp.asarray(1.0), jnp.asarray(0.05), jnp.asarray(0.2), jnp.array([0.0, 0.0, 1.0, 0.5]))
    f = jax.jit(_tip_loss)
    g = jax.jit(jax.grad(_tip_loss, argnums=(0, 1, 2, 3, 4)))(*x0)
    flat = [(k, None) for k in range(4)] + [(4, 3)]
    for k, j in flat:
        base = x0[k] if j is None else x0[k][j]
        h = 1e-4 * max(abs(float(base)), 1e-2)

        def shifted(s):
            xs = list(x0)
            xs[k] = xs[k] + s if j is None else xs[k].at[j].add(s)
            return f(*xs)

        fd = (8 * (shifted(h) - shifted(-h)) - (shifted(2 * h) - shifted(-2 * h))) / (12 * h)
        gk = g[k] if j is None else g[k][j]
        assert abs(float(gk) - float(fd)) <= 1e-6 * max(abs(float(fd)), 1e-8), (k, j, float(gk), float(fd))


def test_bad_input_errors():
    with pytest.raises(BeamError, match="at least one mode family"):
        beam(1.0, 1.0)
    with pytest.raises(BeamError, match="needs EI_z"):
        beam(1.0, 1.0, modes_y=_poly([2]))
    with pytest.raises(BeamError, match="mu must be positive"):
        beam(1.0, -1.0, EI_z=1.0, modes_y=_poly([2]))
    with pytest.raises(BeamError, match="stiffness"):
        beam(1.0, 1.0, EI_z=0.0, modes_y=_poly([2]))
    with pytest.raises(BeamError, match="needs the second moment"):
        beam(1.0, 1.0, EI_z=1.0, modes_y=_poly([2]), kelvin_voigt=3.0)
    with pytest.raises(ds.ModelError, match="flex must be"):
        ds.ModelBuilder().add_body("a", joint="revolute", flex="beam")
    with pytest.raises(ValueError, match="zero modes"):
        euler_bernoulli_modes("cf", 0)
    from diffsim.beams import check_boundary_conditions

    with pytest.raises(ValueError, match="clamped"):
        check_boundary_conditions(_poly([1]), "cf")  # W = η has slope at a clamped root


def _modal_frequencies(fb):
    """sqrt of the generalised eigenvalues of the link's K against its modal mass (sections + tip)."""
    M = np.einsum("g,gki,gkj->ij", fb.m, fb.phi_d, fb.phi_d) + np.einsum("gki,gkl,glj->ij", fb.phi_r, fb.J, fb.phi_r)
    L = np.linalg.cholesky(M)
    Li = np.linalg.inv(L)
    return np.sqrt(np.sort(np.linalg.eigvalsh(Li @ np.asarray(fb.K) @ Li.T)))


def test_quadrature_resolves_the_modes_or_is_refused():
    """The default Gauss rule resolves many modes (16 cantilever modes: the former fixed 24 points
    put the frequencies off by 1.8e-3; now 37, to round-off); a given n_quad that does not is
    refused with the rule that would (24 points for 16 modes; 3 points for 6 modes made the modal
    mass singular), checked on the host before anything is compiled."""
    from diffsim.beams import euler_bernoulli_roots

    fb = beam(1.0, 1.0, EI_z=1.0, modes_y=euler_bernoulli_modes("cf", 16))
    assert fb.spec.n_quad == 37
    np.testing.assert_allclose(_modal_frequencies(fb), euler_bernoulli_roots("cf", 16) ** 2, rtol=1e-10)
    with pytest.raises(BeamError, match=r"n_quad=24 Gauss points do not resolve.*give n_quad=37"):
        beam(1.0, 1.0, EI_z=1.0, modes_y=euler_bernoulli_modes("cf", 16), n_quad=24)
    with pytest.raises(BeamError, match=r"n_quad=3 Gauss points do not resolve.*give n_quad=\d+"):
        beam(1.0, 1.0, EI_z=1.0, modes_y=euler_bernoulli_modes("cf", 6), n_quad=3)
    with pytest.raises(BeamError, match="n_quad must be a positive integer"):
        beam(1.0, 1.0, EI_z=1.0, modes_y=_poly([2]), n_quad=0)


def test_timoshenko_shapes_need_their_shear_stiffness():
    """Shapes with shear strain (Theta ≠ dW) without kAG would lose their shear energy (mode 2
    of this section: 4 % off): refused; with kAG_y the link is the Timoshenko beam."""
    from diffsim.beams import timoshenko_frequencies, timoshenko_modes

    sec = dict(E=2.1e11, G=8.1e10, k=5 / 6, A=2.5e-3, I=5.208e-7, rho=7800.0, L=0.5)
    sh = timoshenko_modes("cf", 2, **sec, normalize="mass")
    kw = dict(EI_z=sec["E"] * sec["I"], modes_y=sh, rotary_inertia=(0.0, 0.0, sec["rho"] * sec["I"]))
    with pytest.raises(BeamError, match="modes_y have shear strain.*give kAG_y"):
        beam(0.5, sec["rho"] * sec["A"], **kw)
    with pytest.raises(BeamError, match="modes_z have shear strain.*give kAG_z"):
        beam(0.5, sec["rho"] * sec["A"], EI_y=kw["EI_z"], modes_z=sh)
    fb = beam(0.5, sec["rho"] * sec["A"], kAG_y=sec["k"] * sec["A"] * sec["G"], **kw)
    np.testing.assert_allclose(_modal_frequencies(fb), timoshenko_frequencies("cf", 2, **sec), rtol=1e-8)


def test_inertia_and_stiffness_data_are_checked():
    """Inertias of the documented shape (J_x, J_y, J_z), non-negative; stiffness data without
    their mode family refused rather than ignored."""
    sh = _poly([2])
    with pytest.raises(BeamError, match="rotary_inertia must be non-negative"):
        beam(1.0, 1.0, EI_z=1.0, modes_y=sh, rotary_inertia=(0.0, 0.0, -1e-3))
    for arg, value in (("GJ", 3.0), ("EA", 3.0), ("EI_y", 2.0), ("kAG_y", 5.0), ("kAG_z", 5.0)):
        fam = {"GJ": "modes_torsion", "EA": "modes_axial", "EI_y": "modes_z", "kAG_y": "modes_y", "kAG_z": "modes_z"}
        kw = dict(EI_z=1.0, modes_y=sh) if arg != "kAG_y" else dict(EI_y=1.0, modes_z=sh)
        with pytest.raises(BeamError, match=f"{arg} given but no {fam[arg]}"):
            beam(1.0, 1.0, **kw, **{arg: value})
    for arg, value, shape in (("tip_inertia", 1e-3, r"\(\)"), ("rotary_inertia", 1e-3, r"\(\)"),
                              ("tip_inertia", np.eye(3), r"\(3, 3\)"), ("tip_inertia", (1.0, 2.0), r"\(2,\)")):  # fmt: skip
        with pytest.raises(BeamError, match=f"{arg} must be the three values \\(J_x, J_y, J_z\\).*got shape {shape}"):
            beam(1.0, 1.0, EI_z=1.0, modes_y=sh, **{arg: value})
    with pytest.raises(BeamError, match="tip_inertia must be non-negative"):
        beam(1.0, 1.0, EI_z=1.0, modes_y=sh, tip_inertia=(0.0, -1.0, 0.0))


@pytest.mark.slow
def test_float32_matches_float64():
    """The same flexible sweep in float32: accelerations within 1e-3 relative of float64
    (measured 1.6e-5…2.9e-5: the modal stiffness forces K δ amplify the round-off of δ)."""
    m = _mixed_tree("planar", True)
    q, v, u = _state(m, 0)
    a64 = ds.forward_dynamics(m, q, v, u)
    f32 = lambda x: x.astype(jnp.float32)  # noqa: E731
    a32 = ds.forward_dynamics(m.astype(jnp.float32), f32(q), f32(v), f32(u))
    assert a32.dtype == jnp.float32
    assert _rel(a32.astype(jnp.float64), a64) < 1e-3


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_kinematics_of_flexible_trees_and_clear_errors():
    """forward_kinematics places children at the deformed end; quantities not yet implemented
    for flexible links refuse clearly instead of returning rigid-tree numbers."""
    m = _mixed_tree("revolute")
    q = ds.random_configuration(m, jax.random.PRNGKey(4), 0.3)
    k = ds.forward_kinematics(m, q)
    from diffsim.flexible import frames

    He = frames(m, q)[1]
    i2 = m.topology.body_index("l2")
    # l3 sits on l2's deformed end frame (pos 0, prismatic along x)
    l3 = m.topology.body_index("l3")
    d = q[m.topology.q_slice(l3)][0]
    np.testing.assert_allclose(k.p[l3], He[i2, :3, 3] + He[i2, :3, 0] * d, atol=1e-12)
    for fn in (ds.spatial_momentum, ds.body_velocities):
        with pytest.raises(NotImplementedError, match="flexible links"):
            fn(m, q, jnp.zeros(m.nv))
