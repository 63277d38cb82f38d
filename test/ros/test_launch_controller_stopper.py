"""launch_testing: the trajectory controllers stop with the drives (drive_node's controller stopper).

bringup.launch.py hardware:=real (drive_node's simulated drives, its test-only ~/inject_fault).
Over DDS, with the controller manager's list_controllers as the witness:
1. /quirobot/drives/disable deactivates joint_trajectory_controller and drill_feed_controller
   (the joint_state_broadcaster stays active); /quirobot/drives/enable reactivates them;
2. a fault of the feed drive deactivates them (and an arm goal in progress ends unsuccessful);
   they stay inactive after acknowledge_stop and come back with enable;
3. a drilling context (published by the test, as task_node does at a goal's start: latched
   /quirobot/drilling_context) whose task file has a no-go zone around the tool where it stands:
   drive_node's per-cycle fixtures stop the drives naming the zone, and the controllers stop.
CI's ROS tier: `.ci/ros-tier -k controller_stopper`.
"""

from __future__ import annotations

import unittest

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import rclpy  # noqa: E402
from action_msgs.msg import GoalStatus  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from bringup_real import CONTROLLERS, STATES, wait_for_controllers  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from ros_graph import GraphClient  # noqa: E402

from launch import LaunchDescription  # noqa: E402
from quirobot_control.planning.tasks import Kinematics  # noqa: E402
from quirobot_description.parameters import axes_for, load_parameters
from quirobot_kinematics import KinematicModel  # noqa: E402

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

MOVING = ("joint_trajectory_controller", "drill_feed_controller")
ARM = ("gantry_x", "gantry_y", "gantry_z", "wrist_yaw", "wrist_pitch")


@pytest.mark.launch_test
def generate_test_description():
    launch_file = f"{get_package_share_directory('quirobot')}/launch/bringup.launch.py"
    arguments = {
        "hardware": "real",
        "tool": "drill",
        "drive_backend": "simulated",
        "test_fault_injection": "true",
    }
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(launch_file), launch_arguments=arguments.items()
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestControllersStopWithTheDrives(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rclpy.init()
        cls.graph = GraphClient("test_controller_stopper")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.graph.close()
        rclpy.shutdown()

    def trigger(self, name: str) -> str:
        from std_srvs.srv import Trigger

        response = self.graph.call(Trigger, name, Trigger.Request(), timeout=60.0)
        self.assertTrue(response.success, f"{name}: {response.message}")
        return response.message

    def acknowledge_stop(self, timeout: float = 30.0) -> str:
        """/quirobot/drives/acknowledge_stop, asked again while a drive's stop is still in progress
        (its ramp or its brake: the service's own answer says "try again"), for at most `timeout` s
        (wall time: without sim_clock drive_node's plant runs on the wall clock; a stop takes well
        under a second of it); any other refusal fails at once."""
        from std_srvs.srv import Trigger

        name = "/quirobot/drives/acknowledge_stop"
        client = self.graph.node.create_client(Trigger, name)
        answer: list[str] = []
        pending: list = [None]

        def accepted() -> bool:
            future = pending[0]
            if future is None:
                pending[0] = client.call_async(Trigger.Request())
                return False
            if not future.done():
                return False
            response, pending[0] = future.result(), None
            if response.success:
                answer.append(response.message)
                return True
            self.assertIn("still in progress", response.message, f"{name}: {response.message}")
            return False  # ask again

        try:
            self.graph.spin_until(client.service_is_ready, 60.0, f"service {name}")
            self.graph.spin_until(accepted, timeout, f"an accepted {name}")
        finally:
            self.graph.node.destroy_client(client)
        return answer[0]

    def wait_states(self, expected: dict[str, str], what: str) -> None:
        seen: dict[str, str] = {}

        def reached() -> bool:
            seen.update(self.graph.controller_states())
            return all(seen.get(name) == state for name, state in expected.items())

        try:
            self.graph.spin_until(reached, 60.0, what)
        except AssertionError as error:
            raise AssertionError(f"{error}; controllers: {seen}") from None

    def test_1_disable_and_enable(self, proc_output) -> None:
        from sensor_msgs.msg import JointState

        wait_for_controllers(self.graph, proc_output)
        self.graph.next_message(JointState, STATES, timeout=60.0)
        self.trigger("/quirobot/drives/disable")
        inactive = {name: "inactive" for name in MOVING}
        self.wait_states(
            {**inactive, "joint_state_broadcaster": "active"}, "the controllers deactivated on disable"
        )
        self.trigger("/quirobot/drives/enable")
        self.wait_states({name: "active" for name in CONTROLLERS}, "the controllers reactivated on enable")

    def test_2_a_drive_fault_stops_them_until_enable(self, proc_output) -> None:
        from control_msgs.action import FollowJointTrajectory
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectoryPoint

        wait_for_controllers(self.graph, proc_output)
        state = self.graph.next_message(JointState, STATES, timeout=60.0)
        position = dict(zip(state.name, state.position, strict=True))
        # A slow arm goal (20 s, 5 cm along x) in progress when the feed drive faults.
        client = ActionClient(
            self.graph.node, FollowJointTrajectory, "/joint_trajectory_controller/follow_joint_trajectory"
        )
        try:
            self.graph.spin_until(client.server_is_ready, 60.0, "the arm controller's action server")
            goal = FollowJointTrajectory.Goal()
            goal.trajectory.joint_names = list(ARM)
            point = JointTrajectoryPoint()
            point.positions = [position[n] + (0.05 if n == "gantry_x" else 0.0) for n in ARM]
            point.velocities = [0.0] * len(ARM)
            point.time_from_start.sec = 20
            goal.trajectory.points = [point]
            future = client.send_goal_async(goal)
            self.graph.spin_until(future.done, 60.0, "the arm goal's acceptance")
            handle = future.result()
            self.assertTrue(handle.accepted)
            self.trigger("/drive_node/inject_fault")
            self.wait_states(
                {name: "inactive" for name in MOVING}, "the controllers deactivated on a drive fault"
            )
            result = handle.get_result_async()
            self.graph.spin_until(result.done, 60.0, "the arm goal's end")
            self.assertNotEqual(result.result().status, GoalStatus.STATUS_SUCCEEDED)
        finally:
            client.destroy()
        self.acknowledge_stop()
        for _ in range(10):  # still inactive after the acknowledge: nothing is enabled yet
            rclpy.spin_once(self.graph.node, timeout_sec=0.1)
        states = self.graph.controller_states()
        self.assertEqual([states[name] for name in MOVING], ["inactive", "inactive"], states)
        self.trigger("/quirobot/drives/enable")
        self.wait_states({name: "active" for name in CONTROLLERS}, "the controllers reactivated on enable")

    def test_3_a_drilling_contexts_no_go_zone_stops_the_drives(self, proc_output) -> None:
        import numpy as np
        from quirobot.msg import DrillingContext, DrivesState
        from ros_graph import LATCHED
        from sensor_msgs.msg import JointState

        from quirobot_control.axes.virtual_fixtures import NoGoZone
        from quirobot_control.nodes.hole_context_msg import to_message
        from quirobot_control.safety.hole_context import HoleContext

        wait_for_controllers(self.graph, proc_output)
        state = self.graph.next_message(JointState, STATES, timeout=60.0)
        q = np.array([dict(zip(state.name, state.position, strict=True))[n] for n in DRILL_AXES])
        tip = Kinematics(KinematicModel.from_parameters(load_parameters())).tip(q)
        # A goal's hole as task_node sends it (nodes.hole_context_msg): a no-go zone around the tool.
        hole = HoleContext(
            goal_id="test-goal",
            entry=tip,
            direction=np.array([0.0, 0.0, -1.0]),
            depth=0.02,
            feed_rate=0.0015,
            thrust_limit=60.0,
            arm_depth=0.0,
            exit_depth=None,
            zones=(NoGoZone.box("test_zone_around_the_tool", tip, [0.05, 0.05, 0.05]),),
        )
        # The one way drive_node publishes a stop: /quirobot/drives/state's stop_reason.
        stops = self.graph.messages(DrivesState, "/quirobot/drives/state", LATCHED)
        publisher = self.graph.node.create_publisher(DrillingContext, "/quirobot/drilling_context", LATCHED)
        publisher.publish(to_message("test-goal", hole, self.graph.node.get_clock().now().to_msg()))
        self.graph.spin_until(
            lambda: any("test_zone_around_the_tool" in m.stop_reason for m in stops),
            60.0,
            "a stop naming the zone",
        )
        self.wait_states(
            {name: "inactive" for name in MOVING}, "the controllers deactivated on the fixture stop"
        )
