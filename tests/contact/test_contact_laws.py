"""Contact force laws against their formulas (the contact issue's first piece)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from diffsim.contact import (
    Ambrosio,
    BengisuAkay,
    Coulomb,
    LuGre,
    SmoothCoulomb,
    Stribeck,
    Threlfall,
    friction_law,
    normal_law,
)

CHI = {  # χ′(c_r) from the papers (independent of the implementation's expressions)
    "hertz": lambda c: 0.0,
    "hunt-crossley": lambda c: 3 * (1 - c) / 2,
    "lankarani-nikravesh": lambda c: 3 * (1 - c**2) / 4,
    "gonthier": lambda c: (1 - c**2) / c,
    "flores": lambda c: 8 * (1 - c) / (5 * c),
    "hu-guo": lambda c: 3 * (1 - c) / (2 * c),
}


@pytest.mark.parametrize("name", sorted(CHI))
def test_normal_laws_match_their_formula_and_never_pull(name):
    K, cr, n, dimp = 2.0e7, 0.6, 1.5, 1.3
    law = normal_law(name, K=K, c_r=cr)
    for d, dd in ((1e-4, 0.7), (3e-4, -0.2), (2e-4, 0.0)):
        expect = K * d**n * (1 + CHI[name](cr) * dd / dimp)
        assert float(law(d, dd, dimp)) == pytest.approx(max(expect, 0.0), rel=1e-12)
    assert float(law(-1e-4, 0.5, dimp)) == 0.0  # no contact
    assert float(law(1e-6, -50.0, dimp)) == (0.0 if name != "hertz" else pytest.approx(K * 1e-9))  # no adhesion


def test_linear_spring_damper_and_smoothing_converges_to_the_exact_law():
    lin = normal_law("linear", K=1e5, c=30.0)
    assert float(lin(1e-3, 0.2)) == pytest.approx(1e5 * 1e-3 + 30 * 0.2)
    assert float(lin(1e-3, -10.0)) == 0.0
    exact = normal_law("hu-guo", K=1e6, c_r=0.8)
    for w, tol in ((1e-6, 5e-2), (1e-8, 5e-4)):
        smooth = normal_law("hu-guo", K=1e6, c_r=0.8, smooth=w)
        assert abs(float(smooth(1e-4, 0.3, 1.0)) - float(exact(1e-4, 0.3, 1.0))) < tol * float(exact(1e-4, 0.3, 1.0))
    # differentiable with finite gradients at the onset of contact
    g = jax.grad(lambda d: normal_law("hu-guo", K=1e6, c_r=0.8, smooth=1e-6)(d, 0.1, 1.0))(0.0)
    assert np.isfinite(float(g)) and float(g) > 0


def test_friction_laws_match_their_formulas():
    fn = 10.0
    v = jnp.array([-2e-3, -5e-4, -5e-5, 0.0, 5e-5, 5e-4, 2e-3])
    amb = Ambrosio(mu_k=0.1, v0=1e-4, v1=1e-3)(v, fn)
    np.testing.assert_allclose(amb, [1.0, 0.1 * fn * (5e-4 - 1e-4) / 9e-4, 0, 0, 0, -0.1 * fn * 4e-4 / 9e-4, -1.0], atol=1e-14)
    np.testing.assert_allclose(Coulomb(0.3)(v, fn), -0.3 * fn * np.sign(v))
    np.testing.assert_allclose(SmoothCoulomb(0.3, 1e-4)(v, fn), -0.3 * fn * np.tanh(np.asarray(v) / 1e-4))
    np.testing.assert_allclose(SmoothCoulomb(0.3, 1e-4, "arctan")(v, fn), -0.3 * fn * 2 / np.pi * np.arctan(np.asarray(v) / 1e-4))
    st = Stribeck(mu_k=0.1, mu_s=0.2, v_s=1e-3, width=1e-9)(v, fn)
    va = np.abs(np.asarray(v))
    np.testing.assert_allclose(st, -(0.1 + 0.1 * np.exp(-((va / 1e-3) ** 2))) * fn * np.sign(v), rtol=1e-12)
    th = Threlfall(0.1, 1e-3)(v, fn)
    np.testing.assert_allclose(th, -0.1 * fn * (1 - np.exp(-3 * va / 1e-3)) * np.sign(v), rtol=1e-12)
    ba = BengisuAkay(mu_k=0.1, mu_s=0.15, v0=1e-3, zeta=2e3)(v, fn)
    mu = np.where(va <= 1e-3, 0.15 - 0.15 * (va - 1e-3) ** 2 / 1e-6, 0.1 + 0.05 * np.exp(-2e3 * (va - 1e-3)))
    np.testing.assert_allclose(ba, -mu * fn * np.sign(v), rtol=1e-12)


def test_lugre_steady_sliding_gives_the_stribeck_curve_and_sticks_below_breakaway():
    lg = LuGre(mu_k=0.1, mu_s=0.15, v_s=1e-3, sigma0=1e5, sigma1=300.0, sigma2=0.0)
    for v in (2e-4, 1e-3, 5e-3):
        z_ss = lg.g(v) / lg.sigma0  # ż = 0
        assert float(lg.z_rate(v, z_ss)) == pytest.approx(0.0, abs=1e-15)
        assert float(lg(v, 10.0, z_ss)) == pytest.approx(-10.0 * float(lg.g(v)), rel=1e-12)
    # at rest with a small bristle deflection the force is an elastic (sticking) force
    assert float(lg(0.0, 10.0, 1e-7)) == pytest.approx(-10.0 * 1e5 * 1e-7)


def test_no_nan_gradients_at_zero_slip_for_smooth_laws():
    for law in (SmoothCoulomb(0.3, 1e-4), Stribeck(0.1, 0.2, 1e-3), friction_law("coulomb-viscous", mu_k=0.2, viscous=1.0)):
        g = jax.grad(lambda v: law(v, 10.0))(0.0)
        assert np.isfinite(float(g))


def test_bad_input_errors():
    with pytest.raises(ValueError, match="unknown normal-force law"):
        normal_law("soft", K=1.0)
    with pytest.raises(ValueError, match="K = -1"):
        normal_law("hertz", K=-1.0)
    for cr in (0.0, 1.2):
        with pytest.raises(ValueError, match="c_r"):
            normal_law("hu-guo", K=1.0, c_r=cr)
    with pytest.raises(ValueError, match="unknown friction law"):
        friction_law("sticky", mu_k=0.1)
    with pytest.raises(ValueError, match="mu_k"):
        friction_law("coulomb", mu_k=-0.1)
    with pytest.raises(ValueError, match="v1 > v0"):
        friction_law("ambrosio", mu_k=0.1, v0=1e-3, v1=1e-4)


@pytest.mark.parametrize("law, params, match", [
    # each was accepted and gave a wrong force (review): the reason is named
    ("ambrosio", dict(mu_k=0.1, v0=2e-3), "v1 > v0"),  # against the default v1 = 1e-3: an inverted ramp
    ("ambrosio", dict(mu_k=0.1, v1=5e-5), "v1 > v0"),
    ("stribeck", dict(mu_k=0.1, mu_s=0.2, v_s=0.0), "v_s"),  # NaN at zero slip
    ("stribeck", dict(mu_k=0.1, mu_s=0.2, v_s=-1e-3, exponent=1.0), "v_s"),  # mu 2.2e3 at 1 cm/s
    ("stribeck", dict(mu_k=0.1, mu_s=0.2, v_s=1e-3, exponent=-2.0), "exponent"),
    ("bengisu-akay", dict(mu_k=0.1, mu_s=0.2, zeta=-1000.0), "zeta"),  # mu 810
    ("lugre", dict(mu_k=0.0, mu_s=0.0, v_s=1e-3), "mu_k or mu_s > 0"),  # z_rate divides by g(v) = 0
    ("lugre", dict(mu_k=0.1, mu_s=0.2, v_s=1e-3, sigma0=-1e5), "sigma0"),
    ("smooth-coulomb", dict(mu_k=0.1, kind="tahn"), "kind must be 'tanh' or 'arctan'"),  # was arctan silently
])
def test_friction_parameters_outside_their_range_are_refused(law, params, match):
    with pytest.raises(ValueError, match=match):
        friction_law(law, **params)


def test_normal_law_parameters_that_would_be_ignored_are_refused():
    for name in ("hertz", "hu-guo"):
        with pytest.raises(ValueError, match="K = 0.0 must be > 0"):
            normal_law(name, K=0.0)
    assert float(normal_law("linear", K=0.0, c=10.0)(1e-3, 0.1, None)) == pytest.approx(1.0)  # a pure damper


@pytest.mark.parametrize("zero", [0, 0.0, np.float32(0), np.int64(0), np.asarray(0.0), jnp.asarray(0.0)])
def test_smooth_zero_is_the_exact_law_whatever_its_type(zero):
    """``smooth=0`` given as a NumPy or JAX scalar took the smoothed branch, ``x / 0``: NaN forces."""
    exact = normal_law("hunt-crossley", K=1e6, c_r=0.8)
    law = normal_law("hunt-crossley", K=1e6, c_r=0.8, smooth=zero)
    d, dd = jnp.array([-1e-4, 1e-4]), jnp.array([0.1, 0.1])
    np.testing.assert_array_equal(np.asarray(law(d, dd, 1.0)), np.asarray(exact(d, dd, 1.0)))


def test_contact_formulations_refuse_non_positive_times():
    from diffsim.contact import Events, Smooth

    with pytest.raises(ValueError, match="time_tol must be > 0"):
        Events(time_tol=-1.0)  # the run failed as "non-finite: check the model"
    for tau in (-1e-4, 0.0):
        with pytest.raises(ValueError, match="memory_tau must be > 0"):
            Smooth(memory_tau=tau)  # the run failed as "max_steps reached ... try kvaerno5"


def test_smoothed_laws_exert_no_force_out_of_contact():
    """The smoothed force is gated by σ(Δ/w): at a gap of 100 widths it is zero to round-off,
    for the spring–damper approaching fast too (its damping c Δ̇ acted at any distance before)."""
    lin = normal_law("linear", K=2000.0, c=20.0, smooth=1e-3)
    hg = normal_law("hu-guo", K=1e6, c_r=0.8, smooth=1e-5)
    assert float(lin(-0.1, 0.5)) < 1e-30 and float(hg(-1e-3, 0.5, 1.0)) < 1e-30
    # in contact (100 widths deep) the exact laws
    assert float(lin(0.1, 0.5)) == pytest.approx(2000 * 0.1 + 20 * 0.5, rel=1e-12)
    assert float(hg(1e-3, 0.5, 1.0)) == pytest.approx(float(normal_law("hu-guo", K=1e6, c_r=0.8)(1e-3, 0.5, 1.0)),
                                                      rel=1e-12)
