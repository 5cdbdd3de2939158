"""The finite-difference Jacobian of a fit (``jacobian="fd"``) takes its central-difference step
from the fit's dtype: ``h = eps^(1/3)`` balances the truncation error (~h² f‴/6) and the round-off
of the residuals (~eps |r| / h). Float64's step (6.1e-6) in a float32 fit left round-off over
2h = 1.2e-5: derivatives ~1e-2 off (a review measured 38 % on a float32 pendulum rollout)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from diffsim.identify.estimator import _fd_residuals


class Smooth(eqx.Module):
    """Residuals ``r_k(θ) = exp(θ₀ cos t_k) + θ₁ sin t_k`` (their derivatives in closed form)."""

    t: jax.Array

    def evaluate(self, theta, data):
        return jnp.exp(theta[0] * jnp.cos(self.t)) + theta[1] * jnp.sin(self.t) - data, None


def exact(theta, t):
    return np.stack([np.cos(t) * np.exp(theta[0] * np.cos(t)), np.sin(t)], axis=1)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_the_fd_jacobian_is_accurate_to_its_dtypes_round_off(dtype):
    t = np.linspace(0.0, 6.0, 200)
    theta = np.array([0.7, -0.3])
    res, data = Smooth(jnp.asarray(t, dtype)), jnp.zeros(t.size, dtype)
    J = jax.jit(jax.jacfwd(lambda th: _fd_residuals(th, res, data)))(jnp.asarray(theta, dtype))
    assert J.dtype == dtype
    err = np.max(np.abs(np.asarray(J, float) - exact(theta, t))) / np.max(np.abs(exact(theta, t)))
    eps = float(jnp.finfo(dtype).eps)
    # truncation + round-off at h = eps^(1/3): a few eps^(2/3) (|r| ≤ e^0.7 ≈ 2, f‴ ≤ 2); float32
    # 2.4e-5 x 8 = 2e-4 (float64's step gave 1e-2 here), float64 3.7e-11 x 8 = 3e-10
    assert err < 8 * eps ** (2 / 3), err
