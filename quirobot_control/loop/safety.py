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
  still none after `stop_timeout` s: stop every drive. The age of the last command is the larger
  of two clocks: the caller's `time` (the adapter passes a monotonic wall clock, so a control
  loop that runs late still sees the commands go stale in real time) and the control periods
  counted since the command (so a clock that stops advancing cannot hide a stale stream). A
  non-finite clock value stops every drive.
- A drive in FAULT stops every drive.

A stop is latched; `SafetyStopError.reason` says which joint, what and by how much.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from quirobot_control.axes.limits import JointLimits


class SafetyStopError(RuntimeError):
    """Every drive must be quick-stopped; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SafetyMonitor:
    """Stateful checks of one hardware component (see the module docstring)."""

    def __init__(
        self,
        limits: JointLimits,
        following_error: Sequence[float],
        watchdog_timeout: float,
        stop_timeout: float,
    ) -> None:
        """limits: the joints' limits in the hardware's joint order (`JointLimits.select`);
        following_error (n,): m or rad per joint; watchdog_timeout, stop_timeout: s."""
        if len(following_error) != len(limits.names):
            raise ValueError(
                f"{len(following_error)} following-error limits for {len(limits.names)} joints "
                f"({', '.join(limits.names)})"
            )
        self.limits = limits
        self.watchdog_timeout = float(watchdog_timeout)
        self.stop_timeout = float(stop_timeout)
        self.events: list[str] = []  # non-fatal events (clamped commands, watchdog hold)
        self.stop_reason: str | None = None
        self._last_command_time: float | None = None
        self._counted_age = 0.0  # s, control periods run since the last command
        self._holding: list[float] | None = None
        self._previous: list[float] | None = None  # last safe position command
        self._scalars = [
            (float(a), float(b), float(c), float(d))
            for a, b, c, d in zip(
                limits.soft_lower, limits.soft_upper, limits.velocity, limits.k_position, strict=True
            )
        ]
        self._following = [float(x) for x in following_error]

    def start(self, measured: Sequence[float]) -> None:
        """Activation: the command limiter starts from the measured positions (n,)."""
        self._previous = [float(x) for x in measured]

    def stop(self, reason: str) -> SafetyStopError:
        if self.stop_reason is None:
            self.stop_reason = reason
        return SafetyStopError(self.stop_reason)

    def note_command(self, time: float) -> None:
        """A fresh command arrived at `time` (s, the clock that `filter` is given)."""
        self._last_command_time = time
        self._counted_age = 0.0
        self._holding = None

    def _command_age(self, time: float, dt: float) -> float | None:
        """s since the last command (None before the first): the larger of the clock's age and
        the periods counted since; one more period counted. Raise on a non-finite clock."""
        if self._last_command_time is None:
            return None
        for label, value in (("clock time", time), ("command time", self._last_command_time)):
            if not math.isfinite(value):
                raise self.stop(f"command watchdog: {label} {value} is not finite")
        age = max(time - self._last_command_time, self._counted_age)
        self._counted_age += dt
        return age

    # The per-cycle checks loop over the joints in plain Python: for six joints that is several
    # times faster than numpy's per-call overhead (the 1 kHz budget is 200 us for everything).
    def filter(
        self,
        time: float,
        dt: float,
        position: Sequence[float],
        velocity: Sequence[float],
        measured: Sequence[float],
    ) -> tuple[list[float], list[float]]:
        """Safe (position, velocity) commands (n,) for this cycle, or raise SafetyStopError."""
        lim = self._scalars
        names = self.limits.names
        if self.stop_reason is not None:
            raise SafetyStopError(self.stop_reason)
        for label, values in (("position", position), ("velocity", velocity)):
            for j, value in enumerate(values):
                if not math.isfinite(value):
                    raise self.stop(f"non-finite {label} command {value} for joint {names[j]}")
        age = self._command_age(time, dt)
        if age is not None:
            if age > self.stop_timeout:
                raise self.stop(f"command watchdog: no command for {age:.3f} s (limit {self.stop_timeout} s)")
            if age > self.watchdog_timeout:
                if self._holding is None:
                    self._holding = [float(x) for x in measured]
                    self.events.append(
                        f"command watchdog: no command for {age:.3f} s at t = {time:.3f} s: holding position"
                    )
                position, velocity = self._holding, [0.0] * len(velocity)
        previous = self._previous if self._previous is not None else list(measured)
        safe_position = []
        safe_velocity = []
        for j, (soft_lower, soft_upper, v_max, k_position) in enumerate(lim):
            q_prev = previous[j]
            v_low = min(max(-k_position * (q_prev - soft_lower), -v_max), v_max)
            v_high = min(max(-k_position * (q_prev - soft_upper), -v_max), v_max)
            # Slack of 1e-9 of the limit for rounding in the planner's samples.
            slack = 1e-9 * v_max * dt
            safe_velocity.append(min(max(velocity[j], v_low), v_high))
            safe_position.append(
                min(max(position[j], q_prev + v_low * dt - slack), q_prev + v_high * dt + slack)
            )
            if position[j] < soft_lower or position[j] > soft_upper:
                bound = soft_lower if position[j] < soft_lower else soft_upper
                message = (
                    f"soft limit: joint {names[j]} command {position[j]:.6g} beyond {bound:.6g}, clamped"
                )
                if not self.events or self.events[-1] != message:
                    self.events.append(message)
        self._previous = safe_position
        return safe_position, safe_velocity

    def check(self, command: Sequence[float], measured: Sequence[float]) -> None:
        """Raise SafetyStopError on a soft-limit breach or a following error of the measured state."""
        if self.stop_reason is not None:
            raise SafetyStopError(self.stop_reason)
        names = self.limits.names
        for j, (soft_lower, soft_upper, _, _) in enumerate(self._scalars):
            q = measured[j]
            if not math.isfinite(q):
                raise self.stop(f"non-finite measured position of joint {names[j]}")
            allowance = self._following[j]
            if q < soft_lower - allowance or q > soft_upper + allowance:
                side, bound = ("lower", soft_lower) if q < soft_lower else ("upper", soft_upper)
                raise self.stop(
                    f"soft limit: joint {names[j]} at {q:.6g} is {abs(q - bound):.3g} past its soft "
                    f"{side} limit {bound:.6g}"
                )
        for j, allowance in enumerate(self._following):
            error = abs(command[j] - measured[j])
            if error > allowance:
                raise self.stop(
                    f"following error: joint {names[j]} is {error:.4g} from its command "
                    f"(limit {allowance:.4g})"
                )


def finite_or_nan(value: float) -> float:
    """float(value), NaN for anything not convertible (so the NaN check names it)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
