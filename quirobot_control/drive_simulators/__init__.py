"""Simulated servo drives, off the real-drive path (.importlinter forbids drive_node, the CANopen
backend, the hardware component and the drives from importing them):

- simulated_drive: `SimulatedDrive` (motor, current loop, transmission, encoder, holding brake,
  drives.drive_control's DriveController above them), `drive_for_joint(params, name,
  master_watchdog=False, absolute_encoder=True)`: the drives of `quirobot simulate` and of
  drive_node's simulated backend (both with master_watchdog=True: they stop by themselves when
  their host stops writing, as real ones do);
- canopen_slave (a package: profile, joint_model, bus, servo): `CanopenServoSimulator`, a
  simulated CiA 402 drive on a CAN bus (tests, bench, `quirobot canopen-servo-simulator`),
  SimulatedDrive's drive-side law behind its object dictionary; it watches its master.
"""
