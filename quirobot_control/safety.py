"""The safety layer of the hardware component (ROS-free, one instance per hardware component).

Per control cycle it filters the commands and checks the measured state:

- NaN/inf command: refused, every drive quick-stopped (`SafetyStopError`).
- Soft limits (URDF <safety_controller>, as ros2_control's soft joint limiter applies them): the
  velocity command is bounded by
      v_min = clip(-k_position * (q - soft_lower), -v_max, v_max)
      v_max' = clip(-k_position * (q - soft_upper), -v_max, v_max)
  and the position command by [q + v_min*dt, q + v_max'*dt], q being the previous safe position
  command: the command slows down to a stop at the soft limit whatever it is told (and never
  moves faster than the velocity limit: a step becomes a ramp). A measured position outside the
  soft range by more than the joint's following-error limit (the limiter could not hold it: e.g.
  a push stronger than the drive) stops every drive.
- Following error: |q_command - q_measured| above the joint's limit stops every drive.
- Command watchdog: no fresh command for `watchdog_timeout` s: hold the measured position;
  still none after `stop_timeout` s: stop every drive.
- A drive in FAULT stops every drive.

A stop is latched; `SafetyStopError.reason` says which joint, what and by how much.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class SafetyStopError(RuntimeError):
    """Every drive must be quick-stopped; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SafetyLimits:
    """Per-joint arrays (n,) in the hardware's joint order; m or rad, m/s or rad/s, 1/s, s."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    soft_lower: np.ndarray
    soft_upper: np.ndarray
    velocity: np.ndarray
    k_position: np.ndarray
    following_error: np.ndarray
    watchdog_timeout: float
    stop_timeout: float


class SafetyMonitor:
    """Stateful checks of one hardware component (see the module docstring)."""

    def __init__(self, limits: SafetyLimits) -> None:
        self.limits = limits
        self.events: list[str] = []  # non-fatal events (clamped commands, watchdog hold)
        self.stop_reason: str | None = None
        self._last_command_time: float | None = None
        self._holding: np.ndarray | None = None
        self._previous: np.ndarray | None = None  # last safe position command

    def start(self, measured: np.ndarray) -> None:
        """Activation: the command limiter starts from the measured positions (n,)."""
        self._previous = np.array(measured, dtype=float)

    def stop(self, reason: str) -> SafetyStopError:
        if self.stop_reason is None:
            self.stop_reason = reason
        return SafetyStopError(self.stop_reason)

    def note_command(self, time: float) -> None:
        """A fresh command arrived at `time` (s)."""
        self._last_command_time = time
        self._holding = None

    def filter(
        self, time: float, dt: float, position: np.ndarray, velocity: np.ndarray, measured: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Safe (position, velocity) commands (n,) for this cycle, or raise SafetyStopError."""
        lim = self.limits
        if self.stop_reason is not None:
            raise SafetyStopError(self.stop_reason)
        for label, values in (("position", position), ("velocity", velocity)):
            bad = ~np.isfinite(values)
            if bad.any():
                j = int(np.argmax(bad))
                raise self.stop(f"non-finite {label} command {values[j]} for joint {lim.names[j]}")
        if self._last_command_time is not None:
            age = time - self._last_command_time
            if age > lim.stop_timeout:
                raise self.stop(f"command watchdog: no command for {age:.3f} s (limit {lim.stop_timeout} s)")
            if age > lim.watchdog_timeout:
                if self._holding is None:
                    self._holding = measured.copy()
                    self.events.append(
                        f"command watchdog: no command for {age:.3f} s at t = {time:.3f} s: holding position"
                    )
                position, velocity = self._holding, np.zeros_like(velocity)
        previous = measured if self._previous is None else self._previous
        v_low = np.clip(-lim.k_position * (previous - lim.soft_lower), -lim.velocity, lim.velocity)
        v_high = np.clip(-lim.k_position * (previous - lim.soft_upper), -lim.velocity, lim.velocity)
        safe_velocity = np.clip(velocity, v_low, v_high)
        # Slack of 1e-9 of the limit for rounding in the planner's samples.
        slack = 1e-9 * lim.velocity * dt
        safe_position = np.clip(position, previous + v_low * dt - slack, previous + v_high * dt + slack)
        self._previous = safe_position
        # Only a command beyond the soft range is reported as clamped (normal motion is
        # faster-than-limit only through rounding).
        outside = (position < lim.soft_lower) | (position > lim.soft_upper)
        if outside.any():
            j = int(np.argmax(outside))
            bound = lim.soft_lower[j] if position[j] < lim.soft_lower[j] else lim.soft_upper[j]
            message = (
                f"soft limit: joint {lim.names[j]} command {position[j]:.6g} beyond {bound:.6g}, clamped"
            )
            if not self.events or self.events[-1] != message:
                self.events.append(message)
        return safe_position, safe_velocity

    def check(self, command: np.ndarray, measured: np.ndarray) -> None:
        """Raise SafetyStopError on a soft-limit breach or a following error of the measured state."""
        lim = self.limits
        if self.stop_reason is not None:
            raise SafetyStopError(self.stop_reason)
        bad = ~np.isfinite(measured)
        if bad.any():
            j = int(np.argmax(bad))
            raise self.stop(f"non-finite measured position of joint {lim.names[j]}")
        below = lim.soft_lower - measured
        above = measured - lim.soft_upper
        breach = np.maximum(below, above) - lim.following_error
        if np.any(breach > 0.0):
            j = int(np.argmax(breach))
            side, bound = (
                ("lower", lim.soft_lower[j]) if below[j] > above[j] else ("upper", lim.soft_upper[j])
            )
            raise self.stop(
                f"soft limit: joint {lim.names[j]} at {measured[j]:.6g} is "
                f"{max(below[j], above[j]):.3g} past its soft {side} limit {bound:.6g}"
            )
        error = np.abs(command - measured)
        excess = error - lim.following_error
        if np.any(excess > 0.0):
            j = int(np.argmax(excess / lim.following_error))
            raise self.stop(
                f"following error: joint {lim.names[j]} is {error[j]:.4g} from its command "
                f"(limit {lim.following_error[j]:.4g})"
            )


def finite_or_nan(value: float) -> float:
    """float(value), NaN for anything not convertible (so the NaN check names it)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
