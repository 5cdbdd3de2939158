"""Monte Carlo on S2 (issue 15, section 3): the planar space robot whose tip is pushed and pulled
along a plane, LCP contact (Lemke) with an uncertain Coulomb friction coefficient.

Setup (``diffsim.scenarios.seed002``, unchanged): a free-floating base with a three-link arm in
zero gravity; the base thrusters and joint motors apply the commanded tip force F = (F_x, F_y) as
the generalised force J_Pᵀ F; the tip presses on the plane with F_N = 5 N, pushes with F_x = +2.6 N
(0.66–1.89 s) and, after a lift, pulls with F_x = −2.7 N (2.43–5 s). Rigid contact, the
acceleration-level LCP stepper at dt = 0.01 s (the scenario's defaults). Uncertain: ``contact.mu``
~ Uniform(0.1, 0.7) (the scenario: 0.3).

Physics check (Coulomb's law, exact for this configuration). F is applied at the contact point
itself, so with the tip at rest the contact force balances it exactly: λ_N = F_N, λ_T = −F_x, and
the tip can stay at rest iff |F_x| ≤ μ F_N (up to the velocity-product terms of the still moving
base and arm, which enter λ). Hence at the end of the push window the tip sticks iff
μ > μ*_push = 2.6 / 5 = 0.52 and at the end of the pull window iff μ > μ*_pull = 2.7 / 5 = 0.54;
below, the tip slides (at the commanded ratio the tip accelerates, it cannot stop). A sample very
close above a threshold may still be sliding from its landing (the kinetic friction's net
deceleration ∝ μ − μ* is small): the margin within which that happens is measured and reported,
not assumed. For every sticking sample the contact force ratio |λ_T/λ_N| must equal |F_x|/F_N (the
deviation is measured and reported). Travel: the tip's x-displacement over the push window decreases with μ and
vanishes (to the lift's drift) above μ*_push.

Run: ``python experiments/montecarlo_s2_friction.py [--samples N] [--chunk C]`` (default 1000 in
chunks of 250: about a minute on 2 cores). Writes ``experiments/results/montecarlo-s2-friction/``:
``summary.json``, ``README.md``, ``friction.png`` and the study (``study/``: ``samples.npz``,
``summary.json``, histograms, sensitivity).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import diffsim as ds  # noqa: E402
from diffsim import montecarlo as mc  # noqa: E402
from diffsim.complementarity.rigid import SLIDE, STICK  # noqa: E402
from diffsim.io.results import provenance, write_json  # noqa: E402
from diffsim.scenarios import seed002 as s2  # noqa: E402
from diffsim.simulation.lcp import STEPPERS  # noqa: E402
from diffsim.viz import new_figure, save_figure  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "montecarlo-s2-friction"
DT = 0.01
T_LIFT = s2.DATA["t_lift"]
MU_PUSH = abs(s2.DATA["push"]) / s2.DATA["press"]
MU_PULL = abs(s2.DATA["pull"]) / s2.DATA["press"]


def system(t1=5.0):
    """The S2 scenario as a ``ds.System`` (the scenario's model, contact, controls and stepper)."""
    m = s2.model()
    q0, v0 = s2.initial_state(m)
    return ds.System(m, q0, v0, contact=s2.contact_model(m), tau=s2.controls(m, s2.plane_height(m)), t1=t1,
                     solver=STEPPERS["acceleration"](DT))


def window_steps(t1):
    """Indices of the last LCP step of the push window (before the lift at t_lift[2]) and of the
    run (the pull window's end); a step's mode and forces hold over [t_k, t_k+1)."""
    return int(round(T_LIFT[2] / DT)) - 1, int(round(t1 / DT)) - 1


def statistics(m, t1):
    k_push, k_end = window_steps(t1)
    k_start = int(round(T_LIFT[1] / DT))  # the push window starts at the landing t_lift[1]

    def stats(tr):
        x = jax.vmap(lambda q: s2.tip(m, q))(tr.q)[:, 0]
        c = tr.contact
        return {"travel_push": x[k_push + 1] - x[k_start], "travel_total": x[-1] - x[0],
                "mode_push_end": c.mode[k_push, 0], "mode_end": c.mode[k_end, 0],
                "ratio_push_end": c.lambda_T[k_push, 0] / c.lambda_N[k_push, 0],
                "ratio_end": c.lambda_T[k_end, 0] / c.lambda_N[k_end, 0],
                "sliding_steps": jnp.sum(c.mode[:, 0] == SLIDE)}

    return stats


def classify(mu, mode, mu_star):
    """How the end-of-window modes compare with Coulomb's threshold: misclassified samples below
    (sticking although μ < μ*: a violation of the law, must be none) and above (still sliding
    although μ > μ*: allowed only within the measured margin)."""
    stick = mode == STICK
    below_wrong = np.flatnonzero((mu < mu_star) & stick)
    above_wrong = np.flatnonzero((mu > mu_star) & ~stick)
    margin = float(np.max(mu[above_wrong] - mu_star)) if above_wrong.size else 0.0
    return {"threshold": mu_star, "sticking_below_threshold": int(below_wrong.size),
            "sliding_above_threshold": int(above_wrong.size), "sliding_above_margin": margin,
            "sticking": int(stick.sum()), "n": int(mu.size)}


def figure(mu, st, path):
    fig, ax = new_figure(1, 3, figsize=(15, 4.2))
    o = np.argsort(mu)
    ax[0].plot(mu[o], st["travel_push"][o] * 1e3, ".", ms=3, label="push window (0.66–1.89 s)")
    ax[0].plot(mu[o], st["travel_total"][o] * 1e3, ".", ms=3, label="whole run (0–5 s)")
    for a in ax[:2]:
        a.axvline(MU_PUSH, color="k", ls="--", lw=0.8, label=r"$\mu^*_{push}$ = 2.6/5")
        a.axvline(MU_PULL, color="grey", ls=":", lw=0.8, label=r"$\mu^*_{pull}$ = 2.7/5")
    ax[0].set(xlabel=r"friction coefficient $\mu$", ylabel="tip travel along x [mm]",
              title="tip travel vs friction")
    ax[0].legend(fontsize=8)
    for key, lab, off in (("mode_push_end", "end of push (1.88 s)", 0.05), ("mode_end", "end of pull (5 s)", -0.05)):
        ax[1].plot(mu, (st[key] == STICK) + off, ".", ms=3, label=lab)
    ax[1].set(xlabel=r"friction coefficient $\mu$", yticks=[0, 1], yticklabels=["sliding", "sticking"],
              title="contact mode at the end of each window")
    ax[1].legend(fontsize=8)
    ax[2].hist(st["travel_total"] * 1e3, bins=40)
    ax[2].set(xlabel="tip travel over the run [mm]", ylabel="samples",
              title=r"$\mu$ ~ U(0.1, 0.7): distribution of the travel")
    save_figure(fig, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    t1 = 5.0
    sys_ = system(t1)
    dists = {"contact.mu": mc.Uniform(0.1, 0.7)}
    t0 = time.perf_counter()
    res = mc.run(sys_, dists, a.samples, statistics(sys_.model, t1), key=jax.random.PRNGKey(2), chunk_size=a.chunk,
                 out=a.out / "study")
    wall = time.perf_counter() - t0
    res.save(a.out / "study")
    mu = np.ravel(res.draws["contact.mu"])
    st = {k: np.asarray(v) for k, v in res.statistics.items()}
    ok = res.status == 0
    push = classify(mu[ok], st["mode_push_end"][ok], MU_PUSH)
    pull = classify(mu[ok], st["mode_end"][ok], MU_PULL)
    stick_push = ok & (st["mode_push_end"] == STICK)
    stick_end = ok & (st["mode_end"] == STICK)
    ratio_err = max(float(np.max(np.abs(np.abs(st["ratio_push_end"][stick_push]) - MU_PUSH), initial=0.0)),
                    float(np.max(np.abs(np.abs(st["ratio_end"][stick_end]) - MU_PULL), initial=0.0)))
    lo = ok & (mu < MU_PUSH)
    hi = ok & (mu > MU_PUSH) & stick_push
    travel_lo = st["travel_push"][lo]
    o = np.argsort(mu[lo])
    monotone = bool(np.all(np.diff(travel_lo[o]) <= 1e-12))
    figure(mu[ok], {k: v[ok] for k, v in st.items()}, a.out / "friction.png")
    summary = {
        "n_samples": a.samples, "distribution": "contact.mu ~ Uniform(0.1, 0.7)", "dt": DT, "t1": t1,
        "status_counts": res.status_counts, "failed": [int(i) for i in res.failed], "wall_time_s": wall,
        "coulomb_push": push, "coulomb_pull": pull,
        "max_abs_ratio_error_sticking": ratio_err,
        "travel_push_below_threshold_monotone_decreasing": monotone,
        "travel_push_m": {"min": float(travel_lo.min()), "max": float(travel_lo.max())},
        "travel_push_sticking_max_abs_m": float(np.max(np.abs(st["travel_push"][hi]), initial=0.0)),
        "travel_total_quantiles_m": dict(zip(("q05", "q50", "q95"), map(float, np.quantile(st["travel_total"][ok], [0.05, 0.5, 0.95])))),
        "provenance": provenance(),
    }
    write_json(a.out / "summary.json", summary)
    readme = f"""# S2 Monte Carlo: LCP contact with an uncertain friction coefficient

Generated by `python experiments/montecarlo_s2_friction.py` (setup and physics in its docstring).

{a.samples} samples, `contact.mu` ~ Uniform(0.1, 0.7); the scenario's Lemke acceleration-level stepper, dt = {DT} s,
t1 = {t1} s; wall time {wall:.1f} s (incl. compile) on this machine.

Status counts: {res.status_counts}; failed indices: {[int(i) for i in res.failed]}.

## Coulomb's threshold

With the tip at rest the contact force balances the commanded tip force exactly, so the tip sticks
iff μ ≥ |F_x|/F_N: μ* = {MU_PUSH:.2f} at the end of the push, {MU_PULL:.2f} at the end of the pull.

| window | μ* | samples | sticking | sticking with μ < μ* | sliding with μ > μ* | largest μ − μ* still sliding |
|---|---|---|---|---|---|---|
| push (1.88 s) | {MU_PUSH:.2f} | {push['n']} | {push['sticking']} | {push['sticking_below_threshold']} | {push['sliding_above_threshold']} | {push['sliding_above_margin']:.2e} |
| pull (5 s) | {MU_PULL:.2f} | {pull['n']} | {pull['sticking']} | {pull['sticking_below_threshold']} | {pull['sliding_above_threshold']} | {pull['sliding_above_margin']:.2e} |

For every sticking sample |λ_T/λ_N| = |F_x|/F_N within {ratio_err:.1e}. A sample just above a
threshold can still be sliding at the window's end: it entered the window moving (the lift's drift)
and the net deceleration is ∝ μ − μ*.

## Travel

Push window, μ < μ*_push: {travel_lo.min() * 1e3:.1f} … {travel_lo.max() * 1e3:.1f} mm, monotone decreasing in μ:
{monotone}; sticking samples: |travel| ≤ {summary['travel_push_sticking_max_abs_m'] * 1e3:.2f} mm (the lift's drift: the tip's
operational-space mobility couples x and y, so lifting with F_y alone moves the tip along x).
Whole run: 5/50/95 % quantiles {', '.join(f'{v * 1e3:.1f}' for v in summary['travel_total_quantiles_m'].values())} mm.

![friction](friction.png)
"""
    (a.out / "README.md").write_text(readme)
    print(readme)


if __name__ == "__main__":
    main()
