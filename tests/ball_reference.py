"""An independent ball-drop model (SciPy, written for validation; shares no code with diffsim).

A sphere (mass m, radius r) falls on the plane z = 0; its centre height z obeys

    flight  (δ = r − z ≤ 0):  z̈ = −g                         solved in closed form;
    contact (δ > 0):          m z̈ = −m g + max(K δⁿ (1 + χ′ δ̇/v⁻), 0),  δ̇ = −ż,

with ``v⁻`` the approach speed at the onset of that contact and ``χ′`` of the named law
(Hu & Guo: ``χ′ = 1.5 (1 − c_r)/c_r``). Each contact phase is integrated with
``scipy.integrate.solve_ivp`` (DOP853) up to the located event ``δ = 0`` (separation); each flight
phase is a parabola whose landing time is the root of a quadratic.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

CHI = {
    "hu-guo": lambda c: 1.5 * (1.0 - c) / c,
    "hunt-crossley": lambda c: 1.5 * (1.0 - c),
    "hertz": lambda c: 0.0,
}


def heights(t_eval, *, K, c_r, mass=0.05, radius=0.02, height=0.25, g=9.81, n=1.5, law="hu-guo", rtol=1e-12,
            atol=1e-14, max_phases=200):
    """Centre heights ``z(t_eval)`` for a release from rest with ``height`` between the sphere's
    lowest point and the plane (``t_eval`` sorted, starting at ≥ 0)."""
    t_eval = np.asarray(t_eval, dtype=float)
    chi = CHI[law](c_r)
    z_out = np.full(t_eval.shape, np.nan)
    t, z, w = 0.0, radius + height, 0.0
    t_end = float(t_eval[-1])
    for _ in range(max_phases):
        # flight: z(t + s) = z + w s − g s²/2 until z = radius (the later root)
        a, b, c = -0.5 * g, w, z - radius
        s_land = (-b - np.sqrt(b * b - 4 * a * c)) / (2 * a)
        sel = (t_eval >= t) & (t_eval <= t + s_land)
        s = t_eval[sel] - t
        z_out[sel] = z + w * s - 0.5 * g * s * s
        t, w = t + s_land, w - g * s_land
        z = radius
        if t >= t_end:
            break
        v_minus = -w  # > 0

        def rhs(_, y, v_minus=v_minus):
            d, dd = radius - y[0], -y[1]
            f = max(K * max(d, 0.0) ** n * (1.0 + chi * dd / v_minus), 0.0)
            return [y[1], -g + f / mass]

        def separated(_, y):
            return y[0] - radius
        separated.terminal, separated.direction = True, 1.0

        # contact lasts ~ (m/K)^(1/(n+1)) scaled; bound the phase generously
        sol = solve_ivp(rhs, (t, t + 1.0), [z, w], method="DOP853", rtol=rtol, atol=atol, events=separated,
                        dense_output=True, first_step=1e-9)
        if sol.status < 0 or sol.t.size < 2:
            raise RuntimeError(f"contact phase at t = {t:.6g} failed: {sol.message}")
        t_sep = float(sol.t_events[0][0]) if sol.t_events[0].size else float(sol.t[-1])
        sel = (t_eval > t) & (t_eval < t_sep)
        if np.any(sel):
            z_out[sel] = sol.sol(t_eval[sel])[0]
        t, (z, w) = t_sep, sol.sol(t_sep)
        z = radius
        if t >= t_end:
            break
    else:
        raise RuntimeError("more phases than max_phases")
    return z_out
