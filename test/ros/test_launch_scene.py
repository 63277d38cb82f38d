"""launch_testing: task_node draws the scene, scope_servo.launch.py servos the scope about the portal.

task_node alone (task:=incision, no stack: the scene needs none) publishes /quirobot/scene
(latched MarkerArray): the incision's bone slabs and no-go zone where its task file puts them.
scope_servo_node (a lifecycle node the launch file configures): a TwistStamped stream on
/quirobot/scope/servo before the mode commands nothing; given joint states of the scope docked in
the arthroscopy task's portal (scope_task.py: the shipped task, its dead-man timeout and
joint-state age limit widened for a loaded machine; twists and states stamped now, in world),
`activate` enters the servo mode, the stream moves the joints it
commands (one-point JointTrajectory) with the scope axis through the portal (recomputed here by
FK), the view cone arrives, a stream that stops is held (dead-man); `deactivate` leaves it with
the last command at rest, and a stream after it commands nothing; joint states off the portal
while active are a fault: the node deactivates itself and holds, and `activate` is refused.

Skipped where ROS 2 is absent. Run by CI's ROS tier (`bash .ci/ros-tier -k scene`).
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
from launch_ros.actions import Node
from lifecycle_msgs.msg import State, Transition
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

from quirobot_control.planning.arthroscopy import servo_for
from quirobot_control.planning.tasks import load_task
from quirobot_description.parameters import load_parameters, axes_for
from quirobot_kinematics import KinematicModel, forward_kinematics
from ros_graph import GraphClient
from scope_task import loaded_machine_task

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

TIMEOUT = 60.0  # s (wall): node start-up on a loaded 2-core machine
PARAMS = load_parameters()
SCOPE_TASK_FILE, SCOPE_TASK = loaded_machine_task()  # the shipped task, its time limits widened


@pytest.mark.launch_test
def generate_test_description():
    return LaunchDescription(
        [
            Node(
                package="quirobot", executable="task_node", parameters=[{"task": "incision"}], output="screen"
            ),
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(
                    f"{get_package_share_directory('quirobot')}/launch/scope_servo.launch.py"
                ),
                launch_arguments={"task": str(SCOPE_TASK_FILE)}.items(),
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


def _portal_distance(q, model: KinematicModel) -> float:
    T = forward_kinematics(np.asarray(q, dtype=float), model)
    offset = SCOPE_TASK.portal - T[:3, 3]
    a = T[:3, 2]
    return float(np.linalg.norm(offset - (offset @ a) * a))


class TestScene(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.graph = GraphClient("test_scene_launch")
        cls.node = cls.graph.node

    @classmethod
    def tearDownClass(cls):
        cls.graph.close()
        rclpy.shutdown()

    def spin_until(self, done, timeout: float = TIMEOUT) -> bool:
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.02)
        return done()

    def test_task_node_draws_the_bone_and_the_no_go_zones(self):
        received = []
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(MarkerArray, "/quirobot/scene", received.append, latched)
        self.assertTrue(self.spin_until(lambda: received), "nothing on /quirobot/scene")
        added = [m for m in received[-1].markers if m.action == Marker.ADD]
        task = load_task("incision")
        slabs = [m for m in added if m.ns == "bone"]
        self.assertEqual(len(slabs), len(task.bone.layers))
        # The first slab starts at the entry point, half its thickness down the axis.
        first = np.array([slabs[0].pose.position.x, slabs[0].pose.position.y, slabs[0].pose.position.z])
        expected = task.entry + 0.5 * task.bone.layers[0].thickness * task.direction
        np.testing.assert_allclose(first, expected, atol=1e-9)
        (table,) = [m for m in added if m.ns == "no_go_zones"]
        zone = task.no_go_zones[0]
        self.assertEqual(table.type, Marker.CUBE)
        np.testing.assert_allclose([table.scale.x, table.scale.y, table.scale.z], zone.size)
        self.assertTrue(all(m.header.frame_id == "world" for m in added))

    def lifecycle(self, transition: int) -> bool:
        """Ask scope_servo_node for a lifecycle transition (`ros2 lifecycle set`); its success."""
        return self.graph.lifecycle("/scope_servo_node", transition, TIMEOUT)

    def wait_for_state(self, state: int, timeout: float) -> None:
        """Wait for scope_servo_node's lifecycle state (`ros2 lifecycle get`) to be `state`."""
        self.graph.wait_for_lifecycle_state("/scope_servo_node", state, timeout)

    def test_the_servo_mode_pivots_the_scope_about_the_portal_between_activate_and_deactivate(self):
        model = KinematicModel.from_parameters(PARAMS)
        docked = servo_for(SCOPE_TASK, PARAMS).q
        measured = {"q": docked}
        states = self.node.create_publisher(JointState, "/quirobot/joint_states", 10)
        twists = self.node.create_publisher(TwistStamped, "/quirobot/scope/servo", 10)
        commands, cones = [], []
        self.node.create_subscription(
            JointTrajectory, "/joint_trajectory_controller/joint_trajectory", commands.append, 100
        )
        self.node.create_subscription(MarkerArray, "/quirobot/scope/view_cone", cones.append, 10)

        def publish_states():
            message = JointState(name=list(DRILL_AXES), position=[float(v) for v in measured["q"]] + [0.004])
            message.header.stamp = self.node.get_clock().now().to_msg()
            states.publish(message)

        def send_twist():  # stamped now in world: the node refuses stale or foreign-frame twists
            message = TwistStamped()
            message.header.frame_id = "world"
            message.header.stamp = self.node.get_clock().now().to_msg()
            message.twist.linear.x = 0.01  # 10 mm/s sideways: a pivot about the portal
            twists.publish(message)

        def stream(seconds: float) -> None:
            timer = self.node.create_timer(0.02, send_twist)
            self.spin_until(lambda: False, seconds)
            self.node.destroy_timer(timer)

        timer = self.node.create_timer(0.02, publish_states)  # within the 0.2 s joint-state limit
        # Configured by the launch file (inactive): the view cone follows the measured joints.
        self.assertTrue(self.spin_until(lambda: cones), "no view cone from the measured joints")
        self.wait_for_state(State.PRIMARY_STATE_INACTIVE, 10.0)  # configured
        stream(1.0)  # outside the mode: ignored
        self.assertEqual(commands, [], "a twist outside the servo mode commanded the joints")

        self.assertTrue(self.lifecycle(Transition.TRANSITION_ACTIVATE), "activate refused (docked scope)")
        stream(1.5)
        moving = len(commands)

        def held() -> bool:  # silence: past the dead-man timeout (2 s here) it brakes, then holds
            last = [list(c.points[0].positions) for c in commands[-5:]]
            return len(commands) >= moving + 5 and all(row == last[0] for row in last)

        # The brake takes 25 commands (its rate limits); a loaded machine ticks slower than 100 Hz.
        self.assertTrue(self.spin_until(held, 20.0), "the servo did not hold after the stream stopped")
        self.assertGreater(len(commands), 20, "too few joint commands")
        q = np.array([list(c.points[0].positions) for c in commands])
        self.assertEqual(list(commands[0].joint_names), list(DRILL_AXES[:5]))
        self.assertGreater(
            np.linalg.norm(q[moving - 1, :3] - docked[:3]), 1e-3, "the stream did not move the scope"
        )
        self.assertLess(max(_portal_distance(row, model) for row in q), 1e-6)
        (surface,) = [m for m in cones[-1].markers if m.ns == "view_cone" and m.type == Marker.TRIANGLE_LIST]
        self.assertGreater(len(surface.points), 0)

        # Leave mid-stream: the last command is sent once more at rest, then nothing moves.
        stream(0.5)
        self.assertTrue(self.lifecycle(Transition.TRANSITION_DEACTIVATE))
        self.spin_until(lambda: False, 0.3)
        left = len(commands)
        hold = commands[-1].points[0]
        self.assertEqual(list(hold.velocities), [0.0] * 5, "no hold at rest on leaving")
        self.assertEqual(list(hold.positions), list(commands[-2].points[0].positions))
        self.assertLess(_portal_distance(hold.positions, model), 1e-6)
        stream(1.0)
        self.assertEqual(len(commands), left, "a twist after leaving commanded the joints")

        # A fault: the scope measured 2 mm off the portal while active deactivates the node.
        self.assertTrue(self.lifecycle(Transition.TRANSITION_ACTIVATE))
        measured["q"] = docked + np.array([0.0, 0.002, 0.0, 0.0, 0.0])
        self.wait_for_state(State.PRIMARY_STATE_INACTIVE, 20.0)  # the fault deactivated it
        self.spin_until(lambda: False, 0.3)
        faulted = len(commands)
        self.assertEqual(list(commands[-1].points[0].velocities), [0.0] * 5, "no hold on the fault")
        stream(1.0)
        self.assertEqual(len(commands), faulted, "a twist after the fault commanded the joints")
        self.assertFalse(self.lifecycle(Transition.TRANSITION_ACTIVATE), "activate off the portal")
        self.node.destroy_timer(timer)


@launch_testing.post_shutdown_test()
class TestSceneShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output):
        assert_exit_codes(proc_info, proc_output)
