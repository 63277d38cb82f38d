"""Rotations: rotation matrix <-> unit quaternion (x, y, z, w) as geometry_msgs/Quaternion orders
them, the nearest rotation to a matrix. URDF roll-pitch-yaw: quirobot_description.frames."""

from __future__ import annotations

import math

import numpy as np

from quirobot_kinematics.model import KinematicsError


def matrix_from_quaternion(x: float, y: float, z: float, w: float) -> np.ndarray:
    """(3, 3) rotation of the quaternion (normalized first); refuses NaN/inf and zero length."""
    values = (x, y, z, w)
    if not all(math.isfinite(v) for v in values):
        raise KinematicsError(f"quaternion must be finite, got {list(values)}")
    norm = math.sqrt(sum(v * v for v in values))
    if norm < 1e-9:
        raise KinematicsError(f"quaternion has zero length: {list(values)}")
    x, y, z, w = (v / norm for v in values)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def quaternion_from_matrix(R: np.ndarray) -> tuple[float, float, float, float]:
    """Unit quaternion (x, y, z, w), w >= 0, of a (3, 3) rotation matrix (Shepperd's method)."""
    R = np.asarray(R, dtype=float)
    trace = R[0, 0] + R[1, 1] + R[2, 2]
    if trace > max(R[0, 0], R[1, 1], R[2, 2]):
        s = 2.0 * math.sqrt(1.0 + trace)
        q = ((R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s)
    elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = (0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s, (R[2, 1] - R[1, 2]) / s)
    elif R[1, 1] >= R[2, 2]:
        s = 2.0 * math.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = ((R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s, (R[0, 2] - R[2, 0]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = ((R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s, (R[1, 0] - R[0, 1]) / s)
    norm = math.sqrt(sum(v * v for v in q))
    sign = -1.0 if q[3] < 0.0 else 1.0
    return tuple(float(sign * v / norm) for v in q)


def nearest_rotation(R: np.ndarray) -> np.ndarray:
    """(3, 3) rotation nearest (Frobenius norm) to a (3, 3) matrix: U @ V^T of its SVD.

    For re-orthonormalising a rotation whose entries were rounded; a matrix nearer a reflection
    (det < 0) is refused rather than turned into a rotation far from it.
    """
    R = np.asarray(R, dtype=float)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise KinematicsError(f"a rotation must be a finite 3x3 matrix, got {R.tolist()}")
    U, _, Vt = np.linalg.svd(R)
    if np.linalg.det(U @ Vt) < 0.0:
        raise KinematicsError("the matrix is a reflection (det < 0), not a rotation")
    return U @ Vt
