"""launch_testing: drive_node given a parameter outside its range (lockstep_timeout -1 s) logs one
line naming it, from its schema row, and exits with status 1 before anything starts.

The declaration helper itself is tested in-process (test_node_parameters_rclpy.py); this checks
the node goes through it and says it plainly. Run by CI's ROS tier
(`bash .ci/ros-tier -k drive_node_parameters`).
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
from quirobot_control.bridge.drive_node_parameters import DRIVE_NODE  # noqa: E402
from quirobot_description.node_parameters import NodeParameterError  # noqa: E402

BAD = -1.0  # s


@pytest.mark.launch_test
def generate_test_description():
    drive_node = Node(
        package="quirobot",
        executable="drive_node",
        parameters=[{"lockstep_timeout": BAD, "robot_description": "<robot name='unused'/>"}],
        output="screen",
    )
    # KeepAliveProc: drive_node exits at once (test_launch_drive_node.py says why).
    keep_alive = launch_testing.util.KeepAliveProc()
    return (
        LaunchDescription([drive_node, keep_alive, launch_testing.actions.ReadyToTest()]),
        {"drive_node": drive_node},
    )


class TestOutOfRangeParameter(unittest.TestCase):
    def test_the_node_names_the_parameter_and_stops(self, proc_output, proc_info, drive_node):
        with self.assertRaises(NodeParameterError) as expected:  # the schema's own words
            DRIVE_NODE["lockstep_timeout"].check(BAD)
        line = f"drive start-up failed: {expected.exception}"
        proc_output.assertWaitFor(line, process=drive_node, timeout=60)
        proc_info.assertWaitForShutdown(process=drive_node, timeout=60)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_code_is_one(self, proc_info, proc_output, drive_node):
        assert_exit_codes(proc_info, proc_output, allowed=(1,), process=drive_node)
