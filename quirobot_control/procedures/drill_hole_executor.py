"""The DrillHole procedure, ROS-free: readiness, checks, plan, execution, cancel, result.

`DrillHoleExecutor.run(request)` carries one goal from its request to its `DrillResult`:

1. waits (feedback phase "waiting", bounded by `ready_timeout` s of the port's clock) until the
   stack is up (`waiting_for`: drive state heard, controllers active, joint states flowing, the
   robot description, and at start-up the drives enabled);
2. refuses what cannot be done now (a fault, disabled, not homed: REJECTED_NOT_READY), a goal in a
   frame the port cannot transform to the world (REJECTED_FRAME, naming it; a known frame's goal
   is mapped to the world at this moment: `planning.drill_hole.goal_in_world`), a malformed goal
   (REJECTED_INVALID) or one beyond a limit (REJECTED_LIMIT) before anything moves;
3. plans it (`planning.drill_hole.plan_drill_hole`), slows every phase but the feed and the dwell
   for the joint states' lag, and sends the arm's and the feed's parts to the port with one start
   time `start_delay` s ahead; a part refused or not accepted by its start time aborts the goal;
4. every control period (`monitor_period` s, the controllers'; default `dt`; whatever the feedback
   rate): the measured tip depth, distance
   from the axis (FK) and feed effort, published with the plan's phase and progress as feedback
   every `feedback_period` s; events in order of severity (a drive stop, lost joint states, a
   joint beyond its path tolerance at the state's own stamp (procedures.path_check: the
   controllers leave the path unchecked), a motion that ended otherwise than as planned, a cancel,
   the motion done) go through
   `CancelPolicy` (procedures.cancel_policy), whose actions this class carries out;
5. ends with every motion it sent cancelled unless the goal succeeded (a motion whose acceptance
   has not arrived yet included: `Motion.cancel` covers it), the drilling context published
   inactive, and the result with its `ErrorCode`.

The port (`MotionPort`) is the only way out: task_node gives it FollowJointTrajectory clients and
subscriptions (nodes/task_node.py); tests give it an in-process plant. Times are the port's clock
(simulated time in simulation), never the wall clock.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum, IntEnum
from typing import Protocol

import numpy as np

from quirobot_control.planning.drill_hole import (
    BONE_PHASES,
    INVALID,
    DrillGoal,
    DrillPlan,
    GoalRejectedError,
    goal_in_world,
    phase_progress,
    plan_cancel_retract,
    plan_drill_hole,
    slowed_for_lag,
    tip_progress,
)
from quirobot_control.planning.tasks import IncisionTask, TaskError, load_task
from quirobot_control.planning.trajectory import JointTrajectory, Phase
from quirobot_control.procedures.cancel_policy import Action, CancelPolicy, Event, State
from quirobot_control.procedures.path_check import PathCheck
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.safety.stop_codes import NO_STOP, Stop, StopCode, merged_fault
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.parameters import DrillParameters, RobotParameters, axes_for

#: The frame goals are planned in (the robot's base, the URDF's root).
WORLD = "world"


class ErrorCode(IntEnum):
    """The DrillHole result's error_code (action/DrillHole.action's constants, same values)."""

    SUCCESS = 0
    REJECTED_INVALID = 1
    REJECTED_LIMIT = 2
    REJECTED_NOT_READY = 3
    ABORTED_FAULT = 4
    ABORTED_MONITOR = 5
    CANCELED_RETRACTED = 6
    CANCELED_BIT_IN_BONE = 7
    REJECTED_FRAME = 8


class Outcome(Enum):
    """The goal's terminal status on the action server."""

    SUCCEEDED = "succeeded"
    CANCELED = "canceled"
    ABORTED = "aborted"


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


@dataclass(frozen=True)
class Measurement:
    position: np.ndarray  # (6,) m and rad, axes_for("drill") order
    effort: np.ndarray  # (6,) N and N*m
    age: float  # s since it was received, on the port's clock (joint states lost beyond states_lost)
    stamp: float  # s on the port's clock: when it was measured (its header stamp)


@dataclass(frozen=True)
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

    @property
    def drive_stop(self) -> Stop:
        """The drives' latched stop (NO_STOP if none)."""
        return Stop(self.stop_code, self.stop_reason) if self.stop_reason else NO_STOP


@dataclass(frozen=True)
class DrillRequest:
    goal: DrillGoal
    task: str = ""  # the scene/task file (a name or a path: bone layers, no-go zones); "": no bone model
    frames: tuple[str, ...] = ("world", "world")  # frame_id of the entry and the direction
    goal_id: str = ""  # the goal's id (task_node: the action goal's UUID); "": one is made up


@dataclass(frozen=True)
class DrillFeedback:
    phase: str
    depth: float  # m, measured tip past the entry (< 0 above it)
    thrust: float  # N, the feed's measured effort
    lateral_error: float  # m, measured tip from the axis
    progress: float  # 0..1 of the current motion


@dataclass(frozen=True)
class DrillResult:
    outcome: Outcome
    error_code: ErrorCode
    message: str
    achieved_depth: float = float("nan")  # m, deepest measured tip past the entry while in bone
    max_lateral_deviation: float = float("nan")  # m, widest measured tip distance in bone
    bone_model: bool = False
    bit_in_bone: bool = False
    #: The stop that ended or refused the goal (safety.stop_codes; NONE: none, e.g. a success, a
    #: cancel, a goal beyond a limit).
    stop_code: StopCode = StopCode.NONE

    @property
    def success(self) -> bool:
        return self.error_code is ErrorCode.SUCCESS


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
    return missing


@dataclass(frozen=True)
class ExecutorConfig:
    params: RobotParameters
    dt: float  # s, the plan's sample period (the control period)
    tolerance: np.ndarray  # (6,) path tolerances, m and rad (config/control.yaml path_tolerance)
    goal_tolerance: np.ndarray  # (6,) the controllers' goal tolerances
    tip: Callable[[np.ndarray], np.ndarray]  # (6,) joint pose -> (3,) drill tip, m (FK)
    base_task: IncisionTask  # what a goal does not say: standoff, approach, dwell, retract rate
    feed_mass: float  # kg, the feed's effective inertia (the drilling monitor's, control.yaml)
    start_delay: float = 2.0  # s between sending a plan and its start time
    tracking_lag: float = 0.05  # s of joint-state lag the slowed phases allow for
    feedback_period: float = 0.02  # s between feedback messages (the checks run every monitor_period)
    #: s between the running goal's checks: the controllers' period, at which joint states arrive
    #: (task_node's monitor_rate); None: every plan sample (dt).
    monitor_period: float | None = None
    states_lost: float = 0.5  # s without joint states that ends a goal
    ready_timeout: float = 300.0  # s a goal waits for the stack (a fresh launch took > 60 s under load)
    response_timeout: float = 10.0  # s a retract or withdraw waits for its acceptance
    client_lost: float = 1.0  # s without any action client that count as a cancel
    #: The machine's identified geometric errors (a `quirobot calibrate` file): goals are planned
    #: and the tip measured with that machine's kinematics; None: the nominal model.
    calibration: GeometricErrors | None = None

    @classmethod
    def shipped(
        cls,
        params: RobotParameters | None = None,
        calibration: GeometricErrors | None = None,
        **options: float,
    ) -> ExecutorConfig:
        """From the shipped files: the parameter file (or `params`), the control period and the
        path tolerances (config/control.yaml), the controllers' goal tolerances
        (config/controllers.yaml), the kinematics (calibrated with `calibration` if given) and the
        incision task; `options` override the timing fields (start_delay, tracking_lag, ...)."""
        from quirobot_control.hardware.control_config import control_configuration
        from quirobot_control.planning.drill_hole import path_tolerances
        from quirobot_control.planning.tasks import Kinematics, load_task
        from quirobot_description.data_files import find_data_file
        from quirobot_description.parameters import load_parameters
        from quirobot_description.sourced_yaml import read_yaml_mapping
        from quirobot_kinematics import KinematicModel

        params = params or load_parameters()
        control = control_configuration(params)
        # A ros2_control parameter file (ros__parameters), not a {value, unit, source} one: parsed
        # by the sourced reader's hardened YAML parse (size, depth, duplicate keys), no schema.
        path = find_data_file("config/controllers.yaml")
        controllers = read_yaml_mapping(path, ValueError, "controllers file")
        return cls(
            params=params,
            dt=control.dt,
            tolerance=np.array([control.joint(name).path_tolerance for name in axes_for("drill")]),
            goal_tolerance=path_tolerances(controllers, kind="goal"),
            tip=Kinematics(KinematicModel.from_parameters(params).calibrated(calibration)).tip,
            base_task=load_task("incision"),
            feed_mass=control.joint(DrillParameters.feed_joint).effective_inertia,
            calibration=calibration,
            **options,
        )


#: m: a tip this far past the entry (or more) counts as in bone when a goal ends.
IN_BONE_MARGIN = 0.0


class DrillHoleExecutor:
    """Runs DrillHole goals one at a time over a `MotionPort` (module docstring)."""

    def __init__(self, port: MotionPort, config: ExecutorConfig) -> None:
        self.port = port
        self.config = config
        self._lock = threading.Lock()
        self._cancels = 0
        self._cancel_cause = "canceled"  # the latest request_cancel's
        self.started = False  # the stack has been ready once
        self.busy = False
        self.phase = ""
        self.fault = NO_STOP  # latched by an aborted goal; reset_fault clears it
        self.bit_in_bone = False  # the last goal ended with the bit in bone

    # --- called from other threads (the node's callbacks) ------------------------------------
    def accept(self) -> bool:
        """Take a new goal (False while one runs): reserves the executor, forgets old cancels."""
        with self._lock:
            if self.busy:
                return False
            self.busy, self._cancels, self._cancel_cause = True, 0, "canceled"
            return True

    def request_cancel(self, cause: str = "canceled") -> None:
        """Cancel the running goal as a client's cancel does (CancelPolicy: in bone the feed
        retracts; the goal ends canceled); `cause` opens the result's message (task_node's
        deactivation passes its own)."""
        with self._lock:
            self._cancels += 1
            self._cancel_cause = cause

    def reset_fault(self) -> str:
        """Clear the executor's latch; the reason cleared ("" if none)."""
        with self._lock:
            reason, self.fault, self.bit_in_bone = self.fault.reason, NO_STOP, False
        return reason

    @property
    def fault_reason(self) -> str:
        """The latched fault's words ("" if none)."""
        return self.fault.reason

    def robot_fault(self) -> Stop:
        """The robot's fault now: the drives' latched stop, else this executor's latch
        (safety.stop_codes.merged_fault, the one rule)."""
        return merged_fault(self.port.status().drive_stop, self.fault)

    def waiting_for(self) -> list[str]:
        """What a goal waits for now (marks the stack started once nothing is missing)."""
        missing = waiting_for(self.port.status(), self.port.measured(), self.config.states_lost, self.started)
        if not missing:
            self.started = True
        return missing

    # --- one goal ------------------------------------------------------------------------------
    def run(self, request: DrillRequest) -> DrillResult:
        """Carry out one goal (`accept` first when goals come from other threads)."""
        self.busy = True
        self._set_phase("waiting")
        try:
            return _Run(self, request).execute()
        finally:
            self.busy = False
            self._set_phase("")

    def _set_phase(self, phase: str) -> None:
        if phase != self.phase:
            self.phase = phase
            self.port.state_changed()

    def _cancels_requested(self) -> int:
        with self._lock:
            return self._cancels

    def _cancel_requested_cause(self) -> str:
        with self._lock:
            return self._cancel_cause


class _Run:
    """One goal's execution: the state the loop carries (module docstring, steps 1-5)."""

    def __init__(self, executor: DrillHoleExecutor, request: DrillRequest) -> None:
        self.executor = executor
        self.port = executor.port
        self.config = executor.config
        self.request = request
        self.policy = CancelPolicy()
        self.sent: list[Motion] = []  # every motion sent: cancelled at the end of a failed goal
        self.active: dict[str, Motion] = {}  # the motions whose outcome the goal waits for
        self.motion: JointTrajectory | None = None  # what is being executed now
        self.motion_start = 0.0  # s, its start time on the port's clock
        self.sent_at = 0.0  # s, when the last retract or withdraw was sent
        self.plan: DrillPlan | None = None
        self.deepest = float("nan")
        self.widest = float("nan")
        self.depth = float("nan")  # the latest measured tip depth past the entry
        self.why = ""  # the error that changed the course, "" for a cancel
        self.code = ErrorCode.ABORTED_FAULT  # the code of that error
        self.stop_code = StopCode.NONE  # the stop behind that error (safety.stop_codes)
        self.cancels_seen = 0
        self.canceled = False  # a cancel started the way out (the goal ends canceled)
        self.cancel_cause = "canceled"  # or the client's disappearance
        self.clients_gone_at = float("nan")  # s, since when no action client is left
        self.path = PathCheck(self.config.tolerance, axes_for("drill"))  # the plan's path, time-aligned
        self.breakthrough = ""  # the drives' far-cortex breakthrough during this goal, "" if none

    # --- steps ---------------------------------------------------------------------------------
    def execute(self) -> DrillResult:
        refused = self.check_fault() or self.wait_ready() or self.check_now()
        if refused is not None:
            return refused
        plan = self.plan_goal()
        if isinstance(plan, DrillResult):
            return plan
        self.plan = plan
        goal_id = self.request.goal_id or uuid.uuid4().hex
        self.port.publish_context(goal_id, plan.hole_context(goal_id))
        try:
            return self.drive()
        finally:
            self.port.publish_context(goal_id, None)

    def wait_ready(self) -> DrillResult | None:
        # The bound starts with the port's clock: ROS time reads 0 until the first /clock sample
        # (use_sim_time), then jumps to the simulation's epoch; counting from 0 would spend the
        # whole ready_timeout at that jump (seen in the ROS tier on a fresh sim.launch.py).
        deadline = None
        while missing := self.executor.waiting_for():
            now = self.port.now()
            if deadline is None and now > 0.0:
                deadline = now + self.config.ready_timeout
            if self.executor._cancels_requested():
                cause = self.executor._cancel_requested_cause()
                return self.finish(
                    Outcome.CANCELED, ErrorCode.CANCELED_RETRACTED, f"{cause} while waiting: nothing moved"
                )
            if deadline is not None and now > deadline:
                return self.refuse(
                    ErrorCode.REJECTED_NOT_READY,
                    f"not ready after {self.config.ready_timeout:.0f} s: waiting for {'; '.join(missing)}",
                )
            self.port.publish_feedback(
                DrillFeedback("waiting", float("nan"), float("nan"), float("nan"), 0.0)
            )
            self.port.sleep(self.config.feedback_period)
        return None

    def check_fault(self) -> DrillResult | None:
        """A latched fault refuses at once (no wait: nothing clears it but reset_fault)."""
        fault = self.executor.robot_fault()
        if fault:
            self.stop_code = fault.code
            return self.refuse(ErrorCode.REJECTED_NOT_READY, f"in fault: {fault.reason} (reset_fault)")
        return None

    def check_now(self) -> DrillResult | None:
        if (refused := self.check_fault()) is not None:
            return refused
        status = self.port.status()
        if not status.enabled:
            return self.refuse(ErrorCode.REJECTED_NOT_READY, "disabled: call /quirobot/enable")
        if not status.homed:
            return self.refuse(ErrorCode.REJECTED_NOT_READY, "not homed: call /quirobot/home")
        return self.goal_to_world()

    def goal_to_world(self) -> DrillResult | None:
        """The request's entry and direction mapped from their frames to the world (at goal time:
        a registration changes between goals, not during one)."""
        goal = self.request.goal
        entry_frame, direction_frame = (frame or WORLD for frame in self.request.frames)
        transforms = {}
        for frame in dict.fromkeys((entry_frame, direction_frame)):
            if frame == WORLD:
                continue
            try:
                transforms[frame] = self.port.world_from(frame)
            except LookupError as error:
                return self.refuse(
                    ErrorCode.REJECTED_FRAME,
                    f"goal rejected: frame {frame!r} has no transform to world: {error}",
                )
        try:
            if entry_frame != WORLD:
                goal = replace(goal, entry=goal_in_world(goal, transforms[entry_frame]).entry)
            if direction_frame != WORLD:
                goal = replace(goal, direction=goal_in_world(goal, transforms[direction_frame]).direction)
        except GoalRejectedError as error:
            return self.refuse(ErrorCode.REJECTED_FRAME, f"goal rejected: frame transform: {error}")
        self.request = replace(self.request, goal=goal, frames=(WORLD, WORLD))
        return None

    def goal_task(self) -> IncisionTask | DrillResult:
        """The request's task file; without one the shipped incision's settings (standoff,
        approach, dwell, retract rate) with neither its bone nor its no-go zones."""
        name = self.request.task
        if not name:
            return replace(self.config.base_task, no_go_zones=())
        try:
            task = load_task(name)
        except (TaskError, OSError, ValueError) as error:
            return self.refuse(ErrorCode.REJECTED_INVALID, f"goal rejected: task {name!r}: {error}")
        if not isinstance(task, IncisionTask):
            return self.refuse(
                ErrorCode.REJECTED_INVALID, f"goal rejected: task {name!r} is not a drilling task"
            )
        return task

    def plan_goal(self) -> DrillPlan | DrillResult:
        config = self.config
        task = self.goal_task()
        if isinstance(task, DrillResult):
            return task
        measurement = self.port.measured()
        try:
            return plan_drill_hole(
                self.request.goal,
                measurement.position,
                config.params,
                config.dt,
                task,
                start_tolerance=config.goal_tolerance,
                bone_model=bool(self.request.task),
                calibration=config.calibration,
                feed_mass=config.feed_mass,
            )
        except GoalRejectedError as error:  # InvalidGoalError too: its kind is INVALID
            code = ErrorCode.REJECTED_INVALID if error.kind == INVALID else ErrorCode.REJECTED_LIMIT
            return self.refuse(code, f"goal rejected: {error}")

    def drive(self) -> DrillResult:
        config = self.config
        trajectory = slowed_for_lag(self.plan.trajectory, config.tracking_lag, config.tolerance)
        start = self.port.now() + config.start_delay
        for part in PARTS:
            self.send(part, trajectory, start)
        self.motion, self.motion_start = trajectory, start
        self.policy.handle(Event.GOAL)
        while True:
            if (result := self.accepted_in_time(start)) is not None:
                return result
            if all(m.status() is not MotionStatus.PENDING for m in self.active.values()):
                break
            self.port.sleep(config.monitor_period or config.dt)
        # The checks run every control period whatever the feedback rate (a cancel in bone waited
        # for a 10 s feedback period: the tip went on from 2.0 to 11.8 mm, issue 33 item 4); the
        # feedback is published every feedback_period.
        feedback_due = -np.inf
        while True:
            now = self.port.now()
            publish = now >= feedback_due
            if publish:
                feedback_due = now + config.feedback_period
            phase = self.observe(publish)
            event = self.next_event()
            action = self.policy.handle(event) if event is not None else Action.NONE
            result = self.act(action, event, phase)
            if result is not None:
                return result
            self.port.sleep(config.monitor_period or config.dt)

    # --- the loop's parts ------------------------------------------------------------------------
    def send(self, part: str, trajectory: JointTrajectory, start: float) -> None:
        motion = self.port.send(part, trajectory, start)
        self.sent.append(motion)
        self.active[part] = motion

    def accepted_in_time(self, start: float) -> DrillResult | None:
        """While the plan's acceptance is awaited: a refusal, or no acceptance by the start time
        (a controller that gets a trajectory after its start time jumps to that time's sample),
        aborts before anything moves."""
        statuses = {part: m.status() for part, m in self.active.items()}
        refused = [part for part, s in statuses.items() if s is MotionStatus.REFUSED]
        if refused:
            self.stop_code = StopCode.CONTROLLER
            reason = "; ".join(self.active[p].reason() for p in refused if self.active[p].reason())
            return self.abort_before_motion(
                ErrorCode.REJECTED_NOT_READY,
                f"the {' and '.join(refused)} controller refused the plan"
                + (f": {reason}" if reason else ""),
            )
        pending = [part for part, s in statuses.items() if s is MotionStatus.PENDING]
        if pending and self.port.now() > start:
            self.stop_code = StopCode.CONTROLLER
            return self.abort_before_motion(
                ErrorCode.ABORTED_FAULT,
                f"the {' and '.join(pending)} controller did not accept the plan before its start time",
            )
        stop = self.port.status().drive_stop
        if stop:
            self.stop_code = stop.code
            return self.abort_before_motion(ErrorCode.ABORTED_FAULT, f"drives stopped: {stop.reason}")
        measurement = self.port.measured()
        if measurement is None or measurement.age > self.config.states_lost:
            self.stop_code = StopCode.STATES_LOST
            return self.abort_before_motion(ErrorCode.ABORTED_FAULT, "joint states lost")
        return None

    def observe(self, publish: bool = True) -> str:
        """The measured state (depth, deepest and widest in bone), published as feedback if
        `publish`; the phase of the current motion (plan events too)."""
        t = self.port.now() - self.motion_start
        phase, progress = phase_progress(self.motion, t)
        if self.policy.state in (State.MOVING, State.DRILLING):
            event = self.policy.phase_event(phase)
            if event is not None:
                self.policy.handle(event)
        measurement = self.port.measured()
        task = self.plan.task
        depth = lateral = thrust = float("nan")
        if measurement is not None:
            depth, lateral = tip_progress(self.config.tip(measurement.position), task.entry, task.direction)
            thrust = float(measurement.effort[DrillParameters.feed_index])
            self.depth = depth
            if (phase in BONE_PHASES or self.policy.in_bone) and depth >= 0.0:
                self.deepest = depth if not self.deepest >= depth else self.deepest
                self.widest = lateral if not self.widest >= lateral else self.widest
        self.executor._set_phase(phase)
        if publish:
            self.port.publish_feedback(DrillFeedback(phase, depth, thrust, lateral, float(progress)))
        return phase

    def next_event(self) -> Event | None:
        """This cycle's event, the most severe first."""
        status = self.port.status()
        stop = status.drive_stop
        if stop:
            self.why, self.stop_code = f"drives stopped: {stop.reason}", stop.code
            monitor = stop.code is StopCode.DRILLING_MONITOR
            self.code = ErrorCode.ABORTED_MONITOR if monitor else ErrorCode.ABORTED_FAULT
            return Event.DRIVE_STOP
        measurement = self.port.measured()
        if measurement is None or measurement.age > self.config.states_lost:
            age = float("inf") if measurement is None else measurement.age
            return self.error(f"joint states lost for {age:.2f} s", StopCode.STATES_LOST)
        if status.breakthrough and not self.breakthrough and self.policy.state is State.DRILLING:
            self.breakthrough = status.breakthrough  # this goal's (latched while it drills)
        if self.policy.state in (State.MOVING, State.DRILLING):  # the plan runs (not a way out)
            # After a breakthrough the drives stop the feed and hold it for the retract
            # (safety.feed_stop): behind its plan by design, not a path error.
            exempt = frozenset({DrillParameters.feed_joint}) if self.breakthrough else frozenset()
            deviation = self.path.check(
                self.motion, measurement.stamp - self.motion_start, measurement.position, exempt
            )
            if deviation is not None:
                return self.error(deviation, StopCode.PATH_TOLERANCE)
        for part, motion in self.active.items():
            status_ = motion.status()
            if status_ in (MotionStatus.REFUSED, MotionStatus.ABORTED, MotionStatus.CANCELED):
                detail = motion.reason() or status_.value
                return self.error(f"{part} controller stopped the motion: {detail}", StopCode.CONTROLLER)
            if (
                status_ is MotionStatus.PENDING
                and self.port.now() - self.sent_at > self.config.response_timeout
            ):
                return self.error(
                    f"the {part} controller did not answer within {self.config.response_timeout:.0f} s",
                    StopCode.CONTROLLER,
                )
        cancels = self.executor._cancels_requested()
        if cancels > self.cancels_seen:
            self.cancels_seen = cancels
            self.cancel_cause = self.executor._cancel_requested_cause()
            return Event.CANCEL
        if self.client_gone():
            self.cancel_cause = "canceled (the client disappeared)"
            return Event.CANCEL
        if all(m.status() is MotionStatus.SUCCEEDED for m in self.active.values()):
            return Event.MOTION_DONE
        return None

    def client_gone(self) -> bool:
        """True once, when no action client has been left for `client_lost` s (a client that
        died or lost its connection mid-goal: its goal is cancelled as if it had asked)."""
        if self.port.goal_clients() > 0:
            self.clients_gone_at = float("nan")
            return False
        now = self.port.now()
        if not np.isfinite(self.clients_gone_at):
            self.clients_gone_at = now
        if now - self.clients_gone_at >= self.config.client_lost:
            self.clients_gone_at = float("inf")  # once
            return True
        return False

    def error(self, why: str, stop_code: StopCode) -> Event:
        self.why, self.code, self.stop_code = why, ErrorCode.ABORTED_FAULT, stop_code
        return Event.ERROR

    def act(self, action: Action, event: Event | None, phase: str) -> DrillResult | None:
        if action is Action.RETRACT:
            self.canceled = True
            self.retract()
        elif action is Action.WITHDRAW:
            if event is Event.MOTION_DONE:
                self.why = "the motion ended with the bit in a bone phase"
                self.stop_code = StopCode.CONTROLLER
            self.withdraw()
        elif action is Action.STOP:
            return self.stop(phase)
        elif action is Action.SUCCEED:
            task = self.plan.task
            ended = (
                f"; the feed ended on the far cortex' breakthrough ({self.breakthrough})"
                if self.breakthrough
                else ""
            )
            return self.finish(
                Outcome.SUCCEEDED,
                ErrorCode.SUCCESS,
                f"drilled {self.deepest * 1000:.3f} mm (goal {task.depth * 1000:.3f} mm), "
                f"lateral deviation {self.widest * 1000:.4f} mm{ended}; {self.path.summary()}",
            )
        elif action is Action.FINISH_OUT:
            where = f"tip {-self.depth * 1000:.2f} mm above the entry"
            if self.canceled and self.why:
                return self.finish(
                    Outcome.CANCELED,
                    ErrorCode.CANCELED_RETRACTED,
                    f"{self.cancel_cause}: the retract failed ({self.why}); the feed withdrew the bit, "
                    f"{where}",
                )
            if self.why:
                return self.fail(Outcome.ABORTED, self.code, f"{self.why}; bit withdrawn, {where}")
            return self.finish(
                Outcome.CANCELED, ErrorCode.CANCELED_RETRACTED, f"{self.cancel_cause}: bit retracted, {where}"
            )
        return None

    def retract(self) -> None:
        """The arm holds; the feed stops from the plan's commanded state and retracts along the axis."""
        config = self.config
        self.active.pop("arm").cancel()
        t = self.port.now() - self.motion_start
        planned_q, planned_v, _ = self.motion.sample(t)
        retract = slowed_for_lag(
            plan_cancel_retract(
                planned_q, self.plan.task, config.params, config.dt, planned_v[DrillParameters.feed_index]
            ),
            config.tracking_lag,
            config.tolerance,
        )
        self.start_motion("feed", retract)

    def withdraw(self) -> None:
        """Every motion cancelled; the feed alone back out from its measured pose, at rest."""
        config = self.config
        for motion in self.active.values():
            motion.cancel()
        self.active = {}
        measurement = self.port.measured()
        q = (
            self.motion.sample(self.port.now() - self.motion_start)[0]
            if measurement is None
            else measurement.position
        )
        out = plan_cancel_retract(q, self.plan.task, config.params, config.dt)
        out = replace(out, phases=tuple(Phase("feed_withdraw", p.start_time, p.end_time) for p in out.phases))
        self.start_motion("feed", slowed_for_lag(out, config.tracking_lag, config.tolerance))

    def start_motion(self, part: str, trajectory: JointTrajectory) -> None:
        now = self.port.now()
        self.send(part, trajectory, now)
        self.motion, self.motion_start, self.sent_at = trajectory, now, now

    def stop(self, phase: str) -> DrillResult:
        self.cancel_all()
        in_bone = self.depth >= IN_BONE_MARGIN or not np.isfinite(self.depth)
        if self.why:
            if in_bone and self.bone_was_entered():
                # The drilling monitor's own stop keeps its code (bit_in_bone says where the bit is).
                monitor = self.code is ErrorCode.ABORTED_MONITOR
                return self.fail(
                    Outcome.CANCELED if self.canceled else Outcome.ABORTED,
                    ErrorCode.ABORTED_MONITOR if monitor else ErrorCode.CANCELED_BIT_IN_BONE,
                    f"{self.why}; the bit is in the bone, {max(self.depth, 0.0) * 1000:.2f} mm past "
                    "the entry",
                    bit_in_bone=True,
                )
            return self.fail(Outcome.ABORTED, self.code, self.why)
        return self.finish(
            Outcome.CANCELED,
            ErrorCode.CANCELED_RETRACTED,
            f"{self.cancel_cause}: stopped at once in phase {phase}",
        )

    def bone_was_entered(self) -> bool:
        return bool(np.isfinite(self.deepest))

    def cancel_all(self) -> None:
        """Every motion sent that may still move (or whose acceptance may still arrive)."""
        for motion in self.sent:
            if motion.status() in (MotionStatus.PENDING, MotionStatus.ACTIVE):
                motion.cancel()

    # --- endings -----------------------------------------------------------------------------------
    def refuse(self, code: ErrorCode, message: str) -> DrillResult:
        return self.finish(Outcome.ABORTED, code, message)

    def abort_before_motion(self, code: ErrorCode, message: str) -> DrillResult:
        """Nothing has moved yet: every motion sent is cancelled (pending ones on arrival), no latch."""
        self.cancel_all()
        return self.finish(Outcome.ABORTED, code, message)

    def fail(
        self, outcome: Outcome, code: ErrorCode, message: str, *, bit_in_bone: bool = False
    ) -> DrillResult:
        """An ending that latches the fault (and bit_in_bone) until reset_fault."""
        executor = self.executor
        with executor._lock:
            # Every path here has named its stop (next_event, error); INTERNAL if one forgot, so
            # that the latch is never a falsy NONE.
            executor.fault = executor.fault or Stop(self.stop_code or StopCode.INTERNAL, message)
            executor.bit_in_bone = bit_in_bone
        self.port.state_changed()
        return self.finish(outcome, code, message, bit_in_bone=bit_in_bone)

    def finish(
        self, outcome: Outcome, code: ErrorCode, message: str, *, bit_in_bone: bool = False
    ) -> DrillResult:
        return DrillResult(
            outcome=outcome,
            error_code=code,
            message=message,
            achieved_depth=self.deepest,
            max_lateral_deviation=self.widest,
            bone_model=bool(self.request.task),
            bit_in_bone=bit_in_bone,
            stop_code=self.stop_code,
        )
