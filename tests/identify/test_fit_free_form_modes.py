"""Free-form mode shapes (issue 17 §1, third bullet): the coefficients of PolynomialModes,
TrigHyperbolicModes and TabulatedModes held to the joint's kinematic boundary conditions by
``beams.SupportedModes``; validated by Rayleigh–Ritz convergence to the analytic elastic-boundary
frequencies, and fitted directly from deflection data (recovering the coefficients that made it)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim import identify as idf
from diffsim.beams import PolynomialModes, SupportedModes, TabulatedModes, TrigHyperbolicModes, elastic_modes
from diffsim.flexible import beam
from diffsim.identify.modal import modal_frequencies
from diffsim.scenarios.flexible_hub import Cycloid

# issue 17's flexible-hub link: rotational root spring, tip mass and inertia
L, RHOA, EI, K_ROOT, M_TIP, J_TIP = 1.0, 1.2, 35.0, 80.0, 0.25, 1e-3
ETA = jnp.linspace(0.0, 1.0, 7)
locked_frequencies = eqx.filter_jit(modal_frequencies)  # compiled: eager is ~10x slower


def hub_model(modes, n_quad=16):
    link = beam(L, RHOA, EI_z=EI, modes_y=modes, tip_mass=M_TIP, tip_inertia=(0.0, 0.0, J_TIP), n_quad=n_quad)
    b = ds.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body("link", None, joint="revolute", joint_name="hub", axis=(0.0, 0.0, 1.0), flex=link)
    return b.build()


def monomials(p, first):
    """``p`` modes ``eta^first … eta^(first+p−1)`` as PolynomialModes coefficients."""
    C = np.zeros((p, first + p))
    C[np.arange(p), first + np.arange(p)] = 1.0
    return C


def families(rng):
    """Random coefficients of each free-form family (2 modes, nothing zero at the root)."""
    r = lambda *s: jnp.asarray(rng.standard_normal(s))  # noqa: E731
    return {
        "polynomial": PolynomialModes(r(2, 5)),
        "polynomial_timoshenko": PolynomialModes(r(2, 5), theta_coeffs=r(2, 4)),
        "trig_hyperbolic": TrigHyperbolicModes(*(r(2) for _ in range(4)), jnp.array([1.3, 2.1]), jnp.array([0.7, 1.9]),
                                               *(r(2) for _ in range(4))),  # fmt: skip
        "tabulated": TabulatedModes(jnp.linspace(0.0, 1.0, 6), r(6, 2)),
    }


@pytest.mark.parametrize("root", ["clamped", "pinned", "free"])
@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_root_conditions_hold_exactly_and_strain_is_unchanged(root):
    """Subtracting the root's rigid-body motion: W~(0) = 0 (clamped, pinned), Theta~(0) = 0
    (clamped), curvature dTheta and shear dW − Theta unchanged (no strain added), whatever the
    coefficients; under jit and for every family."""
    for name, fam in families(np.random.default_rng(1)).items():
        sup = SupportedModes(fam, root)
        f, g = fam.fields(ETA), jax.jit(lambda m: m.fields(ETA))(sup)
        if root in ("clamped", "pinned"):
            np.testing.assert_allclose(g["W"][0], 0.0, atol=1e-15, err_msg=name)
        if root == "clamped":
            np.testing.assert_allclose(g["Theta"][0], 0.0, atol=1e-15, err_msg=name)
        if root == "free":
            for k in f:
                np.testing.assert_array_equal(g[k], f[k], err_msg=name)
        np.testing.assert_allclose(g["dTheta"], f["dTheta"], rtol=1e-14, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(g["ddW"], f["ddW"], rtol=1e-14, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(g["dW"] - g["Theta"], f["dW"] - f["Theta"], atol=1e-13, err_msg=name)
        # derivatives are those of the supported W (central differences in eta)
        h = 1e-6
        dW = (sup.fields(ETA[1:-1] + h)["W"] - sup.fields(ETA[1:-1] - h)["W"]) / (2 * h)
        np.testing.assert_allclose(g["dW"][1:-1], dW, rtol=1e-7, atol=1e-8, err_msg=name)


@pytest.mark.slow  # 7-12 s of compile: the full suite runs it, the fast subset (<= 3 min) does not
def test_ritz_with_free_form_polynomials_converges_to_the_elastic_boundary_frequencies():
    """Rayleigh–Ritz with ``p`` pinned monomials ``eta … eta^p`` plus the root spring in the
    stiffness (``boundary_stiffness``) and the tip in the mass: every hub-locked frequency is an
    upper bound of the analytic elastic-boundary one (beams.elastic_modes) and converges to it
    (measured error of f3: 2.2e-1, 5.1e-3, 2.4e-5, 3.9e-8 for p = 4, 6, 8, 10; 6, 8, 10 checked); a clamped root
    (``eta² … eta^(p+1)``) converges to the clamped beam with the same tip."""
    for root, first, k_ref, kw in (("pinned", 1, K_ROOT, {"k_rot_root": K_ROOT}), ("clamped", 2, np.inf, {})):
        ref = elastic_modes(3, L=L, EI=EI, rhoA=RHOA, k_rot_root=k_ref, tip_mass=M_TIP, tip_inertia=J_TIP,
                            parametric=True)  # fmt: skip
        w_ref = np.sort(np.asarray(ref.frequencies()))
        errs = []
        for p in (6, 8, 10) if root == "pinned" else (6, 10):  # one compile each
            w = np.sort(np.asarray(locked_frequencies(hub_model(SupportedModes(PolynomialModes(monomials(p, first)), root,
                                                                              **kw)), "link")[0]))[:3]  # fmt: skip
            assert np.all(w >= w_ref * (1 - 1e-12)), (root, p, w, w_ref)  # Ritz: from above
            errs.append((w - w_ref) / w_ref)
        errs = np.array(errs)
        assert np.all(np.diff(errs, axis=0) <= 1e-12), (root, errs)  # a larger subspace never does worse
        assert np.max(errs[-1]) < 1e-6, (root, errs[-1])


def test_names_springs_and_bad_input():
    m = hub_model(SupportedModes(PolynomialModes(monomials(2, 1)), "pinned", k_rot_root=K_ROOT), n_quad=8)
    names = [n for n in ds.param_names(m) if ".modes_y." in n]
    assert names == ["beam.link.modes_y.k_rot_root", "beam.link.modes_y.shapes.coeffs"]  # k_lat: held by the pin
    m2 = ds.set_params(m, {"beam.link.modes_y.shapes.coeffs[0, 2]": 0.5})
    assert float(ds.get_param(m2, "beam.link.modes_y.shapes.coeffs")[0, 2]) == 0.5
    assert not np.allclose(m2.flex[0].K, m.flex[0].K)  # the modal integrals follow the coefficients
    assert isinstance(idf.transforms.default_transform("beam.link.modes_y.shapes.coeffs[0, 2]", 0.5),
                      idf.transforms.Identity)  # signed  # fmt: skip
    assert isinstance(idf.transforms.default_transform("beam.link.modes_y.k_rot_root", 80.0), idf.transforms.Log)
    poly = PolynomialModes(monomials(2, 1))
    with pytest.raises(ValueError, match="root must be one of"):
        SupportedModes(poly, "hinged")
    with pytest.raises(ValueError, match="holds rigidly"):
        SupportedModes(poly, "clamped", k_rot_root=10.0)
    with pytest.raises(ValueError, match="holds rigidly"):
        SupportedModes(poly, "pinned", k_lat_root=10.0)
    with pytest.raises(ValueError, match=">= 0"):
        SupportedModes(poly, "pinned", k_rot_root=-1.0)
    with pytest.raises(ValueError, match="mode-shape family"):
        SupportedModes(np.ones((2, 3)), "pinned")
    with pytest.raises(idf.ExperimentError, match="off the link"):
        idf.observable(m, "deflection.link.y@1.5")
    with pytest.raises(idf.ExperimentError, match="not a flexible body"):
        idf.observable(m, "deflection.hub.y@0.5")


# ---------------------------------------------------------------------------------- the fit

C_TRUE = np.array([[0.0, 1.0, 0.3, -0.25]])  # one pinned mode eta + 0.3 eta² − 0.25 eta³
SENSORS = (0.2, 0.4, 0.6, 0.8, 1.0)
SIGMA = 1e-4  # m
NAMES = ["beam.link.modes_y.shapes.coeffs[0, 2]", "beam.link.modes_y.shapes.coeffs[0, 3]",
         "beam.link.modes_y.k_rot_root"]  # fmt: skip


def hub_system(C, k, rtol):
    """The flexible-hub motion (cycloid 1 rad in 0.6 s) seen for 0.5 s at 100 samples."""
    m = hub_model(SupportedModes(PolynomialModes(C), "pinned", k_rot_root=k), n_quad=8)
    pres = ds.prescribe(m, ["hub"], Cycloid(jnp.asarray(1.0), jnp.asarray(0.6)))
    return ds.System(m, prescribed=pres, t1=0.5, rtol=rtol, atol=rtol, saveat=101)


@pytest.fixture(scope="module")
def experiment():
    truth = hub_system(C_TRUE, K_ROOT, 1e-12)
    tr = ds.simulate(truth)
    ch = [f"deflection.link.y@{x:g}" for x in SENSORS]
    rng = np.random.default_rng(3)
    data = {c: np.asarray(idf.observable(truth.model, c)(tr)) + SIGMA * rng.standard_normal(tr.t.shape) for c in ch}
    return idf.Experiment(np.asarray(tr.t), data, sigma={c: SIGMA for c in ch}, name="move")


@pytest.mark.slow  # 15 s on the quiet 2-core machine, nearly all of it compiling the fit
def test_free_form_coefficients_and_root_spring_are_recovered_from_deflections(experiment):
    """One pinned polynomial mode and the root spring from 40 % (coefficients) and 37 % (spring)
    off: recovered within their 95 % intervals, the cost what the noise predicts, and the
    fitted shape still pinned exactly. (Two free-form modes fitted from this one motion are
    ill-determined — the second mode is barely excited: the Jacobian's singular values span
    4e5 … 6 — and Levenberg–Marquardt stalls from 20 % off; fit them from a richer experiment.)"""
    C0 = C_TRUE.copy()
    C0[:, 2:] *= 0.6
    res = idf.fit(hub_system(C0, 50.0, 1e-10), NAMES, experiment, rtol=1e-8, atol=1e-8, max_steps=40)
    assert res.converged, res.status
    truth = dict(zip(NAMES, (C_TRUE[0, 2], C_TRUE[0, 3], K_ROOT)))
    for n in NAMES:
        lo, hi = res.ci95[n]
        assert lo < truth[n] < hi, (n, res.value[n], res.ci95[n])
        assert res.std[n] < 0.02 * abs(truth[n]), (n, res.std[n])
    dof = res.n_samples - len(NAMES)
    assert abs(2 * res.cost - dof) < 4 * np.sqrt(2 * dof)
    fitted = ds.set_params(hub_model(SupportedModes(PolynomialModes(C0), "pinned", k_rot_root=50.0), n_quad=8),
                           {n: res.value[n] for n in NAMES})  # fmt: skip
    assert float(fitted.flex[0].spec.deflection(jnp.zeros(()))[1, 0]) == 0.0


@pytest.mark.slow  # 8 s: compiles the residuals and their forward-mode Jacobian
def test_objective_gradient_matches_central_differences(experiment):
    """∂(½ rᵀr)/∂θ = Jᵀ r from the forward-mode Jacobian through the adaptive solver equals central
    differences of the cost in every fitted coordinate (coefficients: identity, spring: log)."""
    C0 = C_TRUE.copy()
    C0[:, 2:] *= 0.8
    est = idf.make_estimator(hub_system(C0, 70.0, 1e-11), NAMES, experiment)
    th = est.theta0
    r, J = est.jacobian(th)
    g = np.asarray(J.T @ r)
    cost = jax.jit(lambda t: 0.5 * jnp.sum(est.residuals(t, est.data) ** 2))
    for k in range(th.size):
        h = 1e-5 * max(1.0, abs(float(th[k])))
        e = jnp.zeros_like(th).at[k].set(h)
        fd = (float(cost(th + e)) - float(cost(th - e))) / (2 * h)
        np.testing.assert_allclose(g[k], fd, rtol=2e-5, err_msg=NAMES[k])
