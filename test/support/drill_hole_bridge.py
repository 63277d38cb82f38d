"""The ROS path's closed loop without DDS: the DrillHole executor (task_node's core) on the drive
bridge (drive_node's core) with the simulated backend's plant, one control period at a time.

`BridgePort` is the executor's MotionPort. Its two trajectory controllers (the arm's five joints,
the feed) sample their trajectory at each control period from its start time, as
joint_trajectory_controller does in the controller manager's update, and hold their last command
otherwise (the measured pose before any goal, as JTC holds at activation); the commands go to
`DriveBridge.command`, then `DriveBridge.step` runs the hardware, the drilling monitor, the
compensation and one plant period. The executor's measured state is the bridge's joint state
(what drive_node publishes), its drilling context reaches `DriveBridge.set_drilling_context` (what
drive_node does with /quirobot/drilling_context). `tips` records the plant's true drill tip every
period: the hole, as `quirobot simulate` measures it.

Not a mock: every number comes from the same bridge, hardware, plant and executor the ROS nodes
run; only the transport (DDS, the controller manager's scheduling) is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from drill_hole_plant import COLUMNS  # the two controllers' joints (axes_for("drill") indices)

from quirobot_control.bridge.drive_bridge import DriveBridge
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.procedures.drill_hole_port import Measurement, MotionRecord, MotionStatus, StackStatus
from quirobot_control.procedures.drill_hole_types import DrillFeedback
from quirobot_control.safety.hole_context import HoleContext
from quirobot_description.parameters import axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")


@dataclass
class _Goal:
    trajectory: JointTrajectory
    start: float  # s on the port's clock
    record: MotionRecord


@dataclass
class BridgePort:
    """See the module docstring. `bridge`: a DriveBridge on the simulated backend, all six joints."""

    bridge: DriveBridge
    time: float = 0.0
    feedback: list[DrillFeedback] = field(default_factory=list)
    contexts: list[HoleContext | None] = field(default_factory=list)  # None: a goal's end
    tips: list[tuple[float, np.ndarray]] = field(default_factory=list)  # (t s, true tip (3,) m)
    #: control periods per controller cycle: the controller manager's rate is the drives' over it
    #: (drive_node's controller_rate; between commands the bridge holds the last one)
    periods_per_command: int = 1

    def __post_init__(self) -> None:
        if tuple(self.bridge.names) != DRILL_AXES:
            raise ValueError(f"BridgePort drives the six axes, the bridge has {self.bridge.names}")
        self.dt = self.bridge.dt
        sample = self.bridge.sample()
        self.command = np.array(sample.position, dtype=float)  # (6,) the controllers' position command
        self.velocity = np.zeros(6)
        self.goals: dict[str, _Goal | None] = {part: None for part in COLUMNS}
        self.periods = 0

    # --- the port --------------------------------------------------------------------------
    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        for _ in range(max(int(round(seconds / self.dt)), 1)):
            self._period()

    def status(self) -> StackStatus:
        status = self.bridge.status()
        return StackStatus(
            drives_heard=True,
            enabled=status.enabled,
            homed=status.homed,
            stop_reason=status.stop_reason or "",
            breakthrough=status.breakthrough or "",
        )

    def measured(self) -> Measurement | None:
        sample = self.bridge.sample()
        return Measurement(np.array(sample.position), np.array(sample.effort), 0.0, self.time)

    def send(self, part: str, trajectory: JointTrajectory, start: float) -> MotionRecord:
        record = MotionRecord(lambda: self._hold(part, MotionStatus.CANCELED))
        self._hold(part, MotionStatus.CANCELED, "preempted")
        self.goals[part] = _Goal(trajectory, start, record)
        record.accepted(lambda: self._hold(part, MotionStatus.CANCELED))
        return record

    def goal_clients(self) -> int:
        return 1

    def publish_feedback(self, feedback: DrillFeedback) -> None:
        self.feedback.append(feedback)

    def publish_context(self, goal_id: str, context: HoleContext | None) -> None:
        self.contexts.append(context)
        self.bridge.set_drilling_context(goal_id, context)

    def state_changed(self) -> None:
        pass

    def world_from(self, frame: str) -> np.ndarray:
        if frame != "world":
            raise LookupError(f"no frame {frame!r}: the bridge port knows only world")
        return np.eye(4)

    # --- the controllers and the bridge -----------------------------------------------------
    def _hold(self, part: str, status: MotionStatus, reason: str = "") -> None:
        goal = self.goals[part]
        if goal is not None:
            goal.record.ended(status, reason)
            self.goals[part] = None
            self.velocity[COLUMNS[part]] = 0.0

    def _period(self) -> None:
        """One control period: the controllers' commands (every periods_per_command), then the
        bridge's step."""
        if self.periods % self.periods_per_command == 0:
            self._controllers()
        self.periods += 1
        self.bridge.step(self.time)
        self.time += self.dt
        self.tips.append((self.time, self.bridge.backend.true_tip()))

    def _controllers(self) -> None:
        """The trajectory controllers' cycle: each samples its goal and the command goes to the bridge."""
        if self.bridge.status().stop_reason:  # the hardware stopped: the controllers' goals abort
            for part in COLUMNS:
                self._hold(part, MotionStatus.ABORTED, "the hardware stopped")
        for part, columns in COLUMNS.items():
            goal = self.goals[part]
            if goal is None or self.time < goal.start:
                continue
            q, v = goal.trajectory.sample(self.time - goal.start)[:2]
            self.command[columns], self.velocity[columns] = q[columns], v[columns]
            if self.time - goal.start > goal.trajectory.duration:
                self._hold(part, MotionStatus.SUCCEEDED)
        self.bridge.command(DRILL_AXES, self.command.tolist(), self.velocity.tolist(), now=self.time)
