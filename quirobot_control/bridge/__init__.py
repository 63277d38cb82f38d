"""The drive bridge: the hardware component on a backend's drives, behind drive_node's topics.

- drive_bridge: `open_bridge(backend, params, control, robot_description, now=...)`, a
  `DriveBridge` on the backend it is handed, taking the controllers' commands and returning the
  joint states, once per control period (start-up handshake, watchdog, safety layer, the hole's
  drilling monitor);
- hole_in_force: the drilling part of `DriveBridge` (the hole's monitor swapped in at a period
  boundary, the feed after a breakthrough, the thrust feed-forward); pin_in_force: its pin part
  (a pin goal's insertion, the driver's torque monitor); bridge_error: `BridgeError`;
- backend: the `DriveBackend` interface (the drives and the I/O points of a cycle),
  `DriveStartupError`;
- canopen_backend: `CanopenBackend`, CiA 402 drives on the CAN buses of the parameter file;
- drive_cycle: `DriveCycle`, `start_canopen_cycle`, the real drives' cycle in its own thread;
  cycle_exchange (`CycleSettings`, `CommandMailbox`, `CycleOutput`, `CycleStats`: what crosses
  between the ROS side and the cycle) and cycle_realtime (`RealtimeReport`, SCHED_FIFO, locked
  memory, the absolute-deadline sleep) beside it;
- cycle_process: `start_cycle_process`, that cycle in a process of its own (issue 32), drive_node's
  real-drive path: `CycleProcess` and `RemoteBridge` on drive_node's side, cycle_child the
  child (`python -m quirobot_control.bridge.cycle_child`), cycle_messages what crosses the pipes;
- drilling_context: `hole_setup`, what the bridge runs for a goal's hole (safety.hole_context.
  HoleContext, msg/DrillingContext without ROS): monitor, fixtures, thrust feed-forward;
- lockstep: `Lockstep`, the simulated plant's clock in lock-step with the controller manager;
- controller_stopper: `ControllerStopper`, the trajectory controllers stop with the drives;
- signal_shutdown: `SignalShutdown`, drive_node's SIGINT and SIGTERM as a shutdown request
  within a bound.

The simulated backend (simulation.simulated_backend.simulated_bridge) sits above the bridge: the
bridge imports neither the simulation nor the planner, so the real-motor path loads no MuJoCo.
"""

from quirobot_control.bridge.backend import DriveBackend, DriveStartupError
from quirobot_control.bridge.canopen_backend import CanBusConfig, CanopenBackend
from quirobot_control.bridge.controller_stopper import ControllerStopper
from quirobot_control.bridge.drilling_context import hole_setup
from quirobot_control.bridge.drive_bridge import (
    DRIVE_BACKENDS,
    BridgeError,
    DriveBridge,
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
    "Lockstep",
    "hole_setup",
    "open_bridge",
]
