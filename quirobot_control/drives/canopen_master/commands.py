"""The CANopen drive's modes and setpoints: CST current, CSP position, homing.

A setpoint is checked (a number, finite: else quick stop and DriveError; the drive's mode; FAULT
refuses it, DISABLED and QUICK_STOP ignore it), packed into the preallocated RPDO frames and sent
at once, or at the bus owner's flush_setpoints() just before its SYNC (`defer_setpoints`).
"""

from __future__ import annotations

import contextlib
import math

import can

from quirobot_control.drives.canopen_master.core import (
    COMMUNICATION_ERRORS,
    RPDO1_LAYOUT,
    RPDO2_LAYOUT,
)
from quirobot_control.drives.canopen_units import CanopenConfigurationError
from quirobot_control.drives.cia402 import (
    CW_ENABLE_OPERATION,
    CW_HALT,
    CW_HOMING_START,
)
from quirobot_control.drives.interface import DriveError, DriveMode, DriveState


class CanopenDriveCommands:
    """Setpoints (command_current, command_position), the mode, and the drive's homing run.

    A part of `CanopenDrive` (quirobot_control.drives.canopen_master): its state is set up in
    `CanopenDrive.__init__`.
    """

    def command_current(self, current: float) -> None:
        """CST: send the q-axis current reference (A) as target torque 0x6071 in RPDO1.

        Clipped to +-max_current, then quantized to one per-mille of the rated torque.
        Non-finite or not a number: quick stop, then DriveError. In another mode or in FAULT:
        DriveError. While DISABLED or QUICK_STOP the command is ignored (nothing is sent).
        """
        (value,) = self._numbers("current", current)
        self._check_mode(DriveMode.CST, "command_current")
        if self._commandable():
            self._torque = (self.scaling.target_torque(self._clip(value)), 0)
            RPDO1_LAYOUT.pack_into(self._rpdo1_frame.data, 0, self._operation_controlword(), *self._torque)
            self._setpoint(self._cst_frames)

    def command_position(self, position: float, velocity: float = 0.0, current: float = 0.0) -> None:
        """CSP: target position 0x607A (m or rad) and velocity offset 0x60B1 (m/s or rad/s) in
        RPDO2, the current feed-forward (A, clipped to +-max_current) as torque offset 0x60B2 in
        RPDO1; the drive's PID follows them from the next SYNC.

        Non-finite or not a number: quick stop, then DriveError. In another mode or in FAULT:
        DriveError. While DISABLED or QUICK_STOP the command is ignored (nothing is sent).
        """
        position, velocity, current = self._numbers(
            "position command", position, velocity, current, labels=("position", "velocity", "current")
        )
        self._check_mode(DriveMode.CSP, "command_position")
        if not self._commandable():
            return
        try:
            counts = self.units.counts(position), self.units.counts(velocity)
        except CanopenConfigurationError as error:
            self.quick_stop()
            raise DriveError(f"{self._who()}: {error}: quick stop") from error
        self._torque = (0, self.scaling.target_torque(self._clip(current)))
        RPDO2_LAYOUT.pack_into(self._rpdo2_frame.data, 0, *counts)
        RPDO1_LAYOUT.pack_into(self._rpdo1_frame.data, 0, self._operation_controlword(), *self._torque)
        self._setpoint(self._csp_frames)

    def _setpoint(self, frames: tuple[can.Message, ...]) -> None:
        """Send the packed setpoint frames now, or leave them to flush_setpoints (defer_setpoints)."""
        self._commands += 1
        if self.defer_setpoints:
            self._pending = frames
            return
        self._pending = ()
        for frame in frames:
            self._transmit(frame)

    def flush_setpoints(self) -> int:
        """Send the setpoint frames packed since the last flush (defer_setpoints), if the drive is
        still ENABLED; the number of frames sent. The bus owner calls it just before its SYNC."""
        frames, self._pending = self._pending, ()
        if not frames or self._state() is not DriveState.ENABLED:
            return 0
        for frame in frames:
            self._transmit(frame)
        return len(frames)

    @property
    def setpoint_commands(self) -> int:
        """Setpoint commands (command_position / command_current) accepted since construction."""
        return self._commands

    @property
    def mode(self) -> DriveMode:
        return self._mode

    def set_mode(self, mode: DriveMode) -> None:
        """Modes of operation 0x6060 (checked in 0x6061); DriveError while ENABLED."""
        mode = DriveMode(mode)
        if self._state() is DriveState.ENABLED:
            raise DriveError(
                f"{self._who()}: the mode changes only while not enabled ({self._mode.name} -> {mode.name})"
            )
        if self._started and mode is not self._mode:
            try:
                self._write_mode(mode)
            except COMMUNICATION_ERRORS as error:
                raise DriveError(f"{self._who()}: mode {mode.name} not set: {error}") from error
        self._mode = mode
        self._homing_started = False

    def start_homing(self) -> None:
        """Run the drive's homing (HOMING mode, ENABLED): controlword bit 4 by RPDO; `homed` once
        the statusword reports homing attained (bit 12), FAULT on a homing error (bit 13). Called
        again while the run is in progress (the homing sequence holds its command every period):
        the run goes on and nothing is sent (the drive keeps bit 4 set as received; a new rising
        edge would restart it; its watchdog on the master is the bus's SYNC and heartbeat)."""
        self._check_mode(DriveMode.HOMING, "start_homing")
        if self.homing is None:
            raise DriveError(f"{self._who()}: no homing configured for this axis")
        self._check_watchdog()
        state = self._state()
        if state is not DriveState.ENABLED:
            raise DriveError(f"{self._who()} is {state.name}: homing needs the drive enabled")
        with self._mutex:
            if self._homing_started and not self._homed:
                return  # the run in progress goes on
            self._homed = False
            self._homing_started = True
        self._send_rpdo(CW_ENABLE_OPERATION, 0)  # bit 4 low first: the start is its rising edge
        self._send_rpdo(CW_ENABLE_OPERATION | CW_HOMING_START, 0)

    def _numbers(self, what: str, *values: object, labels: tuple[str, ...] = ()) -> tuple[float, ...]:
        """The command's values as floats; not a number or non-finite: quick stop, DriveError."""
        with contextlib.suppress(TypeError, ValueError):  # the per-cycle case: finite numbers
            numbers = tuple(map(float, values))
            if math.isfinite(sum(numbers)):  # a sum of finite floats may overflow: checked below
                return numbers
        out = []
        for k, value in enumerate(values):
            label = labels[k] if labels else what
            try:
                number = float(value)
            except (TypeError, ValueError) as error:
                self.quick_stop()
                raise DriveError(f"{self._who()}: {label} command must be a number, got {value!r}") from error
            if not math.isfinite(number):
                self.quick_stop()
                raise DriveError(f"{self._who()}: non-finite {label} command {value!r}: quick stop")
            out.append(number)
        return tuple(out)

    def _check_mode(self, mode: DriveMode, command: str) -> None:
        if self._mode is not mode:
            raise DriveError(
                f"{self._who()}: {command} is a {mode.name} command, the drive is in {self._mode.name} "
                f"(set_mode({mode.name}) while disabled)"
            )

    def _commandable(self) -> bool:
        """True if ENABLED (send); False if DISABLED or QUICK_STOP (ignore); FAULT: DriveError."""
        self._check_watchdog()
        state = self._state()
        if state is DriveState.FAULT:
            raise DriveError(f"{self._who()} is in FAULT ({self._fault_reason()}): command refused")
        return state is DriveState.ENABLED

    def _clip(self, current: float) -> float:
        limit = self.motor.max_current
        return min(max(current, -limit), limit)

    def _operation_controlword(self) -> int:
        return CW_ENABLE_OPERATION | (CW_HALT if self._halted else 0)
