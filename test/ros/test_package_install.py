"""The colcon (ament_cmake) install of the package, as the ROS tier built it (.ci/ros-tier).

The build needs ament_cmake and the rosidl generators (ROS), so it is checked here rather than in
the ROS-free suite (test/package/test_package_colcon.py checks there that colcon takes the package as
ament_cmake). What the install must hold: the share/quirobot files with the source tree's bytes,
the executables in lib/quirobot, the generated interfaces, and Python packages whose data-file
locator finds everything in the install, without the source tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
ament_index = pytest.importorskip("ament_index_python.packages")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "support"))  # the shared installed_package helper
from installed_package import run_loaders, system_site_packages  # noqa: E402


@pytest.fixture(scope="module")
def prefix() -> Path:
    try:
        return Path(ament_index.get_package_prefix("quirobot"))
    except ament_index.PackageNotFoundError:
        pytest.skip("quirobot is not installed in the ROS environment (run .ci/ros-tier)")


def source_of(name: str) -> Path:
    """The source-tree file that share/quirobot/<name> is a copy of (CMakeLists.txt's install())."""
    for folder in ("quirobot_description", "quirobot_control", "."):
        path = ROOT / folder / name
        if path.is_file():
            return path
    raise AssertionError(f"share/quirobot/{name} has no source in the repository")


def test_share_files_are_the_source_trees(prefix):
    share = prefix / "share" / "quirobot"
    for relative in (
        "package.xml",
        "urdf/quirobot.urdf.xacro",
        "quirobot.yaml",
        "config/control.yaml",
        "config/controllers.yaml",
        "config/controllers_gazebo.yaml",
        "config/quirobot_drive.eds",
        "config/tasks/incision.yaml",
        "launch/display.launch.py",
        "launch/sim.launch.py",
        "rviz/quirobot.rviz",
        "meshes/wrist_yaw_link.stl",  # package://quirobot/meshes/... (RViz's resource retriever)
    ):
        assert (share / relative).is_file(), relative
    copied = [
        p
        for p in share.rglob("*")
        if p.is_file() and p.relative_to(share).parts[0] in ("config", "urdf", "launch", "rviz", "meshes")
    ]
    assert len(copied) > 10
    for path in copied:
        name = path.relative_to(share).as_posix()
        assert path.read_bytes() == source_of(name).read_bytes(), name
    assert (prefix / "share/ament_index/resource_index/packages/quirobot").is_file()


@pytest.mark.parametrize(
    "name", ["quirobot", "kinematics_node", "drive_node", "task_node", "scope_servo_node"]
)
def test_executables_in_lib_quirobot(prefix, name):
    """Where `ros2 run quirobot NAME` and launch_ros look; the shebang is an existing Python."""
    script = prefix / "lib" / "quirobot" / name
    assert script.is_file() and os.access(script, os.X_OK), script
    interpreter = script.read_text().splitlines()[0].removeprefix("#!")
    assert Path(interpreter).is_file(), interpreter


def test_quirobot_cli_runs_from_the_install(prefix, tmp_path):
    result = subprocess.run(
        [str(prefix / "lib" / "quirobot" / "quirobot"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "simulate" in result.stdout


def test_ros2_run_quirobot_urdf(tmp_path):
    """A colcon user has no `quirobot` on PATH: `ros2 run quirobot quirobot ...` (issue 23)."""
    result = subprocess.run(
        ["ros2", "run", "quirobot", "quirobot", "urdf"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    root = ET.fromstring(result.stdout[result.stdout.index("<robot") :])
    assert root.tag == "robot" and root.find("ros2_control") is not None


def test_interfaces_are_generated():
    from quirobot.action import DrillHole
    from quirobot.msg import OperatingState

    goal = DrillHole.Goal()
    assert {"entry", "direction", "depth", "feed_rate", "max_thrust"} <= set(
        goal.get_fields_and_field_types()
    )
    feedback = DrillHole.Feedback.get_fields_and_field_types()
    assert feedback == {
        "phase": "string",
        "depth": "double",
        "thrust": "double",
        "lateral_error": "double",
        "progress": "float",
    }
    assert set(DrillHole.Result.get_fields_and_field_types()) == {
        "error_code",
        "success",
        "achieved_depth",
        "max_lateral_deviation",
        "bone_model",
        "bit_in_bone",
        "message",
        "stop_code",
    }
    assert {"enabled", "homed", "busy", "fault", "fault_reason", "phase"} <= set(
        OperatingState.get_fields_and_field_types()
    )


def test_installed_loaders_find_their_data_without_the_source_tree(prefix, tmp_path):
    """drive_node's loaders as `source install/setup.bash` runs them, outside the repository,
    the source tree not importable (python -S)."""
    (site_packages,) = prefix.glob("lib/python*/site-packages")
    hidden = ("PYTHONPATH", "AMENT_PREFIX_PATH", "PYTHONHOME")
    environment = {k: v for k, v in os.environ.items() if k not in hidden} | {
        "PYTHONPATH": os.pathsep.join([str(site_packages), *system_site_packages()]),
        "AMENT_PREFIX_PATH": str(prefix),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    report = run_loaders([sys.executable, "-S"], tmp_path, environment)
    install = prefix.resolve()
    for module in report["modules"]:
        assert Path(module).resolve().is_relative_to(install), f"{module} is not the installed copy"
    # 7 data files and the 7 meshes the drill description draws (3 beams, bridge, links 4 and 5,
    # drill), where robot_description(package_uris=False) names them
    assert len(report["files"]) == 14
    for name, path in report["files"].items():
        assert Path(path).resolve().is_relative_to(install), f"{name}: {path} is outside {install}"
        assert Path(path).read_bytes() == source_of(name).read_bytes(), name
    assert "drill_feed" in report["joints"]


def test_installed_xacro_expands_with_its_relative_paths(prefix, tmp_path):
    """As ROS runs it: the xacro executable on share/quirobot/urdf, parameters found beside it."""
    xacro = shutil.which("xacro")
    if xacro is None:
        pytest.skip("xacro executable not on PATH")
    share = prefix / "share" / "quirobot"
    result = subprocess.run(
        [xacro, str(share / "urdf" / "quirobot.urdf.xacro"), "tool:=drill", "hardware:=gazebo"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    root = ET.fromstring(result.stdout)
    assert {e.get("name") for e in root.findall("joint")} >= {"gantry_x", "wrist_pitch", "drill_feed"}
    controllers = Path(root.find("gazebo/plugin/parameters").text)
    assert controllers.resolve() == (share / "config" / "controllers_gazebo.yaml").resolve()
