"""The ROS path's closed loop without DDS: the DrillHole executor (task_node's core) on the drive
bridge (drive_node's core) with the simulated backend's plant, one control period at a time. What
`quirobot simulate` runs for an incision (simulation.executor_run) and the tests' way to the
robot's own path in-process.

`BridgePort` is the executor's MotionPort. Its two trajectory controllers (the arm's five joints,
the feed) sample their trajectory at each control period from its start time, as
joint_trajectory_controller does in the controller manager's update, and hold their last command
otherwise (the measured pose before any goal, as JTC holds at activation); the commands go to
`DriveBridge.command`, then `DriveBridge.step` runs the hardware, the drilling monitor, the
compensation and one plant period. The executor's measured state is the bridge's joint state
(what drive_node publishes), its drilling context reaches `DriveBridge.set_drilling_context` (what
drive_node does with /quirobot/drilling_context). `tips` records the plant's true drill tip every
period: the hole, as `quirobot simulate` measures it; `on_period(port)`, if set, is called after
each period (a recorder reads the bridge and the plant there).

Not a mock: every number comes from the same bridge, hardware, plant and executor the ROS nodes
run; only the transport (DDS, the controller manager's scheduling) is left out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from time import perf_counter

import numpy as np

from quirobot_control.bridge.bridge_error import BridgeError
from quirobot_control.bridge.drive_bridge import DriveBridge
from quirobot_control.hardware.lifecycle import LifecycleState
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.procedures.drill_hole_port import Measurement, MotionRecord, MotionStatus, StackStatus
from quirobot_control.procedures.drill_hole_types import DrillFeedback
from quirobot_control.safety.hole_context import HoleContext
from quirobot_description.parameters import DrillParameters, axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")
#: The two trajectory controllers' columns of DRILL_AXES (the executor's PARTS), as slices: numpy
#: copies a slice's values faster than a list's (every control period).
COLUMNS = {
    "arm": slice(0, DrillParameters.feed_index),
    "feed": slice(DrillParameters.feed_index, DrillParameters.feed_index + 1),
}


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
    #: Called after each control period with the port (a recorder), None: nothing.
    on_period: Callable[[BridgePort], None] | None = None
    #: Called before each control period with the port (a fault injection), None: nothing.
    before_period: Callable[[BridgePort], None] | None = None
    #: False: drive_node is gone (a killed process, a lost bus: the master-loss fault). The bridge
    #: runs no more periods, the plant goes on with the drives on their own (their watchdogs), and
    #: the executor hears nothing new: the last joint state ages, the last drive state stays.
    host_running: bool = True
    #: Every trajectory sent, with its part and start time (s on the port's clock), in order.
    sent: list[tuple[str, JointTrajectory, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if tuple(self.bridge.names) != DRILL_AXES:
            raise ValueError(f"BridgePort drives the six axes, the bridge has {self.bridge.names}")
        self.dt = self.bridge.dt
        sample = self.bridge.sample()
        self.command = np.array(sample.position, dtype=float)  # (6,) the controllers' position command
        self.velocity = np.zeros(6)
        self.goals: dict[str, _Goal | None] = {part: None for part in COLUMNS}
        self.periods = 0
        #: s of wall time the last bridge period took without the plant's physics (the controller's
        #: cost: safety layer, PID, drilling monitor, fixtures)
        self.period_wall = 0.0
        self._measured: Measurement | None = None  # this period's joint state, once asked
        self._status: StackStatus | None = None  # the last drive state published

    # --- the port --------------------------------------------------------------------------
    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        for _ in range(max(int(round(seconds / self.dt)), 1)):
            self._period()

    def status(self) -> StackStatus:
        """What drive_node's DrivesState says (nodes.drive_status): from the hardware while it is
        active (its last feedback), from the drives' own feedback otherwise."""
        if not self.host_running and self._status is not None:
            return self._status
        hw = self.bridge.hardware
        if hw.lifecycle is LifecycleState.ACTIVE:
            enabled, homed = True, not hw.unhomed
        else:
            status = self.bridge.status()
            enabled, homed = status.enabled, status.homed
        self._status = StackStatus(
            drives_heard=True,
            enabled=enabled,
            homed=homed,
            stop_reason=hw.stop_reason or "",
            breakthrough=self.bridge.breakthrough or "",
            stop_code=hw.stop_code,
            breakthrough_early=self.bridge.breakthrough_early,
            hole_goal_id=context.goal_id if (context := self.bridge.hole.context) is not None else "",
            hole_refused_goal_id=refused[0] if (refused := self.bridge.hole_refused) else "",
            hole_refused=refused[1] if refused else "",
        )
        return self._status

    def measured(self) -> Measurement | None:
        """The joint state drive_node published after its last period (made once per period),
        aged by the time since (only without the host does it age)."""
        measured = self._measured
        if measured is None:
            hw = self.bridge.hardware
            if hw.lifecycle is LifecycleState.ACTIVE:  # DriveBridge.sample's two columns, not all three
                position, effort = hw.states("position"), hw.states("effort")
            else:
                sample = self.bridge.sample(False)
                position, effort = sample.position, sample.effort
            measured = self._measured = Measurement(np.array(position), np.array(effort), 0.0, self.time)
        if self.time > measured.stamp:  # built directly: dataclasses.replace walks the fields
            return Measurement(measured.position, measured.effort, self.time - measured.stamp, measured.stamp)
        return measured

    def prepare(self, part: str, trajectory: JointTrajectory) -> None:
        """Nothing to build: `send` hands the trajectory over as it is."""

    def send(self, part: str, trajectory: JointTrajectory, start: float) -> MotionRecord:
        self.sent.append((part, trajectory, start))
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
        # A hole refused is in the bridge's status (hole_refused) for the goal, as over drive_node.
        with contextlib.suppress(BridgeError):
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
        if self.before_period is not None:
            self.before_period(self)
        self.periods += 1
        if self.host_running:
            if (self.periods - 1) % self.periods_per_command == 0:
                self._controllers()
            began = perf_counter()
            self.bridge.run_period(self.time)
            self.period_wall = perf_counter() - began - self.bridge.backend.physics_wall
            self._measured = None
        else:  # the drives and the physics only
            self.bridge.backend.before_read()
            self.bridge.backend.after_write()
            self.period_wall = 0.0
        self.time += self.dt
        self.bridge.backend.plant.forward_kinematics()  # the tip now, not at the last physics step's start
        self.tips.append((self.time, self.bridge.backend.true_tip()))
        if self.on_period is not None:
            self.on_period(self)

    def _controllers(self) -> None:
        """The trajectory controllers' cycle: each samples its goal and the command goes to the bridge."""
        if self.bridge.hardware.stop_reason:  # the hardware stopped: the controllers' goals abort
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
