"""What the Gazebo tests share: `ros2 launch quirobot gazebo.launch.py` as a process of its own,
stopped as a user stops it (SIGINT to its process group), and what it left running.

The launch runs in a session of its own (`setsid`), so every process it starts (Gazebo's server,
the bridge, robot_state_publisher, the spawners) carries that session id unless it made one of its
own; `leftovers()` lists those still alive after the stop. Its output goes to a log file (in
QUIROBOT_ARTIFACTS when set), read by the tests for Gazebo's own messages.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from quirobot_control.hardware.controllers import CONTROLLERS
from quirobot_kinematics.rotations import matrix_from_quaternion

#: The three controllers of the drill (config/controllers_gazebo.yaml).
#: Gazebo aborted here before the fix (controller_manager::update, issue 34).
TIME_SOURCE_CRASH = "can't compare times with different time sources"
#: The controller manager's choice of clock, logged by its constructor.
ROS_TRIGGER_CLOCK = "Using ROS clock for triggering controller manager cycles"


def require_gazebo() -> None:
    """Skip without Gazebo (ros_gz_sim, ros_gz_bridge, gz_ros2_control); fail under CI's ROS tier
    (QUIROBOT_ROS_TIER), whose environment must have it."""
    import pytest
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    for package in ("ros_gz_sim", "ros_gz_bridge", "gz_ros2_control"):
        try:
            get_package_prefix(package)
        except PackageNotFoundError:
            if os.environ.get("QUIROBOT_ROS_TIER"):
                pytest.fail(f"the ROS tier has no {package}: install the environment with --gazebo")
            pytest.skip(f"no {package} (Gazebo)")


def _session_processes(sid: int) -> list[str]:
    """`pid command` of the live processes of session `sid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[3]) == sid and fields[0] != "Z":  # session id; zombies have ended
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                found.append(f"{entry.name} {command}")
        except (OSError, ValueError):
            continue  # ended meanwhile
    return found


class GazeboLaunch:
    """`ros2 launch quirobot gazebo.launch.py headless:=true <arguments>` in its own session."""

    def __init__(self, *arguments: str, label: str = "gazebo") -> None:
        ros2 = shutil.which("ros2")
        if ros2 is None:
            raise AssertionError("no ros2 executable")
        folder = Path(os.environ.get("QUIROBOT_ARTIFACTS") or tempfile.mkdtemp(prefix="quirobot-gazebo-"))
        folder.mkdir(parents=True, exist_ok=True)
        self.log_path = folder / f"{label}.log"
        self._log = self.log_path.open("w")
        # gz-transport's own partition: another Gazebo on this machine (same world name) stays apart
        self.partition = f"quirobot_test_{os.getpid()}_{label}"
        self.environment = {**os.environ, "GZ_PARTITION": self.partition}
        self.process = subprocess.Popen(
            [ros2, "launch", "quirobot", "gazebo.launch.py", "headless:=true", *arguments],
            env=self.environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own session and process group (SIGINT reaches them all)
        )
        self.sid = self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_spawners(self, count: int = 1, timeout: float = 120.0) -> None:
        """Until `count` spawners (the launch's one) have ended cleanly (the start-up is over; a
        SIGINT before would interrupt them, exit code -2); AssertionError after `timeout` s of
        wall time."""
        end = time.monotonic() + timeout
        while len(re.findall(r"\[spawner-\d+\]: process has finished cleanly", self.log())) < count:
            if time.monotonic() > end:
                raise AssertionError(f"{count} spawners not ended after {timeout:g} s: {self.log_path}")
            time.sleep(0.2)

    def abnormal_exits(self) -> list[str]:
        """The launch's "process has died" lines whose exit code is neither SIGINT's (-2: the
        process ended on the stop's SIGINT) nor SIGTERM's (-15: launch escalates): a crash
        (Gazebo's abort 134, a segfault -11) or a SIGKILL escalation (-9). Not counted here but in
        `bridge_failures`: ros_gz_bridge's parameter_bridge (the /clock bridge), whose own
        shutdown on SIGINT sometimes hangs past SIGINT and SIGTERM (SIGKILLed) or corrupts its heap
        and aborts ("malloc_consolidate(): unaligned fastbin chunk detected", -6): upstream's,
        seen in about 1 of 5 stops here; it is still ended, so nothing is left running."""
        return [
            line
            for line, code in self._died()
            if code not in ("-2", "-15") and "[parameter_bridge-" not in line
        ]

    def bridge_failures(self) -> list[str]:
        """The /clock bridge's exits other than SIGINT's (reported by the tests, see above)."""
        return [line for line, code in self._died() if "[parameter_bridge-" in line and code != "-2"]

    def _died(self) -> list[tuple[str, str]]:
        """(line, exit code) of each "process has died" line of the launch's log."""
        return re.findall(r"(.*process has died \[pid \d+, exit code (-?\d+).*)", self.log())

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGINT to the launch's process group, as Ctrl-C does; the launch's exit code, or None if
        it had not ended after `timeout` s of wall time (then everything is killed)."""
        if self.process.poll() is None:
            os.killpg(self.sid, signal.SIGINT)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        # Processes of the session may outlive the launch by a moment (their own SIGINT handling).
        end = time.monotonic() + 15.0
        while _session_processes(self.sid) and time.monotonic() < end:
            time.sleep(0.2)
        return code

    def leftovers(self) -> list[str]:
        """The session's processes still alive (after `stop()`: none may be)."""
        return _session_processes(self.sid)

    def kill(self) -> None:
        """Last resort in a test's cleanup: SIGKILL whatever of the session is left."""
        for line in self.leftovers():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


def wait_for_controllers(graph, launch: GazeboLaunch, timeout: float = 300.0) -> dict[str, str]:
    """{controller: state} once all of CONTROLLERS are active, through `graph` (a ros_graph
    GraphClient); AssertionError naming the log once `timeout` s of wall time have passed or the
    launch has ended (Gazebo aborted: the launch stops when its required process dies). The
    controller manager's services appear only once Gazebo has loaded the robot (slow when loaded)."""
    end = time.monotonic() + timeout
    states: dict[str, str] = {}
    while time.monotonic() < end:
        if launch.process.poll() is not None:
            raise AssertionError(f"the launch ended (code {launch.process.returncode}): {launch.log_path}")
        try:
            states = graph.controller_states()
        except AssertionError:  # the controller manager is not up yet
            continue
        if all(states.get(name) == "active" for name in CONTROLLERS):
            return states
        time.sleep(0.5)
    raise AssertionError(f"controllers not active after {timeout:g} s: {states}; {launch.log_path}")


def gazebo_poses(
    launch: GazeboLaunch, topic: str, timeout: float = 60.0
) -> tuple[float, dict[str, np.ndarray]]:
    """One gz.msgs.Pose_V from Gazebo's own transport (`gz topic -e -n 1`, the launch's partition):
    (its simulated stamp in s, {entity name: (4, 4) pose}). On /world/<world>/dynamic_pose/info (the
    SceneBroadcaster's) a link's pose is relative to its model and the model's to the world."""
    text = subprocess.run(
        ["gz", "topic", "-e", "-n", "1", "-t", topic],
        env=launch.environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    ).stdout
    return _stamp(text), {name: pose for name, pose in _poses(text)}


def _number(block: str, field: str) -> float:
    """A protobuf text field of `block` (proto3 leaves zeros out: absent is 0)."""
    found = re.search(rf"\b{field}: (\S+)", block)
    return float(found.group(1)) if found else 0.0


def _stamp(text: str) -> float:
    header = re.search(r"^header \{\n  stamp \{\n(.*?)\n  \}", text, flags=re.DOTALL | re.MULTILINE)
    return _number(header.group(1), "sec") + 1e-9 * _number(header.group(1), "nsec") if header else 0.0


def _poses(text: str):
    for block in re.findall(r"^pose \{\n(.*?)\n\}", text, flags=re.DOTALL | re.MULTILINE):
        name = re.search(r'^  name: "(.*)"', block, flags=re.MULTILINE).group(1)
        position = re.search(r"position \{(.*?)\}", block, flags=re.DOTALL)
        orientation = re.search(r"orientation \{(.*?)\}", block, flags=re.DOTALL)
        pose = np.eye(4)
        if position:
            pose[:3, 3] = [_number(position.group(1), axis) for axis in "xyz"]
        if orientation:
            pose[:3, :3] = matrix_from_quaternion(*(_number(orientation.group(1), axis) for axis in "xyzw"))
        yield name, pose
