"""Controllers stop with the drives (ROS-free core of drive_node's controller stopper).

As the UR driver's controller_stopper: when the drives stop (a fault, the command watchdog, a
safety stop, an e-stop, `disable`) the trajectory controllers are deactivated through the
controller manager's switch_controller, so that no controller keeps integrating a trajectory on
drives that do not move (the joint_trajectory_controller cancels its goal on deactivation:
"Current goal cancelled during deactivate transition"; the reason is /quirobot/drives/state's stop_reason).
They stay inactive until the drives are enabled again (`enable`), which reactivates them: a
controller activated on enabled drives commands the measured pose (the drive bridge's start-up
handshake takes it as the first command).

A controller that took over before the drives' states reached the controller manager holds the
pose its interfaces held then (the description's initial values), far from the robot: the drive
bridge ignores its commands (DrivesStatus.stale_controller) and the drives would hold until the
start-up watchdog stops them, or until a goal's first command, which a trajectory controller
interpolates from that stale hold (seen: a goal aborted with the robot unmoved). So the stopper
restarts the controllers (deactivated, then activated again, they take the state their
interfaces hold then over, the bridge's start-up handshake), every `restart_interval` s while the
hold stays stale (the states may still be on their way: DDS discovery between drive_node and the
controller manager's plugin; a restart 36 ms after the first stale command found them missing
still), at most `max_restarts` times per enabling; then the start-up watchdog decides.

`ControllerStopper.update(enabled, stop_reason, stale_controller, now)` is called on every change of
the drives' state and returns the switch to request, if any; `done(switch, ok)` records the
controller manager's answer (a refused or unanswered switch is asked again on the next update).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_STOPPED_CONTROLLERS", "RESTART", "ControllerStopper", "ControllerSwitch"]

#: The controllers that move the robot (config/controllers.yaml); the joint_state_broadcaster
#: only reads and stays active.
DEFAULT_STOPPED_CONTROLLERS = ("joint_trajectory_controller", "drill_feed_controller")
#: The reason of both switches of a restart (module docstring).
RESTART = (
    "restart: a controller held a pose far from the measured one "
    "(it took over before the drives' states reached it)"
)


@dataclass(frozen=True)
class ControllerSwitch:
    """A switch_controller request: `activate` or deactivate `controllers`, and why."""

    activate: bool
    controllers: tuple[str, ...]
    reason: str


@dataclass
class ControllerStopper:
    """Which switch the drives' state asks for (module docstring)."""

    controllers: Sequence[str] = DEFAULT_STOPPED_CONTROLLERS
    #: The controllers are (or are being) held inactive because the drives stopped.
    stopped: bool = False
    #: A switch sent and not answered yet.
    pending: ControllerSwitch | None = None
    #: s between two restarts of a stale hold, and how many per enabling (module docstring).
    restart_interval: float = 2.0
    max_restarts: int = 10
    #: Restarts for a stale hold since the drives were last enabled, and the last one's time (s).
    restarts: int = 0
    restarted_at: float = -math.inf
    #: Deactivated for a restart: the next activation is its second half.
    restarting: bool = False

    def update(
        self, enabled: bool, stop_reason: str | None, stale_controller: bool = False, now: float = 0.0
    ) -> ControllerSwitch | None:
        """The switch to request at `now` (s, any monotonic clock) for drives `enabled` (the
        hardware active) with the latched `stop_reason` (None: none) and `stale_controller`
        (DrivesStatus's), or None."""
        if self.pending is not None or not self.controllers:
            return None
        want_stopped = not enabled or stop_reason is not None
        if (
            stale_controller
            and not want_stopped
            and not self.stopped
            and self.restarts < self.max_restarts
            and now - self.restarted_at >= self.restart_interval
        ):
            self.restarts += 1
            self.restarted_at = now
            self.restarting = self.stopped = True
            self.pending = ControllerSwitch(False, tuple(self.controllers), RESTART)
            return self.pending
        if want_stopped == self.stopped:
            return None
        self.stopped = want_stopped
        if want_stopped:
            why = f"drives stopped: {stop_reason}" if stop_reason else "drives disabled"
            switch = ControllerSwitch(False, tuple(self.controllers), why)
            self.restarts, self.restarting = 0, False  # the next enabling may restart them again
        else:
            switch = ControllerSwitch(
                True, tuple(self.controllers), RESTART if self.restarting else "drives enabled"
            )
            self.restarting = False
        self.pending = switch
        return switch

    def done(self, switch: ControllerSwitch, ok: bool) -> None:
        """The controller manager answered `switch` (`ok`: switched). A failed switch is undone
        here, so the next update asks for it again."""
        if self.pending is switch:
            self.pending = None
        if not ok:  # back to the state before it: the next update asks again
            self.stopped = switch.activate
            self.restarting = self.restarting or (switch.activate and switch.reason == RESTART)
