"""launch_testing: kinematics.launch.py starts kinematics_node; both services answer correctly.

Skipped where ROS 2 is absent (launch_testing not importable). Run by CI's ROS tier
(`bash .ci/ros-tier -k kinematics`) against the colcon-installed package.
"""

from __future__ import annotations

import math
import unittest

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import launch_testing.actions  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from exit_codes import assert_exit_codes  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

from launch import LaunchDescription  # noqa: E402
from quirobot_description.parameters import JOINT_NAMES, load_parameters  # noqa: E402
from quirobot_kinematics.forward import forward_kinematics  # noqa: E402
from quirobot_kinematics.kinematics_node_parameters import KINEMATICS_NODE  # noqa: E402
from quirobot_kinematics.model import KinematicModel  # noqa: E402
from quirobot_kinematics.rotations import matrix_from_quaternion, quaternion_from_matrix  # noqa: E402

Q = [0.7, 1.3, 0.9, 2.1, 0.4]
SUCCESS, INVALID_LINK_NAME, NO_IK_SOLUTION = 1, -18, -31  # moveit_msgs/msg/MoveItErrorCodes


@pytest.mark.launch_test
def generate_test_description():
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(
                    f"{get_package_share_directory('quirobot')}/launch/kinematics.launch.py"
                ),
                launch_arguments={"namespace": "quirobot"}.items(),
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestKinematicsServices(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rclpy.init()
        cls.model = KinematicModel.from_parameters(load_parameters())

    @classmethod
    def tearDownClass(cls) -> None:
        rclpy.shutdown()

    def setUp(self) -> None:
        self.node = rclpy.create_node("test_kinematics_client")

    def tearDown(self) -> None:
        self.node.destroy_node()

    def call(self, service_type, name: str, request):
        client = self.node.create_client(service_type, name)
        self.assertTrue(client.wait_for_service(timeout_sec=30.0), f"{name} not available")
        future = client.call_async(request)
        rclpy.spin_until_future_complete(self.node, future, timeout_sec=10.0)
        self.assertTrue(future.done(), f"{name} did not answer")
        return future.result()

    def fk(self, links: list[str]):
        from moveit_msgs.srv import GetPositionFK

        request = GetPositionFK.Request()
        request.header.frame_id = "world"
        request.fk_link_names = links
        request.robot_state.joint_state.name = list(JOINT_NAMES)
        request.robot_state.joint_state.position = Q
        return self.call(GetPositionFK, "/quirobot/compute_fk", request)

    def test_compute_fk(self) -> None:
        response = self.fk(["tool0"])
        self.assertEqual(response.error_code.val, SUCCESS)
        self.assertEqual(list(response.fk_link_names), ["tool0"])
        pose = response.pose_stamped[0]
        self.assertEqual(pose.header.frame_id, "world")
        o = pose.pose.orientation
        expected = forward_kinematics(Q, self.model)
        np.testing.assert_allclose(matrix_from_quaternion(o.x, o.y, o.z, o.w), expected[:3, :3], atol=1e-9)
        p = pose.pose.position
        np.testing.assert_allclose([p.x, p.y, p.z], expected[:3, 3], atol=1e-12)

    def test_compute_fk_unknown_link(self) -> None:
        self.assertEqual(self.fk(["flange"]).error_code.val, INVALID_LINK_NAME)

    def ik(self, T: np.ndarray):
        from moveit_msgs.srv import GetPositionIK

        request = GetPositionIK.Request()
        request.ik_request.ik_link_name = "tool0"
        request.ik_request.pose_stamped.header.frame_id = "base_link"
        position = request.ik_request.pose_stamped.pose.position
        position.x, position.y, position.z = (float(v) for v in T[:3, 3])
        orientation = request.ik_request.pose_stamped.pose.orientation
        orientation.x, orientation.y, orientation.z, orientation.w = quaternion_from_matrix(T[:3, :3])
        return self.call(GetPositionIK, "/quirobot/compute_ik", request)

    def test_compute_ik(self) -> None:
        response = self.ik(forward_kinematics(Q, self.model))
        self.assertEqual(response.error_code.val, SUCCESS)
        self.assertEqual(list(response.solution.joint_state.name), list(JOINT_NAMES))
        solved = list(response.solution.joint_state.position)
        np.testing.assert_allclose(
            forward_kinematics(solved, self.model), forward_kinematics(Q, self.model), atol=1e-9
        )

    def test_compute_ik_refuses_the_reports_example(self) -> None:
        # Report's worked example: outside the joint limits, so a motion request is refused.
        response = self.ik(forward_kinematics([-1.5, -1.5, 0.5, math.pi / 4, math.pi / 4], self.model))
        self.assertEqual(response.error_code.val, NO_IK_SOLUTION)

    def test_the_parameters_are_described_as_their_schema_says(self) -> None:
        # `ros2 param describe`'s service: type, description with the unit, range, read-only.
        from rcl_interfaces.srv import DescribeParameters

        request = DescribeParameters.Request(names=list(KINEMATICS_NODE.names))
        response = self.call(DescribeParameters, "/quirobot/kinematics_node/describe_parameters", request)
        described = {d.name: d for d in response.descriptors}
        self.assertEqual(set(described), set(KINEMATICS_NODE.names))
        tolerance = described["orientation_tolerance"]
        self.assertTrue(tolerance.description.endswith("[rad]"))
        self.assertEqual(len(tolerance.floating_point_range), 1)
        self.assertAlmostEqual(tolerance.floating_point_range[0].to_value, math.pi / 2)
        self.assertFalse(tolerance.read_only)
        self.assertTrue(described["parameter_file"].read_only)
        self.assertIn("approach", described["orientation_mode"].additional_constraints)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output) -> None:
        assert_exit_codes(proc_info, proc_output, allowed=(0,))
