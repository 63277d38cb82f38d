"""The drive bridge: the hardware component on a backend's drives, behind drive_node's topics.

- drive_bridge: `open_bridge(backend, params, control, robot_description, now=...)`, a
  `DriveBridge` taking the controllers' commands and returning the joint states, once per
  control period (start-up handshake, watchdog, safety layer);
- backend: the `DriveBackend` interface (the drives and the I/O points of a cycle),
  `DriveStartupError`;
- canopen_backend: `CanopenBackend`, CiA 402 drives on the CAN buses of the parameter file.

The simulated backend (simulation.simulated_backend) is imported only when asked for, so the
real-motor path loads no MuJoCo.
"""

from quirobot_control.bridge.backend import DriveBackend, DriveStartupError
from quirobot_control.bridge.canopen_backend import CanBusConfig, CanopenBackend
from quirobot_control.bridge.drive_bridge import (
    DRIVE_BACKENDS,
    BridgeError,
    DriveBridge,
    open_backend,
    open_bridge,
)

__all__ = [
    "DRIVE_BACKENDS",
    "BridgeError",
    "CanBusConfig",
    "CanopenBackend",
    "DriveBackend",
    "DriveBridge",
    "DriveStartupError",
    "open_backend",
    "open_bridge",
]
