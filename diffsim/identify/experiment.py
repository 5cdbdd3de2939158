"""Measured experiments and the observables the simulator predicts for them.

An :class:`Experiment` is a time grid ``t`` [T], named channels of data (each [T] or [T, k]),
a noise standard deviation per channel, and the named system parameters that differ in this
experiment (initial state, inputs: ``{"q0.ball": ..., "contact.plane0.offset": ...}``).

Observable names (:func:`observable`), each a function of a :class:`~diffsim.Trajectory`:

* ``q.<joint>``, ``v.<joint>`` — joint coordinates / rates ([T, nq_j] / [T, nv_j]); the
  quaternion of a spherical or free joint's ``q`` is compared up to its sign (``q`` and ``−q``
  are one rotation: each measured sample takes the sign of the prediction,
  ``y · sign(<y, y_pred>)``, so a logger's ``w >= 0`` convention fits); a hinge angle is compared
  as it is (a fit warns about data wrapped to (−π, π]: ``np.unwrap`` them);
* ``modes.<body>`` — the modal coordinates of a flexible link (its deflection shape amplitudes);
* ``body.<b>.pos``, ``body.<b>.com`` — world position of a body's origin / centre of mass [T, 3]
  (``.x``, ``.y``, ``.z`` suffixes pick one component: ``body.ball.pos.z``);
* ``body.<b>.rot`` — world rotation matrix [T, 9] (row-major);
* ``site.<s>.pos`` (and ``.x|.y|.z``) — world position of a site;
* ``deflection.<b>.<y|z>@<x>`` — a flexible link's centre-line deflection at ``x`` metres along
  it, in its floating frame [T] (``deflection.link.y@0.4``);
* ``contact.f_n`` — normal contact forces [T, n_pairs] (compliant contact);
* any name given a function ``f(traj) -> [T, ...]`` in ``observables=`` (a scenario's own
  observables, e.g. the ball's ``z``).

A channel's data may differ from its prediction's shape by a trailing 1 (a CSV column ``q.arm``
[T] for the hinge's [T, 1]): the prediction is reshaped to the data's.
"""

from __future__ import annotations

import csv
import functools
import re
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics.kinematics import forward_kinematics, site_poses
from ..simulation.trajectory import Trajectory


class ExperimentError(ValueError):
    """Malformed measured data or an observable the system cannot produce."""


class Experiment:
    """Measured data of one run (module docstring).

    Args:
        t: sample times [T], strictly increasing, at least two.
        data: channel name → array [T] or [T, k].
        sigma: channel name → noise standard deviation: a scalar, one per component (shape
            ``[k]``) or one per sample (shape ``[T]`` for a ``[T]`` channel, ``[T, 1]`` or ``[T, k]``
            for a ``[T, k]`` channel; a ``[T]`` σ of a ``[T, k]`` channel with ``k = T`` is refused as
            ambiguous); channels left out get 1 (then the covariance is scaled by the residual
            variance, see :func:`diffsim.identify.fit`).
        overrides: named system parameters of this experiment (``q0.<joint>``, ``v0.<joint>``, …);
            a parameter being fitted cannot be one of them (:func:`diffsim.identify.fit` refuses it).
        tau, loads: this experiment's inputs (as in :class:`diffsim.System`); ``None`` keeps the
            system's. ``tau=`` replaces the system's joint torques only (its point forces and
            ``ctrl`` stay); ``loads=`` replaces all of its loads.
        name: a label for reports (a name repeated among a fit's experiments gets a suffix,
            ``#2``, ``#3``, … in order: :func:`diffsim.identify.fit`).
    """

    def __init__(self, t, data: Mapping[str, object], sigma: Mapping[str, object] | None = None,
                 overrides: Mapping[str, object] | None = None, name: str = "experiment", *, tau=None,
                 loads=None):
        t = _real(t, f"{name}: t")
        if t.ndim != 1 or t.shape[0] < 2:
            raise ExperimentError(f"{name}: t must be a 1-D array of at least two times, got shape {t.shape}")
        if not np.all(np.isfinite(t)):
            raise ExperimentError(f"{name}: t has NaN or infinite entries")
        if not np.all(np.diff(t) > 0):
            k = int(np.argmin(np.diff(t)))
            raise ExperimentError(f"{name}: t must be strictly increasing (t[{k}] = {t[k]} >= t[{k + 1}] = {t[k + 1]})")
        if not data:
            raise ExperimentError(f"{name}: no data channels")
        if tau is not None and loads is not None:
            raise ExperimentError(f"{name}: give either tau= (the joint torques) or loads= (all loads), not both")
        chans = {}
        for ch, y in data.items():
            y = _real(y, f"{name}: channel {ch!r}")
            if y.ndim == 0 or y.shape[0] != t.shape[0]:
                raise ExperimentError(f"{name}: channel {ch!r} has {y.shape[0] if y.ndim else 'no'} samples (one per "
                                      f"time along its first axis), t has {t.shape[0]}")
            bad = ~np.isfinite(y)
            if np.any(bad):
                k = int(np.argwhere(bad.reshape(y.shape[0], -1).any(axis=1))[0, 0])
                raise ExperimentError(f"{name}: channel {ch!r} has NaN or infinite samples (first at t = {t[k]})")
            chans[ch] = y
        sigma = dict(sigma or {})
        unknown = set(sigma) - set(chans)
        if unknown:
            raise ExperimentError(f"{name}: sigma given for unknown channels {sorted(unknown)}; channels: {sorted(chans)}")
        sig = {ch: _sigma(name, ch, y, sigma.get(ch, 1.0)) for ch, y in chans.items()}
        self.t, self.data, self.sigma = t, chans, sig
        self.sigma_given = {ch: ch in sigma for ch in chans}
        self.overrides = dict(overrides or {})
        self.tau, self.loads = tau, loads
        self.name = name

    @property
    def n_samples(self) -> int:
        return int(sum(y.size for y in self.data.values()))

    def __repr__(self):
        chans = ", ".join(f"{k}{list(v.shape[1:]) or ''}" for k, v in self.data.items())
        return f"Experiment({self.name!r}, T={self.t.shape[0]}, t=[{self.t[0]:g}, {self.t[-1]:g}], channels: {chans})"


def _real(x, what: str) -> np.ndarray:
    """``x`` as a float array; complex, text or object data raise :class:`ExperimentError` naming
    ``what`` (a channel of an .npz file can hold strings)."""
    a = np.asarray(x)
    if np.iscomplexobj(a):
        raise ExperimentError(f"{what} is complex ({a.dtype}): give real numbers (its real and imaginary parts as "
                              "two channels, if both were measured)")
    try:
        return np.asarray(a, dtype=float)
    except (TypeError, ValueError) as e:
        raise ExperimentError(f"{what} is not numeric ({a.dtype}: {e})") from None


def _sigma(name: str, ch: str, y: np.ndarray, given) -> np.ndarray:
    """The σ of channel ``ch`` (data ``y`` [T, ...]): per component (broadcast to ``y.shape[1:]``)
    or per sample (``[T]`` for a ``[T]`` channel, ``[T, 1]`` / ``[T, k]``: broadcast to
    ``y.shape``). A ``[T]`` σ of a ``[T, k]`` channel with ``k = T`` could be either: refused."""
    s = _real(given, f"{name}: sigma of {ch!r}")
    T, comp = y.shape[0], y.shape[1:]
    per_sample_shape = f"[{T}]" if y.ndim == 1 else f"[{T}, 1] or {[T, *comp]}"
    if y.ndim >= 2 and s.shape == (T,) and comp[-1] == T:
        raise ExperimentError(f"{name}: sigma of {ch!r} has shape ({T},), and the channel {list(y.shape)} has {T} "
                              f"samples and {T} components: give shape [{T}, 1] for one σ per sample or "
                              f"{list(comp)} for one per component")
    try:
        out = np.broadcast_to(s, comp).copy()
    except ValueError:
        out = None
    if out is None and s.ndim == y.ndim and s.shape[0] == T:
        try:
            out = np.broadcast_to(s, y.shape).copy()
        except ValueError:
            out = None
    if out is None:
        raise ExperimentError(f"{name}: sigma of {ch!r} has shape {s.shape}; give a scalar, one per component "
                              f"(shape {comp}) or one per sample (shape {per_sample_shape})")
    if not np.all(np.isfinite(out)) or np.any(out <= 0):
        raise ExperimentError(f"{name}: sigma of {ch!r} must be positive and finite, got {s.tolist()}")
    return out


def load_csv(path, *, sigma=None, overrides=None, time_column: str = "t", name: str | None = None) -> Experiment:
    """An :class:`Experiment` from a CSV file with a header row: a time column (``t``) and one
    column per channel (``z``; a vector channel as ``x[0], x[1], …``)."""
    path = Path(path)
    if not path.exists():
        raise ExperimentError(f"data file {path} does not exist")
    with path.open(newline="", encoding="utf-8-sig") as fh:  # utf-8-sig: Excel's byte-order mark
        rows = list(csv.reader(fh))
    if len(rows) < 3:
        raise ExperimentError(f"{path}: needs a header row and at least two samples")
    header = [h.strip() for h in rows[0]]
    if time_column not in header:
        raise ExperimentError(f"{path}: no time column {time_column!r} in the header {header}")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise ExperimentError(f"{path}: the header names the columns {dup} more than once")
    rows = [(k + 2, r) for k, r in enumerate(rows[1:]) if any(c.strip() for c in r)]
    for line, r in rows:
        if len(r) != len(header):
            raise ExperimentError(f"{path}: every row must have {len(header)} values (the header's); line {line} "
                                  f"has {len(r)}")
    try:
        values = np.array([[float(x) for x in r] for _, r in rows])
    except ValueError as e:
        raise ExperimentError(f"{path}: non-numeric entry ({e})") from None
    return _from_columns(dict(zip(header, values.T)), time_column, sigma, overrides, name or path.stem)


def load_npz(path, *, sigma=None, overrides=None, time_column: str = "t", name: str | None = None) -> Experiment:
    """An :class:`Experiment` from a ``.npz`` file with an array ``t`` and one array per channel."""
    path = Path(path)
    if not path.exists():
        raise ExperimentError(f"data file {path} does not exist")
    try:
        with np.load(path) as f:
            cols = {k: f[k] for k in f.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:  # not an .npz, or object arrays (pickles)
        raise ExperimentError(f"{path}: cannot read it as a NumPy .npz file of arrays ({e})") from None
    if time_column not in cols:
        raise ExperimentError(f"{path}: no array {time_column!r} (arrays: {sorted(cols)})")
    return _from_columns(cols, time_column, sigma, overrides, name or path.stem)


def load(path, **kw) -> Experiment:
    """:func:`load_csv` or :func:`load_npz` by the file's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == ".npz":
        return load_npz(path, **kw)
    if suffix in (".csv", ".txt"):
        return load_csv(path, **kw)
    raise ExperimentError(f"{path}: unknown data format {suffix!r} (use .csv with a header row, or .npz)")


_VECTOR_COLUMN = re.compile(r"^(?P<base>[^\[\]]+)\[\s*(?P<index>\d+)\s*\]$")


def _from_columns(cols, time_column, sigma, overrides, name) -> Experiment:
    """The experiment of named columns: ``z`` is a channel, ``x[0], x[1], …, x[k-1]`` one vector
    channel ``x`` [T, k] in index order (every index from 0 to k − 1 exactly once; a name both bare
    and indexed, or any other use of brackets, is refused)."""
    cols = dict(cols)
    t = cols.pop(time_column)
    where = f"{name}:"
    bare, indexed = [], {}
    for key in cols:
        m = _VECTOR_COLUMN.match(key.strip())
        if m is None:
            if "[" in key or "]" in key:
                raise ExperimentError(f"{where} column {key!r}: a vector channel's columns are named x[0], x[1], … "
                                      "(one integer index from 0)")
            bare.append(key)
        else:
            indexed.setdefault(m.group("base").strip(), []).append((int(m.group("index")), key))
    chans = {}
    for key in bare:
        if key in indexed:
            raise ExperimentError(f"{where} {key!r} is both a column and a vector channel "
                                  f"({', '.join(k for _, k in indexed[key])}): rename one")
        chans[key] = _real(cols[key], f"{where} channel {key!r}")
    for base, items in indexed.items():
        idx = sorted(i for i, _ in items)
        if idx != list(range(len(items))):
            raise ExperimentError(f"{where} the columns of vector channel {base!r} have indices {idx}: give each of "
                                  f"0 … {len(items) - 1} exactly once ({', '.join(k for _, k in items)})")
        comps = [_real(cols[k], f"{where} column {k!r}") for _, k in sorted(items)]
        if any(c.ndim != 1 for c in comps):
            raise ExperimentError(f"{where} the columns of vector channel {base!r} must each be 1-D (one value per "
                                  f"sample), got shapes {[c.shape for c in comps]}")
        try:
            chans[base] = np.stack(comps, 1)
        except ValueError:
            raise ExperimentError(f"{where} the columns of vector channel {base!r} have different lengths "
                                  f"{[c.shape[0] for c in comps]}") from None
    return Experiment(t, chans, sigma=sigma, overrides=overrides, name=name)


# ------------------------------------------------------------------------------------------
# Observables
# ------------------------------------------------------------------------------------------

_AXES = {"x": 0, "y": 1, "z": 2}


def _component(fn, axis):
    return fn if axis is None else (lambda tr: fn(tr)[..., _AXES[axis]])


_DEFLECTION = re.compile(r"^deflection\.(?P<body>[^.@]+)\.(?P<axis>[xyz])@(?P<x>.+)$")


def _check_deflection(model, name, body, x):
    """``deflection.<body>.<y|z|x>@<x>`` names a beam link of ``model`` and a point on it."""
    t = model.topology
    bodies = list(t.body_names)
    if body not in bodies or not t.modes[bodies.index(body)]:
        raise ExperimentError(f"observable {name!r}: {body!r} is not a flexible body")
    spec = model.flex[bodies.index(body)].spec
    if not hasattr(spec, "deflection"):
        raise ExperimentError(f"observable {name!r}: the link {body!r} is not a beam (diffsim.beam)")
    try:
        xv = float(x)
    except ValueError:
        raise ExperimentError(f"observable {name!r}: position {x!r} is not a number (metres along the link)") from None
    L = float(spec.L)
    if not 0.0 <= xv <= L:
        raise ExperimentError(f"observable {name!r}: position {xv:g} m is off the link [0, {L:g}] m")


def _deflection(t, body, axis, x):
    """The link's centre-line displacement at ``x`` [m] along ``axis`` [T] (checked by
    :func:`_check_deflection`)."""
    i = list(t.body_names).index(body)
    sl, k, xv = t.e_q_slice(i), _AXES[axis], float(x)

    def f(tr):
        D = tr.model.flex[i].deflection(jnp.asarray(xv, tr.q.dtype))  # [3, ne]
        return tr.q[:, sl] @ D[k]

    return f


@functools.lru_cache(maxsize=None)
def _builtin(t, name: str):
    """The built-in observable ``name`` of a model with topology ``t``: one function per
    (structure, name), so that fits of equal structure compare equal (their compiled programs are
    reused); raises :class:`ExperimentError` for a name the model cannot produce, None for an
    unknown name."""
    parts = name.split(".")
    head = parts[0]
    if head in ("q", "v") and len(parts) == 2:
        joints = list(t.joint_names)
        if parts[1] not in joints:
            raise ExperimentError(f"observable {name!r}: no joint {parts[1]!r}; joints: {joints}")
        i = joints.index(parts[1])
        sl = t.q_slice(i) if head == "q" else t.v_slice(i)
        return lambda tr: (tr.q if head == "q" else tr.v)[:, sl]
    if head == "modes" and len(parts) == 2:
        bodies = list(t.body_names)
        if parts[1] not in bodies or not t.modes[bodies.index(parts[1])]:
            raise ExperimentError(f"observable {name!r}: {parts[1]!r} is not a flexible body")
        sl = t.e_q_slice(bodies.index(parts[1]))
        return lambda tr: tr.q[:, sl]
    m = _DEFLECTION.match(name)
    if m is not None:
        return _deflection(t, m.group("body"), m.group("axis"), m.group("x"))
    if head == "body" and len(parts) in (3, 4):
        bodies = list(t.body_names)
        if parts[1] not in bodies:
            raise ExperimentError(f"observable {name!r}: no body {parts[1]!r}; bodies: {bodies}")
        i = bodies.index(parts[1])
        axis = parts[3] if len(parts) == 4 else None
        if axis is not None and axis not in _AXES:
            raise ExperimentError(f"observable {name!r}: component must be x, y or z")
        if parts[2] == "pos":
            return _component(lambda tr: tr._map_q(lambda q: forward_kinematics(tr.model, q).p[i]), axis)
        if parts[2] == "com":
            return _component(lambda tr: tr.body_com()[:, i], axis)
        if parts[2] == "rot" and axis is None:
            return lambda tr: tr._map_q(lambda q: forward_kinematics(tr.model, q).R[i].reshape(9))
    if head == "site" and len(parts) in (3, 4) and parts[2] == "pos":
        sites = list(t.site_names)
        if parts[1] not in sites:
            raise ExperimentError(f"observable {name!r}: no site {parts[1]!r}; sites: {sites}")
        k = sites.index(parts[1])
        axis = parts[3] if len(parts) == 4 else None
        if axis is not None and axis not in _AXES:
            raise ExperimentError(f"observable {name!r}: component must be x, y or z")
        return _component(lambda tr: tr._map_q(lambda q: site_poses(tr.model, q)[1][k]), axis)
    if name == "contact.f_n":
        return lambda tr: tr.contact_forces().f_n
    return None


def observable(model, name: str, custom: Mapping[str, Callable] | None = None) -> Callable[[Trajectory], jax.Array]:
    """The function ``traj -> [T, ...]`` predicting the channel ``name`` (module docstring);
    raises :class:`ExperimentError` naming the valid choices for an unknown one. A built-in
    observable is the same function object for every model of the same structure."""
    if custom and name in custom:
        return custom[name]
    m = _DEFLECTION.match(name)
    if m is not None:
        _check_deflection(model, name, m.group("body"), m.group("x"))
    fn = _builtin(model.topology, name)
    if fn is None:
        extra = f"; or one of {sorted(custom)}" if custom else ""
        raise ExperimentError(
            f"unknown observable {name!r}: use q.<joint>, v.<joint>, body.<b>.pos|com|rot, body.<b>.pos.x|y|z, "
            f"site.<s>.pos, modes.<b>, deflection.<b>.y@<x>, contact.f_n{extra}")
    return fn


def predict(traj: Trajectory, channels, fns) -> dict[str, jax.Array]:
    """Every channel's prediction, shaped like its data ([T] or [T, k])."""
    return {ch: jnp.asarray(fns[ch](traj)) for ch in channels}
