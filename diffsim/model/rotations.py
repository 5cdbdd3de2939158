"""Rotations in NumPy for the model builder and the file loaders (MuJoCo's conventions:
quaternions ``[w, x, y, z]``, ``R`` maps the rotated frame's coordinates into the reference
frame's). The traced (JAX) twins of these functions are in :mod:`diffsim.spatial`; these exist
because builders and parsers run once in Python, in float64 whatever JAX's default dtype is."""

from __future__ import annotations

import math

import numpy as np


def quat_to_rot(q) -> np.ndarray:
    """Rotation matrix of a quaternion (normalised here; a zero quaternion raises)."""
    q = np.asarray(q, float)
    n = np.linalg.norm(q)
    if n < 1e-12:
        raise ValueError("zero quaternion")
    w, x, y, z = q / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def rot_to_quat(R) -> np.ndarray:
    """Unit quaternion of a rotation matrix (Shepperd's method)."""
    R = np.asarray(R, float)
    tr = np.trace(R)
    if tr > 0:
        w = 0.5 * math.sqrt(1 + tr)
        q = [w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2 * math.sqrt(max(1 + R[i, i] - R[j, j] - R[k, k], 0.0))
        q = [0.0] * 4
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def quat_mul(p, q) -> np.ndarray:
    """Hamilton product ``p ⊗ q``."""
    pw, pv, qw, qv = p[0], np.asarray(p[1:]), q[0], np.asarray(q[1:])
    return np.concatenate([[pw * qw - pv @ qv], pw * qv + qw * pv + np.cross(pv, qv)])


def axis_angle_to_rot(axis, angle) -> np.ndarray:
    """Rotation of ``angle`` [rad] about the unit ``axis`` (Rodrigues)."""
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]], float)
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def z_to_rot(vec) -> np.ndarray:
    """Minimal rotation taking ``[0, 0, 1]`` to the direction of ``vec`` (MuJoCo's ``mjuu_z2quat``)."""
    vec = np.asarray(vec, float)
    axis = np.cross([0.0, 0.0, 1.0], vec)
    s = np.linalg.norm(axis)
    axis = np.array([1.0, 0.0, 0.0]) if s < 1e-10 else axis / s
    return axis_angle_to_rot(axis, math.atan2(s, vec[2]))


def rpy_to_rot(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (fixed axes x, y, z)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx
