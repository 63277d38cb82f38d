"""A plant's simulated drives stepped together: one call per physics step for all of them.

`DriveArray(drives)` takes the SimulatedDrives of a plant's joints (its axes order) and advances
them all over one physics step from the joints' positions and velocities (arrays (n,)), writing
their efforts into an array (n,). Each drive stays a `SimulatedDrive` object, the per-joint view
the drive bridge and the hardware component talk to (CiA 402 state, mode, fault, brake); the
array runs `simulated_drive.advance_drive` for each, so the law is the drive's own, bit for bit.

Why a flat loop over the drives and not numpy ufuncs over arrays of their states: the current
loop's five samples per physics step are a sequential recurrence, so numpy can only vectorise
across the six drives, and on arrays of six a ufunc costs more than the scalar arithmetic it
replaces (measured on the development machine: one physics step's five current-loop samples for
six drives took 67 us as 14 numpy ufuncs a sample on arrays (6,), 10 us as inlined scalar code).
What costs in the per-object step is the calls (encoder, controller, current loop: about 12 a
drive a step), which `advance_drive` removes, and then the interpreter itself: the step of all
drives has a compiled twin, `advance_drives` from the C extension `_drive_kernel`
(drive_kernel.c), which runs advance_drive's law on the same objects' state (their __slots__,
read and written at their offsets), a CSP drive's position-loop sample included, calling back
into the Python for what is rare (a fault, a stop, homing, the watchdog). Bit for bit the same
(test_drive_kernel.py, test_drive_array.py); where it was not built, `advance_drives_in_python`
runs. `COMPILED` says which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, _check_time_step, advance_drive
from quirobot_control.drives.drive_control import DriveController
from quirobot_control.drives.interface import DriveMode, DriveState
from quirobot_control.drives.pid import PID
from quirobot_control.models.motor import CurrentLoop


class DriveArray:
    """The drives of a plant's joints (in the plant's axes order), advanced together."""

    def __init__(self, drives: Sequence[SimulatedDrive]) -> None:
        self.drives: tuple[SimulatedDrive, ...] = tuple(drives)
        #: (n,) N or N*m: each drive's holding effort when its brake is engaged.
        self.holding_effort = np.array([drive.brake_holding_effort for drive in self.drives])

    def __len__(self) -> int:
        return len(self.drives)

    def __getitem__(self, index: int) -> SimulatedDrive:
        return self.drives[index]

    def __iter__(self):
        return iter(self.drives)

    def advance(
        self, dt: float, positions: np.ndarray, velocities: np.ndarray, efforts: np.ndarray
    ) -> np.ndarray:
        """Every drive advances `dt` s (>= 0; 0: the encoders sample only) with its joint's position
        and velocity (n,) (m or rad, m/s or rad/s, held over the step); their joint efforts (N or
        N*m) are written into `efforts` (n,), which is returned."""
        if not (math.isfinite(dt) and dt >= 0.0):
            _check_time_step(", ".join(drive.name for drive in self.drives), dt)
        return advance_drives(self.drives, dt, positions, velocities, efforts)

    def brakes_engaged(self) -> tuple[bool, ...]:
        """(n,) whether each drive's holding brake holds now (SimulatedDrive.brake_engaged)."""
        return brakes_holding(self.drives)


def brakes_holding_in_python(drives: tuple[SimulatedDrive, ...]) -> tuple[bool, ...]:
    """Each drive's control.brake_holding (asked at every physics step: compiled where built)."""
    return tuple([drive.control.brake_holding for drive in drives])  # a list builds faster


def advance_drives_in_python(
    drives: tuple[SimulatedDrive, ...],
    dt: float,
    positions: np.ndarray,
    velocities: np.ndarray,
    efforts: np.ndarray,
) -> np.ndarray:
    """Every drive over `dt` s (checked by the caller) by simulated_drive.advance_drive with its
    joint's position and velocity (float64 (n,)); efforts (n,) written and returned."""
    # Python floats: the same values as numpy's, but faster to compute with one at a time.
    positions, velocities = positions.tolist(), velocities.tolist()
    for j, drive in enumerate(drives):
        efforts[j] = advance_drive(drive, dt, positions[j], velocities[j])
    return efforts


try:
    # (From the package, not the module path: the import rules' graph knows no compiled module.)
    from quirobot_control.drive_simulators import _drive_kernel

    _drive_kernel.bind(
        SimulatedDrive,
        DriveController,
        CurrentLoop,
        PID,
        DriveState.ENABLED,
        DriveState.FAULT,
        DriveMode.CST,
        DriveMode.CSP,
        advance_drive,
    )
    advance_drives = _drive_kernel.advance_drives
    brakes_holding = _drive_kernel.brakes_holding

    #: Whether `advance_drives` and `brakes_holding` are the compiled twins (False: the Python above).
    COMPILED = True
except ImportError:  # not built here: no C compiler or no Python headers at install
    advance_drives = advance_drives_in_python
    brakes_holding = brakes_holding_in_python
    COMPILED = False
