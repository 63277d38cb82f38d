"""Where the drive bridge's drives come from: the `DriveBackend` interface and its simulated backend.

`DriveBridge` (drive_bridge.py) runs the hardware component on one `Drive` per joint; a backend
owns those drives and whatever makes them move, and tells the bridge's control cycle where its
I/O happens:

    before_read()   feedback for this period is ready (plant sensed, or a SYNC sent and answered)
    hardware.read(), hardware.write()   (the bridge; write() sends the current commands)
    after_write()   the period elapses (physics stepped; nothing on a real bus)
    close()         every drive stopped, resources released (idempotent)

Backends: `SimulatedBackend` (here: SimulatedDrives on the MuJoCo plant) and
`canopen_backend.CanopenBackend` (CiA 402 drives on the CAN buses of the parameter file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from quirobot_control.control_config import ControlConfig
from quirobot_control.drive import Drive, DriveError, SimulatedDrive, drive_for_joint
from quirobot_control.simulation import MujocoPlant
from quirobot_control.trajectory import TRAJECTORY_JOINTS, JointLimits
from quirobot_description.parameters import RobotParameters


class DriveStartupError(ValueError):
    """The drives could not be brought up (bus, node, configuration); the text names which."""


class DriveBackend(Protocol):
    """The drives of the bridge and the I/O points of its control cycle (see the module doc)."""

    #: One Drive per joint, keyed by name, in TRAJECTORY_JOINTS order.
    drives: dict[str, Drive]

    def before_read(self) -> None: ...

    def after_write(self) -> None: ...

    def close(self) -> list[str]:
        """Stop every drive and release the backend; the problems met (empty if none)."""
        ...


class SimulatedBackend:
    """SimulatedDrives on the MuJoCo rigid-body plant, stepped in `control.physics_substeps`."""

    def __init__(
        self, params: RobotParameters, control: ControlConfig, initial: Sequence[float] | None = None
    ) -> None:
        """`initial` (6,): start pose (m, rad); default mid-range with the drill feed retracted."""
        self.dt = control.dt
        self.drives: dict[str, SimulatedDrive] = {
            name: drive_for_joint(params, name) for name in TRAJECTORY_JOINTS
        }
        armature = np.array([d.reflected_inertia for d in self.drives.values()])
        self.substeps = control.physics_substeps
        self.plant = MujocoPlant(params, armature, self.dt / self.substeps)
        limits = JointLimits.from_parameters(params)
        if initial is not None:
            q0 = np.array(initial, dtype=float)
        else:  # mid-range, the drill retracted to its soft limit
            q0 = 0.5 * (limits.soft_lower + limits.soft_upper)
            q0[-1] = limits.soft_lower[-1]
        limits.check_position(q0, "drive bridge: initial pose")
        self.plant.reset(q0)
        for j, drive in enumerate(self.drives.values()):
            drive.advance(0.0, q0[j], 0.0)
        self._efforts = np.zeros(len(TRAJECTORY_JOINTS))

    def before_read(self) -> None:
        """Latch every encoder at the plant's state."""
        q, v = self.plant.position, self.plant.velocity
        for j, drive in enumerate(self.drives.values()):
            drive.advance(0.0, q[j], v[j])

    def after_write(self) -> None:
        """One control period of drive electronics and physics."""
        drives = list(self.drives.values())
        h = self.dt / self.substeps
        for _ in range(self.substeps):
            q, v = self.plant.position, self.plant.velocity
            for j, drive in enumerate(drives):
                self._efforts[j] = drive.advance(h, q[j], v[j])
            self.plant.follow_brakes(drives)
            self.plant.step(self._efforts)

    def close(self) -> list[str]:
        """Quick-stop every drive (the simulation needs no other release)."""
        problems = []
        for drive in self.drives.values():
            try:
                drive.quick_stop()
            except DriveError as error:
                problems.append(str(error))
        return problems
