"""diffsim.identify on a flexible link: the Kelvin–Voigt and air damping of a swinging elastic arm
are recovered from its joint angle alone, within the reported 95 % intervals (the short version of
experiments/identify_flexible_link.py, which also fits EI and explains the physics)."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import diffsim as ds
from diffsim import identify as idf
from diffsim.beams import euler_bernoulli_modes
from diffsim.flexible import beam

KV, GAMMA, EI = 3e7, 0.1, 34.0
SIGMA_Q = 1e-4  # rad: a 16-bit joint encoder


class Pulse(eqx.Module):
    """Motor torque A sin²(π t/T_p) for t < T_p on the joint (zero on the modal coordinates)."""

    A: float
    T: float = eqx.field(static=True)

    def __call__(self, t, q, v):
        u = jnp.where(t < self.T, self.A * jnp.sin(jnp.pi * t / self.T) ** 2, 0.0)
        return jnp.zeros(q.shape[0], q.dtype).at[0].set(u)


def arm():
    """1 m, 1 kg/m steel strip (EI = 34 N m², I = EI/E) with a 0.2 kg tip mass on a 1 kg hub, two
    clamped–free bending modes in the swing plane (x–z; joint axis y, gravity −z): free-hub modes
    at 7.3 Hz (ζ 0.84 %, 60 % air) and 19.3 Hz (ζ 1.04 %, 87 % Kelvin–Voigt)."""
    link = beam(1.0, 1.0, EI_y=EI, I_y=EI / 2e11, modes_z=euler_bernoulli_modes("cf", 2, normalize="max"),
                kelvin_voigt=KV, air_damping=GAMMA, tip_mass=0.2, n_quad=8)
    b = ds.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_body("arm", None, joint="revolute", axis=(0, 1, 0), mass=1.0, inertia=(0.02, 0.05, 0.05), flex=link)
    return b.build()


@pytest.mark.slow  # ~23 s on 2 cores, nearly all of it compiling the fit
def test_structural_and_air_damping_of_a_flexible_link_from_its_joint_angle():
    """Released at −0.2 rad with a 5 N m, 40 ms torque pulse that excites both modes; 0.6 s of
    the joint angle at 200 Hz (data at tolerance 1e-12 + noise, fit at 1e-9), started 40 % off."""
    m = arm()
    T = np.linspace(0.0, 0.6, 121)
    tau = Pulse(5.0, 0.04)
    truth = ds.System(m, jnp.array([-0.2, 0.0, 0.0]), t1=float(T[-1]), rtol=1e-12, atol=1e-12, tau=tau)
    tr = ds.simulate(truth.replace(saveat=jnp.asarray(T)))
    q = np.asarray(tr.q[:, :1]) + SIGMA_Q * np.random.default_rng(7).standard_normal((T.size, 1))
    exp = idf.Experiment(T, {"q.arm": q}, sigma={"q.arm": SIGMA_Q}, name="pulse", tau=tau)
    names = ["beam.arm.kelvin_voigt", "beam.arm.air_damping"]
    start = ds.set_params(truth, {names[0]: 1.4 * KV, names[1]: 0.6 * GAMMA}).replace(rtol=1e-9, atol=1e-9)
    res = idf.fit(start, names, exp, rtol=1e-6, atol=1e-6, max_steps=60)
    assert res.converged, res.status
    assert res.identifiable["identifiable"], res.identifiable
    for name, true in zip(names, (KV, GAMMA)):
        lo, hi = res.ci95[name]
        assert lo < true < hi, (name, res.value[name], res.ci95[name])
        assert res.std[name] < 0.1 * true, (name, res.std[name])  # determined, not a uselessly wide interval
    dof = res.n_samples - len(names)  # the cost is what the noise predicts (±4 standard deviations of ½χ²)
    assert abs(2 * res.cost - dof) < 4 * np.sqrt(2 * dof)
