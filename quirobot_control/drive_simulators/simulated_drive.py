"""A simulated brushless servo drive for one joint, behind the `Drive` interface (drives.interface).

`SimulatedDrive` implements the interface
with the models of this package: brushless motor (`motor.electrical_step`, exact), the drive's
sampled PI current loop (`motor.CurrentLoop`, bandwidth drive.current_loop_bandwidth, updated at
drive.current_loop_rate, voltage limited to bus_voltage * voltage_headroom), the transmission
(ratio, efficiency) and the motor-shaft encoder. A CANopen drive implements the same protocol.

State machine: drives.interface (QUICK_STOP and FAULT latched), applied from its table
DRIVE_TRANSITIONS: each request looks up (state, request) for the next state (None: DriveError,
nothing changes) and does the work of that transition. Modes, stops, the master
watchdog and homing: the drive's `DriveController` (drives.drive_control) above the current loop:
- CST (default): the host's current reference, as before drive protocol v2;
- CSP: the drive's own PID (configure_position_loop) on its encoder at the control rate;
- quick_stop(): category 1, the drive's ramp at the axis's quick-stop deceleration
  (drive.quick_stop_deceleration), brake at standstill, then off; category 0 on request
  (quick_stop(StopCategory.TORQUE_OFF)), and for a drive whose position loop was never configured
  (nothing to ramp with: the behaviour before v2); halt()/resume(): category 2;
- master watchdog (`master_watchdog=True`, drive.master_timeout) checked in advance(), in every
  mode: a homing run needs its master's start_homing() held (called again each period) too;
- homing against a limit switch at the axis's homing.switch_position (the joint coordinate).

Zero current: after a category 0 stop (a power-stage fault), a fault reset and a stop's or a
disable's switch-off the inverter is off and the current is zero immediately (the winding
energy returns to the bus through the free-wheeling diodes within about L/R, modelled as
instantaneous). Each motor has a spring-applied holding
brake that holds drive.brake_engage_time s after it is commanded on (at power-up, disable, a
power-stage fault, a category 0 stop at once; a category 1 stop, a controllable fault
(inject_fault(controllable=True)) and disable() (0x605C = 1) at standstill, holding under power
while it engages) and holds up to drive.brake_holding_ratio times the motor's peak torque
(`brake_engaged`, `brake_holding_effort`: the simulation applies it as the joint's dry friction).

Encoder: absolute by default (homed at power-up; design assumption of the closed-loop
simulation, whose drives never home). `absolute_encoder=False` models an incremental encoder:
the raw position counts from the power-up position and the drive reports homed = False until
its homing sets the offset (feedback position = raw + offset).

Feedback: position is the encoder's quantized joint position; velocity is the backward
difference of encoder positions over the last drive.control_rate period (updated every
1/control_rate s of advanced time, or every advance() if dt is longer), as drives report it;
current is the q-axis current; effort = K_T * i * ratio * efficiency (losses always reduce the
delivered effort: a smooth, conservative simplification of the power-flow dependent model in
`transmission.motor_torque`).
"""

from __future__ import annotations

import math

from quirobot_control.drive_simulators.current_loop import current_loop_samples
from quirobot_control.drives.drive_control import DriveController, DriveControlSettings, control_settings
from quirobot_control.drives.interface import (
    DRIVE_TRANSITIONS,
    DriveError,
    DriveFeedback,
    DriveMode,
    DriveState,
    StopCategory,
)
from quirobot_control.drives.pid import PIDGains
from quirobot_control.models.encoder import Encoder
from quirobot_control.models.motor import CurrentLoop
from quirobot_control.models.transmission import reflected_inertia
from quirobot_description.parameters import (
    DrillParameters,
    DriveParameters,
    JointParameters,
    MotorParameters,
    RobotParameters,
    TransmissionParameters,
    drive_axes,
)

#: The states a stop leaves a drive in (its `stopping` is reported in these).
_STOPPED_STATES = (DriveState.QUICK_STOP, DriveState.FAULT)


class SimulatedDrive:
    """A brushless servo drive on one joint: motor + current PI loop + transmission + encoder.

    Starts DISABLED with zero current at joint position 0 (until the first advance()).
    """

    # Slots: the compiled step of a plant's drives (drive_array.advance_drives) reads and writes
    # this state where it is, at each slot's offset.
    __slots__ = (  # noqa: SIM905 - names a few to a line
        "name motor transmission drive efficiency voltage_limit loop encoder _current_loop_constants "
        "_velocity_period _constants _state _fault _reference _current _voltage _until_sample _position "
        "_velocity _velocity_anchor _velocity_elapsed _previous_dt control _built_settings _raw_origin "
        "_joint_position __dict__"
    ).split()  # __dict__: other attributes as before (a test replacing one method of one object)

    def __init__(
        self,
        joint: JointParameters | DrillParameters,
        drive: DriveParameters,
        *,
        efficiency: bool = True,
        name: str | None = None,
        control: DriveControlSettings | None = None,
    ) -> None:
        """`joint`: a joint's parameters, or the drill's (named its feed_joint unless `name` says).

        `control`: the drive's stop, watchdog and homing settings (drive_control.control_settings);
        None: an absolute drive with no watchdog, whose quick stop ramps at the joint's
        acceleration limit once its position loop is configured.
        """
        self.name = name or joint.name
        self.motor: MotorParameters = joint.motor
        self.transmission: TransmissionParameters = joint.transmission
        self.drive = drive
        self.efficiency = joint.transmission.efficiency if efficiency else 1.0
        self.voltage_limit = drive.bus_voltage * drive.voltage_headroom
        self.loop = CurrentLoop(
            joint.motor, drive.current_loop_bandwidth, drive.current_loop_rate, self.voltage_limit
        )
        self.encoder = Encoder(drive.encoder_counts_per_rev, joint.transmission.ratio)
        # advance_drive's current-loop constants (current_loop.current_loop_samples; it runs at every
        # physics step): R ohm, L H, K_V V*s/rad, current limit A, the loop's period s, the
        # current's decay over one period, kp V/A, ki*period V/A, voltage limit V, and the
        # resistance and back-EMF constant the loop feeds forward with.
        loop, period = self.loop, self.loop.period
        self._current_loop_constants = (
            self.motor.resistance,
            self.motor.inductance,
            self.motor.back_emf_constant,
            self.motor.max_current,
            period,
            math.exp(-period * self.motor.resistance / self.motor.inductance),
            loop._kp,
            loop._ki_period,
            loop.voltage_limit,
            loop._resistance,
            loop._back_emf,
        )
        self._velocity_period = 1.0 / drive.control_rate
        # advance_drive's constants: ratio, motor max speed rad/s, encoder resolution (m or rad
        # per count), the velocity update's threshold s, torque constant N*m/A, efficiency.
        self._constants = (
            joint.transmission.ratio,
            self.motor.max_speed,
            self.encoder.resolution,
            self._velocity_period * (1.0 - 1e-9),
            self.motor.torque_constant,
            self.efficiency,
        )
        self._state = DriveState.DISABLED
        self._fault: str | None = None
        self._reference = 0.0  # A
        self._current = 0.0  # A
        self._voltage = 0.0  # V, held until the next loop sample
        self._until_sample = 0.0  # s until the next current-loop sample
        self._position = 0.0  # quantized joint position, m or rad
        self._velocity = 0.0  # estimated joint velocity
        self._velocity_anchor: float | None = None  # quantized position at the last velocity update
        self._velocity_elapsed = 0.0  # s since the last velocity update
        self._previous_dt = 0.0  # s, dt of the previous advance()
        if control is None:
            deceleration = joint.acceleration
            counts_per_unit = drive.encoder_counts_per_rev * joint.transmission.ratio / (2.0 * math.pi)
            control = DriveControlSettings(
                name=self.name,
                max_current=joint.motor.max_current,
                quick_stop_deceleration=deceleration,
                standstill_velocity=2.0 * drive.control_rate / counts_per_unit,
                brake_engage_time=drive.brake_engage_time,
            )
        self.control = DriveController(control)
        self._built_settings = control  # what a power cycle restores
        self._raw_origin: float | None = None if not control.absolute else 0.0  # incremental: power-up
        self._joint_position = 0.0  # the true joint coordinate at the last advance (the switch sees it)

    # --- Drive protocol -----------------------------------------------------------------------
    @property
    def state(self) -> DriveState:
        return self._state

    @property
    def mode(self) -> DriveMode:
        return self.control.mode

    def enable(self) -> None:
        """DISABLED -> ENABLED (no-op if ENABLED). Raises DriveError in QUICK_STOP or FAULT."""
        target = self._next_state("enable")
        if target is not self._state:
            self.loop.reset()
            self._reference = 0.0
            self._until_sample = 0.0
            self._state = target
            self.control.enable(self._raw_position)

    def disable(self) -> None:
        """ENABLED -> DISABLED (0x605C = 1): the drive ramps to standstill if moving, commands the
        brake and keeps power drive.brake_engage_time s while it engages, then switches off (at
        once without a position loop). QUICK_STOP and FAULT stay latched."""
        target = self._next_state("disable")
        if target is not self._state:
            self._state = target
            self.control.disable_operation()  # a halt or a homing in progress ends
            if not self.control.power:
                self._switch_off()

    def quick_stop(self, category: StopCategory = StopCategory.RAMP_THEN_OFF) -> None:
        """Latch QUICK_STOP and stop (see the module doc): category 1 unless asked otherwise. A
        FAULT stays (the table keeps it): its own stop is already under way."""
        target = self._next_state("quick_stop")
        if target is DriveState.QUICK_STOP:  # again while in QUICK_STOP: the category may change
            self.control.quick_stop(category)
            if not self.control.power:
                self._switch_off()
        self._state = target

    def halt(self) -> None:
        """Category 2 pause while ENABLED: ramp down and hold under power (DriveFeedback.halted)."""
        self._state = self._next_state("halt")  # no state changes
        if self._state is DriveState.ENABLED:
            self.control.halt()

    def resume(self) -> None:
        """Leave a halt. Raises DriveError in QUICK_STOP or FAULT (reset_fault() leaves those)."""
        self._state = self._next_state("resume")
        self.control.resume()

    def reset_fault(self) -> None:
        """FAULT or QUICK_STOP -> DISABLED (clears the fault); no-op otherwise. DriveError (nothing
        changes) while the stop is still in progress (`DriveFeedback.stopping`)."""
        target = self._next_state("reset_fault")
        if target is not self._state:
            self.control.reset()  # raises while the stop is in progress
            self._state = target
            self._fault = None
            self._switch_off()

    def set_mode(self, mode: DriveMode) -> None:
        """CST, CSP or HOMING; only while not ENABLED (DriveError)."""
        if self._state is DriveState.ENABLED:
            raise DriveError(f"drive {self.name}: set_mode({mode!r}) only while the drive is not ENABLED")
        self.control.set_mode(mode)

    def configure_position_loop(self, gains: PIDGains, period: float) -> None:
        """The drive's PID gains and period (s), written at start-up; only while not ENABLED."""
        if self._state is DriveState.ENABLED:
            raise DriveError(
                f"drive {self.name}: configure_position_loop only while the drive is not ENABLED"
            )
        self.control.configure_position_loop(gains, period)

    def command_position(self, position: float, velocity: float = 0.0, current: float = 0.0) -> None:
        """CSP: target position (m or rad), velocity offset (m/s or rad/s), current feed-forward (A).

        Non-finite: quick stop, then DriveError. In FAULT: DriveError. Wrong mode: DriveError.
        Ignored (but it feeds the watchdog) unless ENABLED and running.
        """
        # The host's every cycle: three floats whose sum is finite are each a finite number.
        floats = type(position) is type(velocity) is type(current) is float
        if not (floats and math.isfinite(position + velocity + current)):
            numbers = self._command_numbers(position=position, velocity=velocity, current=current)
            position, velocity, current = numbers
        if self._state is DriveState.FAULT:
            raise DriveError(f"drive {self.name} is in FAULT ({self._fault}): command refused")
        self.control.command_position(position, velocity, current)

    def _command_numbers(self, **values: object) -> list[float]:
        """The command's values as floats; one that is not a finite number: quick stop, then
        DriveError naming it."""
        numbers = []
        for label, value in values.items():
            try:
                number = float(value)
            except (TypeError, ValueError) as error:
                self.quick_stop()
                raise DriveError(
                    f"drive {self.name}: {label} command must be a number, got {value!r}"
                ) from error
            if not math.isfinite(number):
                self.quick_stop()
                raise DriveError(f"drive {self.name}: non-finite {label} command {value!r}: quick stop")
            numbers.append(number)
        return numbers

    def start_homing(self) -> None:
        """Run the axis's homing (HOMING mode, ENABLED): DriveFeedback.homed when done. Called
        again during the run: it goes on (the master's homing command held, which feeds the master
        watchdog: a run whose master goes silent stops itself after drive.master_timeout)."""
        if self._state is not DriveState.ENABLED:
            raise DriveError(
                f"drive {self.name}: start_homing needs an ENABLED drive, it is {self._state.name}"
            )
        self.control.start_homing()

    def command_current(self, current: float) -> None:
        """Set the q-axis current reference (A), clipped to +-max_current.

        Non-finite: quick stop, then DriveError. In FAULT: DriveError. While DISABLED or
        QUICK_STOP the reference stays zero (the command is ignored, so a control loop writing
        every cycle does not have to special-case a stopped drive).
        """
        if not (type(current) is float and math.isfinite(current)):
            (current,) = self._command_numbers(current=current)
        if self._state is DriveState.FAULT:
            raise DriveError(f"drive {self.name} is in FAULT ({self._fault}): command refused")
        self.control.command_current(current)

    def feedback(self) -> DriveFeedback:
        return self.feedback_at(self.position)

    def feedback_at(self, position: float) -> DriveFeedback:
        """feedback() with `position` (m or rad) for its encoder's: what a wrapper with encoders of
        its own reports (simulation.realistic_plant.RealisticDrive), built once."""
        # The host reads it for every drive at every cycle: the fields in order, stop_in_progress
        # asked only during a stop (it is False without one).
        control = self.control
        return DriveFeedback(
            position,
            self._velocity,
            self._current,
            self._effort(),
            self._state,
            self._fault,
            control.homed,
            control.mode,
            control.halted,
            control.stopping is not None and control.stop_in_progress and self._state in _STOPPED_STATES,
        )

    # --- simulation side ----------------------------------------------------------------------
    @property
    def reflected_inertia(self) -> float:
        """Rotor inertia at the joint, J_rotor * ratio^2: kg*m^2 (revolute) or kg (prismatic)."""
        return reflected_inertia(self.transmission, self.motor.rotor_inertia)

    @property
    def current(self) -> float:
        """The measured q-axis current (A): feedback().current without building the feedback (the
        simulation's log reads it every period)."""
        return self._current

    @property
    def position(self) -> float:
        """The encoder's position in the homed coordinate (m or rad): feedback().position without
        building the feedback (the realistic plant's encoders sample it every period)."""
        return self._raw_position + self.control.position_offset

    @property
    def current_reference(self) -> float:
        """The current reference in force (A): the host's (CST) or the drive's own, zero when off."""
        return self.control.current_reference

    @property
    def brake_engaged(self) -> bool:
        """The holding brake holds: commanded on for at least drive.brake_engage_time s."""
        return self.control.brake_holding

    @property
    def home_switch(self) -> bool:
        """The homing limit switch is active: the joint is at or beyond it, towards the end of travel."""
        homing = self.control.settings.homing
        if homing is None:
            return False
        return homing.direction * (self._joint_position - homing.switch_position) >= 0.0

    @property
    def brake_holding_effort(self) -> float:
        """Joint force (N) or torque (N*m) the engaged brake holds: ratio * holding ratio * K_T * I_max."""
        return self.drive.brake_holding_ratio * self.motor.peak_torque * self.transmission.ratio

    def inject_fault(self, reason: str, *, controllable: bool = False) -> None:
        """Test hook: go to FAULT with `reason`. `controllable` (over-temperature, following error, a
        communication fault): the quick-stop ramp, brake at standstill, then off (0x605E = 2);
        otherwise a power-stage or encoder fault: current to zero at once (category 0)."""
        self._state = self._next_state("fault")
        self._fault = str(reason)
        self.control.drive_fault(controllable=controllable)  # category 0: incremental must re-home
        if not self.control.power:
            self._switch_off()

    def power_cycle(self) -> None:
        """Test hook: the drive restarts (power loss, reset): inverter off and brake commanded at
        once, faults cleared, DISABLED, and its volatile configuration gone (CST, no position
        loop, the stop and homing settings it was built with); an incremental count is lost."""
        control = DriveController(self._built_settings)
        control.brake_time = 0.0  # the brake falls in when the power goes
        self.control = control
        self._state = DriveState.DISABLED
        self._fault = None
        self._switch_off()
        if not control.settings.absolute:
            self._raw_origin = None  # counts again from where the axis is at the next sample

    def advance(self, dt: float, joint_position: float, joint_velocity: float) -> float:
        """Advance the electrical dynamics by `dt` s; return the joint effort (N or N*m).

        The joint position (m or rad) and velocity (m/s or rad/s) are held over the step: the
        motor speed omega = ratio * joint_velocity. The current loop samples every
        1/current_loop_rate s (its phase carried across calls, so any dt works) and the current
        between samples is the exact solution of L di/dt = v - R*i - K_V*omega. The current is
        clamped to +-max_current (the drive's hardware limit). A motor speed above the motor's
        max_speed faults the drive ("overspeed"). Effort = K_T * i * ratio * efficiency; the rotor
        inertia is not applied here (see `reflected_inertia`). The law is `advance_drive`'s (the
        one step that drive_array.DriveArray also runs for every drive of a plant).
        """
        if not (math.isfinite(dt) and dt >= 0.0):
            _check_time_step(self.name, dt)
        return advance_drive(self, dt, joint_position, joint_velocity)

    @property
    def _raw_position(self) -> float:
        """The encoder's position as the drive counts it (incremental: from the power-up position)."""
        return self._position - (self._raw_origin or 0.0)

    # --- internals ----------------------------------------------------------------------------
    def _next_state(self, request: str) -> DriveState:
        """DRIVE_TRANSITIONS[(state, request)]: the state `request` leads to; where the table says
        None, DriveError naming the state (and the fault), nothing changed."""
        target = DRIVE_TRANSITIONS[(self._state, request)]
        if target is None:
            reason = f" ({self._fault})" if self._fault else ""
            raise DriveError(
                f"drive {self.name} is in {self._state.name}{reason}: {request}() refused, "
                "call reset_fault() first"
            )
        return target

    def _switch_off(self) -> None:
        self._reference = 0.0
        self._current = 0.0
        self._voltage = 0.0
        self._until_sample = 0.0
        self.loop.reset()

    def _effort(self) -> float:
        return self.motor.torque_constant * self._current * self.transmission.ratio * self.efficiency


def _check_time_step(name: str, dt: float) -> None:
    """ValueError naming the drive for a time step that is not a finite number >= 0 s."""
    if not math.isfinite(dt):
        raise ValueError(f"drive {name}: time step must be a finite number, got {dt!r}")
    if dt < 0.0:
        raise ValueError(f"drive {name}: time step must be >= 0 s, got {dt!r}")


def advance_drive(drive: SimulatedDrive, dt: float, joint_position: float, joint_velocity: float) -> float:
    """`SimulatedDrive.advance` of one drive over `dt` s (checked >= 0 by the caller): its law in one
    flat function (encoder and velocity estimate, the controller's step, the sampled PI current
    loop and the exact current between samples), without the per-sample method calls it used
    to make: it runs for every drive at every physics step (drive_array.DriveArray). The
    operations and their order are those of the per-object code it replaced, so results are
    bit-for-bit the same (test_drive_array)."""
    if not (math.isfinite(joint_position) and math.isfinite(joint_velocity)):
        for label, value in (("joint position", joint_position), ("joint velocity", joint_velocity)):
            if not math.isfinite(value):
                raise ValueError(f"drive {drive.name}: {label} must be a finite number, got {value!r}")
    ratio, max_speed, resolution, velocity_threshold, torque_constant, efficiency = drive._constants
    speed = ratio * joint_velocity
    if abs(speed) > max_speed and drive._state is not DriveState.FAULT:
        drive.inject_fault(
            f"overspeed: motor at {abs(speed):.1f} rad/s exceeds its rating {max_speed:.1f} rad/s"
        )
    drive._joint_position = joint_position
    # The encoder (positions are latched at the start of each advance, so the time since the
    # previous latch is the previous call's dt) and the velocity's backward difference.
    position = round(joint_position / resolution) * resolution
    if drive._raw_origin is None:
        drive._raw_origin = position
    if drive._velocity_anchor is None:
        drive._velocity_anchor = position
    else:
        elapsed = drive._velocity_elapsed + drive._previous_dt
        if elapsed >= velocity_threshold:
            drive._velocity = (position - drive._velocity_anchor) / elapsed
            drive._velocity_anchor = position
            elapsed = 0.0
        drive._velocity_elapsed = elapsed
    drive._position = position
    drive._previous_dt = dt
    control = drive.control
    homing = control.settings.homing
    switch = homing is not None and homing.direction * (joint_position - homing.switch_position) >= 0.0
    reference, power, _ = control.step_values(
        dt, position - (drive._raw_origin or 0.0), drive._velocity, switch
    )
    state = drive._state
    if state is DriveState.ENABLED and control.stopping is not None and not control.halted:
        # The drive stopped itself (master watchdog): latched like a commanded quick stop.
        drive._state = drive._next_state("quick_stop")
        drive._fault = control.fault
    if power:
        drive._reference = reference
        loop = drive.loop  # the current loop over dt (current_loop: compiled where it was built)
        loop.integral, loop.saturated, drive._current, drive._voltage, drive._until_sample = (
            current_loop_samples(
                drive._current_loop_constants,
                reference,
                speed,
                dt,
                loop.integral,
                loop.saturated,
                drive._current,
                drive._voltage,
                drive._until_sample,
            )
        )
    elif drive._current != 0.0 or drive._reference != 0.0:
        drive._switch_off()
    return torque_constant * drive._current * ratio * efficiency


def drive_for_joint(
    params: RobotParameters,
    joint_name: str,
    *,
    efficiency: bool = True,
    master_watchdog: bool = False,
    absolute_encoder: bool = True,
) -> SimulatedDrive:
    """A SimulatedDrive for one axis of drive_axes() (a joint or a tool's axis), from the parameter file.

    Quick-stop deceleration and homing from the parameter file. `master_watchdog`: stop by
    itself after drive.master_timeout without a command (off by default: design assumption of
    the in-process closed-loop simulation, whose host steps the drives and cannot stall apart
    from them). `absolute_encoder=False`: homed = False until start_homing() is done (True by
    default: design assumption of the closed-loop simulation, which never homes).
    """
    try:
        joint = params.axis(joint_name)
    except KeyError as error:
        raise ValueError(f"no drive for joint {joint_name!r}: axes are {', '.join(drive_axes())}") from error
    control = control_settings(params, joint_name, master_watchdog=master_watchdog, absolute=absolute_encoder)
    return SimulatedDrive(joint, params.drive, efficiency=efficiency, control=control)
