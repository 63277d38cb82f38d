"""`ros2 launch --show-args` / `--print` of the installed launch files: choices, no warnings.

No Gazebo here (nor ros_gz_sim, ros_gz_bridge, gz_ros2_control): gazebo.launch.py is checked
the way ROS's launch reads it without running it. `--show-args` lists every argument with its
choices; `--print` builds the launch description and prints its actions. What `--print` cannot
check: the included ros_gz_sim gz_sim.launch.py (FindPackageShare("ros_gz_sim") is printed, not
resolved, so neither its existence nor the gz_args it gets), whether the executables exist, the
values of substitutions (robot_description's xacro command) and conditions (the drill feed's
spawner), and anything at run time (docs/gazebo.md). Every launch file must build without a
warning, in particular no deprecation (Python warnings shown: PYTHONWARNINGS=always).

Skipped where ROS 2 is absent. Run by CI's ROS tier (`bash .ci/ros-tier -k gazebo_print`)
against the colcon-installed package.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import shutil
import signal
import subprocess

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

from quirobot_control.bridge.drive_bridge import DRIVE_BACKENDS  # noqa: E402
from quirobot_description.parameters import load_parameters  # noqa: E402
from quirobot_description.urdf import TOOLS  # noqa: E402
from quirobot_kinematics.service_translation import ORIENTATION_MODES  # noqa: E402

BOOLEAN = ["true", "false"]


def _installed(package: str) -> bool:
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        get_package_prefix(package)
    except PackageNotFoundError:
        return False
    return True


#: launch file -> argument -> its choices (None: free-form) and default
ARGUMENTS = {
    "gazebo.launch.py": {
        "tool": (list(TOOLS), "drill"),
        "world": (None, "empty.sdf"),
        "headless": (BOOLEAN, None),  # server only where there is no display: expected_arguments
    },
    "bringup.launch.py": {
        "hardware": (["mock", "real"], "mock"),
        "tool": (list(TOOLS), "drill"),
        "drive_backend": (list(DRIVE_BACKENDS), "simulated"),
    },
    "display.launch.py": {
        "tool": (list(TOOLS), "drill"),
        # true where joint_state_publisher_gui is installed (not in the test environment)
        "gui": (BOOLEAN, "true" if _installed("joint_state_publisher_gui") else "false"),
        "rviz": (BOOLEAN, "true"),
        "replay": (BOOLEAN, "false"),
    },
    "kinematics.launch.py": {
        "namespace": (None, "quirobot"),
        "orientation_mode": (list(ORIENTATION_MODES), "full"),
    },
}


def _ros2_launch(launch_file: str, *arguments: str, succeed: bool = True) -> subprocess.CompletedProcess:
    """`ros2 launch quirobot <launch_file> <arguments>`, its whole process group ended after."""
    ros2 = shutil.which("ros2")
    if ros2 is None:
        if os.environ.get("QUIROBOT_ROS_TIER"):
            pytest.fail("the ROS tier has no ros2 executable")
        pytest.skip("no ros2 executable")
    command = [ros2, "launch", "quirobot", launch_file, *arguments]
    environment = {**os.environ, "PYTHONWARNINGS": "always"}
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # nothing it started may outlive the test
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if "Package 'quirobot' not found" in stdout + stderr and not os.environ.get("QUIROBOT_ROS_TIER"):
        pytest.skip("quirobot is not installed in this ROS environment (run .ci/ros-tier)")
    if succeed:
        assert result.returncode == 0, stderr
    return result


def _shown_arguments(text: str) -> dict[str, tuple[list[str] | None, str]]:
    """`--show-args` output -> argument -> (choices or None, default)."""
    shown = {}
    for name, body in re.findall(r"^    '(\w+)':\n((?:        .*\n?)+)", text, flags=re.MULTILINE):
        choices = re.search(r"Valid choices are: (\[.*?\])", body)
        default = re.search(r"\(default: '(.*)'\)", body)
        shown[name] = (
            ast.literal_eval(choices.group(1)) if choices else None,
            default.group(1) if default else "",
        )
    return shown


#: Arguments of ros_gz_sim's gz_sim.launch.py (included by gazebo.launch.py, so `--show-args` lists
#: them where ros_gz_sim is installed) whose own description says "Deprecated" (ros_gz jazzy).
UPSTREAM_DEPRECATED = ("ign_args", "ign_version")


def _quiet(result: subprocess.CompletedProcess) -> None:
    stdout = result.stdout
    for name in UPSTREAM_DEPRECATED:
        stdout = re.sub(rf"^    '{name}':\n(?:        .*\n?)+", "", stdout, flags=re.MULTILINE)
    output = stdout + result.stderr
    assert "deprecat" not in output.lower(), output
    assert "Warning" not in result.stderr, result.stderr


@pytest.mark.parametrize("launch_file", ARGUMENTS)
def test_show_args_lists_every_argument_with_its_choices(launch_file):
    result = _ros2_launch(launch_file, "--show-args")
    _quiet(result)
    shown = _shown_arguments(result.stdout)
    # arguments added later are test_package_launch_arguments.py's (choices, or named free-form)
    expected = expected_arguments(launch_file)
    assert {name: shown.get(name) for name in expected} == expected


def expected_arguments(launch_file: str) -> dict:
    """ARGUMENTS[launch_file] with headless' default as the launch sees the environment now (the
    display tests of the same pytest run start Xvfb and set DISPLAY after this module is read)."""
    expected = dict(ARGUMENTS[launch_file])
    if "headless" in expected:
        display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        expected["headless"] = (BOOLEAN, "false" if display else "true")
    return expected


@pytest.mark.parametrize("launch_file", ARGUMENTS)
def test_print_builds_the_launch_description_without_a_warning(launch_file):
    _quiet(_ros2_launch(launch_file, "--print"))


def test_gazebo_print_starts_the_bridge_the_spawn_and_the_spawners():
    printed = _ros2_launch("gazebo.launch.py", "--print").stdout
    assert "IncludeLaunchDescription" in printed  # ros_gz_sim's gz_sim.launch.py, not expanded
    assert "pkg='robot_state_publisher', exec='robot_state_publisher'" in printed
    assert (
        "pkg='ros_gz_bridge', exec='parameter_bridge'), '/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'"
        in printed
    )
    mount_height = load_parameters().structure.mount_height
    assert (
        f"exec='create'), '-topic', '/robot_description', '-name', 'quirobot', '-z', '{mount_height}'"
        in printed
    )
    # The spawner is made once the robot is in the world (an OpaqueFunction on the spawn's exit).
    assert re.search(r"OnProcessExit.*OpaqueFunction", printed, re.DOTALL), printed[-2000:]


@pytest.mark.parametrize("tool", TOOLS)
def test_gazebo_starts_every_controller_of_the_tool_from_one_spawner(tool):
    """gazebo.launch.py's spawner for `tool`, evaluated as launch evaluates it: one process for
    the broadcaster, the arm's and (with the drill) the feed's controllers, in that order."""
    import importlib.util

    from ament_index_python.packages import get_package_share_directory
    from launch.utilities import perform_substitutions

    from launch import LaunchContext

    path = os.path.join(get_package_share_directory("quirobot"), "launch", "gazebo.launch.py")
    spec = importlib.util.spec_from_file_location("gazebo_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    context = LaunchContext()
    context.launch_configurations["tool"] = tool
    (spawner,) = module.controllers_spawner(context)
    arguments = [perform_substitutions(context, part) for part in spawner.cmd[1:]]
    expected = ["joint_state_broadcaster", "joint_trajectory_controller"]
    expected += ["drill_feed_controller"] if tool == "drill" else []
    assert arguments[: arguments.index("--controller-manager")] == expected, arguments


def test_a_bad_choice_is_refused_by_launch():
    """launch itself enforces the choices (before starting anything), naming the valid ones."""
    result = _ros2_launch("gazebo.launch.py", "tool:=laser", succeed=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr  # launch logs to stdout
    assert 'Argument "tool" provided value "laser" is not valid' in output
    assert str(list(TOOLS)) in output
