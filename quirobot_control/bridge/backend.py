"""Where the drive bridge's drives come from: the `DriveBackend` interface.

`DriveBridge` (bridge.drive_bridge) runs the hardware component on one `Drive` per joint; a backend
owns those drives and whatever makes them move, and tells the bridge's control cycle where its
I/O happens:

    before_read()   feedback for this period is ready (plant sensed, or a SYNC sent and answered)
    hardware.read(), hardware.write()   (the bridge; write() sends the current commands)
    after_write()   the period elapses (physics stepped; nothing on a real bus)
    close()         every drive stopped, resources released (idempotent)

Backends: `simulation.simulated_backend.SimulatedBackend` (SimulatedDrives on the MuJoCo plant) and
`bridge.canopen_backend.CanopenBackend` (CiA 402 drives on the CAN buses of the parameter file). This
module holds only the interface, so that importing it loads neither backend's dependencies.
"""

from __future__ import annotations

from typing import Protocol

from quirobot_control.drives.interface import Drive
from quirobot_description.machine_identity import MachineIdentity


class DriveStartupError(ValueError):
    """The drives could not be brought up (bus, node, configuration); the text names which."""


class DriveBackend(Protocol):
    """The drives of the bridge and the I/O points of its control cycle (see the module doc)."""

    #: One Drive per commanded joint (the joints the backend was opened for), keyed by name.
    drives: dict[str, Drive]
    #: Which machine these drives are: their serial numbers (quirobot_description.machine_identity),
    #: what a calibration must name for the bridge to drill on it.
    machine: MachineIdentity

    def before_read(self) -> None: ...

    def after_write(self) -> None: ...

    def close(self) -> list[str]:
        """Stop every drive and release the backend; the problems met (empty if none)."""
        ...
