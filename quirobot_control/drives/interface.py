"""The servo-drive interface: what the hardware component talks to, whatever the drive is.

`Drive` is one joint's servo drive (`SimulatedDrive` in drive_simulators.simulated_drive, `CanopenDrive` in
drives.canopen_master implement it); `DriveFeedback` is what it reports each cycle.

State machine (a simplified CiA 402):

    DISABLED --enable()--> ENABLED --disable()--> DISABLED
    any state except FAULT --quick_stop()--> QUICK_STOP --reset_fault()--> DISABLED
    any state --inject_fault()/overspeed/non-finite command--> FAULT --reset_fault()--> DISABLED

QUICK_STOP and FAULT are latched: disable() and enable() do not leave them (enable() raises
DriveError), only reset_fault() does, once the stop is complete (`DriveFeedback.stopping` False:
standstill, brake holding, inverter off; before that it raises DriveError, nothing changes), and
then enable() is needed to drive again. halt() and resume() do not change the state (an ENABLED
drive stays ENABLED, holding: `DriveFeedback.halted`); resume() raises in QUICK_STOP and FAULT.
The same rules as data: DRIVE_TRANSITIONS, which SimulatedDrive applies; a CanopenDrive's state
comes from its drive's statusword (test_drive_state_table runs every pair on both drives against
CiA 402 written out in the test). Nothing leaves QUICK_STOP or FAULT by itself: no automatic
fault reset, ever.

Modes (CiA 402 0x6060, `DriveMode`; set_mode() only while not ENABLED): CST, the host's PID sends
a current (command_current, A); CSP, the drive's own PID (drives.pid, gains written by
configure_position_loop) follows command_position(position, velocity, current): target 0x607A,
velocity offset 0x60B1, torque offset 0x60B2 as a current feed-forward in A; HOMING, the drive's
homing (start_homing(): method 0x6098, speeds 0x6099, acceleration 0x609A) until
`DriveFeedback.homed`. A command of the other mode raises DriveError naming both modes.

Stops (IEC 60204-1 categories, `StopCategory`), all run by the drive itself, with no host:
- 0, TORQUE_OFF: inverter off and brake at once; only for a drive (power) fault;
- 1, RAMP_THEN_OFF: quick_stop(): decelerate under power at the axis's quick-stop deceleration
  (0x6085) tracked by the drive's PID, brake at standstill, then inverter off (0x605A = 2);
- 2, RAMP_AND_HOLD: halt(): decelerate the same way and hold under power (halt bit 8); resume().
- Master watchdog: an ENABLED drive with no command for longer than its master timeout (consumer
  heartbeat 0x1016, abort-connection option 0x6007 = 3) stops itself with category 1 and reports
  fault "master lost: no command for X s" in state QUICK_STOP.
The law behind all of it is quirobot_control.drives.drive_control.DriveController.

The hardware component (hardware.component) commands ENABLED while it is active: a drive reporting
any other state (disabled, switched on, quick stop, fault) is a fault there, named with its state.
"""

from __future__ import annotations

import enum
from typing import Protocol, runtime_checkable

from quirobot_control.drives.pid import PIDGains
from quirobot_description.records import frozen_record


class DriveMode(enum.Enum):
    """CiA 402 modes of operation (0x6060) the drives run."""

    CST = "cyclic synchronous torque"  # host PID, command_current (A); mode 10
    CSP = "cyclic synchronous position"  # the drive's PID, command_position; mode 8
    HOMING = "homing"  # start_homing(); mode 6


class StopCategory(enum.IntEnum):
    """IEC 60204-1 stop categories, as the drive runs them (see the module doc)."""

    TORQUE_OFF = 0  # inverter off and brake at once (a drive power fault)
    RAMP_THEN_OFF = 1  # quick stop: ramp at the quick-stop deceleration, brake at standstill, off
    RAMP_AND_HOLD = 2  # halt: ramp the same way, hold under power


class DriveState(enum.Enum):
    DISABLED = "disabled"
    ENABLED = "enabled"
    QUICK_STOP = "quick_stop"
    FAULT = "fault"


#: (state, request) -> the state after it; None: the request raises DriveError (state unchanged).
#: "fault" is a fault the drive detects itself (overspeed, a non-finite command, inject_fault).
DRIVE_TRANSITIONS: dict[tuple[DriveState, str], DriveState | None] = {
    (DriveState.DISABLED, "enable"): DriveState.ENABLED,
    (DriveState.DISABLED, "disable"): DriveState.DISABLED,
    (DriveState.DISABLED, "quick_stop"): DriveState.QUICK_STOP,
    (DriveState.DISABLED, "reset_fault"): DriveState.DISABLED,
    (DriveState.DISABLED, "fault"): DriveState.FAULT,
    (DriveState.ENABLED, "enable"): DriveState.ENABLED,
    (DriveState.ENABLED, "disable"): DriveState.DISABLED,
    (DriveState.ENABLED, "quick_stop"): DriveState.QUICK_STOP,
    (DriveState.ENABLED, "reset_fault"): DriveState.ENABLED,
    (DriveState.ENABLED, "fault"): DriveState.FAULT,
    (DriveState.QUICK_STOP, "enable"): None,
    (DriveState.QUICK_STOP, "disable"): DriveState.QUICK_STOP,
    (DriveState.QUICK_STOP, "quick_stop"): DriveState.QUICK_STOP,
    (DriveState.QUICK_STOP, "reset_fault"): DriveState.DISABLED,
    (DriveState.QUICK_STOP, "fault"): DriveState.FAULT,
    (DriveState.FAULT, "enable"): None,
    (DriveState.FAULT, "disable"): DriveState.FAULT,
    (DriveState.FAULT, "quick_stop"): DriveState.FAULT,
    (DriveState.FAULT, "reset_fault"): DriveState.DISABLED,
    (DriveState.FAULT, "fault"): DriveState.FAULT,
    (DriveState.DISABLED, "halt"): DriveState.DISABLED,
    (DriveState.ENABLED, "halt"): DriveState.ENABLED,
    (DriveState.QUICK_STOP, "halt"): DriveState.QUICK_STOP,
    (DriveState.FAULT, "halt"): DriveState.FAULT,
    (DriveState.DISABLED, "resume"): DriveState.DISABLED,
    (DriveState.ENABLED, "resume"): DriveState.ENABLED,
    (DriveState.QUICK_STOP, "resume"): None,
    (DriveState.FAULT, "resume"): None,
}
#: The requests of DRIVE_TRANSITIONS, one method each ("fault": detected by the drive).
DRIVE_REQUESTS = ("enable", "disable", "quick_stop", "reset_fault", "fault", "halt", "resume")


@frozen_record  # built for every drive at every cycle
class DriveFeedback:
    position: float  # joint coordinate from the encoder (quantized), m or rad
    velocity: float  # joint velocity estimate, m/s or rad/s
    current: float  # measured q-axis current, A
    effort: float  # joint force/torque delivered by the drive train, N or N*m
    state: DriveState
    fault: str | None  # why the drive is in FAULT (or stopped itself in QUICK_STOP), else None
    # Defaults keep the callers written before drive protocol v2 working: an absolute encoder is
    # homed at power-up, and CST is the mode the host's PID drives.
    homed: bool = True  # the position is referenced (homing done, or an absolute encoder)
    mode: DriveMode = DriveMode.CST
    halted: bool = False  # halt() in force: ramping down or holding under power (category 2)
    # A stop (category 0 or 1, a fault reaction) still in progress: ramping, or at standstill with
    # the brake not yet holding or the inverter still on. reset_fault() is refused until it ends:
    # switching the inverter off mid-ramp would let the axis coast onto its brake.
    stopping: bool = False
    # The state is the drive's own report. False: the host's view only, e.g. a quick stop sent
    # while the drive still reports Operation enabled (not reached, or not yet), or a fault the
    # master found itself (feedback lost) after a running report: not a confirmed stop.
    confirmed: bool = True


class DriveError(RuntimeError):
    """A command the drive cannot accept (faulted, quick-stopped, non-finite reference)."""


@runtime_checkable
class Drive(Protocol):
    """What the hardware component talks to: one joint's servo drive."""

    name: str

    def enable(self) -> None: ...

    def disable(self) -> None: ...

    def quick_stop(self) -> None: ...

    def reset_fault(self) -> None: ...

    def command_current(self, current: float) -> None: ...

    def feedback(self) -> DriveFeedback: ...

    def set_mode(self, mode: DriveMode) -> None: ...

    def command_position(self, position: float, velocity: float = 0.0, current: float = 0.0) -> None: ...

    def configure_position_loop(self, gains: PIDGains, period: float) -> None: ...

    def halt(self) -> None: ...

    def resume(self) -> None: ...

    def start_homing(self) -> None: ...
