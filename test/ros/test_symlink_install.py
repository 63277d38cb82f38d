"""`colcon build --symlink-install` (what most ROS users type), then `ros2 launch` from it.

With --symlink-install, ament_cmake links lib/quirobot/NAME to the wrapper script CMakeLists.txt
writes in the build folder instead of installing a copy with install(PROGRAMS)'s permissions, so
that file itself must be executable (issue 19 item 13: it was not, and `ros2 launch` found no
executable). This module builds the package that way into a temporary workspace (about 40 s
idle, a few minutes on a loaded machine) and launches kinematics.launch.py from it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("colcon_core")

import rclpy  # noqa: E402

from quirobot_description.parameters import JOINT_NAMES  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXECUTABLES = ("quirobot", "kinematics_node", "drive_node", "task_node")
NAMESPACE = "symlink_install"
SUCCESS = 1  # moveit_msgs/msg/MoveItErrorCodes


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("symlink_ws")
    build = subprocess.run(
        ["colcon", "--log-base", str(ws / "log"), "build", "--symlink-install", "--paths", str(ROOT)]
        + ["--build-base", str(ws / "build"), "--install-base", str(ws / "install")],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return ws


@pytest.mark.parametrize("name", EXECUTABLES)
def test_symlinked_executables_are_executable(workspace, name):
    script = workspace / "install" / "quirobot" / "lib" / "quirobot" / name
    assert script.is_symlink(), f"{script} is not a symlink: not a --symlink-install"
    assert os.access(script, os.X_OK), f"{script} -> {script.resolve()} is not executable"


def test_ros2_launch_runs_a_node_from_the_symlink_install(workspace):
    """kinematics.launch.py's kinematics_node from this install answers compute_fk over DDS."""
    from moveit_msgs.srv import GetPositionFK

    setup = workspace / "install" / "local_setup.bash"
    launch = subprocess.Popen(
        [
            "bash",
            "-c",
            f"trap - INT; set +u; . {setup}; "
            f"exec ros2 launch quirobot kinematics.launch.py namespace:={NAMESPACE}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    rclpy.init()
    node = rclpy.create_node("test_symlink_install_client")
    try:
        client = node.create_client(GetPositionFK, f"/{NAMESPACE}/compute_fk")
        available = client.wait_for_service(timeout_sec=120.0)
        if not available:
            os.killpg(launch.pid, signal.SIGINT)
            output = launch.communicate(timeout=60)[0]
            pytest.fail(f"/{NAMESPACE}/compute_fk never appeared; ros2 launch said:\n{output[-3000:]}")
        request = GetPositionFK.Request()
        request.header.frame_id = "world"
        request.fk_link_names = ["tool0"]
        request.robot_state.joint_state.name = list(JOINT_NAMES)
        request.robot_state.joint_state.position = [0.7, 1.3, 0.9, 2.1, 0.4]
        future = client.call_async(request)
        rclpy.spin_until_future_complete(node, future, timeout_sec=30.0)
        assert future.done(), "compute_fk did not answer"
        assert future.result().error_code.val == SUCCESS
        # the node that answered runs the symlinked script
        assert (
            (workspace / "install/quirobot/lib/quirobot/kinematics_node")
            .resolve()
            .is_relative_to(workspace / "build")
        )
    finally:
        node.destroy_node()
        rclpy.shutdown()
        if launch.poll() is None:
            os.killpg(launch.pid, signal.SIGINT)
            try:
                launch.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(launch.pid, signal.SIGKILL)
                launch.communicate()
