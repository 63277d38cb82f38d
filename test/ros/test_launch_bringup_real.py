"""launch_testing: `bringup.launch.py hardware:=real` with drive_node's simulated drives, over DDS.

ros2_control_node (joint_state_topic_hardware_interface, trigger_joint_command_threshold -1),
the controllers, robot_state_publisher and drive_node (SimulatedDrives on the MuJoCo plant):

1. every controller becomes active, the plugin's NaN commands before the controllers ran
   stopped nothing, and the first command drive_node takes is the controllers' activation hold
   at the measured pose (the launch starts the spawner once the drives are up, so no controller
   holds the description's initial pose: drive_node would note "start-up: ignored a command");
2. a FollowJointTrajectory goal on the arm executes to SUCCESSFUL and drive_node's measured joint
   states reach the goal;
3. the robot then holds still for 5 s: no stop (the plugin keeps publishing the held command
   every cycle, so the command watchdog stays quiet) and the joint states stay at the goal;
4. a second goal executes;
5. a stale command stream stops the drives, with the reason in drive_node's log. Deactivating
   the trajectory controller does not make one: the plugin's write() keeps publishing the last
   command values every cycle (the robot holds). Setting the hardware component inactive
   (controller_manager's set_hardware_component_state) does: the controller manager calls
   write() of active components only, so no command is published any more.

The non-finite command stop is in test_launch_bringup_real_nan.py (a stop is latched, so it
needs a drive_node of its own). Real nodes over DDS; skipped where ROS 2 is absent; CI's ROS tier
(.ci/ros-tier -k bringup_real) runs it against the colcon-installed package. Timeouts are
generous and nothing asserts a duration (a loaded 2-core machine runs drive_node's 1 kHz loop
late; its watchdog measures the wall clock, so the hold must survive that).
"""

from __future__ import annotations

import time
import unittest

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import launch_testing  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from bringup_real import (  # noqa: E402
    CONTROLLERS,
    HANDSHAKE,
    HARDWARE,
    IGNORED,
    STATES,
    STOPPED,
    bringup_real,
    drive_node_log,
    start_up_log,
    stops,
    wait_for_controllers,
)
from exit_codes import assert_exit_codes  # noqa: E402
from ros_graph import CONTROLLER_MANAGER, GraphClient  # noqa: E402

from quirobot_control.bridge.drive_bridge import STATES_AT_HARDWARE  # noqa: E402
from quirobot_description.parameters import JOINT_NAMES  # noqa: E402

#: Motion of the arm from its start pose: 5 mm on each gantry axis, 0.05 rad on each wrist joint.
STEP = np.array([0.005, -0.005, 0.005, 0.05, -0.05])
#: How close drive_node's measured state must come to a goal: twice the trajectory controller's
#: goal tolerance (config/controllers.yaml: 0.1 mm, 1 mrad), which it checked on the same states.
REACHED = np.array([2e-4, 2e-4, 2e-4, 2e-3, 2e-3])
HOLD = 5.0  # s of holding still between the goals
DURATION = 4.0  # s per goal (peak about 2 mm/s: a late update stays inside the 1 mm path tolerance)


@pytest.mark.launch_test
def generate_test_description():
    return bringup_real()


class TestRealBringup(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rclpy.init()
        cls.graph = GraphClient("test_bringup_real")
        cls.start: np.ndarray | None = None

    @classmethod
    def tearDownClass(cls) -> None:
        cls.graph.close()
        rclpy.shutdown()

    def measured(self) -> np.ndarray:
        """The arm's positions in drive_node's next joint state."""
        positions = self.graph.joint_positions(STATES, timeout=60.0)
        return np.array([positions[n] for n in JOINT_NAMES])

    def execute(self, goal: np.ndarray) -> None:
        q0 = self.measured()
        midway = 0.5 * (q0 + goal)
        accepted, result, _ = self.graph.follow_trajectory(
            "joint_trajectory_controller",
            JOINT_NAMES,
            [(DURATION / 2, midway), (DURATION, goal)],
            timeout=120.0,
        )
        self.assertTrue(accepted, "the arm goal was rejected")
        self.assertEqual(result.error_code, 0, result.error_string)  # SUCCESSFUL
        self.graph.spin_until(
            lambda: bool(np.all(np.abs(self.measured() - goal) <= REACHED)),
            30.0,
            "the measured state at the goal",
        )

    def assert_no_stop(self, proc_output) -> None:
        self.assertEqual(stops(proc_output), [], "drive_node stopped the drives")

    def test_1_controllers_become_active_and_nothing_stops(self, proc_output) -> None:
        states = wait_for_controllers(self.graph, proc_output)
        self.assertEqual({n: states[n] for n in CONTROLLERS}, dict.fromkeys(CONTROLLERS, "active"))
        self.measured()  # drive_node publishes
        proc_output.assertWaitFor(HANDSHAKE, timeout=60.0, stream="stderr")  # before any goal
        log = drive_node_log(proc_output)
        self.assertIn(f"{STATES_AT_HARDWARE} ({HARDWARE.lower()} subscribed)", log)  # the spawner's cue
        self.assertNotIn(IGNORED, log, start_up_log(proc_output))
        self.assert_no_stop(proc_output)

    def test_2_a_goal_executes_and_the_drives_reach_it(self, proc_output) -> None:
        wait_for_controllers(self.graph, proc_output)
        type(self).start = self.measured()
        self.execute(self.start + STEP)
        self.assert_no_stop(proc_output)

    def test_3_the_robot_holds_still_without_a_stop(self, proc_output) -> None:
        goal = self.start + STEP
        from sensor_msgs.msg import JointState

        received = self.graph.messages(JointState, STATES)
        first = len(received)
        end = time.monotonic() + HOLD
        self.graph.spin_until(lambda: time.monotonic() > end, HOLD + 30.0, f"{HOLD:g} s of holding")
        held = np.array(
            [[dict(zip(m.name, m.position, strict=True))[n] for n in JOINT_NAMES] for m in received[first:]]
        )
        self.assertGreater(len(held), 0, "no joint state while holding")
        deviation = np.max(np.abs(held - goal), axis=0)
        self.assertTrue(np.all(deviation <= REACHED), f"held pose moved by {deviation}")
        self.assert_no_stop(proc_output)

    def test_4_a_second_goal_executes(self, proc_output) -> None:
        self.execute(self.start)
        self.assert_no_stop(proc_output)

    def test_5_a_stale_command_stream_stops_the_drives(self, proc_output) -> None:
        from controller_manager_msgs.srv import SetHardwareComponentState
        from lifecycle_msgs.msg import State

        request = SetHardwareComponentState.Request(
            name=HARDWARE, target_state=State(id=State.PRIMARY_STATE_INACTIVE, label="inactive")
        )
        response = self.graph.call(
            SetHardwareComponentState, f"{CONTROLLER_MANAGER}/set_hardware_component_state", request
        )
        self.assertTrue(response.ok, "the controller manager did not deactivate the hardware component")
        proc_output.assertWaitFor(f"{STOPPED}command watchdog: no command for", timeout=60.0, stream="stderr")
        self.assertEqual(len(stops(proc_output)), 1, drive_node_log(proc_output))


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output) -> None:
        assert_exit_codes(proc_info, proc_output)

    def test_drive_node_stops_the_drives_and_exits_cleanly(self, proc_info, proc_output) -> None:
        # Status 0: SIGINT (or launch's SIGTERM) reached its clean stop (bridge.close()).
        assert_exit_codes(proc_info, proc_output, allowed=(0,), process="drive_node")
