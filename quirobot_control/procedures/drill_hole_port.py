"""The DrillHole executor's way to the robot: `MotionPort` (task_node: FollowJointTrajectory
clients and subscriptions, nodes/motion_port.py; tests: an in-process plant), the `Motion`s it
sends (`MotionRecord`: one whose answers arrive from elsewhere), what it measures
(`Measurement`) and knows of the stack (`StackStatus`), and what a goal still waits for
(`waiting_for`).

Times are the port's clock (simulated time in simulation), never the wall clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from enum import Enum
from typing import Protocol

import numpy as np

from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.procedures.drill_hole_types import DrillFeedback
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.safety.stop_codes import NO_STOP, Stop, StopCode
from quirobot_description.records import frozen_record


class MotionStatus(Enum):
    PENDING = "pending"  # sent, no answer yet
    ACTIVE = "active"  # accepted, running
    SUCCEEDED = "succeeded"
    REFUSED = "refused"  # the controller rejected it
    ABORTED = "aborted"  # the controller stopped it (a tolerance, a fault)
    CANCELED = "canceled"


class Motion(Protocol):
    """One trajectory sent to one controller."""

    def status(self) -> MotionStatus: ...

    def reason(self) -> str:
        """Why it was refused or aborted (the controller's words), "" otherwise."""
        ...

    def cancel(self) -> None:
        """Stop it (the controller holds). Idempotent. A motion still PENDING is cancelled as soon
        as its acceptance arrives: nothing it carries may start after this call."""
        ...


class MotionRecord:
    """A `Motion` whose answers arrive from elsewhere (a ROS port's futures, a test plant's
    controller): `accepted(cancel_goal)`, `refused(reason)`, `ended(status, reason)`.

    `cancel()` before the acceptance arrived calls `cancel_all` at once (a cancel request for every
    goal of that controller: the acceptance may never arrive, rclpy issue 1123, while the controller
    did accept and drives the trajectory) and cancels the goal itself when its acceptance arrives.
    Thread-safe: the answers come on the port's threads, `status` and `cancel` on the executor's."""

    def __init__(self, cancel_all: Callable[[], None]) -> None:
        self._lock = threading.Lock()
        self._cancel_all = cancel_all
        self._cancel_goal: Callable[[], None] | None = None
        self._status = MotionStatus.PENDING
        self._reason = ""
        self._cancel_requested = False

    def status(self) -> MotionStatus:
        with self._lock:
            return self._status

    def reason(self) -> str:
        with self._lock:
            return self._reason

    def accepted(self, cancel_goal: Callable[[], None]) -> None:
        with self._lock:
            if self._status is not MotionStatus.PENDING:
                return
            self._status, self._cancel_goal = MotionStatus.ACTIVE, cancel_goal
            cancel = self._cancel_requested
        if cancel:
            cancel_goal()

    def refused(self, reason: str = "") -> None:
        self.ended(MotionStatus.REFUSED, reason)

    def ended(self, status: MotionStatus, reason: str = "") -> None:
        with self._lock:
            if self._status in (MotionStatus.PENDING, MotionStatus.ACTIVE):
                self._status, self._reason = status, reason

    def cancel(self) -> None:
        with self._lock:
            if self._cancel_requested:
                return
            self._cancel_requested = True
            status, cancel_goal = self._status, self._cancel_goal
        if status is MotionStatus.ACTIVE and cancel_goal is not None:
            cancel_goal()
        elif status is MotionStatus.PENDING:
            self._cancel_all()


#: The controllers a plan is split over: the arm's five joints and the drill feed.
PARTS = ("arm", "feed")


@frozen_record  # built at every cycle
class Measurement:
    position: np.ndarray  # (6,) m and rad, axes_for("drill") order
    effort: np.ndarray  # (6,) N and N*m
    age: float  # s since it was received, on the port's clock (joint states lost beyond states_lost)
    stamp: float  # s on the port's clock: when it was measured (its header stamp)


@frozen_record  # built at every cycle
class StackStatus:
    """What the port knows of the stack beneath it."""

    drives_heard: bool = False  # the drives' state was received at least once
    enabled: bool = False
    homed: bool = False
    stop_reason: str = ""  # the drives' latched stop, "" if none
    controllers_missing: tuple[str, ...] = ()  # controllers not active yet
    description: bool = True  # the robot description is published
    #: The drives' far-cortex breakthrough of the hole in force, "" if none: the feed is stopped and
    #: held for the retract (safety.feed_stop), no longer following its plan.
    breakthrough: str = ""
    stop_code: StopCode = StopCode.NONE  # the kind of the drives' latched stop (safety.stop_codes)
    #: That breakthrough came short of the imaged far cortex' exit: held and retracted the same
    #: way, but the goal fails.
    breakthrough_early: bool = False
    #: The drives take the controllers' commands (drive_node's start-up handshake is done); an
    #: in-process port is its own commander (True).
    commanded: bool = True
    #: The goal whose hole the drive side runs ("" none: the thrust limit alone): a goal moves only
    #: once its own is in force.
    hole_goal_id: str = ""
    #: The drive side's last hole refused: its goal ("" none) and why.
    hole_refused_goal_id: str = ""
    hole_refused: str = ""
    #: What of the hole in force the drive side does not watch ("" all of it: drive_node); a goal
    #: that drilled says it in its result (Gazebo: no drilling thrust).
    hole_unwatched: str = ""

    @property
    def drive_stop(self) -> Stop:
        """The drives' latched stop (NO_STOP if none)."""
        return Stop(self.stop_code, self.stop_reason) if self.stop_reason else NO_STOP


class MotionPort(Protocol):
    """The executor's only way to the robot (task_node: ROS; tests: an in-process plant)."""

    def now(self) -> float:
        """s on the port's clock (simulated time in simulation)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let `seconds` of the port's clock (at most) pass."""
        ...

    def status(self) -> StackStatus: ...

    def measured(self) -> Measurement | None:
        """The latest joint state, None before the first."""
        ...

    def prepare(self, part: str, trajectory: JointTrajectory) -> None:
        """Make ready what `send` of this `part` and `trajectory` will send (a port whose message
        takes time to build builds it here), before the start time is fixed: a message built
        after it would eat into start_delay (task_node built a plan's two 10 ms waypoint messages
        in 12 s under load on Gazebo, and its start had passed when the second went out)."""
        ...

    def send(self, part: str, trajectory: JointTrajectory, start: float) -> Motion:
        """Send `part`'s ("arm": the five arm joints, "feed": drill_feed) columns of trajectory
        (N, 6) to its controller, to start at `start` (s, the port's clock)."""
        ...

    def goal_clients(self) -> int:
        """How many action clients could still be waiting for the goal (0: its client is gone)."""
        ...

    def publish_feedback(self, feedback: DrillFeedback) -> None: ...

    def publish_context(self, goal_id: str, context: HoleContext | None) -> None:
        """The drive side's hole for goal `goal_id` (safety.hole_context); None: that goal's hole
        ends."""
        ...

    def state_changed(self) -> None:
        """The executor's phase, busy, fault or bit_in_bone changed (republish the state)."""
        ...

    def world_from(self, frame: str) -> np.ndarray:
        """(4, 4) world_from_frame now (task_node: tf2's latest transform to "world"); a frame it
        cannot transform raises LookupError saying why."""
        ...


def waiting_for(
    status: StackStatus, measurement: Measurement | None, states_lost: float, started: bool
) -> list[str]:
    """What a goal still waits for (empty: ready). `started`: the stack has been ready once; until
    then disabled drives without a stop are still starting (they enable as the controllers come
    up), after it they are the user's choice and a goal is refused instead."""
    missing = []
    if not status.drives_heard:
        missing.append("drives (/quirobot/drives/state)")
    if status.controllers_missing:
        missing.append(f"controllers: {', '.join(status.controllers_missing)}")
    if measurement is None or measurement.age > states_lost:
        missing.append("joint states")
    if not status.description:
        missing.append("robot description")
    if not started and status.drives_heard and status.homed and not status.enabled and not status.stop_reason:
        missing.append("drives enabled")
    if status.enabled and not status.commanded:
        missing.append("drives taking the controllers' commands (drive_node's start-up handshake)")
    return missing
