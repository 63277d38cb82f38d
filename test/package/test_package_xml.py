"""package.xml: valid format 3 for catkin_pkg, ament_cmake, and depends on what the package uses.

Every third-party module the installed code imports (quirobot_* and launch/, scanned with ast)
maps to a declared dependency: a rosdep key of rosdistro's rosdep/python.yaml, a Jazzy ROS
package of the same name as the module, or, where neither exists, a requirements.txt line named
in package.xml's comment (docs/dependencies.md says how each key was checked).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engines

catkin_package = pytest.importorskip("catkin_pkg.package")

ROOT = Path(__file__).resolve().parents[2]

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
    "joint_state_topic_hardware_interface",  # hardware:=real (JointStateTopicSystem)
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
#: Python module -> the rosdep key that installs it (checked in rosdistro's rosdep/python.yaml and
#: jazzy/distribution.yaml). Modules of ROS packages named like the package are not listed.
ROSDEP_KEYS = {
    "numpy": "python3-numpy",
    "yaml": "python3-yaml",
    "scipy": "python3-scipy",
    "matplotlib": "python3-matplotlib",
    "mpl_toolkits": "python3-matplotlib",
    "tqdm": "python3-tqdm",
    "can": "python3-can",
    "canopen": "canopen-pip",
    "pinocchio": "pinocchio",
}
#: Python module -> its requirements.txt name, for modules no rosdep key installs.
PIP_ONLY = {
    "mujoco": "mujoco",
    "ruckig": "ruckig",
    "mcap_ros2": "mcap-ros2-support",
    "mcap": "mcap",
    "distributed": "distributed",
    "dask": "dask",
}
PACKAGE_SOURCES = [
    *sorted(path for package in ROOT.glob("quirobot_*") for path in package.rglob("*.py")),
    *sorted((ROOT / "launch").glob("*.py")),
]


@pytest.fixture(scope="module")
def package():
    package = catkin_package.parse_package(str(ROOT / "package.xml"))
    package.validate()  # raises InvalidPackage on a schema or content problem
    return package


def test_format_3_ament_cmake_with_interfaces(package):
    assert package.package_format == 3
    assert package.name == "quirobot"
    assert package.get_build_type() == "ament_cmake"
    buildtools = {d.name for d in package.buildtool_depends}
    assert buildtools >= {"ament_cmake", "ament_cmake_python", "rosidl_default_generators"}
    assert "rosidl_interface_packages" in {group.name for group in package.member_of_groups}
    assert "rosidl_default_runtime" in {d.name for d in package.exec_depends}
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


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> files importing it, over PACKAGE_SOURCES (nested imports included)."""
    imports: dict[str, set[str]] = {}
    for path in PACKAGE_SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for top in {name.split(".")[0] for name in names}:
                if top not in sys.stdlib_module_names and not top.startswith("quirobot"):
                    imports.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return imports


def _requirements() -> set[str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    names = (re.match(r"[A-Za-z0-9_.-]+", line.strip()) for line in lines if not line.startswith("#"))
    return {name.group(0).lower() for name in names if name}


def test_every_imported_module_has_a_declared_dependency(package):
    exec_depends = {d.name for d in package.exec_depends}
    imports = _third_party_imports()
    assert {"numpy", "rclpy", "mujoco", "canopen"} <= set(imports)  # the scan sees the package
    requirements = _requirements()
    comment = re.search(r"<!-- No rosdep key.*?-->", (ROOT / "package.xml").read_text(), re.DOTALL)
    missing = []
    for module, files in sorted(imports.items()):
        if module in PIP_ONLY:
            requirement = PIP_ONLY[module]
            declared = requirement in requirements and comment and requirement in comment.group(0)
            need = f"{requirement} in requirements.txt and in package.xml's no-rosdep-key comment"
        else:
            key = ROSDEP_KEYS.get(module, module)
            declared, need = key in exec_depends, f"<exec_depend>{key}</exec_depend>"
        if not declared:
            missing.append(f"{module} (imported by {', '.join(sorted(files))}): {need}")
    assert not missing, "undeclared dependencies:\n" + "\n".join(missing)


def test_pip_only_modules_have_no_exec_depend(package):
    """A pip-only module is not also declared under a made-up rosdep key."""
    exec_depends = {d.name for d in package.exec_depends}
    assert not exec_depends & {*PIP_ONLY, *PIP_ONLY.values(), "python3-mujoco", "python3-ruckig"}
