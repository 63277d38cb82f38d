"""A servo drive's own position-side control: CSP, the stop ramps, the master watchdog, homing.

One `DriveController` per axis is the part of a drive's firmware above its current loop. It knows
no motor and no bus: the caller (drive_simulators.simulated_drive.SimulatedDrive, the CiA 402 slave simulator)
owns the current loop, the encoder, the brake and the CiA 402 state machine, and each drive
sample it hands over what it measured and applies what comes back. ROS-free, numpy-free.

API (positions m or rad, velocities m/s or rad/s, currents A, times s):

    controller = DriveController(DriveControlSettings(...))   # or control_settings(params, axis)
    controller.configure_position_loop(gains, period)          # the per-joint PID (drives.pid)
    controller.set_mode(DriveMode.CSP)                         # only while powered off
    controller.enable(position)                                # power on at the measured position
    controller.command_position(position, velocity, current)  # CSP: 0x607A, 0x60B1, 0x60B2 (A)
    controller.command_current(current)                        # CST: the host's current
    output = controller.step(dt, position, velocity, switch)   # every sample: ControlOutput
    controller.quick_stop(StopCategory.RAMP_THEN_OFF)          # or halt(), resume()
    controller.start_homing()                                  # in HOMING (again: the run goes on)
    controller.interrupt_homing()                              # the run ends: ramp down, hold
    controller.disable_operation()                             # 0x605C = 1: ramp, brake, then off
    controller.disable() / controller.reset()                  # power off at once / clear a stop
    controller.drive_fault(controllable=True)                  # 0x605E = 2: ramp; False: category 0

`step` inputs: dt, the time the output will be applied for (the PID samples at the first step
of each `period` with dt > 0, its output held in between, so dt <= period is expected; a zero
step only latches the measurement, so a command given after it is used by the next step, as
a drive uses the target received before the SYNC it samples at); position, the drive's raw
encoder position (not offset by homing); velocity, the drive's velocity estimate; switch, the
homing limit switch (True while active). `ControlOutput`: current, the current loop's reference
(A, within +-max_current); power, the inverter drives the motor (False: off, zero current);
brake, the holding brake is commanded on (it holds brake_engage_time s later, see
`brake_holding`). Status: `reference` (the position and velocity the drive follows), `stopping`
(the StopCategory in force, or None), `stop_done` (standstill reached: braked and off for
category 1, holding for 2), `fault` (why the drive stopped itself: "master lost: ..."), `homed`,
`position_offset` (homed position = raw + offset), `halted`, `current_reference`.

The laws:
- CSP: the drive's PID (the project's drives.pid.PID, the same gains as the host's in CST) on its
  own encoder at `period`, the target as setpoint, the velocity offset as the velocity
  reference and the current offset as the feed-forward. A cycle without a new target
  extrapolates the last one along its velocity offset (a lost frame does not jerk the axis).
- Stops: a velocity ramp to zero at the quick-stop deceleration, starting from the reference in
  force (CSP, homing) or from the measured position and velocity (CST), the PID tracking it with
  the load's current still applied (bumpless: a held load stays held): in CSP the torque offset
  0x60B2 last received stays the ramp's feed-forward (an object whose value persists until it is
  written again; "during the procedure, torque offset can be used to compensate for possible
  torque from the load", Synapticon SOMANET's quick stop in position and velocity modes), in CST
  the integrator is preloaded with the host's current in force. Before, a CSP stop dropped the
  offset and a vertical axis sagged until its integrator wound up (gantry_z 106 um, the bit
  pushed on into the bone: test_robot_path_faults.py). At
  zero reference velocity the drive waits for standstill (|velocity| <= standstill_velocity);
  category 1 then commands the brake, keeps holding under power brake_engage_time s while it
  engages, and switches the inverter off; category 2 holds under power. Category 0 switches off
  and commands the brake at once (the axis is free until the brake engages). A drive whose
  position loop was never configured cannot ramp: its quick stop and halt are category 0.
- Disable operation (0x605C = 1, `disable_operation()`): the category 1 stop (ramp if moving,
  brake at standstill, power held brake_engage_time s while it engages, then off), so a vertical
  axis does not fall while its brake engages; enable() during it takes over bumplessly, and the
  mode and a new position loop may be set during it (the loop takes effect at the next enable).
- Fault reaction (0x605E, `drive_fault`): a fault with which the drive still controls the motor
  (over-temperature, following error, a command or communication fault) stops with the quick-stop
  ramp (0x605E = 2: category 1); a power-stage fault (over-current, DC-link under-voltage, STO) or
  a lost position (encoder) switches off at once (category 0).
- Master watchdog: while powered and not stopping, in every mode, homing included, a drive
  without a command for longer than master_timeout stops itself with category 1 and sets
  `fault`. During a homing run the master's command is start_homing() held: called again while
  the run is in progress it goes on (CiA 402 controlword bit 4 kept set: "homing operation
  active"; only a new run starts one) and feeds the watchdog, so a run whose master goes silent
  stops master_timeout later, wherever it is. Before, a run went on without its master for its
  whole time allowance (81 s for the drill feed, 128 s for wrist_yaw on the shipped parameters).
  A drive holding in HOMING mode (before or after its run) needs commands like any other, so a
  host that dies during homing leaves no drive powered with its brake released. Nothing
  restarts by itself: only reset() (the caller's fault reset) clears a stop, and then enable()
  is needed. interrupt_homing() (bit 4 falling during the run) ends the run: ramp down, hold.
- Fault reset during a stop: reset() is refused (DriveError) while a stop is in progress
  (`stop_in_progress`: ramping, or at standstill holding under power while the brake engages):
  switching the inverter off mid-ramp would let the axis coast onto its brake.
- Homing (CiA 402 methods 17/18, limit switch without index pulse): ramp at the homing
  acceleration to the search speed towards the switch; once it is active, ramp to the zero speed
  away from it; at its falling edge the raw position is latched and the offset set so that this
  point reads home_offset; ramp to a stop and hold: homed. A switch active at the start skips
  the search. Until homed, a drive that is not absolute reports homed = False, and again after a
  drive fault (drive_fault(): its count may be lost), so the host re-homes it.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from quirobot_control.drives.interface import DriveError, DriveMode, StopCategory
from quirobot_control.drives.pid import PID, PIDGains
from quirobot_description.parameters import HomingParameters, RobotParameters

#: Standstill: the measured speed is at most this many encoder counts per control period (the
#: velocity estimate's resolution is one count per period; two tolerate one count of dither).
STANDSTILL_COUNTS_PER_PERIOD = 2.0


@dataclass(frozen=True)
class DriveControlSettings:
    """One drive's control settings (see `control_settings` for the parameter file's)."""

    name: str
    max_current: float  # A, the drive's current limit
    quick_stop_deceleration: float  # m/s^2 or rad/s^2 (0x6085), > 0
    standstill_velocity: float  # m/s or rad/s: at most this is standstill, > 0
    brake_engage_time: float  # s from commanding the brake to its holding, >= 0
    master_timeout: float | None = None  # s without a command before stopping; None: no watchdog
    homing: HomingParameters | None = None  # None: start_homing() refused
    absolute: bool = True  # an absolute encoder: homed at power-up

    def __post_init__(self) -> None:
        for label, value in (
            ("max_current", self.max_current),
            ("quick_stop_deceleration", self.quick_stop_deceleration),
            ("standstill_velocity", self.standstill_velocity),
        ):
            if not math.isfinite(value) or value <= 0.0:
                raise ValueError(f"drive {self.name}: {label} must be a finite number > 0, got {value!r}")
        if not math.isfinite(self.brake_engage_time) or self.brake_engage_time < 0.0:
            raise ValueError(
                f"drive {self.name}: brake_engage_time must be >= 0 s, got {self.brake_engage_time!r}"
            )
        if self.master_timeout is not None and not (
            math.isfinite(self.master_timeout) and self.master_timeout > 0.0
        ):
            raise ValueError(
                f"drive {self.name}: master_timeout must be > 0 s or None, got {self.master_timeout!r}"
            )


def homing_time_allowance(homing: HomingParameters, lower: float, upper: float) -> float:
    """s: the longest one axis's homing may take: twice the time to cross its whole travel
    (`lower`..`upper`, m or rad) at the search speed, plus the time to leave the switch at the zero
    speed over the stopping distance, plus one second (a homing not ended by then has lost its
    switch)."""
    travel = upper - lower
    overtravel = homing.switch_speed**2 / (2.0 * homing.acceleration)
    return 2.0 * travel / homing.switch_speed + 2.0 * overtravel / homing.zero_speed + 1.0


def axis_travel(params: RobotParameters, axis: str) -> tuple[float, float]:
    """(lower, upper) hard limits of one axis (drive_axes()), m or rad."""
    parameters = params.axis(axis)
    return parameters.lower, parameters.upper


def control_settings(
    params: RobotParameters, axis: str, *, master_watchdog: bool = True, absolute: bool = True
) -> DriveControlSettings:
    """The parameter file's settings of one axis (drive_axes()): quick stop, watchdog, homing, brake."""
    drive_train = params.axis(axis)
    motor, transmission = drive_train.motor, drive_train.transmission
    homing = params.homing.get(axis)
    counts_per_unit = params.drive.encoder_counts_per_rev * transmission.ratio / (2.0 * math.pi)
    return DriveControlSettings(
        name=axis,
        max_current=motor.max_current,
        quick_stop_deceleration=params.drive.quick_stop_deceleration[axis],
        standstill_velocity=STANDSTILL_COUNTS_PER_PERIOD * params.drive.control_rate / counts_per_unit,
        brake_engage_time=params.drive.brake_engage_time,
        master_timeout=params.drive.master_timeout if master_watchdog else None,
        homing=homing,
        absolute=absolute,
    )


@dataclass(frozen=True)
class ControlOutput:
    """What the drive applies until the next step (see the module doc)."""

    current: float  # A, the current loop's reference; 0 when power is False
    power: bool  # the inverter drives the motor
    brake: bool  # the holding brake is commanded on


class _Homing(enum.Enum):
    SEARCH = "search"  # towards the switch at the search speed
    LEAVE = "leave"  # switch active: away from it at the zero speed, until its falling edge
    STOP = "stop"  # edge latched: ramp to zero
    DONE = "done"
    INTERRUPTED = "interrupted"  # the master ended the run: ramp to zero, then hold (not homed)


class DriveController:
    """One drive's position-side control (see the module doc). Starts powered off, brake on, CST."""

    # Slots: the simulated drives' compiled step (drive_simulators.drive_array) reads and writes
    # the per-step state (the clocks, the output, the last measurement) where it is.
    __slots__ = (  # noqa: SIM905 - names a few to a line
        "settings name mode pid period power brake brake_time homed position_offset stopping stop_done "
        "halted fault since_command _current_command _target _fresh_target _reference_position "
        "_reference_velocity _ramp_pending _stop_feedforward _homing _until_sample _output "
        "_last_position _last_velocity _disabling _pending_loop _ramp_from_measurement __dict__"
    ).split()  # __dict__: other attributes as before (a test replacing one method of one object)

    def __init__(self, settings: DriveControlSettings) -> None:
        self.settings = settings
        self.name = settings.name
        self.mode = DriveMode.CST
        self.pid: PID | None = None
        self.period: float | None = None
        self.power = False
        self.brake = True  # engaged at power-up
        self.brake_time = math.inf  # s since the brake was commanded on
        self.homed = settings.absolute
        self.position_offset = 0.0  # homed position = raw + offset
        self.stopping: StopCategory | None = None
        self.stop_done = False
        self.halted = False
        self.fault: str | None = None
        self.since_command = 0.0  # s since the last command from the master
        self._current_command = 0.0  # A, CST
        self._target = (0.0, 0.0, 0.0)  # CSP: raw position, velocity, current feed-forward
        self._fresh_target = False  # a target arrived since the last sample
        self._reference_position = 0.0  # raw, of the drive's own profile (stops, homing)
        self._reference_velocity = 0.0
        self._ramp_pending = False  # a stop starts its ramp at the next sample
        self._stop_feedforward = 0.0  # A: the current offset a stop's ramp keeps applying (CSP)
        self._homing: _Homing | None = None
        self._until_sample = 0.0
        self._output = 0.0  # A, held between samples
        self._last_position = 0.0  # raw, the last measurement
        self._last_velocity = 0.0
        self._disabling = False  # disable_operation() in progress (power on until the brake holds)
        self._pending_loop: tuple[PIDGains, float] | None = None  # set during it, for the next enable
        self._ramp_from_measurement = False  # the pending ramp starts from the measurement (CST)

    # --- configuration ------------------------------------------------------------------------
    def configure_position_loop(self, gains: PIDGains, period: float) -> None:
        """The drive's PID (CSP, stops, homing): gains and sample period (s). Only while off (or
        during disable_operation(): then from the next enable on)."""
        if self._disabling:
            self._pending_loop = (gains, period)
            return
        self._refuse_while_powered("configure_position_loop")
        self.pid = PID(gains, period)
        self.period = period

    def set_mode(self, mode: DriveMode) -> None:
        """Select CST, CSP or HOMING (0x6060); only while powered off."""
        if not isinstance(mode, DriveMode):
            raise DriveError(f"drive {self.name}: mode must be a DriveMode, got {mode!r}")
        if mode is not self.mode and not self._disabling:  # the disable's ramp needs no mode
            self._refuse_while_powered("set_mode")
        if mode is not DriveMode.CST and self.pid is None:
            raise DriveError(
                f"drive {self.name}: {mode.name} needs the drive's position loop "
                "(call configure_position_loop first)"
            )
        self.mode = mode

    def _refuse_while_powered(self, what: str) -> None:
        if self.power:
            raise DriveError(f"drive {self.name}: {what} only while the drive is not enabled")

    # --- power and stops ----------------------------------------------------------------------
    def enable(self, position: float) -> None:
        """Power on at the measured raw `position`: brake released, holding there (CSP target).
        During disable_operation(): the disable is cancelled, the current in force kept (bumpless)."""
        integral = 0.0
        if self.power:
            if not self._disabling:
                return
            integral = self._output
        self._end_disable()
        self.power = True
        self.brake = False
        self.brake_time = math.inf
        self.stopping = None
        self.stop_done = False
        self.halted = False
        self.fault = None
        self.since_command = 0.0
        self._current_command = 0.0
        self._target = (float(position), 0.0, 0.0)
        self._reference_position, self._reference_velocity = float(position), 0.0
        self._homing = None
        self._last_position, self._last_velocity = float(position), 0.0
        self._until_sample = 0.0
        self._output = 0.0
        if self.pid is not None:
            self.pid.reset(position, integral=integral)

    def disable_operation(self) -> None:
        """0x605C = 1: the category 1 stop, ending off (see the module doc); at once without a
        position loop (nothing to ramp with). A stop in force goes on (a halt becomes category 1)."""
        if not self.power or self.pid is None:
            self.disable()
            return
        self.quick_stop(StopCategory.RAMP_THEN_OFF)
        self._disabling = self.power

    def _end_disable(self) -> None:
        self._disabling = False
        if self._pending_loop is not None:
            self.pid = PID(*self._pending_loop)
            self.period = self._pending_loop[1]
            self._pending_loop = None

    def disable(self) -> None:
        """Inverter off, brake on, at once (category 0, a fault reset, the end of a stop)."""
        self._end_disable()
        self.power = False
        self._output = 0.0
        if not self.brake:
            self.brake = True
            self.brake_time = 0.0

    def quick_stop(self, category: StopCategory = StopCategory.RAMP_THEN_OFF) -> None:
        """Stop under the drive's own control (see the module doc); a harder stop overrides a softer."""
        category = StopCategory(category)
        if category is not StopCategory.TORQUE_OFF and (self.pid is None or not self.power):
            category = StopCategory.TORQUE_OFF  # nothing to ramp with, or nothing powered
        if self.stopping is not None and self.stopping <= category:
            return
        if category is StopCategory.TORQUE_OFF:
            self.stopping = StopCategory.TORQUE_OFF
            self.stop_done = True
            self.disable()
            return
        if self.stopping is None:
            self._ramp_pending = True
            self._ramp_from_measurement = self.mode is DriveMode.CST
            self._stop_feedforward = self._target[2] if self.mode is DriveMode.CSP else 0.0
        self.halted = category is StopCategory.RAMP_AND_HOLD and self.stopping is None
        self.stopping = category
        self.stop_done = False

    def drive_fault(self, *, controllable: bool = False) -> None:
        """A fault of the drive itself. `controllable` (over-temperature, following error, a command
        or communication fault): the quick-stop ramp, category 1 (0x605E = 2). Otherwise (power
        stage, encoder, overspeed): category 0, and an incremental encoder's count is no longer
        trusted (homed = False until the axis homes again)."""
        if controllable:
            self.quick_stop(StopCategory.RAMP_THEN_OFF)
            return
        self.quick_stop(StopCategory.TORQUE_OFF)
        if not self.settings.absolute:
            self.homed = False

    def halt(self) -> None:
        """Category 2 pause: ramp down and hold under power until resume(). Needs the position loop."""
        if not self.power or self.stopping is not None:
            return  # nothing moves, or a stop is already in force
        if self.pid is None:
            raise DriveError(
                f"drive {self.name}: halt needs the drive's position loop (configure_position_loop)"
            )
        self.quick_stop(StopCategory.RAMP_AND_HOLD)

    def resume(self) -> None:
        """Leave a halt: follow the commands again (CSP: the next target should be the held position)."""
        if self.halted and self.stopping is StopCategory.RAMP_AND_HOLD:
            self.stopping = None
            self.stop_done = False
            self.halted = False
            held = self._reference_position
            self._target = (held, 0.0, self._output)
            self._current_command = self._output
            self.since_command = 0.0

    @property
    def stop_in_progress(self) -> bool:
        """A stop not yet complete: category 1 until the inverter is off (it goes off only once
        the brake holds at standstill); category 2 until it holds at standstill. Category 0 is
        complete at once (the inverter is off, the brake commanded: a reset changes neither)."""
        if self.stopping is None:
            return False
        if self.stopping is StopCategory.RAMP_AND_HOLD:
            return not self.stop_done
        return self.power

    def stop_progress(self) -> str:
        """What the stop in progress is doing, for a refusal (see `stop_in_progress`)."""
        if not self.brake:
            return "ramping to standstill"
        return "at standstill, holding under power while its brake engages"

    def reset(self) -> None:
        """The caller's fault reset: clear a stop and its fault; the drive stays off. Refused
        (DriveError, nothing changes) while a stop is in progress (`stop_in_progress`)."""
        if self.stop_in_progress:
            raise DriveError(
                f"drive {self.name}: stop still in progress ({self.stop_progress()}): fault reset "
                "refused until it is at standstill with its brake holding"
            )
        self.disable()
        self.stopping = None
        self.stop_done = False
        self.halted = False
        self.fault = None
        self._homing = None

    # --- commands from the master -------------------------------------------------------------
    def command_current(self, current: float) -> None:
        """CST: the current reference (A), clipped to +-max_current; ignored unless running."""
        self._check_mode(DriveMode.CST, "command_current")
        self.since_command = 0.0
        limit = self.settings.max_current
        self._current_command = min(max(float(current), -limit), limit)

    def command_position(self, position: float, velocity: float = 0.0, current: float = 0.0) -> None:
        """CSP: target position (homed coordinate), velocity offset, current feed-forward (A)."""
        self._check_mode(DriveMode.CSP, "command_position")
        self.since_command = 0.0
        self._target = (float(position) - self.position_offset, float(velocity), float(current))
        self._fresh_target = True

    def _check_mode(self, mode: DriveMode, command: str) -> None:
        if self.mode is not mode:
            raise DriveError(f"drive {self.name} is in {self.mode.name} mode: {command} needs {mode.name}")

    # --- homing -------------------------------------------------------------------------------
    def start_homing(self) -> None:
        """Run the configured homing (HOMING mode, powered, not stopping); during a run in
        progress, the master's command that it goes on (no restart: the watchdog is fed)."""
        self._check_mode(DriveMode.HOMING, "start_homing")
        if self.settings.homing is None:
            raise DriveError(f"drive {self.name}: no homing configured")
        if not self.power or self.stopping is not None:
            raise DriveError(f"drive {self.name}: start_homing needs an enabled drive that is not stopping")
        self.since_command = 0.0  # the master's command (module doc: master watchdog)
        if self._homing in (_Homing.SEARCH, _Homing.LEAVE, _Homing.STOP):
            return  # the run in progress goes on
        self.homed = False
        self._homing = _Homing.SEARCH
        self._reference_position, self._reference_velocity = self._last_position, 0.0

    def interrupt_homing(self) -> None:
        """End the homing run in progress where it is (CiA 402: controlword bit 4 falling during
        the run): ramp to a stop at the homing acceleration, then hold; not homed. No-op without
        a run."""
        if self._homing in (_Homing.SEARCH, _Homing.LEAVE, _Homing.STOP):
            self._homing = _Homing.INTERRUPTED

    # --- the drive's sample -------------------------------------------------------------------
    def step(self, dt: float, position: float, velocity: float, switch: bool = False) -> ControlOutput:
        """One step of dt s from the measured raw position and velocity (see the module doc)."""
        return ControlOutput(*self.step_values(dt, position, velocity, switch))

    def step_values(
        self, dt: float, position: float, velocity: float, switch: bool = False
    ) -> tuple[float, bool, bool]:
        """`step` as a tuple (current A, power, brake): the simulated drives' per-physics-step call,
        which skips building a ControlOutput (a third of this call's time)."""
        self._last_position, self._last_velocity = float(position), float(velocity)
        timeout = self.settings.master_timeout
        watched = timeout is not None and self.power and (self.stopping is None or self.halted)
        if watched and self.since_command > timeout:  # in every mode, a homing run too (module doc)
            during = ", during a homing run" if self._homing not in (None, _Homing.DONE) else ""
            silent = f"no command for {self.since_command:.4f} s"
            self.fault = f"master lost: {silent} (master_timeout {timeout} s{during})"
            self.quick_stop(StopCategory.RAMP_THEN_OFF)
        if self.power:
            if self.mode is DriveMode.CST and self.stopping is None:
                self._output = self._current_command  # the host's current, at once
                self._until_sample = 0.0  # a stop samples at once
            elif dt > 0.0:  # a zero step only latches the measurement (a sync instant)
                if self._until_sample <= 1e-9 * self.period:
                    limit = self.settings.max_current  # the PID's output limit may be set higher
                    self._output = min(max(self._sample(position, velocity, switch), -limit), limit)
                    self._until_sample += self.period
                self._until_sample -= dt
        output = (self._output if self.power else 0.0, self.power, self.brake)
        self.since_command += dt
        if self.brake:
            self.brake_time += dt
        return output

    @property
    def reference(self) -> tuple[float, float]:
        """The drive's position and velocity reference in force (homed coordinate): CSP target, ramp."""
        return self._reference_position + self.position_offset, self._reference_velocity

    @property
    def current_reference(self) -> float:
        """The current (A) the drive applies now: the host's in CST, the PID's otherwise, 0 when off."""
        if not self.power:
            return 0.0
        if self.mode is DriveMode.CST and self.stopping is None:
            return self._current_command
        return self._output

    @property
    def brake_holding(self) -> bool:
        """The brake has been commanded on for at least brake_engage_time s."""
        return self.brake and self.brake_time >= self.settings.brake_engage_time

    def _sample(self, position: float, velocity: float, switch: bool) -> float:
        period = self.period
        if self.stopping is not None:
            if self._ramp_pending:
                self._start_ramp(position, velocity, period)
            else:
                self._ramp(0.0, self.settings.quick_stop_deceleration, period)
            current = self._track()
            if self._reference_velocity == 0.0 and abs(velocity) <= self.settings.standstill_velocity:
                self._at_standstill()
            return current
        if self.mode is DriveMode.CSP:
            target, target_velocity, feedforward = self._target
            if not self._fresh_target:  # a missed cycle: extrapolate along the velocity offset
                target += target_velocity * period
                self._target = (target, target_velocity, feedforward)
            self._fresh_target = False
            self._reference_position, self._reference_velocity = target, target_velocity
            return self.pid.update(target, position, target_velocity, feedforward)
        return self._homing_sample(position, switch, period)

    def _start_ramp(self, position: float, velocity: float, period: float) -> None:
        """The ramp's first sample: the reference in force carried on one period (CSP, homing), or
        (CST) the measurement; the deceleration starts from here, the stop request's sample."""
        self._ramp_pending = False
        if self._ramp_from_measurement:
            self._reference_position, self._reference_velocity = position, velocity
            self.pid.reset(position, integral=self._output)
            return
        self._reference_position += self._reference_velocity * period
        self._homing = None

    def _at_standstill(self) -> None:
        if self.stopping is StopCategory.RAMP_AND_HOLD:
            self.stop_done = True
            return
        if not self.brake:  # category 1: brake, hold while it engages, then off
            self.brake = True
            self.brake_time = 0.0
        elif self.brake_holding:
            self.stop_done = True
            self.disable()

    def _ramp(self, velocity: float, acceleration: float, period: float) -> None:
        """Move the profile's velocity towards `velocity` at `acceleration`; integrate its position."""
        old = self._reference_velocity
        change = velocity - old
        step = acceleration * period
        new = velocity if abs(change) <= step else old + math.copysign(step, change)
        self._reference_velocity = new
        self._reference_position += 0.5 * (old + new) * period

    def _track(self) -> float:
        feedforward = self._stop_feedforward if self.stopping is not None else 0.0
        return self.pid.update(
            self._reference_position, self._last_position, self._reference_velocity, feedforward
        )

    def _homing_sample(self, position: float, switch: bool, period: float) -> float:
        homing = self.settings.homing
        if homing is None or self._homing is None:  # HOMING mode, homing not started: hold
            return self._track()
        direction = homing.direction
        if self._homing is _Homing.INTERRUPTED:
            self._ramp(0.0, homing.acceleration, period)
            if self._reference_velocity == 0.0:
                self._homing = None  # holds where it stopped
            return self._track()
        if self._homing is _Homing.SEARCH:
            if switch:
                self._homing = _Homing.LEAVE
            else:
                self._ramp(direction * homing.switch_speed, homing.acceleration, period)
        if self._homing is _Homing.LEAVE:
            if not switch and self._reference_velocity * direction < 0.0:
                # The falling edge: this raw position reads home_offset from now on.
                self.position_offset = homing.home_offset - position
                self._homing = _Homing.STOP
            else:
                self._ramp(-direction * homing.zero_speed, homing.acceleration, period)
        if self._homing is _Homing.STOP:
            self._ramp(0.0, homing.acceleration, period)
            if self._reference_velocity == 0.0:
                self._homing = _Homing.DONE
                self.homed = True
                self.since_command = 0.0  # holding now: the master has master_timeout to take over
        return self._track()
