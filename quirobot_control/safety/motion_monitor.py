"""The safety layer of the hardware component (ROS-free, one instance per hardware component).

Per control cycle it filters the commands and checks the measured state:

- NaN/inf command: refused, every drive quick-stopped (`SafetyStopError`). A control period
  that is not a positive finite number stops every drive (a zero period would freeze the
  watchdog's counted clock).
- Command limiter (per joint, on the previous safe command q_c and its step velocity v_c), after
  ros2_control's joint_limits (joint_limits_helpers.cpp compute_position_limits /
  compute_velocity_limits: the position step bounded by the velocity limit and by the previous
  velocity plus max_acceleration*dt; the soft limiter's k_position bound):
      v_up   = min(v_max,  k_position*(soft_upper - q_c),  sqrt(2*a_brake*(soft_upper - q_c)))
      v_down = max(-v_max, -k_position*(q_c - soft_lower), -sqrt(2*a_brake*(q_c - soft_lower)))
  (a joint beyond a soft limit is led back at k_position times its excess, reached at a_cmd).
  The step velocity asked for, (q_request - q_c)/dt, is first bounded towards the request by
  |v_request| + sqrt(2*a_cmd*|q_request - q_c|) (a step is approached, not overshot), then to
  v_c +- a_cmd*dt (command acceleration), then to [v_down, v_up]; the velocity command is clipped
  to [v_down, v_up]. a_brake and a_cmd are the joint's planned acceleration limit
  (JointLimits.acceleration; a_cmd may be given larger), which every axis can give with force to
  spare for its feedback (test_hardware_hardening checks it against the drive's force, less the
  weight on the vertical axis, over the effective inertia). So a command at any
  allowed speed brakes in time to stop at the soft limit at a deceleration the axis can follow
  (before: k_position alone asked for k_position * v, ~95 m/s^2 at 0.95 m/s, of an axis that can
  give ~16, and the joint overran into its end stop). Jerk is not limited (the planner limits it;
  ros2_control's saturation limiter does not either).
- Soft limits: a measured position outside the soft range by more than the joint's
  following-error limit (the limiter could not hold it: e.g. a push stronger than the drive)
  stops every drive. A joint activated in its soft-stop band, between a soft and its hard limit
  (homed: the home switches lie there), is allowed that excess too while the limiter leads it
  back in; one activated beyond its hard limit is not.
- Following error: |q_command - q_measured| above the joint's limit stops every drive.
- Overspeed: a measured speed above `overspeed_ratio` times the velocity limit stops every drive.
- Command watchdog, armed at activation (`start`): before the first command the drives hold the
  activation pose and `startup_timeout` s without any command stops every drive ("no command since
  activation"; the drive bridge's start-up handshake decides what counts as the first command);
  after it, no fresh command for `watchdog_timeout` s: hold (the command brakes at a_brake to a
  stop, no jump); still none after `stop_timeout` s: stop every drive. A stream lost while moving
  is reported as such (the joints that were moving), also if a following error ends the hold.
  The age of the last command is the larger of two clocks: the caller's `time` (the adapter passes
  a monotonic wall clock, so a control loop that runs late still sees the commands go stale in
  real time) and the control periods counted since the command (so a clock that stops advancing
  or goes back cannot hide a stale stream). A non-finite clock value stops every drive.

Non-fatal events (a clamped command, a watchdog hold) go to a bounded, counted `EventLog`. A stop
is latched; `SafetyStopError.reason` says which joint, what and by how much.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from quirobot_control.axes.limits import JointLimits
from quirobot_control.safety.command_limiter import limit_commands, limit_commands_in_python, within_limits
from quirobot_control.safety.event_log import EventLog
from quirobot_control.safety.stop_codes import StopCode


class SafetyStopError(RuntimeError):
    """Every drive must be quick-stopped; `reason` says why, `code` (safety.stop_codes) what kind
    of stop it is (a limit of this monitor unless said otherwise)."""

    def __init__(self, reason: str, code: StopCode = StopCode.SAFETY_LIMIT) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


class SafetyMonitor:
    """Stateful checks of one hardware component (see the module docstring)."""

    def __init__(
        self,
        limits: JointLimits,
        following_error: Sequence[float],
        watchdog_timeout: float,
        stop_timeout: float,
        *,
        startup_timeout: float = math.inf,
        overspeed_ratio: float = math.inf,
        acceleration: Sequence[float] | None = None,
        log: EventLog | None = None,
    ) -> None:
        """limits: the joints' limits in the hardware's joint order (`JointLimits.from_parameters`);
        following_error (n,): m or rad per joint; watchdog_timeout, stop_timeout, startup_timeout:
        s; overspeed_ratio: measured speed / velocity limit that is a fault; acceleration (n,):
        m/s^2 or rad/s^2 each axis can give (a_cmd; default the planned limits); log: where
        events go (default a new EventLog)."""
        n = len(limits.names)
        if len(following_error) != n:
            raise ValueError(
                f"{len(following_error)} following-error limits for {n} joints ({', '.join(limits.names)})"
            )
        capability = limits.acceleration if acceleration is None else acceleration
        if len(capability) != n:
            raise ValueError(f"{len(capability)} acceleration capabilities for {n} joints")
        self.limits = limits
        self.watchdog_timeout = float(watchdog_timeout)
        self.stop_timeout = float(stop_timeout)
        self.startup_timeout = float(startup_timeout)
        self.overspeed_ratio = float(overspeed_ratio)
        self.log = log if log is not None else EventLog()
        self.stop_reason: str | None = None
        self._last_command_time: float | None = None
        self._clock_origin: float | None = None  # clock at the first cycle after activation
        self._counted_age = 0.0  # s, control periods run since the last command (or activation)
        self._holding: list[float] | None = None
        self._lost_while_moving: str | None = None  # joints moving when the stream was lost
        self._commanded_velocity = [0.0] * n  # velocity requested by the last fresh command
        self._previous: list[float] | None = None  # last safe position command
        self._step_velocity = [0.0] * n  # its step velocity (q_c - q_c_before) / dt
        self._scalars = [
            (float(a), float(b), float(c), float(d), float(e), max(float(f), float(e)))
            for a, b, c, d, e, f in zip(
                limits.soft_lower,
                limits.soft_upper,
                limits.velocity,
                limits.k_position,
                limits.acceleration,
                capability,
                strict=True,
            )
        ]
        self._soft_range = [(lower, upper) for lower, upper, *_ in self._scalars]  # filter's log
        self._following = [float(x) for x in following_error]
        self._start_excess = [0.0] * n  # m or rad beyond a soft limit at activation (start)

    @property
    def events(self) -> list[str]:
        return list(self.log.messages)

    def start(self, measured: Sequence[float]) -> None:
        """Activation: the command limiter starts from the measured positions (n,) at rest; the
        command watchdog is armed (no command yet)."""
        self._previous = [float(x) for x in measured]
        self._step_velocity = [0.0] * len(self._previous)
        # A joint that starts in its soft-stop band (between a soft and a hard limit: homed there,
        # where the home switches are) is led back by the limiter: it may be that far out, no
        # farther. Beyond a hard limit nothing is allowed.
        self._start_excess = [
            max(lower - q, q - upper, 0.0) if hard_lower <= q <= hard_upper else 0.0
            for q, (lower, upper, *_), hard_lower, hard_upper in zip(
                self._previous, self._scalars, self.limits.lower, self.limits.upper, strict=True
            )
        ]
        self._last_command_time = None
        self._clock_origin = None
        self._counted_age = 0.0
        self._holding = None

    def stop(self, reason: str) -> SafetyStopError:
        if self.stop_reason is None:
            self.stop_reason = reason
        return SafetyStopError(self.stop_reason)

    def note_command(self, time: float) -> None:
        """A fresh command arrived at `time` (s, the clock that `filter` is given)."""
        self._last_command_time = time
        self._counted_age = 0.0
        self._holding = None
        self._lost_while_moving = None

    def _command_age(self, time: float, dt: float) -> float:
        """s since the last command (since activation before the first): the larger of the clock's
        age and the periods counted since; one more period counted. Raise on a non-finite clock."""
        reference = self._last_command_time
        if reference is None:
            if self._clock_origin is None and math.isfinite(time):
                self._clock_origin = time
            reference = self._clock_origin if self._clock_origin is not None else time
        if not (math.isfinite(time) and math.isfinite(reference)):  # (else: no tuple built)
            for label, value in (("clock time", time), ("command time", reference)):
                if not math.isfinite(value):
                    raise self.stop(f"command watchdog: {label} {value} is not finite")
        age = max(time - reference, self._counted_age)
        self._counted_age += dt
        return age

    def _watchdog(self, time: float, dt: float, position, velocity, measured):
        """The command watchdog: the (position, velocity) requests to use this cycle."""
        fresh = self._counted_age == 0.0
        age = self._command_age(time, dt)
        if self._last_command_time is None:
            if age > self.startup_timeout:
                raise self.stop(
                    f"command watchdog: no command since activation {age:.3f} s ago "
                    f"(limit {self.startup_timeout} s)"
                )
            return position, velocity
        if fresh:
            self._commanded_velocity = [float(v) for v in velocity]
        elif age > 2.0 * dt and self._lost_while_moving is None:
            moving = [
                f"{name} at {v:.3g}"
                for name, v in zip(self.limits.names, self._commanded_velocity, strict=True)
                if abs(v) > 1e-9
            ]
            self._lost_while_moving = ", ".join(moving) or ""
        if age > self.stop_timeout:
            lost = (
                f" (command stream lost while {self._lost_while_moving} moved)"
                if self._lost_while_moving
                else ""
            )
            raise self.stop(
                f"command watchdog: no command for {age:.3f} s{lost} (limit {self.stop_timeout} s)"
            )
        if age <= self.watchdog_timeout:
            return position, velocity
        if self._holding is None:
            self._holding = self._stopping_points(measured)
            what = (
                f" while {self._lost_while_moving} moved: braking to a stop"
                if self._lost_while_moving
                else ""
            )
            self.log.record(
                ("command watchdog",),
                f"command watchdog: no command for {age:.3f} s at t = {time:.3f} s{what}: holding position",
            )
        return self._holding, [0.0] * len(velocity)

    def _stopping_points(self, measured: Sequence[float]) -> list[float]:
        """Where each joint stops braking at a_brake from its command's step velocity, from its
        measured position (a joint at rest holds where it is), inside the soft range."""
        points = []
        for q, v, (lower, upper, _, _, a_brake, _) in zip(
            measured, self._step_velocity, self._scalars, strict=True
        ):
            points.append(min(max(q + v * abs(v) / (2.0 * a_brake), lower), upper))
        return points

    # The per-cycle checks loop over the joints in plain Python (or C: command_limiter): for six
    # joints that is several times faster than numpy's per-call overhead.
    def filter(
        self,
        time: float,
        dt: float,
        position: Sequence[float],
        velocity: Sequence[float],
        measured: Sequence[float],
    ) -> tuple[list[float], list[float]]:
        """Safe (position, velocity) commands (n,) for this cycle, or raise SafetyStopError."""
        names = self.limits.names
        if self.stop_reason is not None:
            raise SafetyStopError(self.stop_reason)
        if not 0.0 < dt < math.inf:
            raise self.stop(f"control period {dt!r} is not a positive finite number of seconds")
        # all(map(...)) runs in C and stops at the first non-finite value, as the loop does: the
        # loop then says which (or raises what isfinite raises on a value before it).
        if not (all(map(math.isfinite, position)) and all(map(math.isfinite, velocity))):
            for label, values in (("position", position), ("velocity", velocity)):
                for j, value in enumerate(values):
                    if not math.isfinite(value):
                        raise self.stop(f"non-finite {label} command {value} for joint {names[j]}")
        position, velocity = self._watchdog(time, dt, position, velocity, measured)
        previous = self._previous if self._previous is not None else list(measured)
        # The command limiter (compiled where it was built; command_limiter: the same law).
        args = (self._scalars, previous, self._step_velocity, position, velocity, dt)
        safe = limit_commands(*args)
        safe_position, safe_velocity = safe if safe is not None else limit_commands_in_python(*args)
        for j, (soft_lower, soft_upper) in enumerate(self._soft_range):
            if position[j] < soft_lower or position[j] > soft_upper:
                bound = soft_lower if position[j] < soft_lower else soft_upper
                self.log.record(
                    ("soft limit", names[j]),
                    f"soft limit: joint {names[j]} command {position[j]:.6g} beyond {bound:.6g}, clamped",
                )
        self.log.end_cycle()
        self._previous = safe_position
        return safe_position, safe_velocity

    def check(
        self,
        command: Sequence[float],
        measured: Sequence[float],
        measured_velocity: Sequence[float] | None = None,
    ) -> None:
        """Raise SafetyStopError on a soft-limit breach, an overspeed or a following error of the
        measured state (positions, velocities (n,))."""
        if self.stop_reason is not None:
            raise SafetyStopError(self.stop_reason)
        state = (command, measured, measured_velocity)
        if within_limits(self._scalars, self._following, self._start_excess, self.overspeed_ratio, *state):
            return  # the loop below would pass (its comparisons, compiled: command_limiter)
        names = self.limits.names
        for j, (soft_lower, soft_upper, v_max, *_) in enumerate(self._scalars):
            q = measured[j]
            if not math.isfinite(q):
                raise self.stop(f"non-finite measured position of joint {names[j]}")
            allowance = self._following[j] + self._start_excess[j]
            if q < soft_lower - allowance or q > soft_upper + allowance:
                side, bound = ("lower", soft_lower) if q < soft_lower else ("upper", soft_upper)
                raise self.stop(
                    f"soft limit: joint {names[j]} at {q:.6g} is {abs(q - bound):.3g} past its soft "
                    f"{side} limit {bound:.6g}"
                )
            if measured_velocity is not None:
                v = measured_velocity[j]
                if not math.isfinite(v) or abs(v) > self.overspeed_ratio * v_max:
                    raise self.stop(
                        f"overspeed: joint {names[j]} measured velocity {v:.4g} is above "
                        f"{self.overspeed_ratio:g} times its limit {v_max:.4g}"
                    )
        for j, allowance in enumerate(self._following):
            error = abs(command[j] - measured[j])
            if error > allowance:
                lost = (
                    f"command watchdog: command stream lost while {self._lost_while_moving} moved; then "
                    if self._lost_while_moving
                    else ""
                )
                raise self.stop(
                    f"{lost}following error: joint {names[j]} is {error:.4g} from its command "
                    f"(limit {allowance:.4g})"
                )


def finite_or_nan(value: float) -> float:
    """float(value), NaN for anything not convertible (so the NaN check names it)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
