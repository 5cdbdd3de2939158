"""Modal view of a fitted flexible link: natural frequencies and shapes with the joint locked, the
MAC against reference shapes, and an output-only first guess of the frequencies from measured
deflections.

* :func:`modal_frequencies` — the generalized eigenproblem ``K φ = ω² M φ`` of the link's elastic
  coordinates, ``M`` the block of the model's mass matrix (:func:`diffsim.mass_matrix`) and ``K``
  the Hessian of its potential energy (strain energy, boundary springs included) at the
  undeformed configuration: the link with its joint locked. Solved as a symmetric problem through
  the Cholesky factor ``M = C Cᵀ``: ``C⁻¹ K C⁻ᵀ u = ω² u``, ``φ = C⁻ᵀ u``. Traceable and
  differentiable (distinct frequencies).
* :func:`modal_report` — those frequencies [Hz] and the shapes sampled on a 101-point grid on
  ``[0, L]``, ``w_i(x) = Σ_j W_j(x/L) φ_ji`` in the link's bending plane, normalised to
  ``w_i(L) = 1``; given reference shapes, the modal assurance criterion
  ``MAC_ij = |φᵢᵀψⱼ|² / (φᵢᵀφᵢ ψⱼᵀψⱼ)`` (Allemang & Brown 1982) and the frequency errors; ``fit.json``
  entries and figures.
* :func:`measured_frequencies` — the matrix-pencil method (Hua & Sarkar 1990) on the free response
  after a move, all channels stacked: the Hankel matrices ``Y_c[k, l] = y_c(k + l)`` of every
  channel stacked, truncated to the ``2n (+1)`` dominant singular vectors ``V``, and the poles
  ``z_i = e^{s_i Δt}`` the eigenvalues of ``V₁⁺ V₂`` (``V₁``/``V₂``: ``V`` without its last / first
  row); natural frequency ``f_i = |s_i|/(2π)`` (the undamped one; the damped one is
  ``|Im s_i|/(2π)``), ``ζ_i = −Re s_i/|s_i|``. A short record (1.4 s after the move
  against a 0.72 s first period) leaves a periodogram a bin width of 0.7 Hz, useless for mode 1;
  the pencil resolves it.
* :func:`match_frequencies` — Levenberg–Marquardt in ``log p`` on ``log f_i(p) = log f̄_i`` (the first
  frequencies of :func:`modal_frequencies`) for as many named parameters as frequencies: the start
  of a fit chosen so that the model's first frequencies equal the measured ones.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics.dispatch import mass_matrix, potential_energy
from ..io.results import write_json
from ..model.beam import Beam
from ..model.model import Model, neutral_configuration
from ..precision import full_precision
from ..simulation.system import System, get_param, set_params
from ..viz import new_figure, save_figure

N_GRID = 101


class ModalError(ValueError):
    """A body that is not a flexible beam link, or reference / measured data that cannot be used."""


def _model(obj) -> Model:
    if isinstance(obj, System):
        return obj.model
    if isinstance(obj, Model):
        return obj
    raise ModalError(f"expected a diffsim System or Model, got {type(obj).__name__}")


def _link(model: Model, body: str):
    t = model.topology
    names = list(t.body_names)
    if body not in names:
        raise ModalError(f"no body {body!r}; bodies: {names}")
    i = names.index(body)
    if not t.modes[i]:
        flex = [b for k, b in enumerate(names) if t.modes[k]]
        raise ModalError(f"body {body!r} is not a flexible link; flexible bodies: {flex}")
    return i


@full_precision
def modal_frequencies(system, body: str):
    """``(ω [ne] rad/s ascending, Φ [ne, ne])`` of the link ``body`` with its joint locked
    (module docstring), ``Φᵀ M Φ = I``. Traceable."""
    model = _model(system)
    i = _link(model, body)
    t = model.topology
    eq, ev = t.e_q_slice(i), t.e_v_slice(i)
    q = (system.q0 if isinstance(system, System) else neutral_configuration(model)).at[eq].set(0.0)
    M = mass_matrix(model, q)[ev, ev]
    K = jax.hessian(lambda d: potential_energy(model, q.at[eq].set(d)))(q[eq])
    C = jnp.linalg.cholesky(M)
    Ci = jax.scipy.linalg.solve_triangular(C, jnp.eye(M.shape[0], dtype=M.dtype), lower=True)
    A = Ci @ K @ Ci.T
    lam, U = jnp.linalg.eigh(0.5 * (A + A.T))
    return jnp.sqrt(jnp.clip(lam, 0.0, None)), Ci.T @ U


@eqx.filter_jit
def _modal_jit(system, body):
    return modal_frequencies(system, body)


def _plane_shapes(model: Model, i: int, eta):
    """Transverse displacement of the link's bending plane per elastic coordinate [len(eta), ne]
    (x–y plane if the link bends in it, else x–z)."""
    spec = model.flex[i].spec
    if not isinstance(spec, Beam):
        raise ModalError("modal_report needs a link built by diffsim.beam (its mode shapes), got section data only")
    fams = spec.families()
    names = [f[0] for f in fams]
    plane = "y" if "y" in names else ("z" if "z" in names else None)
    if plane is None:
        raise ModalError("modal_report: the link has no bending modes (modes_y / modes_z)")
    cols = []
    for name, shapes, _, _ in fams:
        W = shapes.fields(jnp.asarray(eta, model.dtype))["W"]
        cols.append(W if name == plane else jnp.zeros_like(W))
    return jnp.concatenate(cols, axis=-1), spec.L


def _as_reference(reference, x):
    """``(f_hz or None, shapes [n_ref, len(x)])`` from a :class:`ModalReport`, a ``fit.json``-like
    dict (``frequencies_hz``, ``mode_shapes: {x, w}``) or a pair ``(f_hz, (x_ref, w_ref))``."""
    if isinstance(reference, ModalReport):
        f, xr, w = reference.frequencies_hz, reference.x, reference.shapes
    elif isinstance(reference, dict):
        if "mode_shapes" not in reference:
            raise ModalError("reference dict needs 'mode_shapes': {'x': [...], 'w': [[...], ...]}")
        f = reference.get("frequencies_hz")
        xr, w = reference["mode_shapes"]["x"], reference["mode_shapes"]["w"]
    else:
        f, (xr, w) = reference
    xr, w = np.asarray(xr, float), np.atleast_2d(np.asarray(w, float))
    if w.shape[1] != xr.size:
        raise ModalError(f"reference shapes have {w.shape[1]} samples per mode, x has {xr.size}")
    if xr.min() > x[0] + 1e-9 * x[-1] or xr.max() < x[-1] - 1e-9 * x[-1]:
        raise ModalError(f"reference shapes cover [{xr.min():g}, {xr.max():g}] m, the link [0, {x[-1]:g}] m")
    shapes = np.stack([np.interp(x, xr, wk) for wk in w])
    return (None if f is None else np.asarray(f, float)), shapes


def mac(phi, psi):
    """Modal assurance criterion ``|φᵢᵀψⱼ|² / (φᵢᵀφᵢ ψⱼᵀψⱼ)`` [n, n'] of shapes [n, m] × [n', m]."""
    phi, psi = np.atleast_2d(phi), np.atleast_2d(psi)
    return (phi @ psi.T) ** 2 / np.outer(np.sum(phi**2, 1), np.sum(psi**2, 1))


@dataclasses.dataclass
class ModalReport:
    """What :func:`modal_report` found (NumPy): ``x`` [101] m, ``frequencies_hz`` [n],
    ``shapes`` [n, 101] (``w(L) = 1``); with a reference: ``reference_hz`` [n'] (or ``None``),
    ``reference_shapes`` [n', 101], ``mac`` [n, n'], ``frequency_rel_error`` [min(n, n')] (mode
    ``i`` against reference mode ``i``)."""

    body: str
    x: np.ndarray
    frequencies_hz: np.ndarray
    shapes: np.ndarray
    reference_hz: np.ndarray | None = None
    reference_shapes: np.ndarray | None = None
    mac: np.ndarray | None = None
    frequency_rel_error: np.ndarray | None = None

    def to_json(self) -> dict:
        """``{"frequencies_hz", "mode_shapes": {"x", "w"}}`` (+ ``mac``, ``mac_diagonal``,
        ``reference_hz``, ``frequency_rel_error`` with a reference)."""
        out = {"frequencies_hz": self.frequencies_hz, "mode_shapes": {"x": self.x, "w": self.shapes}}
        if self.mac is not None:
            k = min(self.mac.shape)
            out.update(mac=self.mac, mac_diagonal=np.diag(self.mac)[:k], reference_hz=self.reference_hz,
                       frequency_rel_error=self.frequency_rel_error)
        return out

    def save(self, out_dir, initial: ModalReport | None = None, figures_only: bool = False) -> list[Path]:
        """``modal.json`` (unless ``figures_only``), ``mode_shapes.png`` (this link's shapes, the
        ``initial`` ones dashed, the reference dotted) and ``mac.png`` (with a reference)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        if not figures_only:
            paths.append(out / "modal.json")
            write_json(paths[0], self.to_json())
        n = self.shapes.shape[0]
        fig, axes = new_figure(1, n, figsize=(3.6 * n, 3.4), squeeze=False)
        for k, ax in enumerate(axes[0]):
            ax.plot(self.x, self.shapes[k], "-", color="C0", lw=1.6, label=f"model {self.frequencies_hz[k]:.4g} Hz")
            if initial is not None and k < initial.shapes.shape[0]:
                ax.plot(initial.x, initial.shapes[k], "--", color="C1", lw=1.2,
                        label=f"initial {initial.frequencies_hz[k]:.4g} Hz")
            if self.reference_shapes is not None and k < self.reference_shapes.shape[0]:
                lab = "reference" + (f" {self.reference_hz[k]:.4g} Hz" if self.reference_hz is not None else "")
                ax.plot(self.x, self.reference_shapes[k], ":", color="k", lw=1.6, label=lab)
            ax.axhline(0.0, color="0.7", lw=0.6)
            ax.set_title(f"mode {k + 1}")
            ax.set_xlabel("x [m]")
            ax.set_ylabel("w / w(L) [1], hub locked")
            ax.legend(fontsize=7, loc="best")
        paths.append(save_figure(fig, out / "mode_shapes.png"))
        if self.mac is not None:
            C = self.mac
            fig, ax = new_figure(figsize=(1.6 + 0.9 * C.shape[1], 1.2 + 0.9 * C.shape[0]))
            im = ax.imshow(C, vmin=0, vmax=1, cmap="viridis")
            for i in range(C.shape[0]):
                for j in range(C.shape[1]):
                    ax.text(j, i, f"{C[i, j]:.4f}", ha="center", va="center", fontsize=8,
                            color="k" if C[i, j] > 0.5 else "w")
            ax.set_xticks(range(C.shape[1]), [f"ref {j + 1}" for j in range(C.shape[1])])
            ax.set_yticks(range(C.shape[0]), [f"model {i + 1}" for i in range(C.shape[0])])
            fig.colorbar(im, ax=ax, shrink=0.8, label="MAC")
            ax.set_title("modal assurance criterion")
            paths.append(save_figure(fig, out / "mac.png"))
        return paths


@full_precision
def modal_report(system, body: str, reference=None) -> ModalReport:
    """Natural frequencies [Hz] of the link ``body`` with its joint locked and its shapes on
    101 points of ``[0, L]`` normalised to ``w(L) = 1`` (module docstring); ``reference`` (a
    :class:`ModalReport`, a dict with ``mode_shapes: {x, w}`` and optionally ``frequencies_hz``, or
    ``(f_hz, (x, w))``) adds the MAC matrix and the frequency errors."""
    model = _model(system)
    i = _link(model, body)
    omega, Phi = _modal_jit(system, body)
    eta = np.linspace(0.0, 1.0, N_GRID)
    Wg, L = _plane_shapes(model, i, eta)
    w = np.asarray(Wg @ Phi).T  # [n, 101]
    tip = w[:, -1]
    if np.any(np.abs(tip) < 1e-9 * np.max(np.abs(w), axis=1)):
        raise ModalError("modal_report: a mode has no tip deflection (w(L) = 0); it cannot be normalised to w(L) = 1")
    w = w / tip[:, None]
    x = float(L) * eta
    rep = ModalReport(body, x, np.asarray(omega) / (2 * np.pi), w)
    if reference is not None:
        f_ref, s_ref = _as_reference(reference, x)
        rep.reference_hz, rep.reference_shapes = f_ref, s_ref
        rep.mac = mac(w, s_ref)
        if f_ref is not None:
            k = min(len(f_ref), len(rep.frequencies_hz))
            rep.frequency_rel_error = rep.frequencies_hz[:k] / f_ref[:k] - 1.0
    return rep


# --------------------------------------------------------------------------------------------
# Output-only first guess
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class MeasuredModes:
    """Result of :func:`measured_frequencies`: ``frequencies_hz`` [n] (undamped natural
    frequencies ``|s|/(2π)``), ``damping_ratio`` [n],
    the Hankel matrix's ``singular_values`` (the model order's evidence) and the samples used."""

    frequencies_hz: np.ndarray
    damping_ratio: np.ndarray
    singular_values: np.ndarray
    n_samples: int


def measured_frequencies(t, y, n_modes: int, *, t_start: float | None = None, pencil: int | None = None,
                         offset: bool = True) -> MeasuredModes:  # fmt: skip
    """The first ``n_modes`` natural frequencies in a free response (module docstring: the matrix
    pencil method over all channels).

    Args:
        t: sample times [T] (uniform spacing).
        y: measured deflections [T] or [T, channels] (e.g. ``w_<x>`` of every sensor).
        n_modes: how many oscillating modes the response holds (the pencil keeps ``2 n_modes``
            singular vectors, + 1 for a constant ``offset``).
        t_start: use only ``t >= t_start`` (the free response after a move).
        pencil: the pencil parameter (Hankel width), default a third of the samples.
    """
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != t.shape[0] or y.shape[1] < 1:
        raise ModalError(f"measured_frequencies: y must be [T] or [T, channels] with T = {t.shape[0]}, got {y.shape}")
    if int(n_modes) != n_modes or n_modes < 1:
        raise ModalError(f"measured_frequencies: n_modes must be a positive integer, got {n_modes!r}")
    keep = t >= (t[0] if t_start is None else t_start)
    t, y = t[keep], y[keep]
    dt = np.diff(t)
    if t.size < 8 or not np.allclose(dt, dt[0], rtol=1e-6, atol=0):
        raise ModalError("measured_frequencies needs at least 8 uniformly spaced samples after t_start")
    if not np.all(np.isfinite(y)):
        raise ModalError("measured_frequencies: the data have NaN or infinite samples")
    order = 2 * int(n_modes) + (1 if offset else 0)
    N = t.size
    Lp = N // 3 if pencil is None else int(pencil)
    if not order < Lp < N - order:
        raise ModalError(f"measured_frequencies: {N} samples are too few for {n_modes} modes (pencil {Lp})")
    H = np.concatenate([np.lib.stride_tricks.sliding_window_view(y[:, c], Lp + 1) for c in range(y.shape[1])])
    _, s, Vt = np.linalg.svd(H, full_matrices=False)
    V = Vt[:order].T  # [Lp + 1, order]
    z = np.linalg.eigvals(np.linalg.pinv(V[:-1]) @ V[1:])
    sp = np.log(z.astype(complex)) / dt[0]
    osc = sp[sp.imag > 1e-9 / dt[0]]
    if osc.size < n_modes:
        raise ModalError(f"measured_frequencies: found {osc.size} oscillating modes of the {n_modes} asked for; the "
                         "response may not hold that many above the noise (singular values: "
                         f"{np.array2string(s[:order + 2], precision=3)})")  # fmt: skip
    osc = osc[np.argsort(osc.imag)][:n_modes]
    return MeasuredModes(np.abs(osc) / (2 * np.pi), -osc.real / np.abs(osc), s[: order + 4], N)


@full_precision
def match_frequencies(system, names, target_hz, body: str, *, max_iter: int = 50, tol: float = 1e-10) -> dict:
    """Values of the named (positive) parameters for which the link's first ``len(names)``
    hub-locked frequencies equal ``target_hz`` (Levenberg–Marquardt in ``log p`` with Marquardt's
    scaling and steps capped at a factor e; module docstring). Returns ``{name: value}``; raises :class:`ModalError` when it
    does not converge."""
    names = list(names)
    target = np.asarray(target_hz, float)
    if target.ndim != 1 or target.size != len(names):
        raise ModalError(f"match_frequencies: give as many target frequencies as names ({len(names)}), got {target}")
    p0 = np.array([float(get_param(system, n)) for n in names])
    if np.any(~(p0 > 0)) or np.any(~np.isfinite(p0)):
        raise ModalError(f"match_frequencies: start values must be positive and finite, got {dict(zip(names, p0))}")
    k = len(names)

    @jax.jit
    def residual(logp):
        s = set_params(system, {n: jnp.exp(logp[j]) for j, n in enumerate(names)})
        return jnp.log(modal_frequencies(s, body)[0][:k] / (2 * jnp.pi)) - jnp.log(target)

    jac = jax.jit(jax.jacfwd(residual))
    x, lam = np.log(p0), 1e-3
    r = np.asarray(residual(x))
    for _ in range(max_iter):
        if np.max(np.abs(r)) < tol:
            return dict(zip(names, np.exp(x).tolist()))
        J = np.asarray(jac(x))
        A, g = J.T @ J, J.T @ r
        while lam < 1e12:  # Marquardt: (JᵀJ + λ diag JᵀJ) Δ = −Jᵀr, steps capped at a factor e
            step = -np.linalg.solve(A + lam * np.diag(np.diag(A)), g)
            x_new = x + step / max(1.0, np.max(np.abs(step)))
            r_new = np.asarray(residual(x_new))
            if np.all(np.isfinite(r_new)) and r_new @ r_new < r @ r:
                x, r, lam = x_new, r_new, max(lam / 10, 1e-12)
                break
            lam *= 10
        else:
            break
    raise ModalError(f"match_frequencies: no match after {max_iter} iterations (residual {np.abs(r).max():.3g} in log f)")
