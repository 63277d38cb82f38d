"""Controllers stop with the drives (ROS-free core of drive_node's controller stopper).

As the UR driver's controller_stopper: when the drives stop (a fault, the command watchdog, a
safety stop, an e-stop, `disable`) the trajectory controllers are deactivated through the
controller manager's switch_controller, so that no controller keeps integrating a trajectory on
drives that do not move (the joint_trajectory_controller cancels its goal on deactivation:
"Current goal cancelled during deactivate transition"; the reason is /quirobot/drives/state's stop_reason).
They stay inactive until the drives are enabled again (`enable`), which reactivates them: a
controller activated on enabled drives commands the measured pose (the drive bridge's start-up
handshake takes it as the first command).

`ControllerStopper.update(enabled, stop_reason)` is called on every change of the drives' state
and returns the switch to request, if any; `done(switch, ok)` records the controller manager's
answer (a refused or unanswered switch is asked again on the next update).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from quirobot_control.hardware.controllers import ARM_CONTROLLER, FEED_CONTROLLER

__all__ = ["DEFAULT_STOPPED_CONTROLLERS", "ControllerStopper", "ControllerSwitch"]

#: The controllers that move the robot (config/controllers.yaml); the joint_state_broadcaster
#: only reads and stays active.
DEFAULT_STOPPED_CONTROLLERS = (ARM_CONTROLLER, FEED_CONTROLLER)


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

    def update(self, enabled: bool, stop_reason: str | None) -> ControllerSwitch | None:
        """The switch to request now for drives `enabled` (the hardware active) with the latched
        `stop_reason` (None: none), or None."""
        if self.pending is not None or not self.controllers:
            return None
        want_stopped = not enabled or stop_reason is not None
        if want_stopped == self.stopped:
            return None
        self.stopped = want_stopped
        if want_stopped:
            why = f"drives stopped: {stop_reason}" if stop_reason else "drives disabled"
            switch = ControllerSwitch(False, tuple(self.controllers), why)
        else:
            switch = ControllerSwitch(True, tuple(self.controllers), "drives enabled")
        self.pending = switch
        return switch

    def done(self, switch: ControllerSwitch, ok: bool) -> None:
        """The controller manager answered `switch` (`ok`: switched). A failed switch is undone
        here, so the next update asks for it again."""
        if self.pending is switch:
            self.pending = None
        if not ok:  # back to the state before it: the next update asks again
            self.stopped = switch.activate
