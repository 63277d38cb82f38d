"""The hole being drilled, as every per-cycle check needs it, decided once per goal (ROS-free).

`HoleContext` is what the drive side watches while a goal drills: the hole's geometry, the goal's
thrust limit, where breakthrough detection arms and where the imaged far cortex ends, the no-go
zones, the tip-speed limit near the entry, and the imaged bone (the thrust feed-forward's model).
The planner decides all of it once (planning.drill_hole.plan_drill_hole runs the plan-time
breakthrough check, safety.breakthrough_plan, for every caller); the DrillHole executor sends it
(msg/DrillingContext on the ROS path, the bridge in-process) and the drive side runs exactly that:
it never reads a task file and never re-derives an arming depth.

`hole_monitor_settings` is the one function from which the drilling monitor's settings for a
hole come (safety.drilling_monitor.DrillingMonitorSettings): the parameter file's process safety
with the goal's thrust limit (never above the robot's tools.drill.thrust_limit: a goal can only
lower it) and the plan's arming. `thrust_limit_only` is the monitor with no hole (between goals):
the thrust limit on the feed joint's position.

A context belongs to one goal (`goal_id`): the drive side takes a new one only when none is
active, and ends it only on its own goal's end (bridge.drive_bridge.DriveBridge.set_drilling_context).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

from quirobot_control.axes.virtual_fixtures import EntrySpeedLimit, NoGoZone, ToolGeometry, VirtualFixtures
from quirobot_control.models.bone import BoneParameters
from quirobot_control.safety.drilling_monitor import DrillingMonitorSettings
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.machine_identity import MachineIdentity
from quirobot_description.parameters import RobotParameters

__all__ = ["GoalLimitError", "HoleContext", "hole_monitor_settings", "thrust_limit_only"]


class GoalLimitError(ValueError):
    """A goal's thrust limit that is not a positive finite number of newtons."""


@dataclass(frozen=True)
class HoleContext:
    """One goal's hole (world frame, SI). `arm_depth`, `exit_depth`: m below the entry, None: off
    (no far cortex the plan drills into) / no early-breakthrough check; `entry_speed`: m/s within
    `entry_speed_radius` m of the entry (None: no limit); `bone`: the imaged bone, None without a
    bone model."""

    goal_id: str
    entry: np.ndarray  # (3,) m
    direction: np.ndarray  # (3,) unit, into the bone
    depth: float  # m past the entry, planned
    feed_rate: float  # m/s, planned
    thrust_limit: float  # N, the goal's (<= the robot's)
    arm_depth: float | None
    exit_depth: float | None
    zones: tuple[NoGoZone, ...] = ()
    entry_speed_radius: float | None = None
    entry_speed: float | None = None
    bone: BoneParameters | None = None
    #: The machine's identified geometric errors the plan was made with (None: the nominal model):
    #: the drive side measures the tip with the same kinematics (issue 33 item 6).
    calibration: GeometricErrors | None = None
    #: The machine that calibration was identified on (its drives' serial numbers): the drive side
    #: takes a calibrated hole only on that machine's drives (bridge.hole_in_force).
    calibration_machine: MachineIdentity | None = None

    def __post_init__(self) -> None:
        entry = np.asarray(self.entry, dtype=float)
        direction = np.asarray(self.direction, dtype=float)
        if not self.goal_id:
            raise ValueError("drilling context: goal_id must name the goal it belongs to")
        if entry.shape != (3,) or not np.all(np.isfinite(entry)):
            raise ValueError(f"drilling context: entry must be 3 finite numbers (m), got {self.entry!r}")
        norm = float(np.linalg.norm(direction)) if direction.shape == (3,) else math.nan
        if not (math.isfinite(norm) and norm > 0.0):
            raise ValueError(f"drilling context: direction must be a non-zero vector, got {self.direction!r}")
        for name in ("depth", "feed_rate", "thrust_limit"):
            value = getattr(self, name)
            if not (isinstance(value, numbers.Real) and math.isfinite(value) and value > 0.0):
                raise ValueError(f"drilling context: {name} must be a finite number > 0, got {value!r}")
        for name in ("arm_depth", "exit_depth"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"drilling context: {name} must be >= 0 m or absent, got {value!r}")
        if (self.calibration is None) != (self.calibration_machine is None):
            raise ValueError(
                "drilling context: a calibration needs the machine it was identified on (drive serial "
                "numbers), and only a calibration has one"
            )
        if (self.entry_speed is None) != (self.entry_speed_radius is None):
            raise ValueError("drilling context: the entry speed limit needs both its radius and its speed")
        if self.entry_speed is not None and not (
            math.isfinite(self.entry_speed)
            and self.entry_speed > 0.0
            and math.isfinite(self.entry_speed_radius)
            and self.entry_speed_radius > 0.0
        ):
            raise ValueError(
                f"drilling context: entry speed limit {self.entry_speed!r} m/s within "
                f"{self.entry_speed_radius!r} m must be finite and > 0"
            )
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "direction", direction / norm)

    @property
    def bone_model(self) -> bool:
        return self.bone is not None

    def tool(self, params: RobotParameters) -> ToolGeometry:
        """This robot's tool on the plan's kinematics (calibrated as the plan was)."""
        return ToolGeometry.from_parameters(params, self.calibration)

    def fixtures(self, params: RobotParameters) -> VirtualFixtures | None:
        """The virtual fixtures the hardware enforces every cycle (no-go zones, tip speed near the
        entry) on this robot's tool (the plan's kinematics); None when the hole has neither."""
        speed = (
            None
            if self.entry_speed is None
            else EntrySpeedLimit(
                self.entry, self.entry_speed_radius, self.entry_speed, feed_rate=self.feed_rate
            )
        )
        if not self.zones and speed is None:
            return None
        return VirtualFixtures(zones=self.zones, tool=self.tool(params), speed_limit=speed)


def _thrust_limit(max_thrust: object, robot_limit: float) -> float:
    real = isinstance(max_thrust, numbers.Real) and not isinstance(max_thrust, bool)
    value = float(max_thrust) if real else math.nan
    if not (math.isfinite(value) and value > 0.0):
        raise GoalLimitError(f"max_thrust must be a finite number > 0 N, got {max_thrust!r}")
    return min(value, robot_limit)


def hole_monitor_settings(
    params: RobotParameters,
    feed_mass: float,
    max_thrust: float,
    arm_depth: float | None = None,
    exit_depth: float | None = None,
) -> DrillingMonitorSettings:
    """The drilling monitor for a hole (module docstring): thrust limit min(max_thrust, the
    robot's), breakthrough detection armed from `arm_depth` (m below the entry; None: off) with the
    early-breakthrough check against `exit_depth` (m; None: none). feed_mass: the feed's effective
    inertia, kg (the control configuration's). GoalLimitError if max_thrust is not a finite number
    > 0 N (NaN would disable the limit)."""
    drilling = params.drilling
    settings = DrillingMonitorSettings.from_parameters(
        drilling.safety, params.drill, drilling.spindle, feed_mass, None
    )
    return replace(
        settings,
        thrust_limit=_thrust_limit(max_thrust, drilling.safety.thrust_limit),
        arm_depth=arm_depth,
        exit_depth=exit_depth if arm_depth is not None else None,
    )


def thrust_limit_only(params: RobotParameters, feed_mass: float) -> DrillingMonitorSettings:
    """The monitor with no hole: the robot's thrust limit on the feed joint's position."""
    return DrillingMonitorSettings.thrust_limit_only(params.drilling.safety, params.drill, feed_mass)
