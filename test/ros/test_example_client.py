"""examples/03_drill_hole_client.py over DDS: run as a newcomer runs it, against a DrillHole
action server, it sends the shipped incision's goal (its depth overridden), prints each feedback
and the result, and exits 0 on success.

The server here is a minimal one in the test process (it records the goal, sends two feedback
messages and succeeds; a goal of CANCEL_DEPTH waits for its cancel), not task_node: drilling
the goal through the whole stack is test_launch_drill_hole.py's (about ten minutes); these tests
are about the example's client side, Ctrl-C included.
"""

from __future__ import annotations

import os
import signal
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
#: m: the depth of a goal the test server runs until it is cancelled
CANCEL_DEPTH = 0.007


@pytest.fixture
def server():
    """A /quirobot/drill_hole server spinning on its own thread: its received goals (a list)."""
    from rclpy.action import ActionServer, CancelResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    rclpy.init()
    node = rclpy.create_node("example_client_test_server")
    goals = []

    def execute(handle):
        goals.append(handle.request)
        if handle.request.depth == CANCEL_DEPTH:  # feedback until the client cancels (60 s at most)
            end = time.monotonic() + 60.0
            while not handle.is_cancel_requested and time.monotonic() < end:
                feedback = DrillHole.Feedback(phase="feed", depth=0.002, thrust=40.0, progress=0.3)
                handle.publish_feedback(feedback)
                time.sleep(0.1)
            if not handle.is_cancel_requested:
                handle.abort()
                return DrillHole.Result(success=False, message="no cancel came")
            handle.canceled()
            return DrillHole.Result(
                success=False,
                error_code=DrillHole.Result.CANCELED_RETRACTED,
                achieved_depth=0.002,
                message="canceled; the bit retracted",
            )
        for depth in (0.0, handle.request.depth):
            feedback = DrillHole.Feedback(phase="feed", depth=depth, thrust=40.0, progress=0.5)
            handle.publish_feedback(feedback)
        time.sleep(0.5)  # the feedback reaches the client before the result does
        handle.succeed()
        return DrillHole.Result(success=True, achieved_depth=handle.request.depth, max_lateral_deviation=1e-6)

    action_server = ActionServer(
        node,
        DrillHole,
        "/quirobot/drill_hole",
        execute_callback=execute,
        cancel_callback=lambda handle: CancelResponse.ACCEPT,
        callback_group=ReentrantCallbackGroup(),
    )
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


def test_ctrl_c_cancels_the_goal_and_the_example_reports_how_it_ended(server):
    """What a user does: Ctrl-C while the goal runs. The example cancels the goal, waits for its
    result and prints it (exit 1: no hole), instead of dying with a traceback and leaving the goal
    to run."""
    example = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--depth", str(CANCEL_DEPTH)],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        for line in example.stdout:  # the first feedback line: the goal runs
            lines.append(line)
            if line.startswith("feed"):
                break
        assert lines and lines[-1].startswith("feed"), "".join(lines)
        example.send_signal(signal.SIGINT)
        out, err = example.communicate(timeout=60)
    finally:
        example.kill()
    assert example.returncode == 1, "".join(lines) + out + err
    assert "Ctrl-C: canceling the goal" in out, out + err
    assert "success False, error code 6: canceled; the bit retracted" in out, out + err
    assert "Traceback" not in err, err
    assert len(server) == 1 and server[0].depth == CANCEL_DEPTH
