"""The hole being drilled, as the drive bridge's per-cycle monitor and fixtures need it (ROS-free).

task_node publishes msg/DrillingContext (latched) when a DrillHole goal starts and ends; drive_node
turns it into a `HoleContext` and hands it to `DriveBridge.set_drilling_context`, which runs the
whole drilling monitor (safety.drilling_monitor) every control period from it, as `quirobot simulate`
does: `hole_monitor_settings` here, the same `DrillingMonitorSettings.from_parameters`:

- a context with a task file (`task`, a name or a path: planning.tasks.load_task): the thrust
  limit (the goal's max_thrust if lower than the robot's), far-cortex breakthrough armed from the
  task's imaged far cortex, the spindle interlock; the task's virtual fixtures (no-go zones, tip
  speed near the entry) are enforced every cycle (`hole_fixtures`);
- a context without a task file (no bone model): the thrust limit and breakthrough detection from
  the measured thrust alone, armed from the entry (with no imaged far cortex the first drop of
  cortical thrust ends the feed: a unicortical hole is the safe reading), the spindle interlock;
  no fixtures;
- no active context (between goals, or nobody publishes one): the thrust limit alone on the feed
  joint's position (`DrillingMonitorSettings.thrust_limit_only`), no fixtures.

The task file is read through planning.tasks (imported only when a context names one): the
real-drive path loads the planner's modules then, never at start-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.models.bone import BoneParameters
from quirobot_control.safety.drilling_monitor import DrillingMonitorSettings
from quirobot_description.parameters import DrillParameters, RobotParameters

__all__ = ["HoleContext", "HoleSetup", "hole_monitor_settings", "hole_setup"]


@dataclass(frozen=True)
class HoleContext:
    """msg/DrillingContext without ROS: the hole of the goal in progress (world frame, SI)."""

    active: bool
    entry: np.ndarray  # (3,) m
    direction: np.ndarray  # (3,) unit
    depth: float  # m
    feed_rate: float  # m/s
    max_thrust: float  # N
    task: str = ""  # task file name or path; "": no bone model

    def __post_init__(self) -> None:
        if not self.active:
            return
        entry = np.asarray(self.entry, dtype=float)
        direction = np.asarray(self.direction, dtype=float)
        if entry.shape != (3,) or not np.all(np.isfinite(entry)):
            raise ValueError(f"drilling context: entry must be 3 finite numbers (m), got {self.entry!r}")
        norm = float(np.linalg.norm(direction)) if direction.shape == (3,) else math.nan
        if not (math.isfinite(norm) and norm > 0.0):
            raise ValueError(f"drilling context: direction must be a non-zero vector, got {self.direction!r}")
        if not (math.isfinite(self.max_thrust) and self.max_thrust > 0.0):
            raise ValueError(f"drilling context: max_thrust must be > 0 N, got {self.max_thrust!r}")
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "direction", direction / norm)


@dataclass(frozen=True)
class HoleSetup:
    """What the bridge runs for a context: the monitor's settings, the fixtures (or None), whether
    a bone model backs the breakthrough detection, and the hole's geometry (None: feed position)."""

    settings: DrillingMonitorSettings
    fixtures: object | None  # axes.virtual_fixtures.VirtualFixtures
    bone_model: bool
    context: HoleContext | None
    bone: BoneParameters | None = None  # the task file's bone model (None: none)


def hole_monitor_settings(
    params: RobotParameters, control: ControlConfig, far_cortex_depth: float | None, max_thrust: float
) -> DrillingMonitorSettings:
    """The whole monitor for a hole: breakthrough armed from `far_cortex_depth` (m below the entry;
    None: from the entry, no bone model), the thrust limit lowered to `max_thrust` (N) if lower."""
    feed_mass = control.joint(DrillParameters.feed_joint).effective_inertia
    drilling = params.drilling
    settings = DrillingMonitorSettings.from_parameters(
        drilling.safety, params.drill, drilling.spindle, feed_mass, far_cortex_depth
    )
    if far_cortex_depth is None:  # no imaged far cortex: armed from the entry
        settings = _replace(settings, arm_depth=0.0)
    return _replace(settings, thrust_limit=min(settings.thrust_limit, max_thrust))


def hole_setup(context: HoleContext | None, params: RobotParameters, control: ControlConfig) -> HoleSetup:
    """The monitor settings and fixtures for `context` (module docstring). Raises ValueError naming
    the task file if it cannot be read."""
    if context is None or not context.active:
        feed_mass = control.joint(DrillParameters.feed_joint).effective_inertia
        settings = DrillingMonitorSettings.thrust_limit_only(params.drilling.safety, params.drill, feed_mass)
        return HoleSetup(settings, None, False, None)
    if not context.task:
        settings = hole_monitor_settings(params, control, None, context.max_thrust)
        return HoleSetup(settings, None, False, context)
    from quirobot_control.planning.tasks import load_task, task_fixtures  # the task file

    try:
        task = load_task(context.task)
    except (OSError, ValueError) as error:
        why = " ".join(str(error).split())
        raise ValueError(f"drilling context: task file {context.task!r}: {why}") from None
    bone = task.bone  # None: a task that drills no bone (the line)
    far_cortex = bone.far_cortex if bone is not None else None
    settings = hole_monitor_settings(
        params, control, far_cortex[0] if far_cortex is not None else None, context.max_thrust
    )
    return HoleSetup(settings, task_fixtures(task, params), bone is not None, context, bone)


def _replace(settings: DrillingMonitorSettings, **changes: float) -> DrillingMonitorSettings:
    from dataclasses import replace

    return replace(settings, **changes)
