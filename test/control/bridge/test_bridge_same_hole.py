"""The ROS path's closed loop drills `quirobot simulate`'s hole on the realistic plant (issue 17
item 3), without DDS: the DrillHole executor (task_node's core) on the drive bridge (drive_node's
core, `open_bridge(plant="realistic")`) with the simulated backend's realistic plant
(drill_hole_bridge.BridgePort), against `run_task(plant="realistic")` (the core's closed loop of
`quirobot simulate`). The hole of each is measured on its plant's true tip, with simulate's
definitions: the deepest tip depth below the entry, the largest distance from the axis in bone.

Over DDS the ideal plant's hole is compared the same way (test/ros/test_launch_drill_hole.py test_0).
"""

from __future__ import annotations

import numpy as np
from drill_hole_bridge import BridgePort

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.drill_hole import DrillGoal, tip_progress
from quirobot_control.planning.tasks import load_task
from quirobot_control.procedures.drill_hole_executor import (
    DrillHoleExecutor,
    DrillRequest,
    ErrorCode,
    ExecutorConfig,
)
from quirobot_control.simulation.incision import run_task
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.urdf import robot_description

SAME_HOLE = 5e-6  # m, the issue's: depth and lateral deviation


def drill_over_the_bridge(params, plant: str, task) -> tuple[object, np.ndarray]:
    """The shipped incision as task_node drives it (its bone named by the goal), through the drive
    bridge on `plant`: the result and the (N, 2) track (depth, lateral) of the plant's true tip."""
    control = control_configuration(params)
    bridge = simulated_bridge(params, control, robot_description("drill", "real"), now=0.0, plant=plant)
    bridge.backend.place_bone("incision")
    port = BridgePort(bridge)
    # No tracking lag: the harness has no transport (the controllers see each period's state),
    # so the approach is not slowed and the plant time is simulate's; the feed never is.
    config = ExecutorConfig.shipped(params, tracking_lag=0.0)
    goal = DrillGoal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
    with bridge:
        result = DrillHoleExecutor(port, config).run(DrillRequest(goal=goal, task="incision"))
    track = np.array([tip_progress(tip, task.entry, task.direction) for _, tip in port.tips])
    return result, track


def test_the_ros_paths_loop_drills_simulates_hole_on_the_realistic_plant(parameters):
    task = load_task("incision")
    result, track = drill_over_the_bridge(parameters, "realistic", task)
    assert result.error_code is ErrorCode.SUCCESS, result.message
    depth = track[:, 0].max()
    lateral = track[track[:, 0] >= 0.0, 1].max()
    simulated = run_task("incision", parameters, plant="realistic").metrics.incision
    print(
        f"realistic plant: bridge {depth * 1e3:.4f} mm, {lateral * 1e6:.2f} um; "
        f"simulate {simulated.max_depth * 1e3:.4f} mm, {simulated.lateral_deviation * 1e6:.2f} um"
    )
    assert abs(depth - simulated.max_depth) <= SAME_HOLE
    assert abs(lateral - simulated.lateral_deviation) <= SAME_HOLE
