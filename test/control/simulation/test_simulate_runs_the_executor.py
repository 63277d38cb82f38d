"""`quirobot simulate --task incision` runs the robot's own path (issue 31 item 3): the DrillHole
executor (task_node's core) over the drive bridge (drive_node's core) on the simulated backend, not
a loop of its own. run_task's hole is the one a DrillHole goal drills over the bridge in-process
(simulation.bridge_port.BridgePort, the same start pose and bone), to the last digit: one path.

Over DDS the same hole is compared against a goal on sim.launch.py (test/ros/test_launch_drill_hole.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.drill_hole import DrillGoal, tip_progress
from quirobot_control.planning.tasks import load_task
from quirobot_control.procedures import drill_hole_executor
from quirobot_control.procedures.drill_hole_executor import (
    DrillHoleExecutor,
    DrillRequest,
    ErrorCode,
    ExecutorConfig,
)
from quirobot_control.simulation.bridge_port import BridgePort
from quirobot_control.simulation.incision import run_task
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.urdf import robot_description

pytest.importorskip("mujoco")


def goal_over_the_bridge(params, task) -> tuple[object, float, float]:
    """A DrillHole goal for the shipped incision from its park pose, its bone in the ideal plant:
    the result, the deepest true tip (m) and its widest distance from the axis in bone (m)."""
    control = control_configuration(params)
    bridge = simulated_bridge(params, control, robot_description("drill", "real"), now=0.0, initial=task.park)
    bridge.backend.place_bone("incision")
    port = BridgePort(bridge)
    config = ExecutorConfig.shipped(params, tracking_lag=0.0)
    goal = DrillGoal(
        task.entry, task.direction, task.depth, task.feed_rate, params.drilling.safety.thrust_limit
    )
    with bridge:
        result = DrillHoleExecutor(port, config).run(DrillRequest(goal=goal, task=str(task.path)))
    track = np.array([tip_progress(tip, task.entry, task.direction) for _, tip in port.tips])
    return result, float(track[:, 0].max()), float(track[track[:, 0] >= 0.0, 1].max())


@pytest.mark.slow
def test_simulate_drills_with_the_drill_hole_executor_over_the_bridge(parameters, monkeypatch):
    runs = []
    original_run = DrillHoleExecutor.run

    def counted_run(self, request):  # the real executor runs; the test only counts its goals
        runs.append(request)
        return original_run(self, request)

    monkeypatch.setattr(drill_hole_executor.DrillHoleExecutor, "run", counted_run)
    result = run_task("incision", parameters, plant="ideal")
    assert len(runs) == 1
    assert result.metrics.run.completed and not result.unsafe, result.metrics.run.stop_reason
    monkeypatch.undo()
    task = load_task("incision")
    goal, deepest, lateral = goal_over_the_bridge(parameters, task)
    assert goal.error_code is ErrorCode.SUCCESS, goal.message
    hole = result.metrics.incision
    print(
        f"simulate {hole.max_depth * 1e3:.6f} mm, {hole.lateral_deviation * 1e6:.3f} um; "
        f"goal {deepest * 1e3:.6f} mm"
    )
    assert hole.max_depth == pytest.approx(deepest, abs=1e-12)
    assert hole.lateral_deviation == pytest.approx(lateral, abs=1e-12)
