"""Service translation (GetPositionFK / GetPositionIK without ROS) and quaternion conversions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from quirobot_description.parameters import JOINT_NAMES, load_parameters
from quirobot_kinematics.forward import FRAME_NAMES, forward_kinematics, link_frames
from quirobot_kinematics.model import KinematicModel, KinematicsError
from quirobot_kinematics.rotations import matrix_from_quaternion, quaternion_from_matrix
from quirobot_kinematics.service_translation import (
    GetPositionFKRequest,
    GetPositionIKRequest,
    Header,
    JointState,
    KinematicsService,
    MoveItErrorCodes,
    Point,
    Pose,
    PoseStamped,
    PositionIKRequest,
    Quaternion,
    RobotState,
    matrix_from_pose,
    pose_from_matrix,
)

Q = [0.7, 1.3, 0.9, 2.1, 0.4]


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters())


@pytest.fixture
def service(model) -> KinematicsService:
    return KinematicsService(model)


def state(q, feed=None, names=JOINT_NAMES) -> RobotState:
    names = list(names)
    positions = list(q)
    if feed is not None:
        names.append("drill_feed")
        positions.append(feed)
    return RobotState(JointState(names, positions))


def ik_request(T, frame="world", link="tool0", robot_state=None) -> GetPositionIKRequest:
    return GetPositionIKRequest(
        PositionIKRequest(
            ik_link_name=link,
            pose_stamped=PoseStamped(Header(frame), pose_from_matrix(T)),
            robot_state=robot_state or RobotState(),
        )
    )


def test_error_codes_are_moveit_msgs_values():
    # moveit_msgs/msg/MoveItErrorCodes.msg: SUCCESS=1, INVALID_ROBOT_STATE=-17,
    # INVALID_LINK_NAME=-18, FRAME_TRANSFORM_FAILURE=-21, NO_IK_SOLUTION=-31
    codes = {name: value for name, value in vars(MoveItErrorCodes).items() if name.isupper()}
    assert codes == {
        "SUCCESS": 1,
        "INVALID_ROBOT_STATE": -17,
        "INVALID_LINK_NAME": -18,
        "FRAME_TRANSFORM_FAILURE": -21,
        "NO_IK_SOLUTION": -31,
    }


def test_quaternions_match_scipy():
    rotations = Rotation.random(2000, random_state=51)
    for rotation in rotations:
        x, y, z, w = quaternion_from_matrix(rotation.as_matrix())
        expected = rotation.as_quat()  # (x, y, z, w)
        expected = expected if expected[3] >= 0 else -expected
        np.testing.assert_allclose([x, y, z, w], expected, atol=1e-12)
        np.testing.assert_allclose(
            matrix_from_quaternion(*rotation.as_quat()), rotation.as_matrix(), atol=1e-12
        )
    # Near 180 degrees (trace -1) every branch of Shepperd's method is used.
    for axis in np.eye(3):
        R = Rotation.from_rotvec(math.pi * axis).as_matrix()
        np.testing.assert_allclose(matrix_from_quaternion(*quaternion_from_matrix(R)), R, atol=1e-12)
    with pytest.raises(KinematicsError, match="zero length"):
        matrix_from_quaternion(0.0, 0.0, 0.0, 0.0)
    with pytest.raises(KinematicsError, match="finite"):
        matrix_from_quaternion(0.0, float("nan"), 0.0, 1.0)


def test_fk_answers_every_frame(service, model):
    for frame in ("world", "base_link", "", "/world"):
        request = GetPositionFKRequest(Header(frame), list(FRAME_NAMES), state(Q, feed=0.03))
        response = service.compute_fk(request)
        assert response.error_code.val == MoveItErrorCodes.SUCCESS
        assert response.fk_link_names == list(FRAME_NAMES)
        expected = link_frames(Q, model, feed=0.03)
        for name, pose in zip(response.fk_link_names, response.pose_stamped, strict=True):
            assert pose.header.frame_id == (frame.lstrip("/") or "world")
            np.testing.assert_allclose(matrix_from_pose(pose.pose), expected[name], atol=1e-12)


def test_fk_joint_order_in_the_state_does_not_matter(service, model):
    order = [4, 2, 0, 3, 1]
    request = GetPositionFKRequest(
        Header("world"), ["tool0"], state([Q[i] for i in order], names=[JOINT_NAMES[i] for i in order])
    )
    response = service.compute_fk(request)
    np.testing.assert_allclose(
        matrix_from_pose(response.pose_stamped[0].pose), forward_kinematics(Q, model), atol=1e-12
    )


@pytest.mark.parametrize(
    ("request_", "code", "fragment"),
    [
        (
            GetPositionFKRequest(Header("map"), ["tool0"], state(Q)),
            MoveItErrorCodes.FRAME_TRANSFORM_FAILURE,
            "'map'",
        ),
        (
            GetPositionFKRequest(Header("world"), ["flange"], state(Q)),
            MoveItErrorCodes.INVALID_LINK_NAME,
            "'flange'",
        ),
        (
            GetPositionFKRequest(Header("world"), ["tool0"], state(Q[:4], names=JOINT_NAMES[:4])),
            MoveItErrorCodes.INVALID_ROBOT_STATE,
            "lacks joint(s) wrist_pitch",
        ),
        (
            GetPositionFKRequest(Header("world"), ["tool0"], RobotState()),
            MoveItErrorCodes.INVALID_ROBOT_STATE,
            "lacks",
        ),
        (
            GetPositionFKRequest(Header("world"), ["tool0"], state([0.1, math.nan, 0.1, 0.1, 0.1])),
            MoveItErrorCodes.INVALID_ROBOT_STATE,
            "gantry_y is nan",
        ),
        (
            GetPositionFKRequest(
                Header("world"), ["tool0"], RobotState(JointState(list(JOINT_NAMES), [0.0] * 4))
            ),
            MoveItErrorCodes.INVALID_ROBOT_STATE,
            "5 joint names but 4 positions",
        ),
    ],
)
def test_fk_refusals(service, request_, code, fragment):
    response = service.compute_fk(request_)
    assert response.error_code.val == code
    assert fragment in response.error_code.message
    assert response.pose_stamped == []


def test_ik_full_pose_round_trip(service, model):
    T = forward_kinematics(Q, model)
    response = service.compute_ik(ik_request(T, robot_state=state(Q)))
    assert response.error_code.val == MoveItErrorCodes.SUCCESS, response.error_code.message
    assert response.solution.joint_state.name == list(JOINT_NAMES)
    np.testing.assert_allclose(response.solution.joint_state.position, Q, atol=1e-9)


def test_ik_without_seed_and_for_the_drill_tip(service, model):
    feed = 0.04
    T = forward_kinematics(Q, model, feed=feed)
    response = service.compute_ik(
        ik_request(T, frame="base_link", link="drill_tip", robot_state=state(Q, feed=feed))
    )
    assert response.error_code.val == MoveItErrorCodes.SUCCESS, response.error_code.message
    assert response.solution.joint_state.name == [*JOINT_NAMES, "drill_feed"]
    solved = response.solution.joint_state.position
    np.testing.assert_allclose(forward_kinematics(solved[:5], model, feed=solved[5]), T, atol=1e-9)
    response = service.compute_ik(ik_request(forward_kinematics(Q, model)))
    assert response.error_code.val == MoveItErrorCodes.SUCCESS
    np.testing.assert_allclose(
        forward_kinematics(response.solution.joint_state.position, model),
        forward_kinematics(Q, model),
        atol=1e-9,
    )


def test_orientation_mode_full_refuses_a_roll_that_approach_accepts(model):
    T = forward_kinematics([1.0, 1.0, 1.0, 0.3, 0.0], model)
    T[:3, :3] = T[:3, :3] @ Rotation.from_rotvec([0.0, 0.0, math.radians(10.0)]).as_matrix()  # roll 10 deg
    full = KinematicsService(model, "full").compute_ik(ik_request(T))
    assert full.error_code.val == MoveItErrorCodes.NO_IK_SOLUTION
    assert "10 deg out of the horizontal plane" in full.error_code.message
    approach = KinematicsService(model, "approach").compute_ik(ik_request(T))
    assert approach.error_code.val == MoveItErrorCodes.SUCCESS
    reached = forward_kinematics(approach.solution.joint_state.position, model)
    np.testing.assert_allclose(reached[:3, 3], T[:3, 3], atol=1e-9)
    np.testing.assert_allclose(reached[:3, 2], T[:3, 2], atol=1e-9)


def test_ik_refusals(service, model):
    T = forward_kinematics(Q, model)
    cases = [
        (ik_request(T, link="wrist_pitch_link"), MoveItErrorCodes.INVALID_LINK_NAME, "'wrist_pitch_link'"),
        (ik_request(T, frame="odom"), MoveItErrorCodes.FRAME_TRANSFORM_FAILURE, "'odom'"),
        (
            ik_request(T, robot_state=state(Q[:2], names=JOINT_NAMES[:2])),
            MoveItErrorCodes.INVALID_ROBOT_STATE,
            "lacks",
        ),
        (
            ik_request(T, link="drill_tip", robot_state=state(Q, feed=0.5)),
            MoveItErrorCodes.INVALID_ROBOT_STATE,
            "drill_feed 0.5 m is outside its travel",
        ),
        (
            ik_request(forward_kinematics([1.0, 1.0, 2.5, 0.3, 0.2], model)),
            MoveItErrorCodes.NO_IK_SOLUTION,
            "gantry_z would be 2.5 m, 0.5 m above its upper limit 2 m",
        ),
    ]
    for request, code, fragment in cases:
        response = service.compute_ik(request)
        assert response.error_code.val == code
        assert fragment in response.error_code.message
        assert response.solution.joint_state.name == []
    bad = ik_request(T)
    bad.ik_request.pose_stamped.pose = Pose(Point(1.0, 1.0, -1.0), Quaternion(0.0, 0.0, 0.0, 0.0))
    response = service.compute_ik(bad)
    assert response.error_code.val == MoveItErrorCodes.NO_IK_SOLUTION
    assert "zero length" in response.error_code.message
    bad.ik_request.pose_stamped.pose = Pose(Point(1.0, math.inf, -1.0), Quaternion())
    assert "finite" in service.compute_ik(bad).error_code.message


def test_bad_configuration_is_refused(model):
    with pytest.raises(ValueError, match="orientation_mode must be one of full, approach"):
        KinematicsService(model, "roll")
    with pytest.raises(ValueError, match="orientation_tolerance"):
        KinematicsService(model, "full", orientation_tolerance=-1.0)


def test_node_module_imports_without_ros():
    """The ROS adapter must import (for the console script) without pulling rclpy in at import time."""
    import subprocess
    import sys

    code = (
        "import sys, quirobot_kinematics.nodes.kinematics_node as node; "
        "assert 'rclpy' not in sys.modules, 'rclpy imported at module level'; "
        "assert callable(node.main) and node.DEFAULT_NAMESPACE == 'quirobot'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_node_without_ros_exits_2_with_one_line():
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("rclpy") is not None:
        pytest.skip("ROS 2 is present: test/ros/test_launch_kinematics.py runs the node")
    result = subprocess.run(
        [sys.executable, "-m", "quirobot_kinematics.nodes.kinematics_node"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("kinematics_node: error: needs ROS 2") and result.stderr.count("\n") == 1
