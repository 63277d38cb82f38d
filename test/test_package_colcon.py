"""`colcon build` and `colcon test` work on this machine without ROS (colcon-core + colcon-ros).

Builds into a tmp directory (never the repository's build/ install/ log/) and runs `colcon test`
on one small test file, so the suite does not recurse into itself. About 10 s.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COLCON = shutil.which("colcon")
pytestmark = pytest.mark.skipif(COLCON is None, reason="colcon is not installed (requirements-test.txt)")


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
