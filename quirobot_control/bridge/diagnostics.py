"""What /diagnostics shows of the drives and of the task node, ROS-free.

`Diagnostic` is one diagnostic_msgs/DiagnosticStatus as data (level, name, message, hardware_id,
key-value pairs); the nodes turn it into the message. Levels as diagnostic_msgs defines them
(OK 0, WARN 1, ERROR 2).

- `drive_diagnostics(status)`: one entry per drive ("quirobot/drives/<joint>": state, fault,
  position, current, homed; ERROR with the fault, or with the hardware's latched stop; WARN while
  disabled or not homed) and one for the hardware component ("quirobot/drives": lifecycle and
  the latched stop, ERROR with its reason), and with a drill feed "quirobot/drilling": the hole
  the drilling monitor watches as the drive side measures it (goal, the kinematics the tip's depth
  is measured with, calibrated or nominal, and that depth in m; issue 33 item 6).
- `task_diagnostic(...)`: task_node's operating state ("quirobot/task": enabled, homed, busy,
  phase, fault; ERROR with the fault's reason, WARN while disabled or not homed).
"""

from __future__ import annotations

from dataclasses import dataclass

from quirobot_control.bridge.drilling_context import HoleStatus
from quirobot_control.bridge.drive_bridge import DrivesStatus

OK, WARN, ERROR = 0, 1, 2


@dataclass(frozen=True)
class Diagnostic:
    level: int  # OK, WARN or ERROR
    name: str
    message: str
    hardware_id: str
    values: tuple[tuple[str, str], ...]


def drive_diagnostics(status: DrivesStatus) -> list[Diagnostic]:
    """The hardware component's entry, then one per drive (see the module docstring)."""
    stop = status.stop_reason
    if stop:
        level, message = ERROR, f"stopped: {stop}"
    elif not status.enabled:
        level, message = WARN, f"disabled ({status.lifecycle})"
    elif not status.homed:
        level, message = WARN, "not homed"
    else:
        level, message = OK, "enabled"
    entries = [
        Diagnostic(
            level,
            "quirobot/drives",
            message,
            "quirobot",
            (
                ("lifecycle", status.lifecycle),
                ("enabled", str(status.enabled)),
                ("homed", str(status.homed)),
                ("stop_reason", stop or ""),
            ),
        )
    ]
    for drive in status.drives:
        if drive.fault:
            level, message = ERROR, f"{drive.state}: {drive.fault}"
        elif drive.state in ("fault", "quick_stop"):
            level, message = ERROR, f"{drive.state}: {stop or 'stopped'}"
        elif drive.state != "enabled" or not drive.homed:
            level, message = WARN, drive.state if drive.homed else f"{drive.state}, not homed"
        else:
            level, message = OK, drive.state
        entries.append(
            Diagnostic(
                level,
                f"quirobot/drives/{drive.name}",
                message,
                drive.name,
                (
                    ("state", drive.state),
                    ("fault", drive.fault or ""),
                    ("position", f"{drive.position:.9g}"),
                    ("current", f"{drive.current:.6g}"),
                    ("homed", str(drive.homed)),
                ),
            )
        )
    if status.hole is not None:
        entries.append(hole_diagnostic(status.hole))
    return entries


def hole_diagnostic(hole: HoleStatus) -> Diagnostic:
    """The drilling monitor's hole ("quirobot/drilling", see the module docstring); always OK (its
    faults are the drives' stop)."""
    depth = "" if hole.tip_depth is None else repr(hole.tip_depth)  # round-trips: FK compares to it
    if hole.goal_id is None:
        message = "no hole: the thrust limit on the feed position"
    else:
        where = "" if hole.tip_depth is None else f": tip {hole.tip_depth * 1e3:.3f} mm past the entry"
        message = f"goal {hole.goal_id}{where} ({hole.kinematics} kinematics)"
    return Diagnostic(
        OK,
        "quirobot/drilling",
        message,
        "quirobot",
        (("goal_id", hole.goal_id or ""), ("kinematics", hole.kinematics), ("tip_depth", depth)),
    )


def task_diagnostic(*, enabled: bool, homed: bool, busy: bool, phase: str, fault_reason: str) -> Diagnostic:
    """task_node's operating state as one entry (see the module docstring)."""
    if fault_reason:
        level, message = ERROR, f"fault: {fault_reason}"
    elif not enabled:
        level, message = WARN, "disabled"
    elif not homed:
        level, message = WARN, "not homed"
    else:
        level, message = OK, f"busy: {phase}" if busy else "ready"
    return Diagnostic(
        level,
        "quirobot/task",
        message,
        "quirobot",
        (
            ("enabled", str(enabled)),
            ("homed", str(homed)),
            ("busy", str(busy)),
            ("phase", phase),
            ("fault", fault_reason),
        ),
    )
