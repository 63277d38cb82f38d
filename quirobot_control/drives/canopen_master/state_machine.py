"""The CANopen drive's CiA 402 state machine as the `Drive` protocol drives it.

enable() steps Switch on disabled -> Ready to switch on -> Switched on -> Operation enabled by
SDO, each confirmed by the statusword; disable() goes back to Switched on (the drive ramps and
holds until its brake holds); quick_stop() is a RPDO only (a stop never waits on SDO) and is
latched; reset_fault() clears a fault or a quick stop once the drive reports its stop complete,
configuring a restarted node again first; halt() and resume() set and clear controlword bit 8.
"""

from __future__ import annotations

import logging
import time

from quirobot_control.drives.canopen_master.core import (
    COMMUNICATION_ERRORS,
    STOPPING_STATES,
)
from quirobot_control.drives.cia402 import (
    CW_DISABLE_VOLTAGE,
    CW_ENABLE_OPERATION,
    CW_FAULT_RESET,
    CW_QUICK_STOP,
    CW_SHUTDOWN,
    CW_SWITCH_ON,
    TARGET_POSITION,
    TARGET_TORQUE,
    VELOCITY_OFFSET,
    Cia402State,
)
from quirobot_control.drives.interface import DriveError, DriveMode, DriveState

logger = logging.getLogger(__name__)


class CanopenDriveStateMachine:
    """enable, disable, quick_stop, reset_fault, halt, resume.

    A part of `CanopenDrive` (quirobot_control.drives.canopen_master): its state is set up in
    `CanopenDrive.__init__`.
    """

    def enable(self) -> None:
        """Shutdown -> Switch on -> Enable operation (by SDO, each confirmed by the statusword).

        No-op if ENABLED; DriveError in QUICK_STOP or FAULT (reset_fault() first) or if the drive
        does not follow a step's command within canopen.transition_timeout of it.
        """
        if not self._started:
            self.start()
        self._wait_for_first_feedback()
        self._check_watchdog()
        state = self._state()
        if state in (DriveState.QUICK_STOP, DriveState.FAULT):
            reason = f" ({self._fault_reason()})" if state is DriveState.FAULT else ""
            raise DriveError(f"{self._who()} is in {state.name}{reason}: call reset_fault() before enable()")
        if state is DriveState.ENABLED:
            return
        if self._mode is not DriveMode.CST and self._gains is None:
            raise DriveError(
                f"{self._who()}: {self._mode.name} needs the drive's position loop: call "
                f"configure_position_loop() before enable()"
            )
        try:
            self.node.sdo[TARGET_TORQUE].raw = 0
            with self._mutex:
                here = self._position_counts
            self.node.sdo[TARGET_POSITION].raw = here  # CSP starts where the axis is
        except COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: cannot zero the targets 0x6071/0x607A: {error}") from error
        self._halted = False
        self._torque = (0, 0)
        with self._mutex:
            self._homing_started = False  # a run ends when the drive leaves Operation enabled
        if self._started:
            self.node.rpdo[2][TARGET_POSITION].raw = here
            self.node.rpdo[2][VELOCITY_OFFSET].raw = 0
        steps = {
            Cia402State.SWITCH_ON_DISABLED: CW_SHUTDOWN,
            Cia402State.READY_TO_SWITCH_ON: CW_SWITCH_ON,
            Cia402State.SWITCHED_ON: CW_ENABLE_OPERATION,
        }
        deadline = time.monotonic() + self.bus.transition_timeout
        commanded: Cia402State | None = None  # state in which the last step command was written
        while True:
            current = self._read_state()
            if current is Cia402State.OPERATION_ENABLED:
                return
            if current in (Cia402State.FAULT, Cia402State.FAULT_REACTION_ACTIVE):
                raise DriveError(f"{self._who()} faulted while enabling ({self._fault_reason_read()})")
            if current is Cia402State.QUICK_STOP_ACTIVE:
                raise DriveError(f"{self._who()} is in Quick stop active: call reset_fault() before enable()")
            if current in steps and current is not commanded:  # else: written, poll until it follows
                self._write_controlword(steps[current])
                commanded = current
                # The drive's time to follow runs from each command: an SDO answer lost before it
                # (a retry after RESPONSE_TIMEOUT) is the bus's delay, not the drive's.
                deadline = time.monotonic() + self.bus.transition_timeout
            elif time.monotonic() > deadline:
                raise DriveError(
                    f"{self._who()} did not reach Operation enabled within "
                    f"{self.bus.transition_timeout} s of its command: it is in {current.value}"
                )

    def disable(self) -> None:
        """ENABLED -> DISABLED (Disable operation 0x07, to Switched on: with 0x605C = 1 the drive ramps,
        holds under power until its brake holds, then switches off; Disable voltage would drop a
        vertical axis until the brake holds). QUICK_STOP and FAULT stay latched."""
        self._check_watchdog()
        if self._state() is DriveState.ENABLED:
            self._write_controlword(CW_SWITCH_ON)
            self._read_state()

    def quick_stop(self) -> None:
        """Quick stop (stop category 1): the drive ramps down at its quick-stop deceleration
        0x6085 under its own PID, brakes at standstill and switches off (0x605A = 2); latched as
        QUICK_STOP until reset_fault().

        Sent by RPDO only (no SDO: it returns at once, see the module doc); the TPDO statusword
        confirms it. A RPDO the bus refuses is a fault. A FAULT is kept as it is.
        """
        self._controlword = CW_QUICK_STOP
        try:
            self._send_rpdo(CW_QUICK_STOP, 0)
        except DriveError:
            return  # latched as a fault by _send_rpdo
        if self._state() is DriveState.FAULT:
            return
        if not self._quick_stop_latched:
            self._quick_stop_time = self.clock()
        self._quick_stop_latched = True

    def reset_fault(self) -> None:
        """FAULT or QUICK_STOP -> DISABLED: CiA 402 fault reset (rising edge of bit 7) or Disable voltage.

        No-op otherwise. Re-arms the feedback watchdog. DriveError if the drive does not answer
        or stays faulted (the cause persists), and, with nothing sent, while the drive reports its
        stop still in progress (Quick stop active, Fault reaction active) or still Operation
        enabled (the quick stop did not reach it: sent again). A node that restarted (boot-up
        frame, or its stop configuration read back changed) is configured again as at start()
        before its fault is cleared; enable() then waits for its first TPDOs.
        """
        if self._state() not in (DriveState.FAULT, DriveState.QUICK_STOP):
            return
        state = self._read_state()
        if state in STOPPING_STATES or state is Cia402State.OPERATION_ENABLED:
            # Disable voltage now would switch the power stage off mid-ramp (CiA 402 transition
            # 12): refused until the drive reports its stop complete. Operation enabled: the stop
            # has not reached it; it is sent again.
            if state is Cia402State.OPERATION_ENABLED:
                self._send_rpdo(CW_QUICK_STOP, 0, best_effort=True)
            raise DriveError(
                f"{self._who()}: stop still in progress (the drive reports {state.value}): fault "
                "reset refused until it is at standstill with its brake holding"
            )
        if state is Cia402State.FAULT:
            self._write_controlword(CW_DISABLE_VOLTAGE)
            self._write_controlword(CW_FAULT_RESET)
        self._write_controlword(CW_DISABLE_VOLTAGE)
        deadline = time.monotonic() + self.bus.transition_timeout
        while (state := self._read_state()) is not Cia402State.SWITCH_ON_DISABLED:
            if time.monotonic() > deadline:
                raise DriveError(
                    f"{self._who()}: fault reset did not reach Switch on disabled within "
                    f"{self.bus.transition_timeout} s: it is in {state.value} ({self._fault_reason_read()})"
                )
        with self._mutex:
            reconfigure = self._rebooted
        if reconfigure or self._configuration_lost():
            reconfigure = True
            # The node restarted: its PDOs, stop options and heartbeat watch are gone, and a quick
            # stop by RPDO would not reach it. Configured again (the fault stays latched if that
            # fails); the feedback watchdog re-arms at its first TPDOs, which enable() waits for.
            self._configure_node("reconfiguration after a restart")
            logger.warning("%s: reconfigured after a restart", self._who())
        now = self.clock()
        with self._mutex:
            self._master_fault = None
            self._drive_fault_text = None
            self._emcy_fault = False
            self._quick_stop_latched = False
            self._quick_stop_time = None
            if not reconfigure:
                self._tpdo_times = [now, now]
        logger.info("%s: fault reset", self._who())

    def halt(self) -> None:
        """Stop category 2: controlword bit 8 by RPDO; the drive ramps down at 0x6085 and holds
        under power (state stays ENABLED, feedback `halted`). No-op unless ENABLED."""
        if self._state() is DriveState.ENABLED:
            self._halted = True
            self._send_rpdo(self._operation_controlword(), *self._torque)

    def resume(self) -> None:
        """Leave a halt: bit 8 cleared; the drive follows the commands again from where it holds
        (send a target near the held position). DriveError in QUICK_STOP or FAULT."""
        state = self._state()
        if state in (DriveState.QUICK_STOP, DriveState.FAULT):
            raise DriveError(f"{self._who()} is in {state.name}: resume() refused (reset_fault() first)")
        if self._halted and state is DriveState.ENABLED:
            self._halted = False
            self._send_rpdo(self._operation_controlword(), *self._torque)
        self._halted = False
