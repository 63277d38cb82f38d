"""launch_testing: one kinematic model, the machine's calibration, on both sides over DDS (issue 33
item 6: drive_node measured the tip with the nominal model while task_node planned with the
calibration, 1.30 mm apart along the axis for in-tolerance errors).

`sim.launch.py calibration:=FILE` with a calibration file written here: every geometric error at
its tolerance band's edge (a plausible machine that read_calibration accepts; the in-process
test's, test_bridge_drilling_context.py): the calibrated and the nominal tip 1.4-1.9 mm apart
along the shipped incision's axis over the goal's poses. One shallow goal (the shipped incision's
entry and axis, 2 mm deep):

- the DrillingContext task_node publishes, and drive_node receives, carries that calibration
  (calibration_names, calibration_values: the file's numbers, every one);
- drive_node's drilling monitor measures the tip's depth on the calibrated kinematics: its
  /diagnostics "quirobot/drilling" (the monitor's latest depth, stamped with the plant time of the
  joint state drive_node published with it) equals the test's calibrated FK of that joint state
  to 1 nm (measured: 2e-16 m), and differs from the nominal FK's by 1.4-1.9 mm; drive_node's log says
  "tip on the calibrated kinematics";
- the robot description (robot_state_publisher's /robot_description) is the calibrated machine's:
  quirobot_description.urdf.robot_description(calibration_file=FILE), not the nominal one.

The goal succeeds (its depth and success measured on the same calibrated model; the simulated
plant stays the nominal machine, so its true tip is not where the calibrated model puts it). A bad
file is refused before anything starts: test_task_node_files.py. CI's ROS tier:
`.ci/ros-tier -k calibration`.
"""

from __future__ import annotations

import dataclasses
import unittest
import xml.etree.ElementTree as ET

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
from quirobot_control.planning.drill_hole import tip_progress  # noqa: E402
from quirobot_control.planning.tasks import Kinematics, load_task  # noqa: E402
from quirobot_description.geometric_errors import GeometricErrors  # noqa: E402
from quirobot_description.machine_identity import simulated_machine  # noqa: E402
from quirobot_description.parameters import axes_for, load_parameters  # noqa: E402
from quirobot_kinematics import KinematicModel  # noqa: E402

DRILL_AXES = axes_for("drill")
#: m, the goal's depth: shallow, the test is about the model the depth is measured on.
DEPTH = 0.002
#: m: drive_node's depth against the test's calibrated FK of the same joint state (the diagnostic
#: carries the depth's repr: only the FK's rounding is left).
SAME_DEPTH = 1e-9
#: m: the nominal FK's depth must be at least this far from drive_node's (the calibration moves the
#: tip 1.4-1.9 mm along the incision's axis over the goal's poses; a tenth of a millimetre is
#: 1e5 times SAME_DEPTH and far below any pose's difference during the goal).
NOMINAL_APART = 1e-4


def machine_errors() -> GeometricErrors:
    """Every error at its tolerance band's edge, two of them negated (the in-process test's machine)."""
    band = load_parameters().geometric.tolerance
    return dataclasses.replace(band, xy_squareness=-band.xy_squareness, tcp_offset_y=-band.tcp_offset_y)


#: The calibration file the launch is given (the nominal simulated machine's drives).
CALIBRATION = write_calibration_file(
    machine_errors(), "calibration campaign test_launch_calibration", simulated_machine(None)
)


@pytest.mark.launch_test
def generate_test_description():
    launch_file = f"{get_package_share_directory('quirobot')}/launch/sim.launch.py"
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(launch_file),
                launch_arguments={"calibration": str(CALIBRATION)}.items(),
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


def _canonical(text: str) -> list[tuple[str, tuple, str]]:
    return [
        (e.tag, tuple(sorted(e.attrib.items())), (e.text or "").strip()) for e in ET.fromstring(text).iter()
    ]


def _stamp(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class TestCalibrationOverDds(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rclpy.init()
        cls.graph = GraphClient("test_launch_calibration")
        params = load_parameters()
        cls.errors = machine_errors()
        cls.calibrated = Kinematics(KinematicModel.from_parameters(params).calibrated(cls.errors))
        cls.nominal = Kinematics(KinematicModel.from_parameters(params))
        cls.task = load_task("incision")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.graph.close()
        rclpy.shutdown()

    def depth(self, kinematics: Kinematics, state) -> float:
        """m, the tip past the incision's entry along its axis, FK of a JointState."""
        q = np.array([dict(zip(state.name, state.position, strict=True))[n] for n in DRILL_AXES])
        return tip_progress(kinematics.tip(q), self.task.entry, self.task.direction)[0]

    def test_the_drive_side_measures_the_tip_with_the_launched_calibration(self, proc_output) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from quirobot.action import DrillHole
        from quirobot.msg import DrillingContext
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        contexts = self.graph.messages(DrillingContext, "/quirobot/drilling_context", LATCHED)
        states = self.graph.messages(JointState, STATES)
        diagnostics = self.graph.messages(DiagnosticArray, "/diagnostics", 100)
        descriptions = self.graph.messages(String, "/robot_description", LATCHED)
        client = ActionClient(self.graph.node, DrillHole, "/quirobot/drill_hole")
        try:
            self.graph.spin_until(client.server_is_ready, 240.0, "the /quirobot/drill_hole server")
            goal = drill_hole_goal(self.task.entry, self.task.direction, DEPTH, self.task.feed_rate, 60.0)
            sent = client.send_goal_async(goal)
            self.graph.spin_until(sent.done, 60.0, "the goal's acceptance")
            self.assertTrue(sent.result().accepted)
            result = sent.result().get_result_async()
            self.graph.spin_until_simulated(result.done, 600.0, "the DrillHole result")
        finally:
            client.destroy()
        response = result.result()
        self.assertEqual(response.status, GoalStatus.STATUS_SUCCEEDED, response.result.message)

        # The hole task_node sent, as drive_node receives it: the file's calibration, every value.
        active = [c for c in contexts if c.active]
        self.assertTrue(active, "no active drilling context")
        context = active[-1]
        self.assertEqual(tuple(context.calibration_names), GeometricErrors.names())
        self.assertEqual(list(context.calibration_values), [float(v) for v in self.errors.vector()])

        # drive_node's depth against the test's FK of the joint state published with it (same stamp).
        by_stamp = {_stamp(s.header.stamp): s for s in states}
        matched = []
        for array in diagnostics:
            for status in array.status:
                values = {kv.key: kv.value for kv in status.values}
                if status.name != "quirobot/drilling" or values.get("goal_id") != context.goal_id:
                    continue
                self.assertEqual(values["kinematics"], "calibrated", status.message)
                state = by_stamp.get(_stamp(array.header.stamp))
                if values["tip_depth"] and state is not None:
                    matched.append((float(values["tip_depth"]), state))
        self.assertTrue(matched, "no quirobot/drilling diagnostic of the goal with its joint state")
        to_calibrated, to_nominal = [], []
        for drive_depth, state in matched:
            calibrated, nominal = self.depth(self.calibrated, state), self.depth(self.nominal, state)
            self.assertLessEqual(abs(drive_depth - calibrated), SAME_DEPTH, (drive_depth, calibrated))
            self.assertGreater(abs(drive_depth - nominal), NOMINAL_APART, (drive_depth, nominal))
            to_calibrated.append(abs(drive_depth - calibrated))
            to_nominal.append(abs(drive_depth - nominal))
        depths = [m[0] for m in matched]
        print(
            f"calibration over DDS: {len(matched)} drive_node depths matched to joint states, "
            f"{min(depths) * 1e3:.3f} to {max(depths) * 1e3:.3f} mm; from the calibrated FK at most "
            f"{max(to_calibrated):.2e} m, from the nominal FK {min(to_nominal) * 1e3:.3f} to "
            f"{max(to_nominal) * 1e3:.3f} mm; result {response.result.achieved_depth * 1e3:.4f} mm"
        )
        self.assertIn("tip on the calibrated kinematics", drive_node_log(proc_output))

        # The robot description follows the calibration (bringup.launch.py's xacro calibration_file).
        from quirobot_description.urdf import robot_description

        self.graph.spin_until(lambda: descriptions, 60.0, "/robot_description")
        published = _canonical(descriptions[-1].data)
        self.assertEqual(
            published, _canonical(robot_description("drill", "real", calibration_file=CALIBRATION))
        )
        self.assertNotEqual(published, _canonical(robot_description("drill", "real")))


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output) -> None:
        assert_exit_codes(proc_info, proc_output)
