"""diffsim vs C MuJoCo on random MJCF trees (float64).

Random models are written as MJCF strings (seeded): a free root, then hinge / slide / ball
joints, several joints in some bodies, joint ``pos`` offsets, rotated bodies (every MJCF
orientation form, degrees and radians, intrinsic and extrinsic Euler sequences), non-diagonal
inertias (``fullinertia``, rotated ``diaginertia``), inertia inferred from geoms, damping and
armature (partly through default classes) and gravity. Both sides are evaluated at the same
random states; MuJoCo's free-joint velocity frame is converted with
``v_mj = T(q) v``, ``T = blockdiag(R, I)``, so ``M = Tᵀ M_mj T``,
``bias = Tᵀ (bias_mj − passive_mj + M_mj Ṫ v)`` and ``qacc = T v̇ + Ṫ v``.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import diffsim as ds  # noqa: E402
from diffsim.io import from_mjmodel, from_mujoco, load_mjcf  # noqa: E402
from io_peers import free_velocity_map, random_state, rel_err  # noqa: E402

RTOL = 1e-9
ROOT = Path(__file__).resolve().parents[2]
DUAL_ARM = ROOT / "diffsim" / "scenarios" / "data" / "seed000_dual_arm.xml"


# --------------------------------------------------------------------------------------
# random MJCF trees
# --------------------------------------------------------------------------------------


def _fmt(a):
    return " ".join(f"{x:.17g}" for x in np.atleast_1d(a))


def random_mjcf(seed, n_bodies=6, angle="degree", eulerseq="xyz", gravity=(0.3, -0.2, -9.81), geoms=True):
    """A random MJCF tree (see the module docstring). Body ``b0`` is the free root; every body
    ``b<i>`` carries a site ``b<i>_origin`` at its MuJoCo body origin."""
    rng = np.random.default_rng(seed)
    deg = angle == "degree"
    out = [
        f'<mujoco model="random{seed}">',
        f'  <compiler angle="{angle}" eulerseq="{eulerseq}"/>',
        f'  <option gravity="{_fmt(gravity)}" timestep="1e-4" integrator="RK4">',
        '    <flag contact="disable"/>',
        "  </option>",
        "  <default>",
        f'    <joint damping="{rng.uniform(0, 0.2):.6g}" armature="{rng.uniform(0, 0.1):.6g}"/>',
        '    <default class="heavy">',
        f'      <joint damping="{rng.uniform(0.2, 0.5):.6g}" armature="{rng.uniform(0.1, 0.3):.6g}"/>',
        "    </default>",
        "  </default>",
        "  <worldbody>",
    ]
    children = {i: [] for i in range(n_bodies + 1)}
    for i in range(1, n_bodies + 1):
        children[int(rng.integers(0, i))].append(i)

    def orient():
        k = rng.integers(0, 6)
        if k == 0:
            return f' quat="{_fmt(rng.normal(size=4))}"'
        if k == 1:
            e = rng.uniform(-np.pi, np.pi, 3)
            return f' euler="{_fmt(np.degrees(e) if deg else e)}"'
        if k == 2:
            a = rng.uniform(-np.pi, np.pi)
            return f' axisangle="{_fmt(rng.normal(size=3))} {np.degrees(a) if deg else a:.17g}"'
        if k == 3:
            return f' xyaxes="{_fmt(rng.normal(size=6))}"'
        if k == 4:
            return f' zaxis="{_fmt(rng.normal(size=3))}"'
        return ""

    def inertial(ind):
        m = rng.uniform(0.5, 2.0)
        dims = rng.uniform(0.1, 0.6, 3)
        d = m / 12 * np.array([dims[1] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[2] ** 2, dims[0] ** 2 + dims[1] ** 2])
        pos = rng.uniform(-0.3, 0.3, 3)
        if rng.random() < 0.5:
            return [f'{ind}<inertial pos="{_fmt(pos)}" mass="{m:.17g}" diaginertia="{_fmt(d)}"{orient()}/>']
        q = rng.normal(size=4)
        w, x, y, z = q / np.linalg.norm(q)
        R = np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
            ]
        )
        I = R @ np.diag(d) @ R.T
        full = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
        return [f'{ind}<inertial pos="{_fmt(pos)}" mass="{m:.17g}" fullinertia="{_fmt(full)}"/>']

    def geom_lines(ind):
        lines = []
        for _ in range(rng.integers(1, 3)):
            t = ["sphere", "capsule", "cylinder", "box", "ellipsoid"][rng.integers(0, 5)]
            mass = (
                f' density="{rng.uniform(200, 2000):.6g}"' if rng.random() < 0.5 else f' mass="{rng.uniform(0.3, 1.5):.6g}"'
            )
            if t in ("capsule", "cylinder") and rng.random() < 0.5:
                ends = rng.uniform(-0.3, 0.3, 6)
                lines.append(f'{ind}<geom type="{t}" size="{rng.uniform(0.03, 0.1):.6g}" fromto="{_fmt(ends)}"{mass}/>')
            else:
                n = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}[t]
                lines.append(
                    f'{ind}<geom type="{t}" size="{_fmt(rng.uniform(0.05, 0.2, n))}" '
                    f'pos="{_fmt(rng.uniform(-0.3, 0.3, 3))}"{orient()}{mass}/>'
                )
        return lines

    def body(i, ind):
        name = f"b{i}"
        lines = [f'{ind}<body name="{name}" pos="{_fmt(rng.uniform(-0.6, 0.6, 3))}"{orient()}>']
        sub = ind + "  "
        if i == 0:
            lines.append(f'{sub}<freejoint name="root"/>')
        else:
            seen_ball = False
            for k in range(rng.choice([0, 1, 1, 2, 3], p=[0.1, 0.3, 0.2, 0.25, 0.15])):
                choices = ["slide"] if seen_ball else ["hinge", "hinge", "slide", "ball"]  # MuJoCo: no rotation after a ball
                t = choices[rng.integers(0, len(choices))]
                seen_ball |= t == "ball"
                attrs = f' name="{name}_j{k}" type="{t}"'
                if rng.random() < 0.7:
                    attrs += f' pos="{_fmt(rng.uniform(-0.3, 0.3, 3))}"'
                if t != "ball":
                    attrs += f' axis="{_fmt(rng.normal(size=3))}"'
                if rng.random() < 0.3:
                    attrs += ' class="heavy"'
                elif rng.random() < 0.3:
                    attrs += f' damping="{rng.uniform(0, 1):.6g}"'
                lines.append(f"{sub}<joint{attrs}/>")
        if geoms and i > 0 and rng.random() < 0.3:
            lines += geom_lines(sub)  # inertia inferred from the geoms
        else:
            lines += inertial(sub)
            if geoms:
                lines += geom_lines(sub)  # ignored: the body has an <inertial>
        lines.append(f'{sub}<site name="{name}_origin"/>')
        if rng.random() < 0.5:
            lines.append(f'{sub}<site name="{name}_s" pos="{_fmt(rng.uniform(-0.3, 0.3, 3))}"{orient()}/>')
        for c in children[i]:
            lines += body(c, sub)
        lines.append(f"{ind}</body>")
        return lines

    out += body(0, "    ")
    out += ["  </worldbody>", "</mujoco>"]
    return "\n".join(out)


def _ds_batch(model, q, v, tau):
    """Every diffsim quantity the tests compare, for a batch of states.

    Evaluated eagerly on purpose: XLA compilation of the unrolled algorithms for these
    10-body trees costs far more (tens of seconds) than running them op by op for a few
    states; jit equivalence is the dynamics tests' business."""
    out = []
    for k in range(q.shape[0]):
        qk, vk = jnp.asarray(q[k]), jnp.asarray(v[k])
        out.append((
            ds.mass_matrix(model, qk),
            ds.inverse_dynamics(model, qk, vk, jnp.zeros_like(vk)),
            ds.forward_dynamics(model, qk, vk, jnp.asarray(tau[k])),
            ds.body_com(model, qk),
            ds.site_poses(model, qk)[1],
        ))
    return [np.stack([np.asarray(o[i]) for o in out]) for i in range(5)]


CASES = {
    "deg-xyz": dict(seed=11, angle="degree", eulerseq="xyz"),
    "rad-ZYX": dict(seed=12, angle="radian", eulerseq="ZYX"),
    "deg-zxz": dict(seed=13, angle="degree", eulerseq="zxz", n_bodies=7),
}
N_STATES = 3


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    kw = dict(CASES[request.param])
    seed = kw.pop("seed")
    xml = random_mjcf(seed, **kw)
    mm = mujoco.MjModel.from_xml_string(xml)
    md = mujoco.MjData(mm)
    model = load_mjcf(xml)
    rng = np.random.default_rng(seed)
    states = [random_state(mm, rng) for _ in range(N_STATES)]
    tau_mj = rng.normal(size=(N_STATES, mm.nv))
    conv = [from_mujoco(model, qp, qv) for qp, qv in states]
    q = np.stack([np.asarray(c[0]) for c in conv])
    v = np.stack([np.asarray(c[1]) for c in conv])
    maps = [free_velocity_map(model, q[k], v[k]) for k in range(N_STATES)]
    tau = np.stack([maps[k][0].T @ tau_mj[k] for k in range(N_STATES)])
    M, bias, acc, com, site_p = _ds_batch(model, q, v, tau)
    mj = {"M": [], "bias": [], "acc": [], "xipos": [], "site_xpos": []}
    for k, (qpos, qvel) in enumerate(states):
        md.qpos[:], md.qvel[:], md.qfrc_applied[:] = qpos, qvel, tau_mj[k]
        mujoco.mj_forward(mm, md)
        Mf = np.zeros((mm.nv, mm.nv))
        mujoco.mj_fullM(mm, md, Mf)
        T, Tdv = maps[k]
        mj["M"].append(T.T @ Mf @ T)
        mj["bias"].append(T.T @ (md.qfrc_bias - md.qfrc_passive + Mf @ Tdv))
        mj["acc"].append(md.qacc.copy())
        mj["xipos"].append(md.xipos.copy())
        mj["site_xpos"].append(md.site_xpos.copy())
    ds_acc_mj = np.stack([maps[k][0] @ acc[k] + maps[k][1] for k in range(N_STATES)])
    return dict(xml=xml, mm=mm, model=model, M=M, bias=bias, acc=ds_acc_mj, com=com, site_p=site_p, mj=mj)


def test_random_models_cover_the_features():
    """The random trees really contain what the comparisons claim to test."""
    seen = set()
    for kw in CASES.values():
        kw = dict(kw)
        xml = random_mjcf(kw.pop("seed"), **kw)
        mm = mujoco.MjModel.from_xml_string(xml)
        seen |= {int(t) for t in mm.jnt_type}
        if np.any(mm.body_jntnum > 1):
            seen.add("multi-joint body")
        if np.any(np.linalg.norm(mm.jnt_pos, axis=1) > 0):
            seen.add("joint pos")
        if np.any(mm.dof_armature > 0) and np.any(mm.dof_damping > 0):
            seen.add("damping+armature")
        for tag in ("fullinertia", "euler=", "quat=", "fromto", "density", "class="):
            if tag in xml:
                seen.add(tag)
        model = load_mjcf(xml)
        if any("__" in n for n in model.topology.body_names):
            seen.add("inserted body")
    J = mujoco.mjtJoint
    expected = {int(J.mjJNT_FREE), int(J.mjJNT_BALL), int(J.mjJNT_HINGE), int(J.mjJNT_SLIDE), "multi-joint body",
                "joint pos", "damping+armature", "fullinertia", "euler=", "quat=", "fromto", "density", "class=",
                "inserted body"}
    assert expected <= seen, expected - seen


@pytest.mark.slow  # over 4 s in the full run: the fast subset stays within 3 min
def test_mass_matrix(case):
    err = max(rel_err(case["M"][k], case["mj"]["M"][k]) for k in range(N_STATES))
    assert err <= RTOL, err


@pytest.mark.slow  # over 5 s once the tests marked before it left: the fast subset stays within 3 min
def test_bias_forces_with_damping(case):
    err = max(rel_err(case["bias"][k], case["mj"]["bias"][k]) for k in range(N_STATES))
    assert err <= RTOL, err
    assert np.abs(case["bias"]).max() > 1.0  # gravity and velocity terms really present


def test_forward_dynamics(case):
    err = max(rel_err(case["acc"][k], case["mj"]["acc"][k]) for k in range(N_STATES))
    assert err <= RTOL, err


def test_body_com_and_sites(case):
    model, mm = case["model"], case["mm"]
    names = model.topology.body_names
    rows = [names.index(mujoco.mj_id2name(mm, mujoco.mjtObj.mjOBJ_BODY, b)) for b in range(1, mm.nbody)]
    sites = [model.topology.site_index(mujoco.mj_id2name(mm, mujoco.mjtObj.mjOBJ_SITE, s)) for s in range(mm.nsite)]
    for k in range(N_STATES):
        assert rel_err(case["com"][k][rows], case["mj"]["xipos"][k][1:]) <= RTOL
        assert rel_err(case["site_p"][k][sites], case["mj"]["site_xpos"][k]) <= RTOL


def test_load_mjcf_equals_from_mjmodel(case):
    a, b = case["model"], from_mjmodel(case["mm"])
    assert a.topology == b.topology
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=1e-12)


def test_dual_arm_model():
    """The canonical S0 model: 5 bodies, 2 sites, no gravity (packaged copy and shared copy)."""
    shared = ROOT.parent / "shared" / "models" / "seed000_dual_arm.xml"
    for path in [DUAL_ARM] + ([shared] if shared.exists() else []):
        model = load_mjcf(path)
        t = model.topology
        assert t.body_names == ("base", "a1l1", "a1l2", "a2l1", "a2l2")
        assert t.joint_types == (ds.JointType.FREE,) + (ds.JointType.SPHERICAL,) * 4
        assert t.site_names == ("a1tip", "a2tip")
        assert t.site_body == (2, 4)
        assert np.all(np.asarray(model.gravity) == 0.0)
        np.testing.assert_allclose(np.asarray(model.mass), [400.0] + [61.27] * 4)
        b = from_mjmodel(mujoco.MjModel.from_xml_path(str(path)))
        assert b.topology == t
        for x, y in zip(jax.tree_util.tree_leaves(model), jax.tree_util.tree_leaves(b)):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------
# 1 s of simulation against MuJoCo's RK4
# --------------------------------------------------------------------------------------


@pytest.mark.slow  # moved out of the fast subset (it must stay <= 3 min on 2 cores)
@pytest.mark.skipif(not hasattr(ds, "simulate"), reason="diffsim.simulate is not available yet")
def test_simulation_one_second_vs_mujoco_rk4():
    """Body origins (sites ``b<i>_origin``) and COMs after 1 s agree to ≤ 1e-8 m from a random
    state, with constant joint torques, gravity and damping (MuJoCo: RK4, h = 1e-4 s)."""
    xml = random_mjcf(35, n_bodies=2)  # free root, ball, and a body with slide + hinge
    mm = mujoco.MjModel.from_xml_string(xml)
    assert mm.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 and mm.opt.timestep == 1e-4
    assert np.any(mm.body_jntnum > 1) and np.any(mm.jnt_pos != 0)
    md = mujoco.MjData(mm)
    model = load_mjcf(xml)
    rng = np.random.default_rng(35)
    qpos, qvel = random_state(mm, rng)
    qvel *= 0.5
    tau = rng.normal(size=mm.nv)
    tau[:6] = 0.0  # a constant wrench on the free base would differ between the two frames
    md.qpos[:], md.qvel[:], md.qfrc_applied[:] = qpos, qvel, tau
    for _ in range(10_000):
        mujoco.mj_step(mm, md)
    assert abs(md.time - 1.0) < 1e-9
    q0, v0 = from_mujoco(model, qpos, qvel)
    traj = ds.simulate(model, q0, v0, 1.0, tau=jnp.asarray(tau), solver="dopri8", rtol=1e-12, atol=1e-12,
                       saveat=jnp.array([1.0]), max_steps=100_000)
    q1 = traj.q[-1]
    _, site_p = ds.site_poses(model, q1)
    t = model.topology
    moved = 0.0
    for b in range(1, mm.nbody):
        name = mujoco.mj_id2name(mm, mujoco.mjtObj.mjOBJ_BODY, b)
        p = np.asarray(site_p[t.site_index(f"{name}_origin")])
        assert np.abs(p - md.xpos[b]).max() <= 1e-8, (name, p, md.xpos[b])
        com = np.asarray(ds.body_com(model, q1)[t.body_index(name)])
        assert np.abs(com - md.xipos[b]).max() <= 1e-8
        moved = max(moved, np.abs(md.xpos[b] - np.asarray(ds.site_poses(model, q0)[1][t.site_index(f"{name}_origin")])).max())
    assert moved > 0.1  # the bodies really moved
