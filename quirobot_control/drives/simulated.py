"""A simulated brushless servo drive for one joint, behind the `Drive` interface (drives.interface).

`SimulatedDrive` implements the interface
with the models of this package: brushless motor (`motor.electrical_step`, exact), the drive's
sampled PI current loop (`motor.CurrentLoop`, bandwidth drive.current_loop_bandwidth, updated at
drive.current_loop_rate, voltage limited to bus_voltage * voltage_headroom), the transmission
(ratio, efficiency) and the motor-shaft encoder. A CANopen drive implements the same protocol.

State machine: drives.interface (QUICK_STOP and FAULT latched).

Zero current: in DISABLED and FAULT the inverter is off and the current is zero immediately
(the winding energy returns to the bus through the free-wheeling diodes within about L/R,
modelled as instantaneous). In QUICK_STOP the current loop stays active with its reference forced
to zero, so the current decays through the closed loop (time constant 1/w_c, about 0.16 ms)
and stays zero while the motor turns (the back-EMF feed-forward cancels it): zero torque, no
runaway current. Braking the mechanism is the holding brake's job: each motor has a
spring-applied brake that engages drive.brake_engage_time s after the drive stops driving
(DISABLED, QUICK_STOP, FAULT; engaged at power-up) and holds up to drive.brake_holding_ratio
times the motor's peak torque (`brake_engaged`, `brake_holding_effort`: the simulation applies it
as the joint's dry friction). Without it a quick stop would let the vertical axis fall.

Feedback: position is the encoder's quantized joint position; velocity is the backward
difference of encoder positions over the last drive.control_rate period (updated every
1/control_rate s of advanced time, or every advance() if dt is longer), as drives report it;
current is the q-axis current; effort = K_T * i * ratio * efficiency (losses always reduce the
delivered effort: a smooth, conservative simplification of the power-flow dependent model in
`transmission.motor_torque`).
"""

from __future__ import annotations

import math

from quirobot_control.drives.interface import DriveError, DriveFeedback, DriveState
from quirobot_control.models.encoder import Encoder
from quirobot_control.models.motor import CurrentLoop
from quirobot_control.models.transmission import reflected_inertia
from quirobot_description.parameters import (
    FEED_JOINT,
    DrillParameters,
    DriveParameters,
    JointParameters,
    MotorParameters,
    RobotParameters,
    TransmissionParameters,
)


class SimulatedDrive:
    """A brushless servo drive on one joint: motor + current PI loop + transmission + encoder.

    Starts DISABLED with zero current at joint position 0 (until the first advance()).
    """

    def __init__(
        self,
        joint: JointParameters | DrillParameters,
        drive: DriveParameters,
        *,
        efficiency: bool = True,
        name: str | None = None,
    ) -> None:
        """`joint`: a joint's parameters, or the drill's (named FEED_JOINT unless `name` says)."""
        if isinstance(joint, DrillParameters):
            self.name = name or FEED_JOINT
        else:
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
        self._velocity_period = 1.0 / drive.control_rate
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
        self._unpowered_time = math.inf  # s since the drive last stopped driving (brake timer)

    # --- Drive protocol -----------------------------------------------------------------------
    @property
    def state(self) -> DriveState:
        return self._state

    def enable(self) -> None:
        """DISABLED -> ENABLED (no-op if ENABLED). Raises DriveError in QUICK_STOP or FAULT."""
        if self._state in (DriveState.QUICK_STOP, DriveState.FAULT):
            reason = f" ({self._fault})" if self._fault else ""
            raise DriveError(
                f"drive {self.name} is in {self._state.name}{reason}: call reset_fault() before enable()"
            )
        if self._state is DriveState.DISABLED:
            self.loop.reset()
            self._reference = 0.0
            self._until_sample = 0.0
            self._state = DriveState.ENABLED
            self._unpowered_time = 0.0  # counts from the moment the drive stops driving

    def disable(self) -> None:
        """ENABLED -> DISABLED: inverter off, current zero at once. QUICK_STOP and FAULT stay latched."""
        if self._state is DriveState.ENABLED:
            self._state = DriveState.DISABLED
            self._switch_off()

    def quick_stop(self) -> None:
        """Force the current reference to zero (the loop drives the current to zero); latch QUICK_STOP."""
        if self._state is DriveState.FAULT:
            return
        if self._state is DriveState.DISABLED:
            self._switch_off()
        self._reference = 0.0
        self._state = DriveState.QUICK_STOP

    def reset_fault(self) -> None:
        """FAULT or QUICK_STOP -> DISABLED (clears the fault); no-op otherwise."""
        if self._state in (DriveState.FAULT, DriveState.QUICK_STOP):
            self._state = DriveState.DISABLED
            self._fault = None
            self._switch_off()

    def command_current(self, current: float) -> None:
        """Set the q-axis current reference (A), clipped to +-max_current.

        Non-finite: quick stop, then DriveError. In FAULT: DriveError. While DISABLED or
        QUICK_STOP the reference stays zero (the command is ignored, so a control loop writing
        every cycle does not have to special-case a stopped drive).
        """
        try:
            value = float(current)
        except (TypeError, ValueError) as error:
            self.quick_stop()
            raise DriveError(
                f"drive {self.name}: current command must be a number, got {current!r}"
            ) from error
        if not math.isfinite(value):
            self.quick_stop()
            raise DriveError(f"drive {self.name}: non-finite current command {current!r}: quick stop")
        if self._state is DriveState.FAULT:
            raise DriveError(f"drive {self.name} is in FAULT ({self._fault}): command refused")
        if self._state is DriveState.ENABLED:
            limit = self.motor.max_current
            self._reference = min(max(value, -limit), limit)

    def feedback(self) -> DriveFeedback:
        return DriveFeedback(
            position=self._position,
            velocity=self._velocity,
            current=self._current,
            effort=self._effort(),
            state=self._state,
            fault=self._fault,
        )

    # --- simulation side ----------------------------------------------------------------------
    @property
    def reflected_inertia(self) -> float:
        """Rotor inertia at the joint, J_rotor * ratio^2: kg*m^2 (revolute) or kg (prismatic)."""
        return reflected_inertia(self.transmission, self.motor.rotor_inertia)

    @property
    def current_reference(self) -> float:
        """The current reference in force (A): zero unless ENABLED."""
        return self._reference

    @property
    def brake_engaged(self) -> bool:
        """The holding brake holds: not ENABLED for at least drive.brake_engage_time s."""
        return self._state is not DriveState.ENABLED and self._unpowered_time >= self.drive.brake_engage_time

    @property
    def brake_holding_effort(self) -> float:
        """Joint force (N) or torque (N*m) the engaged brake holds: ratio * holding ratio * K_T * I_max."""
        return self.drive.brake_holding_ratio * self.motor.peak_torque * self.transmission.ratio

    def inject_fault(self, reason: str) -> None:
        """Test hook: go to FAULT with `reason`; current to zero at once."""
        self._state = DriveState.FAULT
        self._fault = str(reason)
        self._switch_off()

    def advance(self, dt: float, joint_position: float, joint_velocity: float) -> float:
        """Advance the electrical dynamics by `dt` s; return the joint effort (N or N*m).

        The joint position (m or rad) and velocity (m/s or rad/s) are held over the step: the
        motor speed omega = ratio * joint_velocity. The current loop samples every
        1/current_loop_rate s (its phase carried across calls, so any dt works) and the current
        between samples is the exact solution of L di/dt = v - R*i - K_V*omega. The current is
        clamped to +-max_current (the drive's hardware limit). A motor speed above the motor's
        max_speed faults the drive ("overspeed"). Effort = K_T * i * ratio * efficiency; the rotor
        inertia is not applied here (see `reflected_inertia`).
        """
        for label, value in (
            ("time step", dt),
            ("joint position", joint_position),
            ("joint velocity", joint_velocity),
        ):
            if not math.isfinite(value):
                raise ValueError(f"drive {self.name}: {label} must be a finite number, got {value!r}")
        if dt < 0.0:
            raise ValueError(f"drive {self.name}: time step must be >= 0 s, got {dt!r}")
        speed = self.transmission.ratio * joint_velocity
        if abs(speed) > self.motor.max_speed and self._state is not DriveState.FAULT:
            self.inject_fault(
                f"overspeed: motor at {abs(speed):.1f} rad/s exceeds its rating "
                f"{self.motor.max_speed:.1f} rad/s"
            )
        if self._state in (DriveState.ENABLED, DriveState.QUICK_STOP):
            self._integrate(dt, speed)
        if self._state is not DriveState.ENABLED:
            self._unpowered_time += dt
        self._sense(dt, joint_position)
        return self._effort()

    # --- internals ----------------------------------------------------------------------------
    def _switch_off(self) -> None:
        self._reference = 0.0
        self._current = 0.0
        self._voltage = 0.0
        self._until_sample = 0.0
        self.loop.reset()

    def _integrate(self, dt: float, speed: float) -> None:
        motor = self.motor
        R, L, K_V = motor.resistance, motor.inductance, motor.back_emf_constant
        limit = motor.max_current
        period = self.loop.period
        full_decay = math.exp(-period * R / L)
        tolerance = 1e-9 * period
        current, voltage, until_sample = self._current, self._voltage, self._until_sample
        remaining = dt
        while remaining > tolerance:
            if until_sample <= tolerance:
                voltage = self.loop.update(self._reference, current, speed)
                until_sample = period
            step = min(remaining, until_sample)
            decay = full_decay if step == period else math.exp(-step * R / L)
            steady = (voltage - K_V * speed) / R
            current = steady + (current - steady) * decay
            current = min(max(current, -limit), limit)
            remaining -= step
            until_sample -= step
        self._current, self._voltage, self._until_sample = current, voltage, until_sample

    def _sense(self, dt: float, joint_position: float) -> None:
        # Positions are latched at the start of each advance(), so the time since the previous
        # latch is the previous call's dt.
        position = self.encoder.quantize(joint_position)
        if self._velocity_anchor is None:
            self._velocity_anchor = position
        else:
            self._velocity_elapsed += self._previous_dt
            if self._velocity_elapsed >= self._velocity_period * (1.0 - 1e-9):
                self._velocity = (position - self._velocity_anchor) / self._velocity_elapsed
                self._velocity_anchor = position
                self._velocity_elapsed = 0.0
        self._position = position
        self._previous_dt = dt

    def _effort(self) -> float:
        return self.motor.torque_constant * self._current * self.transmission.ratio * self.efficiency


def drive_for_joint(params: RobotParameters, joint_name: str, *, efficiency: bool = True) -> SimulatedDrive:
    """A SimulatedDrive for one of JOINT_NAMES or FEED_JOINT, from the parameter file."""
    if joint_name == FEED_JOINT:
        return SimulatedDrive(params.drill, params.drive, efficiency=efficiency)
    try:
        joint = params.joint(joint_name)
    except KeyError as error:
        raise ValueError(
            f"no drive for joint {joint_name!r}: joints are "
            f"{', '.join(j.name for j in params.joints)}, {FEED_JOINT}"
        ) from error
    return SimulatedDrive(joint, params.drive, efficiency=efficiency)
