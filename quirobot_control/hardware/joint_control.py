"""One joint of the hardware component and its control law, and the loops over every drive.

`JointControl` holds a joint's `Drive`, its `PID`, its current gain and limits, its state and
command interfaces; `command()` is the per-cycle law:

Currents: i = PID(position, velocity) + (effort_ff, or M_eff*a_ff without it) / K_i, with
K_i = K_T * ratio * efficiency, saturated at the drive's current limit (CST: the PID runs here;
CSP: the drive's PID closes the loop and the host sends the safe target, its velocity and this
current feed-forward, plus the holding current found at activation).

Effort limits: each joint's current is bounded by min(drive current limit, URDF effort limit /
K_i), the feed-forward effort by the effort limit (a finite but absurd feed-forward cannot
command the full current).

`on_every_drive` is the one "try every drive, collect the failures" loop: a drive that raises
never keeps the others from being stopped, disabled, halted or reset.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from quirobot_control.drives.interface import Drive, DriveFeedback, DriveState
from quirobot_control.drives.pid import PID
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.safety.motion_monitor import SafetyStopError
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import RobotParameters

_ENABLED = DriveState.ENABLED


class CommandError(ValueError):
    """A command that is not a number, or arrays of the wrong shape."""


@dataclass
class JointControl:
    """One joint: its drive, PID, current gain (N/A or N*m/A), effective inertia (kg or kg*m^2),
    effort limit, state and command interfaces and feed-forward inputs."""

    name: str
    drive: Drive
    pid: PID
    current_gain: float  # N/A or N*m/A
    effective_inertia: float
    effort_limit: float  # N or N*m, the URDF's <limit effort>
    state: dict[str, float] = field(default_factory=lambda: {"position": 0.0, "velocity": 0.0, "effort": 0.0})
    command: dict[str, float] = field(default_factory=lambda: {"position": math.nan, "velocity": 0.0})
    acceleration: float | None = None
    effort_ff: float | None = None
    load_ff: float = 0.0  # N or N*m: a known process load fed forward (set_load_feedforward)
    last_velocity_command: float = 0.0
    homed: bool = True  # the drive's last report (DriveFeedback.homed)
    holding_current: float = 0.0  # A, CSP: the gravity load at activation, fed forward
    current_command: float = 0.0  # A, CST: the PID's output; CSP: the current feed-forward

    @classmethod
    def for_axis(
        cls, name: str, drive: Drive, params: RobotParameters, control: ControlConfig
    ) -> JointControl:
        """The joint `name` on `drive`: its PID at control.dt with the output limited to the
        effort limit over K_i as well as the drive's current limit."""
        settings = control.joint(name)
        gain = current_gain(params, name)
        limit = effort_limit(params, name)
        gains = replace(settings.gains, output_limit=min(settings.gains.output_limit, limit / gain))
        return cls(name, drive, PID(gains, control.dt), gain, settings.effective_inertia, limit)

    @property
    def acceleration_capability(self) -> float:
        """m/s^2 or rad/s^2: the largest force the drive may give over the effective inertia."""
        return self.pid.gains.output_limit * self.current_gain / self.effective_inertia

    def sample(self) -> DriveFeedback:
        """The drive's feedback, copied to the joint's state interfaces and homed flag."""
        try:
            feedback = self.drive.feedback()
        except Exception as error:  # noqa: BLE001 - named, then every drive stops
            raise SafetyStopError(f"feedback of {self.name} failed: {error}", StopCode.DRIVE_FAULT) from error
        state = self.state
        state["position"] = feedback.position
        state["velocity"] = feedback.velocity
        state["effort"] = feedback.effort
        self.homed = feedback.homed
        return feedback

    def store(self, interface: str, value: float) -> None:
        """One command interface (position, velocity) or feed-forward (acceleration, effort)."""
        if interface in ("position", "velocity"):
            self.command[interface] = value
        elif interface == "acceleration":
            self.acceleration = value
        else:
            self.effort_ff = value

    def command_drive(
        self, position: float, velocity: float, measured: float, period: float, cst: bool
    ) -> None:
        """The control law for one cycle: the safe `position` (m or rad) and `velocity` (m/s or
        rad/s) with the feed-forward -> a current (CST) or a position with its velocity and
        current feed-forward (CSP) to the drive; a drive that raises is a SafetyStopError."""
        acceleration = self.acceleration
        if acceleration is None:
            acceleration = (velocity - self.last_velocity_command) / period
        self.last_velocity_command = velocity
        effort = self.effort_ff
        if effort is None:
            effort = self.effective_inertia * acceleration
        # min(max(effort + load_ff, -limit), limit) as comparisons (what min and max do, without
        # their calls): NaN passes through as with them.
        limit = self.effort_limit
        effort = effort + self.load_ff
        if -limit > effort:
            effort = -limit
        if limit < effort:
            effort = limit
        try:
            if cst:
                current = self.pid.update(position, measured, velocity, effort / self.current_gain)
                self.current_command = current
                self.drive.command_current(current)
            else:
                # CSP: the drive's PID closes the loop; the host sends the safe target, its
                # velocity (0x60B1) and the current feed-forward (0x60B2), within the limit.
                limit = self.pid.gains.output_limit
                current = self.holding_current + effort / self.current_gain
                if -limit > current:  # min(max(current, -limit), limit), as above
                    current = -limit
                if limit < current:
                    current = limit
                self.current_command = current
                self.drive.command_position(position, velocity, current)
        except Exception as error:  # noqa: BLE001 - named, then every drive stops
            raise SafetyStopError(f"command to {self.name} failed: {error}", StopCode.DRIVE_FAULT) from error

    def feed_watchdog(self, position: float, cst: bool) -> None:
        """While held: the drive ignores commands, but its master watchdog wants one every cycle:
        the held pose (CSP) or no current (CST)."""
        try:
            if cst:
                self.drive.command_current(0.0)
            else:
                self.drive.command_position(position, 0.0, 0.0)
        except Exception as error:  # noqa: BLE001 - named, then every drive stops
            raise SafetyStopError(f"command to {self.name} failed: {error}", StopCode.DRIVE_FAULT) from error


def on_every_drive(joints: Iterable[JointControl], action: Callable[[Drive], object], what: str) -> list[str]:
    """`action(drive)` on every joint's drive, whatever the others do; the failures, each
    "<what> failed: <error>" with `what` formatted with the joint's name ({joint})."""
    failures = []
    for joint in joints:
        try:
            action(joint.drive)
        except Exception as error:  # noqa: BLE001 - every other drive must still get it
            failures.append(f"{what.format(joint=joint.name)} failed: {error}")
    return failures


def drive_faults(joints: Iterable[JointControl]) -> list[str]:
    """Feedback -> state interfaces; the faults: every drive not ENABLED (the state commanded
    while active), by name and state, and every drive that lost its home reference."""
    faults = []
    for joint in joints:
        feedback = joint.sample()
        if feedback.state is _ENABLED and feedback.homed:  # each cycle's case: no fault
            continue
        if not feedback.homed:
            faults.append(f"drive {joint.name} lost its home reference: it must home again")
        if feedback.state is DriveState.FAULT:
            faults.append(f"drive fault on {joint.name}: {feedback.fault}")
        elif feedback.state is not DriveState.ENABLED:
            faults.append(f"drive {joint.name} left Operation enabled: it is {feedback.state.value}")
    return faults


def unconfirmed_stops(joints: Iterable[JointControl]) -> list[str]:
    """The joints whose drive does not (yet) report QUICK_STOP or FAULT itself (or cannot say):
    a state only the host holds (DriveFeedback.confirmed False) is not a confirmed stop."""
    unconfirmed = []
    for joint in joints:
        try:
            feedback = joint.drive.feedback()
        except Exception:  # noqa: BLE001 - a drive that cannot answer is not confirmed
            feedback = None
        if (
            feedback is None
            or feedback.state not in (DriveState.QUICK_STOP, DriveState.FAULT)
            or not feedback.confirmed
        ):
            unconfirmed.append(joint.name)
    return unconfirmed


def stops_in_progress(joints: Iterable[JointControl]) -> list[str]:
    """The drives whose stop is not complete, each with why (ramping or braking, not confirmed
    by the drive, no feedback)."""
    pending = []
    for joint in joints:
        try:
            feedback = joint.drive.feedback()
        except Exception as error:  # noqa: BLE001 - a drive that cannot answer is not known stopped
            pending.append(f"{joint.name} (no feedback: {error})")
            continue
        if feedback.stopping:
            pending.append(f"{joint.name} (ramping or braking)")
        elif not feedback.confirmed:
            pending.append(f"{joint.name} (its stop not confirmed by the drive)")
    return pending


def command_number(value: object, interface: str, joint: str) -> float:
    """float(value) (NaN and inf kept: the safety layer names them), else CommandError."""
    if isinstance(value, str | bytes) or value is None:
        raise CommandError(f"{interface} command {value!r} for joint {joint} is not a number")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise CommandError(f"{interface} command {value!r} for joint {joint} is not a number") from error


def check_period(period: object) -> None:
    """SafetyStopError unless `period` is a positive finite number of seconds."""
    try:
        value = math.nan if isinstance(period, str | bytes) else float(period)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 < value < math.inf:
        raise SafetyStopError(f"control period {period!r} is not a positive finite number of seconds")


def current_gain(params: RobotParameters, name: str) -> float:
    """K_T * ratio * efficiency (N/A or N*m/A) of a joint or of a tool's axis (the drill feed)."""
    source = params.axis(name)
    return source.motor.torque_constant * source.transmission.ratio * source.transmission.efficiency


def effort_limit(params: RobotParameters, name: str) -> float:
    """The URDF's <limit effort> (N or N*m) of a joint or of the drill feed."""
    return params.axis(name).effort_limit
