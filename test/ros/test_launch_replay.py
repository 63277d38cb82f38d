"""launch_testing: a `quirobot simulate` MCAP log replays in RViz2 as docs/ros.md says.

The log is stamped in simulated time from 0 s. `display.launch.py replay:=true` puts
robot_state_publisher and RViz2 on the bag's clock (use_sim_time) and starts no joint publisher;
`ros2 bag play LOG --clock` then publishes /clock and the logged /joint_states. rosbag2 is not in
the test environment, so the test plays the log itself: it writes a log with the project's own
recorder (recording.write_mcap), reads it back with mcap_ros2's reader, and publishes /clock and
/joint_states from it as `ros2 bag play --clock` would. RViz2 must then draw the robot at the
logged pose with every status Ok, robot_state_publisher's transforms carry the log's stamps and
positions, and its fixed transforms are stamped on the bag's clock (use_sim_time; RViz2 draws
even without it, since it looks the transforms up at the latest time).

Needs ROS 2 with rviz2, Xvfb, ImageMagick's `import` and tesseract; skipped where absent.
"""

# ruff: noqa: E402, I001  (imports follow the skip; ROS's `launch` is not first-party)
from __future__ import annotations

import tempfile
import threading
import time
import unittest
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")
from rviz_screen import DISPLAY, MIN_PIXELS, RvizView, look_at_rviz, missing_tools, start_xvfb

if missing_tools():
    pytest.skip(f"not installed: {', '.join(missing_tools())}", allow_module_level=True)

import launch_testing.actions
from exit_codes import assert_exit_codes
import rclpy
from ament_index_python.packages import get_package_share_directory
from builtin_interfaces.msg import Time
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable
from launch.launch_description_sources import PythonLaunchDescriptionSource
from mcap_ros2.reader import read_ros2_messages
from rosgraph_msgs.msg import Clock
from ros_graph import LATCHED, GraphClient
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from quirobot_control.reporting.recording import write_mcap
from quirobot_control.simulation.simulation_log import SimulationLog
from quirobot_description.parameters import axes_for
from quirobot_control.planning.trajectory import JointTrajectory

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

DURATION = 3.0  # s of simulated motion in the log
RATE = 100.0  # Hz of the logged joint states
#: Start and end poses (m, m, m, rad, rad, m): inside every joint's range.
START = np.array([0.4, 0.6, 0.3, 0.0, 0.8, 0.0])
END = np.array([0.9, 1.1, 0.4, 0.7, 1.2, 0.02])


def recorded_log(path: Path) -> Path:
    """An MCAP log of a smooth move START -> END written by the project's recorder."""
    times = np.arange(int(DURATION * RATE) + 1) / RATE
    s = 0.5 - 0.5 * np.cos(np.pi * times / DURATION)
    position = START + s[:, None] * (END - START)
    velocity = np.gradient(position, times, axis=0)
    zeros3 = np.zeros((len(times), 3))
    log = SimulationLog(
        names=DRILL_AXES,
        time=times,
        position=position,
        velocity=velocity,
        measured=position,
        reference=position,
        current=np.zeros_like(position),
        effort=np.zeros_like(position),
        tip=zeros3,
        planned_tip=zeros3,
        tool0=zeros3,
        planned_tool0=zeros3,
        thrust=np.zeros(len(times)),
        controller_time=np.zeros(len(times)),
    )
    plan = JointTrajectory(1.0 / RATE, position, velocity, np.zeros_like(position))
    return write_mcap(path, log, plan)


@pytest.mark.launch_test
def generate_test_description():
    display = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(f"{get_package_share_directory('quirobot')}/launch/display.launch.py"),
        launch_arguments={"tool": "drill", "gui": "false", "rviz": "true", "replay": "true"}.items(),
    )
    start_xvfb()
    return LaunchDescription(
        [
            SetEnvironmentVariable("DISPLAY", DISPLAY),
            SetEnvironmentVariable("LIBGL_ALWAYS_SOFTWARE", "1"),
            display,
            launch_testing.actions.ReadyToTest(),
        ]
    )


def drawn(view: RvizView) -> bool:
    """RViz2 shows the replay: every status Ok, the x carriage drawn (at the last pose the ram
    hides the y carriage)."""
    return view.statuses_ok >= 3 and view.pixels["x_carriage"] > MIN_PIXELS


class BagPlayer:
    """Publishes /clock and /joint_states from an MCAP log in real time, as `ros2 bag play
    --clock` does, then holds the last clock and state (a paused player) until stopped."""

    def __init__(self, node, path: Path) -> None:
        self.samples = [
            (m.log_time_ns, m.ros_msg) for m in read_ros2_messages(str(path), topics=["/joint_states"])
        ]
        self.clock = node.create_publisher(Clock, "/clock", 10)
        self.states = node.create_publisher(JointState, "/joint_states", 10)
        self.stopped = threading.Event()
        self.played = threading.Event()  # the whole log published once
        self.thread = threading.Thread(target=self._play, daemon=True)

    def _publish(self, time_ns: int, decoded) -> None:
        stamp = Time(sec=time_ns // 1_000_000_000, nanosec=time_ns % 1_000_000_000)
        self.clock.publish(Clock(clock=stamp))
        message = JointState(name=list(decoded.name), position=list(decoded.position))
        message.velocity = list(decoded.velocity)
        message.header.stamp = stamp
        self.states.publish(message)

    def _play(self) -> None:
        start = time.monotonic()
        for time_ns, decoded in self.samples:
            while time.monotonic() - start < time_ns * 1e-9 and not self.stopped.is_set():
                time.sleep(0.001)
            self._publish(time_ns, decoded)
        self.played.set()
        while not self.stopped.wait(0.1):
            self._publish(*self.samples[-1])


class TestReplay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.graph = GraphClient("test_replay")
        cls.folder = tempfile.TemporaryDirectory()
        cls.player = BagPlayer(cls.graph.node, recorded_log(Path(cls.folder.name) / "run.mcap"))

    @classmethod
    def tearDownClass(cls):
        cls.player.stopped.set()
        cls.folder.cleanup()
        cls.graph.close()
        rclpy.shutdown()

    def test_rviz_shows_the_replayed_run(self):
        self.assertEqual(len(self.player.samples), int(DURATION * RATE) + 1)
        tf = self.graph.messages(TFMessage, "/tf", 100)  # listen from the start: a paused clock
        self.player.thread.start()  # stops robot_state_publisher's throttled /tf
        # Look at RViz in a thread while this one spins (collecting /tf as it comes).
        seen = []
        looking = threading.Thread(target=lambda: seen.append(look_at_rviz("rviz_replay", ready=drawn)))
        looking.start()
        self.graph.spin_until(lambda: not looking.is_alive(), 300.0, "RViz to show the replay")
        view = seen[0]
        where = f"Displays panel (OCR of {view.panel_image}):\n{view.panel}"
        for label in ("Global Status: Ok", "RobotModel", "TF"):
            self.assertIn(label, view.panel, where)
        self.assertGreaterEqual(view.statuses_ok, 3, where)
        for word in ("Error", "Warn"):
            self.assertNotIn(word, view.panel, where)
        x_carriage = view.pixels["x_carriage"]
        self.assertGreater(
            x_carriage, MIN_PIXELS, f"x_carriage not drawn in {view.screenshot}: {x_carriage} px"
        )
        # robot_state_publisher's transforms: at each stamp of the bag's clock, the logged pose.
        self.graph.spin_until(self.player.played.is_set, 60.0, "the whole log to be played")
        self.graph.spin_until(lambda: len(tf) > 0, 30.0, "/tf")
        logged = {time_ns: decoded.position[0] for time_ns, decoded in self.player.samples}
        carriage = [
            (t.header.stamp.sec * 1_000_000_000 + t.header.stamp.nanosec, t.transform.translation.x)
            for m in tf
            for t in m.transforms
            if t.child_frame_id == "x_carriage"
        ]
        self.assertTrue(carriage, "no transform of x_carriage on /tf")
        for stamp, x in carriage:
            self.assertIn(stamp, logged, "tf stamped off the bag's clock")
            self.assertAlmostEqual(x, logged[stamp], delta=1e-12)
        self.assertGreater(
            max(stamp for stamp, _ in carriage), (DURATION - 0.2) * 1e9, "the replay stopped early"
        )
        static = self.graph.messages(TFMessage, "/tf_static", LATCHED)
        self.graph.spin_until(lambda: len(static) > 0, 30.0, "/tf_static")
        static_stamps = [t.header.stamp.sec for m in static for t in m.transforms]
        self.assertLessEqual(max(static_stamps), DURATION, "robot_state_publisher is not on the bag's clock")


@launch_testing.post_shutdown_test()
class TestReplayShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output):
        assert_exit_codes(proc_info, proc_output)
