"""The control loop: the hardware component, one PID per joint, the safety layer, their configuration.

- hardware: `QuirobotHardware`, ros2_control's SystemInterface lifecycle in Python (on_init from
  the URDF's <ros2_control> block, on_configure, on_activate, read, write; LIFECYCLE_TRANSITIONS;
  one `stop(reason)`, cleared only by `acknowledge_stop(note)`), running a PID per joint on its
  `Drive`s; `hardware_info_from_urdf(xml)`;
- `PID`, `PIDGains` are re-exported from drives.pid (the PID runs in the drive in CSP, in the
  hardware component in CST);
- safety: `SafetyMonitor` (command limiter braking at the acceleration limits, soft limits,
  following error, overspeed, command watchdog armed at activation; one latched stop);
- event_log: `EventLog`, the bounded, counted log of non-fatal safety events;
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
