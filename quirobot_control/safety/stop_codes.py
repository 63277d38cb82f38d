"""Why the robot stopped, as a code a program branches on; the words stay beside it for people.

A stop is `Stop(code, reason)`: the code is set where the stop is decided (the hardware
component's checks, the drilling monitor, the control cycle, the DrillHole executor), never read
back out of the text. The same values travel as uint8 constants in msg/DrivesState.msg
(`stop_code`), msg/OperatingState.msg and action/DrillHole.action's result (`stop_code`):
test/control/safety/test_stop_codes.py checks the three files against this enum.

`merged_fault(drives, task)`: the one rule for what the robot's fault is when both the drives and
the task level hold one (the drives' latched stop first: it is what must be acknowledged), used by
the DrillHole executor's refusal and task_node's /quirobot/state alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class StopCode(IntEnum):
    """Why the drives, or a goal, stopped (0: no stop)."""

    NONE = 0
    #: A drive faulted, left Operation enabled or lost its home; a drive read, write, configure,
    #: activation, homing or resume failed (the hardware component's own checks).
    DRIVE_FAULT = 1
    #: safety.motion_monitor: a non-finite command, a soft limit, an overspeed, a following error,
    #: the command watchdog, a virtual fixture.
    SAFETY_LIMIT = 2
    #: safety.drilling_monitor stopped the feed: thrust limit, spindle stall or not at speed,
    #: non-finite input (a goal it ends: ABORTED_MONITOR).
    DRILLING_MONITOR = 3
    #: An emergency stop (in simulation: injected).
    EMERGENCY_STOP = 4
    #: The control cycle failed, or the simulated clock's controller manager was taken as dead.
    CYCLE_LOST = 5
    #: Task level (the DrillHole executor), the drives still running: joint states lost.
    STATES_LOST = 6
    #: Task level: a joint beyond its path tolerance (procedures.path_check).
    PATH_TOLERANCE = 7
    #: Task level: a trajectory controller refused, aborted or did not answer.
    CONTROLLER = 8
    #: Task level: an internal error (a bug) ended the goal.
    INTERNAL = 9


@dataclass(frozen=True)
class Stop:
    """A stop: its code and its words ("" and NONE: no stop)."""

    code: StopCode = StopCode.NONE
    reason: str = ""

    def __bool__(self) -> bool:
        return self.code is not StopCode.NONE


#: No stop.
NO_STOP = Stop()


def merged_fault(drives: Stop, task: Stop) -> Stop:
    """The robot's fault: the drives' latched stop ("drives stopped: <reason>", its code) if any,
    else the task level's latched fault (an aborted goal), else NO_STOP."""
    if drives:
        return Stop(drives.code, f"drives stopped: {drives.reason}")
    return task
