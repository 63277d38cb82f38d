"""The hardware component: ros2_control's SystemInterface in Python, its homing and configuration.

- component: `QuirobotHardware` (on_init from the URDF's <ros2_control> block, on_configure,
  on_activate, read, write; LIFECYCLE_TRANSITIONS; one `stop(reason)` (category 1, broadcast
  then confirmed), cleared only by `acknowledge_stop(note)`; `hold`/`resume` (category 2);
  `home(time)` while inactive, motion refused until every drive is homed; the task's virtual
  fixtures per cycle), on its `Drive`s in CSP (the drive's PID) or CST (a PID per joint here);
- lifecycle: `LifecycleState`, `CallbackReturn`, `ReturnType` and LIFECYCLE_TRANSITIONS, the
  table the component applies;
- hardware_info: `hardware_info_from_urdf(xml)`, the URDF's <ros2_control> block as `HardwareInfo`;
- command_interfaces: the component's state and command interfaces (`NotHomedError`);
- joint_control: `JointControl`, one joint and its control law (PID + feed-forward, effort
  limits), and `on_every_drive`, the one "try every drive, collect the failures" loop;
- homing: `HomingSequence`, the parameter file's homing order run on the drives' own homing;
- control_config: config/control.yaml as a `ControlConfig` (`control_configuration(params)`).

Real-motor path: nothing here loads a simulator, MuJoCo, ruckig, matplotlib or pinocchio.
No re-exports: importing one module loads only what it needs.
"""
