"""The reaction to a far-cortex breakthrough: the feed stops, then waits for the retract.

When the drilling monitor (safety.drilling_monitor) reports a breakthrough, the feed stops the
same way wherever the monitor runs (the drive bridge, bridge.drive_bridge, under drive_node and
under `quirobot simulate`'s executor runs, simulation.executor_run):

1. `FeedStop`: a category 2 stop of the feed alone, from its commanded position and velocity at
   that period, decelerating at the feed's acceleration limit (tools.drill.feed_acceleration) to
   rest, then held there under power; the arm keeps its own commands (at rest during a feed). The
   deepest the bit goes is decided here, so both paths drill the same hole.
2. The way back differs, as what each knows does: the bridge (`BreakthroughHold.command`) holds
   the feed while the controller's command lies deeper and hands it back once the command comes
   above the held position (the plan's retract passing it): the feed never goes deeper than
   where it stopped (before, the bridge released its hold at the retract's first negative
   velocity and the feed lunged back to the plan's deeper position). The simulation, which knows
   the plan's phases, fades the stop into the plan over the retract phase. Joining a moving
   retract from rest leaves the bridge's feed behind the plan during the retract (the command
   limiter's acceleration bound): the executor does not hold the feed to its path after a
   breakthrough (procedures.drill_hole_executor).

Depths grow with the feed's position (drill_feed: + into the bone). ROS-free, no allocation per
period.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["BreakthroughHold", "FeedStop"]


@dataclass(frozen=True)
class FeedStop:
    """From the commanded position (m) and velocity (m/s) at `time` (s), decelerate at
    `deceleration` (m/s^2) to rest and hold there."""

    time: float
    position: float
    velocity: float
    deceleration: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.deceleration) and self.deceleration > 0.0):
            raise ValueError(f"feed stop deceleration must be > 0 m/s^2, got {self.deceleration!r}")

    @property
    def rest_position(self) -> float:
        return self.position + self.velocity * abs(self.velocity) / (2.0 * self.deceleration)

    def command(self, t: float) -> tuple[float, float, float]:
        """(position m, velocity m/s, acceleration m/s^2) of the feed command at t >= time (s)."""
        duration = abs(self.velocity) / self.deceleration
        elapsed = min(max(t - self.time, 0.0), duration)
        if elapsed >= duration:
            return self.rest_position, 0.0, 0.0
        a = -math.copysign(self.deceleration, self.velocity)
        return (
            self.position + self.velocity * elapsed + 0.5 * a * elapsed**2,
            self.velocity + a * elapsed,
            a,
        )


class BreakthroughHold:
    """The feed's command after a breakthrough (module docstring, step 2)."""

    def __init__(self, stop: FeedStop) -> None:
        self.stop = stop
        self.released = False  # the controller's command came back above the held position

    def command(self, t: float, position: float, velocity: float) -> tuple[float, float, float, bool]:
        """(position, velocity, acceleration, held) of the feed at `t` s given the controller's
        commanded `position` (m) and `velocity` (m/s); held False: the controller's own command
        (its acceleration is then the caller's)."""
        if self.released:
            return position, velocity, 0.0, False
        held_position, held_velocity, held_acceleration = self.stop.command(t)
        if position < held_position and velocity <= 0.0:  # the retract has passed the held depth
            self.released = True
            return position, velocity, 0.0, False
        return held_position, held_velocity, held_acceleration, True
