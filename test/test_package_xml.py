"""package.xml: valid format 3 for catkin_pkg, ament_python, and depends on what the launch files use."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

catkin_package = pytest.importorskip("catkin_pkg.package")

ROOT = Path(__file__).resolve().parents[1]

# ros2-conventions.md, "Launch and package layout" and "ros2_control"
REQUIRED_EXEC = {
    "rclpy",
    "robot_state_publisher",
    "joint_state_publisher_gui",
    "rviz2",
    "xacro",
    "controller_manager",
    "hardware_interface",  # mock_components/GenericSystem
    "joint_state_broadcaster",
    "joint_trajectory_controller",
    "topic_based_ros2_control",
    "gz_ros2_control",
    "ros_gz_sim",
    "ros_gz_bridge",
    "moveit_msgs",
    "sensor_msgs",
    "geometry_msgs",
    "std_msgs",
    "launch",
    "launch_ros",
    "python3-numpy",
    "python3-yaml",
}
REQUIRED_TEST = {"launch_testing", "launch_testing_ros", "python3-pytest"}


@pytest.fixture(scope="module")
def package():
    package = catkin_package.parse_package(str(ROOT / "package.xml"))
    package.validate()  # raises InvalidPackage on a schema or content problem
    return package


def test_format_3_ament_python(package):
    assert package.package_format == 3
    assert package.name == "quirobot"
    assert package.get_build_type() == "ament_python"
    assert package.licenses and package.maintainers and package.description.strip()


def test_version_matches_setup_py(package):
    setup = (ROOT / "setup.py").read_text()
    assert re.search(r'version="([^"]+)"', setup).group(1) == package.version


def test_gazebo_model_path_export(package):
    exports = {export.tagname: export for export in package.exports}
    assert exports["gazebo_ros"].attributes["gazebo_model_path"] == "${prefix}/../"


def test_exec_and_test_depends(package):
    exec_depends = {d.name for d in package.exec_depends}
    test_depends = {d.name for d in package.test_depends}
    assert exec_depends >= REQUIRED_EXEC, REQUIRED_EXEC - exec_depends
    assert test_depends >= REQUIRED_TEST, REQUIRED_TEST - test_depends
    assert len(exec_depends) == len(package.exec_depends), "an exec_depend is listed twice"


def _launch_packages(path: Path) -> set[str]:
    """Package names a launch file refers to: Node(package=...), FindPackageShare("...")."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for keyword in node.keywords:
            if keyword.arg == "package" and isinstance(keyword.value, ast.Constant):
                names.add(keyword.value.value)
        finders = ("FindPackageShare", "FindPackagePrefix", "get_package_share_directory")
        if callee in finders and node.args and isinstance(node.args[0], ast.Constant):
            names.add(node.args[0].value)
    return names


@pytest.mark.parametrize("path", sorted((ROOT / "launch").glob("*.py")), ids=lambda p: p.name)
def test_launch_files_only_use_declared_packages(package, path):
    exec_depends = {d.name for d in package.exec_depends} | {package.name}
    missing = _launch_packages(path) - exec_depends
    assert not missing, f"{path.name} uses {sorted(missing)}: add <exec_depend> to package.xml"
