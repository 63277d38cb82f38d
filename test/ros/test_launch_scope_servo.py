"""launch_testing: scope_servo_node over DDS moves the scope only on fresh joint states and on
fresh twists in `world` (issue 33 item 10; issue 31 item 4: the scope servo's joint-state age
limit, safety.state_age, on the robot path).

scope_servo.launch.py alone (the node configured, inactive) on the shipped arthroscopy task with
its dead-man timeout and joint-state age limit widened for a loaded machine (scope_task.py: 2 s
and 4 s). The test publishes the joint states (the scope docked in the task's portal) and the
TwistStamped stream itself, stamped on its clock (the system clock, the node's too):

1. joint states stamped 30 s before they are sent: `activate` is refused, the log naming their age;
2. active on fresh states, twists stamped an hour ago and twists in tool0's frame move nothing
   (every joint command stays at the docked pose), each kind of refusal logged at once and then
   at most once per 2 s; fresh twists in world then move the scope;
3. active and streaming, the joint states stop: the node leaves the mode (its joint-state
   watchdog), holds the last command at rest, deactivates itself and sends no command after.

Before: (1) the node activated, (2) the scope moved (the node stamped twists on receipt and never
read frame_id), (3) it went on commanding with no joint states. Skipped where ROS 2 is absent.
Run by CI's ROS tier (`bash .ci/ros-tier -k scope_servo`).
"""

# ruff: noqa: E402, I001  (imports follow the skip; ROS's `launch` is not first-party)
from __future__ import annotations

import time
import unittest

import numpy as np
import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import launch_testing.actions
from exit_codes import assert_exit_codes
import rclpy
from ament_index_python.packages import get_package_share_directory
from geometry_msgs.msg import TwistStamped
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from lifecycle_msgs.msg import State, Transition
from rclpy.duration import Duration
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from quirobot_control.planning.arthroscopy import servo_for
from quirobot_description.parameters import axes_for, load_parameters
from ros_graph import GraphClient
from scope_task import loaded_machine_task

SERVO = "/scope_servo_node"
COMMANDS = "/joint_trajectory_controller/joint_trajectory"
TIMEOUT = 60.0  # s (wall): node start-up on a loaded 2-core machine
TASK_FILE, TASK = loaded_machine_task()
DOCKED = servo_for(TASK, load_parameters()).q
STALE = 30.0  # s: how old the stale joint states are when sent (scope_task.py's limit: 4 s)
HOUR = 3600.0  # s: how old the stale twists are


@pytest.mark.launch_test
def generate_test_description():
    launch = f"{get_package_share_directory('quirobot')}/launch/scope_servo.launch.py"
    include = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(launch), launch_arguments={"task": str(TASK_FILE)}.items()
    )
    return LaunchDescription([include, launch_testing.actions.ReadyToTest()])


def _log(proc_output) -> str:
    return "".join(io.text.decode(errors="replace") for io in proc_output if "scope_servo" in io.process_name)


class TestScopeServoNode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.graph = GraphClient("test_scope_servo_node")
        node = cls.graph.node
        cls.states_age: float | None = None  # s: how old the published states are; None: none
        cls.states = node.create_publisher(JointState, "/quirobot/joint_states", 10)
        cls.twists = node.create_publisher(TwistStamped, "/quirobot/scope/servo", 10)
        cls.commands = cls.graph.messages(JointTrajectory, COMMANDS, 100)
        cls.timer = node.create_timer(0.02, cls.publish_states)

    @classmethod
    def tearDownClass(cls):
        cls.graph.close()
        rclpy.shutdown()

    @classmethod
    def publish_states(cls) -> None:
        if cls.states_age is None:
            return
        message = JointState(name=list(axes_for("arthroscope")), position=[float(v) for v in DOCKED])
        message.header.stamp = (cls.graph.node.get_clock().now() - Duration(seconds=cls.states_age)).to_msg()
        cls.states.publish(message)

    def send(self, age: float = 0.0, frame: str = "world") -> None:
        """A twist of 10 mm/s sideways (a pivot about the portal), stamped `age` s ago in `frame`."""
        message = TwistStamped()
        message.header.frame_id = frame
        message.header.stamp = (self.graph.node.get_clock().now() - Duration(seconds=age)).to_msg()
        message.twist.linear.x = 0.01
        self.twists.publish(message)

    def stream(self, seconds: float, age: float = 0.0, frame: str = "world") -> None:
        """`send` at 50 Hz for `seconds` (wall)."""
        timer = self.graph.node.create_timer(0.02, lambda: self.send(age, frame))
        self.wait(seconds)
        self.graph.node.destroy_timer(timer)

    def wait(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        self.graph.spin_until(lambda: time.monotonic() > end, seconds + 1.0, "time to pass")

    def settle(self) -> None:
        """Wait for 20 more commands: the node, however late on a loaded machine, has then
        worked through the twists it received before (its timer and subscription share one
        executor)."""
        count = len(self.commands)
        self.graph.spin_until(lambda: len(self.commands) >= count + 20, TIMEOUT, "20 more commands")

    def activate(self) -> bool:
        return self.graph.lifecycle(SERVO, Transition.TRANSITION_ACTIVATE, TIMEOUT)

    def setUp(self) -> None:
        """Each test starts with the node configured and inactive (a test before it may have
        failed with the mode on)."""
        self.graph.spin_until(
            lambda: self.graph.lifecycle_state(SERVO, TIMEOUT)[0] != State.PRIMARY_STATE_UNCONFIGURED,
            TIMEOUT,
            "scope_servo_node configured by its launch file",
        )
        if self.graph.lifecycle_state(SERVO, TIMEOUT)[0] == State.PRIMARY_STATE_ACTIVE:
            self.graph.lifecycle(SERVO, Transition.TRANSITION_DEACTIVATE, TIMEOUT)
        self.graph.wait_for_lifecycle_state(SERVO, State.PRIMARY_STATE_INACTIVE, TIMEOUT)

    def positions(self, start: int = 0) -> np.ndarray:
        """(N, 5) the joint commands received since index `start`."""
        return np.array([list(c.points[0].positions) for c in self.commands[start:]])

    def test_1_activation_on_stale_joint_states_is_refused(self, proc_output):
        type(self).states_age = STALE
        self.wait(1.0)
        self.assertFalse(self.activate(), f"activated on joint states {STALE:g} s old")
        proc_output.assertWaitFor("activate refused: joint states: stamped 30.", timeout=10.0)
        self.assertEqual(self.commands, [], "commands before the mode was entered")

    def test_2_stale_and_foreign_frame_twists_move_nothing(self, proc_output):
        type(self).states_age = 0.0
        self.wait(0.5)
        self.assertTrue(self.activate(), "activate refused on fresh states of the docked scope")
        self.graph.spin_until(lambda: len(self.commands) >= 10, TIMEOUT, "the servo's commands")
        start = len(self.commands)
        begun = time.monotonic()
        self.stream(1.5, age=HOUR)
        self.stream(1.5, frame="tool0")
        self.settle()
        held = self.positions(start)
        moved = float(np.abs(held - held[0]).max())
        self.assertLess(moved, 1e-9, f"stale or foreign-frame twists moved the joints by {moved:.3g}")
        log, elapsed = _log(proc_output), time.monotonic() - begun
        for kind in ("stale", "frame"):
            lines = log.count(f"twist refused ({kind})")
            self.assertGreaterEqual(lines, 1, f"no {kind} refusal logged")
            self.assertLessEqual(lines, 1 + elapsed / 2.0, f"{kind} refusals logged {lines} times")
        self.assertIn(f"twist refused (stale): twist: stamped {HOUR:.0f}.", log)
        self.assertIn("twist refused (frame): frame_id 'tool0' is not 'world'", log)

        def moved_on() -> bool:
            return float(np.linalg.norm(self.positions(start)[-1, :3] - held[-1, :3])) > 1e-3

        timer = self.graph.node.create_timer(0.02, self.send)  # fresh, in world: the servo moves
        self.graph.spin_until(moved_on, TIMEOUT, "fresh twists in world to move the scope")
        self.graph.node.destroy_timer(timer)
        self.assertTrue(self.graph.lifecycle(SERVO, Transition.TRANSITION_DEACTIVATE, TIMEOUT))

    def test_3_the_servo_stops_when_the_joint_states_stop(self, proc_output):
        type(self).states_age = 0.0
        self.wait(0.5)
        self.assertTrue(self.activate(), "activate refused on fresh states of the docked scope")
        self.stream(0.5)
        type(self).states_age = None  # the joint states stop; the twists go on
        timer = self.graph.node.create_timer(0.02, self.send)
        self.graph.wait_for_lifecycle_state(SERVO, State.PRIMARY_STATE_INACTIVE, TIMEOUT)
        proc_output.assertWaitFor("joint-state watchdog: joint states", timeout=10.0)
        self.wait(0.5)
        stopped = len(self.commands)
        hold = self.commands[-1].points[0]
        self.assertEqual(list(hold.velocities), [0.0] * 5, "no hold at rest on the fault")
        self.wait(1.0)
        self.graph.node.destroy_timer(timer)
        self.assertEqual(len(self.commands), stopped, "commands went on without joint states")


@launch_testing.post_shutdown_test()
class TestScopeServoNodeShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output):
        assert_exit_codes(proc_info, proc_output)
