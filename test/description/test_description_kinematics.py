"""The URDF's tool0 pose equals the report's closed-form T (quirobot-report.md, "Denavit-Hartenberg
table" closed form), checked with pinocchio and MuJoCo as independent URDF readers."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pinocchio as pin
import pytest

pytestmark = pytest.mark.engines

JOINTS = ("gantry_x", "gantry_y", "gantry_z", "wrist_yaw", "wrist_pitch")

# Report worked example: q = [-1.5, -1.5, 0.5, pi/4, pi/4] and its T, to the report's 4 decimals.
REPORT_Q = np.array([-1.5, -1.5, 0.5, math.pi / 4, math.pi / 4])
REPORT_T = np.array(
    [
        [0.7071, 0.5000, 0.5000, -1.4000],
        [0.7071, -0.5000, -0.5000, -1.6000],
        [0.0000, 0.7071, -0.7071, -1.0414],
        [0.0, 0.0, 0.0, 1.0],
    ]
)


def report_transform(q: np.ndarray, l4: float, l5: float) -> np.ndarray:
    """(4, 4) tool frame 5' in world frame 0', the report's closed form (written from the report)."""
    d1, d2, d3, t4, t5 = q
    c4, s4, c5, s5 = math.cos(t4), math.sin(t4), math.cos(t5), math.sin(t5)
    return np.array(
        [
            [s4, c4 * s5, c4 * c5, d1 + l5 * c4 * c5],
            [c4, -s4 * s5, -s4 * c5, d2 - l5 * s4 * c5],
            [0.0, c5, -s5, -d3 - l4 - l5 * s5],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def test_report_closed_form_reproduces_its_worked_example():
    # l4 = 0.4, l5 = 0.2 from the report's DH table: guards the reference formula itself.
    assert np.allclose(report_transform(REPORT_Q, 0.4, 0.2), REPORT_T, atol=5e-5)


def _pinocchio(path):
    model = pin.buildModelFromUrdf(str(path))
    return model, model.createData()


def _q_full(model: pin.Model, q5: np.ndarray) -> np.ndarray:
    q = pin.neutral(model)
    for index, name in enumerate(JOINTS):
        q[model.joints[model.getJointId(name)].idx_q] = q5[index]
    return q


@pytest.mark.parametrize("tool", ["drill", "arthroscope", "none"])
def test_pinocchio_tool0_equals_report_transform_on_random_q(exported_urdf_factory, parameters, tool):
    model, data = _pinocchio(exported_urdf_factory(tool))
    frame = model.getFrameId("tool0")
    rng = np.random.default_rng(20260)
    worst = 0.0
    for _ in range(1000):
        # beyond the joint limits too: the geometry must hold for any q (the report's example does)
        q5 = rng.uniform(parameters.lower_limits - 1.0, parameters.upper_limits + 1.0)
        pin.framesForwardKinematics(model, data, _q_full(model, q5))
        expected = report_transform(q5, parameters.l4, parameters.l5)
        worst = max(worst, np.abs(data.oMf[frame].homogeneous - expected).max())
    assert worst < 1e-9


def test_worked_example_reproduced_from_urdf(exported_urdf):
    model, data = _pinocchio(exported_urdf)
    pin.framesForwardKinematics(model, data, _q_full(model, REPORT_Q))
    assert np.allclose(data.oMf[model.getFrameId("tool0")].homogeneous, REPORT_T, atol=5e-5)


def test_tool_tip_at_q_zero_matches_report(exported_urdf, parameters):
    # report: "At q = 0 the tool tip is at (0.2, 0, -0.4) m"
    model, data = _pinocchio(exported_urdf)
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    assert np.allclose(data.oMf[model.getFrameId("tool0")].translation, [0.2, 0.0, -0.4], atol=1e-12)


def test_drill_tip_moves_along_approach_by_feed(exported_urdf, parameters):
    model, data = _pinocchio(exported_urdf)
    rng = np.random.default_rng(3)
    for _ in range(50):
        q5 = rng.uniform(parameters.lower_limits, parameters.upper_limits)
        feed = rng.uniform(parameters.drill.feed.lower, parameters.drill.feed.upper)
        q = _q_full(model, q5)
        q[model.joints[model.getJointId("drill_feed")].idx_q] = feed
        pin.framesForwardKinematics(model, data, q)
        T = report_transform(q5, parameters.l4, parameters.l5)
        tip = data.oMf[model.getFrameId("drill_tip")]
        assert np.allclose(tip.translation, T[:3, 3] + feed * T[:3, 2], atol=1e-12)
        assert np.allclose(tip.rotation, T[:3, :3], atol=1e-12)


def test_camera_optical_frame_looks_along_approach(exported_urdf_factory, parameters):
    model, data = _pinocchio(exported_urdf_factory("arthroscope"))
    q5 = np.array([0.3, 1.2, 0.7, 0.8, 0.4])
    pin.framesForwardKinematics(model, data, _q_full(model, q5))
    T = report_transform(q5, parameters.l4, parameters.l5)
    optical = data.oMf[model.getFrameId("camera_optical_frame")]
    camera = data.oMf[model.getFrameId("camera_link")]
    a = T[:3, 2]
    assert np.allclose(optical.rotation[:, 2], a, atol=1e-12)  # REP 103 optical: z forward
    assert np.allclose(camera.rotation[:, 0], a, atol=1e-12)  # body frame: x forward
    assert np.allclose(optical.rotation @ [1, 0, 0], -camera.rotation[:, 1], atol=1e-12)  # x right
    assert np.allclose(optical.rotation @ [0, 1, 0], -camera.rotation[:, 2], atol=1e-12)  # y down
    length = parameters.arthroscope.scope_length
    assert np.allclose(optical.translation, T[:3, 3] + length * a, atol=1e-12)


def test_mujoco_tool0_equals_report_transform(exported_urdf, parameters):
    model = mujoco.MjModel.from_xml_path(str(exported_urdf))
    data = mujoco.MjData(model)
    body = model.body("tool0").id
    rng = np.random.default_rng(11)
    for _ in range(200):
        q5 = rng.uniform(parameters.lower_limits, parameters.upper_limits)
        for name, value in zip(JOINTS, q5, strict=True):
            data.qpos[model.jnt_qposadr[model.joint(name).id]] = value
        mujoco.mj_kinematics(model, data)
        T = report_transform(q5, parameters.l4, parameters.l5)
        assert np.allclose(data.xpos[body], T[:3, 3], atol=1e-9)
        assert np.allclose(data.xmat[body].reshape(3, 3), T[:3, :3], atol=1e-9)
