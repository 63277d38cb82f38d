"""launch_testing: `bringup.launch.py hardware:=real` (drive_node's simulated drives): a non-finite
command on /quirobot/joint_commands, after the start-up handshake, stops every drive and
drive_node's log names the joint, the interface and the value.

The plugin itself publishes NaN commands from its first cycle until the controllers write their
command interfaces; those must not stop anything (the handshake waits for the first all-finite
command near the measured pose; a goal to the measured pose makes sure there is one). We then
publish a command ourselves, every joint at its
measured position but wrist_pitch at NaN, until drive_node reports the stop (the plugin's own
commands keep arriving in between and may overwrite ours before a control period takes it).
A stop is latched, so this needs a launch of its own (the stale-stream stop is in
test_launch_bringup_real.py). Real nodes over DDS; skipped where ROS 2 is absent; CI's ROS tier
(.ci/ros-tier -k bringup_real) runs it against the colcon-installed package.
"""

from __future__ import annotations

import math
import unittest

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import launch_testing  # noqa: E402
import rclpy  # noqa: E402
from bringup_real import (  # noqa: E402
    COMMANDS,
    HANDSHAKE,
    STATES,
    STOPPED,
    bringup_real,
    drive_node_log,
    stops,
    wait_for_controllers,
)
from exit_codes import assert_exit_codes  # noqa: E402
from ros_graph import GraphClient  # noqa: E402

from quirobot_description.parameters import JOINT_NAMES  # noqa: E402

REASON = f"{STOPPED}non-finite position command nan for joint wrist_pitch"


@pytest.mark.launch_test
def generate_test_description():
    return bringup_real()


class TestNonFiniteCommand(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rclpy.init()
        cls.graph = GraphClient("test_bringup_real_nan")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.graph.close()
        rclpy.shutdown()

    def test_a_nan_command_stops_every_drive_naming_it(self, proc_output) -> None:
        from sensor_msgs.msg import JointState

        wait_for_controllers(self.graph, proc_output)
        measured = self.graph.joint_positions(STATES, timeout=60.0)
        # A goal to where the arm is: the trajectory controller then commands the measured pose,
        # whatever it held at its activation (see test_launch_bringup_real.py, step 2).
        arm = [measured[n] for n in JOINT_NAMES]
        accepted, result, _ = self.graph.follow_trajectory(
            "joint_trajectory_controller", JOINT_NAMES, [(1.0, arm)], timeout=120.0
        )
        self.assertTrue(accepted and result.error_code == 0, "the goal to the measured pose failed")
        proc_output.assertWaitFor(HANDSHAKE, timeout=30.0, stream="stderr")
        self.assertEqual(stops(proc_output), [], "the plugin's start-up commands stopped the drives")

        measured = self.graph.joint_positions(STATES, timeout=60.0)
        command = JointState(
            name=list(measured), position=list(measured.values()), velocity=[0.0] * len(measured)
        )
        command.position[command.name.index("wrist_pitch")] = math.nan
        publisher = self.graph.node.create_publisher(JointState, COMMANDS, 10)
        self.graph.node.create_timer(0.01, lambda: publisher.publish(command))
        self.graph.spin_until(lambda: bool(stops(proc_output)), 60.0, "drive_node to report a stop")
        self.assertTrue(stops(proc_output)[0].endswith(REASON), drive_node_log(proc_output))


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output) -> None:
        assert_exit_codes(proc_info, proc_output)

    def test_drive_node_stops_the_drives_and_exits_cleanly(self, proc_info, proc_output) -> None:
        # Status 0: SIGINT (or launch's SIGTERM) reached its clean stop (bridge.close()).
        assert_exit_codes(proc_info, proc_output, allowed=(0,), process="drive_node")
