"""Real robot files as they ship (issue 18): every URDF of ``example-robot-data`` and every MJCF
of dm_control's suite is loaded; each one that loads is compared with its peer's forward
dynamics at random states, and each one that does not is refused with a message that names
the element and its line.

* URDF vs Pinocchio (``buildModelFromUrdf`` with a free-flyer root, so that the base link and
  everything fixed to it take part): ``a = ABA(q, v, τ − D v)`` (Pinocchio's
  ABA has no joint damping; Coulomb friction is set to zero on our side: it is not part of a
  forward-dynamics comparison with a peer that ignores it).
* URDF with ``<mimic>`` joints vs Pinocchio's mimic joints (``buildModelFromUrdf(...,
  mimic=True)``, Pinocchio ≥ 3.4): its ABA does not take mimic joints, so the reference is
  ``a_r = M_r⁻¹ (τ_r − h_r)`` in the independent coordinates from its RNEA (``M_r`` by columns;
  its CRBA is wrong below a mimic joint, see :func:`urdf_mimic_vs_pinocchio`); ``τ`` on the
  independent DOFs only; joint damping and friction zeroed on our side (Pinocchio's mimic
  dynamics has neither). Where Pinocchio refuses the mimics (Talos' full files), its tree
  without mimics projected with a coupling ``G`` read from the file by this test.
* MJCF vs MuJoCo (``MjModel.from_xml_path``) with every constraint (contacts, limits,
  equality, friction loss) and actuation disabled: the smooth dynamics ``qacc`` at
  ``qfrc_applied = τ`` (joint and fixed-tendon springs, damping, armature and the inertia-box
  fluid forces included; our Coulomb friction set to zero as MuJoCo's is off); also
  ``load_mjcf == from_mjmodel`` for the same file. Files whose equality constraints couple two
  joints (diffsim's mimic joints) are compared at coupled states with MuJoCo's unconstrained
  ``qacc`` projected onto the coupling with its own mass matrix (:func:`io_peers.mujoco_coupled_forward`).

Accelerations agree to ``RTOL = 1e-12`` relative (``|Δa|∞ / max(1, |a|∞)``): both sides solve
the same equations in float64, so what is left is round-off. Where the mass matrix is so
ill-conditioned that the peer's own two algorithms (ABA and CRBA + solve) differ by more, the
bound is 10x that difference (only iCub: ``cond(M) ≈ 7e8``, Pinocchio ABA vs CRBA 5.4e-12,
diffsim vs ABA 3.8e-12; every other file ≤ 6.5e-14). The corpus test is ``slow`` and compares every third loadable URDF (every file is still loaded
or refused); ``experiments/robot_corpus.py`` compares all of them; the fast tests run three
representative files.

Files come from installed packages (the test extra): ``example-robot-data`` (cmeel wheel; its
files are under ``cmeel.prefix/share``) and ``dm_control`` (only its XML files are read; the
package is not imported).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from io_peers import (assert_same_model, mujoco_coupled_forward, mujoco_forward, pin_maps, random_state, rel_err,
                      release_compiled_programs)

import diffsim as ds
from diffsim.io import from_mjmodel, load_mjcf, load_urdf
from diffsim.model import ModelError
from diffsim.model.mimic import couple, independent_v

RTOL = 1e-12
N_STATES = 2
# compiled once per robot: eager, the level schedule compiles each of its ~140 small indexing ops (measured
# 27 s of 47 s for the first 11 URDFs)
FD = eqx.filter_jit(ds.forward_dynamics)


def _urdf_files():
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        return {}
    return {str(f).split("example-robot-data/robots/")[-1]: Path(f.locate()) for f in files if str(f).endswith(".urdf")}


def _suite_files():
    spec = importlib.util.find_spec("dm_control")
    if spec is None or spec.origin is None:
        return {}
    return {p.name: p for p in sorted((Path(spec.origin).parent / "suite").glob("*.xml"))}


URDFS, SUITE = _urdf_files(), _suite_files()
needs_urdfs = pytest.mark.skipif(not URDFS, reason="example-robot-data is not installed")
needs_suite = pytest.mark.skipif(not SUITE, reason="dm_control is not installed")

# What still does not load, with the reason's key words (example-robot-data 6.0.0, dm_control
# 1.0.50); the README lists the same files with the full messages.
URDF_REFUSED = {
    # a defect of the file: its mimics name 'index_q1' where the joints are 'Left_index_q1', …
    # (Pinocchio: "The parent joint of the mimic joint is not in the kinematic tree")
    "alex_description/urdf/alex_psyonic_hands.urdf": "unknown master joint 'index_q1'",
    # a defect of the file: its base link merged with its fixed children has a principal moment of
    # -0.021 kg m² (its grippers move no mass and are held fixed; Pinocchio loads it)
    "romeo_description/urdf/romeo_laas_small.urdf": "inertia is not positive definite",
    "ur_description/urdf/ur3.urdf": "no links",
}
# files whose <mimic> joints couple coordinates (Talos' reduced files and talos_left_arm carry
# <mimic> only on fixed joints: nothing to couple, as in Pinocchio)
URDF_MIMIC = {
    "baxter_description/urdf/baxter.urdf": 2,
    "panda_description/urdf/panda.urdf": 1,
    "panda_description/urdf/panda_collision.urdf": 1,
    "pr2_description/urdf/pr2.urdf": 10,
    "talos_data/robots/talos_full_v2.urdf": 12,
    "talos_data/robots/talos_full_v2_box.urdf": 12,
    "tiago_pro_description/robots/tiago_pro.urdf": 10,
}
SUITE_REFUSED = {
    "ball_in_cup.xml": "tendon length limits",
    "dog.xml": "cannot infer inertia from a mesh geom",
    "lqr.xml": "no bodies",
    "quadruped.xml": "only a fixed tendon over two joints",
}


def _quiet(load, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(*args, **kw)


def _load_or_reason(load, path):
    try:
        return _quiet(load, path), None
    except ModelError as e:
        return None, str(e)


def _no_friction(model):
    return eqx.tree_at(lambda m: m.frictionloss, model, jnp.zeros_like(model.frictionloss))


def _file_coupling(path, model):
    """``G`` [nv, nr] read from the file's ``<mimic>`` elements here (ElementTree), independently
    of the loader: a mimic row is ``multiplier`` times its master's row (chains composed); and
    the independent DOFs."""
    t = model.topology
    mim = {}
    for j in ET.parse(path).getroot().iter("joint"):
        m = j.find("mimic")
        if m is not None and j.get("type") != "fixed":
            mim[t.v_start[t.joint_index(j.get("name"))]] = (t.v_start[t.joint_index(m.get("joint"))],
                                                           float(m.get("multiplier", "1")))
    free = [k for k in range(model.nv) if k not in mim]
    G = np.zeros((model.nv, len(free)))
    G[free, range(len(free))] = 1.0

    def row(k):
        if k in mim:
            G[k] = mim[k][1] * row(mim[k][0])
        return G[k]

    for k in mim:
        row(k)
    return G, free


def urdf_mimic_vs_pinocchio(path, model, seed=0):
    """Worst relative difference of the accelerations of a model with mimic joints from
    Pinocchio's ``M_r⁻¹ (τ_r − h_r)`` in the independent coordinates.

    * ``mimic=True``: ``M_r`` from columns of its RNEA (``rnea(q, 0, e_k) − rnea(q, 0, 0)``):
      Pinocchio 4.1.0's ``crba`` is wrong where a joint is supported by a mimic joint (up to
      1.4e-2 on ``tests/io/test_mimic.py``'s model, whose projected non-mimic tree and RNEA agree
      with ours to 1e-15).
    * Where Pinocchio refuses the mimics (Talos' full files: "The parent joint of the mimic
      joint is not in the kinematic tree", a mimic met before its master in its parse): its tree
      without mimics, projected with a coupling ``G`` read from the file here,
      ``(Gᵀ M G)⁻¹ Gᵀ (τ − h)``."""
    pin = pytest.importorskip("pinocchio")
    model = eqx.tree_at(lambda m: m.damping, model, jnp.zeros_like(model.damping))
    try:
        pm, G = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer(), mimic=True), None
    except ValueError:
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        G, free = _file_coupling(path, model)
    pd = pm.createData()
    q_pin, perm = pin_maps(model, pm)
    rng = np.random.default_rng(seed)
    indep = np.asarray(independent_v(model))
    z = np.zeros(pm.nv)
    worst = 0.0
    for k in range(N_STATES):
        q = ds.random_configuration(model, jax.random.PRNGKey(seed + k))
        v, tau = np.zeros(model.nv), np.zeros(model.nv)  # τ on the independent DOFs: τ_r
        v[indep], tau[indep] = rng.normal(size=len(indep)), rng.normal(size=len(indep))
        q, v = couple(model, q, jnp.asarray(v))
        a = np.asarray(FD(model, q, v, jnp.asarray(tau)))
        qp, vp = q_pin(q), np.asarray(v)[perm]
        if G is None:  # Pinocchio's coordinates are the independent ones
            g = pin.rnea(pm, pd, qp, z, z)
            M = np.stack([pin.rnea(pm, pd, qp, z, e) - g for e in np.eye(pm.nv)], axis=1)
            a_ref, a = np.linalg.solve(M, tau[perm] - pin.rnea(pm, pd, qp, vp, z)), a[perm]
        else:
            Gp, M = G[perm], pin.crba(pm, pd, qp)
            M = Gp.T @ (np.triu(M) + np.triu(M, 1).T) @ Gp
            a_ref, a = np.linalg.solve(M, tau[free] - Gp.T @ pin.rnea(pm, pd, qp, vp, z)), a[free]
        worst = max(worst, rel_err(a, a_ref))
    return worst


def urdf_vs_pinocchio(path, seed=0):
    """Worst relative difference of the accelerations from Pinocchio's ABA, and Pinocchio's own
    disagreement between its ABA and ``M⁻¹(τ − D v − b)`` from its CRBA and RNEA (the round-off
    that the conditioning of ``M`` allows; 0 for a model with mimic joints, see
    :func:`urdf_mimic_vs_pinocchio`)."""
    pin = pytest.importorskip("pinocchio")
    model = _no_friction(_quiet(load_urdf, path, floating_base=True))
    if model.mimic is not None:
        return urdf_mimic_vs_pinocchio(path, model, seed), 0.0
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    t = model.topology
    held = [j for j in range(1, pm.njoints) if t.joint_types[t.joint_index(pm.names[j])] is ds.JointType.FIXED]
    if held:  # joints that move no mass are held at q = 0 (Romeo's hands): Pinocchio's model reduced likewise
        massless = [j for j in range(1, pm.njoints) if sum(pm.inertias[k].mass for k in pm.subtrees[j]) == 0]
        assert held == massless, (path.name, [pm.names[j] for j in held], [pm.names[j] for j in massless])
        pm = pin.buildReducedModel(pm, held, pin.neutral(pm))
    pd = pm.createData()
    assert pm.nv == model.nv
    q_pin, perm = pin_maps(model, pm)
    rng = np.random.default_rng(seed)
    D = np.asarray(model.damping)[perm]
    worst = peer = 0.0
    for k in range(N_STATES):
        q = ds.random_configuration(model, jax.random.PRNGKey(seed + k))
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        a = np.asarray(FD(model, q, jnp.asarray(v), jnp.asarray(tau)))[perm]
        qp, vp, taup = q_pin(q), v[perm], tau[perm] - D * v[perm]
        ap = pin.aba(pm, pd, qp, vp, taup)
        M = pin.crba(pm, pd, qp)
        M = np.triu(M) + np.triu(M, 1).T
        ac = np.linalg.solve(M, taup - pin.rnea(pm, pd, qp, vp, np.zeros(pm.nv)))
        worst, peer = max(worst, rel_err(a, ap)), max(peer, rel_err(ac, ap))
    return worst, peer


def mjcf_vs_mujoco(path, seed=0):
    """Worst relative difference of ``qacc`` from MuJoCo's (constraints and actuation off)."""
    mujoco = pytest.importorskip("mujoco")
    mm = mujoco.MjModel.from_xml_path(str(path))
    model = _quiet(load_mjcf, path)
    assert_same_model(model, _quiet(from_mjmodel, mm))
    model = _no_friction(model)
    dis = mujoco.mjtDisableBit
    mm.opt.disableflags |= dis.mjDSBL_CONSTRAINT | dis.mjDSBL_ACTUATION
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(seed)
    worst = 0.0
    forward = mujoco_forward if model.mimic is None else mujoco_coupled_forward
    for _ in range(N_STATES):
        qpos, qvel = random_state(mm, rng)
        a, a_mj = forward(mujoco, mm, md, model, qpos, qvel, rng.normal(size=mm.nv))
        worst = max(worst, rel_err(a, a_mj))
    return worst


def _check_refusal(load, path, expected):
    model, reason = _load_or_reason(load, path)
    assert model is None, f"{path.name} loads now: update the refused list and the README"
    assert expected in reason, reason
    assert "line " in reason, f"the refusal does not name a line: {reason}"


# --------------------------------------------------------------------------------------
# fast: three representative files
# --------------------------------------------------------------------------------------

FAST_URDF = "solo_description/robots/solo12.urdf"  # floating-base quadruped, fixed feet merged
FAST_MIMIC = "panda_description/urdf/panda.urdf"  # a prismatic finger mimicking the other
FAST_MJCF = ("acrobot.xml", "cheetah.xml")  # <include>; limits and actuators kept as data, springs, armature


@needs_urdfs
def test_representative_urdf_matches_pinocchio():
    assert urdf_vs_pinocchio(URDFS[FAST_URDF])[0] <= RTOL


@needs_suite
@pytest.mark.parametrize("name", FAST_MJCF)
def test_representative_suite_files_match_mujoco(name):
    assert mjcf_vs_mujoco(SUITE[name]) <= RTOL


@pytest.mark.slow  # 9 s (compile); the fast mimic checks are in tests/io/test_mimic.py
@needs_urdfs
def test_representative_mimic_urdf_matches_pinocchio():
    assert urdf_vs_pinocchio(URDFS[FAST_MIMIC])[0] <= RTOL


@needs_urdfs
@needs_suite
def test_representative_refusals_name_the_element_and_line():
    _check_refusal(load_urdf, URDFS["alex_description/urdf/alex_psyonic_hands.urdf"],
                   "mimic joint 'Left_index_q2' [URDF <mimic> (line 1037) of <joint name='Left_index_q2'> (line 1030)]: "
                   "unknown master joint 'index_q1'")
    _check_refusal(load_mjcf, SUITE["quadruped.xml"], "<tendon name='coupling_front_left'> (line 272) in <equality>")


# --------------------------------------------------------------------------------------
# slow: the whole corpus
# --------------------------------------------------------------------------------------


def urdf_corpus(every: int = 1):
    """``(errors, loaded)``: every file refused as expected or loaded with its mimic count, and
    every ``every``-th loaded file (sorted by name) compared with Pinocchio (:func:`urdf_vs_pinocchio`)."""
    assert len(URDFS) == 69
    errors, loaded = {}, 0
    for name, path in sorted(URDFS.items()):
        if name in URDF_REFUSED:
            _check_refusal(load_urdf, path, URDF_REFUSED[name])
            continue
        n_mimic = len(_quiet(load_urdf, path).mimic or ())
        assert n_mimic == URDF_MIMIC.get(name, 0), (name, n_mimic)
        if loaded % every == 0:
            errors[name] = urdf_vs_pinocchio(path)
            release_compiled_programs()
        loaded += 1
    assert loaded == len(URDFS) - len(URDF_REFUSED)
    return errors, loaded


def urdf_within_tolerance(e) -> bool:
    """1e-12, or 10x what Pinocchio's two algorithms differ by on an ill-conditioned M (iCub:
    cond(M) = 7e8, ABA vs CRBA 5.4e-12, diffsim vs ABA 3.8e-12)."""
    return e[0] <= max(RTOL, 10 * e[1])


@pytest.mark.slow  # every file loads or is refused as expected; every 3rd is compared (all: experiments/robot_corpus.py)
@needs_urdfs
def test_urdf_corpus():
    errors, _ = urdf_corpus(every=3)
    print("URDF vs Pinocchio, (worst relative difference, Pinocchio ABA vs CRBA) per file:", errors)
    assert len(errors) == 22
    bad = {k: e for k, e in errors.items() if not urdf_within_tolerance(e)}
    assert not bad, bad


@pytest.mark.slow
@needs_suite
def test_suite_corpus():
    assert len(SUITE) == 19
    errors = {}
    for name, path in SUITE.items():
        if name in SUITE_REFUSED:
            _check_refusal(load_mjcf, path, SUITE_REFUSED[name])
            continue
        errors[name] = mjcf_vs_mujoco(path)
        release_compiled_programs()
    print("MJCF vs MuJoCo, worst relative difference per file:", errors)
    assert max(errors.values()) <= RTOL, {k: e for k, e in errors.items() if not e <= RTOL}
