"""Jacobians against finite differences and the report's formulas; singularities named."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_description.parameters import JOINT_NAMES, load_parameters
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.jacobian import (
    DIRECTION_ANGLES,
    TOOL_VERTICAL,
    analytic_jacobian,
    analytic_jacobian_determinant,
    geometric_jacobian,
    singularities,
    singularity_measure,
)
from quirobot_kinematics.model import KinematicModel, KinematicsError

STEP = 1e-6


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters())


def configurations(model: KinematicModel, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(model.lower, model.upper, size=(n, 5))


def vee(skew: np.ndarray) -> np.ndarray:
    return np.array([skew[2, 1], skew[0, 2], skew[1, 0]])


def finite_difference_twist_jacobian(q: np.ndarray, model: KinematicModel, feed: float) -> np.ndarray:
    """Central differences of position and of R (omega^ = dR/dq R^T)."""
    R = forward_kinematics(q, model, feed)[:3, :3]
    J = np.zeros((6, 5))
    for i in range(5):
        step = np.zeros(5)
        step[i] = STEP
        plus = forward_kinematics(q + step, model, feed)
        minus = forward_kinematics(q - step, model, feed)
        J[:3, i] = (plus[:3, 3] - minus[:3, 3]) / (2 * STEP)
        J[3:, i] = vee((plus[:3, :3] - minus[:3, :3]) / (2 * STEP) @ R.T)
    return J


def direction_angle_coordinates(q: np.ndarray, model: KinematicModel) -> np.ndarray:
    T = forward_kinematics(q, model)
    return np.array([*T[:3, 3], math.acos(T[0, 2]), math.acos(T[1, 2])])


def test_geometric_jacobian_matches_finite_differences(model):
    for q in configurations(model, 200, seed=21):
        for feed in (0.0, 0.05):
            np.testing.assert_allclose(
                geometric_jacobian(q, model, feed),
                finite_difference_twist_jacobian(q, model, feed),
                atol=1e-8,
            )


@pytest.mark.engines
def test_geometric_jacobian_matches_pinocchio_on_the_urdf(request, model):
    """Independent of our FK: pinocchio's frame Jacobian of drill_tip (world-aligned) from the URDF."""
    pin = pytest.importorskip("pinocchio")
    pin_model = pin.buildModelFromUrdf(str(request.getfixturevalue("exported_urdf")))
    data = pin_model.createData()
    frame = pin_model.getFrameId("drill_tip")
    joints = [pin_model.joints[pin_model.getJointId(name)] for name in JOINT_NAMES]
    feed_joint = pin_model.joints[pin_model.getJointId("drill_feed")]
    rng = np.random.default_rng(27)
    for q in configurations(model, 300, seed=28):
        feed = float(rng.uniform(model.feed_lower, model.feed_upper))
        configuration = pin.neutral(pin_model)
        for joint, value in zip(joints, q, strict=True):
            configuration[joint.idx_q] = value
        configuration[feed_joint.idx_q] = feed
        J = pin.computeFrameJacobian(pin_model, data, configuration, frame, pin.LOCAL_WORLD_ALIGNED)
        expected = J[:, [joint.idx_v for joint in joints]]
        np.testing.assert_allclose(geometric_jacobian(q, model, feed), expected, atol=1e-12)


def test_bad_feed_is_refused(model):
    for bad in (float("nan"), float("inf"), "deep"):
        with pytest.raises(KinematicsError, match="drill feed must be"):
            geometric_jacobian([1.0, 1.0, 1.0, 0.3, 0.2], model, feed=bad)


def test_linear_part_is_the_reports(model):
    # Report: xdot = d1dot - l5 s4 c5 t4dot - l5 c4 s5 t5dot; ydot = d2dot - l5 c4 c5 t4dot + l5 s4 s5 t5dot;
    # zdot = -d3dot - l5 c5 t5dot.
    l5 = model.l5
    for q in configurations(model, 100, seed=22):
        s4, c4, s5, c5 = math.sin(q[3]), math.cos(q[3]), math.sin(q[4]), math.cos(q[4])
        report = np.array(
            [
                [1, 0, 0, -l5 * s4 * c5, -l5 * c4 * s5],
                [0, 1, 0, -l5 * c4 * c5, l5 * s4 * s5],
                [0, 0, -1, 0, -l5 * c5],
            ]
        )
        np.testing.assert_allclose(geometric_jacobian(q, model)[:3], report, atol=1e-15)


def test_geometric_jacobian_has_rank_5_everywhere(model):
    qs = configurations(model, 300, seed=23)
    qs[:100, 4] = math.pi / 2  # tool vertical
    qs[100:200, 4] = 0.0
    for q in qs:
        assert np.linalg.svd(geometric_jacobian(q, model), compute_uv=False).min() > 0.1


def test_analytic_jacobian_matches_finite_differences_and_report_determinant(model):
    for q in configurations(model, 200, seed=24):
        numeric = np.zeros((5, 5))
        for i in range(5):
            step = np.zeros(5)
            step[i] = STEP
            numeric[:, i] = (
                direction_angle_coordinates(q + step, model) - direction_angle_coordinates(q - step, model)
            ) / (2 * STEP)
        J = analytic_jacobian(q, model)
        np.testing.assert_allclose(J, numeric, atol=1e-7)
        s4, c4, s5, c5 = math.sin(q[3]), math.cos(q[3]), math.sin(q[4]), math.cos(q[4])
        report = s5 * c5 / (math.sqrt(1 - s4**2 * c5**2) * math.sqrt(1 - c4**2 * c5**2))
        assert analytic_jacobian_determinant(q) == pytest.approx(report, rel=1e-12, abs=1e-15)
        assert np.linalg.det(J) == pytest.approx(report, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("theta5_deg", [90.0, 270.0, -270.0])
@pytest.mark.parametrize("theta4_deg", [0.0, 37.0, 90.0, 200.0])
def test_tool_vertical_is_singular_at_any_theta4(model, theta4_deg, theta5_deg):
    q = np.array([1.0, 1.0, 1.0, math.radians(theta4_deg), math.radians(theta5_deg)])
    found = singularities(q)
    assert [s.name for s in found] == [TOOL_VERTICAL]
    assert "tool vertical" in found[0].description
    assert singularity_measure(q) < 1e-12
    assert abs(analytic_jacobian_determinant(q)) < 1e-12
    # theta4 no longer changes the approach direction.
    step = np.array([0, 0, 0, 1e-3, 0])
    np.testing.assert_allclose(
        forward_kinematics(q + step, model)[:3, 2], forward_kinematics(q, model)[:3, 2], atol=1e-12
    )


@pytest.mark.parametrize("theta5_deg", [0.0, 180.0])
def test_direction_angle_singularity_unless_theta4_multiple_of_90(model, theta5_deg):
    theta5 = math.radians(theta5_deg)
    q = np.array([1.0, 1.0, 1.0, math.radians(30.0), theta5])
    assert [s.name for s in singularities(q)] == [DIRECTION_ANGLES]
    assert abs(np.linalg.det(analytic_jacobian(q, model))) < 1e-12
    assert singularity_measure(q) == pytest.approx(1.0)
    for theta4_deg in (0.0, 90.0, 180.0, 270.0, 360.0):
        assert singularities([1.0, 1.0, 1.0, math.radians(theta4_deg), theta5]) == []
    with pytest.raises(KinematicsError, match="analytic Jacobian undefined"):
        analytic_jacobian([1.0, 1.0, 1.0, 0.0, theta5], model)


def test_regular_configurations_have_no_singularity(model):
    for q in configurations(model, 200, seed=25):
        if abs(math.cos(q[4])) > 1e-3 and abs(math.sin(q[4])) > 1e-3:
            assert singularities(q) == []
            assert abs(analytic_jacobian_determinant(q)) > 1e-4


def test_singularity_measure_is_the_smallest_singular_value_of_the_approach_rate(model):
    for q in configurations(model, 100, seed=26):
        rates = geometric_jacobian(q, model)[3:, 3:]  # omega from theta4, theta5
        a = forward_kinematics(q, model)[:3, 2]
        approach_rate = np.column_stack([np.cross(rates[:, i], a) for i in range(2)])  # da/dtheta = omega x a
        assert singularity_measure(q) == pytest.approx(
            np.linalg.svd(approach_rate, compute_uv=False).min(), abs=1e-12
        )
