"""One task file, two callers, one outcome (issue 31): `quirobot simulate`'s run (run_task, ideal
plant) and a DrillHole goal carried by the executor (task_node's core) over the drive bridge
(drive_node's core, simulated backend, the same bone in its plant), without DDS
(drill_hole_bridge.BridgePort). Refused by both with the same reason, or completed by both with the
deepest true tip within 10 um, for bone variants: a soft layer behind the far cortex, a second
cortex behind a gap (the fibula), a far cortex too thin to see, a near cortex too hard for the
thrust limit. The shipped tibia is test_simulate_runs_the_executor.py's case, held there to
1e-12 m (a run here costs two incisions, about 36 s of CPU).

Before: the second cortex' goal drilled 1.2 mm past the far cortex and reported success while
simulate stopped at the breakthrough; the soft layer's goal aborted just past the near cortex on
the feed's path tolerance (the drive side armed on the bone's last layer); the hard near cortex
was refused by the goal and accepted by simulate. The variants: test/support/bone_variants.py;
over DDS: test/ros/test_launch_bone_variants.py (the tibia: test/ros/test_launch_drill_hole.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bone_variants import EXPECTED, SAME_DEPTH, VARIANTS, far_cortex_exit, simulate, variant_file

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.drill_hole import DrillGoal, tip_progress
from quirobot_control.planning.tasks import load_task
from quirobot_control.procedures.drill_hole_executor import (
    DrillHoleExecutor,
    DrillRequest,
    ErrorCode,
    ExecutorConfig,
)
from quirobot_control.simulation.bridge_port import BridgePort
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.urdf import robot_description

pytest.importorskip("mujoco")


def drill_hole(path: Path, task, parameters) -> tuple[str, float, str]:
    """(outcome, deepest true tip m, reason) of a DrillHole goal for the same file, from the same
    start pose, over the drive bridge with that bone in the plant."""
    control = control_configuration(parameters)
    bridge = simulated_bridge(
        parameters, control, robot_description("drill", "real"), now=0.0, initial=task.park
    )
    bridge.backend.place_bone(str(path))
    port = BridgePort(bridge)
    config = ExecutorConfig.shipped(parameters, tracking_lag=0.0)  # no transport: no lag to allow for
    goal = DrillGoal(
        task.entry, task.direction, task.depth, task.feed_rate, parameters.drilling.safety.thrust_limit
    )
    with bridge:
        result = DrillHoleExecutor(port, config).run(DrillRequest(goal=goal, task=str(path)))
    if result.error_code in (ErrorCode.REJECTED_LIMIT, ErrorCode.REJECTED_INVALID):
        return "refused", float("nan"), result.message
    deepest = max(tip_progress(tip, task.entry, task.direction)[0] for _, tip in port.tips)
    outcome = "completed" if result.error_code is ErrorCode.SUCCESS else "stopped"
    return outcome, deepest, result.message


@pytest.mark.slow
@pytest.mark.parametrize("name", list(VARIANTS))
def test_simulate_and_a_drill_hole_goal_end_the_same_way(parameters, tmp_path, name):
    path = variant_file(tmp_path, name)
    task = load_task(str(path))
    simulated = simulate(task, parameters)
    goal = drill_hole(path, task, parameters)
    print(f"{name}: simulate {simulated}; goal {goal}")
    assert goal[0] == simulated[0], f"simulate {simulated}, goal {goal}"
    if simulated[0] == "refused":
        assert simulated[2] in goal[2]  # the same reason
    else:
        assert abs(goal[1] - simulated[1]) <= SAME_DEPTH
    far_exit = far_cortex_exit(task)  # the tibia's far cortex
    if simulated[0] == "completed" and task.depth > far_exit:  # through it: stopped within 0.5 mm
        assert goal[1] - far_exit <= parameters.drilling.safety.breakthrough_limit
    assert simulated[0] == EXPECTED[name], simulated
    assert np.isfinite(goal[1]) or EXPECTED[name] == "refused"
