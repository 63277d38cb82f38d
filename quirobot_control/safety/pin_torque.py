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

from quirobot_description.shown_numbers import compared


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
            torque, limit = compared(drive_torque, self.limit)  # short, and never equal
            return (
                f"pin insertion torque {torque} N*m above the limit {limit} N*m "
                f"at {depth * 1e3:.2f} mm of {self.target_depth * 1e3:.2f} mm"
            )
        return None


#: m: the insertion is at its depth this close to it (the driver is switched off).
DEPTH_REACHED = 0.01e-3
#: The driver's slowest command in the approach, as a fraction of its speed (the pin must reach
#: its depth; design assumption: 5 %, 0.09 mm/s of feed at the shipped 60 rpm and 1.75 mm pitch).
APPROACH_FLOOR = 0.05


@dataclass(frozen=True)
class PinInsertion:
    """What the drive side runs for one pin goal's insertion (bridge.pin_in_force): the goal, its
    torque monitor (its limit and target depth), the driver's speed (rad/s, > 0), the thread's
    pitch (m per revolution, > 0: the feed follows the driver, feed = pitch x revolutions) and the
    approach rate (1/s, > 0: within one pitch of the target the driver's command falls in
    proportion to the depth left, `driver_command`)."""

    goal_id: str
    monitor: PinTorqueMonitor
    speed: float
    pitch: float
    approach_rate: float

    def __post_init__(self) -> None:
        if not self.goal_id:
            raise ValueError("pin insertion: a goal id is needed (the insertion belongs to one goal)")
        for label, value, unit in (
            ("driver speed", self.speed, "rad/s"),
            ("thread pitch", self.pitch, "m"),
            ("approach rate", self.approach_rate, "1/s"),
        ):
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"pin insertion: {label} must be a finite number > 0 {unit}, got {value!r}")

    def travel(self, angle: float) -> float:
        """m the pin advances for `angle` rad of the driver (the thread)."""
        return self.pitch * angle / (2.0 * math.pi)

    def driver_command(self, left: float) -> float | None:
        """The driver's speed command (rad/s) with `left` m to the target depth; None: at the
        depth (within DEPTH_REACHED), switch the driver off."""
        if left <= DEPTH_REACHED:
            return None
        approach = 2.0 * math.pi * self.approach_rate * left / self.pitch
        return max(min(self.speed, approach), APPROACH_FLOOR * self.speed)
