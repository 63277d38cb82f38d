"""`colcon build` and `colcon test` work on this machine without ROS (colcon-core + colcon-ros).

Builds into a tmp directory (never the repository's build/ install/ log/) and runs `colcon test`
on one small test file, so the suite does not recurse into itself. About 10 s.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from installed_package import assert_installed_copy, run_loaders, system_site_packages

from quirobot_description.data_files import find_data_file

ROOT = Path(__file__).resolve().parents[1]
COLCON = shutil.which("colcon")
pytestmark = [
    pytest.mark.skipif(COLCON is None, reason="colcon is not installed (requirements-test.txt)"),
    pytest.mark.slow,
]


def _colcon(tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    command = [COLCON, "--log-base", str(tmp / "log"), *args]
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=environment)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("colcon")
    bases = ["--build-base", str(tmp / "build"), "--install-base", str(tmp / "install")]
    result = _colcon(tmp, "build", "--base-paths", str(ROOT), *bases)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return tmp


def test_build_installs_the_share_files(installed):
    share = installed / "install" / "quirobot" / "share" / "quirobot"
    for relative in (
        "package.xml",
        "urdf/quirobot.urdf.xacro",
        "config/quirobot.yaml",
        "config/controllers.yaml",
        "config/controllers_gazebo.yaml",
        "launch/display.launch.py",
        "rviz/quirobot.rviz",
    ):
        assert (share / relative).is_file(), relative
    assert (installed / "install/quirobot/share/ament_index/resource_index/packages/quirobot").is_file()
    assert (installed / "install/quirobot/lib/quirobot/quirobot").is_file()  # ros2 run finds it


def test_share_files_are_what_the_locator_finds_in_the_source_tree(installed):
    """setup.py's share/quirobot layout and data_files.py's source-checkout places agree."""
    share = installed / "install" / "quirobot" / "share" / "quirobot"
    # setup.py's data_files; colcon adds its own environment hooks (package.sh, hook/...) beside
    setup_py = ("package.xml", "config", "urdf", "launch", "rviz")
    files = [path for path in share.rglob("*") if path.relative_to(share).parts[0] in setup_py]
    files = [path for path in files if path.is_file()]
    assert len(files) > 10
    for path in files:
        name = path.relative_to(share).as_posix()
        assert path.read_bytes() == find_data_file(name).read_bytes(), name


def test_installed_loaders_find_their_data_without_the_source_tree(installed, tmp_path):
    """drive_node's loaders as `source install/setup.bash` runs them: PYTHONPATH and
    AMENT_PREFIX_PATH of the install, started outside the repository, the source tree not
    importable (python -S: no .pth import hook of the repository's editable install)."""
    prefix = installed / "install" / "quirobot"
    (site_packages,) = prefix.glob("lib/python*/site-packages")
    hidden = ("PYTHONPATH", "AMENT_PREFIX_PATH", "PYTHONHOME")
    environment = {k: v for k, v in os.environ.items() if k not in hidden} | {
        "PYTHONPATH": os.pathsep.join([str(site_packages), *system_site_packages()]),
        "AMENT_PREFIX_PATH": str(prefix),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    report = run_loaders([sys.executable, "-S"], tmp_path, environment)
    assert_installed_copy(report, prefix)


def test_installed_xacro_expands_with_its_relative_paths(installed):
    """As ROS runs it: the xacro executable on share/quirobot/urdf, parameters found beside it."""
    xacro = shutil.which("xacro")
    if xacro is None:
        pytest.skip("xacro executable not on PATH")
    share = installed / "install" / "quirobot" / "share" / "quirobot"
    result = subprocess.run(
        [xacro, str(share / "urdf" / "quirobot.urdf.xacro"), "tool:=drill", "hardware:=gazebo"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=installed,
    )
    assert result.returncode == 0, result.stderr
    root = ET.fromstring(result.stdout)
    assert {e.get("name") for e in root.findall("joint")} >= {"gantry_x", "wrist_pitch", "drill_feed"}
    controllers = Path(root.find("gazebo/plugin/parameters").text)
    assert controllers.resolve() == (share / "config" / "controllers_gazebo.yaml").resolve()


def test_colcon_test_runs_and_passes(installed):
    tmp = installed
    bases = ["--build-base", str(tmp / "build"), "--install-base", str(tmp / "install")]
    result = _colcon(
        tmp,
        "test",
        "--base-paths",
        str(ROOT),
        *bases,
        "--pytest-args",
        "test/test_description_inertia.py",
        "-p",
        "no:cacheprovider",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = _colcon(tmp, "test-result", "--test-result-base", str(tmp / "build"), "--verbose")
    assert summary.returncode == 0, summary.stdout
    counts = re.search(r"Summary: (\d+) tests, (\d+) errors, (\d+) failures", summary.stdout)
    assert counts is not None, summary.stdout
    assert int(counts.group(1)) > 0 and counts.group(2) == counts.group(3) == "0"
