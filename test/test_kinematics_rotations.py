"""URDF roll-pitch-yaw against scipy's extrinsic x-y-z Euler angles (an independent implementation)."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation

from quirobot_kinematics.forward import TOOL0_RPY
from quirobot_kinematics.rotations import rpy_matrix


def test_rpy_matrix_matches_scipy_extrinsic_xyz():
    angles = np.random.default_rng(61).uniform(-2 * math.pi, 2 * math.pi, size=(2000, 3))
    for roll, pitch, yaw in angles:
        expected = Rotation.from_euler("xyz", [roll, pitch, yaw]).as_matrix()  # Rz(yaw) Ry(pitch) Rx(roll)
        np.testing.assert_allclose(rpy_matrix(roll, pitch, yaw), expected, atol=1e-14)


def test_tool0_rpy_is_the_reports_tool_frame():
    # Report: tool frame 5' has z (approach) along link 5 (x of wrist_pitch_link): at q = 0 the
    # closed form gives columns n = (0, 1, 0), o = (0, 0, 1), a = (1, 0, 0).
    np.testing.assert_allclose(rpy_matrix(*TOOL0_RPY), [[0, 0, 1], [1, 0, 0], [0, 1, 0]], atol=1e-15)
