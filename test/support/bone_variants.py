"""Shared by the one-path tests (issue 31): the shipped incision task with another bone, written out
as a user writes a task file, and `quirobot simulate --plant ideal`'s outcome for a task.

In-process (test/control/bridge/test_one_path_same_outcome.py: the executor over the drive bridge)
and over DDS (test/ros/test_launch_bone_variants.py: a DrillHole goal on sim.launch.py with the
variant's bone in drive_node's plant) the same files are held to the same outcome as simulate.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from quirobot_description.data_files import find_data_file

#: The variants' layers after the shipped near cortex and canal ((name, thickness m, thrust factor);
#: None: the shipped far cortex), and their planned depth (m).
VARIANTS = {
    "soft_layer_behind": ([None, ("soft_tissue", 0.004, 0.1)], 0.0252),
    "second_cortex_behind_a_gap": ([None, ("interosseous_gap", 0.005, 0.0), ("fibula", 0.003, 1.0)], 0.0262),
    "far_cortex_too_thin": ([("far_cortex", 0.0002, 1.0)], 0.0214),
    "near_cortex_too_hard": ("hard_near", 0.0252),
}
#: Each variant's outcome on both paths: completed (the feed ends on the far cortex' breakthrough)
#: or refused when planned (a breakthrough the plan cannot see, a thrust over the limit).
EXPECTED = {
    "soft_layer_behind": "completed",
    "second_cortex_behind_a_gap": "completed",
    "far_cortex_too_thin": "refused",
    "near_cortex_too_hard": "refused",
}
SAME_DEPTH = 10e-6  # m, issue 31's: the deepest true tip of the two paths


def variant_file(directory: Path, name: str) -> Path:
    """The shipped incision task with the variant's bone (and depth), as a user writes it."""
    raw = yaml.safe_load(Path(find_data_file("config/tasks/incision.yaml")).read_text())
    layers, depth = VARIANTS[name]
    shipped = raw["bone"]["layers"]
    if layers == "hard_near":
        shipped[0]["thrust_factor"]["value"] = 3.0 * shipped[0]["thrust_factor"]["value"]
    elif layers is not None:
        kept = shipped[:2]
        for layer in layers:
            if layer is None:
                kept.append(shipped[2])
                continue
            layer_name, thickness, factor = layer
            kept.append(
                {
                    "name": layer_name,
                    "thickness": {"value": thickness, "unit": "m", "source": "test variant"},
                    "thrust_factor": {"value": factor, "unit": "1", "source": "test variant"},
                }
            )
        raw["bone"]["layers"] = kept
    if depth is not None:
        raw["depth"]["value"] = depth
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def far_cortex_exit(task) -> float:
    """m past the entry where the tibia's far cortex (the task's third layer) ends."""
    return sum(layer.thickness for layer in task.bone.layers[:3])


def simulate(task, parameters) -> tuple[str, float, str]:
    """(outcome, deepest true tip m, reason) of `quirobot simulate --plant ideal`'s run: outcome
    "refused" (nan depth), "completed" or "stopped"."""
    from quirobot_control.planning.drill_hole import GoalRejectedError
    from quirobot_control.simulation.incision import run_task

    try:
        result = run_task(task, parameters, plant="ideal")
    except GoalRejectedError as error:
        return "refused", float("nan"), str(error)
    run = result.metrics.run
    outcome = "completed" if run.completed and not result.unsafe else "stopped"
    return outcome, result.metrics.incision.max_depth, run.stop_reason or ""
