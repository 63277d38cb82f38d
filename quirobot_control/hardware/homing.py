"""Homing of the robot's axes, one after the other, in the parameter file's order (ROS-free).

`HomingSequence` runs each drive's own CiA 402 homing (drive.start_homing(): method 0x6098, speeds
0x6099, acceleration 0x609A, as the parameter file's `homing.<axis>`) in `homing.order` (the feed
retracts first, gantry_z lifts next, then the wrist turns the bit up, the horizontal axes last:
no homing motion goes towards the patient). The hardware component runs it
(`QuirobotHardware.home(time)`, once per control period, while INACTIVE); it refuses motion until
every drive reports homed.

Steps:
  1. every drive: set_mode(CSP), enable(): each holds where it is under its own PID, so no axis
     hangs on its brake while the others home (a brake may creep under a constant load; the
     drive's integrator does not); every period the sequence sends each drive not homing its
     held position (command_position), which feeds its master watchdog: if the host dies, every
     drive not homing stops itself (category 1) after drive.master_timeout;
  2. per axis in the order: that drive changes to HOMING without letting go (disable(), the
     disable's ramp holds under power, set_mode(HOMING), enable() takes over bumplessly), then
     start_homing(), and the sequence waits for DriveFeedback.homed, holding the command every
     period (start_homing() again: the run goes on, CiA 402 controlword bit 4 kept set), which
     feeds that drive's master watchdog too: if the host dies mid-homing the homing drive stops
     itself after drive.master_timeout like the others, wherever its run is. Once homed it changes
     back to CSP the same way and holds its home position like the others. A drive that faults,
     stops or takes longer than its allowance fails the sequence;
  3. hand-over, every drive at once: quick_stop() at standstill, a category 1 stop that brakes
     each axis under power before its inverter goes off (disable() would switch off at once and
     let a vertical axis fall for drive.brake_engage_time until its brake holds); once every
     drive reports its stop complete (DriveFeedback.stopping False: brake holding, inverter off;
     a drive still stopping after the hand-over time fails the sequence), the stop, which the
     sequence itself commanded, is cleared (reset_fault: no fault is involved) and each drive is
     set to the operating mode (CSP or CST): disabled, braked, homed, ready for on_activate.
An axis whose drive already reports homed (an absolute encoder) is not homed again unless it is
listed in `rehome`. The sequence never resets a fault it did not cause: a drive in FAULT fails it.

Time allowance per axis (drives.drive_control.homing_time_allowance): twice the time to cross the
axis's whole travel at the search speed plus the time to leave the switch at the zero speed over
the stopping distance, plus one second (computed from the parameter file: a homing that has not
ended by then has lost its switch). The sequence's time is the caller's clock (s): a time that is
not a finite number, or earlier than the previous step's, fails the sequence (HomingError naming
it): a NaN never exceeds an allowance, and a clock gone back would give the run more time.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from quirobot_control.drives.drive_control import axis_travel, homing_time_allowance
from quirobot_control.drives.interface import Drive, DriveMode, DriveState
from quirobot_description.parameters import RobotParameters


class HomingError(RuntimeError):
    """The homing sequence failed (named axis and reason); every drive must stop."""


class _Step(enum.Enum):
    ENABLE = "enable"
    HOMING = "homing"
    HANDOVER = "hand-over"
    DONE = "done"


@dataclass(frozen=True)
class HomingProgress:
    """Where the sequence is: `axis` homing now (None when done), the axes homed and left."""

    axis: str | None
    step: str  # enable, homing, hand-over or done
    homed: tuple[str, ...]
    remaining: tuple[str, ...]

    @property
    def done(self) -> bool:
        return self.step == _Step.DONE.value


class HomingSequence:
    """Homes `drives` (axis name -> Drive) in `order`; `step(time)` once per control period."""

    def __init__(
        self,
        drives: dict[str, Drive],
        order: tuple[str, ...],
        operating_mode: DriveMode,
        *,
        allowance: dict[str, float],
        handover_time: float,
        rehome: frozenset[str] = frozenset(),
    ) -> None:
        """order: every axis of `drives` once; allowance: s per axis; handover_time: s the
        hand-over stop is given to brake the axis (>= the brakes' engage time)."""
        missing = [name for name in drives if name not in order]
        if missing:
            raise HomingError(f"the homing order does not list {', '.join(missing)}")
        self.drives = drives
        self.operating_mode = operating_mode
        self.allowance = allowance
        self.handover_time = handover_time
        self._queue = [
            name for name in order if name in drives and (name in rehome or not drives[name].feedback().homed)
        ]
        self._homed: list[str] = [name for name in order if name in drives and name not in self._queue]
        self._step = _Step.ENABLE if self._queue else _Step.DONE  # nothing to home: nothing moves
        self._since: float | None = None  # time the current step started
        self._time: float | None = None  # the previous step's time (s): time never goes back
        self._hold: dict[str, float] = {}  # position each drive not homing holds (CSP), m or rad

    @property
    def progress(self) -> HomingProgress:
        homing = self._step is _Step.HOMING and bool(self._queue)
        return HomingProgress(
            axis=self._queue[0] if homing else None,
            step=self._step.value,
            homed=tuple(self._homed),
            remaining=tuple(self._queue[1:] if homing else self._queue),
        )

    def step(self, time: float) -> HomingProgress:
        """One control period at `time` (s); raises HomingError naming the axis on a failure, or
        the time if it is not a finite number or earlier than the previous step's."""
        if self._step is _Step.DONE:
            return self.progress
        self._check_time(time)
        if self._step is _Step.ENABLE:
            for name, drive in self.drives.items():
                drive.set_mode(DriveMode.CSP)
                drive.enable()
                self._hold[name] = drive.feedback().position
            self._step = _Step.HOMING
            self._since = None
            self._command_holds()
            return self.progress
        for name, drive in self.drives.items():
            feedback = drive.feedback()
            if feedback.state is DriveState.FAULT or (
                self._step is _Step.HOMING and feedback.state is not DriveState.ENABLED
            ):
                why = f": {feedback.fault}" if feedback.fault else ""
                raise HomingError(f"homing {name}: the drive is {feedback.state.value}{why}")
        if self._step is _Step.HOMING:
            if not self._queue:
                for drive in self.drives.values():
                    drive.quick_stop()  # category 1 at standstill: brake under power, then off
                self._step, self._since = _Step.HANDOVER, time
                return self.progress
            name = self._queue[0]
            drive = self.drives[name]
            if self._since is None:
                self._change_mode(drive, DriveMode.HOMING)
                drive.start_homing()
                self._since = time
            elif drive.feedback().homed:
                self._change_mode(drive, DriveMode.CSP)
                self._hold[name] = drive.feedback().position
                self._homed.append(self._queue.pop(0))
                self._since = None
            elif time - self._since > self.allowance[name]:
                raise HomingError(
                    f"homing {name}: not homed after {time - self._since:.1f} s "
                    f"(allowance {self.allowance[name]:.1f} s): home switch not found"
                )
            else:
                drive.start_homing()  # the run goes on: its command held (feeds its watchdog)
            self._command_holds()
            return self.progress
        # Hand-over: every axis brakes under power; once every stop is complete, off, in the
        # operating mode.
        stopping = [name for name, drive in self.drives.items() if drive.feedback().stopping]
        if stopping:
            if time - self._since > self.handover_time:
                raise HomingError(
                    f"homing hand-over: {', '.join(stopping)} still stopping "
                    f"{time - self._since:.3f} s after the stop (allowed {self.handover_time:.3f} s)"
                )
            return self.progress
        for drive in self.drives.values():
            drive.reset_fault()  # clears the hand-over stop this sequence commanded, not a fault
            drive.set_mode(self.operating_mode)
        self._step = _Step.DONE
        return self.progress

    def _check_time(self, time: float) -> None:
        """HomingError unless `time` (s) is a finite number no earlier than the previous step's."""
        axis = self._queue[0] if self._queue else "hand-over"
        try:
            value = float(time)
        except (TypeError, ValueError):
            raise HomingError(f"homing {axis}: time must be a number of seconds, got {time!r}") from None
        if not math.isfinite(value):
            raise HomingError(f"homing {axis}: time must be a finite number of seconds, got {time!r}")
        if self._time is not None and value < self._time:
            raise HomingError(
                f"homing {axis}: time went back from {self._time!r} s to {value!r} s (it must not go back)"
            )
        self._time = value

    def _command_holds(self) -> None:
        """Every drive not homing now holds its position (CSP): the command feeds its watchdog."""
        homing = self._queue[0] if self._since is not None and self._queue else None
        for name, drive in self.drives.items():
            if name != homing:
                drive.command_position(self._hold[name], 0.0, 0.0)

    @staticmethod
    def _change_mode(drive: Drive, mode: DriveMode) -> None:
        """Change an enabled drive's mode without letting go: the disable's ramp holds under
        power, the new mode is set during it and enable() takes over bumplessly."""
        drive.disable()
        drive.set_mode(mode)
        drive.enable()


def homing_sequence(
    params: RobotParameters,
    drives: dict[str, Drive],
    operating_mode: DriveMode,
    *,
    rehome: frozenset[str] = frozenset(),
) -> HomingSequence:
    """The parameter file's homing (order, per-axis allowance) of `drives` (axis -> Drive)."""
    allowance = {
        name: homing_time_allowance(params.homing[name], *axis_travel(params, name)) for name in drives
    }
    # The quick stop at standstill commands the brake and keeps holding under power until it
    # holds (drive.brake_engage_time); twice that plus ten control periods leaves the drive's
    # standstill detection its time.
    handover = 2.0 * params.drive.brake_engage_time + 10.0 / params.drive.control_rate
    return HomingSequence(
        drives,
        params.homing_order,
        operating_mode,
        allowance=allowance,
        handover_time=handover,
        rehome=rehome,
    )
