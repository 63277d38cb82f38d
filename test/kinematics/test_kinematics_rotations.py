"""URDF roll-pitch-yaw and the nearest rotation against scipy (an independent implementation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from quirobot_description.frames import rpy_matrix
from quirobot_kinematics.model import TOOL0_RPY, KinematicsError
from quirobot_kinematics.rotations import nearest_rotation


def test_rpy_matrix_matches_scipy_extrinsic_xyz():
    angles = np.random.default_rng(61).uniform(-2 * math.pi, 2 * math.pi, size=(2000, 3))
    for roll, pitch, yaw in angles:
        expected = Rotation.from_euler("xyz", [roll, pitch, yaw]).as_matrix()  # Rz(yaw) Ry(pitch) Rx(roll)
        np.testing.assert_allclose(rpy_matrix(roll, pitch, yaw), expected, atol=1e-14)


def test_tool0_rpy_is_the_reports_tool_frame():
    # Report: tool frame 5' has z (approach) along link 5 (x of wrist_pitch_link): at q = 0 the
    # closed form gives columns n = (0, 1, 0), o = (0, 0, 1), a = (1, 0, 0).
    np.testing.assert_allclose(rpy_matrix(*TOOL0_RPY), [[0, 0, 1], [1, 0, 0], [0, 1, 0]], atol=1e-15)


def test_nearest_rotation_is_scipys_orthogonalisation_of_a_perturbed_rotation():
    # scipy's from_matrix orthogonalises a non-orthogonal input (Bar-Itzhack's optimal method):
    # an independent implementation of the nearest rotation.
    rng = np.random.default_rng(7)
    for scale in (1e-7, 1e-4, 1e-2):
        rotations = Rotation.random(200, random_state=8).as_matrix()
        for R in rotations + rng.normal(0.0, scale, size=(200, 3, 3)):
            np.testing.assert_allclose(nearest_rotation(R), Rotation.from_matrix(R).as_matrix(), atol=1e-13)


def test_nearest_rotation_refuses_a_reflection():
    with pytest.raises(KinematicsError, match="reflection"):
        nearest_rotation(np.diag([1.0, 1.0, -1.0]) + 1e-6)
