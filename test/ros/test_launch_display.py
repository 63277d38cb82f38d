"""launch_testing: display.launch.py (headless: gui:=false rviz:=false) publishes the robot
description and its transforms. Needs ROS 2 and the installed package (colcon build, source
install/setup.bash); skipped where launch_testing is absent."""

# ruff: noqa: E402, I001  (imports follow the skip; ROS's `launch` is not first-party)
from __future__ import annotations

import time
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("launch_testing")

import launch_testing.actions
import launch_testing.asserts
import rclpy
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

LAUNCH_FILE = Path(__file__).resolve().parents[2] / "launch" / "display.launch.py"
TIMEOUT = 30.0  # s, to see the first messages


@pytest.mark.launch_test
def generate_test_description():
    display = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
        launch_arguments={"tool": "drill", "gui": "false", "rviz": "false"}.items(),
    )
    return LaunchDescription([display, launch_testing.actions.ReadyToTest()])


class TestDisplay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("test_display_launch")

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def _wait(self, message_type, topic, qos, accept=lambda message: True):
        received = []
        subscription = self.node.create_subscription(
            message_type, topic, lambda m: received.append(m) if accept(m) else None, qos
        )
        deadline = time.monotonic() + TIMEOUT
        while not received and time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.1)
        self.node.destroy_subscription(subscription)
        self.assertTrue(received, f"nothing on {topic} within {TIMEOUT} s")
        return received[0]

    def test_robot_description_is_the_quirobot_urdf(self):
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        message = self._wait(String, "/robot_description", latched)
        root = ET.fromstring(message.data)
        links = {link.get("name") for link in root.findall("link")}
        self.assertTrue({"world", "base_link", "tool0", "drill_bit", "drill_tip"} <= links)

    def test_tf_carries_the_moving_links(self):
        moving = {"x_carriage", "y_carriage", "z_ram", "wrist_yaw_link", "wrist_pitch_link", "drill_bit"}
        message = self._wait(
            TFMessage,
            "/tf",
            QoSProfile(depth=100),
            accept=lambda m: moving <= {t.child_frame_id for t in m.transforms},
        )
        self.assertTrue(moving <= {t.child_frame_id for t in message.transforms})

    def test_tf_static_carries_tool0(self):
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        message = self._wait(TFMessage, "/tf_static", latched)
        self.assertIn("tool0", {t.child_frame_id for t in message.transforms})


@launch_testing.post_shutdown_test()
class TestDisplayShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
