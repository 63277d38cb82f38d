"""Ground-truth verdicts for issue 33's last clause: no procedure reports success while the true
tip is outside the tolerance its success claims (test_success_is_honest.py).

Each function takes what the simulation knows and the robot does not (the plant's true tip, the
bone the plant drills) and returns the tolerances that tip breaks, one line each ([]: within).
The tolerances are the procedures' declared ones, never typed here:

- a hole (the DrillHole goal, `quirobot simulate --task incision`): simulation.incision.TARGETS'
  lateral deviation in bone and depth (overshoot past the goal, shortfall at the end); a feed the
  far cortex' breakthrough ended claims the hole through the plant's far cortex instead, the tip
  past it by at most the parameter file's drilling.safety.breakthrough_limit;
- a pin (simulation.pin_procedure): its DEPTH_TARGET, and its tip past the plant bone's far side
  by at most the task's protrusion_limit;
- the arthroscope (simulation.arthroscopy_procedure): its RCM_TARGET for the portal's distance
  from the true scope axis, the task's depth range and cone, and its no-go zones for the scope.
  The servo commands the scope onto a bound exactly when it holds there, so the plant's tracking
  takes the true tip a little past it (measured, realistic plant: 2.6 um past max_depth, 2.8 urad
  past the cone): the bounds are held to the procedure's declared position tolerance of the scope,
  RCM_TARGET, for the depth range, and to the pivot about the portal that moves a tip at
  max_depth by RCM_TARGET (RCM_TARGET / max_depth rad) for the cone.
"""

from __future__ import annotations

import numpy as np

from quirobot_control.planning.drill_hole import tip_progress
from quirobot_control.simulation.incision import TARGETS
from quirobot_kinematics import KinematicModel, forward_kinematics


def hole_verdict(
    tips: np.ndarray,
    entry: np.ndarray,
    direction: np.ndarray,
    depth: float,
    far_exit: float | None,
    breakthrough: bool,
    breakthrough_limit: float,
) -> tuple[list[str], dict[str, float]]:
    """(broken tolerances, measured numbers m) of a hole drilled along the true tips (N, 3) m
    (world, every control period), to `depth` m past `entry` along `direction` (unit (3,)).
    `far_exit`: m past the entry where the plant's far cortex ends (None: no bone model);
    `breakthrough`: the result says the far cortex' breakthrough ended the feed."""
    progress = np.array([tip_progress(tip, entry, direction) for tip in tips])
    along, lateral = progress[:, 0], progress[:, 1]
    in_bone = along >= 0.0
    numbers = {
        "deepest": float(along.max()),
        "lateral": float(lateral[in_bone].max()) if in_bone.any() else 0.0,
    }
    broken = []
    if numbers["lateral"] > TARGETS["lateral_deviation"]:
        broken.append(
            f"true tip {numbers['lateral'] * 1e3:.3f} mm from the axis in bone "
            f"(target {TARGETS['lateral_deviation'] * 1e3:.3f} mm)"
        )
    if breakthrough:
        if far_exit is None or not far_exit <= numbers["deepest"] <= far_exit + breakthrough_limit:
            broken.append(
                f"breakthrough claimed: deepest true tip {numbers['deepest'] * 1e3:.3f} mm, the plant's far "
                f"cortex ends at {float('nan') if far_exit is None else far_exit * 1e3:.3f} mm "
                f"(at most {breakthrough_limit * 1e3:.2f} mm past it)"
            )
        return broken, numbers
    # At the goal's depth: not past it by more than the overshoot target, not short of it by more
    # than the final depth target at the deepest point (the dwell).
    if numbers["deepest"] - depth > TARGETS["depth_overshoot"]:
        broken.append(
            f"deepest true tip {(numbers['deepest'] - depth) * 1e3:.3f} mm past the goal's depth "
            f"(target {TARGETS['depth_overshoot'] * 1e3:.3f} mm)"
        )
    if depth - numbers["deepest"] > TARGETS["final_depth_error"]:
        broken.append(
            f"deepest true tip {(depth - numbers['deepest']) * 1e3:.3f} mm short of the goal's depth "
            f"(target {TARGETS['final_depth_error'] * 1e3:.3f} mm)"
        )
    return broken, numbers


def scope_axes(
    position: np.ndarray, tool0: np.ndarray, model: KinematicModel
) -> tuple[np.ndarray, np.ndarray]:
    """(origins (N, 3), unit axes (N, 3)) of the true scope: the rigid model's axis at the plant's
    true joints (N, 5+), moved to the plant's true tool0 (N, 3), which carries its compliances and
    geometric errors as translations (simulation.realistic_plant: the tip likewise)."""
    T = forward_kinematics(np.asarray(position, dtype=float)[:, :5], model)
    return np.asarray(tool0, dtype=float), T[:, :3, 2]


def scope_verdict(
    origins: np.ndarray,
    axes: np.ndarray,
    task,
    scope_length: float,
    scope_radius: float,
    rcm_target: float,
) -> tuple[list[str], dict[str, float]]:
    """(broken bounds, measured numbers) of the true scope (origins, axes: (N, 3) each) against an
    ArthroscopyTask's portal (rcm_target m), depth range, cone and no-go zones (each within the
    slack of the module docstring; a no-go zone's contact is exact)."""
    offset = task.portal - origins
    along = np.einsum("ij,ij->i", offset, axes)
    rcm = np.linalg.norm(offset - along[:, None] * axes, axis=1)
    tips = origins + scope_length * axes
    depth = np.einsum("ij,ij->i", tips - task.portal, axes)
    angle = np.arccos(np.clip(axes @ task.direction, -1.0, 1.0))
    numbers = {
        "rcm": float(rcm.max()),
        "min_depth": float(depth.min()),
        "max_depth": float(depth.max()),
        "angle": float(angle.max()),
    }
    broken = []
    pivot = rcm_target / task.max_depth  # rad: the cone's slack (module docstring)
    if numbers["rcm"] > rcm_target:
        broken.append(
            f"portal {numbers['rcm'] * 1e3:.3f} mm from the true scope axis (target {rcm_target * 1e3} mm)"
        )
    if (
        numbers["min_depth"] < task.min_depth - rcm_target
        or numbers["max_depth"] > task.max_depth + rcm_target
    ):
        broken.append(
            f"true scope tip {numbers['min_depth'] * 1e3:.3f}-{numbers['max_depth'] * 1e3:.3f} mm past the "
            f"portal (range {task.min_depth * 1e3:.1f}-{task.max_depth * 1e3:.1f} mm +/- {rcm_target * 1e3})"
        )
    if numbers["angle"] > task.cone_half_angle + pivot:
        broken.append(
            f"true scope axis {np.degrees(numbers['angle']):.2f} deg from the entry direction "
            f"(cone {np.degrees(task.cone_half_angle):.1f} deg + {np.degrees(pivot):.2f})"
        )
    for zone in task.no_go_zones:
        hit = zone.hits(origins, tips, scope_radius)
        if hit.any():
            broken.append(f"true scope in no-go zone {zone.name} for {int(hit.sum())} periods")
    return broken, numbers


def pin_verdict(
    final_depth: float, task, far_side: float, depth_target: float
) -> tuple[list[str], dict[str, float]]:
    """(broken tolerances, numbers m) of a pin ending `final_depth` m into a plant bone whose far
    side is `far_side` m deep: within `depth_target` of the task's depth, past the far side by at
    most the task's protrusion_limit."""
    numbers = {"depth_error": abs(final_depth - task.depth), "protrusion": final_depth - far_side}
    broken = []
    if numbers["depth_error"] > depth_target:
        broken.append(
            f"pin {numbers['depth_error'] * 1e3:.3f} mm from its depth (target {depth_target * 1e3} mm)"
        )
    if numbers["protrusion"] > task.protrusion_limit:
        broken.append(
            f"pin tip {numbers['protrusion'] * 1e3:.3f} mm past the bone's far side "
            f"(protrusion_limit {task.protrusion_limit * 1e3:.1f} mm)"
        )
    return broken, numbers
