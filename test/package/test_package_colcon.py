"""colcon takes the repository as one ament_cmake package (package.xml's build_type), so the
ROS-free pip install's setup.py is ignored by colcon and never builds a second, different package.

The colcon build itself needs ament_cmake and the rosidl generators (ROS): it runs in CI's ROS
tier, test/ros/test_package_install.py checks the install there (share files, executables,
interfaces, the data-file locator without the source tree).
"""

from __future__ import annotations

import json
import shutil
import subprocess
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
    _copy_sources(tmp_path)
    descriptor = _identify(tmp_path)
    assert descriptor is not None and descriptor.type == "python"


def _cmake_install(root: Path) -> dict[str, object]:
    """What CMakeLists.txt installs: cmake/install_manifest.cmake run as a script on `root`."""
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not installed")
    result = subprocess.run(
        [cmake, f"-DROOT={root}", "-P", str(root / "cmake/install_manifest.cmake")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = [line.split(" ", 1) for line in result.stdout.splitlines()]
    return {
        "packages": {value for kind, value in lines if kind == "package"},
        "executables": dict(value.split("=", 1) for kind, value in lines if kind == "executable"),
        "share": {
            (f"share/quirobot/{folder}", path)
            for kind, value in lines
            if kind == "share"
            for folder, path in [value.split("=", 1)]
        },
        "c_extensions": dict(value.split("=", 1) for kind, value in lines if kind == "extension"),
        "c_flags": [[value for kind, value in lines if kind == "flag"]],  # one set for all (setup's)
    }


def _setup_install(root: Path, monkeypatch) -> dict[str, object]:
    """What setup.py installs: its Distribution (run up to setup()'s arguments, nothing built)."""
    from distutils.core import run_setup  # setuptools' distutils

    monkeypatch.chdir(root)
    distribution = run_setup(str(root / "setup.py"), stop_after="init")
    scripts = [entry.split(" = ") for entry in distribution.entry_points["console_scripts"]]
    # pip only: colcon's ament_package() installs package.xml and the ament index marker.
    own = {
        ("share/ament_index/resource_index/packages", "resource/quirobot"),
        ("share/quirobot", "package.xml"),
    }
    return {
        "packages": {name for name in distribution.packages if "." not in name},
        "executables": dict(scripts),
        "share": {(folder, path) for folder, paths in distribution.data_files for path in paths} - own,
        "c_extensions": {
            extension.name: "".join(extension.sources) for extension in distribution.ext_modules
        },
        # One set of flags for every extension (a set of one), as CMakeLists.txt gives them.
        "c_flags": [list(flags) for flags in {tuple(e.extra_compile_args) for e in distribution.ext_modules}],
    }


def test_cmakelists_installs_what_setup_py_installs(monkeypatch):
    """The same Python packages, executables and share/quirobot files from both builds, as each
    reads install_manifest.json; and each of them there (the files are the source tree's)."""
    cmake, setup = _cmake_install(ROOT), _setup_install(ROOT, monkeypatch)
    assert cmake == setup
    assert cmake["c_extensions"] == {
        "quirobot_control.axes._fixture_kernel": "quirobot_control/axes/fixture_kernel.c",
        "quirobot_control.drive_simulators._drive_kernel": "quirobot_control/drive_simulators/drive_kernel.c",
        "quirobot_control.hardware._feedforward_kernel": "quirobot_control/hardware/feedforward_kernel.c",
        "quirobot_control.models._gearbox_kernel": "quirobot_control/models/gearbox_kernel.c",
        "quirobot_control.safety._limiter_kernel": "quirobot_control/safety/limiter_kernel.c",
        "quirobot_control.simulation._physics_kernel": "quirobot_control/simulation/physics_kernel.c",
    }
    assert "-ffp-contract=off" in cmake["c_flags"][0]  # the C rounds as Python does
    assert cmake["packages"] == {
        "quirobot_description",
        "quirobot_kinematics",
        "quirobot_control",
        "quirobot_cli",
    }
    assert set(cmake["executables"]) == {
        "quirobot",
        "kinematics_node",
        "drive_node",
        "task_node",
        "scope_servo_node",
        "gazebo_drives_node",
    }
    folders = {folder for folder, _ in cmake["share"]}
    assert folders == {
        f"share/quirobot/{f}" for f in (".", "urdf", "config", "config/tasks", "launch", "rviz", "meshes")
    }
    # every visual mesh where package://quirobot/meshes/NAME.stl finds it
    for path in (ROOT / "quirobot_description" / "meshes").glob("*.stl"):
        assert ("share/quirobot/meshes", path.relative_to(ROOT).as_posix()) in cmake["share"]
    assert ("share/quirobot/urdf", "quirobot_description/urdf/quirobot.urdf.xacro") in cmake["share"]
    assert ("share/quirobot/config", "config/quirobot_drive.eds") in cmake["share"]
    assert ("share/quirobot/.", "quirobot_description/quirobot.yaml") in cmake["share"]
    # Every launch file and shipped task is installed (a pattern that missed some would fail here).
    for pattern, folder in (("launch/*.launch.py", "launch"), ("config/tasks/*.yaml", "config/tasks")):
        for path in ROOT.glob(pattern):
            assert (f"share/quirobot/{folder}", path.relative_to(ROOT).as_posix()) in cmake["share"]


def test_cmakelists_has_no_install_list_of_its_own():
    """CMakeLists.txt installs only what the manifest reader gives (no second list to drift)."""
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert 'quirobot_install_manifest("${CMAKE_CURRENT_SOURCE_DIR}")' in cmake
    assert "install(DIRECTORY" not in cmake
    assert "=quirobot_" not in cmake  # no executable spelled out
    for loop in ("${QUIROBOT_PYTHON_PACKAGES}", "${QUIROBOT_EXECUTABLES}", "${QUIROBOT_SHARE_FILES}"):
        assert f"foreach(entry {loop})" in cmake or f"foreach(python_package {loop})" in cmake, loop


def test_both_builds_follow_an_edited_manifest(tmp_path, monkeypatch):
    """The comparison above can fail only if both read the manifest: an entry added to it (an
    executable, a share folder) appears in what each build installs, a removed one in neither."""
    _copy_sources(tmp_path)
    shutil.copy2(ROOT / "README.md", tmp_path / "README.md")
    manifest = json.loads((tmp_path / "install_manifest.json").read_text())
    manifest["executables"]["extra_node"] = "quirobot_cli.cli:main"
    del manifest["executables"]["task_node"]
    manifest["share"]["doc"] = ["README.md"]
    manifest["c_extensions"]["quirobot_control._extra"] = "quirobot_control/extra.c"
    manifest["c_flags"].append("-O3")
    (tmp_path / "install_manifest.json").write_text(json.dumps(manifest))
    cmake, setup = _cmake_install(tmp_path), _setup_install(tmp_path, monkeypatch)
    assert cmake == setup
    assert "extra_node" in cmake["executables"] and "task_node" not in cmake["executables"]
    assert ("share/quirobot/doc", "README.md") in cmake["share"]
    assert "quirobot_control._extra" in cmake["c_extensions"] and cmake["c_flags"][0][-1] == "-O3"


def _copy_sources(destination: Path) -> None:
    """setup.py, the manifest, its CMake reader and the folders the manifest names, copied."""
    for entry in ("setup.py", "install_manifest.json", "cmake", *MANIFEST_SOURCES):
        if (ROOT / entry).is_dir():
            shutil.copytree(ROOT / entry, destination / entry, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / entry, destination / entry)


#: The Python packages and the folders install_manifest.json's patterns are found in.
MANIFEST_SOURCES = (
    "quirobot_description",
    "quirobot_kinematics",
    "quirobot_control",
    "quirobot_cli",
    "config",
    "launch",
    "rviz",
)
