"""examples/ runs: each ROS-free script runs to its end and prints what its docstring promises
(in this process with runpy, so the imports are shared; the first one also as a script of its
own from another folder, as a newcomer runs it); the DrillHole client builds the shipped
incision's goal without ROS (its ROS part: test/ros/test_example_client.py)."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run(name: str, capsys) -> str:
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"no {pattern!r} in:\n{text}"
    return float(found.group(1))


def test_the_examples_are_numbered_and_indexed():
    scripts = sorted(path.name for path in EXAMPLES.glob("[0-9][0-9]_*.py"))
    assert scripts == [
        "01_forward_inverse_kinematics.py",
        "02_plan_and_simulate_a_hole.py",
        "03_drill_hole_client.py",
        "04_calibration.py",
    ]
    index = (EXAMPLES / "README.md").read_text()
    for script in scripts:
        assert f"[{script}]({script})" in index, script
        assert (EXAMPLES / script).read_text().startswith('"""'), f"{script} opens with its docstring"


def test_forward_and_inverse_kinematics(capsys):
    out = run("01_forward_inverse_kinematics.py", capsys)
    assert "tool0 at [ 1.   1.  -1.1] m" in out
    assert number(r"position error ([0-9.]+) nm", out) < 1.0
    assert "full pose round trip: True" in out
    assert re.search(r"refused: .*wrist_pitch", out)


def test_an_example_runs_as_a_script_from_anywhere(tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "01_forward_inverse_kinematics.py")],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "full pose round trip: True" in result.stdout


def test_plan_and_simulate_a_hole(capsys):
    out = run("02_plan_and_simulate_a_hole.py", capsys)
    phases = re.findall(r"^  (\w+) +[0-9.]+ s \.\.", out, flags=re.MULTILINE)
    assert phases[:5] == ["start", "approach", "align", "settle", "feed"] and phases[-1] == "end"
    assert number(r"entry-point error +([0-9.]+) um", out) < 100
    assert number(r"lateral deviation +([0-9.]+) um", out) < 100
    assert abs(number(r"deepest point +([0-9.]+) mm", out) - 2.0) < 0.05
    assert "drilling stop: None" in out  # no thrust limit, breakthrough or spindle stop
    met = out.split("precision targets met:", 1)[1]
    assert "True" in met and "False" not in met


def test_calibration(capsys):
    out = run("04_calibration.py", capsys)
    nominal = number(r"nominal model: p95 ([0-9.]+) mm", out)
    calibrated = number(r"calibrated *: p95 ([0-9.]+) mm", out)
    assert calibrated < nominal / 5, out
    assert number(r"by ([0-9.]+) um with the calibrated one", out) < 1.0


def test_the_drill_hole_client_builds_the_shipped_goal_without_ros():
    client = runpy.run_path(str(EXAMPLES / "03_drill_hole_client.py"))  # not __main__: no ROS needed
    assert "rclpy" not in client, "rclpy is imported inside main() only"
    from quirobot_control.planning.tasks import load_task

    task = load_task("incision")
    values = client["goal_values"]()
    np.testing.assert_array_equal(values["entry"], task.entry)
    np.testing.assert_array_equal(values["direction"], task.direction)
    assert (values["depth"], values["feed_rate"]) == (task.depth, task.feed_rate)
    assert client["goal_values"](depth=0.005)["depth"] == 0.005


@pytest.mark.parametrize("name", sorted(path.name for path in EXAMPLES.glob("[0-9][0-9]_*.py")))
def test_each_example_is_short(name):
    lines = (EXAMPLES / name).read_text().splitlines()
    assert len(lines) <= 100, f"{name}: {len(lines)} lines, an example is short"
