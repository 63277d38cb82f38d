"""An in-process MotionPort for the DrillHole executor's tests: two trajectory controllers (the
arm's five joints, the feed) on an ideal plant that follows an accepted trajectory's samples from
its start time, on a simulated clock that `sleep` advances.

Not a mock of the executor: the plant moves only as the trajectories it was sent say, and the
tests measure the tip with the forward kinematics of that motion. Faults a test can inject:
an acceptance that reaches the executor late or never (the controller accepted all the same),
a controller that refuses or aborts at a time, a drive stop at a time (every joint holds), joint
states that stop or arrive late (`states_delay`: the pose of that long ago, stamped then), a
joint that falls behind its trajectory (`lag_joint` by `lag` s from `lag_from` s), a cancel at
a time or when a phase starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.procedures.drill_hole_executor import DrillHoleExecutor
from quirobot_control.procedures.drill_hole_port import Measurement, MotionRecord, MotionStatus, StackStatus
from quirobot_control.procedures.drill_hole_types import DrillFeedback
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import DrillParameters

#: The drill feed's column in the drill's axis vectors.
FEED = DrillParameters.feed_index

COLUMNS = {"arm": list(range(FEED)), "feed": [FEED]}


@dataclass
class Controller:
    """A joint trajectory controller over `columns` of the plant."""

    columns: list[int]
    goal: tuple[JointTrajectory, float, MotionRecord] | None = None
    refuse: int = 0  # goals still to refuse
    abort_at: float = math.inf  # s: the running goal aborts (a path tolerance) at this time
    accepted_goals: int = 0

    def accept(self, trajectory: JointTrajectory, start: float, record: MotionRecord) -> bool:
        if self.refuse > 0:
            self.refuse -= 1
            return False
        if self.goal is not None:  # a new goal preempts the running one
            self.goal[2].ended(MotionStatus.CANCELED, "preempted")
        self.goal = (trajectory, start, record)
        self.accepted_goals += 1
        return True

    def hold(self, status: MotionStatus, reason: str = "") -> None:
        if self.goal is not None:
            self.goal[2].ended(status, reason)
            self.goal = None


@dataclass
class PlantPort:
    """The port (see the module docstring); `position` (6,) is the plant's true pose."""

    position: np.ndarray
    time: float = 0.0
    response_delay: dict[str, float] = field(default_factory=dict)  # s, per part; inf: never
    prepare_seconds: float = 0.0  # s of plant time each prepare takes (a slow message build)
    drive_stop_at: float = math.inf
    drive_stop_reason: str = "drill_feed: following error (injected)"
    drive_stop_code: StopCode = StopCode.SAFETY_LIMIT  # its kind, as the hardware latches it
    states_stop_at: float = math.inf
    states_delay: float = 0.0  # s: the joint states the executor reads are this old (a loaded machine)
    lag_joint: int = -1  # this joint (drill axis index) follows its trajectory `lag` s late from `lag_from` s
    lag: float = 0.0
    lag_from: float = math.inf
    ready_at: float = 0.0  # s: the controllers become active then (a fresh launch)
    #: s: the drives take the controllers' commands from then on (drive_node's start-up handshake;
    #: late: a controller restarted for a stale hold)
    commanded_at: float = 0.0
    enabled: bool = True
    cancel_at: float = math.inf
    clients_gone_at: float = math.inf  # s: the goal's action client disappears then
    cancel_in_phase: str = ""  # cancel once the feedback shows this phase (and cancel_depth)
    cancel_depth: float = -math.inf  # m the tip must be past the entry for cancel_in_phase
    executor: DrillHoleExecutor | None = None
    feedback: list[DrillFeedback] = field(default_factory=list)
    contexts: list[HoleContext | None] = field(default_factory=list)  # None: a goal's end
    context_goals: list[str] = field(default_factory=list)  # the goal of each
    trace: list[tuple[float, np.ndarray]] = field(default_factory=list)  # (t, pose (6,))
    cancel_alls: int = 0
    sent: list[tuple[str, JointTrajectory, float]] = field(default_factory=list)  # (part, trajectory, start)
    prepared: list[tuple[str, JointTrajectory]] = field(default_factory=list)  # (part, trajectory)
    frames: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (4, 4) world_from_frame
    #: The drive side's answer to a hole: "" takes it at once, else refuses it with this reason;
    #: None: never answers (a drive side that is not there).
    hole_answer: str | None = ""

    def __post_init__(self) -> None:
        self.position = np.asarray(self.position, dtype=float).copy()
        self.controllers = {part: Controller(columns) for part, columns in COLUMNS.items()}
        self._deliveries: list[tuple[float, MotionRecord, str]] = []  # (when, record, part; "" refused)
        self._stop_reason = ""
        self._hole = ("", "", "")  # the drive side's (hole in force, refused goal, why)

    # --- the port --------------------------------------------------------------------------
    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        step = 0.002
        for _ in range(max(int(round(seconds / step)), 1)):
            self._advance(step)

    def status(self) -> StackStatus:
        missing = tuple(f"{p}_controller" for p in COLUMNS) if self.time < self.ready_at else ()
        return StackStatus(
            drives_heard=True,
            enabled=self.enabled and not self._stop_reason,
            homed=True,
            stop_reason=self._stop_reason,
            stop_code=self.drive_stop_code if self._stop_reason else StopCode.NONE,
            controllers_missing=missing,
            commanded=self.time >= self.commanded_at,
            hole_goal_id=self._hole[0],
            hole_refused_goal_id=self._hole[1],
            hole_refused=self._hole[2],
        )

    def measured(self) -> Measurement | None:
        stamp = min(self.time - self.states_delay, self.states_stop_at)
        age = max(self.time - self.states_stop_at, 0.0)
        return Measurement(self._pose_at(stamp), np.zeros(6), age, stamp)

    def _pose_at(self, t: float) -> np.ndarray:
        """The plant's pose at time `t` (s): the last traced at or before it."""
        for when, pose in reversed(self.trace):
            if when <= t + 1e-9:
                return pose.copy()
        return self.trace[0][1].copy() if self.trace else self.position.copy()

    def prepare(self, part: str, trajectory: JointTrajectory) -> None:
        self.prepared.append((part, trajectory))
        if self.prepare_seconds > 0.0:
            self.sleep(self.prepare_seconds)

    def send(self, part: str, trajectory: JointTrajectory, start: float) -> MotionRecord:
        self.sent.append((part, trajectory, start))
        controller = self.controllers[part]
        record = MotionRecord(lambda: self._cancel_all(part))
        ready = self.time >= self.ready_at
        accepted = ready and controller.accept(trajectory, start, record)
        delay = self.response_delay.get(part, 0.0)
        self._deliveries.append((self.time + delay, record, part if accepted else ""))
        self._deliver()
        return record

    def goal_clients(self) -> int:
        return 0 if self.time >= self.clients_gone_at else 1

    def publish_feedback(self, feedback: DrillFeedback) -> None:
        self.feedback.append(feedback)
        if (
            self.executor is not None
            and self.cancel_in_phase
            and feedback.phase == self.cancel_in_phase
            and feedback.depth >= self.cancel_depth
        ):
            self.cancel_in_phase = ""
            self.executor.request_cancel()

    def publish_context(self, goal_id: str, context: HoleContext | None) -> None:
        self.contexts.append(context)
        self.context_goals.append(goal_id)
        if context is None:
            self._hole = ("", *self._hole[1:])
        elif self.hole_answer == "":
            self._hole = (goal_id, *self._hole[1:])
        elif self.hole_answer is not None:
            self._hole = (self._hole[0], goal_id, self.hole_answer)

    def state_changed(self) -> None:
        pass

    def world_from(self, frame: str) -> np.ndarray:
        if frame not in self.frames:
            raise LookupError(f"no frame {frame!r} among {sorted(self.frames)}")
        return self.frames[frame]

    # --- the plant -------------------------------------------------------------------------
    def _cancel_all(self, part: str) -> None:
        """The zero-UUID cancel request: every goal of that controller."""
        self.cancel_alls += 1
        self.controllers[part].hold(MotionStatus.CANCELED)

    def _deliver(self) -> None:
        due = [d for d in self._deliveries if d[0] <= self.time]
        self._deliveries = [d for d in self._deliveries if d[0] > self.time]
        for _, record, part in due:
            if part:
                record.accepted(lambda part=part, record=record: self._cancel_goal(part, record))
            else:
                record.refused("the controller is not active")

    def _cancel_goal(self, part: str, record: MotionRecord) -> None:
        controller = self.controllers[part]
        if controller.goal is not None and controller.goal[2] is record:
            controller.hold(MotionStatus.CANCELED)

    def _advance(self, step: float) -> None:
        self.time += step
        if self.time >= self.drive_stop_at and not self._stop_reason:
            self._stop_reason = self.drive_stop_reason
            for controller in self.controllers.values():
                controller.hold(MotionStatus.ABORTED, "the hardware stopped")
        if self.time >= self.cancel_at and self.executor is not None:
            self.cancel_at = math.inf
            self.executor.request_cancel()
        for controller in self.controllers.values():
            if controller.goal is None:
                continue
            trajectory, start, record = controller.goal
            if self.time >= controller.abort_at:
                controller.abort_at = math.inf
                controller.hold(MotionStatus.ABORTED, "path tolerance violated")
                continue
            if self.time < start:
                continue
            q = trajectory.sample(self.time - start)[0]
            if self.lag_joint in controller.columns and self.time >= self.lag_from:
                q = q.copy()
                q[self.lag_joint] = trajectory.sample(self.time - start - self.lag)[0][self.lag_joint]
            self.position[controller.columns] = q[controller.columns]
            if self.time - start > trajectory.duration:
                controller.hold(MotionStatus.SUCCEEDED)
        self._deliver()
        self.trace.append((self.time, self.position.copy()))
