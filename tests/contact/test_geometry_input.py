"""Contact geometry and loads read their input as documented, or refuse it (review findings:
each of these gave a wrong motion with status success)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim.contact import ContactError

HC = ds.normal_law("hunt-crossley", K=1e7, c_r=0.9)


def free(*names, g=-9.81):
    b = ds.ModelBuilder(gravity=(0, 0, g))
    for n in names:
        b.add_body(n, None, joint="free", mass=1.0, inertia=(4e-4,) * 3)
    return b.build()


def test_a_plane_normal_of_any_length_keeps_its_half_space():
    """``n·x ≥ offset`` with ``n = (0, 0, 2)``, offset 1 is ``z ≥ 0.5``: the normal was normalised and
    the offset kept, which put the plane at z = 1 (a point at z = 0.7 started 0.3 m deep)."""
    m = free("ball")
    q = jnp.array([0, 0, 0.7, 1.0, 0, 0, 0])
    long = ds.compliant_contact(m, [ds.ContactPoint("ball")], [ds.Plane(normal=(0, 0, 2.0), offset=1.0)], normal=HC)
    unit = ds.compliant_contact(m, [ds.ContactPoint("ball")], [ds.Plane(normal=(0, 0, 1.0), offset=0.5)], normal=HC)
    np.testing.assert_allclose(np.asarray(long.penetration(m, q)), [-0.2], rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(long.penetration(m, q)), np.asarray(unit.penetration(m, q)))


def test_a_sphere_pair_that_could_never_touch_is_refused():
    m = free("a", "b")
    with pytest.raises(ContactError, match="both points have radius 0, so they can never touch"):
        ds.compliant_contact(m, [ds.ContactPoint("a", name="A"), ds.ContactPoint("b", name="B")],
                             sphere_pairs=[("A", "B")], normal=HC)


def test_point_force_point_must_be_a_3_vector():
    m = free("a")
    with pytest.raises(ValueError, match=r"point must have shape \(3,\)"):
        ds.point_force(m, "a", jnp.array([0.0, 0.0, 1.0]), point=(0.1, 0.0))  # read as (0.1, 0, 0)
    with pytest.raises(ValueError, match=r"point must have shape \(3,\)"):
        ds.point_force(m, "a", jnp.array([0.0, 0.0, 1.0]), point=0.1)


@pytest.mark.slow  # two contact solves (~20 s of compile)
def test_a_traced_span_caps_the_contact_steps_as_a_concrete_one_does():
    """The default step cap of a contact run (1 % of the span, so that a step cannot jump over a
    whole contact) was set only for a concrete span: under a caller's ``jit`` over ``t1`` a sphere
    moving at 10 m/s passed through the one it should hit, status success."""
    m = free("a", "b", g=0.0)
    c = ds.compliant_contact(m, [ds.ContactPoint("a", radius=0.01, name="A"), ds.ContactPoint("b", radius=0.01, name="B")],
                             sphere_pairs=[("A", "B")], normal=HC)
    q0 = jnp.array([0, 0, 0, 1.0, 0, 0, 0, 1.0, 0, 0, 1.0, 0, 0, 0])
    s = ds.System(m, q0, jnp.zeros(12).at[0].set(10.0), contact=c, t1=1.0, saveat=3, max_events=8)

    def run(t1):
        return ds.simulate(s.replace(t1=t1))

    eager, traced = run(1.0), jax.jit(run)(1.0)
    assert eager.ok and traced.ok
    assert int(eager.contact.impacts[0]) == int(traced.contact.impacts[0]) == 1
    np.testing.assert_allclose(np.asarray(traced.q[-1]), np.asarray(eager.q[-1]), rtol=1e-6, atol=1e-8)
    assert float(traced.q[-1, 7]) > 5.0  # B was struck and moves on (it stayed at x = 1)
