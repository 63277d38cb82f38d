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
Its names load on first use (PEP 562): a simulated run imports the bridge's core without the
CANopen stack (python-can and canopen, a tenth of a second of `quirobot simulate`'s start-up).
"""

from __future__ import annotations

import importlib

#: name -> the module of this package that defines it.
_EXPORTS = {
    "DRIVE_BACKENDS": "drive_bridge",
    "BridgeError": "drive_bridge",
    "CanBusConfig": "canopen_backend",
    "CanopenBackend": "canopen_backend",
    "ControllerStopper": "controller_stopper",
    "DriveBackend": "backend",
    "DriveBridge": "drive_bridge",
    "DriveStartupError": "backend",
    "Lockstep": "lockstep",
    "hole_setup": "drilling_context",
    "open_bridge": "drive_bridge",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
