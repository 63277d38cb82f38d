"""The drive bridge: the hardware component on a backend's drives, behind drive_node's topics.

- drive_bridge: `open_bridge(backend, params, control, robot_description, now=...)`, a
  `DriveBridge` taking the controllers' commands and returning the joint states, once per
  control period (start-up handshake, watchdog, safety layer);
- backend: the `DriveBackend` interface (the drives and the I/O points of a cycle),
  `DriveStartupError`;
- canopen_backend: `CanopenBackend`, CiA 402 drives on the CAN buses of the parameter file;
- drilling_context: `HoleContext` (msg/DrillingContext without ROS) and `hole_setup`, the
  drilling monitor's settings and the virtual fixtures of the hole being drilled;
- lockstep: `Lockstep`, the simulated plant's clock in lock-step with the controller manager;
- controller_stopper: `ControllerStopper`, the trajectory controllers stop with the drives;
- signal_shutdown: `SignalShutdown`, drive_node's SIGINT and SIGTERM as a shutdown request
  within a bound.

The simulated backend (simulation.simulated_backend) is imported only when asked for, so the
real-motor path loads no MuJoCo.
"""

from quirobot_control.bridge.backend import DriveBackend, DriveStartupError
from quirobot_control.bridge.canopen_backend import CanBusConfig, CanopenBackend
from quirobot_control.bridge.controller_stopper import ControllerStopper
from quirobot_control.bridge.drilling_context import HoleContext, hole_setup
from quirobot_control.bridge.drive_bridge import (
    DRIVE_BACKENDS,
    BridgeError,
    DriveBridge,
    open_backend,
    open_bridge,
)
from quirobot_control.bridge.lockstep import Lockstep

__all__ = [
    "DRIVE_BACKENDS",
    "BridgeError",
    "CanBusConfig",
    "CanopenBackend",
    "ControllerStopper",
    "DriveBackend",
    "DriveBridge",
    "DriveStartupError",
    "HoleContext",
    "Lockstep",
    "hole_setup",
    "open_backend",
    "open_bridge",
]
