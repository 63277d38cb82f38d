"""Forward kinematics against the report's worked example, its DH table, the URDF frames and pinocchio."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_description.parameters import JOINT_NAMES, load_parameters
from quirobot_kinematics.forward import (
    BATCH_BLOCK,
    FRAME_NAMES,
    forward_kinematics,
    forward_kinematics_batch,
    link_frames,
)
from quirobot_kinematics.model import KinematicModel, KinematicsError


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters())


def random_configurations(model: KinematicModel, n: int, seed: int, margin: float = 1.0) -> np.ndarray:
    """(n, 5) configurations spanning the joint ranges and `margin` beyond them (m or rad)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(model.lower - margin, model.upper + margin, size=(n, 5))


def dh(theta: float, d: float, a: float, alpha: float) -> np.ndarray:
    """Standard DH: Rot(z, theta) Trans(z, d) Trans(x, a) Rot(x, alpha) (report's convention)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array(
        [
            [ct, -st * ca, st * sa, a * ct],
            [st, ct * ca, -ct * sa, a * st],
            [0.0, sa, ca, d],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def report_dh_pose(q: np.ndarray, l4: float, l5: float) -> np.ndarray:
    """T = M A1 A2 A3 A4 A5 M from the report's DH table (an independent formulation of FK)."""
    M = np.array([[0.0, 0, 1, 0], [0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]])  # report: world and tool frames
    d1, d2, d3, t4, t5 = q
    half = math.pi / 2
    A = (
        dh(0.0, d1, 0.0, half),
        dh(half, d2, 0.0, -half),
        dh(0.0, d3, 0.0, 0.0),
        dh(t4, l4, 0.0, half),
        dh(t5, 0.0, l5, 0.0),
    )
    T = M
    for Ai in A:
        T = T @ Ai
    return T @ M


def test_report_worked_example(model):
    # Report, worked example: q = [-1.5, -1.5, 0.5, pi/4, pi/4] (printed to 4 decimals).
    T = forward_kinematics([-1.5, -1.5, 0.5, math.pi / 4, math.pi / 4], model)
    expected = [
        [0.7071, 0.5000, 0.5000, -1.4000],
        [0.7071, -0.5000, -0.5000, -1.6000],
        [0.0000, 0.7071, -0.7071, -1.0414],
        [0, 0, 0, 1],
    ]
    np.testing.assert_allclose(T, expected, atol=6e-5)


def test_zero_configuration_tip(model):
    # Report: at q = 0 the tool tip is at (0.2, 0, -0.4) m (= (l5, 0, -l4)).
    np.testing.assert_allclose(forward_kinematics(np.zeros(5), model)[:3, 3], [0.2, 0.0, -0.4], atol=1e-15)


def test_closed_form_equals_report_dh_product(model):
    for q in random_configurations(model, 1000, seed=1):
        np.testing.assert_allclose(
            forward_kinematics(q, model), report_dh_pose(q, model.l4, model.l5), atol=1e-12
        )


def test_batched_equals_single(model):
    n = 2 * BATCH_BLOCK + 123  # several blocks and a partial one
    q = random_configurations(model, n, seed=2)
    batch = forward_kinematics(q, model, feed=0.03)
    single = np.array([forward_kinematics(row, model, feed=0.03) for row in q])
    assert batch.shape == (n, 4, 4)
    np.testing.assert_allclose(batch, single, rtol=0, atol=1e-15)
    out = np.full((n, 4, 4), np.nan)
    assert forward_kinematics_batch(q, model, feed=0.03, out=out) is out
    np.testing.assert_array_equal(out, batch)
    with pytest.raises(KinematicsError, match="out must be"):
        forward_kinematics_batch(q, model, out=np.empty((n, 4, 3)))


def test_link_frames_compose_to_the_closed_form(model):
    for q in random_configurations(model, 1000, seed=3):
        feed = float(q[0] % model.feed_upper)
        frames = link_frames(q, model, feed=feed)
        assert tuple(frames) == FRAME_NAMES
        np.testing.assert_allclose(frames["tool0"], forward_kinematics(q, model), atol=1e-12)
        np.testing.assert_allclose(frames["drill_tip"], forward_kinematics(q, model, feed=feed), atol=1e-12)
        np.testing.assert_allclose(frames["z_ram"][:3, 3], [q[0], q[1], -q[2]], atol=1e-15)


def test_drill_tip_moves_along_the_approach(model):
    q = np.array([0.3, 1.2, 0.8, 1.0, 0.4])
    tool0 = forward_kinematics(q, model)
    tip = forward_kinematics(q, model, feed=0.05)
    np.testing.assert_allclose(tip[:3, 3] - tool0[:3, 3], 0.05 * tool0[:3, 2], atol=1e-15)
    np.testing.assert_array_equal(tip[:3, :3], tool0[:3, :3])


@pytest.mark.parametrize(
    ("q", "fragment"),
    [
        ([0.0, 0.0, 0.0, 0.0], "shape"),
        (np.zeros((3, 4)), "shape"),
        ([0.0, float("nan"), 0.0, 0.0, 0.0], "gantry_y"),
        ([0.0, 0.0, 0.0, float("inf"), 0.0], "wrist_yaw"),
        ("abc", "numbers"),
    ],
)
def test_bad_input_is_refused_by_name(model, q, fragment):
    with pytest.raises(KinematicsError, match=fragment):
        forward_kinematics(q, model)


def test_bad_batch_and_feed_are_refused(model):
    q = np.zeros((4, 5))
    q[2, 1] = np.nan
    with pytest.raises(KinematicsError, match="row 2"):
        forward_kinematics(q, model)
    with pytest.raises(KinematicsError, match="feed"):
        forward_kinematics(np.zeros(5), model, feed=float("nan"))


def _pinocchio_configuration(pin_model, q: np.ndarray, feed: float) -> np.ndarray:
    values = dict(zip(JOINT_NAMES, q, strict=True))
    values["drill_feed"] = feed
    configuration = np.zeros(pin_model.nq)
    for joint_id in range(1, pin_model.njoints):
        name = pin_model.names[joint_id]
        assert pin_model.joints[joint_id].nq == 1, f"URDF joint {name} is not 1-DOF"
        configuration[pin_model.joints[joint_id].idx_q] = values[name]
    return configuration


@pytest.mark.engines
def test_matches_pinocchio_on_the_urdf(request, model):
    pin = pytest.importorskip("pinocchio")
    urdf_path = request.getfixturevalue("exported_urdf")
    pin_model = pin.buildModelFromUrdf(str(urdf_path))
    data = pin_model.createData()
    frames = {name: pin_model.getFrameId(name) for name in FRAME_NAMES[1:]}
    for name, frame_id in frames.items():
        assert frame_id < pin_model.nframes, f"URDF has no frame {name}"
    rng = np.random.default_rng(4)
    for q in random_configurations(model, 1000, seed=5):
        feed = float(rng.uniform(model.feed_lower, model.feed_upper))
        pin.forwardKinematics(pin_model, data, _pinocchio_configuration(pin_model, q, feed))
        pin.updateFramePlacements(pin_model, data)
        ours = link_frames(q, model, feed=feed)
        for name, frame_id in frames.items():
            np.testing.assert_allclose(data.oMf[frame_id].homogeneous, ours[name], atol=1e-12, err_msg=name)
        np.testing.assert_allclose(
            data.oMf[frames["drill_tip"]].homogeneous, forward_kinematics(q, model, feed=feed), atol=1e-12
        )


@pytest.mark.engines
def test_matches_mujoco_on_the_urdf(request, model):
    mujoco = pytest.importorskip("mujoco")
    urdf_path = request.getfixturevalue("exported_urdf")
    mj_model = mujoco.MjModel.from_xml_path(str(urdf_path))
    data = mujoco.MjData(mj_model)
    address = {name: mj_model.joint(name).qposadr[0] for name in (*JOINT_NAMES, "drill_feed")}
    rng = np.random.default_rng(6)
    for q in random_configurations(model, 300, seed=7):
        feed = float(rng.uniform(model.feed_lower, model.feed_upper))
        for name, value in zip((*JOINT_NAMES, "drill_feed"), (*q, feed), strict=True):
            data.qpos[address[name]] = value
        mujoco.mj_kinematics(mj_model, data)
        ours = link_frames(q, model, feed=feed)
        for name in FRAME_NAMES[1:]:
            body = mj_model.body(name).id
            np.testing.assert_allclose(data.xpos[body], ours[name][:3, 3], atol=1e-12, err_msg=name)
            np.testing.assert_allclose(
                data.xmat[body].reshape(3, 3), ours[name][:3, :3], atol=1e-12, err_msg=name
            )


def test_the_tool_axis_is_the_poses_last_two_columns_to_the_bit(model):
    """tool_axis_single (the no-go zone check's FK) against forward_kinematics_single: the same
    numbers, nominal and calibrated, and the same refusal of a non-finite joint."""
    from quirobot_description.geometric_errors import GeometricErrors
    from quirobot_kinematics.forward import forward_kinematics_single, tool_axis_single

    rng = np.random.default_rng(7)
    errors = GeometricErrors.from_vector(rng.normal(0.0, 1e-4, GeometricErrors.zero().vector().shape))
    for machine in (model, model.calibrated(errors)):
        for q in random_configurations(model, 500, seed=11).tolist():
            pose = forward_kinematics_single(q, machine)
            assert tool_axis_single(q, machine) == (pose[:3, 3].tolist(), pose[:3, 2].tolist())
    with pytest.raises(KinematicsError, match="wrist_yaw is"):
        tool_axis_single([0.5, 0.5, 0.3, math.nan, 0.0], model)
