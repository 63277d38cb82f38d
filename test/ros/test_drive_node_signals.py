"""drive_node always ends on SIGINT and on SIGTERM, in order and within launch's 5 s, over DDS.

`bringup.launch.py hardware:=real` (drive_node's simulated drives on the MuJoCo plant, the
controller manager, the controllers) runs in a session of its own; the test signals drive_node
processes itself (issue 32 item 5: drive_node ignored SIGINT and SIGTERM at the end of a launch in
clean-clone CI and was killed, its drives never stopped by it):

1. the launch's drive_node, SIGINT while a FollowJointTrajectory goal runs (the controller streams
   its commands to drive_node's cycle): it ends, launch reports "finished cleanly", and it logged
   its orderly shutdown (drives stopped, buses released);
2. a drive_node started by the test, SIGTERM while a goal runs;
3. one that gets SIGINT and, 0.1 s later, SIGTERM (launch's escalation, or a terminal's Ctrl-C
   reaching it from the terminal and again from launch): the second signal does not cut the
   shutdown short. Before: it raised inside the cleanup (or killed the node in its finalization);
4. one that gets SIGINT while its drives come up: the start-up step in progress ends, the next is
   not begun, and it shuts down in order. Before: a KeyboardInterrupt out of the start-up (a
   traceback, status -2, nothing closed);
5. the controller manager killed (SIGKILL), then a drive_node with no controller commanding it,
   SIGINT; 6. the same with SIGTERM.

Each must end with status 0 within BOUND (launch escalates to SIGTERM after 5 s, to SIGKILL after
10 s). Real nodes over DDS; skipped where ROS 2 is absent; CI's ROS tier runs it
(`.ci/ros-tier -k signals`). It waits generously for the stack to come up; only the end is bounded.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
import time

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from ament_index_python.packages import get_package_prefix  # noqa: E402
from bringup_real import CONTROLLERS, STATES  # noqa: E402
from ros_graph import GraphClient  # noqa: E402

from quirobot_description.parameters import JOINT_NAMES  # noqa: E402

ARM_CONTROLLER = "joint_trajectory_controller"
#: s from the signal to drive_node's end: launch's sigterm_timeout (it escalates after it).
BOUND = 5.0
SHUT_DOWN = re.compile(r"shut down on (SIGINT|SIGTERM): drives stopped, buses released")
#: Or, interrupted during its start-up, before the step that opens the drives.
SHUT_DOWN_EARLY = re.compile(r"shut down on (SIGINT|SIGTERM)(: drives stopped| before the drives were)")
#: A goal long enough to be running when the signal comes: 1 cm on gantry_x in 20 s.
GOAL_TIME = 20.0


class Process:
    """A drive_node (or the launch) with its output collected by a thread."""

    #: every Process started: `no_orphans` kills the test's own that still run after it
    started: list[Process] = []

    def __init__(self, command: list[str], *, session: bool = False) -> None:
        self.started.append(self)
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=session,
            cwd=tempfile.gettempdir(),
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout: float) -> None:
        end = time.monotonic() + timeout
        while pattern not in self.text:
            ended = self.process.poll()
            assert ended is None, f"ended ({ended}) before {pattern!r}:\n{self.text[-3000:]}"
            assert time.monotonic() < end, f"no {pattern!r} after {timeout:g} s:\n{self.text[-3000:]}"
            time.sleep(0.05)


def children(pid: int) -> dict[int, str]:
    """{pid: command line} of the processes whose parent is `pid`."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            if parent == pid:
                with open(f"/proc/{name}/cmdline") as cmdline:
                    found[int(name)] = cmdline.read().replace("\0", " ")
        except (OSError, ValueError, IndexError):
            continue
    return found


def gone(pid: int) -> bool:
    """The process `pid` has ended (absent, or a zombie its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def drive_node_command() -> list[str]:
    return [os.path.join(get_package_prefix("quirobot"), "lib", "quirobot", "drive_node")]


@pytest.fixture(scope="module")
def stack():
    launch = Process(
        ["ros2", "launch", "quirobot", "bringup.launch.py", "hardware:=real", "tool:=drill"], session=True
    )
    rclpy.init()
    graph = GraphClient("test_drive_node_signals")
    try:
        try:
            graph.wait_for_active_controllers(CONTROLLERS, timeout=300.0)
        except AssertionError as error:
            raise AssertionError(f"{error}; the launch's log ends:\n{launch.text[-5000:]}") from None
        yield launch, graph
    finally:
        graph.close()
        rclpy.shutdown()
        with_group = launch.process.pid
        os.killpg(with_group, signal.SIGINT)
        try:
            launch.process.wait(30.0)
        except subprocess.TimeoutExpired:
            os.killpg(with_group, signal.SIGKILL)
            launch.process.wait()


@pytest.fixture(autouse=True)
def no_orphans():
    """A test that failed before its drive_node ended leaves none running (one left by a failed
    test took half a core for as long as the machine ran, beside the next tests' stacks)."""
    before = len(Process.started)
    yield
    for own in Process.started[before:]:
        if own.process.poll() is None:
            own.process.kill()
            own.process.wait()


def start_goal(graph: GraphClient, launch: Process):
    """A FollowJointTrajectory goal on the arm from its measured pose (GOAL_TIME s long), sent and
    accepted; its result is not awaited. (its action client, the measured start (5,))"""
    from builtin_interfaces.msg import Duration
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient
    from trajectory_msgs.msg import JointTrajectoryPoint

    positions = graph.joint_positions(STATES, timeout=60.0)
    start = np.array([positions[n] for n in JOINT_NAMES])
    client = ActionClient(graph.node, FollowJointTrajectory, f"/{ARM_CONTROLLER}/follow_joint_trajectory")
    graph.spin_until(client.server_is_ready, 60.0, "the trajectory controller's action server")
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = list(JOINT_NAMES)
    point = JointTrajectoryPoint()
    point.positions = [float(q) for q in start + np.array([0.01, 0.0, 0.0, 0.0, 0.0])]
    point.velocities = [0.0] * len(JOINT_NAMES)
    point.time_from_start = Duration(sec=int(GOAL_TIME))
    goal.trajectory.points.append(point)
    sent = client.send_goal_async(goal)
    graph.spin_until(sent.done, 60.0, "the goal's acceptance")
    assert sent.result().accepted, f"the goal was rejected; the launch's log ends:\n{launch.text[-5000:]}"
    return client, start


def moving(graph: GraphClient, start: np.ndarray) -> None:
    """Wait until drive_node's measured gantry_x has left `start` by 0.1 mm: the goal runs."""

    def moved() -> bool:
        positions = graph.joint_positions(STATES, timeout=60.0)
        return abs(positions[JOINT_NAMES[0]] - start[0]) > 1e-4

    graph.spin_until(moved, 60.0, "drive_node following the goal")


def own_drive_node() -> Process:
    """A drive_node of the test's (the robot description from robot_state_publisher's topic),
    its drives up."""
    node = Process(drive_node_command())
    node.wait_for("drives up", timeout=180.0)
    return node


def ends_in_order(
    node: Process, first: signal.Signals, then: signal.Signals | None = None, logged: re.Pattern = SHUT_DOWN
) -> None:
    """`first` to `node` (and `then` 0.1 s later): it ends with status 0 within BOUND, having
    logged its orderly shutdown on `first` (`logged`)."""
    sent = time.monotonic()
    node.process.send_signal(first)
    if then is not None:
        time.sleep(0.1)
        node.process.send_signal(then)
    try:
        node.process.wait(BOUND)
    except subprocess.TimeoutExpired:
        node.process.kill()
        node.process.wait()
        pytest.fail(f"drive_node still running {BOUND:g} s after {first.name}:\n{node.text[-3000:]}")
    took = time.monotonic() - sent
    node.reader.join(5.0)
    assert node.process.returncode == 0, (node.process.returncode, took, node.text[-3000:])
    match = logged.search(node.text)
    assert match and match.group(1) == first.name, node.text[-3000:]


def test_1_sigint_while_a_goal_runs_ends_the_launchs_drive_node(stack):
    launch, graph = stack
    (pid,) = [p for p, command in children(launch.process.pid).items() if "quirobot/drive_node" in command]
    client, start = start_goal(graph, launch)
    moving(graph, start)
    os.kill(pid, signal.SIGINT)
    end = time.monotonic() + BOUND
    while not gone(pid):
        assert time.monotonic() < end, f"drive_node still running {BOUND:g} s after SIGINT"
        time.sleep(0.02)
    launch.wait_for(f"process has finished cleanly [pid {pid}]", timeout=10.0)
    match = SHUT_DOWN.search(launch.text)
    assert match and match.group(1) == "SIGINT", launch.text[-3000:]
    client.destroy()


def test_2_sigterm_while_a_goal_runs(stack):
    launch, graph = stack
    node = own_drive_node()
    # The goal starts where the controller holds: drive_node's plant is elsewhere.
    client, _ = start_goal(graph, launch)
    ends_in_order(node, signal.SIGTERM)
    client.destroy()


def test_3_a_second_signal_does_not_cut_the_shutdown_short(stack):
    ends_in_order(own_drive_node(), signal.SIGINT, signal.SIGTERM)


def test_4_sigint_while_the_drives_come_up(stack):
    node = Process(drive_node_command())
    node.wait_for("opening the simulated drives", timeout=180.0)  # the files, then MuJoCo's model
    ends_in_order(node, signal.SIGINT, logged=SHUT_DOWN_EARLY)
    assert "Traceback" not in node.text


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_5_after_the_controller_manager_is_gone(stack, signum):
    launch, _ = stack
    killed = [p for p, command in children(launch.process.pid).items() if "ros2_control_node" in command]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    end = time.monotonic() + 10.0
    while not all(gone(pid) for pid in killed):
        assert time.monotonic() < end, "the controller manager did not die"
        time.sleep(0.05)
    ends_in_order(own_drive_node(), signum)
