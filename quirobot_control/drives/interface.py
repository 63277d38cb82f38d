"""The servo-drive interface: what the hardware component talks to, whatever the drive is.

`Drive` is one joint's servo drive (`SimulatedDrive` in drives.simulated, `CanopenDrive` in
drives.canopen_master implement it); `DriveFeedback` is what it reports each cycle.

State machine (a simplified CiA 402):

    DISABLED --enable()--> ENABLED --disable()--> DISABLED
    any state except FAULT --quick_stop()--> QUICK_STOP --reset_fault()--> DISABLED
    any state --inject_fault()/overspeed/non-finite command--> FAULT --reset_fault()--> DISABLED

QUICK_STOP and FAULT are latched: disable() and enable() do not leave them (enable() raises
DriveError), only reset_fault() does, and then enable() is needed to drive again. The same rules
as data: DRIVE_TRANSITIONS (test_drive_simulated checks SimulatedDrive against every pair).

The hardware component (loop.hardware) commands ENABLED while it is active: a drive reporting
any other state (disabled, switched on, quick stop, fault) is a fault there, named with its state.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


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
}


@dataclass(frozen=True)
class DriveFeedback:
    position: float  # joint coordinate from the encoder (quantized), m or rad
    velocity: float  # joint velocity estimate, m/s or rad/s
    current: float  # measured q-axis current, A
    effort: float  # joint force/torque delivered by the drive train, N or N*m
    state: DriveState
    fault: str | None  # why the drive is in FAULT, else None


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
