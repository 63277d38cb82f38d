"""launch_testing: bringup.launch.py with hardware:=real brings the ros2_control stack and
drive_node up: the joint states of all six joints (drill_feed included) flow end to end.

Skipped where ROS 2 is absent (launch_testing not importable). Run with `colcon test` or
`launch_test test/test_launch_bringup.py` after `colcon build`.
"""

from __future__ import annotations

import time
import unittest
from pathlib import Path

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402

from launch import LaunchDescription  # noqa: E402

LAUNCH_FILE = Path(__file__).resolve().parents[2] / "launch" / "bringup.launch.py"
JOINTS = {"gantry_x", "gantry_y", "gantry_z", "wrist_yaw", "wrist_pitch", "drill_feed"}


@pytest.mark.launch_test
def generate_test_description():
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
                launch_arguments={"hardware": "real", "tool": "drill"}.items(),
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestBringup(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rclpy.init()

    @classmethod
    def tearDownClass(cls) -> None:
        rclpy.shutdown()

    def setUp(self) -> None:
        self.node = rclpy.create_node("test_bringup")

    def tearDown(self) -> None:
        self.node.destroy_node()

    def wait_for(self, topic: str, timeout: float = 60.0):
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import JointState

        received = []
        self.node.create_subscription(JointState, topic, received.append, qos_profile_sensor_data)
        end = time.monotonic() + timeout
        while time.monotonic() < end and not received:
            rclpy.spin_once(self.node, timeout_sec=0.1)
        self.assertTrue(received, f"no message on {topic} within {timeout} s")
        return received[-1]

    def test_drive_node_publishes_every_joint(self):
        message = self.wait_for("/quirobot/joint_states")
        self.assertEqual(set(message.name), JOINTS)
        self.assertEqual(len(message.position), len(JOINTS))

    def test_joint_state_broadcaster_relays_the_drive_states(self):
        message = self.wait_for("/joint_states")
        self.assertEqual(set(message.name), JOINTS)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=[0, -2, -15])
