"""URDF frames: the fixed-axis roll-pitch-yaw rotation of an <origin rpy="...">.

A description fact (how URDF writes an orientation), used by the description's check, the
kinematics (tool0's fixed rotation) and the rigid-body model.
"""

from __future__ import annotations

import math

import numpy as np


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """(3, 3) rotation of URDF fixed-axis roll-pitch-yaw (rad): Rz(yaw) @ Ry(pitch) @ Rx(roll)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )
