"""colcon takes the repository as one ament_cmake package (package.xml's build_type), so the
ROS-free pip install's setup.py is ignored by colcon and never builds a second, different package.

The colcon build itself needs ament_cmake and the rosidl generators (ROS): it runs in CI's ROS
tier, test/ros/test_package_install.py checks the install there (share files, executables,
interfaces, the data-file locator without the source tree).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.engines

ROOT = Path(__file__).resolve().parents[2]
identification = pytest.importorskip("colcon_core.package_identification")


def _identify(path: Path):
    return identification.identify(identification.get_package_identification_extensions(), path)


def test_colcon_identifies_one_ament_cmake_package():
    descriptor = _identify(ROOT)
    assert descriptor is not None and descriptor.name == "quirobot"
    assert descriptor.type == "ros.ament_cmake"


def test_setup_py_alone_would_be_a_python_package(tmp_path):
    """The check above can fail: without package.xml colcon would build setup.py."""
    names = {
        name for group in identification.get_package_identification_extensions().values() for name in group
    }
    if "python_setup_py" not in names:
        pytest.skip("colcon's setup.py identification is not installed")
    shutil.copy(ROOT / "setup.py", tmp_path / "setup.py")
    descriptor = _identify(tmp_path)
    assert descriptor is not None and descriptor.type == "python"


def test_cmakelists_installs_what_setup_py_installs():
    """The same share/quirobot folders and executables from both builds (read, not built)."""
    cmake = (ROOT / "CMakeLists.txt").read_text()
    setup = (ROOT / "setup.py").read_text()
    for folder in ("urdf", "config", "launch", "rviz"):
        assert f"share/${{PROJECT_NAME}}/{folder}" in cmake, folder
    for script in ("quirobot", "kinematics_node", "drive_node", "task_node"):
        assert f'"{script}=' in cmake, script
        assert f'"{script} = ' in setup, script
    for package in ("quirobot_description", "quirobot_kinematics", "quirobot_control", "quirobot_cli"):
        assert package in cmake, package
    assert "ament_python_install_package(${python_package})" in cmake
