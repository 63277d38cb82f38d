"""task_node's file parameters on the installed package: a calibration file it cannot read stops
the node at start-up with one line naming the file (exit status 2), as a bad parameter does; the
robot is never planned for with a model the user did not mean (issue 21: the controller uses the
calibration)."""

from __future__ import annotations

import subprocess

import pytest

pytest.importorskip("rclpy")
ament_index = pytest.importorskip("ament_index_python.packages")


@pytest.fixture(scope="module")
def installed() -> None:
    try:
        ament_index.get_package_prefix("quirobot")
    except ament_index.PackageNotFoundError:
        pytest.skip("quirobot is not installed in the ROS environment (run .ci/ros-tier)")


@pytest.mark.parametrize(
    ("content", "why"),
    [("schema_version: 99\n", "schema_version"), (None, "calibration file")],
    ids=["wrong schema", "missing file"],
)
def test_a_bad_calibration_file_stops_task_node_in_one_line(installed, tmp_path, content, why):
    path = tmp_path / "calibration.yaml"
    if content is not None:
        path.write_text(content)
    result = subprocess.run(
        ["ros2", "run", "quirobot", "task_node", "--ros-args", "-p", f"calibration_file:={path}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = [line for line in result.stderr.splitlines() if line.startswith("task_node: error:")]
    assert len(lines) == 1, result.stderr[-2000:]
    assert str(path) in lines[0] and why in lines[0], lines[0]
