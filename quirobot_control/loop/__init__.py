"""The control loop: the hardware component, one PID per joint, the safety layer, their configuration.

- hardware: `QuirobotHardware`, ros2_control's SystemInterface lifecycle in Python (on_init from
  the URDF's <ros2_control> block, on_configure, on_activate, read, write; LIFECYCLE_TRANSITIONS;
  one `stop(reason)` (category 1, broadcast then confirmed), cleared only by
  `acknowledge_stop(note)`; `hold`/`resume` (category 2); `home(time)` while inactive, motion
  refused until every drive is homed; the task's virtual fixtures per cycle), on its `Drive`s in
  CSP (the drive's PID) or CST (a PID per joint here); `hardware_info_from_urdf(xml)`;
- homing: `HomingSequence`, the parameter file's homing order run on the drives' own homing;
- `PID`, `PIDGains` are re-exported from drives.pid (the PID runs in the drive in CSP, in the
  hardware component in CST);
- safety: `SafetyMonitor` (command limiter braking at the acceleration limits, soft limits,
  following error, overspeed, command watchdog armed at activation; one latched stop);
- event_log: `EventLog`, the bounded, counted log of non-fatal safety events;
- drilling_monitor: `DrillingMonitor`, the drilling process safety run every cycle on the feed's
  effort and the spindle (thrust limit, far-cortex breakthrough, early breakthrough, spindle
  interlock and stall, non-finite input);
- breakthrough_plan: `plan_breakthrough`, the plan-time check that the breakthrough detector will
  see the breakthrough a plan relies on (armed on the far cortex the plan drills into), or
  `BreakthroughPlanError` naming why not;
- goal_monitor: `monitor_settings_for_goal`, the monitor's settings for one hole (the goal's
  thrust limit, never above the robot's);
- control_config: config/control.yaml as a `ControlConfig` (`control_configuration(params)`).

Real-motor path: nothing here loads MuJoCo, ruckig, matplotlib or pinocchio.
"""

from quirobot_control.drives.pid import PID, PIDGains
from quirobot_control.loop.control_config import ControlConfig, control_configuration, load_control_config
from quirobot_control.loop.event_log import EventLog
from quirobot_control.loop.hardware import (
    LIFECYCLE_TRANSITIONS,
    CallbackReturn,
    HardwareInfo,
    QuirobotHardware,
    ReturnType,
    hardware_info_from_urdf,
)
from quirobot_control.loop.safety import SafetyMonitor, SafetyStopError

__all__ = [
    "LIFECYCLE_TRANSITIONS",
    "PID",
    "CallbackReturn",
    "ControlConfig",
    "EventLog",
    "HardwareInfo",
    "PIDGains",
    "QuirobotHardware",
    "ReturnType",
    "SafetyMonitor",
    "SafetyStopError",
    "control_configuration",
    "hardware_info_from_urdf",
    "load_control_config",
]
