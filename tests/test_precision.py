"""diffsim's float32 matrix products are true float32 whatever JAX's default (``diffsim.precision``);
the form of its small products (``ds.set_products``: dot kernels or written out) changes no result.

Checked on the traced programs (``jax.make_jaxpr``, nothing compiled): under an outer
``jax.default_matmul_precision("tensorfloat32")`` (what NVIDIA GPUs do by default), every
``dot_general`` that diffsim's entry points emit — also in their JVPs and transposes — carries
``Precision.HIGHEST``. On an H200 the default TF32 put S0's float32 forward dynamics 6.5 % (median)
off float64, true float32 1.6e-5 (``benchmarks/bench_gpu.py``); on this CPU the precision changes
no result, so the traced programs are what can be checked here.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim import identify, montecarlo, plan
from diffsim.io.results import provenance
from diffsim.scenarios import seed000

F32 = jnp.float32
HIGHEST = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)


def _dots(jaxpr):
    """Every ``dot_general`` of ``jaxpr`` and of the jaxprs nested in its equations (scan, while,
    cond, pjit, custom_jvp …)."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            yield eqn
        for v in eqn.params.values():
            for sub in v if isinstance(v, (tuple, list)) else (v,):
                if hasattr(sub, "jaxpr") and hasattr(sub, "consts"):  # ClosedJaxpr
                    yield from _dots(sub.jaxpr)
                elif hasattr(sub, "eqns"):  # Jaxpr
                    yield from _dots(sub)


def _f32_precisions(fn, *args):
    """The precisions of the float32 products of ``fn(*args)`` traced under TF32 as JAX's default."""
    with jax.default_matmul_precision("tensorfloat32"):
        jaxpr = jax.make_jaxpr(fn)(*args)
    return [e.params["precision"] for e in _dots(jaxpr.jaxpr)
            if all(x.aval.dtype == jnp.float32 for x in e.invars)]


@pytest.fixture(scope="module")
def s0():
    m = seed000.model().astype(F32)
    q = ds.random_configuration(m, jax.random.PRNGKey(0))
    v = 0.3 * jax.random.normal(jax.random.PRNGKey(1), (m.nv,), F32)
    return m, seed000.loads(m), q, v


def _cases(m, ld, q, v):
    tau = jnp.ones(m.nv, F32)
    return {
        "forward_dynamics": (lambda q, v: ds.forward_dynamics(m, q, v, tau), q, v),
        "grad of forward_dynamics": (jax.grad(lambda q, v: jnp.sum(ds.forward_dynamics(m, q, v, tau) ** 2),
                                              argnums=(0, 1)), q, v),
        "inverse_dynamics": (lambda q, v: ds.inverse_dynamics(m, q, v, tau), q, v),
        "mass_matrix": (lambda q: ds.mass_matrix(m, q), q),
        "total_energy": (lambda q, v: ds.total_energy(m, q, v), q, v),
        "point_jacobian": (lambda q: ds.point_jacobian(m, q, 2, jnp.array([0.0, 0.0, 1.0], F32)), q),
        "angular_momentum": (lambda q, v: ds.angular_momentum(m, q, v), q, v),
        "integrate": (lambda q, v: ds.integrate(m, q, v, 0.01), q, v),
        "difference": (lambda q: ds.difference(m, q, q), q),
        "to_mujoco": (lambda q, v: ds.to_mujoco(m, q, v), q, v),
        "rollout and its gradient": (jax.grad(lambda v: jnp.sum(ds.rollout(m, q, v, 1e-3, 3, loads=ld).q[-1])), v),
    }


CASES = ["forward_dynamics", "grad of forward_dynamics", "inverse_dynamics", "mass_matrix", "total_energy",
         "point_jacobian", "angular_momentum", "integrate", "difference", "to_mujoco", "rollout and its gradient"]


@pytest.mark.parametrize("case", CASES)
def test_float32_products_are_true_float32_under_a_tf32_default(s0, case):
    cases = _cases(*s0)
    assert set(cases) == set(CASES)
    fn, *args = cases[case]
    precs = _f32_precisions(fn, *args)
    assert precs, "no float32 matrix product traced: the check would be empty"
    assert all(p == HIGHEST for p in precs), f"{case}: {sorted(set(map(str, precs)))}"


def test_the_check_sees_tf32_products_without_the_setting(s0):
    """The control: the undecorated function, and diffsim with the setting off, trace TF32 products."""
    m, ld, q, v = s0
    undecorated = ds.forward_dynamics.__wrapped__
    precs = _f32_precisions(lambda q, v: undecorated(m, q, v), q, v)
    assert precs and all(p != HIGHEST for p in precs)
    try:
        ds.set_matmul_precision(None)
        assert ds.matmul_precision() is None
        precs = _f32_precisions(lambda q, v: ds.forward_dynamics(m, q, v), q, v)
        assert precs and all(p != HIGHEST for p in precs)
    finally:
        ds.set_matmul_precision("highest")
    assert ds.matmul_precision() == "highest"


def test_simulate_traces_true_float32_products(s0):
    m, ld, q, v = s0
    system = ds.System(m, q, v, loads=ld, t1=0.01, solver="tsit5")
    precs = _f32_precisions(lambda v: ds.simulate(system.replace(v0=v)).q[-1], v)
    assert precs and all(p == HIGHEST for p in precs)


def test_lemke_traces_true_float32_products():
    M = jnp.array([[2.0, 1.0], [1.0, 2.0]], F32)
    qv = jnp.array([-1.0, -1.0], F32)
    precs = _f32_precisions(lambda qv: ds.lemke(M, qv)[0], qv)
    assert precs and all(p == HIGHEST for p in precs)


def test_every_computing_entry_point_carries_the_setting():
    entry_points = [ds.forward_dynamics, ds.inverse_dynamics, ds.mass_matrix, ds.bias_forces, ds.gravity_forces,
                    ds.kinetic_energy, ds.potential_energy, ds.total_energy, ds.forward_kinematics, ds.site_poses,
                    ds.point_jacobian, ds.point_velocity, ds.body_velocities, ds.body_com, ds.spatial_momentum,
                    ds.linear_momentum, ds.angular_momentum, ds.centre_of_mass, ds.simulate, ds.rollout,
                    ds.joint_torques, ds.lemke, ds.integrate, ds.difference, ds.configuration_rate, ds.normalize,
                    ds.random_configuration, ds.to_mujoco,
                    ds.from_mujoco, identify.fit, identify.modal_frequencies, identify.modal_report,
                    identify.match_frequencies, montecarlo.run, plan.solve, plan.solve_system, plan.sensitivity]
    missing = [f.__name__ for f in entry_points if not getattr(f, "__diffsim_full_precision__", False)]
    assert not missing


def test_a_flexible_links_integrals_are_true_float32():
    """``ds.flexible.beam`` and ``set_params`` of a beam parameter derive the link's modal integrals
    (K, the mass integrals): they were traced under JAX's default (TF32 on NVIDIA GPUs)."""
    from diffsim.flexible import beam
    from flex_models import _poly

    kw = dict(modes_y=_poly([2, 3]), modes_z=_poly([2]), n_quad=12, dtype=F32)
    b = ds.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_body("l1", None, joint="revolute", axis=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1),
               flex=beam(1.0, 2.0, EI_z=50.0, EI_y=60.0, **kw))
    m = b.build(dtype=F32)
    for fn in (lambda EI: beam(1.0, 2.0, EI_z=EI, EI_y=60.0, **kw).K,
               lambda EI: ds.set_params(m, {"beam.l1.EI_z": EI}).flex[0].K):
        precs = _f32_precisions(fn, jnp.float32(55.0))
        assert precs and all(p == HIGHEST for p in precs), sorted(set(map(str, precs)))


def test_loads_given_in_float64_drive_a_float32_model_in_float32():
    """Under x64 a list, a NumPy-built ``TimeSeries`` or a callable's ``jnp.array`` is float64: on a
    float32 model ``simulate`` failed deep in diffrax (a dtype error of its save buffer) and
    ``rollout`` in ``lax.scan`` (carry float32 vs float64). The loads are cast to the model's dtype;
    the result equals the same run with float32 loads."""
    b = ds.ModelBuilder(gravity=(0, 0, -9.81))
    b.add_body("arm", joint="revolute", axis=[0, 1, 0], mass=1.0, com=[0.3, 0, 0], inertia=(0.002, 0.01, 0.01))
    m = b.build(dtype=F32)
    q0, v0 = jnp.array([0.3], F32), jnp.zeros(1, F32)
    T = np.linspace(0.0, 1.0, 11)
    signals = {"list": [0.1], "TimeSeries": ds.TimeSeries(T, 0.1 * T[:, None]),
               "callable": lambda t, q, v: jnp.array([0.1]) * jnp.cos(q)}
    same = {"list": jnp.array([0.1], F32), "TimeSeries": ds.TimeSeries(T.astype(np.float32), (0.1 * T[:, None]).astype(np.float32)),
            "callable": lambda t, q, v: jnp.array([0.1], F32) * jnp.cos(q)}
    for name, tau in signals.items():
        tr = ds.rollout(m, q0, v0, 1e-3, 5, tau=tau, forces=[ds.point_force(m, "arm", (0.0, 0.0, -1.0))])
        ref = ds.rollout(m, q0, v0, 1e-3, 5, tau=same[name], forces=[ds.point_force(m, "arm", (0.0, 0.0, -1.0))])
        assert tr.q.dtype == tr.v.dtype == F32, name
        np.testing.assert_array_equal(tr.v, ref.v)
    tr = ds.simulate(m, q0, v0, 0.02, tau=signals["TimeSeries"], rtol=1e-5, atol=1e-5)
    assert tr.q.dtype == F32


def test_set_matmul_precision_rejects_unknown_values():
    with pytest.raises(ValueError, match="no matmul precision JAX knows"):
        ds.set_matmul_precision("double")
    assert ds.matmul_precision() == "highest"


# ---------------------------------------------------------------------------------------------
# The form of the small products (``ds.set_products``): dot kernels or written-out sums
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def restore_products():
    yield
    ds.set_products("auto")


def _s0_vector_field(m, ld):
    def fd(q, v):
        tau, f_ext = ld.evaluate(m, 0.0, q, v)
        return ds.forward_dynamics(m, q, v, tau, f_ext)
    return fd


def test_unrolled_products_leave_no_dot_kernel(s0, restore_products):
    """The written-out form removes every ``dot_general`` from S0's vector field (loads, joint
    kinematics, the level sweeps, the 6×6 inverse of the free base) and from its RK4 rollout
    (configuration rates included): on a GPU each was a kernel of its own. The dot form has them,
    and the count is taken after each switch, so a stale cached trace would show here."""
    m, ld, q, v = s0
    fd = _s0_vector_field(m, ld)

    def roll(v):
        return ds.rollout(m, ds.neutral_configuration(m), v, 1e-3, 3, loads=ld).q[-1]

    counts = {}
    for form in ("dot", "unrolled", "dot"):
        ds.set_products(form)
        assert ds.products() == form
        counts[form] = (len(list(_dots(jax.make_jaxpr(fd)(q, v).jaxpr))), len(list(_dots(jax.make_jaxpr(roll)(v).jaxpr))))
    assert min(counts["dot"]) > 10
    assert counts["unrolled"] == (0, 0)


@pytest.mark.slow  # ~13 s: two forms' gradients of S0 compiled
def test_unrolled_products_agree_and_differentiate(restore_products):
    """S0 in float64: the two forms give the same accelerations to rounding, and the written-out
    form's derivatives (tangent space of the free base's quaternion, velocities) match central
    differences."""
    m = seed000.model()
    ld = seed000.loads(m)
    fd = _s0_vector_field(m, ld)
    q = ds.random_configuration(m, jax.random.PRNGKey(4))
    v = 0.3 * jax.random.normal(jax.random.PRNGKey(5), (m.nv,))
    w = jax.random.normal(jax.random.PRNGKey(6), (m.nv,))

    def loss(dq, v):
        return w @ fd(ds.integrate(m, q, dq), v)

    out = {}
    for form in ("dot", "unrolled"):
        ds.set_products(form)
        out[form] = jax.jit(fd)(q, v), jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.zeros(m.nv), v), jax.jit(loss)
    a_dot, a_un = out["dot"][0], out["unrolled"][0]
    assert float(jnp.max(jnp.abs(a_un - a_dot)) / jnp.max(jnp.abs(a_dot))) < 1e-12
    (g_dq, g_v), f = out["unrolled"][1], out["unrolled"][2]
    h, z = 1e-6, jnp.zeros(m.nv)
    for k in range(m.nv):
        e = z.at[k].set(h)
        assert abs(g_dq[k] - (f(e, v) - f(-e, v)) / (2 * h)) <= 1e-6 * (1 + abs(g_dq[k]))
        assert abs(g_v[k] - (f(z, v + e) - f(z, v - e)) / (2 * h)) <= 1e-6 * (1 + abs(g_v[k]))


def test_products_auto_is_dot_on_a_cpu_and_bad_forms_are_refused(restore_products):
    if jax.default_backend() == "cpu":
        assert ds.products() == "dot"  # the CPU measurements (README "On one GPU") keep dot kernels
    with pytest.raises(ValueError, match="'fast' is not one of"):
        ds.set_products("fast")


def test_written_out_products_have_the_shapes_and_errors_of_the_dot_form(restore_products):
    """Written out, a mismatched contracted axis is an error (indexing would clamp and give a wrong
    number); broadcast batch axes, an empty contracted axis and 1-D operands give what ``@`` gives."""
    sp = ds.spatial
    r = jax.random.normal(jax.random.PRNGKey(0), (64,))
    cases = [(sp.mm, r[:45].reshape(5, 3, 3), r[:9].reshape(3, 3)), (sp.mm, r[:9].reshape(3, 3), r[:45].reshape(5, 3, 3)),
             (sp.mv, r[:9].reshape(3, 3), r[:12].reshape(4, 3)), (sp.mv, r[:36].reshape(4, 3, 3), r[:3]),
             (sp.vdot, r[:12].reshape(4, 3), r[:3]), (sp.mv, jnp.ones((6, 0)), jnp.ones(0)),
             (sp.mm, r[:3], r[:9].reshape(3, 3))]
    out = {}
    for form in ("dot", "unrolled"):
        ds.set_products(form)
        out[form] = [f(a, b) for f, a, b in cases]
        with pytest.raises((ValueError, TypeError)):
            sp.vdot(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 10.0]))
        with pytest.raises((ValueError, TypeError)):
            sp.mm(jnp.ones((3, 3)), jnp.ones((4, 3)))
    for a, b in zip(out["dot"], out["unrolled"]):
        assert a.shape == b.shape
        assert float(jnp.max(jnp.abs(a - b), initial=0.0)) < 1e-12
    for bad in (np.array("dot"), None, 1):
        with pytest.raises(ValueError, match="is not one of"):
            ds.set_products(bad)
    ds.set_products(np.str_("dot"))
    assert type(ds.products()) is str


def test_results_record_how_their_numbers_were_made(restore_products):
    """``summary.json`` / manifests carry the backend, x64, the products' form and the matmul
    precision: results made another way agree to rounding, not bit for bit."""
    ds.set_products("unrolled")
    p = provenance()
    assert (p["products"], p["backend"], p["x64"], p["matmul_precision"]) == (
        "unrolled", jax.default_backend(), bool(jax.config.jax_enable_x64), "highest")
    ds.set_products("auto")
    assert provenance()["products"] == ds.products()
