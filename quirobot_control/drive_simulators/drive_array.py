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
drive a step), which `advance_drive` removes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, _check_time_step, advance_drive


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
        # Python floats: the same values as numpy's, but faster to compute with one at a time.
        positions, velocities = positions.tolist(), velocities.tolist()
        for j, drive in enumerate(self.drives):
            efforts[j] = advance_drive(drive, dt, positions[j], velocities[j])
        return efforts

    def brakes_engaged(self) -> tuple[bool, ...]:
        """(n,) whether each drive's holding brake holds now (SimulatedDrive.brake_engaged)."""
        return tuple([drive.control.brake_holding for drive in self.drives])  # a list builds faster
