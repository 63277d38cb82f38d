"""The simulated drive itself: what a controlword, a mode and the received setpoints do to the
SimulatedDrive (its DriveController configured from the object dictionary), the CiA 402
transitions with their stops and faults, the master watchdogs (SYNC loss, consumer heartbeat),
and the feedback written back to the object dictionary each period.
"""

from __future__ import annotations

import dataclasses

from quirobot_control.drive_simulators.canopen_slave.profile import (
    ERROR_REGISTER_COMMUNICATION,
    ERROR_REGISTER_GENERIC,
    FAULT_STATES,
    HEARTBEAT_ERROR_CODE,
    MODES,
    OVERSPEED_ERROR_CODE,
    SYNC_LOST_ERROR_CODE,
    next_state,
    statusword_for,
)
from quirobot_control.drives.cia402 import (
    ABORT_CONNECTION_OPTION_CODE,
    ABORT_CONNECTION_QUICK_STOP,
    CONSUMER_HEARTBEAT_TIME,
    CONTROLWORD,
    CW_HALT,
    CW_HOMING_START,
    HOME_OFFSET,
    HOMING_ACCELERATION,
    HOMING_METHOD,
    HOMING_SPEEDS,
    MODE_CYCLIC_SYNCHRONOUS_POSITION,
    MODE_CYCLIC_SYNCHRONOUS_TORQUE,
    MODE_HOMING,
    MODES_OF_OPERATION,
    QUICK_STOP_DECELERATION,
    QUICK_STOP_OPTION_CODE,
    SW_HOMING_ATTAINED,
    SW_HOMING_ERROR,
    SW_TARGET_REACHED,
    TARGET_POSITION,
    TARGET_TORQUE,
    TORQUE_OFFSET,
    VELOCITY_OFFSET,
    Cia402State,
    describe_error_code,
    fault_reaction_ramps,
)
from quirobot_control.drives.interface import DriveError, DriveState, StopCategory
from quirobot_control.drives.pid import GainError
from quirobot_description.parameters import HOMING_METHOD_DIRECTIONS


class SlaveServo:
    """The drive behind the object dictionary: state machine, stops, faults, watchdogs, motion.

    A part of `CanopenServoSimulator` (drive_simulators.canopen_slave), whose state it uses.
    """

    def _apply(self, index: int, value: int) -> None:
        if index == CONTROLWORD:
            previous, self._controlword = self._controlword, value
            new = next_state(self._state, value, previous)
            if self._state is Cia402State.QUICK_STOP_ACTIVE and self.drive.control.stop_in_progress:
                new = self._state  # the stop goes on: off once braked (see the module doc)
            self._transition(new)
            if self._state is Cia402State.OPERATION_ENABLED:
                self._operation_bits(value, previous)
        elif index == TARGET_TORQUE:
            self._target_torque = value
        elif index == TORQUE_OFFSET:
            self._torque_offset = value
        elif index == TARGET_POSITION:
            self._target_position = value
        elif index == VELOCITY_OFFSET:
            self._velocity_offset = value
        elif index == MODES_OF_OPERATION:
            self._mode = value

    def _operation_bits(self, controlword: int, previous: int) -> None:
        """Halt (bit 8) and homing operation start (bit 4) in Operation enabled: in homing mode
        its rising edge starts a run, held set the run goes on, its falling edge interrupts the run
        (CiA 402: ramp to a stop, hold, not homed)."""
        drive = self.drive
        halted = drive.control.halted
        if controlword & CW_HALT and not halted:
            drive.halt()
        elif not controlword & CW_HALT and halted:
            drive.resume()
            # CSP goes on from where the halt holds (the master's next target should be near it).
            self._csp_from = self._csp_to = drive.feedback().position
            self._csp_velocity = 0.0
        if self._mode != MODE_HOMING:
            return
        if previous & CW_HOMING_START and not controlword & CW_HOMING_START:
            drive.control.interrupt_homing()
        elif controlword & CW_HOMING_START and not previous & CW_HOMING_START:
            try:
                drive.start_homing()
            except DriveError:
                self._homing_error = True

    def _config(self, index: int, subindex: int = 0) -> int:
        entry = self.node.sdo[index] if subindex == 0 else self.node.sdo[index][subindex]
        return entry.raw

    def _configure_control(self) -> None:
        """The drive's DriveController settings from the object dictionary (a thin adapter: the
        controller reads a frozen settings record, which the slave replaces while the drive is
        off): quick-stop deceleration 0x6085 and homing 0x6098/0x6099/0x609A/0x607C once
        written (else the parameter file's, as the drive was built); the switch stays where it is.
        """
        control = self.drive.control
        settings = control.settings
        deceleration = self._config(QUICK_STOP_DECELERATION)
        if deceleration > 0:
            settings = dataclasses.replace(settings, quick_stop_deceleration=self.units.value(deceleration))
        method = self._config(HOMING_METHOD)
        homing = settings.homing
        if homing is not None and method in HOMING_METHOD_DIRECTIONS:
            written = {
                "switch_speed": self._config(HOMING_SPEEDS, 1),
                "zero_speed": self._config(HOMING_SPEEDS, 2),
                "acceleration": self._config(HOMING_ACCELERATION),
            }
            homing = dataclasses.replace(
                homing,
                method=method,
                home_offset=self.units.value(self._config(HOME_OFFSET)),
                **{key: self.units.value(counts) for key, counts in written.items() if counts > 0},
            )
            settings = dataclasses.replace(settings, homing=homing)
        control.settings = settings

    def _prepare_to_run(self) -> bool:
        """Before Operation enabled: the written configuration into the drive. False: cannot run."""
        drive = self.drive
        mode = MODES.get(self._mode)
        if mode is None:
            return False
        gains = self.gains()
        try:
            if gains is not None:
                drive.configure_position_loop(gains, self.control_period)
            drive.set_mode(mode)
        except (DriveError, GainError):
            return False  # e.g. CSP without a position loop: the drive cannot run (stays)
        self._configure_control()
        self._homing_error = False
        return True

    def _quick_stop_category(self) -> StopCategory:
        """0x605A: 0 -> category 0; 1, 2 -> ramp then off (1); 5, 6 -> ramp and hold (2)."""
        option = self._config(QUICK_STOP_OPTION_CODE)
        if option in (1, 2):
            return StopCategory.RAMP_THEN_OFF
        if option in (5, 6):
            return StopCategory.RAMP_AND_HOLD
        return StopCategory.TORQUE_OFF

    def _transition(self, new: Cia402State) -> None:
        old, self._state = self._state, new
        if new is old:
            return
        drive = self.drive
        if new is Cia402State.OPERATION_ENABLED:
            if old is not Cia402State.QUICK_STOP_ACTIVE and not self._prepare_to_run():
                self._state = old
                return
            drive.reset_fault()  # leaves QUICK_STOP (transition 16); no-op when DISABLED
            drive.enable()
            position = drive.feedback().position
            self._csp_from = self._csp_to = position
            self._csp_velocity = 0.0
            self._target_position = self.units.counts(position)
            self._target_torque = self._torque_offset = self._velocity_offset = 0
        elif new is Cia402State.QUICK_STOP_ACTIVE:
            category = self._quick_stop_category()
            drive.quick_stop(category)
            if category is StopCategory.TORQUE_OFF:
                self._transition(Cia402State.SWITCH_ON_DISABLED)
        elif new is Cia402State.SWITCH_ON_DISABLED and old is Cia402State.FAULT:
            drive.reset_fault()
            self._error_code = 0
            self._emcy_reset()
        elif new is Cia402State.SWITCHED_ON and old is Cia402State.OPERATION_ENABLED:
            drive.disable()  # disable operation (0x605C = 1): ramp, brake under power, then off
        else:  # disable voltage, shutdown: power stage off at once
            drive.quick_stop(StopCategory.TORQUE_OFF)
            drive.reset_fault()

    def _enter_fault(self, error_code: int) -> None:
        self._error_code = int(error_code)
        if self.drive.state is not DriveState.FAULT:
            self.drive.inject_fault(
                describe_error_code(error_code), controllable=fault_reaction_ramps(error_code)
            )
        # Fault reaction active while the drive still ramps and brakes under power, then Fault.
        self._state = Cia402State.FAULT_REACTION_ACTIVE if self.drive.control.power else Cia402State.FAULT
        if self.network is not None:
            self.node.emcy.send(self._error_code, ERROR_REGISTER_GENERIC)

    def _emcy_reset(self) -> None:
        if self.network is not None:
            self.node.emcy.reset()

    def _latch_command(self) -> None:
        """At a SYNC: the latest RPDO values become the drive's command for the period."""
        self._csp_from = self._csp_target()
        self._csp_to = self.units.value(self._target_position)
        self._csp_velocity = self.units.value(self._velocity_offset)
        self._since_sync = 0.0

    def _csp_target(self) -> float:
        """The interpolated CSP target now: linear from the last SYNC's to the new one over a
        period, then extrapolated with the velocity offset (a missed SYNC: the drive goes on at
        the commanded speed until its watchdog stops it, the worst case of CiA 402 drives)."""
        fraction = min(1.0, self._since_sync / self.sync_period)
        overtime = max(0.0, self._since_sync - self.sync_period)
        return self._csp_from + (self._csp_to - self._csp_from) * fraction + self._csp_velocity * overtime

    def _command(self) -> None:
        """One position-loop period's command to the drive, by mode (only while running)."""
        if self._state is not Cia402State.OPERATION_ENABLED or self.drive.control.stopping is not None:
            return
        if self._mode == MODE_CYCLIC_SYNCHRONOUS_TORQUE:
            self.drive.command_current(self.scaling.current_for_target_torque(self._target_torque))
        elif self._mode == MODE_CYCLIC_SYNCHRONOUS_POSITION:
            self.drive.command_position(
                self._csp_target(),
                self._csp_velocity,
                self.scaling.current_for_target_torque(self._torque_offset),
            )

    def _watch_master(self) -> None:
        """The drive watches its master: SYNC loss and the consumer heartbeat (0x1016)."""
        if self._state is not Cia402State.OPERATION_ENABLED:
            return
        reason = None
        periods = self.sync_loss_periods
        if periods and self._last_sync is not None:
            silent = self.time - self._last_sync
            if silent >= periods * self.sync_period * (1.0 - 1e-9):
                reason, code = f"no SYNC for {silent:.4f} s ({periods} periods)", SYNC_LOST_ERROR_CODE
        consumer = self._config(CONSUMER_HEARTBEAT_TIME, 1) & 0xFFFF
        if reason is None and consumer and self._last_heartbeat is not None:
            silent = self.time - self._last_heartbeat
            if silent >= consumer / 1000.0 * (1.0 - 1e-9):
                reason, code = f"no heartbeat from the master for {silent:.4f} s", HEARTBEAT_ERROR_CODE
        if reason is None:
            return
        self.master_lost = f"master lost at {self.time:.4f} s: {reason}"
        self.master_lost_time = self.time
        action = self._config(ABORT_CONNECTION_OPTION_CODE)
        if action == 1:
            self._enter_fault(code)
            return
        if self.network is not None:
            self.node.emcy.send(code, ERROR_REGISTER_COMMUNICATION)
        if action == 2:
            self._transition(Cia402State.SWITCH_ON_DISABLED)
        elif action == ABORT_CONNECTION_QUICK_STOP:
            self._transition(Cia402State.QUICK_STOP_ACTIVE)

    def _advance(self) -> None:
        """One SYNC period of the drive, in position-loop periods (control_rate sub-steps)."""
        drive, joint = self.drive, self.joint
        h = self.sync_period / self._substeps
        for _ in range(self._substeps):
            self._watch_master()
            self._command()
            effort = drive.advance(h, joint.position, joint.velocity)
            if drive.brake_engaged and abs(effort) <= drive.brake_holding_effort:
                joint.velocity = 0.0  # the holding brake holds the joint
            else:
                joint.step(effort, h)
            self.time += h
            self._since_sync += h
            if (
                self._state is Cia402State.QUICK_STOP_ACTIVE
                and drive.control.stop_done
                and not drive.control.power
            ):
                self._transition(Cia402State.SWITCH_ON_DISABLED)  # category 1 done: braked, off
            elif self._state is Cia402State.FAULT_REACTION_ACTIVE and not drive.control.power:
                self._state = Cia402State.FAULT  # the fault reaction ended: braked, off
        drive.advance(0.0, joint.position, joint.velocity)  # latch the encoder at the SYNC instant
        if drive.state is DriveState.FAULT and self._state not in FAULT_STATES:
            self._enter_fault(OVERSPEED_ERROR_CODE)
        self._sense()

    def _sense(self) -> None:
        feedback = self.drive.feedback()
        self._position_counts = self.units.counts(feedback.position)
        self._velocity_counts = self.units.counts(feedback.velocity)
        self._current_actual = self.scaling.current_actual(feedback.current)

    def _statusword(self) -> int:
        value = statusword_for(self._state)
        control = self.drive.control
        if control.stopping is not None and control.stop_done:
            value |= SW_TARGET_REACHED
        if self._mode == MODE_HOMING:
            if control.homed:
                value |= SW_HOMING_ATTAINED | SW_TARGET_REACHED
            if self._homing_error:
                value |= SW_HOMING_ERROR
        return value

    def _encode(self, index: int, value: int, subindex: int = 0) -> bytes:
        entry = self.node.object_dictionary[index]
        if subindex:
            entry = entry[subindex]
        return entry.encode_raw(value)
