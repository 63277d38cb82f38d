"""launch_testing: a calibration of another machine is refused over DDS, before anything moves
(issue 33: an in-band calibration of another machine is invisible to everything the robot
measures; in-process, test_success_is_honest.py measured a SUCCESS with the true tip 0.655 mm from
the axis against a 0.1 mm target).

`sim.launch.py machine:=3 calibration:=FILE`: drive_node's simulated drives are machine 3's
(quirobot_description.machine_identity.simulated_machine: their serial numbers), the calibration
file is machine 4's (its identified errors, its drives' serial numbers), as a user who took the
file of the robot next door gives it. One shallow DrillHole goal on the shipped incision:

- task_node plans with the file and sends the hole (msg/DrillingContext with calibration_machine);
- drive_node refuses it, naming the drive and both serial numbers, logs it and says so on
  /quirobot/drives/state (hole_refused_goal_id, hole_refused);
- the goal ends REJECTED_NOT_READY with that reason, and no joint moved (the joint states before
  and after the goal within 10 um: the held pose settles by tenths of a micrometre).

CI's ROS tier: `.ci/ros-tier -k calibration_machine`.
"""

from __future__ import annotations

import unittest

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from action_msgs.msg import GoalStatus  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from bringup_real import STATES, drive_node_log  # noqa: E402
from calibration_file import write_calibration_file  # noqa: E402
from exit_codes import assert_exit_codes  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from ros_graph import LATCHED, GraphClient  # noqa: E402

from launch import LaunchDescription  # noqa: E402
from quirobot_control.nodes.drill_hole_goal import drill_hole_goal  # noqa: E402
from quirobot_control.planning.tasks import load_task  # noqa: E402
from quirobot_control.procedures.drill_hole_types import ErrorCode  # noqa: E402
from quirobot_description.machine_identity import simulated_machine  # noqa: E402
from quirobot_description.parameters import load_parameters  # noqa: E402

#: The simulated machine drive_node runs, and the one the calibration file is of.
MACHINE, CALIBRATED = 3, 4
DEPTH = 0.002  # m: a shallow goal (nothing should move at all)


#: Machine CALIBRATED's calibration file.
CALIBRATION = write_calibration_file(
    load_parameters().geometric.sample(np.random.default_rng(CALIBRATED)),
    f"test machine {CALIBRATED}",
    simulated_machine(CALIBRATED),
)


@pytest.mark.launch_test
def generate_test_description():
    launch_file = f"{get_package_share_directory('quirobot')}/launch/sim.launch.py"
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(launch_file),
                launch_arguments={"calibration": str(CALIBRATION), "machine": str(MACHINE)}.items(),
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestCalibrationOfAnotherMachine(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rclpy.init()
        cls.graph = GraphClient("test_launch_calibration_machine")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.graph.close()
        rclpy.shutdown()

    def test_the_drives_refuse_the_hole_and_the_goal_ends_before_anything_moves(self, proc_output) -> None:
        from quirobot.action import DrillHole
        from quirobot.msg import DrivesState
        from sensor_msgs.msg import JointState

        drives = self.graph.messages(DrivesState, "/quirobot/drives/state", LATCHED)
        states = self.graph.messages(JointState, STATES)
        task = load_task("incision")
        client = ActionClient(self.graph.node, DrillHole, "/quirobot/drill_hole")
        try:
            self.graph.spin_until(client.server_is_ready, 240.0, "the /quirobot/drill_hole server")
            goal = drill_hole_goal(task.entry, task.direction, DEPTH, task.feed_rate, 60.0)
            self.graph.spin_until(lambda: states, 60.0, STATES)
            first = len(states) - 1  # the joint states from the goal's sending on
            sent = client.send_goal_async(goal)
            self.graph.spin_until(sent.done, 60.0, "the goal's acceptance")
            self.assertTrue(sent.result().accepted)
            result = sent.result().get_result_async()
            # The goal first waits for the stack (drives enabled, controllers active), then plans.
            self.graph.spin_until_simulated(result.done, 600.0, "the DrillHole result")
        finally:
            client.destroy()
        response = result.result()
        message = response.result.message
        print(f"calibration of machine {CALIBRATED} on machine {MACHINE}'s drives: {message}")
        self.assertEqual(response.status, GoalStatus.STATUS_ABORTED, message)
        self.assertEqual(response.result.error_code, ErrorCode.REJECTED_NOT_READY, message)
        own, other = dict(simulated_machine(MACHINE).serials), dict(simulated_machine(CALIBRATED).serials)
        self.assertIn(
            f"its calibration is of another machine: drive gantry_x has serial number "
            f"0x{own['gantry_x']:08X}, the calibrated machine's 0x{other['gantry_x']:08X}",
            message,
        )
        refused = [state for state in drives if state.hole_refused_goal_id]
        self.assertTrue(refused, "no /quirobot/drives/state with the hole refused")
        self.assertIn("another machine", refused[-1].hole_refused)
        self.assertEqual(drives[-1].hole_goal_id, "", "a hole is in force after its refusal")
        self.assertIn("drilling context refused", drive_node_log(proc_output))
        # Nothing moved: the joint states from the goal's sending to a simulated second after its end.
        ended = _seconds(states[-1].header.stamp)
        self.graph.spin_until(lambda: _seconds(states[-1].header.stamp) > ended + 1.0, 120.0, "1 s more")
        positions = np.array([state.position for state in states[first:]])
        moved = float(np.max(np.abs(positions - positions[0])))
        print(f"{len(positions)} joint states from the goal's sending on: largest change {moved:.2e}")
        # The held pose settles by tenths of a micrometre; the approach would move millimetres.
        self.assertLess(moved, 1e-5, f"a joint moved {moved} (m or rad) around the refused goal")


def _seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output) -> None:
        assert_exit_codes(proc_info, proc_output)
