"""The pin insertion's torque monitor: one rule on every path.

A threaded pin is driven in by its driver's spindle, the feed following the thread (feed = pitch
x revolutions). Each control period the driver's torque (N*m, the drive's own, not the bone
model's) is checked against the task's torque limit: above it, or not a number, the insertion
stops (the spindle off, and with it the feed). `quirobot simulate --task pin`
(simulation.pin_procedure) and the drive bridge (bridge.pin_in_force, drive_node's) run this same
monitor, so the rule verified in simulation is the one the robot runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class PinTorqueMonitor:
    """The torque limit of one insertion: `limit` N*m (> 0), `target_depth` m (> 0, for the
    message: where along the pin's path the stop came)."""

    limit: float
    target_depth: float

    def __post_init__(self) -> None:
        checked = (("torque limit", self.limit, "N*m"), ("target depth", self.target_depth, "m"))
        for label, value, unit in checked:
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0.0):
                raise ValueError(
                    f"pin torque monitor: {label} must be a finite number > 0 {unit}, got {value!r}"
                )

    def check(self, drive_torque: float, depth: float) -> str | None:
        """Why the insertion must stop now, with the driver at `drive_torque` N*m and the pin's tip
        `depth` m below the bone surface; None: it goes on."""
        if not math.isfinite(drive_torque):
            return f"pin driver torque reads {drive_torque!r}, not a number: the insertion stops"
        if drive_torque > self.limit:
            return (
                f"pin insertion torque {drive_torque:.2f} N*m above the limit "
                f"{self.limit:.2f} N*m at {depth * 1e3:.2f} mm of {self.target_depth * 1e3:.2f} mm"
            )
        return None


@dataclass(frozen=True)
class PinInsertion:
    """What the drive side watches during one pin goal's insertion (bridge.pin_in_force): the goal,
    its torque monitor and the driver's speed (rad/s, > 0)."""

    goal_id: str
    monitor: PinTorqueMonitor
    speed: float

    def __post_init__(self) -> None:
        if not self.goal_id:
            raise ValueError("pin insertion: a goal id is needed (the insertion belongs to one goal)")
        if not (math.isfinite(self.speed) and self.speed > 0.0):
            raise ValueError(
                f"pin insertion: driver speed must be a finite number > 0 rad/s, got {self.speed!r}"
            )
