"""Servo drives on the real-drive path: one interface, the drive-side law, the CANopen CiA 402 master.

- interface: `Drive` (enable, disable, quick_stop, reset_fault, command_current, feedback; v2:
  set_mode, command_position, configure_position_loop, halt, resume, start_homing), its
  `DriveState` machine, `DriveMode` (CST, CSP, HOMING), `StopCategory` and `DriveFeedback`; the
  hardware component knows only this;
- drive_control: `DriveController`, the drive's own control above its current loop (CSP with the
  PID, the category 0/1/2 stop ramps, the master watchdog, homing), motor- and bus-free: the
  simulated drive and the CiA 402 slave simulator both run it;
- pid: `PID`, `PIDGains` (position -> motor current, A): one joint's position loop, run by the
  drive in CSP and by the hardware component in CST;
- cia402: the CiA 402 tables (object dictionary, PDO mappings, controlwords, statusword patterns,
  error codes), the only thing the master and the simulated slave share besides the units;
- canopen_units: `TorqueScaling`, CiA 402 per-mille torque and current units, `MotionScaling`
  (positions, velocities, accelerations in encoder increments);
- bus_load: the CAN bus load of one SYNC cycle (CSP or CST);
- canopen_master (a package, one concern per module: core, configuration, state_machine,
  commands, feedback): `CanopenDrive`, a real CiA 402 drive behind `Drive` (python `canopen`;
  CSP, CST, homing, stops configured on the drive), `canopen_drives_for_buses(params, networks)`,
  `MasterHeartbeat` (the master's heartbeat, ticked by the control loop);

The simulators (`SimulatedDrive`, the CiA 402 slave) live in quirobot_control.drive_simulators:
the real-drive path never imports them (.importlinter's real-drive-path contract).
No re-exports: importing one module loads only what it needs.
"""
