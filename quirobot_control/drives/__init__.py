"""Servo drives: one interface, a simulated drive, and the CANopen CiA 402 master and slave.

- interface: `Drive` (enable, disable, quick_stop, reset_fault, command_current, feedback; v2:
  set_mode, command_position, configure_position_loop, halt, resume, start_homing), its
  `DriveState` machine, `DriveMode` (CST, CSP, HOMING), `StopCategory` and `DriveFeedback`; the
  hardware component knows only this;
- drive_control: `DriveController`, the drive's own control above its current loop (CSP with the
  PID, the category 0/1/2 stop ramps, the master watchdog, homing), motor- and bus-free: the
  simulated drive and the CiA 402 slave simulator both run it;
- pid: `PID`, `PIDGains` (position -> motor current, A): one joint's position loop, run by the
  drive in CSP and by the hardware component in CST;
- simulated: `SimulatedDrive` (motor, current loop, transmission, encoder, holding brake, the
  DriveController above them), `drive_for_joint(params, name, master_watchdog=False,
  absolute_encoder=True)`;
- cia402: the CiA 402 tables (object dictionary, PDO mappings, controlwords, statusword patterns,
  error codes), the only thing the master and the simulated slave share besides the units;
- canopen_units: `TorqueScaling`, CiA 402 per-mille torque and current units, `MotionScaling`
  (positions, velocities, accelerations in encoder increments);
- bus_load: the CAN bus load of one SYNC cycle (CSP or CST);
- canopen_master: `CanopenDrive`, a real CiA 402 drive behind `Drive` (python `canopen`; CSP,
  CST, homing, stops configured on the drive), `canopen_drives_for_buses(params, networks)`,
  `MasterHeartbeat` (the master's heartbeat, ticked by the control loop);
- slave_simulator: `CanopenServoSimulator`, a simulated CiA 402 drive on a CAN bus (tests, bench),
  SimulatedDrive's drive-side law behind its object dictionary; it watches its master.
"""

from quirobot_control.drives.bus_load import bus_load
from quirobot_control.drives.canopen_master import (
    CanopenDrive,
    canopen_drives_for_buses,
    canopen_drives_for_robot,
)
from quirobot_control.drives.canopen_units import TorqueScaling
from quirobot_control.drives.cia402 import Cia402State
from quirobot_control.drives.drive_control import DriveController
from quirobot_control.drives.interface import (
    Drive,
    DriveError,
    DriveFeedback,
    DriveMode,
    DriveState,
    StopCategory,
)
from quirobot_control.drives.simulated import SimulatedDrive, drive_for_joint
from quirobot_control.drives.slave_simulator import CanopenServoSimulator, simulator_for_axis

__all__ = [
    "CanopenDrive",
    "CanopenServoSimulator",
    "Cia402State",
    "Drive",
    "DriveController",
    "DriveError",
    "DriveFeedback",
    "DriveMode",
    "DriveState",
    "SimulatedDrive",
    "StopCategory",
    "TorqueScaling",
    "bus_load",
    "canopen_drives_for_buses",
    "canopen_drives_for_robot",
    "drive_for_joint",
    "simulator_for_axis",
]
