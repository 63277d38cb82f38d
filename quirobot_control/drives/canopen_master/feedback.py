"""The CANopen drive's feedback: TPDO, EMCY and heartbeat reception, the feedback watchdog,
the fault's reason and `feedback()`.

The network thread's callbacks store the latest TPDO values under the drive's lock and time-stamp
them with the drive's clock; an EMCY with a non-zero code or a boot-up frame from a started node
is a fault at once. The watchdog (`_check_watchdog`, run by every command and every feedback
read) latches "feedback timeout" when the TPDOs stop, and a quick stop still not confirmed after
canopen.feedback_timeout.
"""

from __future__ import annotations

import logging

import canopen

from quirobot_control.drives.canopen_master.core import (
    COMMUNICATION_ERRORS,
    STOPPING_STATES,
    TPDO1_LAYOUT,
    TPDO2_LAYOUT,
    decode_statusword_cached,
)
from quirobot_control.drives.cia402 import (
    CW_QUICK_STOP,
    ERROR_CODE,
    POSITION_LOST_ERROR_CODES,
    STATUSWORD_PATTERNS,
    SW_HOMING_ATTAINED,
    SW_HOMING_ERROR,
    Cia402State,
    StatuswordError,
    decode_statusword,
    describe_error_code,
)
from quirobot_control.drives.interface import DriveError, DriveFeedback, DriveMode, DriveState

logger = logging.getLogger(__name__)

#: NMT heartbeat state of a boot-up frame (CiA 301).
NMT_BOOT_UP = 0

#: EMCY entries a drive keeps, the latest (its `emcy_log`, and canopen's own `node.emcy.log` and
#: `active`, which canopen grows by one per frame without bound: 44 MB per 100,000 frames): a
#: babbling node cannot fill the memory; `emcy_count` counts every one.
EMCY_LOG_LIMIT = 1000
#: s (the drive's clock) between two EMCY warnings of one drive with the same error code: a flood
#: is one line a second, saying how many came since the last; a new code is warned at once.
EMCY_WARNING_INTERVAL = 1.0


class CanopenDriveFeedback:
    """TPDO / EMCY / heartbeat reception, the feedback watchdog and the drive's feedback.

    A part of `CanopenDrive` (quirobot_control.drives.canopen_master): its state is set up in
    `CanopenDrive.__init__`.
    """

    def _on_tpdo1(self, can_id: int, data: bytes, timestamp: float) -> None:
        if len(data) < TPDO1_LAYOUT.size:
            return  # too short for the mapping: not a feedback frame (the watchdog sees none)
        statusword, position = TPDO1_LAYOUT.unpack_from(data)
        now = self.clock()
        with self._mutex:
            self._statusword, self._position_counts = statusword, position
            if self._mode is DriveMode.HOMING and self._homing_started:
                if statusword & SW_HOMING_ERROR and self._master_fault is None:
                    self._master_fault = "homing error (statusword bit 13): the home switch was not found"
                elif statusword & SW_HOMING_ATTAINED:
                    self._homed = True
            self._tpdo_times[0] = now
            self._tpdo_counts[0] += 1
            self._lock.notify_all()

    def _on_tpdo2(self, can_id: int, data: bytes, timestamp: float) -> None:
        if len(data) < TPDO2_LAYOUT.size:
            return
        velocity, current = TPDO2_LAYOUT.unpack_from(data)
        now = self.clock()
        with self._mutex:
            self._velocity_counts, self._current_actual = velocity, current
            self._tpdo_times[1] = now
            self._tpdo_counts[1] += 1
            self._lock.notify_all()

    def _on_emcy(self, entry: canopen.emcy.EmcyError) -> None:
        """EMCY (network thread): a non-zero error code is a fault at once, its code the reason.
        Logs bounded and warnings throttled (EMCY_LOG_LIMIT, EMCY_WARNING_INTERVAL)."""
        now = self.clock()
        consumer = self.node.emcy
        with consumer.emcy_received:  # canopen appended to its own lists under this lock
            for entries in (consumer.log, consumer.active):
                if len(entries) > EMCY_LOG_LIMIT:
                    del entries[: len(entries) - EMCY_LOG_LIMIT]
        with self._mutex:
            self.emcy_log.append((now, entry.code, entry.register))
            self.emcy_count += 1
            if entry.code == 0:  # "error reset / no error": the drive left its fault
                return
            self._drive_fault_text = describe_error_code(entry.code)
            self._emcy_fault = True
            if entry.code in POSITION_LOST_ERROR_CODES:
                self._homed = False  # the position is not trusted: home again after the reset
            last = self._emcy_warned
            if last is not None and last[1] == entry.code and now - last[0] < EMCY_WARNING_INTERVAL:
                self._emcy_unwarned += 1
                return
            unwarned, self._emcy_unwarned = self._emcy_unwarned, 0
            self._emcy_warned = (now, entry.code)
            count = self.emcy_count
        logger.warning(
            "%s: EMCY %s, error register 0x%02X%s",
            self._who(),
            describe_error_code(entry.code),
            entry.register,
            f" ({unwarned} more EMCYs since the last warning, {count} in all)" if unwarned else "",
        )

    def _on_heartbeat(self, state: int) -> None:
        """NMT heartbeat / boot-up (network thread): a started node that boots again is a fault."""
        if state == NMT_BOOT_UP and self._started:
            with self._mutex:
                if not self.absolute:
                    self._homed = False  # an incremental position restarts from zero
                # A node boots in Switch on disabled, power stage off; it sends no TPDO until it
                # is configured and started again (reset_fault() does that).
                self._statusword = STATUSWORD_PATTERNS[Cia402State.SWITCH_ON_DISABLED][1]
                self._rebooted = True
            self._latch_fault(
                f"node {self.node_id} sent a boot-up frame: it restarted (power loss or reset) and "
                f"lost its configuration"
            )
            logger.error("%s: boot-up frame while running", self._who())

    @property
    def feedback_count(self) -> int:
        """Complete feedback sets (TPDO1 and TPDO2) received since construction."""
        with self._mutex:
            return min(self._tpdo_counts)

    def wait_for_feedback(self, count: int, timeout: float) -> bool:
        """Wait until `feedback_count` >= count or `timeout` s (wall clock) pass; True if reached."""
        with self._mutex:
            return self._lock.wait_for(lambda: min(self._tpdo_counts) >= count, timeout)

    @property
    def cia402_state(self) -> Cia402State:
        """The drive's CiA 402 state from the last statusword received."""
        with self._mutex:
            return decode_statusword(self._statusword)

    @property
    def homed(self) -> bool:
        with self._mutex:
            return self._homed

    def feedback(self) -> DriveFeedback:
        """The latest TPDO values in joint units, and the state (checks the feedback timeout)."""
        self._check_watchdog()
        with self._mutex:
            counts, velocity_counts, current_actual, homed = (
                self._position_counts,
                self._velocity_counts,
                self._current_actual,
                self._homed,
            )
        state = self._state()
        current = self.scaling.current(current_actual)
        stopped = state is DriveState.QUICK_STOP or state is DriveState.FAULT
        # The drive's own word (a latched stop is not it): read only when a stop is latched.
        reported = self._reported_state() if stopped else None
        return DriveFeedback(
            position=self.encoder.position(counts),
            velocity=velocity_counts * self.encoder.resolution,
            current=current,
            effort=self.motor.torque_constant * current * self.transmission.ratio * self.efficiency,
            state=state,
            fault=self._fault_reason() if state is DriveState.FAULT else None,
            homed=homed,
            mode=self._mode,
            halted=self._halted and state is DriveState.ENABLED,
            stopping=stopped and reported in STOPPING_STATES,
            confirmed=not stopped or reported is not Cia402State.OPERATION_ENABLED,
        )

    def _wait_for_first_feedback(self) -> None:
        """Feedback must flow before the drive is enabled: wait for the first TPDOs after start()."""
        with self._mutex:
            arrived = self._lock.wait_for(lambda: None not in self._tpdo_times, self.bus.transition_timeout)
        if not arrived:
            raise DriveError(
                f"{self._who()}: no feedback (TPDO1 and TPDO2) within {self.bus.transition_timeout} s "
                f"after start-up: is the SYNC running?"
            )

    def _check_watchdog(self) -> None:
        """Latch a feedback timeout once TPDOs have arrived and then stopped for feedback_timeout."""
        if not self._started:
            return
        now = self.clock()
        with self._mutex:
            times = self._tpdo_times
            if self._master_fault is not None or None in times:
                return
            age = now - min(times)
            stale = age > self._feedback_timeout
            if stale:
                self._master_fault = (
                    f"feedback timeout: no TPDO from node {self.node_id} for {age:.4f} s (limit "
                    f"{self.bus.feedback_timeout:.4f} s = {self.bus.feedback_timeout_periods} SYNC periods)"
                )
        if stale:
            self._controlword = CW_QUICK_STOP
            self._send_rpdo(CW_QUICK_STOP, 0, best_effort=True)
            return
        self._check_quick_stop_confirmed(now)

    def _check_quick_stop_confirmed(self, now: float) -> None:
        """A drive still in Operation enabled feedback_timeout after a quick stop is a fault."""
        if self._quick_stop_time is None:  # no quick stop requested (the per-cycle case): nothing to check
            return
        with self._mutex:
            requested = self._quick_stop_time
            if (
                requested is None
                or not self._quick_stop_latched
                or now - requested <= self.bus.feedback_timeout
            ):
                return
            try:
                running = decode_statusword_cached(self._statusword) is Cia402State.OPERATION_ENABLED
            except StatuswordError:
                return  # _state() latches that
            if running and self._master_fault is None:
                self._master_fault = (
                    f"quick stop not confirmed: node {self.node_id} still in Operation enabled "
                    f"{now - requested:.4f} s after the request"
                )
        if running:
            self._send_rpdo(CW_QUICK_STOP, 0, best_effort=True)

    def _fault_reason(self) -> str:
        """The fault's text without bus I/O (see the module doc: a stop never waits on SDO)."""
        with self._mutex:
            if self._master_fault is not None:
                return self._master_fault
            if self._drive_fault_text is not None:
                return self._drive_fault_text
        return "drive fault (statusword Fault, no EMCY received: error code 0x603F not read)"

    def read_error_code(self) -> str:
        """The drive's error code 0x603F by SDO (after the stop: this may wait for the SDO timeout)."""
        try:
            text = describe_error_code(self.node.sdo[ERROR_CODE].raw)
        except COMMUNICATION_ERRORS as error:
            return f"error code 0x603F unreadable: {error}"
        with self._mutex:
            if self._drive_fault_text is None and self._state_is_fault():
                self._drive_fault_text = text
        return text

    def _fault_reason_read(self) -> str:
        """The fault's text, reading 0x603F by SDO if no EMCY told it (not for the stop path)."""
        with self._mutex:
            known = self._master_fault is not None or self._drive_fault_text is not None
        return self._fault_reason() if known else self.read_error_code()

    def _state_is_fault(self) -> bool:
        try:
            return decode_statusword(self._statusword) in (
                Cia402State.FAULT,
                Cia402State.FAULT_REACTION_ACTIVE,
            )
        except StatuswordError:
            return False
