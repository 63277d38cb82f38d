"""The drill's spindle and the drilling process-safety limits (parameter file `tools.drill.spindle_*`,
`tools.drill.thrust_*`, `tools.drill.breakthrough_*`), read through `SourcedReader` like every
other number.

- `SpindleParameters`: the spindle motor and its speed loop (models.spindle), the cutting torque
  per newton of thrust, when it counts as at speed and when as stalled;
- `ProcessSafetyParameters`: the feed's thrust limit and its filter, the far-cortex breakthrough
  detector's drop and minimum thrust, and how far before the imaged far cortex it arms
  (safety.drilling_monitor).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from quirobot_description.sourced_yaml import SourcedReader

SECTION = "tools.drill"


@dataclass(frozen=True)
class SpindleParameters:
    """The drill spindle (SI units; the parameter file gives each source)."""

    speed: float  # rad/s, the commanded drilling speed
    max_torque: float  # N*m, the spindle drive's torque limit at the chuck
    inertia: float  # kg*m^2, rotor, gearhead, chuck and bit at the spindle
    speed_time_constant: float  # s, the closed speed loop's time constant
    torque_per_thrust: float  # m, cutting torque (N*m) per newton of thrust
    at_speed_fraction: float  # 1, speed / command above which the spindle is at speed
    stall_fraction: float  # 1, speed / command below which (after run-up) it is stalling
    stall_time: float  # s, how long below stall_fraction before the stall is declared


@dataclass(frozen=True)
class ProcessSafetyParameters:
    """The drilling monitor's limits (SI units)."""

    thrust_limit: float  # N, filtered feed thrust that stops the feed
    thrust_filter_time: float  # s, first-order filter of the thrust estimate
    breakthrough_drop: float  # 1, fraction of the far cortex's peak thrust lost at breakthrough
    breakthrough_min_thrust: float  # N, the peak must have been at least this (cortical bone)
    breakthrough_arm_margin: float  # m, detection armed this far before the imaged far cortex
    breakthrough_exit_tolerance: float  # m, a breakthrough further before the imaged exit is early
    breakthrough_peak_time: float  # s, a thrust level counts as the peak when held this long
    breakthrough_limit: float  # m, the tip ends at most this far past the far cortex (goals' depth)


@dataclass(frozen=True)
class DrillingParameters:
    spindle: SpindleParameters
    safety: ProcessSafetyParameters


_FRACTIONS = ("at_speed_fraction", "stall_fraction", "breakthrough_drop")


def read_drilling(reader: SourcedReader) -> DrillingParameters:
    """The spindle and process-safety keys of `tools.drill`: every number > 0, fractions < 1, the
    thrust limit below the feed's effort limit (else the feed saturates before it trips)."""

    def read(cls: type, prefix: str) -> dict[str, float]:
        values = {}
        for item in fields(cls):
            key = f"{SECTION}.{prefix}{item.name}"
            values[item.name] = reader.number(key, positive=True)
            if item.name in _FRACTIONS and values[item.name] >= 1.0:
                raise reader.fail(key, f"must be a fraction in (0, 1), got {values[item.name]}")
        return values

    spindle = SpindleParameters(**read(SpindleParameters, "spindle_"))
    if spindle.stall_fraction >= spindle.at_speed_fraction:
        raise reader.fail(f"{SECTION}.spindle_stall_fraction", "must be below spindle_at_speed_fraction")
    safety = ProcessSafetyParameters(**read(ProcessSafetyParameters, ""))
    effort = reader.number(f"{SECTION}.feed_effort", positive=True)
    if safety.thrust_limit >= effort:
        raise reader.fail(
            f"{SECTION}.thrust_limit",
            f"{safety.thrust_limit} N must be below the feed's effort limit feed_effort {effort} N",
        )
    return DrillingParameters(spindle=spindle, safety=safety)
