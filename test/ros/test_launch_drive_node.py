"""launch_testing: drive_node with drive_backend:=canopen on a CAN interface that does not exist
logs one clear line naming the bus and exits with status 1 (nothing enabled, no joint states).

The end-to-end behaviour of the canopen backend (virtual buses, simulated CiA 402 slaves) is in
test_drive_bridge_canopen.py; this checks the node's parameters reach it. Skipped where ROS 2 is
absent (launch_testing not importable). Run by CI's ROS tier
(`bash .ci/ros-tier -k drive_node`) against the colcon-installed package.
"""

from __future__ import annotations

import unittest

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("launch_ros")

import launch_testing.actions  # noqa: E402
import launch_testing.util  # noqa: E402
from exit_codes import assert_exit_codes  # noqa: E402
from launch_ros.actions import Node  # noqa: E402

from launch import LaunchDescription  # noqa: E402
from quirobot_description.urdf import robot_description  # noqa: E402

INTERFACE = "no-such-interface"


@pytest.mark.launch_test
def generate_test_description():
    drive_node = Node(
        package="quirobot",
        executable="drive_node",
        parameters=[
            {
                "drive_backend": "canopen",
                "can_interface": INTERFACE,
                "robot_description": robot_description("drill", "real"),
            }
        ],
        output="screen",
    )
    # KeepAliveProc: drive_node exits at once, and a launch whose last process ended races the
    # test runner's shutdown (a deadlock inside launch, seen in CI).
    keep_alive = launch_testing.util.KeepAliveProc()
    return (
        LaunchDescription([drive_node, keep_alive, launch_testing.actions.ReadyToTest()]),
        {"drive_node": drive_node},
    )


class TestCanopenStartUpFailure(unittest.TestCase):
    def test_the_node_names_the_bus_and_stops(self, proc_output, proc_info, drive_node):
        proc_output.assertWaitFor(
            f"drive start-up failed: CAN bus can0 ({INTERFACE} channel can0): cannot open",
            process=drive_node,
            timeout=60,
        )
        proc_info.assertWaitForShutdown(process=drive_node, timeout=60)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_code_is_one(self, proc_info, proc_output, drive_node):
        assert_exit_codes(proc_info, proc_output, allowed=(1,), process=drive_node)

    def test_a_wrong_exit_code_is_reported_with_what_the_node_printed(
        self, proc_info, proc_output, drive_node
    ):
        # The shared check itself (exit_codes.py) on a real exit: status 1 where 0 is expected is
        # reported with the node's own last lines, the cause CI would otherwise not show.
        with self.assertRaises(AssertionError) as raised:
            assert_exit_codes(proc_info, proc_output, allowed=(0,), process=drive_node)
        message = str(raised.exception)
        self.assertIn("exited with code 1", message)
        self.assertIn(f"drive start-up failed: CAN bus can0 ({INTERFACE} channel can0)", message)
