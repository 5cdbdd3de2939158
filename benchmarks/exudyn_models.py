#!/usr/bin/env python
"""Exudyn reference models for two planar flexible-beam benchmarks.

Independent reference solutions (no diffsim import) computed with Exudyn
(https://github.com/jgerstmayr/EXUDYN, ``pip install exudyn``):

1. ``spinup``   : the rotating cantilever of Kane, Ryan & Banerjee (1987), prescribed spin-up.
2. ``two_link`` : SPEC S3's planar two-link arm with prescribed joint motions.

Discretisation
--------------
Both use Exudyn's *geometrically exact* (Simo-Reissner) planar beam
``ObjectBeamGeometricallyExact2D`` on ``NodeRigidBody2D`` nodes (x, y, rotation per node;
2-node element, linear interpolation, one-point (reduced) integration of the strains).
Axial, shear and bending deformation are all included; the shear stiffness is set large
(``shear_factor`` * EA) so that the beams behave like Euler-Bernoulli beams, and the rotary
inertia of the cross section is rho*I = rhoA * I/A (negligible for these slender beams).

Prescribed motions are imposed with Lagrange-multiplier constraints:
* position of a root node: ``ObjectJointRevolute2D`` (ground <-> node / body marker);
* a prescribed rotation: ``CoordinateConstraint`` (ObjectConnectorCoordinate) on the
  rotation coordinates, whose equation is ``q_m1 - q_m0 - offset(t) = 0``, with
  ``offsetUserFunction`` giving the prescribed angle; the motor torque acting on the
  driven coordinate q_m1 is ``-lambda`` (the multiplier, output ``Force``).

Time integration: Exudyn's implicit generalized-alpha (index-3 DAE, Newton, fixed step
``h``), spectral radius ``rho_inf`` (default 0.9, i.e. slight high-frequency dissipation;
second-order accurate, converging to the undamped solution as h -> 0).

Each function returns a dict of numpy arrays on a uniform output grid plus ``wall_time``:
the time spent in ``SolveDynamic`` only (model building / assembly excluded).

``python benchmarks/exudyn_models.py`` runs the convergence study (elements 4..32 (two-link:
..64), step halving) and writes npz files (finest run), ``convergence.json`` (table) and plots
to ``experiments/results/exudyn_reference/`` (about 2-3 min on 2 cores). ``--quick``: smoke test.
Tested with Exudyn 1.13.6 and 1.9.0 (identical results to ~1e-8).
"""

from __future__ import annotations

import math
import time

import numpy as np

import exudyn as exu
from exudyn.itemInterface import (
    CoordinateConstraint,
    LoadForceVector,
    MarkerBodyPosition,
    MarkerNodeCoordinate,
    MarkerNodePosition,
    NodePointGround,
    NodeRigidBody2D,
    ObjectBeamGeometricallyExact2D,
    ObjectGround,
    ObjectJointRevolute2D,
    ObjectRigidBody2D,
    SensorNode,
    SensorObject,
)


def _compat(cls, **kw):
    """Create an item with the parameter names of Exudyn >= 1.12 (length, mass, ...), falling
    back to the older 'physics...' names (e.g. Exudyn 1.9: physicsLength, physicsMass)."""
    try:
        return cls(**kw)
    except TypeError:
        return cls(**{("physics" + k[0].upper() + k[1:]
                       if k not in ("nodeNumber", "nodeNumbers", "name") else k): v
                      for k, v in kw.items()})


ELEMENT = "ObjectBeamGeometricallyExact2D (2-node Simo-Reissner, NodeRigidBody2D)"
OVT = exu.OutputVariableType


# --------------------------------------------------------------------------- helpers
def _settings(h: float, t_end: float, dt_out: float, rho_inf: float,
              sparse: bool = False) -> exu.SimulationSettings:
    s = exu.SimulationSettings()
    new_api = hasattr(s, "linearSolver") and hasattr(s, "solution")  # Exudyn >= 1.12
    if sparse:
        if new_api:
            s.linearSolver.solverType = exu.LinearSolverType.EigenSparse
        else:
            s.linearSolverType = exu.LinearSolverType.EigenSparse
    ti = s.timeIntegration
    ti.numberOfSteps = int(round(t_end / h))
    ti.endTime = ti.numberOfSteps * h
    ti.verboseMode = 0
    ti.generalizedAlpha.spectralRadius = rho_inf
    # The axial stiffness (EA ~ 3e7 N, EA/le up to ~1e9 N/m) puts a round-off floor of
    # ~eps*EA/le*|x|*sqrt(ndof) ~ 1e-8..3e-6 N on the residual; with Exudyn's default absolute
    # tolerance (1e-10) Newton then cannot converge while the motion is small and the step size
    # is cut adaptively (the step count is checked, see _solve). 1e-4 N is far below every
    # physical force here (N .. kN); relative tolerance stays at 1e-8.
    ti.newton.absoluteTolerance = 1e-4
    ti.newton.relativeTolerance = 1e-8
    ti.adaptiveStep = True  # safety net only; the step count is checked after the solve
    # record every step (Exudyn accumulates the write period, a period of dt_out would drift);
    # the outputs are then picked at the grid times k*dt_out (multiples of h) by _on_grid
    if new_api:
        s.solution.file.write = False
        s.solution.sensors.writePeriod = 0.5 * h
    else:
        s.solutionSettings.writeSolutionToFile = False
        s.solutionSettings.sensorsWritePeriod = 0.5 * h
    return s


def _node_sensor(mbs, node, ovt=OVT.Coordinates):
    return mbs.AddSensor(SensorNode(nodeNumber=node, outputVariableType=ovt,
                                    storeInternal=True, writeToFile=False))


def _object_sensor(mbs, obj, ovt=OVT.Force):
    return mbs.AddSensor(SensorObject(objectNumber=obj, outputVariableType=ovt,
                                      storeInternal=True, writeToFile=False))


def _on_grid(mbs, sensor, t_grid):
    """Stored sensor data (columns after time) at the times t_grid. Every step is recorded, so
    for grid times that are multiples of h this picks the step values (up to round-off)."""
    d = np.asarray(mbs.GetSensorStoredData(sensor))
    t = d[:, 0]
    return np.stack([np.interp(t_grid, t, d[:, k]) for k in range(1, d.shape[1])], axis=1)


def _grid(s, dt_out):
    """Output times k*dt_out up to the simulated end time (numberOfSteps*h)."""
    t_end = s.timeIntegration.endTime
    t = np.round(np.arange(0.0, t_end + 0.5 * dt_out, dt_out), 12)
    return t[t <= t_end + 1e-12]


def _solve(mbs, s):
    # count the time steps actually taken (adaptive step reduction must not happen)
    t0 = time.perf_counter()
    mbs.SolveDynamic(s)
    wall = time.perf_counter() - t0
    try:
        steps = int(mbs.sys["dynamicSolver"].it.currentStepIndex)
    except Exception:  # pragma: no cover - attribute names differ between versions
        steps = -1
    expected = s.timeIntegration.numberOfSteps + 1  # Exudyn's counter includes the initial step
    if steps > expected:
        print(f"WARNING: {steps - expected} extra steps (adaptive step reduction, Newton failed)")
    return wall, steps


def _beam_nodes(mbs, x0, n, le, vel=None):
    """n+1 NodeRigidBody2D along +x from (x0, 0); vel(x) -> initial [vx, vy, omega]."""
    nodes = []
    for i in range(n + 1):
        x = x0 + i * le
        v = [0.0, 0.0, 0.0] if vel is None else list(vel(x))
        nodes.append(mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[x, 0.0, 0.0],
                                                 initialVelocities=v)))
    return nodes


def _beam_elements(mbs, nodes, le, rhoA, rhoI, EI, EA, GA):
    for i in range(len(nodes) - 1):
        mbs.AddObject(_compat(
            ObjectBeamGeometricallyExact2D, nodeNumbers=[nodes[i], nodes[i + 1]], length=le,
            massPerLength=rhoA, crossSectionInertia=rhoI, bendingStiffness=EI,
            axialStiffness=EA, shearStiffness=GA))


# --------------------------------------------------------------------------- 1. spin-up
def spinup_angle(t, omega_s=6.0, Ts=15.0):
    """Prescribed hub angle of Kane, Ryan & Banerjee (1987)."""
    t = np.asarray(t, dtype=float)
    a = omega_s / Ts * (t ** 2 / 2 + (Ts / (2 * np.pi)) ** 2 * (np.cos(2 * np.pi * t / Ts) - 1))
    return np.where(t <= Ts, a, omega_s * t - omega_s * Ts / 2)


def spinup(omega_s=6.0, Ts=15.0, t_end=30.0, n_elements=16, h=1e-3, gravity=False,
           *, L=10.0, EI=1.4e4, EA=2.8e7, rhoA=1.2, shear_factor=1.0, rhoI=None,
           rho_inf=0.9, dt_out=0.01, g=9.81):
    """Rotating cantilever (KRB 1987) clamped at the hub axis (hub radius 0).

    Root node: position fixed by a revolute joint to ground, rotation coordinate driven by a
    CoordinateConstraint with offset theta(t). Beam along the hub x axis.
    gravity=True adds g in -y of the (vertical) plane of rotation (the classic benchmark has none).

    Returns t, tip_deflection (tip displacement along the hub y axis, >0 in the direction of
    rotation), tip_axial (tip displacement along the hub x axis), hub_torque (motor torque
    = -lambda), hub_angle, wall_time, settings.
    """
    n = int(n_elements)
    le = L / n
    GA = shear_factor * EA
    if rhoI is None:
        rhoI = rhoA * EI / EA  # rho*I = rhoA * I/A

    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ObjectGround())
    nodes = _beam_nodes(mbs, 0.0, n, le)
    _beam_elements(mbs, nodes, le, rhoA, rhoI, EI, EA, GA)

    # clamp: root position fixed, root rotation prescribed
    mG = mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[0, 0, 0]))
    mRootPos = mbs.AddMarker(MarkerNodePosition(nodeNumber=nodes[0]))
    mbs.AddObject(ObjectJointRevolute2D(markerNumbers=[mG, mRootPos]))
    nG = mbs.AddNode(NodePointGround())
    mGc = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=nG, coordinate=0))
    mRootRot = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=nodes[0], coordinate=2))
    ws, T = float(omega_s), float(Ts)

    def theta_uf(mbs_, t, itemNumber, lOffset):
        if t <= T:
            return ws / T * (0.5 * t * t + (T / (2 * math.pi)) ** 2 * (math.cos(2 * math.pi * t / T) - 1))
        return ws * t - 0.5 * ws * T

    cRot = mbs.AddObject(CoordinateConstraint(markerNumbers=[mGc, mRootRot],
                                              offsetUserFunction=theta_uf))
    if gravity:
        for i, nd in enumerate(nodes):
            w = 0.5 if i in (0, n) else 1.0  # consistent nodal loads of linear elements
            m = mbs.AddMarker(MarkerNodePosition(nodeNumber=nd))
            mbs.AddLoad(LoadForceVector(markerNumber=m, loadVector=[0, -w * rhoA * le * g, 0]))

    sTip = _node_sensor(mbs, nodes[-1])
    sTq = _object_sensor(mbs, cRot)
    mbs.Assemble()
    s = _settings(h, t_end, dt_out, rho_inf, sparse=n >= 16)
    wall, steps = _solve(mbs, s)

    t = _grid(s, dt_out)
    q = _on_grid(mbs, sTip, t)  # displacement x, y, rotation of the tip node
    lam = _on_grid(mbs, sTq, t)[:, 0]
    th = spinup_angle(t, ws, T)
    px, py = L + q[:, 0], q[:, 1]
    c, sn = np.cos(th), np.sin(th)
    return dict(
        t=t, tip_deflection=-sn * px + c * py, tip_axial=c * px + sn * py - L,
        hub_torque=-lam, hub_angle=th, wall_time=wall, steps=steps,
        settings=dict(model="spinup", omega_s=ws, Ts=T, t_end=t_end, n_elements=n, h=h,
                      gravity=bool(gravity), L=L, EI=EI, EA=EA, GA=GA, rhoA=rhoA, rhoI=rhoI,
                      rho_inf=rho_inf, dt_out=dt_out, element=ELEMENT,
                      integrator="generalized-alpha (Exudyn), fixed step",
                      exudyn_version=exu.__version__),
    )


# --------------------------------------------------------------------------- 2. two-link
def two_link(case="elastic-elastic", n_elements=8, h=1e-4, t_end=2 * np.pi / 10, *,
             l1=0.8, l2=0.8, A=4.0e-4, E=7.0e10, m1=2.512, m2=2.512, Iz1=5.333e-8,
             Iz2=1.333e-8, omega=10.0, shear_factor=1.0, rotary_inertia=True,
             rho_inf=0.9, dt_out=1e-4):
    """SPEC S3 planar two-link arm, no gravity.

    Joint 1 at the origin: absolute angle of link 1's root section = omega*t.
    Joint 2 at link 1's (deformed) tip: angle of link 2's root section = angle of link 1's tip
    section - omega*t (q2 = -omega t). Initial state: both links along +x, undeformed, rigid-
    motion velocities (link 1 rotating at omega, link 2 translating with link 1's tip).

    case: 'elastic-elastic' (both beams, n_elements each) or 'rigid-elastic' (link 1 an
    ObjectRigidBody2D with m1, m1*l1^2/12; link 2 a beam).

    Returns t, tip_deflection (link 2 tip displacement perpendicular to link 2's root-section
    axis, relative to link 2's root), tip_axial (along that axis, minus l2), link1_tip_deflection
    (link 1 tip relative to the joint-1 frame; 0 for a rigid link 1), torque1, torque2 (motor
    torques on link 1 / on link 2, = -lambda of the rotation constraints), wall_time, settings.
    """
    if case not in ("elastic-elastic", "rigid-elastic"):
        raise ValueError(case)
    n = int(n_elements)
    EA = E * A
    rhoA1, rhoA2 = m1 / l1, m2 / l2
    EI1, EI2 = E * Iz1, E * Iz2
    GA = shear_factor * EA
    # rotary_inertia=False: rho*I = 0 (Euler-Bernoulli-like mass); Exudyn then warns that the
    # initial accelerations cannot be computed (singular mass), the run still works
    rhoI1 = rhoA1 * Iz1 / A if rotary_inertia else 0.0
    rhoI2 = rhoA2 * Iz2 / A if rotary_inertia else 0.0
    w = float(omega)

    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    ground = mbs.AddObject(ObjectGround())
    nG = mbs.AddNode(NodePointGround())
    mGc = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=nG, coordinate=0))
    mG = mbs.AddMarker(MarkerBodyPosition(bodyNumber=ground, localPosition=[0, 0, 0]))

    # ---- link 1
    if case == "elastic-elastic":
        le1 = l1 / n
        nodes1 = _beam_nodes(mbs, 0.0, n, le1, vel=lambda x: (0.0, w * x, w))
        _beam_elements(mbs, nodes1, le1, rhoA1, rhoI1, EI1, EA, GA)
        mRoot1 = mbs.AddMarker(MarkerNodePosition(nodeNumber=nodes1[0]))
        mTip1 = mbs.AddMarker(MarkerNodePosition(nodeNumber=nodes1[-1]))
        rot1_root, rot1_tip = nodes1[0], nodes1[-1]
    else:
        nR = mbs.AddNode(NodeRigidBody2D(referenceCoordinates=[l1 / 2, 0.0, 0.0],
                                         initialVelocities=[0.0, w * l1 / 2, w]))
        bR = mbs.AddObject(_compat(ObjectRigidBody2D, nodeNumber=nR, mass=m1,
                                   inertia=m1 * l1 ** 2 / 12))
        mRoot1 = mbs.AddMarker(MarkerBodyPosition(bodyNumber=bR, localPosition=[-l1 / 2, 0, 0]))
        mTip1 = mbs.AddMarker(MarkerBodyPosition(bodyNumber=bR, localPosition=[l1 / 2, 0, 0]))
        rot1_root = rot1_tip = nR
        nodes1 = None

    # ---- link 2 (beam), translating with link 1's tip velocity (0, omega*l1)
    le2 = l2 / n
    nodes2 = _beam_nodes(mbs, l1, n, le2, vel=lambda x: (0.0, w * l1, 0.0))
    _beam_elements(mbs, nodes2, le2, rhoA2, rhoI2, EI2, EA, GA)

    # ---- joint 1: root of link 1 pinned at the origin, angle omega*t
    mbs.AddObject(ObjectJointRevolute2D(markerNumbers=[mG, mRoot1]))
    mR1 = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=rot1_root, coordinate=2))
    c1 = mbs.AddObject(CoordinateConstraint(
        markerNumbers=[mGc, mR1], offsetUserFunction=lambda mbs_, t, i, off: w * t))
    # ---- joint 2: link 2 root pinned at link 1 tip, relative angle -omega*t
    mRoot2 = mbs.AddMarker(MarkerNodePosition(nodeNumber=nodes2[0]))
    mbs.AddObject(ObjectJointRevolute2D(markerNumbers=[mTip1, mRoot2]))
    mT1 = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=rot1_tip, coordinate=2))
    mR2 = mbs.AddMarker(MarkerNodeCoordinate(nodeNumber=nodes2[0], coordinate=2))
    c2 = mbs.AddObject(CoordinateConstraint(
        markerNumbers=[mT1, mR2], offsetUserFunction=lambda mbs_, t, i, off: -w * t))

    sR2 = _node_sensor(mbs, nodes2[0])
    sT2 = _node_sensor(mbs, nodes2[-1])
    sT1 = _node_sensor(mbs, nodes1[-1]) if nodes1 is not None else None
    sC1 = _object_sensor(mbs, c1)
    sC2 = _object_sensor(mbs, c2)
    mbs.Assemble()
    s = _settings(h, t_end, dt_out, rho_inf, sparse=n >= 16)
    wall, steps = _solve(mbs, s)

    t = _grid(s, dt_out)
    qr = _on_grid(mbs, sR2, t)
    qt = _on_grid(mbs, sT2, t)
    phi = qr[:, 2]  # absolute rotation of link 2's root section (reference 0)
    dx = (l2 + qt[:, 0]) - qr[:, 0]
    dy = qt[:, 1] - qr[:, 1]
    c, sn = np.cos(phi), np.sin(phi)
    out = dict(t=t, tip_deflection=-sn * dx + c * dy, tip_axial=c * dx + sn * dy - l2,
               root2_angle=phi)
    if sT1 is not None:
        q1 = _on_grid(mbs, sT1, t)
        th = w * t
        out["link1_tip_deflection"] = -np.sin(th) * (l1 + q1[:, 0]) + np.cos(th) * q1[:, 1]
    else:
        out["link1_tip_deflection"] = np.zeros_like(t)
    out["torque1"] = -_on_grid(mbs, sC1, t)[:, 0]
    out["torque2"] = -_on_grid(mbs, sC2, t)[:, 0]
    out.update(wall_time=wall, steps=steps, settings=dict(
        model="two_link", case=case, n_elements=n, h=h, t_end=t_end, omega=w, l1=l1, l2=l2,
        A=A, E=E, m1=m1, m2=m2, Iz1=Iz1, Iz2=Iz2, EA=EA, EI1=EI1, EI2=EI2, GA=GA,
        rhoA1=rhoA1, rhoA2=rhoA2, rhoI1=rhoI1, rhoI2=rhoI2, rho_inf=rho_inf, dt_out=dt_out,
        element=ELEMENT + ("" if case == "elastic-elastic" else "; link 1: ObjectRigidBody2D"),
        integrator="generalized-alpha (Exudyn), fixed step", exudyn_version=exu.__version__))
    return out


# --------------------------------------------------------------------------- convergence study
OUT_DIR = "experiments/results/exudyn_reference"


def _interp(r, key, times):
    return np.interp(times, r["t"], r[key])


def _study(name, fn, fixed, n_list, h_elem, h_list, times, key="tip_deflection"):
    """Element series (n_list at h_elem) and step series (h_list at max(n_list)); returns the
    runs (dict keyed by (n, h)) and the finest run (max n, min h)."""
    runs = {}
    todo = [(n, h_elem) for n in n_list] + [(max(n_list), h) for h in h_list]
    for n, h in todo:
        if (n, h) in runs:
            continue
        r = fn(n_elements=n, h=h, **fixed)
        runs[(n, h)] = r
        d = r[key]
        print(f"  {name:26s} n={n:3d} h={h:9.3g}  wall={r['wall_time']:7.2f} s  "
              f"min={d.min(): .6e} max={d.max(): .6e}", flush=True)
    finest = runs[(max(n_list), min(h_list))]
    return runs, finest


def _table(name, runs, finest, times, key="tip_deflection", unit_scale=1.0, unit="m"):
    rows = []
    hdr = "  ".join(f"t={tt:<9.4g}" for tt in times)
    print(f"\n{name}: {key} [{unit}] at selected times; err = max_t |d - d_finest|")
    print(f"  {'n':>3s} {'h':>9s}  {hdr}  {'min':>10s} {'max':>10s} {'err':>9s} {'wall[s]':>8s}")
    for (n, h), r in sorted(runs.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        d = r[key]
        vals = _interp(r, key, times)
        err = float(np.max(np.abs(d - finest[key])))
        rows.append(dict(n_elements=n, h=h, values=[float(v) for v in vals], min=float(d.min()),
                         max=float(d.max()), t_min=float(r["t"][d.argmin()]),
                         final=float(d[-1]), max_abs_diff_to_finest=err,
                         wall_time=float(r["wall_time"])))
        print(f"  {n:3d} {h:9.3g}  " + "  ".join(f"{v * unit_scale: .6f}" for v in vals)
              + f"  {d.min() * unit_scale: .6f} {d.max() * unit_scale: .6f} {err * unit_scale:9.2e}"
              f" {r['wall_time']:8.2f}")
    return rows


def _lowpass(x, window):
    """Centred moving average over `window` samples (edges: shrinking window)."""
    if window <= 1:
        return x
    k = np.ones(int(window))
    return np.convolve(x, k, "same") / np.convolve(np.ones_like(x), k, "same")


def _accuracy(runs, finest, n_list, h_list, key="tip_deflection", smooth=0, tag=""):
    """Error estimate of the finest run: max-over-t differences to the next-coarser element
    and step runs (conservative for these second-order methods). smooth > 1: compare moving
    averages over `smooth` samples instead (removes the high-frequency ripple)."""
    if smooth > 1:
        runs = {k: {key: _lowpass(r[key], smooth)} for k, r in runs.items()}
        finest = runs[(max(n_list), min(h_list))]
    nmax, hmin = max(n_list), min(h_list)
    n2 = sorted(n_list)[-2]
    h2 = sorted(h_list)[1]
    e_n = e_h = float("nan")
    if (n2, hmin) in runs:
        e_n = float(np.max(np.abs(runs[(n2, hmin)][key] - finest[key])))
    else:  # element series was run at a different h: compare at that h
        hs = [h for (n, h) in runs if n == n2]
        if hs and (nmax, hs[0]) in runs:
            e_n = float(np.max(np.abs(runs[(n2, hs[0])][key] - runs[(nmax, hs[0])][key])))
    if (nmax, h2) in runs:
        e_h = float(np.max(np.abs(runs[(nmax, h2)][key] - finest[key])))
    return {f"diff_n_half{tag}": e_n, f"diff_h_double{tag}": e_h,
            f"richardson_estimate{tag}": (e_n + e_h) / 3.0}


def _save(path, r, extra=None):
    import json
    arrays = {k: v for k, v in r.items() if isinstance(v, np.ndarray)}
    st = dict(r["settings"])
    st["wall_time"] = float(r["wall_time"])
    if extra:
        st.update(extra)
    scalars = {f"setting_{k}": np.asarray(v) for k, v in st.items()
               if isinstance(v, (int, float, bool, str))}
    np.savez(path, **arrays, **scalars, settings_json=np.asarray(json.dumps(st)))


def main(argv=None):
    import argparse
    import json
    import os

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="coarser study (smoke test)")
    ap.add_argument("--out", default=None, help=f"output folder (default {OUT_DIR})")
    args = ap.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = args.out or os.path.join(root, OUT_DIR)
    os.makedirs(out, exist_ok=True)
    print(f"Exudyn {exu.__version__}; element: {ELEMENT}; output -> {out}")

    n_list = [4, 8, 16] if args.quick else [4, 8, 16, 32]
    summary = {"exudyn_version": exu.__version__, "element": ELEMENT}
    t_all0 = time.perf_counter()

    # ---- 1. spin-up, omega_s = 6 and 4 rad/s
    sp_h = [2e-3, 1e-3] if args.quick else [2e-3, 1e-3, 5e-4, 2.5e-4]
    sp_times = [2.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0]
    fig, axs = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for ax, ws in zip(axs, (6.0, 4.0)):
        name = f"spinup ws={ws:g}"
        print(f"\n== {name}")
        runs, fin = _study(name, spinup, dict(omega_s=ws), n_list, 1e-3, sp_h, sp_times)
        rows = _table(name, runs, fin, sp_times)
        acc = _accuracy(runs, fin, n_list, sp_h)
        print(f"  finest (n={fin['settings']['n_elements']}, h={fin['settings']['h']:g}): "
              f"min {fin['tip_deflection'].min():.6f} m at t={fin['t'][fin['tip_deflection'].argmin()]:.2f} s, "
              f"final {fin['tip_deflection'][-1]:.6f} m; accuracy: {acc}")
        _save(os.path.join(out, f"spinup_ws{ws:g}.npz"), fin, acc)
        summary[f"spinup_ws{ws:g}"] = dict(rows=rows, accuracy=acc, times=sp_times)
        for (n, h), r in sorted(runs.items()):
            if h == 1e-3:
                ax.plot(r["t"], r["tip_deflection"], lw=0.8, label=f"n={n}, h={h:g}")
        ax.plot(fin["t"], fin["tip_deflection"], "k--", lw=1.0, label="finest")
        ax.set_ylabel("tip deflection [m] (hub frame)")
        ax.set_title(f"KRB spin-up, $\\omega_s$={ws:g} rad/s, $T_s$=15 s (Exudyn GE beam)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axs[-1].set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "spinup_tip_deflection.png"), dpi=130)
    plt.close(fig)

    # ---- 2. two-link arm
    tl_h = [1e-4, 5e-5] if args.quick else [1e-4, 5e-5, 2.5e-5, 1.25e-5]
    tl_helem = 2.5e-5 if not args.quick else 5e-5
    tl_times = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    # the two-link runs are cheap (0.63 s simulated): one more refinement, n = 64 per link
    tl_n = n_list if args.quick else n_list + [64]
    fig, axs = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for case in ("rigid-elastic", "elastic-elastic"):
        name = f"two_link {case}"
        print(f"\n== {name}")
        runs, fin = _study(name, lambda **kw: two_link(case, **kw), {}, tl_n, tl_helem, tl_h,
                           tl_times)
        rows = _table(name, runs, fin, tl_times, unit_scale=1e3, unit="mm")
        acc = _accuracy(runs, fin, tl_n, tl_h)
        # the response carries a small (~0.05-0.1 mm) ripple of high bending/axial modes excited
        # by the impulsive start whose phase converges slowly; also report 5-ms averages
        win = int(round(0.005 / fin["settings"]["dt_out"]))
        acc.update(_accuracy(runs, fin, tl_n, tl_h, smooth=win, tag="_lowpass5ms"))
        acc_tq = {f"torque{j}_" + k: v for j in (1, 2)
                  for k, v in _accuracy(runs, fin, tl_n, tl_h, key=f"torque{j}").items()}
        d = fin["tip_deflection"]
        print(f"  finest (n={fin['settings']['n_elements']}, h={fin['settings']['h']:g}): "
              f"tip deflection range [{d.min() * 1e3:.4f}, {d.max() * 1e3:.4f}] mm; "
              f"torque1 range [{fin['torque1'].min():.2f}, {fin['torque1'].max():.2f}] N m, "
              f"torque2 range [{fin['torque2'].min():.2f}, {fin['torque2'].max():.2f}] N m; "
              f"accuracy (m): {acc}; torques (N m): {acc_tq}")
        _save(os.path.join(out, f"two_link_{case}.npz"), fin, {**acc, **acc_tq})
        summary[f"two_link_{case}"] = dict(rows=rows, accuracy=acc, torque_accuracy=acc_tq,
                                           times=tl_times)
        axs[0].plot(fin["t"], d * 1e3, lw=1.0, label=f"{case} (finest)")
        for (n, h), r in sorted(runs.items()):
            if h == tl_helem and n < max(tl_n):
                axs[0].plot(r["t"], r["tip_deflection"] * 1e3, lw=0.5, alpha=0.6,
                            label=f"{case} n={n}")
        axs[1].plot(fin["t"], fin["torque1"], lw=0.8, label=f"{case}")
        axs[2].plot(fin["t"], fin["torque2"], lw=0.8, label=f"{case}")
    axs[0].set_ylabel("link-2 tip deflection [mm]")
    axs[1].set_ylabel("joint-1 torque [N m]")
    axs[2].set_ylabel("joint-2 torque [N m]")
    axs[2].set_xlabel("t [s]")
    axs[0].set_title("SPEC S3 two-link arm (Exudyn GE beam), prescribed joints")
    for ax in axs:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "two_link_tip_deflection.png"), dpi=130)
    plt.close(fig)

    summary["total_wall_time_s"] = time.perf_counter() - t_all0
    with open(os.path.join(out, "convergence.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"\ntotal {summary['total_wall_time_s']:.1f} s; files in {out}")


if __name__ == "__main__":
    main()
