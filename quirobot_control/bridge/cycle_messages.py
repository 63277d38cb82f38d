"""What crosses the pipes between drive_node and the drive cycle process (bridge.cycle_process:
the parent's side; bridge.cycle_child: the child's): the start-up spec, the child's answers and
news, and the requests it serves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from quirobot_control.bridge.canopen_backend import CanBusConfig
from quirobot_control.bridge.cycle_exchange import CycleOutput, CycleSettings
from quirobot_control.bridge.drive_bridge import DrivesStatus
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_description.parameters import RobotParameters

__all__ = [
    "EXCLUSIVE_REQUESTS",
    "REQUESTS",
    "CycleFailure",
    "CycleNews",
    "CycleReply",
    "CycleSpec",
    "CycleUp",
    "DrivesStateKey",
]

#: The requests the child serves: the bridge's lifecycle ones run exclusively (the cycle keeps the
#: bus alive meanwhile), the others are reads or hand-overs the bridge makes safe itself.
EXCLUSIVE_REQUESTS = ("enable", "disable", "home", "acknowledge_stop")
REQUESTS = (*EXCLUSIVE_REQUESTS, "status", "set_drilling_context", "timing", "stats", "close")


@dataclass(frozen=True)
class CycleSpec:
    """Everything the child needs to open the drives (start_canopen_cycle's arguments)."""

    params: RobotParameters
    control: ControlConfig
    robot_description: str  # URDF XML with the <ros2_control> block
    can: CanBusConfig
    settings: CycleSettings = field(default_factory=CycleSettings)
    #: s the master waits for an SDO answer (canopen's SdoClient.RESPONSE_TIMEOUT); None: canopen's
    #: 0.3 s. A bench relaxes it for Python drives simulated on the same loaded cores.
    sdo_response_timeout: float | None = None
    #: Attempts per SDO request (canopen's SdoClient.MAX_RETRIES, which counts attempts: 1 sends
    #: once); None: canopen's 1. A retry's late duplicate answer is dropped (sdo_answers).
    sdo_attempts: int | None = None
    #: The read end of the command pipe (bridge.command_pipe), a file descriptor the child
    #: inherits; None: no pipe (start_cycle_process sets it).
    command_fd: int | None = None


@dataclass(frozen=True)
class CycleNews:
    """What changed in the child since its previous news."""

    latest: CycleOutput | None  # the cycle's latest output if new, else None
    events: tuple[str, ...] = ()  # the bridge's new events
    safety: tuple[str, ...] = ()  # the safety layer's new messages (its bounded log)
    messages: tuple[str, ...] = ()  # the cycle's messages (a refused command, an error)
    state: DrivesStateKey | None = None  # the drives' state if it changed
    status: DrivesStatus | None = None  # the bridge's status, read by the cycle when `state` changed


class DrivesStateKey(NamedTuple):
    """What drive_node publishes the drives' state on when it changes (DrivesStatusOut.report)."""

    lifecycle: str  # the hardware's LifecycleState value
    stop_reason: str | None
    breakthrough: str | None
    started: bool  # the start-up handshake is done
    hole_goal_id: str | None  # the goal of the hole in force
    hole_refused: tuple[str, str] | None


@dataclass(frozen=True)
class CycleUp:
    """The child's start-up answer: what the OS granted, the joints and the hardware's name."""

    report: str
    names: tuple[str, ...]
    hardware_name: str


@dataclass(frozen=True)
class CycleFailure:
    """The child could not start, or a request failed: the error's class name and its text."""

    kind: str
    text: str


@dataclass(frozen=True)
class CycleReply:
    number: int
    result: object = None
    error: CycleFailure | None = None
