"""examples/03_drill_hole_client.py over DDS: run as a newcomer runs it, against a DrillHole
action server, it sends the shipped incision's goal (its depth overridden), prints each feedback
and the result, and exits 0 on success.

The server here is a minimal one in the test process (it records the goal, sends two feedback
messages and succeeds), not task_node: drilling the goal through the whole stack is
test_launch_drill_hole.py's (about ten minutes); this test is about the example's client side.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
DrillHole = pytest.importorskip("quirobot.action").DrillHole

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "03_drill_hole_client.py"


@pytest.fixture
def server():
    """A /quirobot/drill_hole server spinning on its own thread: its received goals (a list)."""
    from rclpy.action import ActionServer
    from rclpy.executors import MultiThreadedExecutor

    rclpy.init()
    node = rclpy.create_node("example_client_test_server")
    goals = []

    def execute(handle):
        goals.append(handle.request)
        for depth in (0.0, handle.request.depth):
            feedback = DrillHole.Feedback(phase="feed", depth=depth, thrust=40.0, progress=0.5)
            handle.publish_feedback(feedback)
        time.sleep(0.5)  # the feedback reaches the client before the result does
        handle.succeed()
        return DrillHole.Result(success=True, achieved_depth=handle.request.depth, max_lateral_deviation=1e-6)

    action_server = ActionServer(node, DrillHole, "/quirobot/drill_hole", execute_callback=execute)
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    yield goals
    executor.shutdown()
    action_server.destroy()
    node.destroy_node()
    rclpy.shutdown()


def test_the_example_sends_the_shipped_goal_and_reports_the_result(server):
    from quirobot_control.planning.tasks import load_task

    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--depth", "0.005"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "feed" in result.stdout and "depth   5.000 mm" in result.stdout, result.stdout
    assert "success True" in result.stdout and "achieved depth 5.000 mm" in result.stdout, result.stdout
    (goal,) = server
    task = load_task("incision")
    entry, direction = goal.entry.point, goal.direction.vector
    np.testing.assert_allclose([entry.x, entry.y, entry.z], task.entry)
    np.testing.assert_allclose([direction.x, direction.y, direction.z], task.direction)
    assert (goal.entry.header.frame_id, goal.direction.header.frame_id) == ("world", "world")
    assert (goal.depth, goal.feed_rate, goal.task) == (0.005, task.feed_rate, "incision")
