"""diffsim.compiled: public array functions run as one compiled program wherever they are called
(eagerly, under an eager ``vmap`` / ``jvp``), with the values of the function applied one sample at a
time."""

import jax
import jax.numpy as jnp
import numpy as np

import diffsim as ds
from diffsim.model.random import random_tree


def _compiles(compile_log, f):
    with compile_log() as log:
        out = jax.block_until_ready(f())
    return out, log


def test_eager_vmap_and_jvp_compile_one_program_each_and_equal_one_sample_at_a_time(compile_log):
    m = random_tree(4, n_bodies=3, joint_types=("revolute", "spherical"), base="free")
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    Q = jnp.stack([ds.random_configuration(m, k) for k in keys])
    V = jax.random.normal(jax.random.PRNGKey(1), (4, m.nv))
    A = jax.random.normal(jax.random.PRNGKey(2), (4, m.nv))
    cases = {"total_energy": (Q, V), "inverse_dynamics": (Q, V, A), "forward_dynamics": (Q, V, A), "body_com": (Q,),
             "integrate": (Q, V), "configuration_rate": (Q, V)}
    for name, args in cases.items():
        fn = getattr(ds, name)
        got, msgs = _compiles(compile_log, lambda: jax.vmap(lambda *a: fn(m, *a))(*args))  # noqa: B023
        assert len(msgs) == 1, (name, msgs)  # the batched program (op by op: one per new primitive)
        # one sample at a time (one program each; the op-by-op reference under jax.disable_jit
        # compiled ~60 one-primitive programs per function: 19 s of a full run)
        want = jnp.stack([fn(m, *(x[k] for x in args)) for k in range(len(Q))])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
    # an eager jvp: one program; with no forces but gravity (no damping) T + V is conserved
    q, v = Q[0], V[0]
    a = ds.forward_dynamics(m, q, v)
    qd = ds.configuration_rate(m, q, v)
    (_, dE), msgs = _compiles(compile_log, lambda: jax.jvp(lambda q, v: ds.total_energy(m, q, v), (q, v), (qd, a)))
    assert len(msgs) == 1, msgs
    _, dT = jax.jvp(lambda v: ds.kinetic_energy(m, q, v), (v,), (a,))
    assert abs(float(dE)) <= 1e-12 * abs(float(dT)), (dE, dT)


def test_a_links_modal_integrals_compile_once_per_structure_and_equal_the_staged_trace(compile_log):
    """A beam built eagerly derives its integrals in one program (op by op it compiled ~100 small ones
    for every new link structure); new values of the same structure compile nothing, and the values
    equal those traced inside a caller's ``jit`` (the path of a parameter set in a fit)."""
    from flex_models import _link, _poly

    kw = dict(modes_y=_poly([2, 3]), modes_z=_poly([2]), modes_torsion=_poly([1]), n_quad=10)  # shapes made first
    with compile_log() as first:
        _link(**kw)
    with compile_log() as again:
        fb = _link(**kw, EI_z=55.0, tip_mass=0.4, air_damping=0.2)
    first = [m for m in first if "jit(stage)" not in m]  # JAX's own, once per process: a number made an array
    assert len(first) == 1, first
    assert again == [], again
    fields = ("K", "D", "m", "J", "phi_d", "phi_r", "fore", "end_phi_d", "end_fore")
    staged = jax.jit(lambda EI, tm, g: [getattr(_link(**kw, EI_z=EI, tip_mass=tm, air_damping=g), f)
                                        for f in fields])(55.0, 0.4, 0.2)  # fmt: skip
    for f, want in zip(fields, staged, strict=True):
        np.testing.assert_allclose(getattr(fb, f), want, rtol=1e-13, atol=1e-13, err_msg=f)


def test_new_python_float_arguments_compile_nothing(compile_log):
    """A Python float (``dt``, ``scale``) was a static argument of the compiled program: an eager
    loop over four ``dt`` values compiled four programs. Now it is traced; the values equal those
    with ``dt`` given as an array."""
    m = random_tree(5, n_bodies=2, joint_types=("revolute", "spherical"), base="free")
    q = ds.random_configuration(m, jax.random.PRNGKey(0), 0.5)
    v = jax.random.normal(jax.random.PRNGKey(1), (m.nv,))
    first = ds.integrate(m, q, v, 0.01)
    with compile_log() as log:
        got = [ds.integrate(m, q, v, dt) for dt in (0.02, 0.03, 0.04)]
        ds.random_configuration(m, jax.random.PRNGKey(2), 0.7)
    assert log == [], log
    for dt, x in zip((0.01, 0.02, 0.03, 0.04), [first, *got]):
        np.testing.assert_array_equal(x, ds.integrate(m, q, v, jnp.asarray(dt)))
